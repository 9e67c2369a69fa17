//! Histogram of `u32` keys, host side: problem, configs, the WGSL form beside it
//! (`histogram.wgsl`), the CPU reference and the [`Workload`]. The device algorithm is
//! documented in `dynsmem_kernels::histogram`.

use dynsmem_kernels::histogram::{BITS, HistogramConfig};
use serde::{Deserialize, Serialize};

use crate::backend::Variant;
use crate::backend::{Backend, BackendKind};
use crate::contract::{
    CudaSource, FamilyBackend, Footprint, Launch, Target, WgslSpec, fill_template, invalid, invalid_problem,
    wgsl_sizing,
};
use crate::error::Result;
use crate::rng::SplitMix64;
use crate::verify::{Tolerance, check_slice};

mod family;

pub use family::{HISTOGRAM, fit_config};

pub(crate) const WGSL_TEMPLATE: &str = include_str!("histogram.wgsl");
/// The cuda-static form: the same algorithm in CUDA C with static arrays.
pub const CUDA_SOURCE: &str = include_str!("histogram.cu");
pub(crate) const KERNEL: &str = "histogram_u32";
/// The WGSL path indexes keys with u32 and strides past the end: it takes fewer keys.
const WGSL_MAX_KEYS: u64 = 1 << 31;

/// `n` keys into `bins` bins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HistogramProblem {
    pub n: u64,
    pub bins: u32,
    /// Share of keys drawn from outside `[0, bins)` (not counted), in percent; 0 for
    /// uniform keys, as the benchmarks use.
    pub out_of_range_pct: u32,
}

/// Resident blocks that fill the device once for a kernel of `block` threads and
/// `shared` launch-sized bytes per block (where the backend reports multiprocessors).
pub(crate) fn resident_grid<B: Backend>(backend: &B, block: u32, shared: u32) -> u32 {
    let l = &backend.info().limits;
    let per_sm_threads = (2048 / block.max(1)).max(1);
    let per_sm_smem = match (l.shared_per_multiprocessor, shared) {
        (Some(sm), s) if s > 0 => (sm / s.saturating_add(1024)).max(1),
        _ => per_sm_threads,
    };
    let per_sm = per_sm_threads.min(per_sm_smem).min(32);
    match l.multiprocessors {
        Some(m) => m * per_sm,
        None => 1024,
    }
}

/// Blocks of the cluster that merges packed bins by default, largest first: a larger
/// cluster makes the merge's device atomics fewer. The first the backend says it runs at
/// once is taken, with as many clusters as it runs at once; where it cannot say, pairs
/// (every GPC holds them), one per two multiprocessors.
const MERGE_CLUSTERS: [u32; 3] = [8, 4, 2];

/// The default config for `problem` on `backend`: every bin in each block's shared memory
/// where one copy of 32-bit counters fits; else 16- or 8-bit counters where they fit (a
/// block per multiprocessor, summed over clusters of [`MERGE_CLUSTERS`] before the device
/// atomics where the backend has clusters); else as many 32-bit bins as fit, the rest
/// counted with device atomics (faster than splitting the bins over a cluster, whose remote
/// atomics are slow; see `NOTES.md`). 8 private copies where they fit a 32 KB budget (less
/// contention on popular bins), one copy otherwise; one resident wave of blocks walking the
/// keys grid-stride.
pub fn default_config<B: FamilyBackend>(backend: &B, problem: &HistogramProblem) -> HistogramConfig {
    let is_cpu_backend = backend.small_configs();
    let limits = &backend.info().limits;
    let one_copy = |bits| HistogramConfig { block: 1, grid: 1, copies: 1, cluster: 1, held: 0, bits, merge: false };
    let fits = |c: HistogramConfig| c.shared_bytes(problem.bins).is_ok_and(|b| b <= limits.launch_shared_max);
    // The widest counters whose one copy of every bin fits, else as many 32-bit bins as fit.
    let (bits, held) = match BITS.into_iter().find(|&b| fits(one_copy(b))) {
        Some(b) => (b, 0),
        None => (32, limits.launch_shared_max / 4),
    };
    let per = if held > 0 { held } else { problem.bins.max(1) };
    let block = if is_cpu_backend {
        32
    } else if per > 16_384 {
        1024
    } else {
        512
    };
    let copies = if bits < 32 { 1 } else { (32 * 1024 / (per * 4)).clamp(1, 8) };
    // The launch's bytes: the same for any merging cluster (each block holds every bin).
    let shared = HistogramConfig { copies, held, ..one_copy(bits) }.shared_bytes(problem.bins).unwrap_or(u32::MAX);
    let mut cluster = 1;
    let mut grid = if is_cpu_backend { 4 } else { resident_grid(backend, block, shared) };
    if bits < 32 && !is_cpu_backend {
        let mut asked = MERGE_CLUSTERS.iter().filter(|&&c| c <= limits.max_cluster);
        let resident = |c: u32| backend.max_active_clusters_of(KERNEL, block, shared, c).filter(|&n| n > 0);
        match asked.clone().find_map(|&c| Some((c, resident(c)?))) {
            Some((c, n)) => (cluster, grid) = (c, c * n),
            None => {
                if let Some(&c) = asked.next_back() {
                    (cluster, grid) = (c, (grid / c * c).max(c));
                }
            }
        }
    }
    HistogramConfig { block, grid, copies, cluster, held, bits, merge: cluster > 1 }
}

