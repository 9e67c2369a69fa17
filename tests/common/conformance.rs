//! The conformance suite, written once over [`FamilyBackend`] and run per backend.

use dynsmem::host::families::reduce::{ReduceConfig, ReduceElement, ReduceOp, ReducePlan, ReduceProblem, reference};

use super::note;

/// Which sizes and configs to check.
pub struct ReduceMatrix {
    pub sizes: Vec<u64>,
    /// Each block size runs with the backend's default items per thread.
    pub blocks: Vec<u32>,
    /// Further configs, run at every size.
    pub extra: Vec<ReduceConfig>,
    pub seed: u64,
}

/// Runs every (size, config, op, dtype, variant) of the matrix; panics on the first
/// failure with the backend, problem, config and the error (index, expected, actual).
/// Returns the number of checked launches.
pub fn reduce<B: FamilyBackend>(backend: &B, m: &ReduceMatrix) -> usize {
    reduce_dtype::<B, f32>(backend, m) + reduce_dtype::<B, u32>(backend, m)
}

fn reduce_dtype<B: FamilyBackend, T: ReduceElement>(backend: &B, m: &ReduceMatrix) -> usize {
    let default = dynsmem::host::families::reduce::default_config(backend);
    let mut configs: Vec<ReduceConfig> = m
        .blocks
        .iter()
        .map(|&block| ReduceConfig { block, items_per_thread: default.items_per_thread, staged: false })
        .collect();
    configs.extend(m.extra.iter().copied());
    let mut checked = 0;
    for &n in &m.sizes {
        // One input and one reference per (size, op), shared by every config.
        let data = T::inputs(n as usize, m.seed ^ n);
        let input = backend.htod(&data).expect("upload");
        for op in ReduceOp::ALL {
            let r = reference(op, &data);
            let problem = ReduceProblem { n, op, dtype: T::DTYPE };
            for config in &configs {
                for variant in variants_in(
                    &dynsmem::host::families::reduce::REDUCE,
                    &serde_json::to_value(problem).unwrap(),
                    backend,
                ) {
                    let what = format!("{} {variant} n={n} {op:?} {:?} {config:?}", backend.kind(), T::DTYPE);
                    let plan =
                        ReducePlan::new(backend, problem, *config, variant).unwrap_or_else(|e| panic!("{what}: {e}"));
                    let got: T = plan.run(&input).unwrap_or_else(|e| panic!("{what}: {e}"));
                    plan.check(&r, got).unwrap_or_else(|e| panic!("{what}: {e}"));
                    checked += 1;
                }
            }
        }
    }
    note(&format!(
        "reduce conformance: {} {:?}: {checked} launches verified ({} sizes x {} configs x 3 ops x {} variants)",
        backend.kind(),
        T::DTYPE,
        m.sizes.len(),
        configs.len(),
        variants_in(
            &dynsmem::host::families::reduce::REDUCE,
            &serde_json::json!({"n": 1, "op": "sum", "dtype": "f32"}),
            backend
        )
        .len()
    ));
    checked
}

use dynsmem::host::contract::{FamilyBackend, Workload};

/// Prepares, runs and checks one case; panics with `what` and the error on failure.
/// Returns whether it ran: `false` for a case refused because its static arrays are over
/// the backend's static limit (the typed error, before anything is built or launched:
/// cuda-static's 48 KB, which only launch-sized memory can pass). The callers count the
/// cases that ran, so the tests' counts say how many were refused.
/// The variants of `backend` family `F` has a form in (the wgsl-subgroup variant only
/// where its twin has a subgroup form).
pub fn variants_in(
    family: &dyn dynsmem::host::family::DynFamily,
    problem: &serde_json::Value,
    backend: &impl FamilyBackend,
) -> Vec<dynsmem::host::backend::Variant> {
    let has = |v| family.has_variant(problem, v).unwrap_or_else(|e| panic!("{}: {e}", family.name()));
    backend.variants().iter().copied().filter(|&v| has(v)).collect()
}

