//! Tensor-core GEMM, host side: problem, validation, inputs, the CPU reference (whole for
//! small shapes, sampled for large ones), the [`Workload`], and cuBLAS on the same inputs
//! as anchor and second reference ([`cublas`]). The device algorithms, and which of their
//! parameters are launch-time and which compiled in: `dynsmem_kernels::hgemm`.
//!
//! `C (m x n) = A (m x k) B^T`, `A` row-major `m x k`, `B` row-major `n x k`; f16 or bf16
//! inputs, f32 accumulation, `C` in f32 or the input type. Only CUDA runs it: the wgmma
//! entries on compute capability 9.0 with an `sm_90a` image, the mma entries on 8.0 and
//! later. There is no cuda-static or WGSL form yet (`NOTES.md` says what each would need).

mod cost;
pub mod cublas;
mod family;
mod tune;

use std::sync::Arc;

use dynsmem_kernels::hgemm::{FIXED, HgemmConfig, MmaKind, entry_name};
use serde::{Deserialize, Serialize};

pub use family::{Hgemm, HgemmRun, default_config};
pub use tune::HgemmTunable;

use crate::backend::AnyBackend;
use crate::backend::Variant;
use crate::backend::cuda::CudaBackend;
use crate::backend::{Arg, Buffer, TensorSwizzle};
use crate::contract::{
    BufferArg, FamilyBackend, KernelInfo, Prepared, VendorAnchor, Workload, check_caller_buffers, invalid,
};
pub use crate::element::Half;
use crate::element::pack_halves;
use crate::error::{Error, Result};
use crate::measure::TimingOptions;
use crate::rng::SplitMix64;
use crate::verify::{MatrixEntry, Tolerance, check_matrix_entries};

/// The type `C` is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum OutType {
    F32,
    /// The input type.
    Input,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HgemmProblem {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub dtype: Half,
    pub out: OutType,
}

impl HgemmProblem {
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }
    fn out_bytes(&self) -> u64 {
        if self.out == OutType::F32 { 4 } else { 2 }
    }
}

/// Above this many multiply-adds the CPU reference checks [`SAMPLES`] entries of `C`.
pub const FULL_REFERENCE_MACS: u64 = 1 << 30;
/// Entries of `C` a sampled check compares (besides the four corners).
pub const SAMPLES: usize = 4096;

/// Input magnitude bound `r` (inputs are integers in `[-r, r]`) where every product and
/// partial sum is exact in f32 (`k r^2 < 2^24`), at most 4; `None` where even `r = 1` is
/// not, and the inputs are uniform in [-1, 1) instead.
pub fn exact_magnitude(k: u32) -> Option<u32> {
    let r = ((1u64 << 24) / (k.max(1) as u64 + 1)).isqrt().min(4) as u32;
    (r >= 1).then_some(r)
}

/// What a correct `C` entry may differ from the reference by, relative to the entry's
/// scale (see [`HostInputs`]): exact inputs leave only the rounding of `C` to its type
/// (half an ulp, relative to the entry itself); otherwise the f32 summation bound
/// `2 (k + 2) eps` relative to `sum |a b|`, plus that rounding. A single wrong product of
/// integer inputs moves an entry by at least 1, past the first bound wherever the entry is
/// below `1 / unit roundoff` (every f32 entry).
pub fn tolerance(p: &HgemmProblem) -> Tolerance {
    let out = if p.out == OutType::F32 { 0.0 } else { p.dtype.unit_roundoff() };
    match exact_magnitude(p.k) {
        Some(_) => Tolerance { rtol: out, atol: 0.0 },
        None => Tolerance { rtol: 2.0 * (p.k as f64 + 2.0) * f32::EPSILON as f64 + out, atol: 0.0 },
    }
}

/// The inputs of `(problem, seed)` as values (exact in the input type).
fn inputs(p: &HgemmProblem, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let make = |len: usize, stream: u64| -> Vec<f32> {
        let mut rng = SplitMix64::new(seed ^ stream);
        (0..len)
            .map(|_| match exact_magnitude(p.k) {
                Some(r) => (rng.below(2 * r as u64 + 1) as i64 - r as i64) as f32,
                None => p.dtype.value(p.dtype.bits(2.0 * rng.next_f32() - 1.0)),
            })
            .collect()
    };
    (make(p.m as usize * p.k as usize, 0xA), make(p.n as usize * p.k as usize, 0xB))
}

