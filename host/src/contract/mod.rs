//! The kernel contract: what a kernel is to every backend, to the tuner and to the
//! records, whether it is a built-in family's or a user's own.
//!
//! - [`Kernel`] (`builder.rs`): a kernel described in a few lines, Kernel Tuner style:
//!   its entry, arguments, parameters, restrictions, launch geometry and launch-sized
//!   bytes as functions of the parameters, and its check (by default the same Rust kernel
//!   on the CPU backend). [`Kernel::tune`] sweeps it.
//! - [`KernelSpec`], [`Prepared`], [`FamilyBackend`]: one kernel of one config, checked
//!   against a backend's limits and built for a variant (the launch-sized Rust kernel, its
//!   WGSL twin, its CUDA C twin).
//! - [`Workload`]: one validated config with its inputs uploaded and its reference known:
//!   what `run`, `bench`, the tuner and the conformance suites drive.
//! - [`Target`], [`Footprint`]: what a config is checked against without a device.
//!
//! It depends on the backends and on nothing above them (not the tuner, not the
//! families).

mod builder;
mod expected;
mod hooks;
mod launch;
mod values;
mod wgsl;

pub use builder::{CPU_RUN_RTOL, Check, Data, Fill, Kernel, KernelWorkload, Params, Scalar, SharedBytes};
pub use hooks::{ClusterFn, CudaFn, DefaultFn, FitFn, FootprintFn, FormsFn, RankFn, SpaceFn, WgslFn, WorkloadFn};
pub use launch::{DeviceData, Geometry, Launch, LaunchElement, check_caller_buffers};
pub use values::{Param, ValueKind};
pub use wgsl::{WgslFold, WgslSpec, fill_template, wgsl_fold, wgsl_ids, wgsl_sizing, wgsl_unroll};

use serde::{Deserialize, Serialize};

pub use crate::backend::Variant;
pub use crate::backend::cuda::nvrtc::CudaSource;
use crate::backend::wgpu::{PipelineDesc, WgpuBackend};
use crate::backend::{Backend, BackendKind, Limits, RustKernels};
use crate::backend::{Erase, KernelName};
use crate::error::{Error, Result};
use crate::measure::TimingOptions;

/// What a config is checked against without a device: the backend, the variant it builds,
/// and the device's limits. Stored in every tuning-cache entry, so a replay rebuilds the
/// same space with no device.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Target {
    pub backend: BackendKind,
    pub variant: Variant,
    pub limits: Limits,
    /// A CPU device (the CPU backend, lavapipe): smaller default candidate lists, since
    /// every kernel thread of the CPU backend is an OS thread.
    pub is_cpu: bool,
}

impl Target {
    pub fn of<B: Backend>(backend: &B, variant: Variant) -> Target {
        let info = backend.info();
        Target { backend: info.backend, variant, limits: info.limits, is_cpu: info.is_cpu }
    }
}

/// The resources one config asks for, computed without a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Footprint {
    /// Threads per block (workgroup).
    pub threads: u32,
    /// Blocks of the largest launch.
    pub grid: u32,
    /// Launch-sized workgroup bytes per block of the Rust kernel (its layout's bytes).
    pub launch_bytes: u32,
    /// Static workgroup bytes of the WGSL form (`var<workgroup>` arrays).
    pub static_bytes: u32,
}

impl Footprint {
    /// The footprint of the form `variant` builds: `threads` x `grid`, with the Rust kernel's
    /// launch-sized bytes (`launch`) or the static bytes of its CUDA C twin (`cuda`) or WGSL
    /// twin (`wgsl`, given the variant). Each closure is called for its own variants only, so
    /// one form's refusal (its layout, its arrays) does not stop the others.
    pub fn of_variant(
        variant: Variant,
        (threads, grid): (u32, u32),
        launch: impl FnOnce() -> Result<u32>,
        cuda: impl FnOnce() -> Result<u32>,
        wgsl: impl FnOnce(Variant) -> Result<u32>,
    ) -> Result<Footprint> {
        let (launch_bytes, static_bytes) = match variant {
            Variant::LaunchSized => (launch()?, 0),
            Variant::CudaStatic => (0, cuda()?),
            Variant::WgslLiteral | Variant::WgslOverride | Variant::WgslSubgroup => (0, wgsl(variant)?),
        };
        Ok(Footprint { threads, grid, launch_bytes, static_bytes })
    }

