//! SGEMM's [`Workload`]: a config prepared on a backend (its one validation first, then the
//! inputs, the tensor maps and row padding of the tensor-map kernels, the stream-K and split-K
//! workspaces), run, checked against the sampled CPU reference, and anchored by cuBLAS on CUDA.

use std::sync::Arc;

use dynsmem_kernels::sgemm::pack::{PACK_THREADS, pack_blocks, padded_ld};
use dynsmem_kernels::sgemm::split::{SUM_THREADS, sum_blocks, sum_bytes, workspace_floats};
use dynsmem_kernels::sgemm::{SgemmConfig, entry_name};

use super::*;
use crate::backend::cuda::CudaBackend;
use crate::backend::{Arg, Buffer, TensorSwizzle};
use crate::contract::{FamilyBackend, KernelInfo, Prepared, Target, VendorAnchor, Workload, invalid_problem};
use crate::element::{Half, pack_halves};
use crate::error::Result;
use crate::measure::TimingOptions;
use crate::verify::{MatrixEntry, check_matrix_entries};

/// What a tensor-map config adds to a run: the tensor maps (`CUtensorMap`s, 32 words each) of
/// A and B, or of their copies with rows padded to 16 bytes, which `sgemm_pack` makes at the
/// start of every run (A where `k`, B where `n` is not a multiple of 4); and for stream-K the
/// workspace (`2 G` pieces of `bm x bn` floats, a counter per tile, zero between runs).
struct TmaStep<B: FamilyBackend> {
    a_map: Buffer<B::Raw, u32>,
    b_map: Buffer<B::Raw, u32>,
    pack: Option<PackStep<B>>,
    workspace: Option<Workspace<B::Raw>>,
}

/// The stream-K workspace: the pieces (`2 G` of `bm x bn` floats) and a counter per tile.
type Workspace<R> = (Buffer<R, f32>, Buffer<R, u32>);

/// The pad launch and the padded copies (`None`: that operand's rows are aligned already).
struct PackStep<B: FamilyBackend> {
    kernel: Prepared<B::Kernel>,
    grid: u32,
    /// A (`m x k`, rows `padded_ld(k)` apart) and B (`k x n`, rows `padded_ld(n)` apart).
    a: Option<Buffer<B::Raw, u32>>,
    b: Option<Buffer<B::Raw, u32>>,
}

/// Split-K's workspace and second launch: the multiply stores split `s`'s part in slice `s`
/// of `workspace` (`splits` slices of `m x n`), and `sgemm_split_sum` adds the slices into
/// `C` in a fixed order ([`dynsmem_kernels::sgemm::split`]).
struct SplitStep<B: FamilyBackend> {
    kernel: Prepared<B::Kernel>,
    grid: u32,
    workspace: Buffer<B::Raw, f32>,
}

pub struct SgemmWorkload<'b, B: FamilyBackend> {
    backend: &'b B,
    kernel: Prepared<B::Kernel>,
    problem: SgemmProblem,
    config: SgemmConfig,
    /// Blocks of the multiply's launch: `splits` per tile ([`SgemmConfig::launch_grid`]),
    /// capped on WGSL ([`wgsl_grid`]).
    grid: u32,
    /// f32 elements, or f16 pairs packed into `u32` words (the backends move bytes).
    a: Buffer<B::Raw, u32>,
    b: Buffer<B::Raw, u32>,
    pub(super) c: Buffer<B::Raw, f32>,
    /// What the tensor-map entries take in place of `a` and `b` ([`SgemmConfig::tma`]).
    tma: Option<TmaStep<B>>,
    /// Split-K's workspace and sum (`splits` > 1).
    split: Option<SplitStep<B>>,
    /// The inputs as generated (shared by every config a tuner prepares for the problem).
    host: Arc<HostInputs>,
}

/// The words a buffer of `values` becomes: f32 bits, or two f16 per word.
pub(super) fn device_words(values: &[f32], f16_inputs: bool) -> Vec<u32> {
    if f16_inputs {
        let bits: Vec<u16> = values.iter().map(|&v| Half::F16.bits(v)).collect();
        pack_halves(&bits)
    } else {
        values.iter().map(|v| v.to_bits()).collect()
    }
}

