//! Backends behind one small trait: allocate, copy in and out, launch with a per-launch
//! shared-memory size, synchronize, time on the device, report limits.
//!
//! Each backend lives in its own folder and is layered like cudarc: the driver's raw calls
//! (cudarc's `sys`, wgpu-hal, `libloading` symbols) -> thin `Result` wrappers -> the safe
//! [`Backend`] implementation here. Kernel families are generic over [`Backend`] and add
//! one small per-backend trait that says how to obtain their kernels.

use std::fmt;
use std::marker::PhantomData;

use serde::{Deserialize, Serialize};

use crate::element::Element;
use crate::error::{Error, Result};

pub mod any;
pub mod cpu;
pub mod cuda;
pub mod hip;
pub mod timed;
pub mod wgpu;

pub use any::{AnyBackend, BACKENDS, BackendRow, Erase, Images, LimitNames, OwnedBackend};
pub use timed::{time, time_paired, timer_label};

pub use crate::backend_kind::BackendKind;

/// What a device is and what it allows, as the backend reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub backend: BackendKind,
    /// e.g. "NVIDIA H100 80GB HBM3", "llvmpipe (LLVM 15.0.6, 256 bits)".
    pub name: String,
    /// Driver version as the vendor writes it (e.g. "580.159.04"), or what the API reports.
    pub driver: String,
    /// API and its version, e.g. "CUDA 13.0", "Vulkan 1.3.230".
    pub api: String,
    /// True for a software rasterizer / CPU adapter (lavapipe): timings are not GPU timings.
    pub is_cpu: bool,
    pub limits: Limits,
}

/// Workgroup-memory and launch limits, in bytes and threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub max_threads_per_block: u32,
    pub max_grid_x: u64,
    /// Launch-sized bytes a kernel gets without opting in (CUDA: 48 KB); 0 where the
    /// backend has no launch-sized workgroup memory (WGSL).
    pub launch_shared_default: u32,
    /// Launch-sized bytes per block with opt-in (CUDA: `MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`).
    pub launch_shared_max: u32,
    /// Static (compile-time sized) workgroup bytes per block (WGSL:
    /// `max_compute_workgroup_storage_size`; CUDA: 48 KB).
    pub static_shared_max: u32,
    /// Shared memory per multiprocessor / compute unit, where the backend tells.
    pub shared_per_multiprocessor: Option<u32>,
    pub multiprocessors: Option<u32>,
    /// Largest single buffer a kernel may bind (wgpu's storage binding limit).
    pub max_buffer_bytes: u64,
    pub memory_bytes: Option<u64>,
    /// Most blocks of a thread-block cluster a launch may ask for (1: no clusters). CUDA on
    /// compute capability 9.0 and later: 16, past the portable 8 by opting the function in
    /// (the device may still run fewer clusters of 16 at once, or none of a large block);
    /// the CPU backend emulates clusters up to the same size.
    #[serde(default = "one")]
    pub max_cluster: u32,
}

fn one() -> u32 {
    1
}

impl Limits {
    /// The H100 (SXM, 80 GB HBM3) as the CUDA backend reads it there: what the CPU backend
    /// checks launches against, and the GPU the twins are listed for without one.
    pub fn h100() -> Limits {
        Limits {
            max_threads_per_block: 1024,
            max_grid_x: i32::MAX as u64,
            launch_shared_default: 49_152,
            launch_shared_max: 232_448,
            static_shared_max: 49_152,
            shared_per_multiprocessor: Some(233_472),
            multiprocessors: Some(132),
            max_buffer_bytes: u64::MAX,
            memory_bytes: Some(85_017_493_504),
            max_cluster: 16,
        }
    }
}

pub use dynsmem_kernels::LaunchDims;