/// The entries a check compares: all of them for small problems, else the corners and
/// [`SAMPLES`] others from the seed.
fn checked_entries(p: &HgemmProblem, seed: u64) -> Vec<(usize, usize)> {
    let (m, n) = (p.m as usize, p.n as usize);
    if m as u64 * n as u64 * p.k as u64 <= FULL_REFERENCE_MACS {
        return (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect();
    }
    let mut rng = SplitMix64::new(seed ^ 0xC);
    let mut picks = vec![(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)];
    picks.extend((0..SAMPLES).map(|_| (rng.below(m as u64) as usize, rng.below(n as u64) as usize)));
    picks
}

/// A problem's inputs as the device gets them and the reference entries.
pub struct HostInputs {
    a: Vec<u16>,
    b: Vec<u16>,
    /// `((i, j), reference, error scale)` of each checked entry of `C`.
    expected: Vec<MatrixEntry>,
}

impl HostInputs {
    pub fn new(p: &HgemmProblem, seed: u64) -> HostInputs {
        let (a, b) = inputs(p, seed);
        let picks = checked_entries(p, seed);
        let k = p.k as usize;
        let exact = exact_magnitude(p.k).is_some();
        let expected = crate::par::map(picks.len(), |s| {
            let (i, j) = picks[s];
            let (v, abs) = dynsmem_reference::hgemm::entry(&a, &b, k, i, j);
            // Exact inputs: the only error is rounding C, relative to C itself.
            ((i, j), v, if exact { v.abs() } else { abs + v.abs() })
        });
        let bits = |v: &[f32]| v.iter().map(|&x| p.dtype.bits(x)).collect();
        HostInputs { a: bits(&a), b: bits(&b), expected }
    }
}

/// The rules a config and problem must meet before anything is built, as one message
/// naming the kernel: what the tuner's filter, `run` and `bench` all apply. `Ok` is the
/// entry point that runs them.
pub fn validate(
    p: &HgemmProblem,
    cfg: &HgemmConfig,
    fixed: bool,
) -> std::result::Result<&'static str, (String, String)> {
    let bf16 = p.dtype == Half::Bf16;
    let kernel = match cfg.kind {
        MmaKind::Wgmma => "hgemm_wgmma",
        MmaKind::Mma => "hgemm_mma",
    };
    let fail = |reason: String| Err((kernel.to_string(), reason));
    if !cfg.fits() {
        return fail(format!(
            "bm 64 or 128 (64 per math unit), bn {} ({:?}), stages {} to {}, group_m at least 1, cluster 1 \
             or 2 (wgmma, bn past 128), pingpong only with wgmma and bm 128, depth 1 or 2 (2: wgmma, at least 3 \
             stages), streamk only with cooperative wgmma, tma_store only with wgmma, stage_buffers 2 (3 or 4 with \
             tma_store) (got {cfg:?})",
            match cfg.kind {
                MmaKind::Wgmma => "128, 160, 192, 224 or 256",
                MmaKind::Mma => "128",
            },
            cfg.kind,
            dynsmem_kernels::hgemm::MIN_STAGES,
            dynsmem_kernels::hgemm::MAX_STAGES
        ));
    }
    let Some(entry) = entry_name(cfg, bf16, fixed) else {
        return fail(format!(
            "no entry has this shape{} (got {cfg:?}, {:?})",
            if fixed { format!(": the compiled-in tile is {FIXED:?} with f16 inputs") } else { String::new() },
            p.dtype
        ));
    };
    if p.m == 0 || p.n == 0 || p.k == 0 {
        return Err((entry.into(), format!("m, n and k at least 1 (got {} x {} x {})", p.m, p.n, p.k)));
    }
    if p.k % 8 != 0 {
        return Err((
            entry.into(),
            format!("k a multiple of 8 (rows of A and B in 16-byte chunks: tensor-map strides, cp.async), got {}", p.k),
        ));
    }
    if p.m > i32::MAX as u32 || p.n > i32::MAX as u32 || p.k > i32::MAX as u32 {
        return Err((entry.into(), "m, n, k below 2^31 (tensor-map coordinates are i32)".into()));
    }
    if cfg.tiles(p.m, p.n) > u32::MAX as u64 {
        return Err((entry.into(), format!("{} tiles: at most 2^32 - 1", cfg.tiles(p.m, p.n))));
    }
    let out_bytes = p.out_bytes();
    if cfg.tma_store && !(p.n as u64 * out_bytes).is_multiple_of(16) {
        return Err((
            entry.into(),
            format!(
                "tma_store: rows of C a multiple of 16 bytes (tensor-map strides): n a multiple of {} for {} output, got {}",
                16 / out_bytes,
                if out_bytes == 4 { "f32" } else { "16-bit" },
                p.n
            ),
        ));
    }
    let k_tiles = p.k.div_ceil(cfg.bk()) as u64;
    if cfg.streamk && !dynsmem_kernels::streamk::StreamK::fits(cfg.items(p.m, p.n) as u64, k_tiles) {
        return Err((
            entry.into(),
            format!("stream-K: {} items x {k_tiles} k-tiles must fit the schedule's u32 count", cfg.items(p.m, p.n)),
        ));
    }
    Ok(entry)
}

