//! CPU backend: the Rust kernels themselves, from the same source as the PTX, run on the
//! host. It catches what a GPU would hide: an access outside a carved array of the region, a
//! carve larger than the launch gave, a device-memory access outside the launch's buffers, a
//! barrier only part of the workgroup reaches; each becomes [`Error::KernelFault`] naming the
//! kernel, workgroup and thread, and nothing hangs.
//!
//! Two schedules run a launch ([`CpuSchedule`]), with the same checks and reports:
//! - **fast** (the default, [`fast`]): a workgroup's threads are coroutines on one OS thread,
//!   switched at barriers; workgroups (whole clusters) are spread over the host's cores. It is
//!   the reference of the contract's CPU-run check and what the test suites run.
//! - **stress** ([`execute`]): a workgroup's threads are OS threads meeting at real barriers
//!   ([`sync`]), built to find races a GPU run could let through:
//!   [`Schedule::resident`] workgroups run at once, in a seeded order that is not the grid
//!   order, so protocols between workgroups (the scan's look-back) really interleave; and
//!   threads are delayed at random at global-memory synchronisation points (atomics, acquire
//!   loads, release stores), so a workgroup sees another's published state in each of its
//!   stages. A missing barrier shows up here, not under fast, where threads between two
//!   barriers never interleave.
//!
//! Under both, launch-sized regions are filled with [`REGION_POISON`] at each launch and
//! between workgroups, so reading workgroup memory nobody wrote gives NaNs, not zeros. The
//! workgroup order comes from a seed, which is in the device name (records carry it) and in
//! every fault's message; `DYNSMEM_CPU_SEED` sets it, `DYNSMEM_CPU_SCHEDULE=fast|stress`
//! (or `--cpu-schedule`) the schedule, so a failure can be run again with the same order
//! (under stress the OS still schedules the threads).
//!
//! Timings are host wall-clock times of this emulation, useful to compare configs on the
//! CPU, not GPU figures. The limits are an H100's (48 KB default, 232448 B opt-in), so a
//! config the H100 refuses is refused here too.

mod execute;
mod fast;
mod sync;

use std::alloc::Layout;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use dynsmem_kernels::gpu::host::{Cluster, Fault, FaultKind, GlobalBuffer, ThreadContext, with_context};
use dynsmem_kernels::{KernelEntry, ParamKind};

use self::sync::WorkgroupSync;
use super::{
    Arg, Backend, BackendKind, Buffer, DeviceInfo, KernelName, LaunchDims, Limits, RustKernels, TensorSwizzle, Variant,
};
use crate::element::Element;
use crate::error::{Error, Result};

/// Host memory standing in for device memory: `bytes` (zero-filled, [`REGION_ALIGN`]-aligned)
/// between two guard zones that no buffer owns, [`GUARD_BEFORE`] bytes before and at least
/// the buffer's own length (and [`GUARD_AFTER_MIN`]) after. Kernels' device-memory accesses
/// are checked against `bytes` ([`GlobalBuffer`]); an access up to a buffer's length past
/// its end lands in its own guard zone, so it is reported against the buffer it overran,
/// never taken for an access to the next allocation. The guard zones are allocated
/// zero-filled and never written, so the operating system backs large ones with no memory.
///
/// [`REGION_ALIGN`]: dynsmem_kernels::gpu::REGION_ALIGN
pub struct CpuMem {
    /// The allocation: the guard zones and the buffer.
    alloc: NonNull<u8>,
    layout: Layout,
    bytes: usize,
}

/// Bytes of the guard zone before each [`CpuMem`] buffer (a multiple of the alignment).
const GUARD_BEFORE: usize = 4096;
/// The least bytes of the guard zone after each [`CpuMem`] buffer.
const GUARD_AFTER_MIN: usize = 4096;

// SAFETY: plain owned memory; kernels share it across threads the way GPU threads share
// device memory, and the backend waits for every launch before returning.
unsafe impl Send for CpuMem {}
unsafe impl Sync for CpuMem {}

