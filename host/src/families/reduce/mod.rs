//! Reduce (sum / min / max of `f32` or `u32` to one value), host side.
//!
//! The device algorithm, thread mapping and launch-sized layout are documented in
//! `dynsmem_kernels::reduce`; `reduce.wgsl` beside this file is the same algorithm with
//! static `var<workgroup>` arrays. A [`ReducePlan`] validates a problem and config against
//! the backend's limits (nothing is launched when it fails), then chains passes
//! `n -> grid(n) -> grid(grid(n)) -> ... -> 1` over two ping-pong partial buffers.

use dynsmem_kernels::Dtype;
pub use dynsmem_kernels::reduce::{MAX_GRID, ReduceConfig, ReduceOp, entry_name};
use serde::{Deserialize, Serialize};

use crate::backend::{Arg, Backend, BackendKind, Buffer, KernelName, LaunchDims, Variant};
use crate::contract::{CudaSource, FamilyBackend, Footprint, KernelSpec, Target, WgslSpec, fill_template};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::rng::SplitMix64;
use crate::verify::{self, Tolerance};

mod family;
mod work;

pub use family::{REDUCE, STAGED_200K, fit_config};

pub(crate) const WGSL_TEMPLATE: &str = include_str!("reduce.wgsl");
/// The cuda-static form: the same algorithm in CUDA C with static arrays.
pub const CUDA_SOURCE: &str = include_str!("reduce.cu");

/// What to reduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReduceProblem {
    pub n: u64,
    pub op: ReduceOp,
    pub dtype: Dtype,
}

/// The config a backend runs when none is given.
pub fn default_config<B: Backend>(backend: &B) -> ReduceConfig {
    if backend.kind() == BackendKind::Wgsl {
        // Tuned on the H100 through NVIDIA's Vulkan driver (see NOTES.md: the WGSL timings
        // there vary between processes, so this is one of several near-equal configs).
        ReduceConfig { block: 256, items_per_thread: 32, staged: false }
    } else if backend.small_configs() {
        // Few kernel threads per workgroup, many items each: every kernel thread is an
        // OS thread on the CPU backend, and every barrier a round of context switches.
        ReduceConfig { block: 32, items_per_thread: 128, staged: false }
    } else {
        // Tuned at 2^28 on the H100 (provenance in NOTES.md).
        ReduceConfig { block: 512, items_per_thread: 32, staged: false }
    }
}

/// The cuda-static kernel for one pass of `op` over `dtype` with `cfg`: `reduce.cu` with
/// the element type, operator, block, items per thread and staging as defines. Its static
/// arrays are the Rust kernel's launch-sized layout (the 16-byte aligned staged tile, then
/// `block` scratch elements), so its static bytes are that layout's bytes.
pub fn cuda_source(op: ReduceOp, dtype: Dtype, cfg: &ReduceConfig) -> CudaSource {
    let elem = match dtype {
        Dtype::F32 => "float",
        Dtype::U32 => "u32",
    };
    let op_code = match op {
        ReduceOp::Sum => "0",
        ReduceOp::Min => "1",
        ReduceOp::Max => "2",
    };
    CudaSource {
        name: format!(
            "{}[cuda-static,block={},ipt={}]",
            entry_name(op, dtype, cfg.staged),
            cfg.block,
            cfg.items_per_thread
        ),
        source: CUDA_SOURCE,
        file: "reduce.cu",
        entry: "reduce_static",
        defines: vec![
            ("ELEM", elem.into()),
            ("OP", op_code.into()),
            ("BLOCK", cfg.block.to_string()),
            ("IPT", cfg.items_per_thread.to_string()),
            ("STAGED", (cfg.staged as u32).to_string()),
        ],
        static_bytes: cfg.shared_bytes(dtype).unwrap_or(u32::MAX),
    }
}

/// f32 `min` on WGSL with the Rust kernels' NaN rule (a NaN operand is ignored, like
/// `f32::min` and PTX `min.f32`). WGSL's `min` leaves NaN operands to the driver (SPIR-V
/// `FMin` is undefined for them) and WGSL lets a compiler assume no NaN exists, so NaN is
/// tested on the bits, which no such assumption can fold away.
const F32_MIN_IGNORING_NAN: &str = "select(select(min(a, b), a, (bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u), \
     b, (bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u)";
