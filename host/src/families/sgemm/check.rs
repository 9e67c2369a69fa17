//! SGEMM's one validation ([`check`]): every rule a problem and a config must meet on a
//! target, with the footprint they ask for. `prepare` calls it first (nothing is generated,
//! uploaded or launched before), the tuner filters its space with it, and the tuning
//! database's answers and the command line's configs go through `prepare`: the rules are
//! written once. The device and host memory a problem needs are checked apart, against the
//! machine (`prepare`'s `check_footprint`).

use dynsmem_kernels::sgemm::{FIXED_128X128X16S2, SgemmConfig, entry_name};

use super::{
    SgemmProblem, WGSL_KERNEL, WGSL_MAX_STAGED_LOADS, WGSL_MAX_STAGES, wgsl_grid, wgsl_loads, wgsl_static_bytes,
};
use crate::backend::{BackendKind, Variant};
use crate::contract::{Footprint, Target, invalid, invalid_problem};
use crate::error::{Error, Result};

/// Checks `config` (`fixed`: the entry with the compiled-in tile) for `problem` on `target`
/// and returns what it asks for: threads, blocks, launch-sized bytes of the Rust kernel and
/// static bytes of the twin `target.variant` builds. A refusal is a typed error naming the
/// kernel, the value and the rule (or limit) it breaks.
pub fn check(problem: &SgemmProblem, config: &SgemmConfig, fixed: bool, target: &Target) -> Result<Footprint> {
    let config = *config;
    let variant = target.variant;
    if config.tma {
        // The tensor-map kernels' own rules first: they say which value breaks which rule.
        let family = if config.sk > 0 { "sgemm_f32_sk" } else { "sgemm_f32_tma" };
        let kernel = entry_name(problem.f16_inputs, fixed, &config).unwrap_or(family);
        tma_check(&config, problem.elem_bytes())
            .map_err(|rules| invalid(kernel, format!("{rules} (got {config:?})")))?;
    }
    let entry = entry_name(problem.f16_inputs, fixed, &config).ok_or_else(|| {
        let (kernel, reason) = match (problem.f16_inputs, fixed) {
            _ if config.sk > 0 => (
                "sgemm_f32_sk",
                format!(
                    "the stream-K kernel takes f32 inputs, no compiled-in tile, the tensor-map copies and bn one of \
                     {:?} (got bn {})",
                    dynsmem_kernels::sgemm::SK_BN,
                    config.bn
                ),
            ),
            _ if config.tma => (
                "sgemm_f32_tma",
                format!(
                    "the tensor-map kernel takes f32 inputs, no compiled-in tile, and bk one of {:?} (got bk {})",
                    dynsmem_kernels::sgemm::TMA_BK,
                    config.bk
                ),
            ),
            (true, true) => ("hgemm_f16_f32", "the compiled-in tile exists for f32 inputs only".to_string()),
            (true, false) => ("hgemm_f16_f32", format!("f16 inputs take 8 rows per thread, not tm = {}", config.tm)),
            _ => ("sgemm_f32", format!("tm = {} rows per thread: the f32 entries have 4, 8 or 16", config.tm)),
        };
        invalid(kernel, reason)
    })?;
    if fixed && config != FIXED_128X128X16S2 {
        return Err(invalid(entry, format!("the compiled-in tile is {FIXED_128X128X16S2:?}, not {config:?}")));
    }
    if !config.fits(problem.elem_bytes()) {
        return Err(invalid(
            entry,
            format!(
                "tm 4, 8 or 16 (4 and 16 for f32 only), bm a multiple of tm, bn of 8, bk a multiple of 4 and of a \
                 16-byte chunk ({} elements), stages 1 to {}, splits 1 to {} (got {config:?})",
                16 / problem.elem_bytes(),
                dynsmem_kernels::sgemm::MAX_STAGES,
                dynsmem_kernels::sgemm::MAX_SPLITS
            ),
        ));
    }
    if config.tma {
        // Tensor maps: CUDA (sm_90), and the CPU backend's stand-in for them.
        if variant != Variant::LaunchSized || !matches!(target.backend, BackendKind::Cuda | BackendKind::Cpu) {
            return Err(Error::Unsupported {
                backend: target.backend,
                what: format!("{entry} (tensor-map copies: the launch-sized form on CUDA sm_90 or the CPU backend)"),
            });
        }
        tma_problem_check(problem).map_err(|reason| invalid_problem(entry, reason))?;
        if config.sk > 0 {
            streamk_problem_check(problem, &config).map_err(|reason| invalid_problem(entry, reason))?;
        }
    }
    if variant != Variant::LaunchSized && config.tm != 8 {
        return Err(Error::Unsupported {
            backend: target.backend,
            what: format!("tm = {} in the {variant} form (its thread tile is 8 x 8)", config.tm),
        });
    }
    let SgemmProblem { m, n, k, .. } = *problem;
    // Indices are u32 on the device: row * k, row * n and k * n must fit.
    for (what, v) in [("m * k", m as u64 * k as u64), ("k * n", k as u64 * n as u64), ("m * n", m as u64 * n as u64)] {
        crate::contract::check_index(entry, what, v, u32::MAX as u64, "u32 (element index)")?;
    }
    if config.splits > 1 {
        if variant != Variant::LaunchSized {
            return Err(Error::Unsupported {
                backend: target.backend,
                what: format!("split-K ({} splits) in the {variant} form (it has no workspace sum)", config.splits),
            });
        }
        let k_tiles = k.div_ceil(config.bk);
        if config.splits > k_tiles {
            return Err(invalid(
                entry,
                format!(
                    "{} splits of k = {k} in k-tiles of {}: there are {k_tiles} k-tiles, and each split takes at \
                     least one",
                    config.splits, config.bk
                ),
            ));
        }
    }
    let sms = target.limits.multiprocessors.unwrap_or(1);
    let mut grid = if config.sk > 0 { config.sk_grid(m, n, k, sms) as u64 } else { config.launch_grid(m, n) };
    if variant.is_wgsl() {
        // The WGSL form: its own config rules (f16 inputs where the adapter has f16: the
        // backend refuses it otherwise), and tile origins (`m0 + BM`, `n0 + BN`, `k0 + BK`)
        // in u32; the grid is capped (the kernel loops over tiles).
        if fixed {
            return Err(Error::Unsupported {
                backend: target.backend,
                what: format!(
                    "the compiled-in-tile entry in WGSL (the WGSL form is {WGSL_KERNEL}, block tile set per pipeline)"
                ),
            });
        }
        wgsl_check(&config).map_err(|reason| invalid(WGSL_KERNEL, reason))?;
        for (what, v, tile) in [("m", m, config.bm), ("n", n, config.bn), ("k", k, config.bk)] {
            crate::contract::check_index(
                WGSL_KERNEL,
                what,
                v as u64,
                (u32::MAX - tile) as u64,
                "WGSL u32 (tile origin)",
            )?;
        }
        grid = wgsl_grid(&config, m, n, target.limits.max_grid_x) as u64;
    }
    if grid > u32::MAX as u64 {
        return Err(invalid_problem(entry, format!("{m} x {n} needs {grid} blocks")));
    }
    if fixed && variant == Variant::CudaStatic {
        return Err(invalid(entry, "the cuda-static kernel compiles every tile in; --fixed is for the Rust kernel"));
    }
    let eb = problem.elem_bytes();
    let threads = config.threads();
    let layout = |b: std::result::Result<u32, dynsmem_kernels::layout::LayoutError>| {
        b.map_err(|source| Error::Layout { kernel: entry.into(), source })
    };
    Footprint::of_variant(
        variant,
        (threads, grid as u32),
        || layout(config.shared_bytes(eb)),
        || layout(config.shared_bytes(eb)),
        |_| Ok(wgsl_static_bytes(&config).min(u32::MAX as u64) as u32),
    )
}