/// A cluster of 1 to `max_cluster` blocks, and 1 for the twins: they hold every bin in one
/// workgroup (WGSL has no clusters; the CUDA C twin keeps the one-block form).
pub(crate) fn check_cluster(
    cfg: &HistogramConfig,
    variant: Variant,
    max_cluster: u32,
) -> std::result::Result<(), String> {
    let c = cfg.cluster;
    if (c > 1 || cfg.held > 0 || cfg.bits != 32) && variant != Variant::LaunchSized {
        return Err(format!(
            "clusters of {c} blocks, {} bins held, {}-bit counters: the {variant} twin holds every bin in one \
             workgroup as 32-bit counters",
            cfg.held, cfg.bits
        ));
    }
    if !dynsmem_kernels::histogram::BITS.contains(&cfg.bits) {
        return Err(format!("{}-bit counters: the kernel counts in 32, 16 or 8 bits", cfg.bits));
    }
    if cfg.bits < 32 && c > 1 && !cfg.merge {
        return Err(format!(
            "{}-bit counters split over clusters of {c}: packed counters need each block to hold its bins \
             (merge: true, or 32-bit counters)",
            cfg.bits
        ));
    }
    if c == 0 || c > max_cluster {
        return Err(format!("clusters of {c} blocks: this backend runs clusters of 1 to {max_cluster}"));
    }
    if !cfg.grid.is_multiple_of(c) {
        return Err(format!("a grid of {} blocks is not whole clusters of {c}", cfg.grid));
    }
    Ok(())
}

/// The twins' config for `asked`: plain blocks holding every bin (they hold every bin in one
/// workgroup and have no device-atomic path), with
/// a note saying so; `asked` itself for the Rust kernel.
pub(crate) fn fit_twin(variant: Variant, asked: HistogramConfig) -> (HistogramConfig, Option<String>) {
    if variant == Variant::LaunchSized || (asked.cluster == 1 && asked.held == 0 && asked.bits == 32) {
        return (asked, None);
    }
    let fitted = HistogramConfig { cluster: 1, held: 0, bits: 32, merge: false, ..asked };
    (fitted, Some(format!("the {variant} twin holds every bin in one workgroup: ran {fitted:?}, not {asked:?}")))
}

pub(crate) fn wgsl_spec(problem: &HistogramProblem, cfg: &HistogramConfig, variant: Variant) -> WgslSpec {
    let (sizing, constants) = wgsl_sizing(
        variant,
        &[
            ("BLOCK", "u32", cfg.block as f64),
            ("BINS", "u32", problem.bins as f64),
            ("COPIES", "u32", cfg.copies as f64),
        ],
    );
    WgslSpec {
        name: format!("{KERNEL}[{variant},bins={},copies={},block={}]", problem.bins, cfg.copies, cfg.block),
        source: fill_template(WGSL_TEMPLATE, &[("SIZING", &sizing)]),
        entry: "histogram",
        constants,
        workgroup_size: cfg.block,
        static_bytes: (problem.bins as u64 * cfg.copies as u64 * 4).min(u32::MAX as u64) as u32,
        subgroups: false,
        f16: false,
    }
}

/// The cuda-static kernel: `histogram.cu` with the bins, copies and block as defines; its
/// static array is the Rust kernel's layout (`copies * bins` counters).
pub fn cuda_source(problem: &HistogramProblem, cfg: &HistogramConfig) -> CudaSource {
    CudaSource {
        name: format!("{KERNEL}[cuda-static,bins={},copies={},block={}]", problem.bins, cfg.copies, cfg.block),
        source: CUDA_SOURCE,
        file: "histogram.cu",
        entry: "histogram_static",
        defines: vec![
            ("BINS", problem.bins.to_string()),
            ("COPIES", cfg.copies.to_string()),
            ("BLOCK", cfg.block.to_string()),
        ],
        static_bytes: (problem.bins as u64 * cfg.copies as u64 * 4).min(u32::MAX as u64) as u32,
    }
}