/// f32 `max` with the same NaN rule as [`F32_MIN_IGNORING_NAN`].
const F32_MAX_IGNORING_NAN: &str = "select(select(max(a, b), a, (bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u), \
     b, (bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u)";

/// The WGSL text for one pipeline of the given sizing.
pub fn wgsl_source(op: ReduceOp, dtype: Dtype, cfg: &ReduceConfig, variant: Variant) -> String {
    let (t, identity, combine) = match (dtype, op) {
        (Dtype::F32, ReduceOp::Sum) => ("f32", "0.0", "a + b"),
        (Dtype::F32, ReduceOp::Min) => ("f32", "bitcast<f32>(0x7f800000u)", F32_MIN_IGNORING_NAN),
        (Dtype::F32, ReduceOp::Max) => ("f32", "bitcast<f32>(0xff800000u)", F32_MAX_IGNORING_NAN),
        (Dtype::U32, ReduceOp::Sum) => ("u32", "0u", "a + b"),
        (Dtype::U32, ReduceOp::Min) => ("u32", "0xffffffffu", "min(a, b)"),
        (Dtype::U32, ReduceOp::Max) => ("u32", "0u", "max(a, b)"),
    };
    let sizing = match variant {
        Variant::WgslOverride => "override BLOCK: u32;\noverride TILE: u32;\noverride STAGED: bool;".to_string(),
        _ => format!(
            "const BLOCK: u32 = {}u;\nconst TILE: u32 = {}u;\nconst STAGED: bool = {};",
            cfg.block,
            wgsl_tile_len(cfg),
            cfg.staged
        ),
    };
    fill_template(WGSL_TEMPLATE, &[("T", t), ("IDENTITY", identity), ("COMBINE", combine), ("SIZING", &sizing)])
}

/// WGSL arrays cannot be empty: unstaged pipelines declare a one-element tile.
fn wgsl_tile_len(cfg: &ReduceConfig) -> u32 {
    if cfg.staged { cfg.block.saturating_mul(cfg.items_per_thread) } else { 1 }
}

/// Bytes of the WGSL form's static workgroup arrays (`block` scratch elements and the
/// tile), or `None` past 4 GiB. No device needed: the tuner filters configs with it.
pub(crate) fn wgsl_static_bytes(dtype: Dtype, cfg: &ReduceConfig) -> Option<u32> {
    let elems = (cfg.block as u64) + wgsl_tile_len(cfg) as u64;
    u32::try_from(elems * dtype.bytes() as u64).ok()
}

fn wgsl_kernel_name(op: ReduceOp, dtype: Dtype, cfg: &ReduceConfig, variant: Variant) -> String {
    format!("{}[{variant},block={},ipt={}]", entry_name(op, dtype, cfg.staged), cfg.block, cfg.items_per_thread)
}

/// The WGSL pipeline of one pass of `op` over `dtype` with `cfg`, in `variant`'s sizing.
pub(crate) fn wgsl_spec(
    op: ReduceOp,
    dtype: Dtype,
    cfg: &ReduceConfig,
    variant: Variant,
    static_bytes: u32,
) -> WgslSpec {
    let constants = match variant {
        Variant::WgslOverride => vec![
            ("BLOCK", cfg.block as f64),
            ("TILE", wgsl_tile_len(cfg) as f64),
            ("STAGED", if cfg.staged { 1.0 } else { 0.0 }),
        ],
        _ => vec![],
    };
    WgslSpec {
        name: wgsl_kernel_name(op, dtype, cfg, variant),
        source: wgsl_source(op, dtype, cfg, variant),
        entry: "reduce",
        constants,
        workgroup_size: cfg.block,
        static_bytes,
        subgroups: false,
        f16: false,
    }
}

/// One pass: `n` elements in, `dims.grid` partials out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Pass {
    pub n: u64,
    pub dims: LaunchDims,
}