impl CpuMem {
    fn zeroed(bytes: usize) -> Result<CpuMem> {
        let oom = |requested: u64| {
            let mem = super::host_memory();
            Error::OutOfMemory {
                backend: BackendKind::Cpu,
                requested,
                free: mem.and_then(|m| m.available),
                total: mem.map(|m| m.total),
            }
        };
        let size = bytes
            .checked_next_multiple_of(16)
            .and_then(|b| b.checked_add(GUARD_BEFORE + b.max(GUARD_AFTER_MIN)))
            .ok_or_else(|| oom(bytes as u64))?;
        let layout = Layout::from_size_align(size, dynsmem_kernels::gpu::REGION_ALIGN as usize)
            .map_err(|_| oom(bytes as u64))?;
        // SAFETY: non-zero size (the guard zones).
        let alloc = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }).ok_or_else(|| oom(size as u64))?;
        Ok(CpuMem { alloc, layout, bytes })
    }

    /// Like [`CpuMem::zeroed`], every byte `byte`.
    fn filled(bytes: usize, byte: u8) -> Result<CpuMem> {
        let mut mem = CpuMem::zeroed(bytes)?;
        mem.bytes_mut().fill(byte);
        Ok(mem)
    }

    /// Overwrites every byte with [`REGION_POISON`].
    ///
    /// # Safety
    /// No other thread reads or writes the memory meanwhile.
    unsafe fn poison(&self) {
        unsafe { std::ptr::write_bytes(self.ptr(), REGION_POISON, self.bytes) };
    }

    fn ptr(&self) -> *mut u8 {
        // SAFETY: the guard zone before the buffer is inside the allocation.
        unsafe { self.alloc.as_ptr().add(GUARD_BEFORE) }
    }

    fn addr(&self) -> u64 {
        self.ptr() as u64
    }

    /// The buffer as a kernel parameter `param` sees it.
    fn global(&self, param: &'static str) -> GlobalBuffer {
        GlobalBuffer {
            param,
            base: self.ptr() as usize,
            bytes: self.bytes,
            guard_before: GUARD_BEFORE,
            guard_after: self.layout.size() - GUARD_BEFORE - self.bytes,
        }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: owned, initialised (zeroed) memory of this size.
        unsafe { std::slice::from_raw_parts(self.ptr(), self.bytes) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr(), self.bytes) }
    }
}

impl Drop for CpuMem {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { std::alloc::dealloc(self.alloc.as_ptr(), self.layout) }
    }
}

impl KernelName for KernelEntry {
    fn name(&self) -> &str {
        self.name
    }
}

/// How the CPU backend runs a launch's workgroups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// Coroutines and all cores, or OS threads and perturbed timing.
    pub mode: CpuSchedule,
    /// Stress only: workgroups in flight at once (fewer when the grid is smaller), each with
    /// its own threads, region and barrier, like the blocks resident on a GPU's SMs.
    pub resident: u32,
    /// Seed of each launch's workgroup order (and, under stress, of the delays at
    /// synchronisation points); launch `i` of a backend draws from `seed` and `i`.
    pub seed: u64,
}

/// How the CPU backend runs a workgroup's threads (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuSchedule {
    /// Coroutines switched at barriers, workgroups over all cores: the reference and the tests.
    #[default]
    Fast,
    /// An OS thread per kernel thread, workgroups in a perturbed order with random delays:
    /// finds races (a missing barrier, a look-back that reads a tile too early).
    Stress,
}

impl CpuSchedule {
    pub fn name(self) -> &'static str {
        match self {
            CpuSchedule::Fast => "fast",
            CpuSchedule::Stress => "stress",
        }
    }
}

/// The environment variable that picks the schedule (`fast` or `stress`).
pub const SCHEDULE_ENV: &str = "DYNSMEM_CPU_SCHEDULE";

/// The schedule `--cpu-schedule` set for this process (0: none; else `1 + CpuSchedule as u8`).
static SCHEDULE_SET: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Sets the schedule of every CPU backend made from now on in this process, over
/// `DYNSMEM_CPU_SCHEDULE` (the command line's `--cpu-schedule`).
pub fn set_cpu_schedule(mode: CpuSchedule) {
    SCHEDULE_SET.store(1 + mode as u8, Ordering::Relaxed);
}