/// Keys from `seed`: uniform in `[0, bins)`, with `out_of_range_pct` percent drawn from
/// `[bins, 2 * bins + 16)` instead.
pub fn inputs(problem: &HistogramProblem, seed: u64) -> Vec<u32> {
    let mut rng = SplitMix64::new(seed);
    let bins = problem.bins.max(1) as u64;
    (0..problem.n)
        .map(|_| {
            if problem.out_of_range_pct > 0 && rng.below(100) < problem.out_of_range_pct as u64 {
                (bins + rng.below(bins + 16)) as u32
            } else {
                rng.below(bins) as u32
            }
        })
        .collect()
}

/// The CPU reference: the count of each bin; keys `>= bins` are not counted.
pub use dynsmem_reference::histogram as reference;

/// The histogram's one validation: `config` for `problem` on `target`, and what it asks for.
/// `prepare` calls it first and the tuner filters with it: at least one bin, block, grid
/// and copy, the cluster (a power of two within the backend's; 1 for the twins), a share of
/// out-of-range keys of at most 100%, WGSL's u32 grid-stride, and the layout.
pub fn check(problem: &HistogramProblem, config: &HistogramConfig, target: &Target) -> Result<Footprint> {
    if problem.bins == 0 {
        return Err(invalid_problem(KERNEL, "a histogram needs at least one bin"));
    }
    if config.copies == 0 || config.block == 0 || config.grid == 0 {
        return Err(invalid(KERNEL, format!("block, grid and copies must be at least 1 (got {config:?})")));
    }
    check_cluster(config, target.variant, target.limits.max_cluster).map_err(|reason| invalid(KERNEL, reason))?;
    if problem.out_of_range_pct > 100 {
        return Err(invalid_problem(
            KERNEL,
            format!("out_of_range_pct = {}: a share of the keys, at most 100", problem.out_of_range_pct),
        ));
    }
    if target.backend == BackendKind::Wgsl {
        crate::contract::check_index(KERNEL, "n", problem.n, WGSL_MAX_KEYS, "WGSL u32 (grid-stride)")?;
    }
    let layout = config
        .shared_bytes(problem.bins)
        .map_err(|source| crate::error::Error::Layout { kernel: KERNEL.into(), source })?;
    Footprint::of_variant(
        target.variant,
        (config.block, config.grid),
        || Ok(layout),
        || Ok(cuda_source(problem, config).static_bytes),
        |v| Ok(wgsl_spec(problem, config, v).static_bytes),
    )
}

/// Validates `problem` and `config` for `backend` (nothing is launched when this fails),
/// builds the kernel, uploads keys from `seed` and computes the reference.
pub fn prepare<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: HistogramProblem,
    config: HistogramConfig,
    variant: Variant,
    seed: u64,
) -> Result<Launch<'b, B>> {
    // The one validation (the tuner's filter too), before anything is generated or uploaded.
    let footprint = check(&problem, &config, &Target::of(backend, variant))?;
    // Keys and bins on the device; keys, the reference and its f64 copy on the host.
    let (keys_bytes, bins_bytes) = (crate::contract::bytes_of(problem.n, 4), problem.bins as u64 * 4);
    crate::contract::check_footprint(
        backend,
        KERNEL,
        keys_bytes.saturating_add(bins_bytes),
        keys_bytes.saturating_add(3 * bins_bytes),
    )?;
    let wgsl = |v: Variant| wgsl_spec(&problem, &config, v);
    let cuda = || cuda_source(&problem, &config);
    let geometry = (Ok(footprint.launch_bytes), footprint.grid, footprint.threads);
    let launch = Launch::prepare(backend, KERNEL, geometry, variant, &wgsl, &cuda)?.clustered(config.cluster)?;
    let data = inputs(&problem, seed);
    let expected: Vec<f64> = reference(&data, problem.bins).into_iter().map(f64::from).collect();
    let check = move |name: &str, got: &[u32]| check_slice(name, &expected, got, |_| 0.0, Tolerance::EXACT);
    Ok(launch
        .input(&data)?
        .arg(problem.n)
        .accumulator(problem.bins as usize, check)?
        .arg(problem.bins)
        .arg(config.copies)
        .arg(config.bits)
        .arg(config.merge as u32)
        .bytes(problem.n * 4 + problem.bins as u64 * 4))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_ignores_keys_past_the_last_bin() {
        assert_eq!(reference(&[0, 1, 1, 3, 4, 99], 4), vec![1, 2, 0, 1]);
        assert_eq!(reference(&[], 2), vec![0, 0]);
    }

    #[test]
    fn inputs_respect_the_out_of_range_share() {
        let p = HistogramProblem { n: 10_000, bins: 256, out_of_range_pct: 10 };
        let keys = inputs(&p, 3);
        let out = keys.iter().filter(|&&k| k >= 256).count();
        assert!((800..1200).contains(&out), "{out}");
        let uniform = inputs(&HistogramProblem { out_of_range_pct: 0, ..p }, 3);
        assert!(uniform.iter().all(|&k| k < 256));
    }
}