    /// The workgroup bytes the target's variant uses: launch-sized for the Rust kernels,
    /// static for WGSL. What the plots put on their x axis.
    pub fn shared_bytes(&self, variant: Variant) -> u32 {
        if variant == Variant::LaunchSized { self.launch_bytes } else { self.static_bytes }
    }
}

/// One kernel of a family, as every backend can build it: the Rust entry point with the
/// launch-sized bytes of its layout, the WGSL pipeline for each sizing, and the CUDA C
/// source with static arrays.
/// A twin left out (`None`) is a typed refusal of its variants ([`Error::Unsupported`]),
/// never a panic.
pub struct KernelSpec<'a> {
    pub entry: &'static str,
    pub launch_bytes: u32,
    pub wgsl: Option<&'a dyn Fn(Variant) -> WgslSpec>,
    pub cuda: Option<&'a dyn Fn() -> CudaSource>,
}

impl KernelSpec<'_> {
    /// The refusal of `variant` for a kernel without that twin, or of a backend that does
    /// not run it.
    fn unsupported(&self, backend: BackendKind, variant: Variant, why: &str) -> Error {
        Error::Unsupported { backend, what: format!("the {variant} variant of {}{why}", self.entry) }
    }
}

/// A built kernel and the workgroup memory it uses.
pub struct Built<K> {
    pub kernel: K,
    pub launch_bytes: u32,
    pub static_bytes: u32,
}

/// How a backend builds the kernels of the families that use [`KernelSpec`].
pub trait FamilyBackend: Backend + Erase + 'static {
    /// The variants this backend runs.
    fn variants(&self) -> &'static [Variant];
    fn build(&self, spec: &KernelSpec<'_>, variant: Variant) -> Result<Built<Self::Kernel>>;

    /// Clusters of `cluster` blocks of the Rust kernel `entry` the device runs at once
    /// ([`RustKernels::max_active_clusters`]); `None` where the backend cannot say. A grid
    /// that walks its work grid-stride is sized by it: past it, blocks wait for a second wave.
    fn max_active_clusters_of(&self, entry: &str, block: u32, shared_bytes: u32, cluster: u32) -> Option<u32> {
        let _ = (entry, block, shared_bytes, cluster);
        None
    }
}

impl<B: RustKernels + Erase + 'static> FamilyBackend for B {
    fn variants(&self) -> &'static [Variant] {
        self.rust_variants()
    }

    fn max_active_clusters_of(&self, entry: &str, block: u32, shared_bytes: u32, cluster: u32) -> Option<u32> {
        let kernel = self.rust_kernel(entry).ok()?;
        self.max_active_clusters(&kernel, block, shared_bytes, cluster)
    }

    fn build(&self, spec: &KernelSpec<'_>, variant: Variant) -> Result<Built<Self::Kernel>> {
        match variant {
            Variant::LaunchSized => {
                Ok(Built { kernel: self.rust_kernel(spec.entry)?, launch_bytes: spec.launch_bytes, static_bytes: 0 })
            }
            // The static bytes are the driver's figure for the compiled kernel.
            Variant::CudaStatic if self.rust_variants().contains(&variant) => {
                let cuda =
                    spec.cuda.ok_or_else(|| spec.unsupported(self.kind(), variant, " (it has no CUDA C twin)"))?;
                let (kernel, static_bytes) = self.static_kernel(&cuda())?;
                Ok(Built { kernel, launch_bytes: 0, static_bytes })
            }
            _ => Err(spec.unsupported(self.kind(), variant, "")),
        }
    }
}

impl FamilyBackend for WgpuBackend {
    fn variants(&self) -> &'static [Variant] {
        if self.has_subgroups() {
            &[Variant::WgslLiteral, Variant::WgslOverride, Variant::WgslSubgroup]
        } else {
            &[Variant::WgslLiteral, Variant::WgslOverride]
        }
    }

    fn build(&self, spec: &KernelSpec<'_>, variant: Variant) -> Result<Built<Self::Kernel>> {
        if !self.variants().contains(&variant) {
            return Err(spec.unsupported(BackendKind::Wgsl, variant, ""));
        }
        let wgsl = spec.wgsl.ok_or_else(|| spec.unsupported(BackendKind::Wgsl, variant, " (it has no WGSL twin)"))?;
        let w = wgsl(variant);
        if w.f16 && !self.has_f16() {
            return Err(spec.unsupported(
                BackendKind::Wgsl,
                variant,
                " (its WGSL twin reads f16 and the adapter has no SHADER_F16 feature)",
            ));
        }
        if variant == Variant::WgslSubgroup && !w.subgroups {
            return Err(spec.unsupported(
                BackendKind::Wgsl,
                variant,
                " (its WGSL twin uses no subgroup operation: wgsl-literal is the same kernel)",
            ));
        }
        let static_bytes = w.static_bytes;
        let kernel = self.pipeline(PipelineDesc {
            name: w.name,
            source: &w.source,
            entry: w.entry,
            constants: &w.constants,
            workgroup_size: w.workgroup_size,
            static_shared_bytes: w.static_bytes,
        })?;
        Ok(Built { kernel, launch_bytes: 0, static_bytes })
    }
}