/// Workgroups in flight at once under stress by default: enough for a look-back to meet a
/// predecessor that is itself still looking back.
pub const DEFAULT_RESIDENT: u32 = 3;
/// The seed when `DYNSMEM_CPU_SEED` is not set.
pub const DEFAULT_SEED: u64 = 1;

impl Schedule {
    /// The schedule `--cpu-schedule` set, else `DYNSMEM_CPU_SCHEDULE` (`fast` or `stress`),
    /// else fast; [`DEFAULT_RESIDENT`] workgroups at a time under stress; the seed from
    /// `DYNSMEM_CPU_SEED` (decimal) or [`DEFAULT_SEED`].
    ///
    /// # Panics
    /// When `DYNSMEM_CPU_SCHEDULE` holds neither name: a test run that asked for stress must
    /// not quietly run fast.
    pub fn from_env() -> Schedule {
        let seed = std::env::var("DYNSMEM_CPU_SEED").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_SEED);
        let mode = match SCHEDULE_SET.load(Ordering::Relaxed) {
            1 => CpuSchedule::Fast,
            2 => CpuSchedule::Stress,
            _ => match std::env::var(SCHEDULE_ENV).ok().as_deref().map(str::trim) {
                None | Some("") | Some("fast") => CpuSchedule::Fast,
                Some("stress") => CpuSchedule::Stress,
                Some(other) => panic!("{SCHEDULE_ENV}={other:?}: the CPU schedules are `fast` and `stress`"),
            },
        };
        Schedule { mode, resident: DEFAULT_RESIDENT, seed }
    }

    /// How the device name describes it.
    fn describe(&self) -> String {
        match self.mode {
            CpuSchedule::Fast => format!(
                "fast schedule: a workgroup's threads as coroutines on one OS thread, workgroups over the cores, \
                 order from seed {}",
                self.seed
            ),
            CpuSchedule::Stress => format!(
                "stress schedule: one OS thread per kernel thread; {} workgroups at a time, order and delays from seed {}",
                self.resident, self.seed
            ),
        }
    }
}

/// The CPU backend. Knows every kernel of `dynsmem_kernels::KERNELS`, plus any tables a
/// test injects with [`CpuBackend::with_kernels`].
pub struct CpuBackend {
    info: DeviceInfo,
    kernels: HashMap<&'static str, &'static KernelEntry>,
    schedule: Schedule,
    /// Launches so far: each draws its own order and delays.
    launches: AtomicU64,
    /// Families pick the configs they pick on a GPU, not small blocks
    /// ([`CpuBackend::gpu_shaped`]).
    gpu_shaped: bool,
    /// Twins asked of it, where it captures them ([`CpuBackend::capturing_twins`]).
    captured: Option<std::sync::Mutex<Vec<crate::backend::cuda::nvrtc::CudaSource>>>,
    /// A planted bug: launches of this kernel skip the first workgroup of their order
    /// (`DYNSMEM_CPU_PLANT_SKIP`), so that tests can see a wrong result surface as one.
    skip_first: Option<String>,
    /// Padding of every launch's shared bytes, and the launches seen meanwhile.
    launch_log: super::LaunchLog,
}

/// Names a kernel whose launches skip a workgroup on the CPU backend: a planted bug for
/// tests of how failures surface (`bench` and `run` must exit nonzero).
pub const PLANT_SKIP_ENV: &str = "DYNSMEM_CPU_PLANT_SKIP";

impl Default for CpuBackend {
    fn default() -> Self {
        CpuBackend::new()
    }
}

/// The SMs of an H100, which GPU-shaped configs are chosen for.
const H100_MULTIPROCESSORS: u32 = 132;

/// Stack of each kernel thread (an OS thread's under stress, a coroutine's under fast):
/// kernels keep a few registers' worth of locals.
const THREAD_STACK: usize = 256 * 1024;

impl CpuBackend {
    pub fn new() -> CpuBackend {
        CpuBackend::with_kernels(&[])
    }