/// Uploads inputs, computes the reference of the entries to check, and builds the kernel.
/// `fixed` picks the entry with the 128 x 128 x 16 two-stage tile compiled in (its config
/// must be that tile).
pub fn prepare<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: SgemmProblem,
    config: SgemmConfig,
    fixed: bool,
    variant: Variant,
    seed: u64,
) -> Result<SgemmWorkload<'b, B>> {
    prepare_with(backend, problem, config, fixed, variant, || Arc::new(HostInputs::new(&problem, seed)))
}

/// [`prepare`] with the inputs from `inputs`, called only once the config and problem are
/// accepted: a tuner hands every config of a problem the same [`HostInputs`].
pub fn prepare_with<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: SgemmProblem,
    config: SgemmConfig,
    fixed: bool,
    variant: Variant,
    inputs: impl FnOnce() -> Arc<HostInputs>,
) -> Result<SgemmWorkload<'b, B>> {
    // Ablations of the f32 kernel, same arguments: `DYNSMEM_SGEMM_ENTRY=sgemm_f32` (bk at
    // launch too, where an entry has it compiled in) or `sgemm_f32_unroll4` (that, with the
    // k loop unrolled by 4).
    let ablation = std::env::var("DYNSMEM_SGEMM_ENTRY").ok();
    prepare_entry(backend, problem, config, fixed, variant, inputs, ablation.as_deref())
}

/// [`prepare_with`] with the ablation entry given instead of read from
/// `DYNSMEM_SGEMM_ENTRY` (see [`ablation_entry`]): how the tests run every ablation.
pub fn prepare_entry<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: SgemmProblem,
    config: SgemmConfig,
    fixed: bool,
    variant: Variant,
    inputs: impl FnOnce() -> Arc<HostInputs>,
    ablation: Option<&str>,
) -> Result<SgemmWorkload<'b, B>> {
    // The one validation (the tuner's filter and the database's too), before anything is
    // generated, uploaded or launched.
    let footprint = check(&problem, &config, fixed, &Target::of(backend, variant))?;
    let grid = footprint.grid as u64;
    let entry = entry_name(problem.f16_inputs, fixed, &config).expect("check refuses a config without an entry");
    let entry = match ablation {
        Some(name) if !fixed && !problem.f16_inputs => ablation_entry(name, &config).unwrap_or(entry),
        _ => entry,
    };
    let SgemmProblem { m, n, k, .. } = problem;
    let eb = problem.elem_bytes() as u64;
    let mut device = (m as u64 * k as u64 + k as u64 * n as u64) * eb + m as u64 * n as u64 * 4;
    if config.tma {
        let (pad_a, pad_b) = padded_operands(&problem);
        device += 4 * (pad_a.map_or(0, |ld| m as u64 * ld as u64) + pad_b.map_or(0, |ld| k as u64 * ld as u64));
        if config.sk > 0 {
            let (floats, counters) = config.sk_workspace(m, n, grid as u32);
            device += 4 * (floats + counters);
        }
    }
    if config.splits > 1 {
        device += 4 * workspace_floats(m, n, config.splits);
    }
    crate::contract::check_footprint(backend, entry, device, device * 3)?;
    let wgsl = |v: Variant| wgsl_spec(&config, v, problem.f16_inputs);
    let cuda = || cuda_source(&problem, &config);
    let kernel = Prepared::new(
        backend,
        entry,
        Ok(footprint.launch_bytes),
        footprint.grid,
        footprint.threads,
        variant,
        Some(&wgsl),
        Some(&cuda),
    )?;
    let host = inputs();
    let a = backend.htod(&host.a_words)?;
    let b = backend.htod(&host.b_words)?;
    let c = backend.htod(&host.c)?;
    let tma = if config.tma { Some(tma_step(backend, &problem, &config, &a, &b, grid as u32)?) } else { None };
    let split = if config.splits > 1 { Some(split_step(backend, &problem, &config)?) } else { None };
    Ok(SgemmWorkload { backend, kernel, problem, config, grid: grid as u32, a, b, c, tma, split, host })
}