/// A validated reduce: kernel, passes and workgroup memory, checked against the
/// backend's limits before anything is launched.
pub struct ReducePlan<'b, B: FamilyBackend> {
    backend: &'b B,
    kernel: B::Kernel,
    pub problem: ReduceProblem,
    pub config: ReduceConfig,
    pub variant: Variant,
    pub passes: Vec<Pass>,
    /// Launch-sized bytes of every pass.
    pub shared_bytes: u32,
    /// Static workgroup bytes the kernel declares.
    pub static_shared_bytes: u32,
}

/// Reduce's one validation: `config` for `problem` on `target`, and what its first pass asks
/// for. `ReducePlan::new` (every prepare) calls it first, and the tuner filters with it: a
/// block and items per thread of at least one, a chunk within the kernel's u32 index, passes
/// that reach one value, on WGSL its u32 indices and the adapter's buffer limit, the layout,
/// and the WGSL form's static arrays. A refusal names the kernel, the value and the rule.
pub fn check(problem: &ReduceProblem, config: &ReduceConfig, target: &Target) -> Result<Footprint> {
    let ReduceProblem { n, op, dtype } = *problem;
    let name = entry_name(op, dtype, config.staged);
    let invalid = |reason: String| Error::InvalidConfig { kernel: name.into(), reason };
    if config.block == 0 {
        return Err(invalid("block must be at least 1 thread".into()));
    }
    if config.items_per_thread == 0 {
        return Err(invalid("items_per_thread must be at least 1".into()));
    }
    if config.chunk().is_none_or(|c| c > u32::MAX as u64) {
        return Err(invalid(format!(
            "block * items_per_thread = {} * {} does not fit the kernel's u32 chunk index",
            config.block, config.items_per_thread
        )));
    }
    if target.backend == BackendKind::Wgsl {
        // The WGSL kernel indexes with u32 (the Rust kernels walk chunks with u64, so n past
        // 2^32 runs there): n itself, and the chunk counter, which steps by the grid past the
        // last chunk before the loop ends, must not wrap.
        crate::contract::check_index(name, "n", n, u32::MAX as u64, "WGSL u32")?;
        let chunk = config.chunk().unwrap_or(1).max(1);
        let last_chunk_plus_grid = n.div_ceil(chunk).saturating_sub(1) + config.grid(n) as u64;
        crate::contract::check_index(name, "chunks + grid", last_chunk_plus_grid, u32::MAX as u64, "WGSL u32")?;
        let bytes = n * dtype.bytes() as u64;
        let limit = target.limits.max_buffer_bytes;
        if bytes > limit {
            return Err(Error::BufferTooLarge {
                backend: BackendKind::Wgsl,
                requested: bytes,
                limit,
                limit_name: "adapter's max_storage_buffer_binding_size",
            });
        }
    }
    if config.pass_count(n).is_none() {
        // A chunk of one element: every pass would write as many partials as it reads, and
        // the passes (like the launches) would never end.
        let mut len = n;
        while (config.grid(len) as u64) < len {
            len = config.grid(len) as u64;
        }
        return Err(invalid(format!(
            "block * items_per_thread = {} * {}: a pass over {len} elements would leave {} partials, so the \
             passes never reach one value (use a chunk of at least 2)",
            config.block,
            config.items_per_thread,
            config.grid(len)
        )));
    }
    // 0 for the cuda-static twin: its arrays are known once NVRTC has compiled it, and its
    // build refuses them past the static limit.
    Footprint::of_variant(
        target.variant,
        (config.block, config.grid(n)),
        || config.shared_bytes(dtype).map_err(|source| Error::Layout { kernel: name.into(), source }),
        || Ok(0),
        |_| wgsl_static_bytes(dtype, config).ok_or_else(|| invalid("static workgroup arrays over 4 GiB".into())),
    )
}