/// [`variants_in`] for a family still on the typed trait.
pub fn variants<F: dynsmem::host::family::Family>(
    backend: &impl FamilyBackend,
) -> Vec<dynsmem::host::backend::Variant> {
    use dynsmem::host::backend::Variant;
    backend.variants().iter().copied().filter(|&v| v != Variant::WgslSubgroup || F::SUBGROUP_TWIN).collect()
}

pub fn run_case<W: Workload>(what: &str, prepared: dynsmem::host::Result<W>) -> bool {
    let w = match prepared {
        Err(dynsmem::host::Error::SharedMemoryLimit { kind: "static", requested, limit, .. }) if requested > limit => {
            note(&format!("{what}: refused: {requested} B of static arrays, over the {limit} B limit"));
            return false;
        }
        other => other.unwrap_or_else(|e| panic!("{what}: prepare: {e}")),
    };
    w.run().unwrap_or_else(|e| panic!("{what}: run: {e}"));
    w.check().unwrap_or_else(|e| panic!("{what}: {e}"));
    true
}

/// Histogram: every size and bin count with the backend's default config and two odd
/// ones, 10% of keys out of range, every variant. Returns the number of checked cases.
pub fn histogram<B: FamilyBackend>(backend: &B, sizes: &[u64], bins: &[u32]) -> usize {
    use dynsmem::host::device::histogram::HistogramConfig;
    use dynsmem::host::families::histogram::{HistogramProblem, default_config, prepare};
    let mut checked = 0;
    for &n in sizes {
        for &b in bins {
            let problem = HistogramProblem { n, bins: b, out_of_range_pct: 10 };
            let configs = [
                default_config(backend, &problem),
                HistogramConfig { block: 64, grid: 3, copies: 2, cluster: 1, held: 0, bits: 32, merge: false },
                HistogramConfig { block: 96, grid: 1, copies: 1, cluster: 1, held: 0, bits: 32, merge: false },
            ];
            for config in configs {
                for variant in variants_in(
                    &dynsmem::host::families::histogram::HISTOGRAM,
                    &serde_json::to_value(problem).unwrap(),
                    backend,
                ) {
                    let what = format!("{} {variant} {problem:?} {config:?}", backend.kind());
                    checked += run_case(&what, prepare(backend, problem, config, variant, n ^ b as u64)) as usize;
                }
            }
        }
    }
    note(&format!("histogram conformance: {}: {checked} cases verified", backend.kind()));
    checked
}

/// Transpose: square, tall, wide and degenerate shapes, smaller than one tile and not
/// multiples of it, with the default config and a few tile/padding choices.
pub fn transpose<B: FamilyBackend>(backend: &B, shapes: &[(u32, u32)]) -> usize {
    use dynsmem::host::device::transpose::TransposeConfig;
    use dynsmem::host::families::transpose::{TransposeProblem, default_config, prepare};
    let mut checked = 0;
    for &(rows, cols) in shapes {
        let problem = TransposeProblem { rows, cols };
        for config in [
            default_config(backend),
            TransposeConfig { block: 64, tile: 16, pad: 0 },
            TransposeConfig { block: 32, tile: 8, pad: 3 },
        ] {
            let json = serde_json::json!({"rows": rows, "cols": cols});
            for variant in variants_in(&dynsmem::host::families::transpose::TRANSPOSE, &json, backend) {
                let what = format!("{} {variant} {problem:?} {config:?}", backend.kind());
                checked += run_case(&what, prepare(backend, problem, config, variant, rows as u64 * 31 + cols as u64))
                    as usize;
            }
        }
    }
    note(&format!("transpose conformance: {}: {checked} cases verified", backend.kind()));
    checked
}

