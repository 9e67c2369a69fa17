//! Exclusive prefix sum, host side: problem, configs, the WGSL form beside it
//! (`scan.wgsl`, reduce-then-scan; `scan_lookback.wgsl`, one pass with decoupled look-back,
//! the wgsl-subgroup form), the CPU reference and the [`Workload`]. The device
//! algorithm (one pass, decoupled look-back) is documented in `dynsmem_kernels::scan`.

use dynsmem_kernels::Dtype;
use dynsmem_kernels::scan::ScanConfig;
use serde::{Deserialize, Serialize};

use crate::backend::Variant;
use crate::backend::{Arg, BackendKind, Buffer, KernelName, LaunchDims};
use crate::contract::{
    Built, CudaSource, FamilyBackend, Footprint, KernelInfo, KernelSpec, Target, WgslFold, WgslSpec, Workload,
    fill_template, invalid, invalid_problem, wgsl_fold, wgsl_ids, wgsl_sizing, wgsl_unroll,
};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::families::reduce::ReduceElement;
use crate::verify::{Tolerance, check_slice};

mod family;

pub use family::{SCAN, fit_config};

pub(crate) const WGSL_TEMPLATE: &str = include_str!("scan.wgsl");
/// The wgsl-subgroup twin: one pass, decoupled look-back through 32-bit atomics.
const LOOKBACK_TEMPLATE: &str = include_str!("scan_lookback.wgsl");
/// The block scan of the passes (BLOCK_SCAN).
const BLOCK_SCAN: &str = include_str!("block_scan.wgsl");
/// `load4`, which both WGSL forms read the input's last vector with (LOAD4).
const LOAD4: &str = include_str!("load4.wgsl");
/// The cuda-static form: the same algorithm (decoupled look-back) in CUDA C with static
/// arrays.
pub const CUDA_SOURCE: &str = include_str!("scan.cu");
/// Most workgroups a WGSL dispatch uses; they loop over the tiles past it.
const WGSL_MAX_GRID: u64 = 65_535;

/// An exclusive prefix sum of `n` elements of `dtype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ScanProblem {
    pub n: u64,
    pub dtype: Dtype,
}

/// 512 threads x 48 elements per tile (98 KB of launch-sized memory, tuned on the H100:
/// provenance in `NOTES.md`) where the device's limit allows, else 512 x 32, else 512 x 16
/// (33 KB); 128 x 16 on WGSL (the passes' 9 KB of static arrays, the look-back's 0.5 KB:
/// within every adapter's 32 KB minimum; the H200 sweeps are in `NOTES.md`); 16 x 4 on the
/// CPU backend.
pub fn default_config<B: FamilyBackend>(backend: &B) -> ScanConfig {
    default_for(backend.kind(), backend.small_configs(), &backend.info().limits)
}

/// [`default_config`] on a backend of `kind` and `limits` (`small`: it asks for small configs).
pub fn default_for(kind: BackendKind, small: bool, limits: &crate::backend::Limits) -> ScanConfig {
    match kind {
        BackendKind::Cpu if small => ScanConfig { block: 16, items_per_thread: 4 },
        BackendKind::Wgsl => ScanConfig { block: 128, items_per_thread: 16 },
        _ => {
            let limit = limits.launch_shared_max;
            [48, 32, 16]
                .map(|items_per_thread| ScanConfig { block: 512, items_per_thread })
                .into_iter()
                .find(|c| c.shared_bytes().is_ok_and(|b| b <= limit))
                .unwrap_or(ScanConfig { block: 256, items_per_thread: 4 })
        }
    }
}

pub(crate) fn entry(dtype: Dtype) -> &'static str {
    match dtype {
        Dtype::F32 => "scan_exclusive_f32",
        Dtype::U32 => "scan_exclusive_u32",
    }
}