/// Split-K's workspace (written whole by every run, so never cleared) and its sum launch.
fn split_step<B: FamilyBackend>(backend: &B, problem: &SgemmProblem, config: &SgemmConfig) -> Result<SplitStep<B>> {
    let SgemmProblem { m, n, .. } = *problem;
    let grid = sum_blocks(m, n);
    let grid = u32::try_from(grid)
        .map_err(|_| invalid_problem("sgemm_split_sum", format!("{grid} blocks to sum {m} x {n} results")))?;
    let kernel =
        Prepared::new(backend, "sgemm_split_sum", sum_bytes(), grid, SUM_THREADS, Variant::LaunchSized, None, None)?;
    let workspace = backend.alloc::<f32>(workspace_floats(m, n, config.splits) as usize)?;
    Ok(SplitStep { kernel, grid, workspace })
}

/// The padded row length of A and of B where a tensor-map config must pad them (`None`: the
/// rows are 16-byte aligned as they are).
fn padded_operands(p: &SgemmProblem) -> (Option<u32>, Option<u32>) {
    let pad = |cols: u32| (!cols.is_multiple_of(4)).then(|| padded_ld(cols));
    (pad(p.k), pad(p.n))
}

/// The tensor maps of A and B (or of their padded copies, with the pad launch that fills
/// them) and the stream-K workspace for `blocks` blocks.
fn tma_step<B: FamilyBackend>(
    backend: &B,
    problem: &SgemmProblem,
    config: &SgemmConfig,
    a: &Buffer<B::Raw, u32>,
    b: &Buffer<B::Raw, u32>,
    blocks: u32,
) -> Result<TmaStep<B>> {
    let SgemmProblem { m, n, k, .. } = *problem;
    let (pad_a, pad_b) = padded_operands(problem);
    let pack = if pad_a.is_some() || pad_b.is_some() {
        let grid = pad_a.map_or(0, |_| pack_blocks(m, k)) + pad_b.map_or(0, |_| pack_blocks(k, n));
        let grid = u32::try_from(grid)
            .map_err(|_| invalid_problem("sgemm_pack", format!("{grid} blocks to pad the rows of A and B")))?;
        let kernel = Prepared::new(backend, "sgemm_pack", Ok(0), grid, PACK_THREADS, Variant::LaunchSized, None, None)?;
        let a = pad_a.map(|ld| backend.alloc::<u32>(m as usize * ld as usize)).transpose()?;
        let b = pad_b.map(|ld| backend.alloc::<u32>(k as usize * ld as usize)).transpose()?;
        Some(PackStep { kernel, grid, a, b })
    } else {
        None
    };
    // Each operand's map (`cols` x `rows`): over its padded copy (rows `padded_ld(cols)` apart)
    // or over itself.
    let map = |own: &Buffer<B::Raw, u32>, padded: Option<&Buffer<B::Raw, u32>>, (cols, rows): (u32, u32), boxed| {
        let (src, ld) = match padded {
            Some(p) => (p, padded_ld(cols)),
            None => (own, cols),
        };
        backend.tensor_map_2d(src, 4, [cols as u64, rows as u64], ld as u64 * 4, boxed, TensorSwizzle::None)
    };
    let a_map = map(a, pack.as_ref().and_then(|p| p.a.as_ref()), (k, m), [config.bk, config.bm])?;
    let b_map = map(b, pack.as_ref().and_then(|p| p.b.as_ref()), (n, k), [config.bn, config.bk])?;
    let workspace = if config.sk > 0 {
        let (floats, counters) = config.sk_workspace(m, n, blocks);
        let partials = backend.alloc::<f32>(floats as usize)?;
        let counters = backend.alloc::<u32>(counters as usize)?;
        backend.fill_zero(&counters)?;
        Some((partials, counters))
    } else {
        None
    };
    Ok(TmaStep { a_map, b_map, pack, workspace })
}