/// The config a variant runs for a config asked of it. The cuda-static kernels' arrays are
/// capped at `limit` bytes (48 KB on CUDA: static `__shared__` arrays cannot opt in past
/// it), so for that variant a config whose arrays (`bytes`) are larger is replaced by the
/// first of `fallbacks` that fits (the family orders them best first), with a note saying
/// so for the record; where none fits, `asked` is kept and the build refuses it with the
/// bytes and the limit. Other variants run `asked`.
pub fn fit_static<C: Clone + std::fmt::Debug>(
    variant: Variant,
    limit: u32,
    asked: C,
    fallbacks: impl IntoIterator<Item = C>,
    bytes: impl Fn(&C) -> Option<u32>,
) -> (C, Option<String>) {
    let fits = |c: &C| bytes(c).is_some_and(|b| b <= limit);
    if variant != Variant::CudaStatic || fits(&asked) {
        return (asked, None);
    }
    match fallbacks.into_iter().find(|c| fits(c)) {
        Some(c) => {
            let over = bytes(&asked).map_or_else(|| "past u32".to_string(), |b| format!("{b} B"));
            let note = format!(
                "static arrays of {asked:?} would be {over}, over the {limit} B static limit: ran {c:?} ({} B), \
                 the best that fits",
                bytes(&c).unwrap_or(0)
            );
            (c, Some(note))
        }
        None => (asked, None),
    }
}

/// Halvings of `v` down to `min` (exclusive of `v` itself): fallback sizes.
pub fn halvings(v: u32, min: u32) -> impl Iterator<Item = u32> {
    std::iter::successors(Some(v / 2), |x| Some(x / 2)).take_while(move |&x| x >= min.max(1))
}

/// What a record says about a workload's kernel(s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInfo {
    /// As records name it, e.g. `histogram_u32` or `histogram_u32[wgsl-literal,bins=256,..]`.
    pub name: String,
    /// Launch-sized bytes per block of its largest launch.
    pub shared_bytes: u32,
    /// Static workgroup bytes its kernels declare.
    pub static_shared_bytes: u32,
}

/// A family's kernel for one config, checked against the backend and built.
pub struct Prepared<K> {
    pub built: Built<K>,
    pub name: String,
}

impl<K> Prepared<K> {
    /// Checks that the backend offers `variant`, that the layout can be carved, and the
    /// launch of `grid` blocks of `block` threads against the backend's limits (nothing is
    /// launched when any check fails), then builds the kernel.
    #[allow(clippy::too_many_arguments)]
    pub fn new<B: FamilyBackend<Kernel = K>>(
        backend: &B,
        entry: &'static str,
        layout_bytes: std::result::Result<u32, dynsmem_kernels::layout::LayoutError>,
        grid: u32,
        block: u32,
        variant: Variant,
        wgsl: Option<&dyn Fn(Variant) -> WgslSpec>,
        cuda: Option<&dyn Fn() -> CudaSource>,
    ) -> Result<Prepared<K>>
    where
        K: KernelName,
    {
        if !backend.variants().contains(&variant) {
            return Err(Error::Unsupported {
                backend: backend.kind(),
                what: format!("the {variant} variant of {entry}"),
            });
        }
        let launch_bytes = layout_bytes.map_err(|source| Error::Layout { kernel: entry.into(), source })?;
        let shared_bytes = if variant == Variant::LaunchSized { launch_bytes } else { 0 };
        backend.check_launch(entry, crate::backend::LaunchDims::new(grid, block, shared_bytes))?;
        let built = backend.build(&KernelSpec { entry, launch_bytes, wgsl, cuda }, variant)?;
        let name = match (variant, cuda, wgsl) {
            // The built kernel's name: it says which compiler built the twin.
            (Variant::CudaStatic, Some(_), _) => built.kernel.name().to_string(),
            (v, _, Some(wgsl)) if v.is_wgsl() => wgsl(variant).name,
            _ => entry.to_string(),
        };
        Ok(Prepared { built, name })
    }

