//! CPU backend: the Rust kernels themselves, from the same source as the PTX, run on the
//! host. It catches what a GPU would hide: an access outside a carved array of the region, a
//! carve larger than the launch gave, a device-memory access outside the launch's buffers, a
//! barrier only part of the workgroup reaches; each becomes [`Error::KernelFault`] naming the
//! kernel, workgroup and thread, and nothing hangs.
//!
//! The executor is the crate `dynsmem-cpu` (host/cpu): its two schedules (`fast`, coroutines;
//! `stress`, OS threads and perturbed timing), region poison and fault reports. This backend
//! adds device memory ([`CpuMem`]) behind the [`Backend`] trait, the H100's limits, the
//! schedule named in the device name (records carry it, every fault's message too) and
//! `--cpu-schedule`.
//!
//! Timings are host wall-clock times of this emulation, useful to compare configs on the
//! CPU, not GPU figures. The limits are an H100's (48 KB default, 232448 B opt-in), so a
//! config the H100 refuses is refused here too.

use std::collections::HashMap;
use std::time::Instant;

pub use dynsmem_cpu::{
    AllocError, CpuMem, CpuSchedule, DEFAULT_RESIDENT, DEFAULT_SEED, REGION_POISON, SCHEDULE_ENV, Schedule,
    set_cpu_schedule,
};
use dynsmem_cpu::{Arg as CpuArg, Cpu, LaunchError};
use dynsmem_kernels::KernelEntry;

use super::{
    Arg, Backend, BackendKind, Buffer, DeviceInfo, KernelName, LaunchDims, Limits, RustKernels, TensorSwizzle, Variant,
};
use crate::element::Element;
use crate::error::{Error, Result};

/// The host's memory refused an allocation of `e.requested` bytes.
fn out_of_memory(e: AllocError) -> Error {
    let mem = super::host_memory();
    Error::OutOfMemory {
        backend: BackendKind::Cpu,
        requested: e.requested,
        free: mem.and_then(|m| m.available),
        total: mem.map(|m| m.total),
    }
}

impl KernelName for KernelEntry {
    fn name(&self) -> &str {
        self.name
    }
}

/// The CPU backend. Knows every kernel of `dynsmem_kernels::KERNELS`, plus any tables a
/// test injects with [`CpuBackend::with_kernels`].
pub struct CpuBackend {
    info: DeviceInfo,
    kernels: HashMap<&'static str, &'static KernelEntry>,
    /// The executor: its schedule, and its launches so far (each draws its own order and delays).
    cpu: Cpu,
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
            cpu: Cpu::new(schedule),
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
        self.cpu = Cpu::new(Schedule { mode, ..self.cpu.schedule() });
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
        self.info.name = format!("CPU backend ({cores} hardware threads; {}){shaped}", self.cpu.schedule().describe());
        self.info.driver = match self.cpu.schedule().mode {
            CpuSchedule::Fast => "corosensei coroutines".into(),
            CpuSchedule::Stress => "std::thread".into(),
        };
    }

    /// The schedule its launches run on.
    pub fn schedule(&self) -> Schedule {
        self.cpu.schedule()
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

impl Backend for CpuBackend {
    type Raw = CpuMem;
    type Kernel = &'static KernelEntry;

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn alloc<T: Element>(&self, len: usize) -> Result<Buffer<Self::Raw, T>> {
        Ok(Buffer::from_raw(CpuMem::zeroed(super::byte_len::<T>(&self.info, len)?).map_err(out_of_memory)?, len))
    }

    fn htod<T: Element>(&self, data: &[T]) -> Result<Buffer<Self::Raw, T>> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let mut mem = CpuMem::zeroed(bytes.len()).map_err(out_of_memory)?;
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
        let args: Vec<CpuArg<'_>> = args
            .iter()
            .map(|a| match *a {
                Arg::Buffer(mem) => CpuArg::Mem(mem),
                Arg::U32(v) => CpuArg::U32(v),
                Arg::U64(v) => CpuArg::U64(v),
                Arg::F32(v) => CpuArg::F32(v),
            })
            .collect();
        let skip = self.skip_first.as_deref() == Some(kernel.name);
        self.cpu.launch_with(kernel, dims, &args, skip).map_err(|e| match e {
            LaunchError::ArgumentMismatch { kernel, expected, got } => Error::ArgumentMismatch {
                kernel: kernel.into(),
                expected: format!("{expected:?}"),
                got: format!("{got:?}"),
            },
            LaunchError::Fault { fault, schedule, seed, launch } => Error::KernelFault {
                backend: BackendKind::Cpu,
                kernel: fault.kernel.into(),
                workgroup: fault.workgroup,
                thread: fault.thread,
                detail: format!("{fault} (CPU schedule: {schedule}, seed {seed}, launch {launch})"),
                fault: Some(Box::new(fault.kind)),
            },
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