    /// A CPU backend on which the families choose the configs they choose on an H100 (its
    /// 132 SMs, blocks of hundreds of threads, scan's 512 x 48) instead of the small blocks
    /// that keep the CPU fast: the conformance runs GPU-shaped configs on it, at sizes the
    /// CPU affords.
    pub fn gpu_shaped() -> CpuBackend {
        let mut b = CpuBackend::new();
        b.gpu_shaped = true;
        b.info.limits.multiprocessors = Some(H100_MULTIPROCESSORS);
        b.name_device();
        b
    }

    /// A CPU backend standing in for the GPU `info` describes, to list the CUDA C twins the
    /// families build there without that GPU: families see its name, kind and limits (so
    /// they choose its configs, tuning-database entries included), and each cuda-static
    /// kernel asked of it is recorded ([`CpuBackend::captured_twins`]) and refused, never
    /// compiled or run. `dynsmem sass` and the twin manifest use it.
    pub fn capturing_twins(info: DeviceInfo) -> CpuBackend {
        let mut b = CpuBackend::gpu_shaped();
        b.info = info;
        b.captured = Some(Default::default());
        b
    }

    /// The twins asked of a [`CpuBackend::capturing_twins`] backend so far, oldest first
    /// (taken: the list starts again empty).
    pub fn captured_twins(&self) -> Vec<crate::backend::cuda::nvrtc::CudaSource> {
        self.captured
            .as_ref()
            .map(|c| std::mem::take(&mut *c.lock().unwrap_or_else(|e| e.into_inner())))
            .unwrap_or_default()
    }

    /// The built-in kernels and those of `tables` (e.g. deliberately broken test kernels).
    pub fn with_kernels(tables: &[&'static [KernelEntry]]) -> CpuBackend {
        let mut kernels = HashMap::new();
        for table in dynsmem_kernels::KERNELS.iter().chain(tables) {
            for k in table.iter() {
                kernels.insert(k.name, k);
            }
        }
        let cores = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
        let schedule = Schedule::from_env();
        let mut b = CpuBackend {
            schedule,
            launches: AtomicU64::new(0),
            gpu_shaped: false,
            captured: None,
            skip_first: std::env::var(PLANT_SKIP_ENV).ok().filter(|v| !v.is_empty()),
            launch_log: Default::default(),
            info: DeviceInfo {
                backend: BackendKind::Cpu,
                name: String::new(),
                driver: String::new(),
                api: "Rust kernels on the host, H100 limits".into(),
                is_cpu: true,
                // The H100's launch limits, the host's cores and memory: an allocation past the
                // host's memory is refused (`OutOfMemory`) instead of being overcommitted and
                // killed later.
                limits: Limits {
                    shared_per_multiprocessor: None,
                    multiprocessors: Some(cores),
                    memory_bytes: super::host_memory().map(|m| m.total),
                    ..Limits::h100()
                },
            },
            kernels,
        };
        b.name_device();
        b
    }

    /// The same backend on schedule `mode` (the seed stays).
    pub fn with_schedule(mut self, mode: CpuSchedule) -> CpuBackend {
        self.schedule.mode = mode;
        self.name_device();
        self
    }

    /// Names the device after its schedule (a twin-capturing backend keeps the GPU's name).
    fn name_device(&mut self) {
        if self.captured.is_some() {
            return;
        }
        let cores = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
        let shaped = if self.gpu_shaped { " (GPU-shaped configs)" } else { "" };
        self.info.name = format!("CPU backend ({cores} hardware threads; {}){shaped}", self.schedule.describe());
        self.info.driver = match self.schedule.mode {
            CpuSchedule::Fast => "corosensei coroutines".into(),
            CpuSchedule::Stress => "std::thread".into(),
        };
    }

    /// The schedule its launches run on.
    pub fn schedule(&self) -> Schedule {
        self.schedule
    }

    /// The kernel `name`.
    pub fn kernel(&self, name: &str) -> Result<&'static KernelEntry> {
        self.kernels.get(name).copied().ok_or_else(|| Error::MissingKernel {
            name: name.into(),
            backend: BackendKind::Cpu,
            detail: "no kernels! table defines it".into(),
        })
    }
}