    pub fn info(&self) -> KernelInfo {
        KernelInfo {
            name: self.name.clone(),
            shared_bytes: self.built.launch_bytes,
            static_shared_bytes: self.built.static_bytes,
        }
    }

    /// Launch dimensions with this kernel's launch-sized bytes.
    pub fn dims(&self, grid: u32, block: u32) -> crate::backend::LaunchDims {
        crate::backend::LaunchDims::new(grid, block, self.built.launch_bytes)
    }
}

/// One validated config of a family on one backend, inputs uploaded and the reference
/// computed: what `run`, `bench` and the conformance suites drive.
pub trait Workload {
    /// Name and workgroup memory of the kernel(s).
    fn kernel(&self) -> KernelInfo;
    /// Bytes the algorithm must read and write once (0 for compute-bound families).
    fn bytes(&self) -> u64;
    /// Floating-point operations of one run (0 for bandwidth-bound families).
    fn flops(&self) -> f64 {
        0.0
    }
    /// Queues one run (every launch of it).
    fn run(&self) -> Result<()>;
    /// Reads the output back and checks it against the CPU reference.
    fn check(&self) -> Result<()>;
    /// A vendor library's run of the same problem on the same inputs, checked against
    /// this workload's output: the anchor of a compute-bound family (cuBLAS beside SGEMM
    /// on CUDA). `None` where there is none.
    fn vendor_anchor(&self, _timing: TimingOptions, _seed: u64) -> Option<VendorAnchor> {
        None
    }
    /// The buffer arguments of its one launch, in order, where it can run on a caller's
    /// memory ([`Workload::run_on`]); empty where it cannot.
    fn buffers(&self) -> Vec<BufferArg> {
        Vec::new()
    }
    /// Queues one run on the caller's device buffers instead of its own (`buffers`: each
    /// one's address and bytes, in the order of [`Workload::buffers`]) on the caller's
    /// stream ([`crate::backend::Backend::launch_on_stream`]). Nothing is zeroed and nothing
    /// checked: an accumulating output ([`BufferArg::zeroed`]) is the caller's to clear.
    fn run_on(&self, buffers: &[(u64, u64)], stream: u64) -> Result<()> {
        let _ = (buffers, stream);
        Err(Error::CallerBuffers {
            kernel: self.kernel().name,
            reason: "this family's workload is not one launch over buffers (it runs only on its own)".into(),
        })
    }
}

/// One buffer argument of a workload's launch, as a caller's memory must match it
/// ([`Workload::run_on`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BufferArg {
    /// `input`, or the output's name.
    pub name: &'static str,
    /// `f32`, `u32`, `f16` or `bf16`.
    pub element: &'static str,
    /// Elements the launch reads or writes.
    pub len: u64,
    /// Bytes the launch reads or writes: what a caller's buffer must hold at least.
    pub bytes: u64,
    pub output: bool,
    /// Zero-filled before each of its own runs: an output the kernel accumulates into.
    pub zeroed: bool,
}

impl<W: Workload + ?Sized> Workload for Box<W> {
    fn kernel(&self) -> KernelInfo {
        (**self).kernel()
    }
    fn bytes(&self) -> u64 {
        (**self).bytes()
    }
    fn flops(&self) -> f64 {
        (**self).flops()
    }
    fn run(&self) -> Result<()> {
        (**self).run()
    }
    fn check(&self) -> Result<()> {
        (**self).check()
    }
    fn vendor_anchor(&self, timing: TimingOptions, seed: u64) -> Option<VendorAnchor> {
        (**self).vendor_anchor(timing, seed)
    }
    fn buffers(&self) -> Vec<BufferArg> {
        (**self).buffers()
    }
    fn run_on(&self, buffers: &[(u64, u64)], stream: u64) -> Result<()> {
        (**self).run_on(buffers, stream)
    }
}