/// The f32 entry `name` in place of the one [`entry_name`] picks, for ablations
/// (`DYNSMEM_SGEMM_ENTRY`): any `sgemm_f32*` entry of the image whose compiled-in rows per
/// thread and depth (`_tm4`, `_tm16`, `_bk{8,16,32,64}` in its name) agree with `config`; `None`
/// (the usual entry) for any other name.
fn ablation_entry(name: &str, config: &SgemmConfig) -> Option<&'static str> {
    let entry = dynsmem_kernels::sgemm::KERNELS.iter().find(|e| e.name == name && e.name.starts_with("sgemm_f32"))?;
    let tm = if entry.name.contains("_tm16") {
        16
    } else if entry.name.contains("_tm4") {
        4
    } else {
        8
    };
    // No depth's suffix is a prefix of another's, so `contains` names one at most.
    let bk = ["_bk8", "_bk16", "_bk32", "_bk64"].iter().zip([8, 16, 32, 64]).find(|(s, _)| entry.name.contains(*s));
    let fixed_tile = entry.name.contains("128x128");
    // The k-group entries only: the tensor-map ones take other arguments.
    let k_group = !config.tma && !entry.name.contains("_tma") && !entry.name.contains("_sk");
    (k_group && tm == config.tm && bk.is_none_or(|(_, b)| b == config.bk) && !fixed_tile).then_some(entry.name)
}

/// A problem's inputs as the device gets them, the initial `C`, and the reference entries.
pub struct HostInputs {
    a_words: Vec<u32>,
    b_words: Vec<u32>,
    c: Vec<f32>,
    /// `((i, j), reference, error scale)` of each checked entry of `C`.
    expected: Vec<MatrixEntry>,
}

impl HostInputs {
    /// The inputs of `(problem, seed)` and the reference of the entries a check compares.
    pub fn new(problem: &SgemmProblem, seed: u64) -> HostInputs {
        let (a, b, c) = inputs(problem, seed);
        let picks = checked_entries(problem, seed);
        let (nn, kk) = (problem.n as usize, problem.k as usize);
        let expected = crate::par::map(picks.len(), |s| {
            let (i, j) = picks[s];
            let (v, scale) = reference_entry(&a, &b, &c, nn, kk, i, j);
            ((i, j), v, scale)
        });
        HostInputs {
            a_words: device_words(&a, problem.f16_inputs),
            b_words: device_words(&b, problem.f16_inputs),
            c,
            expected,
        }
    }
}

