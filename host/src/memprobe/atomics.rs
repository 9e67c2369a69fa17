//! Atomics by operation, memory and contention (the question every histogram asks), and the
//! cost of a fence by its scope.

use dynsmem_kernels::gpu::micro::{AtomicOp, FenceScope};
use dynsmem_kernels::memprobe::{Contention, TIMING_WORDS, atomics_bytes};
use serde_json::json;

use super::shared::Points;
use super::{Cycles, Point, ProbeKind, ProbeOptions, launch, multiprocessors};
use crate::backend::Variant;
use crate::contract::FamilyBackend;
use crate::verify::{Mismatch, Tolerance, check_slice};

fn op_name(op: AtomicOp) -> &'static str {
    match op {
        AtomicOp::Add => "add",
        AtomicOp::Min => "min",
        AtomicOp::CasIncrement => "cas-increment",
    }
}

fn contention_name(c: Contention) -> &'static str {
    match c {
        Contention::OneWord => "one-word",
        Contention::OneBank => "one-bank",
        Contention::Spread => "spread",
    }
}

/// Words of `target`: a block's (workgroup memory, `space` 0) or the grid's (device memory).
fn target_words(mode: Contention, space: u32, (grid, block): (u32, u32)) -> usize {
    mode.words(if space == 1 { grid * block } else { block }) as usize
}

/// The words of `target` after the probe: what every thread's operations leave (in workgroup
/// memory a thread's word is by its index in the block, merged over the blocks with add, or
/// min for min; in device memory by its index in the grid).
fn expected_words(op: AtomicOp, space: u32, mode: Contention, (grid, block, iters): (u32, u32, u32)) -> Vec<u32> {
    let mut out = vec![if op == AtomicOp::Min { u32::MAX } else { 0 }; target_words(mode, space, (grid, block))];
    for b in 0..grid {
        for t in 0..block {
            let gid = b * block + t;
            let w = mode.word(if space == 1 { gid } else { t }) as usize;
            out[w] = match op {
                AtomicOp::Add | AtomicOp::CasIncrement => out[w].wrapping_add(iters),
                // The smallest value a thread applies: at its last step, 1 + gid.
                AtomicOp::Min if iters > 0 => out[w].min(1u32.wrapping_add(gid)),
                AtomicOp::Min => out[w],
            };
        }
    }
    out
}

/// Every thread made at least `iters` attempts, and exactly `iters` unless it retried a
/// compare-and-swap.
fn check_tries(kernel: &str, op: AtomicOp, iters: u32, tries: &[u32]) -> Result<(), Mismatch> {
    let bad = tries.iter().position(|&t| if op == AtomicOp::CasIncrement { t < iters } else { t != iters });
    match bad {
        None => Ok(()),
        Some(i) => Err(Mismatch {
            kernel: kernel.into(),
            index: i,
            expected: if op == AtomicOp::CasIncrement {
                format!(">= {iters} attempts")
            } else {
                format!("{iters} attempts")
            },
            actual: tries[i].to_string(),
            allowed: 0.0,
            count: 1,
            len: tries.len(),
            against: None,
        }),
    }
}

/// One point: `op` in `space` (0 workgroup memory, 1 device memory) under `mode`.
fn atomics_point<'b, B: FamilyBackend>(
    backend: &'b B,
    variant: Variant,
    (op, space, mode): (AtomicOp, u32, Contention),
    (grid, block, iters): (u32, u32, u32),
) -> Point<'b, B> {
    let threads = grid * block;
    let expected: Vec<f64> =
        expected_words(op, space, mode, (grid, block, iters)).into_iter().map(|v| v as f64).collect();
    let init = vec![if op == AtomicOp::Min { u32::MAX } else { 0 }; target_words(mode, space, (grid, block))];
    let launch = launch(backend, "probe_atomics", atomics_bytes(block, space, mode), (grid, block), variant, None)
        .and_then(|l| {
            l.output(&init, move |k: &str, got: &[u32]| check_slice(k, &expected, got, |_| 1.0, Tolerance::EXACT))?
                .arg(op as u32)
                .arg(space)
                .arg(mode as u32)
                .arg(iters)
                .output(&vec![0u32; threads as usize], move |k: &str, t: &[u32]| check_tries(k, op, iters, t))?
                .output_unchecked(&vec![0u32; (grid * TIMING_WORDS) as usize])
        });
    let space_name = if space == 1 { "device" } else { "workgroup" };
    Point {
        probe: ProbeKind::Atomics,
        variant,
        point: json!({
            "op": op_name(op), "memory": space_name, "contention": contention_name(mode),
            "grid": grid, "block": block, "iters": iters,
        }),
        launch,
        timing_output: 2,
        cycles: Cycles::Median { per: iters as f64 },
        steps: None,
        bytes: 0,
        ops: threads as u64 * iters as u64,
    }
}