impl<'b, B: FamilyBackend> ReducePlan<'b, B> {
    pub fn new(backend: &'b B, problem: ReduceProblem, config: ReduceConfig, variant: Variant) -> Result<Self> {
        let ReduceProblem { n, op, dtype } = problem;
        let name = entry_name(op, dtype, config.staged);
        if !backend.variants().contains(&variant) {
            return Err(Error::Unsupported {
                backend: backend.kind(),
                what: format!("the {variant} variant of reduce"),
            });
        }
        // The one validation (the tuner's filter too), before anything is uploaded.
        let footprint = check(&problem, &config, &Target::of(backend, variant))?;
        // The input and two partial buffers on the device; the input once more on the host
        // (the CPU reference folds it without copies).
        let elem = dtype.bytes() as u64;
        let input_bytes = crate::contract::bytes_of(n, elem);
        let partials_bytes = crate::contract::bytes_of(2 * config.grid(n) as u64, elem);
        crate::contract::check_footprint(backend, name, input_bytes.saturating_add(partials_bytes), input_bytes)?;
        let (shared_bytes, wgsl_bytes) = (footprint.launch_bytes, footprint.static_bytes);
        let mut passes = Vec::new();
        let mut len = n;
        loop {
            let grid = config.grid(len);
            let dims = LaunchDims::new(grid, config.block, shared_bytes);
            backend.check_launch(name, dims)?;
            passes.push(Pass { n: len, dims });
            if grid == 1 {
                break;
            }
            len = grid as u64;
        }
        // Building the kernel last: on WGSL it creates a pipeline, which is only worth
        // doing for a plan that passed every other check.
        let wgsl = |v: Variant| wgsl_spec(op, dtype, &config, v, wgsl_bytes);
        let cuda = || cuda_source(op, dtype, &config);
        let spec = KernelSpec { entry: name, launch_bytes: shared_bytes, wgsl: Some(&wgsl), cuda: Some(&cuda) };
        let built = backend.build(&spec, variant)?;
        let static_shared_bytes = built.static_bytes;
        let kernel = built.kernel;
        Ok(ReducePlan { backend, kernel, problem, config, variant, passes, shared_bytes, static_shared_bytes })
    }

    pub fn kernel_name(&self) -> &str {
        self.kernel.name()
    }

    /// Elements of each ping-pong partials buffer.
    pub fn partials_len(&self) -> usize {
        self.passes[0].dims.grid as usize
    }

    /// Two partial buffers filled with [`Element::poison`], so a block that writes no
    /// partial is caught by verification.
    pub fn alloc_partials<T: Element>(&self) -> Result<[Buffer<B::Raw, T>; 2]> {
        self.check_dtype::<T>()?;
        let poison = vec![T::poison(); self.partials_len()];
        Ok([self.backend.htod(&poison)?, self.backend.htod(&poison)?])
    }

    fn check_dtype<T: Element>(&self) -> Result<()> {
        if T::DTYPE != self.problem.dtype {
            return Err(Error::InvalidProblem {
                kernel: self.kernel.name().into(),
                reason: format!("buffers of {} for a plan over {}", T::DTYPE.name(), self.problem.dtype.name()),
            });
        }
        Ok(())
    }