/// Fill byte of launch-sized regions, at each launch and between the workgroups a region
/// serves: every `f32` reads as a NaN, every integer as all ones, so a kernel that reads
/// workgroup memory it never wrote (a GPU leaves there whatever the last block had) gets
/// garbage here too instead of the zeros a fresh allocation would give.
pub const REGION_POISON: u8 = 0xFF;

impl Backend for CpuBackend {
    type Raw = CpuMem;
    type Kernel = &'static KernelEntry;

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn alloc<T: Element>(&self, len: usize) -> Result<Buffer<Self::Raw, T>> {
        Ok(Buffer::from_raw(CpuMem::zeroed(super::byte_len::<T>(&self.info, len)?)?, len))
    }

    fn htod<T: Element>(&self, data: &[T]) -> Result<Buffer<Self::Raw, T>> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let mut mem = CpuMem::zeroed(bytes.len())?;
        mem.bytes_mut()[..bytes.len()].copy_from_slice(bytes);
        Ok(Buffer::from_raw(mem, data.len()))
    }

    fn dtoh<T: Element>(&self, buf: &Buffer<Self::Raw, T>) -> Result<Vec<T>> {
        Ok(bytemuck::pod_collect_to_vec(&buf.raw().bytes()[..buf.bytes() as usize]))
    }

    fn copy<T: Element>(&self, src: &Buffer<Self::Raw, T>, dst: &mut Buffer<Self::Raw, T>) -> Result<()> {
        super::check_copy_lengths("copy", src.len(), dst.len())?;
        let n = src.bytes() as usize;
        dst.raw.bytes_mut()[..n].copy_from_slice(&src.raw().bytes()[..n]);
        Ok(())
    }

    fn fill_zero<T: Element>(&self, buf: &Buffer<Self::Raw, T>) -> Result<()> {
        // SAFETY: owned memory of at least `buf.bytes()` bytes; no launch runs concurrently
        // (launches on this backend return when they finish).
        unsafe { std::ptr::write_bytes(buf.raw().ptr(), 0, buf.bytes() as usize) };
        Ok(())
    }

    /// A CPU tensor map ([`dynsmem_kernels::gpu::host::HostTensorMap`]), which the kernels'
    /// tensor-map copies read on this backend, under CUDA's rules for the arguments (rows a
    /// multiple of 16 bytes apart, boxes of 1 to 256 elements a side) and only unswizzled.
    fn tensor_map_2d<T: Element>(
        &self,
        buf: &Buffer<Self::Raw, T>,
        elem_bytes: u32,
        dims: [u64; 2],
        row_bytes: u64,
        box_dims: [u32; 2],
        swizzle: TensorSwizzle,
    ) -> Result<Buffer<Self::Raw, u32>> {
        let refuse = |what: String| Err(Error::Unsupported { backend: BackendKind::Cpu, what });
        if swizzle != TensorSwizzle::None {
            return refuse(format!("{swizzle:?}-swizzled tensor maps (the CPU copy lays boxes out unswizzled)"));
        }
        let fits = dims.iter().all(|&d| d >= 1)
            && matches!(elem_bytes, 2 | 4)
            && row_bytes.is_multiple_of(16)
            && row_bytes >= dims[0] * elem_bytes as u64
            && box_dims.iter().all(|&b| (1..=256).contains(&b))
            // The last element is inside the buffer.
            && (dims[1] - 1) * row_bytes + dims[0] * elem_bytes as u64 <= buf.bytes();
        if !fits {
            return refuse(format!(
                "a tensor map of {elem_bytes}-byte elements, dims {dims:?}, row bytes {row_bytes}, box {box_dims:?} over \
                 a buffer of {} bytes (rows a multiple of 16 bytes apart, boxes 1 to 256 a side, inside the buffer)",
                buf.bytes()
            ));
        }
        let map =
            dynsmem_kernels::gpu::host::HostTensorMap { base: buf.raw().addr(), dims, row_bytes, box_dims, elem_bytes };
        self.htod(&map.to_words())
    }

    fn set_launch_padding(&self, bytes: Option<u32>) -> Result<()> {
        self.launch_log.set(bytes);
        Ok(())
    }

    fn take_launches(&self) -> Vec<super::LaunchSeen> {
        self.launch_log.take()
    }

    fn launch(&self, kernel: &Self::Kernel, dims: LaunchDims, args: &[Arg<'_, Self::Raw>]) -> Result<()> {
        let dims = self.launch_log.pad(dims);
        self.check_launch(kernel.name, dims)?;
        self.launch_log.note(kernel.name, dims, || (None, None));
        let kinds: Vec<ParamKind> = args
            .iter()
            .map(|a| match a {
                Arg::Buffer(_) => ParamKind::Ptr,
                Arg::U32(_) => ParamKind::U32,
                Arg::U64(_) => ParamKind::U64,
                Arg::F32(_) => ParamKind::F32,
            })
            .collect();
        if kinds != kernel.params {
            return Err(Error::ArgumentMismatch {
                kernel: kernel.name.into(),
                expected: format!("{:?}", kernel.params),
                got: format!("{kinds:?}"),
            });
        }
        let slots: Vec<u64> = args
            .iter()
            .map(|a| match *a {
                Arg::Buffer(mem) => mem.addr(),
                Arg::U32(v) => v as u64,
                Arg::U64(v) => v,
                Arg::F32(v) => v.to_bits() as u64,
            })
            .collect();
        let buffers: Vec<GlobalBuffer> = args
            .iter()
            .zip(kernel.param_names)
            .filter_map(|(a, &name)| match *a {
                Arg::Buffer(mem) => Some(mem.global(name)),
                _ => None,
            })
            .collect();
        let launch = self.launches.fetch_add(1, Ordering::Relaxed);
        let seed = crate::rng::SplitMix64::new(self.schedule.seed ^ launch.rotate_left(32)).next_u64();
        let skip = self.skip_first.as_deref() == Some(kernel.name);
        let ran = match self.schedule.mode {
            CpuSchedule::Fast => fast::execute_fast(kernel, dims, &slots, &buffers, seed, skip),
            CpuSchedule::Stress => execute::execute(kernel, dims, &slots, &buffers, self.schedule, seed, skip),
        };
        ran.map_err(|f| Error::KernelFault {
            backend: BackendKind::Cpu,
            kernel: f.kernel.into(),
            workgroup: f.workgroup,
            thread: f.thread,
            detail: format!(
                "{f} (CPU schedule: {}, seed {}, launch {launch})",
                self.schedule.mode.name(),
                self.schedule.seed
            ),
            fault: Some(Box::new(f.kind)),
        })
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }

    fn time_ms(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
        let started = Instant::now();
        work()?;
        Ok(started.elapsed().as_secs_f64() * 1e3)
    }

    fn timer_name(&self) -> &'static str {
        "host-wallclock"
    }

    fn small_configs(&self) -> bool {
        !self.gpu_shaped
    }
}

impl RustKernels for CpuBackend {
    fn rust_kernel(&self, name: &str) -> Result<Self::Kernel> {
        self.kernel(name)
    }

    fn rust_variants(&self) -> &'static [Variant] {
        if self.captured.is_some() { &[Variant::LaunchSized, Variant::CudaStatic] } else { &[Variant::LaunchSized] }
    }

    /// Records the twin where this backend captures them (one CUDA would compile: within the
    /// static limit), and refuses it either way.
    fn static_kernel(&self, src: &crate::backend::cuda::nvrtc::CudaSource) -> Result<(Self::Kernel, u32)> {
        if self.captured.is_some() {
            src.check_static_limit(self.info.limits.static_shared_max)?;
        }
        let captured = self.captured.as_ref().map(|c| c.lock().unwrap_or_else(|e| e.into_inner()).push(src.clone()));
        let why = if captured.is_some() { "captured for listing, not run" } else { "cuda-static runs on CUDA only" };
        Err(Error::Unsupported { backend: BackendKind::Cpu, what: format!("{} ({why})", src.name) })
    }
}