/// Operations per thread: enough that a launch takes about a millisecond or more, so its
/// device time (and the operations per second from it) is the atomics', not the launch's;
/// fewer for a compare-and-swap under contention, where every contending thread retries
/// against every other.
fn iters_for(op: AtomicOp, space: u32, mode: Contention, quick: bool) -> u32 {
    use AtomicOp::{Add, CasIncrement, Min};
    use Contention::{OneBank, OneWord, Spread};
    match (quick, op, space, mode) {
        (true, ..) => 4,
        (false, Add | Min, 0, _) => 4096,
        (false, CasIncrement, 0, OneWord) => 32,
        (false, CasIncrement, 0, OneBank) => 512,
        (false, CasIncrement, 0, Spread) => 2048,
        (false, Add | Min, _, OneWord) => 64,
        (false, Add | Min, _, OneBank) => 512,
        (false, Add | Min, _, Spread) => 4096,
        (false, CasIncrement, _, OneWord | OneBank) => 1,
        (false, CasIncrement, _, Spread) => 1024,
    }
}

/// Add, min and the CAS increment, in workgroup and in device memory, under each contention.
pub(crate) fn atomics<'b, B: FamilyBackend>(backend: &'b B, variant: Variant, opts: &ProbeOptions) -> Points<'b, B> {
    let (grid, block) = if opts.quick { (2, 64) } else { (multiprocessors(backend), 256) };
    let mut points: Points<'b, B> = Vec::new();
    for space in [0, 1] {
        for op in AtomicOp::ALL {
            for mode in Contention::ALL {
                let iters = iters_for(op, space, mode, opts.quick);
                points.push(Box::new(move || atomics_point(backend, variant, (op, space, mode), (grid, block, iters))));
            }
        }
    }
    points
}

fn scope_name(s: FenceScope) -> &'static str {
    match s {
        FenceScope::Block => "cta",
        FenceScope::Cluster => "cluster",
        FenceScope::Device => "gpu",
        FenceScope::System => "sys",
    }
}

/// A store then a fence of each scope, `iters` times per thread.
pub(crate) fn fences<'b, B: FamilyBackend>(backend: &'b B, variant: Variant, opts: &ProbeOptions) -> Points<'b, B> {
    let (grid, block, iters): (u32, u32, u32) =
        if opts.quick { (2, 32, 8) } else { (multiprocessors(backend), 256, 4096) };
    let threads = grid * block;
    FenceScope::ALL
        .into_iter()
        .map(|scope| {
            Box::new(move || {
                let launch = launch(backend, "probe_fence", Ok(0), (grid, block), variant, None).and_then(|l| {
                    let expected = vec![iters as f64; threads as usize];
                    l.output(&vec![0u32; threads as usize], move |k: &str, got: &[u32]| {
                        check_slice(k, &expected, got, |_| 1.0, Tolerance::EXACT)
                    })?
                    .arg(scope as u32)
                    .arg(iters)
                    .output_unchecked(&vec![0u32; (grid * TIMING_WORDS) as usize])
                });
                Point {
                    probe: ProbeKind::Fences,
                    variant,
                    point: json!({ "scope": scope_name(scope), "grid": grid, "block": block, "iters": iters }),
                    launch,
                    timing_output: 1,
                    cycles: Cycles::Median { per: iters as f64 },
                    steps: None,
                    bytes: 0,
                    ops: threads as u64 * iters as u64,
                }
            }) as Box<dyn FnOnce() -> Point<'b, B> + 'b>
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_words_count_every_thread_once_per_step() {
        // 2 blocks of 64 threads, 3 steps: one word gets every increment.
        assert_eq!(expected_words(AtomicOp::Add, 0, Contention::OneWord, (2, 64, 3)), vec![384]);
        // One bank: lanes 0..32 of both warps of both blocks on words 0, 32, ...
        let bank = expected_words(AtomicOp::CasIncrement, 0, Contention::OneBank, (2, 64, 3));
        assert_eq!((bank[0], bank[32], bank[1]), (12, 12, 0));
        // Min: thread gid's last step applies 1 + gid; word t's smallest is block 0's.
        let min = expected_words(AtomicOp::Min, 0, Contention::Spread, (2, 64, 3));
        assert_eq!((min.len(), min[0], min[63]), (64, 1, 64));
        // In device memory, spread is a word per thread of the grid.
        let device = expected_words(AtomicOp::Min, 1, Contention::Spread, (2, 64, 3));
        assert_eq!((device.len(), device[64], device[127]), (128, 65, 128));
        assert!(expected_words(AtomicOp::Add, 1, Contention::Spread, (2, 64, 3)).iter().all(|&w| w == 3));
    }
}