/// Blocks of a launch: wgmma blocks are persistent, one per multiprocessor (a block's ring
/// and 384 threads fill one), in whole clusters, at most one cluster per item (a column tile
/// of `cluster` row tiles) or, stream-K, per k-tile of the items; mma one per tile.
pub fn launch_grid(cfg: &HgemmConfig, m: u32, n: u32, k: u32, multiprocessors: u32) -> u64 {
    match cfg.kind {
        MmaKind::Wgmma => {
            let c = cfg.cluster.max(1) as u64;
            let items = cfg.items(m, n) as u64;
            let work = if cfg.streamk { items * k.div_ceil(cfg.bk()) as u64 } else { items };
            work.min((multiprocessors as u64 / c).max(1)) * c
        }
        MmaKind::Mma => cfg.tiles(m, n),
    }
}

/// The entries' `flags` word for `cfg` on `p`: the config's own, and the output type's.
fn launch_flags(p: &HgemmProblem, cfg: &HgemmConfig) -> u32 {
    (if p.out == OutType::Input { dynsmem_kernels::hgemm::OUT16 } else { 0 }) | cfg.flags()
}

/// The device and image facts an entry needs, checked before building: wgmma needs
/// compute capability 9.0 and an `sm_90a` image; mma 8.0 or later.
fn check_device(backend: AnyBackend<'_>, cfg: &HgemmConfig, entry: &str, variant: Variant) -> Result<()> {
    let unsupported = |what: String| Err(Error::Unsupported { backend: backend.kind(), what });
    let AnyBackend::Cuda(cuda) = backend else {
        return unsupported(format!("{entry}: tensor-core MMA from Rust runs on CUDA only"));
    };
    if variant != Variant::LaunchSized {
        return unsupported(format!("{entry} in the {variant} form (NOTES.md: no cuda-static or WGSL twin yet)"));
    }
    let (major, minor) = cuda.capability();
    match cfg.kind {
        MmaKind::Wgmma => cuda.wgmma_refusal(entry).map_or(Ok(()), unsupported),
        MmaKind::Mma if major < 8 => unsupported(format!(
            "{entry}: mma.sync m16n8k16 and cp.async need sm_80 or later (device sm_{major}{minor})"
        )),
        _ => Ok(()),
    }
}

/// The tensor maps (`CUtensorMap`s) of A, of B and (staged stores) of C.
type TensorMaps<R> = (Buffer<R, u32>, Buffer<R, u32>, Option<Buffer<R, u32>>);

/// The tensor maps the wgmma entries read A and B through (and write C through, with staged
/// stores), each made by `map(which: 0 A, 1 B, 2 C, element bytes, dims (columns, rows), row
/// bytes, box (columns, rows), swizzle)`: over the workload's own buffers or a caller's.
fn tensor_maps<R>(
    problem: &HgemmProblem,
    config: &HgemmConfig,
    map: impl Fn(usize, u32, [u64; 2], u64, [u32; 2], TensorSwizzle) -> Result<Buffer<R, u32>>,
) -> Result<TensorMaps<R>> {
    let HgemmProblem { m, n, k, .. } = *problem;
    // Row-major `rows x k` 16-bit operands, boxes of a k-tile by `box_rows`.
    let operand = |which: usize, rows: u32, box_rows: u32| {
        map(which, 2, [k as u64, rows as u64], k as u64 * 2, [config.bk(), box_rows], TensorSwizzle::B128)
    };
    // C: `m x n` of the output type, boxes of a staged chunk (a warpgroup's 64 rows), in the
    // swizzle the kernel's staging writes (`staged_offset`: 128-byte rows of f32, 64-byte rows
    // of 16-bit).
    let out = problem.out_bytes() as u32;
    let c_map = if config.tma_store {
        let swizzle = if out == 4 { TensorSwizzle::B128 } else { TensorSwizzle::B64 };
        let (cols, rows) = (dynsmem_kernels::hgemm::STAGE_COLS, dynsmem_kernels::hgemm::ROWS_PER_UNIT);
        Some(map(2, out, [n as u64, m as u64], (n * out) as u64, [cols, rows], swizzle)?)
    } else {
        None
    };
    Ok((operand(0, m, config.tile_rows())?, operand(1, n, config.b_box_rows())?, c_map))
}

