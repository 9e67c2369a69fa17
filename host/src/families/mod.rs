//! The kernel families: one folder each (problem, config, launcher, CPU reference, WGSL
//! and CUDA C twins, its `Family` impl, its search space, notes), the registry
//! [`FAMILIES`] that lists them, and what their launchers share (building a kernel per
//! variant, validation helpers, [`Workload`]).

pub mod conv1d;
pub mod hgemm;
pub mod histogram;
pub mod nbody;
pub mod reduce;
pub mod rmsnorm;
pub mod scan;
pub mod sgemm;
pub mod softmax;
pub mod stencil2d;
pub mod transpose;

use crate::family::{DynFamily, Entry};

/// Every kernel family of dynsmem, once: `run`, `bench`, `tune`, the conformance suites,
/// the criterion benches and the fuzz targets iterate this table. A family is its folder
/// here, its `mod` line above and its line below.
pub static FAMILIES: &[&dyn DynFamily] = &[
    &Entry::<reduce::Reduce>::NEW,
    &Entry::<scan::Scan>::NEW,
    &Entry::<histogram::Histogram>::NEW,
    &Entry::<conv1d::Conv1d>::NEW,
    &Entry::<stencil2d::Stencil2d>::NEW,
    &Entry::<transpose::Transpose>::NEW,
    &Entry::<softmax::Softmax>::NEW,
    &Entry::<rmsnorm::Rmsnorm>::NEW,
    &Entry::<nbody::Nbody>::NEW,
    &Entry::<sgemm::Sgemm>::NEW,
    &Entry::<hgemm::Hgemm>::NEW,
];

/// The hash of the WGSL "image": every family's WGSL template. A config's WGSL pipeline is
/// its template filled with sizes from the problem and the config (both in the tuning
/// cache's key) and its `override` constants, so these texts stand for what WGSL runs.
pub fn wgsl_image_hash() -> String {
    let parts: Vec<&[u8]> = FAMILIES.iter().map(|f| f.wgsl_template().as_bytes()).collect();
    crate::tune::image_hash(&parts)
}

/// Fills `{{KEY}}` slots of a WGSL template. Every slot must be filled: a slot left
/// over is a bug in the launcher, caught by the tests that build every pipeline.
pub fn fill_template(template: &str, slots: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (key, value) in slots {
        out = out.replace(&format!("{{{{{key}}}}}"), value);
    }
    debug_assert!(!out.contains("{{"), "unfilled template slot in:\n{out}");
    out
}

const BLOCK_FOLD_WGSL: &str = include_str!("block_fold.wgsl");

/// The WGSL text of `fn name(tid: u32, value: t) -> t`, a block-wide fold of every
/// thread's value with `combine` (an expression of `a` and `b`) through the workgroup
/// array `scratch` (`block_fold.wgsl`), for a kernel's template slot.
pub(crate) fn wgsl_block_fold(name: &str, t: &str, scratch: &str, combine: &str) -> String {
    fill_template(BLOCK_FOLD_WGSL, &[("NAME", name), ("T", t), ("SCRATCH", scratch), ("COMBINE", combine)])
}

pub use crate::backend::Variant;
pub use crate::backend::cuda::nvrtc::CudaSource;
use crate::backend::wgpu::{PipelineDesc, WgpuBackend};
use crate::backend::{Backend, BackendKind, RustKernels};
use crate::error::{Error, Result};
use crate::measure::TimingOptions;

/// One WGSL pipeline of a family's kernel: the text, its entry point, the `override`
/// values, and what it declares.
#[derive(Debug, Clone)]
pub struct WgslSpec {
    /// Kernel name for errors and records, e.g. `histogram_u32[wgsl-literal,bins=256]`.
    pub name: String,
    pub source: String,
    pub entry: &'static str,
    pub constants: Vec<(&'static str, f64)>,
    pub workgroup_size: u32,
    /// Bytes of the static `var<workgroup>` arrays the text declares.
    pub static_bytes: u32,
}

/// One kernel of a family, as every backend can build it: the Rust entry point with the
/// launch-sized bytes of its layout, the WGSL pipeline for each sizing, and the CUDA C
/// source with static arrays.
pub struct KernelSpec<'a> {
    pub entry: &'static str,
    pub launch_bytes: u32,
    pub wgsl: &'a dyn Fn(Variant) -> WgslSpec,
    pub cuda: &'a dyn Fn() -> CudaSource,
}

/// The `cuda` of a [`KernelSpec`] for a kernel that has no CUDA C form (never called:
/// the backends check the variant before they build).
pub fn no_cuda_source() -> CudaSource {
    unreachable!("this kernel has no cuda-static form; the variant is checked before building")
}

/// A built kernel and the workgroup memory it uses.
pub struct Built<K> {
    pub kernel: K,
    pub launch_bytes: u32,
    pub static_bytes: u32,
}

/// How a backend builds the kernels of the families that use [`KernelSpec`].
pub trait FamilyBackend: crate::family::Erase + reduce::ReduceKernels + 'static {
    /// The variants this backend runs.
    fn variants(&self) -> &'static [Variant];
    fn build(&self, spec: &KernelSpec<'_>, variant: Variant) -> Result<Built<Self::Kernel>>;
}