/// The WGSL pipeline `wgsl_entry` of the passes (`tile_sums` or `scan_tiles`); in the
/// wgsl-subgroup variant the one-pass look-back (`scan_lookback.wgsl`), whatever the entry.
pub(crate) fn wgsl_spec(dtype: Dtype, cfg: &ScanConfig, variant: Variant, wgsl_entry: &'static str) -> WgslSpec {
    let (sizing, constants) =
        wgsl_sizing(variant, &[("BLOCK", "u32", cfg.block as f64), ("IPT", "u32", cfg.items_per_thread as f64)]);
    let look_back = variant == Variant::WgslSubgroup;
    let slots = [("SIZING", sizing.as_str()), ("T", dtype.name()), ("LOAD4", LOAD4), ("IDS", wgsl_ids(variant))];
    let (source, wgsl_entry) = if look_back {
        // The look-back form's `@@` lines: once per vec4 a thread reads.
        (wgsl_unroll(&fill_template(LOOKBACK_TEMPLATE, &slots), cfg.items_per_thread / 4, false), "scan_lookback")
    } else {
        let block_sum = wgsl_fold(variant, &WgslFold::sum("block_sum"), dtype.name(), "scratch");
        let passes = [("BLOCK_SUM", block_sum.as_str()), ("BLOCK_SCAN", BLOCK_SCAN)];
        (fill_template(WGSL_TEMPLATE, &[&slots[..], &passes[..]].concat()), wgsl_entry)
    };
    WgslSpec {
        name: format!("scan_{wgsl_entry}_{}[{variant},block={},ipt={}]", dtype.name(), cfg.block, cfg.items_per_thread),
        source,
        entry: wgsl_entry,
        constants,
        workgroup_size: cfg.block,
        static_bytes: wgsl_static_bytes(cfg, variant),
        subgroups: variant == Variant::WgslSubgroup,
        f16: false,
    }
}

/// Bytes of the WGSL form's static arrays: the padded tile and two scratch buffers of
/// `block` elements (the look-back form adds its next tile and prefix).
fn wgsl_static_bytes(cfg: &ScanConfig, variant: Variant) -> u32 {
    if variant == Variant::WgslSubgroup {
        // The look-back form: the subgroups' totals (at most `block`), its next tile and prefix.
        return ((cfg.block as u64 + 2) * 4).min(u32::MAX as u64) as u32;
    }
    let tile = cfg.block as u64 * cfg.items_per_thread as u64;
    ((tile + tile / 32 + 1 + 2 * cfg.block as u64) * 4).min(u32::MAX as u64) as u32
}

/// The cuda-static kernel: `scan.cu` with the element type, block and items per thread as
/// defines; its static arrays are the Rust kernel's layout (tile, scratch, rake, window,
/// misc), so its static bytes are that layout's bytes.
pub fn cuda_source(dtype: Dtype, cfg: &ScanConfig) -> CudaSource {
    let elem = match dtype {
        Dtype::F32 => "float",
        Dtype::U32 => "u32",
    };
    CudaSource {
        name: format!("{}[cuda-static,block={},ipt={}]", entry(dtype), cfg.block, cfg.items_per_thread),
        source: CUDA_SOURCE,
        file: "scan.cu",
        entry: "scan_static",
        defines: vec![
            ("ELEM", elem.into()),
            ("BLOCK", cfg.block.to_string()),
            ("IPT", cfg.items_per_thread.to_string()),
        ],
        static_bytes: cfg.shared_bytes().unwrap_or(u32::MAX),
    }
}

/// The CPU reference: exclusive prefix sums (f64 for f32, wrapping for u32) and, per
/// output, the prefix sum of magnitudes its rounding error scales with (0 for u32).
pub fn reference<T: Element>(data: &[T]) -> (Vec<f64>, Vec<f64>) {
    if T::EPSILON > 0.0 {
        dynsmem_reference::exclusive_scan_f32(bytemuck::cast_slice(data))
    } else {
        let sums = dynsmem_reference::exclusive_scan_u32(bytemuck::cast_slice(data));
        (sums.into_iter().map(f64::from).collect(), vec![0.0; data.len()])
    }
}

/// How a backend runs the scan: one look-back kernel, or the WGSL passes.
enum Plan<K> {
    /// The look-back kernel and its grid (the footprint's).
    LookBack(Built<K>, u32),
    /// `tile_sums` and `scan_tiles`, with the sums' buffers of each level (level `i`
    /// scans the sums of level `i - 1`).
    Passes { sums: Built<K>, tiles: Built<K> },
}