/// The addresses of a caller's A, B and C, and the tensor maps over them.
type CallerMaps<R> = ((u64, u64, u64), TensorMaps<R>);

/// The A, B and C-map arguments of a launch.
type OperandArgs<'a, R> = (Arg<'a, R>, Arg<'a, R>, Arg<'a, R>);

/// The stream-K workspace: the pieces of split tiles (f32) and their counters.
type Workspace<R> = (Buffer<R, f32>, Buffer<R, u32>);

/// A and B on the device, borrowed (two 16-bit values per word).
pub type Operands<'a, R> = (&'a Buffer<R, u32>, &'a Buffer<R, u32>);

pub struct HgemmWorkload<'b, B: FamilyBackend> {
    backend: &'b B,
    kernel: Prepared<B::Kernel>,
    problem: HgemmProblem,
    config: HgemmConfig,
    grid: u32,
    /// Two 16-bit values per word.
    a: Buffer<B::Raw, u32>,
    b: Buffer<B::Raw, u32>,
    /// `C` as words: f32 bits, or two 16-bit values per word.
    c: Buffer<B::Raw, u32>,
    maps: Option<TensorMaps<B::Raw>>,
    /// Stream-K: the pieces of split tiles and their counters (zero between launches).
    workspace: Option<Workspace<B::Raw>>,
    host: Arc<HostInputs>,
    /// The tensor maps of the last caller's A, B and C ([`Workload::run_on`]), by address.
    caller: std::cell::RefCell<Option<CallerMaps<B::Raw>>>,
}

/// Validates `config` for `problem`, uploads the inputs, computes the reference entries and
/// builds the kernel; nothing is launched. `fixed` runs the compiled-in-tile entry.
pub fn prepare<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: HgemmProblem,
    config: HgemmConfig,
    fixed: bool,
    variant: Variant,
    inputs: impl FnOnce() -> Arc<HostInputs>,
) -> Result<HgemmWorkload<'b, B>> {
    let entry = validate(&problem, &config, fixed).map_err(|(kernel, reason)| invalid(&kernel, reason))?;
    check_device(backend.erase(), &config, entry, variant)?;
    let HgemmProblem { m, n, k, .. } = problem;
    let grid = launch_grid(&config, m, n, k, backend.info().limits.multiprocessors.unwrap_or(1)) as u32;
    let (mk, nk, mn) = (m as u64 * k as u64, n as u64 * k as u64, m as u64 * n as u64);
    let (pieces, counters) = config.sk_workspace(m, n, k, grid);
    let device = (mk + nk) * 2 + mn * problem.out_bytes() + 4 * (pieces + counters);
    crate::contract::check_footprint(backend, entry, device, device + mn * 4)?;
    let kernel = Prepared::new(backend, entry, config.shared_bytes(), grid, config.threads(), variant, None, None)?;
    let host = inputs();
    let a = backend.htod(&pack_halves(&host.a))?;
    let b = backend.htod(&pack_halves(&host.b))?;
    let c = backend.alloc::<u32>((mn * problem.out_bytes()).div_ceil(4) as usize)?;
    let maps = if config.kind == MmaKind::Wgmma {
        let own = [&a, &b, &c];
        Some(tensor_maps(&problem, &config, |which, e, dims, row, bx, sw| {
            backend.tensor_map_2d(own[which], e, dims, row, bx, sw)
        })?)
    } else {
        None
    };
    let workspace = if config.streamk {
        let counters = backend.alloc::<u32>(counters as usize)?;
        backend.fill_zero(&counters)?;
        Some((backend.alloc::<f32>(pieces as usize)?, counters))
    } else {
        None
    };
    Ok(HgemmWorkload {
        backend,
        kernel,
        problem,
        config,
        grid,
        a,
        b,
        c,
        maps,
        workspace,
        host,
        caller: Default::default(),
    })
}