impl<B: RustKernels + crate::family::Erase + 'static> FamilyBackend for B {
    fn variants(&self) -> &'static [Variant] {
        self.rust_variants()
    }

    fn build(&self, spec: &KernelSpec<'_>, variant: Variant) -> Result<Built<Self::Kernel>> {
        match variant {
            Variant::LaunchSized => {
                Ok(Built { kernel: self.rust_kernel(spec.entry)?, launch_bytes: spec.launch_bytes, static_bytes: 0 })
            }
            // The static bytes are the driver's figure for the compiled kernel.
            Variant::CudaStatic if self.rust_variants().contains(&variant) => {
                let (kernel, static_bytes) = self.static_kernel(&(spec.cuda)())?;
                Ok(Built { kernel, launch_bytes: 0, static_bytes })
            }
            _ => Err(Error::Unsupported {
                backend: self.kind(),
                what: format!("the {variant} variant of {}", spec.entry),
            }),
        }
    }
}

impl FamilyBackend for WgpuBackend {
    fn variants(&self) -> &'static [Variant] {
        &[Variant::WgslLiteral, Variant::WgslOverride]
    }

    fn build(&self, spec: &KernelSpec<'_>, variant: Variant) -> Result<Built<Self::Kernel>> {
        if !matches!(variant, Variant::WgslLiteral | Variant::WgslOverride) {
            return Err(Error::Unsupported {
                backend: BackendKind::Wgsl,
                what: format!("the {variant} variant of {}", spec.entry),
            });
        }
        let w = (spec.wgsl)(variant);
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

/// The WGSL sizing declarations of a template: `const` lines for the literal variant,
/// `override` lines (values set at pipeline creation) for the override variant.
pub fn wgsl_sizing(
    variant: Variant,
    items: &[(&'static str, &'static str, f64)],
) -> (String, Vec<(&'static str, f64)>) {
    match variant {
        Variant::WgslOverride => (
            items.iter().map(|(name, ty, _)| format!("override {name}: {ty};")).collect::<Vec<_>>().join("\n"),
            items.iter().map(|(name, _, v)| (*name, *v)).collect(),
        ),
        _ => (
            items
                .iter()
                .map(|(name, ty, v)| match *ty {
                    "bool" => format!("const {name}: bool = {};", *v != 0.0),
                    "f32" => format!("const {name}: f32 = {v:?};"),
                    _ => format!("const {name}: {ty} = {}u;", *v as u64),
                })
                .collect::<Vec<_>>()
                .join("\n"),
            Vec::new(),
        ),
    }
}

/// The config a variant runs for a config asked of it. The cuda-static kernels' arrays are
/// capped at `limit` bytes (48 KB on CUDA: static `__shared__` arrays cannot opt in past
/// it), so for that variant a config whose arrays (`bytes`) are larger is replaced by the
/// first of `fallbacks` that fits (the family orders them best first), with a note saying
/// so for the record; where none fits, `asked` is kept and the build refuses it with the
/// bytes and the limit. Other variants run `asked`.
pub fn fit_static<C: Copy + std::fmt::Debug>(
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
        wgsl: &dyn Fn(Variant) -> WgslSpec,
        cuda: &dyn Fn() -> CudaSource,
    ) -> Result<Prepared<K>> {
        if !backend.variants().contains(&variant) {
            return Err(Error::Unsupported {
                backend: backend.kind(),
                what: format!("the {variant} variant of {entry}"),
            });
        }
        let launch_bytes = layout_bytes.map_err(|source| Error::Layout { kernel: entry.into(), source })?;
        let shared_bytes = if variant == Variant::LaunchSized { launch_bytes } else { 0 };
        backend.check_launch(entry, crate::backend::LaunchDims { grid, block, shared_bytes })?;
        let built = backend.build(&KernelSpec { entry, launch_bytes, wgsl, cuda }, variant)?;
        let name = match variant {
            Variant::LaunchSized => entry.to_string(),
            Variant::CudaStatic => cuda().name,
            _ => wgsl(variant).name,
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
        crate::backend::LaunchDims { grid, block, shared_bytes: self.built.launch_bytes }
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
}

/// What [`Workload::vendor_anchor`] measured: the library routine and its timing (with
/// its warm-up runs), or why it could not be run or did not match.
pub struct VendorAnchor {
    pub name: &'static str,
    pub result: Result<(crate::measure::Timing, u32)>,
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
        let name = match info.backend {
            BackendKind::Hip => "hipMemGetInfo total",
            _ => "cuDeviceTotalMem",
        };
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

/// The element type option of the families instantiated for several (`--dtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DtypeArg {
    F32,
    U32,
}

impl DtypeArg {
    pub fn dtype(self) -> dynsmem_kernels::Dtype {
        match self {
            DtypeArg::F32 => dynsmem_kernels::Dtype::F32,
            DtypeArg::U32 => dynsmem_kernels::Dtype::U32,
        }
    }
}
