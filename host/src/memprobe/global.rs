//! Device-memory probes: latency by working-set size (a chase over random 128-byte lines,
//! each cache level a plateau) and read bandwidth by load width and cache hint.

use dynsmem_kernels::gpu::micro::CacheHint;
use dynsmem_kernels::memprobe::TIMING_WORDS;
use serde_json::json;

use super::shared::Points;
use super::{Cycles, Point, ProbeKind, ProbeOptions, chase_end, check_results, launch, multiprocessors, ring};
use crate::backend::Variant;
use crate::contract::FamilyBackend;

/// Bytes of one line of the chase: one index per line, so no two steps share a line.
pub(crate) const LINE_BYTES: u32 = 128;

pub(crate) fn hint_name(h: CacheHint) -> &'static str {
    match h {
        CacheHint::Default => "default",
        CacheHint::Global => "cg",
        CacheHint::Streaming => "cs",
        CacheHint::Volatile => "cv",
        CacheHint::NonCoherent => "nc",
    }
}

/// The chase over `bytes` of device memory: a random ring of its lines, each line's first
/// word holding the word index of the next line's. The check is of the first run, which
/// starts at line 0; later runs go on along the ring.
fn chase_point<'b, B: FamilyBackend>(
    backend: &'b B,
    variant: Variant,
    (bytes, steps, hint): (u64, u32, CacheHint),
    seed: u64,
) -> Point<'b, B> {
    let words_per_line = LINE_BYTES / 4;
    let lines = (bytes / LINE_BYTES as u64).max(1) as usize;
    let order = ring(lines, seed);
    let mut next = vec![0u32; lines * words_per_line as usize];
    for (line, &to) in order.iter().enumerate() {
        next[line * words_per_line as usize] = to * words_per_line;
    }
    let expected = chase_end(&order, steps as u64) * words_per_line;
    let n = next.len() as u32;
    let block = if backend.info().is_cpu { 32 } else { 1024 };
    let launch = launch(backend, "probe_global_chase", Ok(0), (1, block), variant, None).and_then(|l| {
        l.input(&next)?
            .arg(n)
            .arg(steps)
            .arg(hint as u32)
            // Where the chase starts: each launch goes on from where the last stopped, so
            // after the first (checked) run it holds where that one stopped.
            .output(&[0u32], move |k: &str, c: &[u32]| check_results(k, &[0, 0, c[0]], &[expected]))?
            .output(&vec![0u32; TIMING_WORDS as usize], move |k: &str, t: &[u32]| check_results(k, t, &[expected]))
    });
    Point {
        probe: ProbeKind::GlobalLatency,
        variant,
        point: json!({ "bytes": lines as u64 * LINE_BYTES as u64, "hint": hint_name(hint), "steps": steps }),
        launch,
        timing_output: 1,
        cycles: Cycles::Block0 { per: steps as f64 },
        // Device time includes the block's read of the whole working set: no ns per step.
        steps: None,
        bytes: 0,
        ops: 0,
    }
}

/// Laps of its ring a chase must make to stand for a hit latency: the first lap's loads
/// miss, so a chase of fewer laps measures misses (the published comparison leaves it out).
pub(crate) const WARM_LAPS: u64 = 8;

/// Latency from 8 KB (L1) past the L2 to DRAM, at powers of two and halfway between. The
/// quick run's two L1 points chase 4096 steps: 8 laps or more of their rings
/// ([`WARM_LAPS`]), as the full run's L1 points do.
pub(crate) fn latency<'b, B: FamilyBackend>(backend: &'b B, variant: Variant, opts: &ProbeOptions) -> Points<'b, B> {
    let (sizes, steps, hints): (Vec<u64>, u32, Vec<CacheHint>) = if opts.quick {
        (vec![16 << 10, 64 << 10], 4096, vec![CacheHint::Default])
    } else {
        let sizes = (13..=29).flat_map(|p| [1u64 << p, 3u64 << (p - 1)]).filter(|&b| b <= 512 << 20).collect();
        (sizes, 8192, vec![CacheHint::Default, CacheHint::Global])
    };
    let seed = opts.seed;
    let mut points: Points<'b, B> = Vec::new();
    for hint in hints {
        for &bytes in &sizes {
            points.push(Box::new(move || chase_point(backend, variant, (bytes, steps, hint), seed)));
        }
    }
    points
}

/// What each thread of `threads` sums in the grid-stride read of `words` words in loads of
/// `width` bytes, word `i` holding `i`.
fn read_sums(words: u64, width: u32, threads: u64) -> Vec<f64> {
    let per = (width / 4) as u64;
    let mut sums = vec![0u32; threads as usize];
    for i in 0..words {
        let t = ((i / per) % threads) as usize;
        sums[t] = sums[t].wrapping_add(i as u32);
    }
    sums.into_iter().map(|s| s as f64).collect()
}

/// One bandwidth point: `words` words read in `width`-byte loads with `hint`.
fn read_point<'b, B: FamilyBackend>(
    backend: &'b B,
    variant: Variant,
    (words, width, hint): (u64, u32, CacheHint),
    (grid, block): (u32, u32),
) -> Point<'b, B> {
    let threads = grid as u64 * block as u64;
    let src: Vec<u32> = (0..words).map(|i| i as u32).collect();
    let expected = read_sums(words, width, threads);
    let launch = launch(backend, "probe_global_read", Ok(0), (grid, block), variant, None).and_then(|l| {
        l.input(&src)?
            .arg(words)
            .arg(hint as u32)
            .arg(width)
            .output(&vec![0u32; threads as usize], move |k: &str, got: &[u32]| {
                crate::verify::check_slice(k, &expected, got, |_| 1.0, crate::verify::Tolerance::EXACT)
            })?
            .output_unchecked(&vec![0u32; (grid * TIMING_WORDS) as usize])
    });
    Point {
        probe: ProbeKind::GlobalBandwidth,
        variant,
        point: json!({ "bytes": words * 4, "width": width, "hint": hint_name(hint), "grid": grid, "block": block }),
        launch,
        timing_output: 1,
        cycles: Cycles::None,
        steps: None,
        bytes: words * 4,
        ops: 0,
    }
}

/// Read bandwidth of 1 GB (past the L2), by width and hint.
pub(crate) fn bandwidth<'b, B: FamilyBackend>(backend: &'b B, variant: Variant, opts: &ProbeOptions) -> Points<'b, B> {
    let (words, shape, hints): (u64, (u32, u32), Vec<CacheHint>) = if opts.quick {
        (1 << 12, (2, 64), vec![CacheHint::Default, CacheHint::Streaming])
    } else {
        (1 << 28, (multiprocessors(backend) * 4, 1024), CacheHint::ALL.to_vec())
    };
    let mut points: Points<'b, B> = Vec::new();
    for hint in hints {
        for width in [4, 8, 16] {
            points.push(Box::new(move || read_point(backend, variant, (words, width, hint), shape)));
        }
    }
    points
}