impl<B: FamilyBackend> HgemmWorkload<'_, B> {
    fn launch(&self) -> Result<()> {
        let operands = match &self.maps {
            Some(maps) => map_args(maps),
            None => (self.a.arg(), self.b.arg(), Arg::U64(0)),
        };
        let dims = self.kernel.dims(self.grid, self.config.threads());
        self.backend.launch(&self.kernel.built.kernel, dims, &self.args(operands, self.c.arg()))
    }

    /// The kernel's arguments: A and B (or their tensor maps), C, C's tensor map (or 0), the
    /// sizes, flags and launch-time parameters, the stream-K workspace.
    fn args<'a>(&'a self, (a, b, c_map): OperandArgs<'a, B::Raw>, c: Arg<'a, B::Raw>) -> [Arg<'a, B::Raw>; 13] {
        let HgemmProblem { m, n, k, .. } = self.problem;
        let cfg = &self.config;
        let (partials, counters) = match &self.workspace {
            Some((p, c)) => (p.arg(), c.arg()),
            None => (Arg::U64(0), Arg::U64(0)),
        };
        [
            a,
            b,
            c,
            c_map,
            Arg::U32(m),
            Arg::U32(n),
            Arg::U32(k),
            Arg::U32(launch_flags(&self.problem, cfg)),
            Arg::U32(cfg.bm),
            Arg::U32(cfg.stages),
            Arg::U32(cfg.group_m),
            partials,
            counters,
        ]
    }

    /// `C` as f32 values, read back.
    pub fn result(&self) -> Result<Vec<f32>> {
        let w = self.backend.dtoh(&self.c)?;
        let mn = self.problem.m as usize * self.problem.n as usize;
        Ok(match self.problem.out {
            OutType::F32 => w.into_iter().take(mn).map(f32::from_bits).collect(),
            OutType::Input => self.problem.dtype.unpack(&w, mn),
        })
    }

    /// Compares `got` (all of `C`) with the reference entries.
    pub fn compare(&self, got: &[f32]) -> Result<()> {
        let tol = tolerance(&self.problem);
        check_matrix_entries(&self.kernel.name, &self.host.expected, got, self.problem.n as usize, tol)
            .map_err(Into::into)
    }

    pub fn problem(&self) -> HgemmProblem {
        self.problem
    }
    pub fn kernel_name(&self) -> &str {
        &self.kernel.name
    }
    /// The device buffers of A and B (two 16-bit values per word).
    pub fn inputs(&self) -> Operands<'_, B::Raw> {
        (&self.a, &self.b)
    }
}

/// The tensor maps as the kernel's A, B and C-map arguments.
fn map_args<R>((a, b, c): &TensorMaps<R>) -> OperandArgs<'_, R> {
    (a.arg(), b.arg(), c.as_ref().map_or(Arg::U64(0), |c| c.arg()))
}