    /// Queues every pass; the result is element 0 of the returned partial buffer.
    pub fn launch<'p, T: Element>(
        &self,
        input: &Buffer<B::Raw, T>,
        partials: &'p [Buffer<B::Raw, T>; 2],
    ) -> Result<&'p Buffer<B::Raw, T>> {
        self.check_dtype::<T>()?;
        if input.len() as u64 != self.problem.n {
            return Err(Error::InvalidProblem {
                kernel: self.kernel.name().into(),
                reason: format!("input buffer has {} elements, the plan is for {}", input.len(), self.problem.n),
            });
        }
        if partials.iter().any(|p| p.len() < self.partials_len()) {
            return Err(Error::InvalidProblem {
                kernel: self.kernel.name().into(),
                reason: format!("partial buffers must hold {} elements", self.partials_len()),
            });
        }
        let ipt = Arg::U32(self.config.items_per_thread);
        for (i, pass) in self.passes.iter().enumerate() {
            let src = if i == 0 { input.arg() } else { partials[(i - 1) % 2].arg() };
            let dst = partials[i % 2].arg();
            self.backend.launch(&self.kernel, pass.dims, &[src, dst, Arg::U64(pass.n), ipt])?;
        }
        Ok(&partials[(self.passes.len() - 1) % 2])
    }

    /// Reduces `input` and returns the value.
    pub fn run<T: Element>(&self, input: &Buffer<B::Raw, T>) -> Result<T> {
        let partials = self.alloc_partials::<T>()?;
        let out = self.launch(input, &partials)?;
        let mut host = self.backend.dtoh(out)?;
        Ok(host.swap_remove(0))
    }

    /// The longest chain of dependent operations the plan evaluates: per-thread
    /// sequential folds plus the shared-memory tree, summed over passes.
    pub fn depth(&self) -> u64 {
        let chunk = self.config.chunk().unwrap_or(1).max(1);
        let tree = (self.config.block as u64).next_power_of_two().trailing_zeros() as u64;
        self.passes
            .iter()
            .map(|p| {
                let chunks_per_block = p.n.div_ceil(chunk).div_ceil(p.dims.grid as u64);
                chunks_per_block * self.config.items_per_thread as u64 + tree + 1
            })
            .sum()
    }

    /// The tolerance the result is checked with.
    pub fn tolerance<T: Element>(&self) -> Tolerance {
        match self.problem.op {
            ReduceOp::Sum => Tolerance::summation::<T>(self.depth()),
            ReduceOp::Min | ReduceOp::Max => Tolerance::EXACT,
        }
    }

    /// Checks a device result against the CPU reference of `data`.
    pub fn verify<T: Element>(&self, data: &[T], result: T) -> Result<()> {
        self.check(&reference(self.problem.op, data), result)
    }

    /// Checks a device result against a reference computed before (one reference can
    /// serve every config over the same input).
    ///
    /// A float sum is evaluated in the element type in the plan's order, so when the
    /// positive (or negative) inputs add up past the type's largest value, a partial sum
    /// may overflow: +inf (or -inf) is then a correct result, and NaN when both can. Any
    /// other result is held to the reference and the tolerance.
    pub fn check<T: Element>(&self, reference: &Reference, result: T) -> Result<()> {
        let tol = if reference.exact { Tolerance::EXACT } else { self.tolerance::<T>() };
        if self.problem.op == ReduceOp::Sum && T::EPSILON > 0.0 && !reference.value.is_nan() {
            let got = result.to_f64();
            let can_overflow = |part: f64| part + tol.bound(reference.abs_sum) > T::MAX;
            let overflowed = match got {
                f64::INFINITY => can_overflow(reference.pos_sum),
                f64::NEG_INFINITY => can_overflow(reference.neg_sum),
                g if g.is_nan() => can_overflow(reference.pos_sum) && can_overflow(reference.neg_sum),
                _ => false,
            };
            if overflowed {
                return Ok(());
            }
        }
        verify::check_scalar(self.kernel.name(), reference.value, result, reference.abs_sum, tol)?;
        Ok(())
    }
}

/// The CPU reference of a reduce: the exact value (`f64` sums; `u32` sums modulo 2^32)
/// and the sum of magnitudes, which float rounding error is proportional to, split into
/// its positive and negative parts, which say whether an `f32` partial sum can overflow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reference {
    pub value: f64,
    pub abs_sum: f64,
    /// Sum of the positive float inputs (0 for integers).
    pub pos_sum: f64,
    /// Sum of the magnitudes of the negative float inputs (0 for integers).
    pub neg_sum: f64,
    /// Every input is an integer and their magnitudes add up to at most 2^24: every partial
    /// sum in any order is an integer below 2^24, exact in `f32`, so a float sum must equal
    /// the reference exactly (and a dropped, doubled or misread element shows).
    pub exact: bool,
}

/// Largest magnitude sum of integer inputs whose float sums are exact in any order: every
/// integer up to 2^24 is an `f32`.
pub const EXACT_SUM_LIMIT: f64 = (1u64 << 24) as f64;