/// The tile sums of one level of the WGSL passes, and their exclusive scan.
struct Level<R, T> {
    sums: Buffer<R, T>,
    scanned: Buffer<R, T>,
}

pub struct ScanWorkload<'b, B: FamilyBackend, T: Element> {
    backend: &'b B,
    plan: Plan<B::Kernel>,
    name: String,
    problem: ScanProblem,
    config: ScanConfig,
    input: Buffer<B::Raw, T>,
    output: Buffer<B::Raw, T>,
    /// One 8-byte status word per tile, as two u32 (the kernel reads `u64`s).
    status: Buffer<B::Raw, u32>,
    counter: Buffer<B::Raw, u32>,
    /// Bound as `offsets` by the WGSL pass that has none (a buffer may not be bound both
    /// read-only and read-write in one dispatch).
    no_offsets: Buffer<B::Raw, T>,
    /// WGSL passes: per level, the tile sums and their scan.
    levels: Vec<Level<B::Raw, T>>,
    expected: (Vec<f64>, Vec<f64>),
}

/// The scan's one validation: `config` for `problem` on `target`, and what it asks for.
/// `prepare` calls it first and the tuner filters with it: a tile of at least one element,
/// whole 16-byte vectors per thread for the look-back forms (the Rust kernels, the CUDA C
/// twin, wgsl-subgroup), a block per tile within a grid (the CUDA forms), WGSL's u32 indices,
/// and the layout. The grid is the launch's: on a CPU adapter the WGSL look-back form runs one
/// workgroup (`scan_lookback.wgsl`: lavapipe ends a shader's loops after 65535 iterations,
/// a look-back's wait among them).
pub fn check(problem: &ScanProblem, config: &ScanConfig, target: &Target) -> Result<Footprint> {
    let kernel = entry(problem.dtype);
    if config.tile().is_none_or(|t| t == 0) {
        return Err(invalid(kernel, format!("block and items_per_thread must be at least 1 (got {config:?})")));
    }
    let look_back_form = target.backend != BackendKind::Wgsl || target.variant == Variant::WgslSubgroup;
    if look_back_form && !config.fits() {
        return Err(invalid(
            kernel,
            format!(
                "items_per_thread must be a multiple of 4 (whole 16-byte vectors), got {}",
                config.items_per_thread
            ),
        ));
    }
    if target.backend == BackendKind::Wgsl && problem.n > (u32::MAX / 2) as u64 {
        return Err(invalid_problem(kernel, format!("n = {}: the WGSL path indexes with u32", problem.n)));
    }
    let layout = config.shared_bytes().map_err(|source| Error::Layout { kernel: kernel.into(), source })?;
    let tiles = config.tiles(problem.n);
    let look_back = |static_bytes| -> Result<Footprint> {
        // One block per tile with decoupled look-back.
        let grid = u32::try_from(tiles)
            .map_err(|_| invalid_problem(kernel, format!("{tiles} tiles: more blocks than a grid holds")))?;
        let launch_bytes = if target.variant == Variant::LaunchSized { layout } else { 0 };
        Ok(Footprint { threads: config.block, grid, launch_bytes, static_bytes })
    };
    match target.variant {
        Variant::LaunchSized => look_back(0),
        Variant::CudaStatic => look_back(cuda_source(problem.dtype, config).static_bytes),
        // The WGSL forms loop over the tiles past 65535 workgroups (the look-back form takes
        // them in order from a counter).
        Variant::WgslLiteral | Variant::WgslOverride | Variant::WgslSubgroup => Ok(Footprint {
            threads: config.block,
            grid: if look_back_form && target.is_cpu { 1 } else { tiles.min(WGSL_MAX_GRID) as u32 },
            launch_bytes: 0,
            static_bytes: wgsl_spec(problem.dtype, config, target.variant, "tile_sums").static_bytes,
        }),
    }
}

