//! Workgroup-memory probes: latency (a chase over a ring in the launch-sized region, up to
//! the opt-in limit) and throughput by stride between lanes and by access width.

use dynsmem_kernels::memprobe::{STRIDE_UNROLL, StrideConfig, TIMING_WORDS, WIDTHS, chase_bytes, word_value};
use serde_json::json;

use super::{Cycles, Point, ProbeKind, ProbeOptions, chase_end, check_results, launch, multiprocessors, ring};
use crate::backend::Variant;
use crate::contract::{FamilyBackend, WgslSpec, fill_template, wgsl_sizing};

const CHASE_WGSL: &str = include_str!("shared_chase.wgsl");
const STRIDE_WGSL: &str = include_str!("shared_stride.wgsl");

/// A boxed point of a sweep (built when it is measured, so buffers live one at a time).
pub(crate) type Points<'b, B> = Vec<Box<dyn FnOnce() -> Point<'b, B> + 'b>>;

/// The WGSL twin of `probe_shared_chase`: a `var<workgroup>` ring of `n` words.
fn chase_wgsl(n: u32, block: u32, variant: Variant) -> WgslSpec {
    let (sizing, constants) = wgsl_sizing(variant, &[("BLOCK", "u32", block as f64), ("N", "u32", n as f64)]);
    WgslSpec {
        name: format!("shared_chase[{variant},n={n},block={block}]"),
        source: fill_template(CHASE_WGSL, &[("SIZING", &sizing)]),
        entry: "shared_chase",
        constants,
        workgroup_size: block,
        static_bytes: n.saturating_mul(4),
        subgroups: false,
        f16: false,
    }
}

/// One chase of `steps` steps over a random ring of `n` words in one block: the launch-sized
/// kernel, or its WGSL twin.
fn chase_point<'b, B: FamilyBackend>(
    backend: &'b B,
    variant: Variant,
    (n, steps, block): (u32, u32, u32),
    seed: u64,
) -> Point<'b, B> {
    let next = ring(n as usize, seed);
    let expected = chase_end(&next, steps as u64);
    let wgsl = move |v: Variant| chase_wgsl(n, block, v);
    let launch =
        launch(backend, "probe_shared_chase", chase_bytes(n), (1, block), variant, Some(&wgsl)).and_then(|l| {
            l.input(&next)?
                .arg(n)
                .arg(steps)
                .output(&vec![0u32; TIMING_WORDS as usize], move |k: &str, t: &[u32]| check_results(k, t, &[expected]))
        });
    Point {
        probe: ProbeKind::SharedLatency,
        variant,
        point: json!({ "bytes": n * 4, "steps": steps }),
        launch,
        timing_output: 0,
        cycles: Cycles::Block0 { per: steps as f64 },
        steps: Some(steps as u64),
        bytes: 0,
        ops: 0,
    }
}

/// Workgroup-memory latency over rings from 4 KB to the backend's opt-in limit.
pub(crate) fn latency<'b, B: FamilyBackend>(backend: &'b B, variant: Variant, opts: &ProbeOptions) -> Points<'b, B> {
    let limit = backend.info().limits.launch_shared_max.max(4096);
    let (sizes, steps, block): (Vec<u32>, u32, u32) = if opts.quick {
        (vec![1024, 4096], 2048, 32)
    } else {
        (vec![4096, 16384, 49152, 131072, limit / 4 * 4], 1 << 15, 256)
    };
    let seed = opts.seed;
    sizes
        .into_iter()
        .map(|bytes| {
            Box::new(move || chase_point(backend, variant, (bytes / 4, steps, block), seed))
                as Box<dyn FnOnce() -> Point<'b, B> + 'b>
        })
        .collect()
}

/// The value of element `e` of `width` bytes of the stride probe's region, as the kernel
/// folds it (the sum of its 32-bit words; 1- and 2-byte elements little-endian).
pub(crate) fn element_sum(width: u32, e: u32) -> u32 {
    match width {
        1 => (word_value(e / 4) >> (8 * (e % 4))) & 0xff,
        2 => (word_value(e / 2) >> (16 * (e % 2))) & 0xffff,
        4 => word_value(e),
        _ => {
            let words = width / 4;
            (0..words).fold(0u32, |a, w| a.wrapping_add(word_value(e * words + w)))
        }
    }
}

/// What thread `t` of the stride probe sums: `iters` times its lane's elements.
fn stride_sum(cfg: &StrideConfig, iters: u32, t: u32) -> u32 {
    let base = (t % 32) * cfg.stride;
    let once = (0..STRIDE_UNROLL).fold(0u32, |a, k| a.wrapping_add(element_sum(cfg.width, base + k * 32 * cfg.stride)));
    once.wrapping_mul(iters)
}