/// Why the tensor-map kernels have no entry for the tile of `cfg` ([`SgemmConfig::fits`] with
/// [`SgemmConfig::tma`], and [`SgemmConfig::sk`] for stream-K), or `Ok`: their rules, as the
/// workload and the tuner state them.
pub fn tma_check(cfg: &SgemmConfig, elem_bytes: u32) -> std::result::Result<(), String> {
    use dynsmem_kernels::sgemm::{MAX_SK, MAX_STAGES, SK_BK, SK_BN, SK_MAX_THREADS, TMA_BK, TMA_BN, TMA_MAX_BOX};
    if cfg.fits(elem_bytes) {
        return Ok(());
    }
    if cfg.sk > 0 {
        return Err(format!(
            "the stream-K kernel takes f32, tm 8, bn one of {SK_BN:?}, bk {SK_BK}, bm a multiple of 8 up to \
             {TMA_MAX_BOX} (one tensor-map box), at most {SK_MAX_THREADS} threads (bm / 8 * bn / 8), 2 to \
             {MAX_STAGES} stages, one split, 1 to {MAX_SK} blocks per multiprocessor"
        ));
    }
    Err(format!(
        "the tensor-map kernel takes f32, tm 8, bn {TMA_BN}, bk one of {TMA_BK:?}, bm a multiple of 8 up to \
         {TMA_MAX_BOX} (one tensor-map box), 2 to {MAX_STAGES} stages"
    ))
}