/// One launch as a backend saw it, with the padding ([`Backend::set_launch_padding`]) in
/// its shared bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchSeen {
    pub kernel: String,
    pub dims: LaunchDims,
    /// Blocks of it that fit on one multiprocessor at once (the driver's occupancy
    /// calculator), where the backend can tell.
    pub resident_blocks: Option<u32>,
    /// Thread-block clusters of it that fit on the whole device at once (CUDA's
    /// `cuOccupancyMaxActiveClusters`, for entries launched in clusters), where it can tell.
    pub active_clusters: Option<u32>,
}

/// The log of launches a padded backend keeps: each kernel once, its last launch.
#[derive(Default)]
pub(crate) struct LaunchLog(std::sync::Mutex<(Option<u32>, Vec<LaunchSeen>)>);

impl LaunchLog {
    fn lock(&self) -> std::sync::MutexGuard<'_, (Option<u32>, Vec<LaunchSeen>)> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub(crate) fn set(&self, bytes: Option<u32>) {
        let mut log = self.lock();
        log.0 = bytes;
        if bytes.is_none() {
            log.1.clear();
        }
    }
    /// `dims` with the padding added (checked for overflow by the caller's limit check).
    pub(crate) fn pad(&self, dims: LaunchDims) -> LaunchDims {
        LaunchDims { shared_bytes: dims.shared_bytes.saturating_add(self.lock().0.unwrap_or(0)), ..dims }
    }
    /// Logs a launch while a padding is set; `occupancy` (resident blocks per
    /// multiprocessor, active clusters) is asked only then.
    pub(crate) fn note(&self, kernel: &str, dims: LaunchDims, occupancy: impl FnOnce() -> (Option<u32>, Option<u32>)) {
        let mut log = self.lock();
        if log.0.is_none() {
            return;
        }
        let (resident_blocks, active_clusters) = occupancy();
        let seen = LaunchSeen { kernel: kernel.into(), dims, resident_blocks, active_clusters };
        match log.1.iter_mut().find(|l| l.kernel == kernel) {
            Some(l) => *l = seen,
            None => log.1.push(seen),
        }
    }
    pub(crate) fn take(&self) -> Vec<LaunchSeen> {
        std::mem::take(&mut self.lock().1)
    }
}

/// A device buffer of `len` elements of `T`, holding the backend's raw allocation `R`.
/// One type for every backend; [`Backend`] fixes `R`.
pub struct Buffer<R, T> {
    raw: R,
    len: usize,
    _elem: PhantomData<T>,
}

impl<R, T: Element> Buffer<R, T> {
    pub(crate) fn from_raw(raw: R, len: usize) -> Self {
        Buffer { raw, len, _elem: PhantomData }
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn bytes(&self) -> u64 {
        self.len as u64 * size_of::<T>() as u64
    }
    pub fn raw(&self) -> &R {
        &self.raw
    }
    /// This buffer as a kernel argument.
    pub fn arg(&self) -> Arg<'_, R> {
        Arg::Buffer(&self.raw)
    }
}

impl<R, T> fmt::Debug for Buffer<R, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Buffer<{}>[{}]", std::any::type_name::<T>(), self.len)
    }
}

/// Bytes of `len` elements of `T`, or [`Error::OutOfMemory`] when that overflows or is
/// more than the device has in all: the size check of every backend's [`Backend::alloc`]
/// (a driver asked for more than its memory may fail late or, on the CPU backend with
/// overcommit, not at all until the pages are touched).
pub(crate) fn byte_len<T>(info: &DeviceInfo, len: usize) -> Result<usize> {
    let oom = |requested: u64| Error::OutOfMemory {
        backend: info.backend,
        requested,
        free: None,
        total: info.limits.memory_bytes,
    };
    let bytes = len.checked_mul(size_of::<T>()).ok_or(oom(u64::MAX))?;
    match info.limits.memory_bytes {
        Some(total) if bytes as u64 > total => Err(oom(bytes as u64)),
        _ => Ok(bytes),
    }
}