pub fn prepare<'b, B: FamilyBackend, T: ReduceElement>(
    backend: &'b B,
    problem: ScanProblem,
    config: ScanConfig,
    variant: Variant,
    seed: u64,
) -> Result<ScanWorkload<'b, B, T>> {
    let kernel = entry(problem.dtype);
    if T::DTYPE != problem.dtype {
        return Err(invalid_problem(kernel, format!("{} data for a {} scan", T::DTYPE.name(), problem.dtype.name())));
    }
    if !backend.variants().contains(&variant) {
        return Err(Error::Unsupported { backend: backend.kind(), what: format!("the {variant} variant of {kernel}") });
    }
    // The one validation (the tuner's filter too), before anything is generated or uploaded.
    let footprint = check(&problem, &config, &Target::of(backend, variant))?;
    let (tile, launch_bytes) = (config.tile().unwrap_or(1), footprint.launch_bytes);
    let tiles = config.tiles(problem.n);
    let mut levels = Vec::new();
    let (plan, name) = if matches!(variant, Variant::LaunchSized | Variant::CudaStatic | Variant::WgslSubgroup) {
        let grid = footprint.grid;
        let shared_bytes = if variant == Variant::LaunchSized { launch_bytes } else { 0 };
        backend.check_launch(kernel, LaunchDims::new(grid, config.block, shared_bytes))?;
        let cuda = || cuda_source(problem.dtype, &config);
        let wgsl = |v: Variant| wgsl_spec(problem.dtype, &config, v, "scan_lookback");
        let spec = KernelSpec { entry: kernel, launch_bytes, wgsl: Some(&wgsl), cuda: Some(&cuda) };
        let built = backend.build(&spec, variant)?;
        let name = built.kernel.name().to_string();
        (Plan::LookBack(built, grid), name)
    } else {
        let grid = tiles.min(WGSL_MAX_GRID) as u32;
        backend.check_launch(kernel, LaunchDims::new(grid, config.block, 0))?;
        let sums_spec = |v: Variant| wgsl_spec(problem.dtype, &config, v, "tile_sums");
        let tiles_spec = |v: Variant| wgsl_spec(problem.dtype, &config, v, "scan_tiles");
        let sums_kernel = KernelSpec { entry: kernel, launch_bytes: 0, wgsl: Some(&sums_spec), cuda: None };
        let tiles_kernel = KernelSpec { entry: kernel, launch_bytes: 0, wgsl: Some(&tiles_spec), cuda: None };
        let sums = backend.build(&sums_kernel, variant)?;
        let scan_tiles = backend.build(&tiles_kernel, variant)?;
        let mut len = problem.n;
        while len > tile as u64 {
            let m = len.div_ceil(tile as u64) as usize;
            levels.push(Level { sums: backend.alloc::<T>(m)?, scanned: backend.alloc::<T>(m)? });
            len = m as u64;
        }
        (Plan::Passes { sums, tiles: scan_tiles }, format!("{}+{}", sums_spec(variant).name, tiles_spec(variant).name))
    };
    let data = T::inputs(problem.n as usize, seed);
    let expected = reference(&data);
    let input = backend.htod(&data)?;
    let output = backend.htod(&vec![T::poison(); problem.n as usize])?;
    // Two words a tile for the Rust kernel and the CUDA C twin (one u64), four for WGSL's.
    let status = backend.alloc::<u32>(4 * tiles as usize)?;
    let counter = backend.alloc::<u32>(1)?;
    let no_offsets = backend.alloc::<T>(1)?;
    Ok(ScanWorkload {
        backend,
        plan,
        name,
        problem,
        config,
        input,
        output,
        status,
        counter,
        no_offsets,
        levels,
        expected,
    })
}

impl<B: FamilyBackend, T: Element> ScanWorkload<'_, B, T> {
    /// The WGSL passes over `input` (`n` elements) into `output`, using sums level `level`.
    fn passes(
        &self,
        sums: &Built<B::Kernel>,
        tiles: &Built<B::Kernel>,
        input: &Buffer<B::Raw, T>,
        output: &Buffer<B::Raw, T>,
        n: u64,
        level: usize,
    ) -> Result<()> {
        let tile = self.config.block as u64 * self.config.items_per_thread as u64;
        let grid = |len: u64| len.div_ceil(tile).clamp(1, WGSL_MAX_GRID) as u32;
        let dims = |len: u64| LaunchDims::new(grid(len), self.config.block, 0);
        if n <= tile {
            return self.backend.launch(
                &tiles.kernel,
                dims(n),
                &[input.arg(), output.arg(), self.no_offsets.arg(), Arg::U64(n), Arg::U32(0)],
            );
        }
        let Level { sums: level_sums, scanned: level_scanned } = &self.levels[level];
        self.backend.launch(&sums.kernel, dims(n), &[input.arg(), level_sums.arg(), Arg::U64(n), Arg::U32(0)])?;
        self.passes(sums, tiles, level_sums, level_scanned, n.div_ceil(tile), level + 1)?;
        self.backend.launch(
            &tiles.kernel,
            dims(n),
            &[input.arg(), output.arg(), level_scanned.arg(), Arg::U64(n), Arg::U32(1)],
        )
    }
}