/// The WGSL twin of `probe_shared_stride` (4-byte elements).
fn stride_wgsl(cfg: &StrideConfig, block: u32, variant: Variant) -> WgslSpec {
    let words = cfg.layout().map(|s| s.len()).unwrap_or(0);
    let (sizing, constants) = wgsl_sizing(
        variant,
        &[("BLOCK", "u32", block as f64), ("WORDS", "u32", words as f64), ("UNROLL", "u32", STRIDE_UNROLL as f64)],
    );
    WgslSpec {
        name: format!("shared_stride[{variant},stride={},block={block}]", cfg.stride),
        source: fill_template(STRIDE_WGSL, &[("SIZING", &sizing)]),
        entry: "shared_stride",
        constants,
        workgroup_size: block,
        static_bytes: words.saturating_mul(4),
        subgroups: false,
        f16: false,
    }
}

/// One point of the stride or width sweep: `grid` blocks of `block` threads, `iters`
/// iterations of [`STRIDE_UNROLL`] loads each.
fn stride_point<'b, B: FamilyBackend>(
    backend: &'b B,
    probe: ProbeKind,
    variant: Variant,
    cfg: StrideConfig,
    (grid, block, iters): (u32, u32, u32),
) -> Point<'b, B> {
    let threads = grid * block;
    let expected: Vec<f64> = (0..threads).map(|g| stride_sum(&cfg, iters, g % block) as f64).collect();
    let wgsl = move |v: Variant| stride_wgsl(&cfg, block, v);
    let wgsl: Option<&dyn Fn(Variant) -> WgslSpec> = (cfg.width == 4).then_some(&wgsl);
    let launch =
        launch(backend, "probe_shared_stride", cfg.shared_bytes(), (grid, block), variant, wgsl).and_then(|l| {
            l.output(&vec![0u32; threads as usize], move |k: &str, got: &[u32]| {
                crate::verify::check_slice(k, &expected, got, |_| 1.0, crate::verify::Tolerance::EXACT)
            })?
            .arg(cfg.stride)
            .arg(cfg.width)
            .arg(iters)
            .output_unchecked(&vec![0u32; (grid * TIMING_WORDS) as usize])
        });
    let requests = iters as u64 * STRIDE_UNROLL as u64 * block.div_ceil(32) as u64;
    Point {
        probe,
        variant,
        point: json!({ "stride": cfg.stride, "width": cfg.width, "block": block, "grid": grid, "iters": iters }),
        launch,
        timing_output: 1,
        cycles: Cycles::Median { per: requests as f64 },
        steps: None,
        bytes: threads as u64 * iters as u64 * STRIDE_UNROLL as u64 * cfg.width as u64,
        ops: 0,
    }
}

/// Grid, blocks and iterations of the throughput sweeps: one block per multiprocessor, so
/// a block's cycles are the multiprocessor's; iterations enough that the launch's own cost
/// is a small part of its device time (GB/s).
fn throughput_shape<B: FamilyBackend>(backend: &B, opts: &ProbeOptions) -> (u32, Vec<u32>, u32) {
    if opts.quick { (1, vec![64], 2) } else { (multiprocessors(backend), vec![256, 1024], 2048) }
}

/// Throughput against the stride between lanes, 4-byte elements: strides 1 to 64 words.
pub(crate) fn stride<'b, B: FamilyBackend>(backend: &'b B, variant: Variant, opts: &ProbeOptions) -> Points<'b, B> {
    let (grid, blocks, iters) = throughput_shape(backend, opts);
    let strides: Vec<u32> = if opts.quick { vec![1, 2, 31, 32] } else { (1..=64).collect() };
    let mut points: Points<'b, B> = Vec::new();
    for block in blocks {
        for &stride in &strides {
            let cfg = StrideConfig { stride, width: 4 };
            points.push(Box::new(move || {
                stride_point(backend, ProbeKind::SharedStride, variant, cfg, (grid, block, iters))
            }));
        }
    }
    points
}

/// Throughput against the access width (1 to 16 bytes), lanes on consecutive elements.
pub(crate) fn width<'b, B: FamilyBackend>(backend: &'b B, variant: Variant, opts: &ProbeOptions) -> Points<'b, B> {
    let (grid, blocks, iters) = throughput_shape(backend, opts);
    let mut points: Points<'b, B> = Vec::new();
    for block in blocks {
        for width in WIDTHS {
            let cfg = StrideConfig { stride: 1, width };
            points.push(Box::new(move || {
                stride_point(backend, ProbeKind::SharedWidth, variant, cfg, (grid, block, iters))
            }));
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_sums_read_the_words_little_endian() {
        let w0 = word_value(0);
        assert_eq!(element_sum(1, 1), (w0 >> 8) & 0xff);
        assert_eq!(element_sum(2, 1), w0 >> 16);
        assert_eq!(element_sum(8, 1), word_value(2).wrapping_add(word_value(3)));
        let four = (4..8).fold(0u32, |a, i| a.wrapping_add(word_value(i)));
        assert_eq!(element_sum(16, 1), four);
    }
}