/// The memory of the machine the host code runs on, as far as this process may use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostMemory {
    /// Physical memory, or the cgroup's limit where that is lower (`MemTotal` of
    /// `/proc/meminfo`, `memory.max` / `memory.limit_in_bytes`).
    pub total: u64,
    /// What the kernel says can be allocated now without swapping (`MemAvailable`).
    pub available: Option<u64>,
}

/// [`HostMemory`] on Linux; `None` where `/proc/meminfo` cannot be read (the checks that
/// use it are then skipped, and an allocation past memory fails when it is made).
pub fn host_memory() -> Option<HostMemory> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = info.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line[name.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
        kb.checked_mul(1024)
    };
    let mut total = field("MemTotal:")?;
    for limit in ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"] {
        // "max" (no limit) does not parse and is skipped.
        if let Some(v) = std::fs::read_to_string(limit).ok().and_then(|t| t.trim().parse::<u64>().ok()) {
            total = total.min(v);
        }
    }
    Some(HostMemory { total, available: field("MemAvailable:").map(|a| a.min(total)) })
}

/// The length check of every backend's [`Backend::copy`].
pub(crate) fn check_copy_lengths(kernel: &str, src: usize, dst: usize) -> Result<()> {
    if src != dst {
        return Err(Error::InvalidProblem {
            kernel: kernel.into(),
            reason: format!("source has {src} elements, destination {dst}"),
        });
    }
    Ok(())
}

/// One kernel argument. Buffers are passed by their raw allocation; scalars by value.
/// On WGSL the scalars are packed, 4 bytes each (`U64` as lo, hi), into a uniform block
/// bound after the buffers.
#[derive(Debug)]
pub enum Arg<'a, R> {
    Buffer(&'a R),
    U32(u32),
    U64(u64),
    F32(f32),
}

// By hand: a derive would demand `R: Copy`, and raw allocations are not.
impl<R> Clone for Arg<'_, R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<R> Copy for Arg<'_, R> {}

/// A named, loaded kernel of some backend.
pub trait KernelName {
    fn name(&self) -> &str;
}

impl<K: KernelName + ?Sized> KernelName for &K {
    fn name(&self) -> &str {
        (**self).name()
    }
}

impl<K: KernelName> KernelName for std::rc::Rc<K> {
    fn name(&self) -> &str {
        (**self).name()
    }
}

/// How a tensor-map copy lays a box out in shared memory: as it is (rows back to back), or
/// with the 128-byte swizzle (16-byte chunk `c` of row `r` at chunk `c ^ (r % 8)`, rows
/// of at most 128 bytes, the layout `wgmma` reads without bank conflicts; the destination
/// must be 1024-byte aligned).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorSwizzle {
    None,
    /// 16-byte pieces XOR-ed by 64-byte row pairs (period 512 bytes): boxes of 64-byte rows.
    B64,
    /// 16-byte pieces XOR-ed by 128-byte rows (period 1024 bytes): boxes of 128-byte rows.
    B128,
}

/// The operations every backend provides.
pub trait Backend {
    /// The untyped device allocation.
    type Raw;
    /// A loaded kernel (function, pipeline, ...).
    type Kernel: KernelName;

    fn info(&self) -> &DeviceInfo;

    fn kind(&self) -> BackendKind {
        self.info().backend
    }

    /// A zero-filled buffer of `len` elements.
    fn alloc<T: Element>(&self, len: usize) -> Result<Buffer<Self::Raw, T>>;
    /// A new buffer holding `data`.
    fn htod<T: Element>(&self, data: &[T]) -> Result<Buffer<Self::Raw, T>>;
    /// The buffer's contents (waits for queued work).
    fn dtoh<T: Element>(&self, buf: &Buffer<Self::Raw, T>) -> Result<Vec<T>>;
    /// Queues a device-to-device copy of `src` into `dst` (same length). Timed by
    /// [`Backend::time_ms`] like a launch: it is the bandwidth anchor.
    fn copy<T: Element>(&self, src: &Buffer<Self::Raw, T>, dst: &mut Buffer<Self::Raw, T>) -> Result<()>;