impl<B: FamilyBackend, T: Element> Workload for ScanWorkload<'_, B, T> {
    fn kernel(&self) -> KernelInfo {
        let (shared_bytes, static_shared_bytes) = match &self.plan {
            Plan::LookBack(b, _) => (b.launch_bytes, b.static_bytes),
            Plan::Passes { tiles, .. } => (0, tiles.static_bytes),
        };
        KernelInfo { name: self.name.clone(), shared_bytes, static_shared_bytes }
    }
    fn bytes(&self) -> u64 {
        2 * self.problem.n * 4
    }
    fn run(&self) -> Result<()> {
        match &self.plan {
            Plan::LookBack(built, grid) => {
                self.backend.fill_zero(&self.status)?;
                self.backend.fill_zero(&self.counter)?;
                self.backend.launch(
                    &built.kernel,
                    LaunchDims::new(*grid, self.config.block, built.launch_bytes),
                    &[
                        self.input.arg(),
                        self.output.arg(),
                        Arg::U64(self.problem.n),
                        self.status.arg(),
                        self.counter.arg(),
                        Arg::U32(self.config.items_per_thread),
                    ],
                )
            }
            Plan::Passes { sums, tiles } => self.passes(sums, tiles, &self.input, &self.output, self.problem.n, 0),
        }
    }
    fn check(&self) -> Result<()> {
        let got = self.backend.dtoh(&self.output)?;
        let (out, scale) = &self.expected;
        // The longest chain of additions: a thread's items, the block scan, and a
        // look-back (or recursion) over every earlier tile.
        let depth =
            self.config.items_per_thread as u64 + self.config.block as u64 + 32 + self.config.tiles(self.problem.n);
        check_slice(&self.name, out, &got, |i| scale[i], Tolerance::summation::<T>(depth))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use dynsmem_kernels::Dtype;
    use dynsmem_kernels::scan::ScanConfig;

    use crate::backend::Variant;

    #[test]
    fn the_look_back_form_reads_ipt_over_4_vectors_a_thread_and_keeps_no_tile() {
        let cfg = ScanConfig { block: 128, items_per_thread: 16 };
        let spec = super::wgsl_spec(Dtype::F32, &cfg, Variant::WgslSubgroup, "tile_sums");
        assert_eq!(spec.entry, "scan_lookback");
        assert_eq!(spec.static_bytes, (128 + 2) * 4, "the subgroups' totals, the next tile and the prefix");
        assert!(spec.source.contains("x[3] = input[base + 3u * live];"), "{}", spec.source);
        let marked = spec.source.lines().any(|l| l.trim_start().starts_with("@@"));
        assert!(!spec.source.contains("x[4]") && !marked, "{}", spec.source);
        // The passes keep their padded tile.
        let passes = super::wgsl_spec(Dtype::F32, &cfg, Variant::WgslLiteral, "scan_tiles");
        assert_eq!(passes.entry, "scan_tiles");
        assert!(passes.static_bytes > 128 * 16 * 4);
    }
    #[test]
    fn reference_is_exclusive_and_u32_wraps() {
        let (f, s) = super::reference(&[1.0f32, -2.0, 3.0]);
        assert_eq!((f, s), (vec![0.0, 1.0, -1.0], vec![0.0, 1.0, 3.0]));
        let (u, _) = super::reference(&[u32::MAX, 2, 5]);
        assert_eq!(u, vec![0.0, u32::MAX as f64, 1.0]);
    }
}