impl<B: FamilyBackend> SgemmWorkload<'_, B> {
    /// One run computing into `c`: one launch, or under split-K two: the splits storing
    /// their parts in the workspace, then `sgemm_split_sum` adding them (and `beta * C`)
    /// into `c`. Tensor-map configs whose operands need padding launch `sgemm_pack` first
    /// (every run: the padded copies are part of the operation).
    pub(super) fn launch_into(&self, c: &Buffer<B::Raw, f32>) -> Result<()> {
        let SgemmProblem { m, n, k, .. } = self.problem;
        let cfg = &self.config;
        if let Some(PackStep { kernel, grid, a, b }) = self.tma.as_ref().and_then(|t| t.pack.as_ref()) {
            // Rows of 0 where an operand needs no padding (its pointers then unused).
            let (a_rows, b_rows) = (if a.is_some() { m } else { 0 }, if b.is_some() { k } else { 0 });
            self.backend.launch(
                &kernel.built.kernel,
                kernel.dims(*grid, PACK_THREADS),
                &[
                    self.a.arg(),
                    a.as_ref().unwrap_or(&self.a).arg(),
                    Arg::U32(a_rows),
                    Arg::U32(k),
                    Arg::U32(padded_ld(k)),
                    self.b.arg(),
                    b.as_ref().unwrap_or(&self.b).arg(),
                    Arg::U32(b_rows),
                    Arg::U32(n),
                    Arg::U32(padded_ld(n)),
                ],
            )?;
        }
        // The tensor-map entries take the maps of A and B in their place.
        let (a, b) = match &self.tma {
            Some(t) => (t.a_map.arg(), t.b_map.arg()),
            None => (self.a.arg(), self.b.arg()),
        };
        // Split-K's multiply writes the workspace, not C.
        let out = self.split.as_ref().map_or(c.arg(), |s| s.workspace.arg());
        let mut args = vec![
            a,
            b,
            out,
            Arg::U32(m),
            Arg::U32(n),
            Arg::U32(k),
            Arg::F32(ALPHA),
            Arg::F32(BETA),
            Arg::U32(cfg.bm),
            Arg::U32(cfg.bn),
            Arg::U32(cfg.bk),
            Arg::U32(cfg.stages),
        ];
        if let Some((partials, counters)) = self.tma.as_ref().and_then(|t| t.workspace.as_ref()) {
            args.extend([partials.arg(), counters.arg()]);
        }
        self.backend.launch(&self.kernel.built.kernel, self.kernel.dims(self.grid, cfg.threads()), &args)?;
        if let Some(SplitStep { kernel, grid, workspace }) = &self.split {
            self.backend.launch(
                &kernel.built.kernel,
                kernel.dims(*grid, SUM_THREADS),
                &[workspace.arg(), c.arg(), Arg::U32(m), Arg::U32(n), Arg::U32(cfg.splits), Arg::F32(BETA)],
            )?;
        }
        Ok(())
    }

    /// All of `C` after one run from the initial `C` (into a fresh copy).
    pub fn result_from_initial(&self) -> Result<Vec<f32>> {
        let c = self.backend.htod(&self.host.c)?;
        self.launch_into(&c)?;
        self.backend.dtoh(&c)
    }

    /// The initial `C`, which every run reads (`BETA * C`).
    pub fn c_initial(&self) -> &[f32] {
        &self.host.c
    }

    /// Compares `got` (all of `C`) with the reference entries.
    pub fn compare(&self, got: &[f32]) -> Result<()> {
        let tol = tolerance(self.problem.k);
        check_matrix_entries(&self.kernel.name, &self.host.expected, got, self.problem.n as usize, tol)
            .map_err(Into::into)
    }

    pub fn problem(&self) -> SgemmProblem {
        self.problem
    }

    pub fn kernel_name(&self) -> &str {
        &self.kernel.name
    }

    /// The device buffer of `A` (as words; see the field docs).
    pub fn a(&self) -> &Buffer<B::Raw, u32> {
        &self.a
    }

    /// The device buffer of `B` (as words).
    pub fn b(&self) -> &Buffer<B::Raw, u32> {
        &self.b
    }
}

impl<B: FamilyBackend> Workload for SgemmWorkload<'_, B> {
    fn kernel(&self) -> KernelInfo {
        self.kernel.info()
    }
    fn bytes(&self) -> u64 {
        0
    }
    fn flops(&self) -> f64 {
        2.0 * self.problem.m as f64 * self.problem.n as f64 * self.problem.k as f64
    }
    /// Timed runs accumulate into `C` (`BETA != 0`); [`Workload::check`] uses a fresh copy.
    fn run(&self) -> Result<()> {
        self.launch_into(&self.c)
    }
    /// One run into a fresh copy of the initial `C`, compared with the reference.
    fn check(&self) -> Result<()> {
        self.compare(&self.result_from_initial()?)
    }
    /// cuBLAS SGEMM on the same inputs, on CUDA with f32 inputs: its `C` compared with ours
    /// entry by entry, then timed alone and interleaved with our run (the row's ratio).
    fn vendor_anchor(&self, timing: TimingOptions, seed: u64) -> Option<VendorAnchor> {
        if std::any::TypeId::of::<B>() != std::any::TypeId::of::<CudaBackend>() || self.problem.f16_inputs {
            return None;
        }
        // SAFETY: `B` is `CudaBackend` (checked above), so this is the same type.
        let w = unsafe { &*(self as *const Self as *const SgemmWorkload<'_, CudaBackend>) };
        let report = self.result_from_initial().and_then(|ours| cublas::anchor(w.backend, w, &ours, seed, timing));
        let (result, paired) = match report {
            Ok(r) => (Ok((r.timing, r.warmup)), Some(r.paired)),
            Err(e) => (Err(e), None),
        };
        Some(VendorAnchor { name: "cublasSgemm", result, paired })
    }
}