    /// Queues zero-filling `buf` (in stream order with launches, and inside a
    /// [`Backend::time_ms`] scope like a launch): kernels that accumulate into an output
    /// (counters, flags) start from it.
    fn fill_zero<T: Element>(&self, buf: &Buffer<Self::Raw, T>) -> Result<()>;

    /// A tensor map (a TMA descriptor, CUDA's `CUtensorMap`, 32 words) in device memory for the
    /// row-major matrix of `elem_bytes`-byte elements (4 or 2) in `buf`: `dims` = (columns,
    /// rows), rows `row_bytes` apart (a multiple of 16), copied in boxes of `box_dims` =
    /// (columns, rows) laid out as `swizzle` says, elements past the matrix read as zeros.
    /// Only CUDA (sm_90) has them.
    fn tensor_map_2d<T: Element>(
        &self,
        buf: &Buffer<Self::Raw, T>,
        elem_bytes: u32,
        dims: [u64; 2],
        row_bytes: u64,
        box_dims: [u32; 2],
        swizzle: TensorSwizzle,
    ) -> Result<Buffer<Self::Raw, u32>> {
        let _ = (buf, elem_bytes, dims, row_bytes, box_dims, swizzle);
        Err(Error::Unsupported { backend: self.kind(), what: "tensor maps (TMA copies)".into() })
    }

    /// [`Backend::tensor_map_2d`] of the matrix at device address `addr`: memory of the
    /// caller's ([`Backend::launch_on_stream`]). Only CUDA (sm_90) has it.
    fn tensor_map_2d_at(
        &self,
        addr: u64,
        elem_bytes: u32,
        dims: [u64; 2],
        row_bytes: u64,
        box_dims: [u32; 2],
        swizzle: TensorSwizzle,
    ) -> Result<Buffer<Self::Raw, u32>> {
        let _ = (addr, elem_bytes, dims, row_bytes, box_dims, swizzle);
        Err(Error::Unsupported { backend: self.kind(), what: "tensor maps (TMA copies)".into() })
    }