/// Softmax: row lengths from 1 up (odd, not multiples of 4 or of the block).
pub fn softmax<B: FamilyBackend>(backend: &B, shapes: &[(u32, u32)]) -> usize {
    use dynsmem::host::device::softmax::SoftmaxConfig;
    use dynsmem::host::families::softmax::{SOFTMAX, SoftmaxProblem, default_config, prepare};
    use dynsmem::host::family::rows::fit_config;
    let mut checked = 0;
    for &(rows, cols) in shapes {
        let problem = SoftmaxProblem { rows, cols };
        for config in [default_config(backend, rows, cols), SoftmaxConfig::blocks(33)] {
            for variant in variants_in(&SOFTMAX, &serde_json::json!({"rows": rows, "cols": cols}), backend) {
                // The twins hold a row in one workgroup: a cluster default runs as one block.
                let (config, _) = fit_config(&backend.info().limits, variant, cols, config);
                let what = format!("{} {variant} {problem:?} {config:?}", backend.kind());
                checked +=
                    run_case(&what, prepare(backend, problem, config, variant, rows as u64 + cols as u64)) as usize;
            }
        }
    }
    note(&format!("softmax conformance: {}: {checked} cases verified", backend.kind()));
    checked
}

/// Softmax and RMSNorm with rows split over thread-block clusters (launch-sized only):
/// every cluster size, blocks that are not powers of two, rows of every start alignment
/// (row lengths not multiples of 4) and clusters whose last blocks hold none of a short row.
pub fn rows_in_clusters<B: FamilyBackend>(backend: &B, shapes: &[(u32, u32)], configs: &[(u32, u32)]) -> usize {
    use dynsmem::host::backend::Variant;
    use dynsmem::host::device::rows::RowConfig;
    use dynsmem::host::families::{rmsnorm, softmax};
    let mut checked = 0;
    for &(rows, cols) in shapes {
        for &(block, cluster) in configs {
            let config = RowConfig { block, cluster };
            let seed = rows as u64 * 31 + cols as u64;
            let what = format!("{} softmax {rows}x{cols} {config:?}", backend.kind());
            let problem = softmax::SoftmaxProblem { rows, cols };
            checked += run_case(&what, softmax::prepare(backend, problem, config, Variant::LaunchSized, seed)) as usize;
            let what = format!("{} rmsnorm {rows}x{cols} {config:?}", backend.kind());
            let problem = rmsnorm::RmsnormProblem { rows, cols, eps: 1e-5 };
            checked += run_case(&what, rmsnorm::prepare(backend, problem, config, Variant::LaunchSized, seed)) as usize;
        }
    }
    note(&format!("rows in clusters: {}: {checked} cases verified", backend.kind()));
    checked
}

/// Conv1d: sizes below one tile and not multiples of it, taps from 3 to 129, both
/// outputs-per-thread instantiations.
pub fn conv1d<B: FamilyBackend>(backend: &B, sizes: &[u64], taps: &[u32]) -> usize {
    use dynsmem::host::device::conv1d::Conv1dConfig;
    use dynsmem::host::families::conv1d::{Conv1dProblem, default_config, prepare};
    let mut checked = 0;
    for &n in sizes {
        for &k in taps {
            let problem = Conv1dProblem { n, taps: k };
            for config in [
                default_config(backend, k),
                Conv1dConfig { block: 32, outputs_per_thread: 4 },
                Conv1dConfig { block: 40, outputs_per_thread: 8 },
            ] {
                for variant in variants_in(
                    &dynsmem::host::families::conv1d::CONV1D,
                    &serde_json::json!({"n": n, "taps": k}),
                    backend,
                ) {
                    let what = format!("{} {variant} {problem:?} {config:?}", backend.kind());
                    checked += run_case(&what, prepare(backend, problem, config, variant, n + k as u64)) as usize;
                }
            }
        }
    }
    note(&format!("conv1d conformance: {}: {checked} cases verified", backend.kind()));
    checked
}

