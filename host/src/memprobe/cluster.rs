//! Distributed shared memory (sm_90 thread-block clusters): latency of a chase through a
//! peer block's region, and bandwidth of every thread reading a peer's region. The cluster
//! size is compiled into each entry (`_c2`, `_c4`). The CPU backend runs every block as a
//! cluster of one (its peer is itself), which checks the kernels' logic, not clusters.

use dynsmem_kernels::memprobe::{STRIDE_UNROLL, TIMING_WORDS, chase_bytes, dsmem_read_layout, word_value};
use serde_json::json;

use super::shared::Points;
use super::{Cycles, Point, ProbeKind, ProbeOptions, chase_end, check_results, multiprocessors, ring, unsupported};
use crate::backend::{BackendKind, Variant};
use crate::contract::FamilyBackend;
use crate::error::Result;
use crate::verify::{Tolerance, check_slice};

/// A launch of a cluster entry: refused on HIP, whose devices have no clusters (the CPU
/// backend runs each block as a cluster of one).
fn launch<'b, B: FamilyBackend>(
    backend: &'b B,
    entry: &'static str,
    bytes: std::result::Result<u32, dynsmem_kernels::layout::LayoutError>,
    dims: (u32, u32),
    variant: Variant,
) -> Result<crate::contract::Launch<'b, B>> {
    if backend.kind() == BackendKind::Hip {
        return unsupported(backend, format!("{entry}: thread-block clusters (NVIDIA sm_90 and later)"));
    }
    super::launch(backend, entry, bytes, dims, variant, None)
}

const SIZES: [(u32, &str, &str); 2] =
    [(2, "probe_dsmem_chase_c2", "probe_dsmem_read_c2"), (4, "probe_dsmem_chase_c4", "probe_dsmem_read_c4")];

/// A chase of `steps` steps over a ring of `n` words in the next block's region, one
/// cluster of `cluster` blocks (each block's thread 0 chases).
pub(crate) fn latency<'b, B: FamilyBackend>(backend: &'b B, variant: Variant, opts: &ProbeOptions) -> Points<'b, B> {
    let (n, steps, block) = if opts.quick { (256u32, 512u32, 32u32) } else { (1024, 1 << 14, 256) };
    let seed = opts.seed;
    SIZES
        .into_iter()
        .map(|(cluster, entry, _)| {
            Box::new(move || {
                let next = ring(n as usize, seed);
                let expected = vec![chase_end(&next, steps as u64); cluster as usize];
                let launch = launch(backend, entry, chase_bytes(n), (cluster, block), variant).and_then(|l| {
                    l.input(&next)?
                        .arg(n)
                        .arg(steps)
                        .output(&vec![0u32; (cluster * TIMING_WORDS) as usize], move |k: &str, t: &[u32]| {
                            check_results(k, t, &expected)
                        })
                });
                Point {
                    probe: ProbeKind::DsmemLatency,
                    variant,
                    point: json!({ "cluster": cluster, "bytes": n * 4, "steps": steps }),
                    launch,
                    timing_output: 0,
                    cycles: Cycles::Block0 { per: steps as f64 },
                    steps: Some(steps as u64),
                    bytes: 0,
                    ops: 0,
                }
            }) as Box<dyn FnOnce() -> Point<'b, B> + 'b>
        })
        .collect()
}

/// What thread `t` of a block of `block` sums: `iters * STRIDE_UNROLL` vectors from
/// `t % vectors`, `block` apart, wrapping in the region of `vectors` 16-byte vectors.
fn read_sum(t: u32, block: u32, vectors: u32, iters: u32) -> u32 {
    let mut v = t % vectors;
    let mut acc = 0u32;
    for _ in 0..iters * STRIDE_UNROLL {
        let w = v * 4;
        acc = (0..4).fold(acc, |a, i| a.wrapping_add(word_value(w + i)));
        v = (v + block) % vectors;
    }
    acc
}

/// Every thread of `grid` blocks (whole clusters) reading 16-byte vectors of its peer's
/// region of `words` words.
pub(crate) fn bandwidth<'b, B: FamilyBackend>(backend: &'b B, variant: Variant, opts: &ProbeOptions) -> Points<'b, B> {
    let (words, block, iters, grid) =
        if opts.quick { (1024u32, 32u32, 2u32, 4u32) } else { (8192, 1024, 512, multiprocessors(backend) / 4 * 4) };
    SIZES
        .into_iter()
        .map(|(cluster, _, entry)| {
            Box::new(move || {
                let threads = grid * block;
                let vectors = words.div_ceil(4);
                let per_block: Vec<f64> = (0..block).map(|t| read_sum(t, block, vectors, iters) as f64).collect();
                let expected: Vec<f64> = (0..threads).map(|g| per_block[(g % block) as usize]).collect();
                let bytes = dsmem_read_layout(words).map(|s| s.bytes());
                let launch = launch(backend, entry, bytes, (grid, block), variant).and_then(|l| {
                    l.output(&vec![0u32; threads as usize], move |k: &str, got: &[u32]| {
                        check_slice(k, &expected, got, |_| 1.0, Tolerance::EXACT)
                    })?
                    .arg(words)
                    .arg(iters)
                    .output_unchecked(&vec![0u32; (grid * TIMING_WORDS) as usize])
                });
                let requests = iters as f64 * STRIDE_UNROLL as f64 * block.div_ceil(32) as f64;
                Point {
                    probe: ProbeKind::DsmemBandwidth,
                    variant,
                    point: json!({ "cluster": cluster, "bytes": words * 4, "grid": grid, "block": block, "iters": iters }),
                    launch,
                    timing_output: 1,
                    cycles: Cycles::Median { per: requests },
                    steps: None,
                    bytes: threads as u64 * iters as u64 * STRIDE_UNROLL as u64 * 16,
                    ops: 0,
                }
            }) as Box<dyn FnOnce() -> Point<'b, B> + 'b>
        })
        .collect()
}