    /// Queues one launch. Implementations call [`Backend::check_launch`] first, so a
    /// launch over a limit is a typed error and nothing is queued.
    fn launch(&self, kernel: &Self::Kernel, dims: LaunchDims, args: &[Arg<'_, Self::Raw>]) -> Result<()>;

    /// [`Backend::launch`] with buffers and a stream of the caller's (memory a framework
    /// allocated, a PyTorch tensor's): each buffer argument an [`Arg::U64`] device address,
    /// `stream` a raw stream handle of the backend's API (CUDA's `CUstream`, 0 the legacy
    /// default stream). Only CUDA has it; the others refuse with a typed error.
    fn launch_on_stream(
        &self,
        kernel: &Self::Kernel,
        dims: LaunchDims,
        args: &[Arg<'_, Self::Raw>],
        stream: u64,
    ) -> Result<()> {
        let _ = (kernel, dims, args, stream);
        Err(Error::Unsupported { backend: self.kind(), what: "launching on a caller's buffers and stream".into() })
    }

    /// Waits for all queued work and reports any asynchronous error.
    fn synchronize(&self) -> Result<()>;

    /// Device time, in milliseconds, of the work `work` queues (CUDA events, wgpu
    /// timestamp queries); waits for it.
    fn time_ms(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<f64>;

    /// Device times, in milliseconds, of `runs` runs of `work`, queued back to back so the
    /// device does not idle (and clock down) between them while the host waits; each run
    /// is timed by its own device timestamps. The default waits after each run, as
    /// [`Backend::time_ms`] does.
    fn time_runs(&self, runs: u32, work: &mut dyn FnMut() -> Result<()>) -> Result<Vec<f64>> {
        (0..runs).map(|_| self.time_ms(work)).collect()
    }

    /// What timing [`Backend::time_ms`] uses, for records.
    fn timer_name(&self) -> &'static str;

    /// Whether families choose small default configs here rather than a GPU's: the CPU
    /// backend, where every kernel thread is an OS thread (unless built GPU-shaped).
    fn small_configs(&self) -> bool {
        false
    }

    /// The management library's readings of this device (clocks, power, temperature,
    /// energy), where one loads: [`crate::backend::time`] samples it into every record.
    fn observer(&self) -> Option<&dyn crate::observe::Observer> {
        None
    }

    /// This GPU's own identity, where the driver gives one (CUDA: its UUID, as
    /// `nvidia-smi -L` prints it): what tells apart GPUs of one model in one host.
    fn device_id(&self) -> Option<String> {
        None
    }

    /// Makes every later launch ask for `bytes` of launch-sized memory beyond its kernel's
    /// own: memory nothing uses, which only lowers how many blocks fit on a multiprocessor
    /// (`dynsmem probe occupancy`). While set (`Some`, 0 included), launches are logged
    /// ([`Backend::take_launches`]); `None` ends both.
    /// Only backends whose kernels take launch-sized memory pad (default: unsupported).
    fn set_launch_padding(&self, bytes: Option<u32>) -> Result<()> {
        let _ = bytes;
        Err(Error::Unsupported { backend: self.kind(), what: "padding launch-sized memory".into() })
    }

    /// The launches queued since the last call while a padding was set, each kernel once
    /// (its last launch), in order of first launch.
    fn take_launches(&self) -> Vec<LaunchSeen> {
        Vec::new()
    }

    /// The limit checks every launch must pass, against [`DeviceInfo::limits`]
    /// ([`check_limits`]).
    fn check_launch(&self, kernel: &str, dims: LaunchDims) -> Result<()> {
        let info = self.info();
        check_limits(kernel, info.backend, &info.limits, dims, 0)
    }
}

/// A backend that runs the Rust kernels of `dynsmem-kernels` (PTX on CUDA, code objects
/// on HIP, the host build on the CPU), which it finds by entry name.
pub trait RustKernels: Backend {
    fn rust_kernel(&self, name: &str) -> Result<Self::Kernel>;

    /// Clusters of `cluster` blocks of `kernel` (`block` threads, `shared_bytes` launch-sized
    /// bytes each) the device runs at once (CUDA's `cuOccupancyMaxActiveClusters`), where the
    /// backend can say.
    fn max_active_clusters(&self, kernel: &Self::Kernel, block: u32, shared_bytes: u32, cluster: u32) -> Option<u32> {
        let _ = (kernel, block, shared_bytes, cluster);
        None
    }

    /// The variants this backend runs: the launch-sized Rust kernels everywhere, and on
    /// CUDA also cuda-static (the same algorithms in CUDA C with static arrays, NVRTC).
    fn rust_variants(&self) -> &'static [Variant] {
        &[Variant::LaunchSized]
    }

    /// The cuda-static kernel of `src` and the static bytes the driver reports it uses;
    /// only the CUDA backend has them.
    fn static_kernel(&self, src: &cuda::nvrtc::CudaSource) -> Result<(Self::Kernel, u32)> {
        Err(Error::Unsupported { backend: self.kind(), what: format!("{} (cuda-static runs on CUDA only)", src.name) })
    }
}

/// The result of looking for one backend on this machine.
#[derive(Debug)]
pub enum Probe<B> {
    Ready(B),
    /// Why the backend cannot be used, in one line.
    Unavailable(BackendKind, String),
}

impl<B> Probe<B> {
    /// The ready backend through `f`; an unavailable one keeps its reason.
    pub fn map<C>(self, f: impl FnOnce(B) -> C) -> Probe<C> {
        match self {
            Probe::Ready(b) => Probe::Ready(f(b)),
            Probe::Unavailable(k, why) => Probe::Unavailable(k, why),
        }
    }
}

/// How a kernel gets its workgroup memory: the axis the project compares along.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// Rust kernel, tiles carved from launch-sized memory (CUDA dynamic shared memory).
    LaunchSized,
    /// WGSL with `var<workgroup>` arrays sized by literals in the source text.
    WgslLiteral,
    /// WGSL with `var<workgroup>` arrays sized by pipeline `override` constants.
    WgslOverride,
    /// WGSL sized by literals, with subgroup operations (wgpu's `SUBGROUP` feature) where
    /// the Rust kernel uses warp shuffles, in the idiom the driver compiles best (rows in
    /// registers, a one-pass look-back scan): the twin as good as static WGSL allows. A
    /// device without the feature does not list it; a twin with no such form refuses it.
    WgslSubgroup,
    /// CUDA C with static `__shared__` arrays sized by `-D` defines, the same algorithm as
    /// the Rust kernel, compiled per config at run time through NVRTC (CUDA only).
    CudaStatic,
}

impl Variant {
    /// Whether the variant is a WGSL twin (built by the WGSL backend).
    pub fn is_wgsl(self) -> bool {
        matches!(self, Variant::WgslLiteral | Variant::WgslOverride | Variant::WgslSubgroup)
    }

    pub fn name(self) -> &'static str {
        match self {
            Variant::LaunchSized => "launch-sized",
            Variant::WgslLiteral => "wgsl-literal",
            Variant::WgslOverride => "wgsl-override",
            Variant::WgslSubgroup => "wgsl-subgroup",
            Variant::CudaStatic => "cuda-static",
        }
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A backend's launch limits, checked in this one place for a launch
/// ([`Backend::check_launch`]) and for the tuner's filter before launch: a block of 1 to
/// `max_threads_per_block` threads, a grid of 1 to `max_grid_x` blocks, `dims.shared_bytes`
/// of launch-sized memory within the opt-in limit, and `static_bytes` of static arrays
/// within the static one.
/// A cluster of 1 to [`Limits::max_cluster`] blocks that divides the grid.
pub fn check_cluster(kernel: &str, backend: BackendKind, l: &Limits, dims: LaunchDims) -> Result<()> {
    if dims.cluster == 0 || dims.cluster > l.max_cluster {
        return Err(Error::ClusterTooLarge {
            kernel: kernel.into(),
            backend,
            requested: dims.cluster,
            limit: l.max_cluster,
        });
    }
    if !dims.grid.is_multiple_of(dims.cluster) {
        return Err(Error::InvalidConfig {
            kernel: kernel.into(),
            reason: format!("a grid of {} blocks is not whole clusters of {}", dims.grid, dims.cluster),
        });
    }
    Ok(())
}

pub fn check_limits(kernel: &str, backend: BackendKind, l: &Limits, dims: LaunchDims, static_bytes: u32) -> Result<()> {
    if dims.block == 0 {
        return Err(Error::InvalidConfig { kernel: kernel.into(), reason: "block of 0 threads".into() });
    }
    if dims.block > l.max_threads_per_block {
        return Err(Error::BlockTooLarge {
            kernel: kernel.into(),
            backend,
            requested: dims.block,
            limit: l.max_threads_per_block,
        });
    }
    if dims.grid == 0 || dims.grid as u64 > l.max_grid_x {
        return Err(Error::GridTooLarge {
            kernel: kernel.into(),
            backend,
            requested: dims.grid as u64,
            limit: l.max_grid_x,
        });
    }
    check_cluster(kernel, backend, l, dims)?;
    let (kind, requested, limit, limit_name) = if dims.shared_bytes > l.launch_shared_max {
        let name = BackendRow::of(backend).limit_names.launch_shared;
        ("launch-sized", dims.shared_bytes, l.launch_shared_max, name)
    } else if static_bytes > l.static_shared_max {
        let name = BackendRow::of(backend).limit_names.static_shared;
        ("static", static_bytes, l.static_shared_max, name)
    } else {
        return Ok(());
    };
    Err(Error::SharedMemoryLimit {
        kernel: kernel.into(),
        backend,
        kind,
        requested: requested as u64,
        limit: limit as u64,
        limit_name,
    })
}