/// Stencil2d: 3x3 and 5x5, box and Gaussian, images smaller than a tile, not multiples
/// of it, one pixel wide.
pub fn stencil2d<B: FamilyBackend>(backend: &B, sizes: &[(u32, u32)]) -> usize {
    use dynsmem::host::device::stencil2d::Stencil2dConfig;
    use dynsmem::host::families::stencil2d::{Blur, Stencil2dProblem, default_config, prepare};
    let mut checked = 0;
    for &(width, height) in sizes {
        for radius in [1, 2] {
            for blur in [Blur::Box, Blur::Gaussian] {
                let problem = Stencil2dProblem { width, height, radius, blur };
                for config in [default_config(backend), Stencil2dConfig { block: 8, tile_w: 16, tile_h: 6 }] {
                    for variant in variants_in(
                        &dynsmem::host::families::stencil2d::STENCIL2D,
                        &serde_json::to_value(problem).unwrap(),
                        backend,
                    ) {
                        let what = format!("{} {variant} {problem:?} {config:?}", backend.kind());
                        checked +=
                            run_case(&what, prepare(backend, problem, config, variant, (width * 7 + height) as u64))
                                as usize;
                    }
                }
            }
        }
    }
    note(&format!("stencil2d conformance: {}: {checked} cases verified", backend.kind()));
    checked
}

/// Stencil2d on the any-radius entry (launch-sized only): every start offset of the window
/// in its first vector (`halo - r` mod 4) and both tap remainders (`2r + 1` mod 4), box and
/// Gaussian, the default config and an odd one.
pub fn stencil2d_any_radius<B: FamilyBackend>(backend: &B, sizes: &[(u32, u32)], radii: &[u32]) -> usize {
    use dynsmem::host::backend::Variant;
    use dynsmem::host::device::stencil2d::Stencil2dConfig;
    use dynsmem::host::families::stencil2d::{Blur, Stencil2dProblem, default_config, prepare};
    let mut checked = 0;
    for &(width, height) in sizes {
        for &radius in radii {
            let blur = if radius % 2 == 0 { Blur::Box } else { Blur::Gaussian };
            let problem = Stencil2dProblem { width, height, radius, blur };
            for config in [default_config(backend), Stencil2dConfig { block: 8, tile_w: 16, tile_h: 6 }] {
                let what = format!("{} {problem:?} {config:?}", backend.kind());
                let seed = (width * 7 + height + radius) as u64;
                checked += run_case(&what, prepare(backend, problem, config, Variant::LaunchSized, seed)) as usize;
            }
        }
    }
    note(&format!("stencil2d any radius: {}: {checked} cases verified", backend.kind()));
    checked
}

/// Scan: f32 and u32, sizes of 0, 1, below one tile, not multiples of it, many tiles.
pub fn scan<B: FamilyBackend>(backend: &B, sizes: &[u64]) -> usize {
    use dynsmem::host::device::Dtype;
    use dynsmem::host::device::scan::ScanConfig;
    use dynsmem::host::families::scan::{ScanProblem, default_config, prepare};
    let mut checked = 0;
    for &n in sizes {
        for config in [
            default_config(backend),
            ScanConfig { block: 32, items_per_thread: 4 },
            ScanConfig { block: 9, items_per_thread: 12 },
            ScanConfig { block: 96, items_per_thread: 8 },
        ] {
            for variant in
                variants_in(&dynsmem::host::families::scan::SCAN, &serde_json::json!({"n": n, "dtype": "f32"}), backend)
            {
                let what = |d: Dtype| format!("{} {variant} n={n} {d:?} {config:?}", backend.kind());
                let f = ScanProblem { n, dtype: Dtype::F32 };
                checked += run_case(&what(Dtype::F32), prepare::<B, f32>(backend, f, config, variant, n)) as usize;
                let u = ScanProblem { n, dtype: Dtype::U32 };
                checked += run_case(&what(Dtype::U32), prepare::<B, u32>(backend, u, config, variant, n)) as usize;
            }
        }
    }
    note(&format!("scan conformance: {}: {checked} cases verified", backend.kind()));
    checked
}