impl<B: FamilyBackend> Workload for HgemmWorkload<'_, B> {
    fn kernel(&self) -> KernelInfo {
        self.kernel.info()
    }
    fn bytes(&self) -> u64 {
        0
    }
    fn flops(&self) -> f64 {
        self.problem.flops()
    }
    fn run(&self) -> Result<()> {
        self.launch()
    }
    /// Zeros `C`, runs once, and compares (so a kernel that skips an entry fails).
    fn check(&self) -> Result<()> {
        self.backend.fill_zero(&self.c)?;
        self.launch()?;
        self.compare(&self.result()?)
    }
    /// A, B and C, row-major (`m x k`, `n x k`, `m x n`): `C = A B^T`.
    fn buffers(&self) -> Vec<BufferArg> {
        let HgemmProblem { m, n, k, dtype, out } = self.problem;
        let half = match dtype {
            Half::F16 => "f16",
            Half::Bf16 => "bf16",
        };
        let (mk, nk, mn) = (m as u64 * k as u64, n as u64 * k as u64, m as u64 * n as u64);
        let arg = |name, element, len: u64, bytes, output| BufferArg {
            name,
            element,
            len,
            bytes: len * bytes,
            output,
            zeroed: false,
        };
        vec![
            arg("a", half, mk, 2, false),
            arg("b", half, nk, 2, false),
            arg("c", if out == OutType::F32 { "f32" } else { half }, mn, self.problem.out_bytes(), true),
        ]
    }
    /// One launch on the caller's A, B and C (16-byte aligned: the tensor maps' addresses). The
    /// wgmma entries read through tensor maps of them, made at the first call with these
    /// addresses and kept for the next (made on the backend's stream, which is waited for).
    fn run_on(&self, buffers: &[(u64, u64)], stream: u64) -> Result<()> {
        check_caller_buffers(&self.kernel.name, &Workload::buffers(self), buffers, 16)?;
        let (a, b, c) = (buffers[0].0, buffers[1].0, buffers[2].0);
        let dims = self.kernel.dims(self.grid, self.config.threads());
        if self.config.kind != MmaKind::Wgmma {
            let args = self.args((Arg::U64(a), Arg::U64(b), Arg::U64(0)), Arg::U64(c));
            return self.backend.launch_on_stream(&self.kernel.built.kernel, dims, &args, stream);
        }
        let mut cached = self.caller.borrow_mut();
        if cached.as_ref().is_none_or(|(at, _)| *at != (a, b, c)) {
            let at = [a, b, c];
            let maps = tensor_maps(&self.problem, &self.config, |which, e, dims, row, bx, sw| {
                self.backend.tensor_map_2d_at(at[which], e, dims, row, bx, sw)
            })?;
            self.backend.synchronize()?;
            *cached = Some(((a, b, c), maps));
        }
        let (_, maps) = cached.as_ref().expect("made above");
        let args = self.args(map_args(maps), Arg::U64(c));
        self.backend.launch_on_stream(&self.kernel.built.kernel, dims, &args, stream)
    }
    /// cuBLAS (`cublasGemmEx`, f32 compute) on the same inputs: its `C` compared with ours
    /// entry by entry, then timed alone and interleaved with ours ([`cublas::anchor`]).
    fn vendor_anchor(&self, timing: TimingOptions, _seed: u64) -> Option<VendorAnchor> {
        if std::any::TypeId::of::<B>() != std::any::TypeId::of::<CudaBackend>() {
            return None;
        }
        // SAFETY: `B` is `CudaBackend` (checked above), so this is the same type.
        let w = unsafe { &*(self as *const Self as *const HgemmWorkload<'_, CudaBackend>) };
        let result = self.check().and_then(|()| self.result()).and_then(|ours| cublas::anchor(w, &ours, timing));
        let (result, paired) = match result {
            Ok(r) => (Ok((r.timing, r.warmup)), Some(r.paired)),
            Err(e) => (Err(e), None),
        };
        Some(VendorAnchor { name: "cublasGemmEx", result, paired })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(k: u32) -> HgemmProblem {
        HgemmProblem { m: 3, n: 5, k, dtype: Half::F16, out: OutType::F32 }
    }

    #[test]
    fn integer_inputs_while_f32_sums_are_exact_then_uniform() {
        assert_eq!(exact_magnitude(4096), Some(4));
        assert_eq!(exact_magnitude(1 << 22), Some(1));
        assert_eq!(exact_magnitude(1 << 24), None);
        assert_eq!(tolerance(&problem(4096)).rtol, 0.0);
        let out16 = HgemmProblem { out: OutType::Input, dtype: Half::Bf16, ..problem(64) };
        assert_eq!(tolerance(&out16).rtol, 2f64.powi(-8));
        let deep = tolerance(&problem(1 << 24));
        assert!(deep.rtol > 2.0 * (1u64 << 24) as f64 * f32::EPSILON as f64);
    }

    #[test]
    fn one_wrong_product_fails_the_check_of_exact_inputs() {
        let p = HgemmProblem { m: 4, n: 4, k: 64, ..problem(64) };
        let h = HostInputs::new(&p, 7);
        let tol = tolerance(&p);
        let ((i, j), want, scale) = h.expected[5];
        let (a, b) = inputs(&p, 7);
        let term = (0..64).map(|t| a[i * 64 + t] * b[j * 64 + t]).find(|v| *v != 0.0).unwrap();
        assert!(tol.allows(want, want, scale));
        assert!(!tol.allows(want, want - term as f64, scale), "dropping {term} must fail");
    }

    #[test]
    fn validate_names_the_rule_a_config_breaks() {
        let p = HgemmProblem { m: 4096, n: 4096, k: 4096, dtype: Half::F16, out: OutType::F32 };
        assert_eq!(validate(&p, &HgemmConfig::wgmma(128, 256, 4), false), Ok("hgemm_wgmma_f16_n256"));
        assert_eq!(validate(&p, &HgemmConfig::wgmma(128, 256, 4), true), Ok("hgemm_wgmma_f16_n256_fixed"));
        let (kernel, why) = validate(&p, &HgemmConfig::wgmma(192, 256, 4), false).unwrap_err();
        assert!(kernel == "hgemm_wgmma" && why.contains("bm 64 or 128"), "{why}");
        let (_, why) = validate(&HgemmProblem { k: 4100, ..p }, &HgemmConfig::mma(128, 3), false).unwrap_err();
        assert!(why.contains("multiple of 8"), "{why}");
        let bf = HgemmProblem { dtype: Half::Bf16, ..p };
        assert!(validate(&bf, &HgemmConfig::wgmma(128, 256, 4), true).is_err(), "the fixed entry is f16");
        assert_eq!(validate(&bf, &HgemmConfig::mma(64, 2), false), Ok("hgemm_mma_bf16"));
        let c2 = HgemmConfig::wgmma(128, 256, 4).with_cluster(2);
        assert_eq!(validate(&bf, &c2, false), Ok("hgemm_wgmma_bf16_n256_c2"));
        assert!(validate(&p, &HgemmConfig::wgmma(128, 128, 4).with_cluster(2), false).is_err(), "c2 is bn 192, 256");
        let pp = HgemmConfig::wgmma(128, 192, 5).with_cluster(2).with_pingpong(true);
        assert_eq!(validate(&p, &pp, false), Ok("hgemm_wgmma_f16_n192_c2"));
        assert!(validate(&p, &FIXED.with_pingpong(true), true).is_err(), "the fixed entries are cooperative");
        let (_, why) = validate(&p, &HgemmConfig::wgmma(64, 256, 4).with_pingpong(true), false).unwrap_err();
        assert!(why.contains("pingpong only with wgmma and bm 128"), "{why}");
        assert!(validate(&p, &HgemmConfig::wgmma(128, 256, 1), false).is_err(), "one slot deadlocks");
        let sk = HgemmConfig::wgmma(128, 256, 4).with_cluster(2).with_streamk(true);
        assert_eq!(validate(&p, &sk, false), Ok("hgemm_wgmma_f16_n256_c2"));
        let (_, why) = validate(&p, &sk.with_pingpong(true), false).unwrap_err();
        assert!(why.contains("streamk only with cooperative wgmma"), "{why}");
        assert!(validate(&p, &HgemmConfig::mma(128, 4).with_streamk(true), false).is_err());
        assert!(validate(&p, &FIXED.with_streamk(true), true).is_err(), "the fixed entries are data-parallel");
    }

    #[test]
    fn persistent_grids_come_in_whole_clusters_and_never_exceed_the_work() {
        let c2 = HgemmConfig::wgmma(128, 256, 4).with_cluster(2);
        assert_eq!(launch_grid(&c2, 4096, 4096, 4096, 132), 132);
        assert_eq!(launch_grid(&c2, 4096, 4096, 4096, 131), 130);
        // 3 row tiles -> 2 cluster items per column tile, 1 column: 2 clusters.
        assert_eq!(launch_grid(&c2, 300, 256, 64, 132), 4);
        assert_eq!(launch_grid(&HgemmConfig::wgmma(128, 256, 4), 300, 256, 64, 132), 3);
        assert_eq!(launch_grid(&HgemmConfig::mma(64, 3), 300, 256, 64, 132), 10);
        // Ping-pong: 64-row items, so 300 rows are 5 items (3 cluster items).
        assert_eq!(launch_grid(&HgemmConfig::wgmma(128, 256, 4).with_pingpong(true), 300, 256, 64, 132), 5);
        assert_eq!(launch_grid(&c2.with_pingpong(true), 300, 256, 64, 132), 6);
        // Stream-K: one cluster per k-tile of the items at most. 2 items of 2 k-tiles: 4
        // clusters; at 4096^3 every multiprocessor.
        let sk = c2.with_streamk(true);
        assert_eq!(launch_grid(&sk, 300, 256, 128, 132), 8);
        assert_eq!(launch_grid(&sk, 4096, 4096, 4096, 132), 132);
        assert_eq!(launch_grid(&sk, 2560, 2560, 2560, 131), 130);
    }
}