/// A workload lent for one measurement (the occupancy explorer measures one prepared
/// workload at every padding).
impl<W: Workload + ?Sized> Workload for &W {
    fn kernel(&self) -> KernelInfo {
        (**self).kernel()
    }
    fn bytes(&self) -> u64 {
        (**self).bytes()
    }
    fn flops(&self) -> f64 {
        (**self).flops()
    }
    fn run(&self) -> Result<()> {
        (**self).run()
    }
    fn check(&self) -> Result<()> {
        (**self).check()
    }
    fn vendor_anchor(&self, timing: TimingOptions, seed: u64) -> Option<VendorAnchor> {
        (**self).vendor_anchor(timing, seed)
    }
    fn buffers(&self) -> Vec<BufferArg> {
        (**self).buffers()
    }
    fn run_on(&self, buffers: &[(u64, u64)], stream: u64) -> Result<()> {
        (**self).run_on(buffers, stream)
    }
}

/// What [`Workload::vendor_anchor`] measured: the library routine and its timing (with
/// its warm-up runs), or why it could not be run or did not match.
pub struct VendorAnchor {
    pub name: &'static str,
    /// The routine timed alone: the anchor's own record.
    pub result: Result<(crate::measure::Timing, u32)>,
    /// This workload and the routine timed interleaved in one process
    /// ([`crate::backend::time_paired`]), where the family does so and `result` is `Ok`:
    /// the kernel row's ratio is then its median, not a ratio of the two separate timings.
    pub paired: Option<crate::measure::Paired>,
}

/// Validation errors of a family's config, named after its kernel.
pub fn invalid(kernel: &str, reason: impl Into<String>) -> Error {
    Error::InvalidConfig { kernel: kernel.into(), reason: reason.into() }
}

/// Validation errors of a family's problem.
pub fn invalid_problem(kernel: &str, reason: impl Into<String>) -> Error {
    Error::InvalidProblem { kernel: kernel.into(), reason: reason.into() }
}

/// Refuses, before any input is generated or uploaded, a problem whose buffers cannot fit:
/// `device_bytes` of device buffers against the device's memory (CUDA/HIP: its total
/// memory; WGSL: unknown, each buffer is checked against the binding limit when it is
/// made), and `host_bytes` the launcher holds on the host (inputs, the CPU reference, the
/// read-back) against the host's memory. On the CPU backend both live in host memory.
///
/// Without it a size past memory aborts the process in the host allocator (Rust's
/// `Vec` cannot report failure), which no caller can handle. The byte counts are the
/// launcher's own buffers; a problem just under the limit can still fail later, as
/// [`Error::OutOfMemory`] from the backend.
pub fn check_footprint<B: Backend>(backend: &B, kernel: &str, device_bytes: u64, host_bytes: u64) -> Result<()> {
    let info = backend.info();
    let host = crate::backend::host_memory();
    let too_large = |memory, requested, limit, limit_name| Error::ProblemTooLarge {
        kernel: kernel.into(),
        memory,
        requested,
        limit,
        limit_name,
    };
    if info.backend == BackendKind::Cpu {
        if let Some(m) = host {
            let need = device_bytes.saturating_add(host_bytes);
            if need > m.total {
                return Err(too_large(
                    "host",
                    need,
                    m.total,
                    "MemTotal of /proc/meminfo or the cgroup limit; the CPU backend's device memory is the host's",
                ));
            }
        }
        return Ok(());
    }
    if let Some(total) = info.limits.memory_bytes
        && device_bytes > total
    {
        let name = crate::backend::BackendRow::of(info.backend).limit_names.memory;
        return Err(too_large("device", device_bytes, total, name));
    }
    if let Some(m) = host
        && host_bytes > m.total
    {
        return Err(too_large("host", host_bytes, m.total, "MemTotal of /proc/meminfo or the cgroup limit"));
    }
    Ok(())
}

/// `count` elements of `bytes_each` bytes, saturating: a product past `u64` is over any
/// memory, which is all [`check_footprint`] needs to know.
pub fn bytes_of(count: u64, bytes_each: u64) -> u64 {
    count.saturating_mul(bytes_each)
}

/// Refuses `value` (named `what`) when it is past `limit`, the largest the kernel's `index`
/// arithmetic handles without wrapping.
pub fn check_index(kernel: &str, what: &str, value: u64, limit: u64, index: &'static str) -> Result<()> {
    if value > limit {
        return Err(Error::IndexOverflow { kernel: kernel.into(), what: what.into(), requested: value, limit, index });
    }
    Ok(())
}

/// A layout error as a tuner filter reason.
pub fn layout_reason(e: dynsmem_kernels::layout::LayoutError) -> String {
    format!("shared-memory layout: {e}")
}