/// The tensor-map kernels' rule on the problem, checked before anything launches: no empty
/// side (a tensor map describes a matrix of at least one element a side). Rows that are not
/// 16-byte aligned are padded ([`TmaStep`]), so `k` and `n` need not be multiples of 4.
pub fn tma_problem_check(problem: &SgemmProblem) -> std::result::Result<(), String> {
    if problem.m >= 1 && problem.n >= 1 && problem.k >= 1 {
        return Ok(());
    }
    Err(format!(
        "{} x {} x {}: a tensor map describes a matrix of at least one element a side",
        problem.m, problem.n, problem.k
    ))
}

/// The stream-K kernel's rule on the problem and config: its units (k-tiles of output tiles)
/// are counted in u32 on the device.
pub fn streamk_problem_check(problem: &SgemmProblem, cfg: &SgemmConfig) -> std::result::Result<(), String> {
    let units = cfg.grid(problem.m, problem.n).saturating_mul(cfg.k_tiles(problem.k) as u64);
    if units <= u32::MAX as u64 {
        return Ok(());
    }
    Err(format!("{units} units (k-tiles of {} x {} tiles) do not fit the kernel's u32 count", cfg.bm, cfg.bn))
}

/// Why the WGSL form cannot run `cfg` (f32 inputs), or `Ok`: the launch-sized kernel's
/// shape rules ([`SgemmConfig::fits`]: whole 8 x 8 thread tiles, `bk` a multiple of 4), at
/// most [`WGSL_MAX_STAGES`] stages, and for two stages at most [`WGSL_MAX_STAGED_LOADS`]
/// chunks of each tile per invocation. Device limits (invocations, workgroup bytes) are
/// checked apart, against the adapter.
pub fn wgsl_check(cfg: &SgemmConfig) -> std::result::Result<(), String> {
    if cfg.tm != 8 {
        return Err(format!("the WGSL form's thread tile is 8 x 8, not tm = {}", cfg.tm));
    }
    if !cfg.fits(4) {
        return Err(format!(
            "bm and bn must be multiples of 8, bk a multiple of 4, at most {} threads (got {cfg:?})",
            dynsmem_kernels::sgemm::MAX_THREADS
        ));
    }
    if cfg.stages > WGSL_MAX_STAGES {
        return Err(format!(
            "the WGSL form has 1 or 2 stages (no asynchronous copy to keep more in flight), not {}",
            cfg.stages
        ));
    }
    let (la, lb) = wgsl_loads(cfg);
    if cfg.stages == 2 && la.max(lb) > WGSL_MAX_STAGED_LOADS {
        return Err(format!(
            "two stages hold the next tile in registers, at most {WGSL_MAX_STAGED_LOADS} 16-byte chunks of A and of B \
             per invocation; {cfg:?} needs {la} and {lb} (bk at most min(bm, bn) / 2)"
        ));
    }
    Ok(())
}