/// The reference of `op` over `data`, with the semantics every backend implements (the
/// README's "NaN and infinity"): float min/max ignore NaN operands like `f32::min` (all
/// NaN gives the identity, +inf for min, -inf for max) and treat infinities as values; a
/// float sum is NaN when any input is NaN or both +inf and -inf occur, else +inf or -inf
/// when one occurs, else the exact sum (see [`ReducePlan::check`] for overflow).
pub fn reference<T: Element>(op: ReduceOp, data: &[T]) -> Reference {
    use dynsmem_reference::reduce as r;
    let exact = |abs_sum: f64| {
        abs_sum <= EXACT_SUM_LIMIT && data.iter().all(|x| x.to_f64().fract() == 0.0 && x.to_f64().is_finite())
    };
    match T::DTYPE {
        Dtype::F32 => {
            let data: &[f32] = bytemuck::cast_slice(data);
            let sum = r::sum_f32(data);
            let value = match op {
                ReduceOp::Sum => sum.value,
                ReduceOp::Min => r::min_f32(data),
                ReduceOp::Max => r::max_f32(data),
            };
            // NaN inputs make the magnitude sum NaN too: the tolerance then demands NaN.
            let r::FloatSum { abs_sum, pos_sum, neg_sum, .. } = sum;
            Reference { value, abs_sum, pos_sum, neg_sum, exact: exact(abs_sum) }
        }
        Dtype::U32 => {
            let data: &[u32] = bytemuck::cast_slice(data);
            let value = match op {
                ReduceOp::Sum => r::sum_u32(data),
                ReduceOp::Min => r::min_u32(data),
                ReduceOp::Max => r::max_u32(data),
            };
            Reference { value: value as f64, abs_sum: 0.0, pos_sum: 0.0, neg_sum: 0.0, exact: true }
        }
    }
}

/// Element types reduce runs on, with the inputs it is tested and measured with.
pub trait ReduceElement: Element {
    /// `n` values from `seed`: f32 integers of magnitude 1 to 3, u32 uniform in [16, 2^31); with a
    /// unique smallest (f32 -4, u32 3) and largest (f32 4, u32 0xFFFF_FFF0) value planted
    /// at seed-chosen positions, so min/max detect any element a kernel skips.
    fn inputs(n: usize, seed: u64) -> Vec<Self>;
}

fn plant<T: Copy>(v: &mut [T], rng: &mut SplitMix64, lo: T, hi: T) {
    if v.len() >= 2 {
        let a = rng.below(v.len() as u64) as usize;
        let mut b = rng.below(v.len() as u64 - 1) as usize;
        if b >= a {
            b += 1;
        }
        v[a] = lo;
        v[b] = hi;
    }
}

impl ReduceElement for f32 {
    /// Integers in {-3, .., -1, 1, .., 3}: up to 2^22 elements their sum is exact in any
    /// order ([`Reference::exact`]), so a dropped element fails the check; past that the
    /// summation bound applies.
    fn inputs(n: usize, seed: u64) -> Vec<f32> {
        let mut rng = SplitMix64::new(seed);
        let mut v: Vec<f32> = (0..n).map(|_| rng.signed_nonzero(3) as f32).collect();
        plant(&mut v, &mut rng, -4.0, 4.0);
        v
    }
}

impl ReduceElement for u32 {
    fn inputs(n: usize, seed: u64) -> Vec<u32> {
        let mut rng = SplitMix64::new(seed);
        let mut v: Vec<u32> = (0..n).map(|_| 16 + (rng.next_u32() >> 1) % ((1 << 31) - 16)).collect();
        plant(&mut v, &mut rng, 3, 0xFFFF_FFF0);
        v
    }
}