/// N-body: body counts below one tile and not multiples of the tile or the block.
pub fn nbody<B: FamilyBackend>(backend: &B, sizes: &[u32]) -> usize {
    use dynsmem::host::device::nbody::NbodyConfig;
    use dynsmem::host::families::nbody::{NbodyProblem, default_config, prepare};
    let mut checked = 0;
    for &n in sizes {
        let problem = NbodyProblem::new(n);
        for config in
            [default_config(backend), NbodyConfig { block: 32, tile: 7 }, NbodyConfig { block: 64, tile: 200 }]
        {
            for variant in
                variants_in(&dynsmem::host::families::nbody::NBODY, &serde_json::to_value(problem).unwrap(), backend)
            {
                let what = format!("{} {variant} {problem:?} {config:?}", backend.kind());
                checked += run_case(&what, prepare(backend, problem, config, variant, n as u64)) as usize;
            }
        }
    }
    note(&format!("nbody conformance: {}: {checked} cases verified", backend.kind()));
    checked
}

/// GEMM: every shape with every config, f32 and (where `bk` holds whole f16 chunks, in the
/// CUDA variants) f16 inputs, in every variant the backend runs, plus the compiled-in-tile
/// entry (launch-sized only) where its config is among `configs`. Awkward shapes (1x1x1,
/// sizes not multiples of any tile, k = 1) go through the zero-filled edge tiles; shapes of
/// whole tiles through the asynchronous copies (the vec4 loads on WGSL). Returns the number
/// of checked cases (a config a static variant refuses for its static bytes is not
/// counted; see [`run_case`]).
pub fn sgemm<B: FamilyBackend>(
    backend: &B,
    shapes: &[(u32, u32, u32)],
    configs: &[dynsmem::host::device::sgemm::SgemmConfig],
) -> usize {
    use dynsmem::host::backend::Variant;
    use dynsmem::host::device::sgemm::FIXED_128X128X16S2;
    use dynsmem::host::families::sgemm::{SgemmProblem, prepare};
    let mut checked = 0;
    for &(m, n, k) in shapes {
        for &config in configs {
            for variant in variants::<dynsmem::host::families::sgemm::Sgemm>(backend) {
                for f16_inputs in [false, true] {
                    if f16_inputs && !config.bk.is_multiple_of(8) {
                        continue;
                    }
                    // 16 rows per thread and the tensor-map kernel: f32, launch-sized only (the
                    // refusals are tested apart).
                    if (config.tm != 8 || config.tma) && (f16_inputs || variant != Variant::LaunchSized) {
                        continue;
                    }
                    // Split-K: the launch-sized kernels only (refusals tested apart).
                    if config.splits > 1 && variant != Variant::LaunchSized {
                        continue;
                    }
                    let problem = SgemmProblem { m, n, k, f16_inputs };
                    let both = config == FIXED_128X128X16S2 && !f16_inputs && variant == Variant::LaunchSized;
                    for &fixed in if both { &[false, true][..] } else { &[false][..] } {
                        let what = format!(
                            "{} {variant} {m}x{n}x{k} f16={f16_inputs} fixed={fixed} {config:?}",
                            backend.kind()
                        );
                        let seed = (m * 31 + n * 7 + k) as u64;
                        let prepared = prepare(backend, problem, config, fixed, variant, seed);
                        // The WGSL form reads f16 only where the adapter has f16 (the caller
                        // counts on it or not).
                        if let Err(dynsmem::host::Error::Unsupported { what: why, .. }) = &prepared
                            && f16_inputs
                            && why.contains("no SHADER_F16")
                        {
                            note(&format!("{what}: refused: {why}"));
                            continue;
                        }
                        checked += run_case(&what, prepared) as usize;
                    }
                }
            }
        }
    }
    note(&format!("sgemm conformance: {}: {checked} cases verified", backend.kind()));
    checked
}