/// Builds the plan, uploads fresh inputs, runs once and verifies: the conformance check
/// of one (backend, problem, config, variant).
pub fn run_and_verify<B: FamilyBackend, T: ReduceElement>(
    backend: &B,
    problem: ReduceProblem,
    config: ReduceConfig,
    variant: Variant,
    seed: u64,
) -> Result<T> {
    let plan = ReducePlan::new(backend, problem, config, variant)?;
    let data = T::inputs(problem.n as usize, seed);
    let input = backend.htod(&data)?;
    let got = plan.run(&input)?;
    plan.verify(&data, got)?;
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_semantics() {
        let f = [1.5f32, -2.0, f32::NAN, 4.0];
        assert_eq!(reference(ReduceOp::Min, &f).value, -2.0);
        assert_eq!(reference(ReduceOp::Max, &f).value, 4.0);
        assert!(reference(ReduceOp::Sum, &f).value.is_nan());
        let u = [u32::MAX, 2, 7];
        assert_eq!(reference(ReduceOp::Sum, &u).value, 8.0, "u32 sums wrap");
        assert_eq!(reference(ReduceOp::Min, &u).value, 2.0);
        assert_eq!(reference(ReduceOp::Max, &u).value, u32::MAX as f64);
        // Empty input: the identity.
        assert_eq!(reference::<f32>(ReduceOp::Sum, &[]).value, 0.0);
        assert_eq!(reference::<f32>(ReduceOp::Min, &[]).value, f64::INFINITY);
        assert_eq!(reference::<u32>(ReduceOp::Min, &[]).value, u32::MAX as f64);
        assert_eq!(reference::<u32>(ReduceOp::Max, &[]).value, 0.0);
        let r = reference(ReduceOp::Sum, &[1.0f32, -1.0, 2.0]);
        assert_eq!((r.value, r.abs_sum, r.pos_sum, r.neg_sum), (2.0, 4.0, 3.0, 1.0));
        // Infinities are values; +inf and -inf together make a sum NaN.
        let inf = [1.0f32, f32::INFINITY, -3.0];
        assert_eq!(reference(ReduceOp::Sum, &inf).value, f64::INFINITY);
        assert_eq!(reference(ReduceOp::Min, &inf).value, -3.0);
        assert_eq!(reference(ReduceOp::Max, &inf).value, f64::INFINITY);
        assert!(reference(ReduceOp::Sum, &[f32::INFINITY, f32::NEG_INFINITY]).value.is_nan());
        assert_eq!(reference(ReduceOp::Min, &[f32::NEG_INFINITY, 0.0]).value, f64::NEG_INFINITY);
        // All NaN: min and max give their identities.
        let nan = [f32::NAN; 3];
        assert_eq!(reference(ReduceOp::Min, &nan).value, f64::INFINITY);
        assert_eq!(reference(ReduceOp::Max, &nan).value, f64::NEG_INFINITY);
    }

    #[test]
    fn inputs_plant_unique_extremes() {
        for n in [2usize, 3, 1000] {
            let f = f32::inputs(n, 9);
            assert_eq!(f.iter().filter(|&&x| x == -4.0).count(), 1);
            assert_eq!(f.iter().filter(|&&x| x == 4.0).count(), 1);
            assert!(f.iter().all(|&x| (-4.0..=4.0).contains(&x)));
            let u = u32::inputs(n, 9);
            assert_eq!(u.iter().filter(|&&x| x == 3).count(), 1);
            assert_eq!(u.iter().filter(|&&x| x == 0xFFFF_FFF0).count(), 1);
            assert!(u.iter().all(|&x| x == 3 || x == 0xFFFF_FFF0 || (16..1 << 31).contains(&x)));
        }
        assert_eq!(f32::inputs(5, 1), f32::inputs(5, 1), "deterministic per seed");
        assert_ne!(f32::inputs(5, 1), f32::inputs(5, 2));
    }

    #[test]
    fn wgsl_templates_fill_every_slot() {
        for variant in [Variant::WgslLiteral, Variant::WgslOverride] {
            for op in ReduceOp::ALL {
                for dtype in Dtype::ALL {
                    for staged in [false, true] {
                        let cfg = ReduceConfig { block: 64, items_per_thread: 5, staged };
                        let src = wgsl_source(op, dtype, &cfg, variant);
                        assert!(!src.contains("{{"), "{op:?} {dtype:?} {variant}");
                        // Parse and validate with naga, as wgpu will.
                        let module =
                            naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| panic!("{}", e.emit_to_string(&src)));
                        naga::valid::Validator::new(
                            naga::valid::ValidationFlags::all(),
                            naga::valid::Capabilities::all(),
                        )
                        .validate(&module)
                        .unwrap_or_else(|e| panic!("{variant} {op:?} {dtype:?}: {e:?}"));
                    }
                }
            }
        }
    }
}
