//! CPU backend: the Rust kernels themselves, from the same source as the PTX, run on the
//! host. Each launch runs its workgroups one after another; each workgroup runs its
//! `block` threads as OS threads sharing one launch-sized region, and `gpu::barrier()` is a
//! real barrier across them ([`sync`]). It catches what a GPU would hide: an access outside
//! a carved array of the region, a carve larger than the launch gave, a barrier only part
//! of the workgroup reaches; each becomes [`Error::KernelFault`] naming the kernel,
//! workgroup and thread, and nothing hangs.
//!
//! Timings are host wall-clock times of this emulation, useful to compare configs on the
//! CPU, not GPU figures. The limits are an H100's (48 KB default, 232448 B opt-in), so a
//! config the H100 refuses is refused here too.

mod sync;

use std::alloc::Layout;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use dynsmem_kernels::gpu::host::{Fault, FaultKind, ThreadContext, with_context};
use dynsmem_kernels::{KernelEntry, ParamKind};

use self::sync::WorkgroupSync;
use super::{Arg, Backend, BackendKind, Buffer, DeviceInfo, KernelName, LaunchDims, Limits, RustKernels};
use crate::element::Element;
use crate::error::{Error, Result};

/// Host memory standing in for device memory: 16-byte aligned, zero-filled, rounded up to
/// 16 bytes so 16-byte vector loads of a tail stay inside it.
pub struct CpuMem {
    ptr: NonNull<u8>,
    layout: Layout,
}

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
        let size = bytes.max(1).checked_next_multiple_of(16).ok_or_else(|| oom(bytes as u64))?;
        let layout = Layout::from_size_align(size, 16).map_err(|_| oom(bytes as u64))?;
        // SAFETY: non-zero size.
        let ptr = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }).ok_or_else(|| oom(size as u64))?;
        Ok(CpuMem { ptr, layout })
    }

    fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: owned, initialised (zeroed) memory of this size.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for CpuMem {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
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
}

impl Default for CpuBackend {
    fn default() -> Self {
        CpuBackend::new()
    }
}

/// Stack of each kernel thread: kernels keep a few registers' worth of locals.
const THREAD_STACK: usize = 256 * 1024;

impl CpuBackend {
    pub fn new() -> CpuBackend {
        CpuBackend::with_kernels(&[])
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
        CpuBackend {
            info: DeviceInfo {
                backend: BackendKind::Cpu,
                name: format!("CPU backend ({cores} hardware threads; one OS thread per kernel thread)"),
                driver: "std::thread".into(),
                api: "Rust kernels on the host, H100 limits".into(),
                is_cpu: true,
                limits: Limits {
                    max_threads_per_block: 1024,
                    max_grid_x: i32::MAX as u64,
                    launch_shared_default: 49_152,
                    launch_shared_max: 232_448,
                    static_shared_max: 49_152,
                    shared_per_multiprocessor: None,
                    multiprocessors: Some(cores),
                    max_buffer_bytes: u64::MAX,
                    // The host's memory is the device's: an allocation past it is refused
                    // (`OutOfMemory`) instead of being overcommitted and killed later.
                    memory_bytes: super::host_memory().map(|m| m.total),
                },
            },
            kernels,
        }
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

/// Runs one launch: workgroup after workgroup, `dims.block` threads each.
fn execute(entry: &'static KernelEntry, dims: LaunchDims, slots: &[u64]) -> std::result::Result<(), Fault> {
    let region = CpuMem::zeroed(dims.shared_bytes as usize).map_err(|e| Fault {
        kernel: entry.name,
        workgroup: 0,
        thread: 0,
        kind: FaultKind::Panic(e.to_string()),
    })?;
    let region_addr = region.addr() as usize;
    let sync = WorkgroupSync::new(dims.block);
    let between = std::sync::Barrier::new(dims.block as usize);
    let stop = AtomicBool::new(false);
    let first: Mutex<Option<Fault>> = Mutex::new(None);
    // Threads start only once all of them exist: if one cannot be created, the others
    // must not wait for it at a barrier.
    let gate: (Mutex<Option<bool>>, Condvar) = (Mutex::new(None), Condvar::new());

    std::thread::scope(|scope| {
        for thread in 0..dims.block {
            let (sync, between, stop, first, gate) = (&sync, &between, &stop, &first, &gate);
            let spawned = std::thread::Builder::new().stack_size(THREAD_STACK).spawn_scoped(scope, move || {
                let mut open = gate.0.lock().unwrap_or_else(|p| p.into_inner());
                while open.is_none() {
                    open = gate.1.wait(open).unwrap_or_else(|p| p.into_inner());
                }
                if *open == Some(false) {
                    return;
                }
                drop(open);
                for workgroup in 0..dims.grid {
                    let ctx = ThreadContext {
                        kernel: entry.name,
                        workgroup,
                        thread,
                        block_dim: dims.block,
                        grid_dim: dims.grid,
                        region: region_addr as *mut u8,
                        region_bytes: dims.shared_bytes,
                        sync,
                    };
                    let ran = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        with_context(&ctx, || {
                            // SAFETY: `slots` were checked against the kernel's parameters.
                            unsafe { (entry.run)(slots) };
                            sync.exit(thread);
                        })
                    }));
                    if let Err(payload) = ran {
                        let fault = match payload.downcast::<Fault>() {
                            Ok(f) => *f,
                            Err(other) => {
                                let msg = other
                                    .downcast_ref::<&str>()
                                    .map(|s| s.to_string())
                                    .or_else(|| other.downcast_ref::<String>().cloned())
                                    .unwrap_or_else(|| "non-string panic payload".into());
                                Fault { kernel: entry.name, workgroup, thread, kind: FaultKind::Panic(msg) }
                            }
                        };
                        let mut slot = first.lock().unwrap_or_else(|p| p.into_inner());
                        if slot.as_ref().is_none_or(|f| f.kind == FaultKind::Aborted) {
                            *slot = Some(fault);
                        }
                        drop(slot);
                        stop.store(true, Ordering::SeqCst);
                        sync.poison();
                    }
                    between.wait();
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if thread == 0 {
                        sync.reset();
                    }
                    between.wait();
                }
            });
            if let Err(e) = spawned {
                *first.lock().unwrap_or_else(|p| p.into_inner()) = Some(Fault {
                    kernel: entry.name,
                    workgroup: 0,
                    thread,
                    kind: FaultKind::Panic(format!("could not start kernel thread {thread}: {e}")),
                });
                break;
            }
        }
        let started = first.lock().unwrap_or_else(|p| p.into_inner()).is_none();
        *gate.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(started);
        gate.1.notify_all();
    });
    drop(region);
    match first.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

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
        unsafe { std::ptr::write_bytes(buf.raw().ptr.as_ptr(), 0, buf.bytes() as usize) };
        Ok(())
    }

    fn launch(&self, kernel: &Self::Kernel, dims: LaunchDims, args: &[Arg<'_, Self::Raw>]) -> Result<()> {
        self.check_launch(kernel.name, dims)?;
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
        execute(kernel, dims, &slots).map_err(|f| Error::KernelFault {
            backend: BackendKind::Cpu,
            kernel: f.kernel.into(),
            workgroup: f.workgroup,
            thread: f.thread,
            detail: f.to_string(),
            fault: Some(f.kind),
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
}

impl RustKernels for CpuBackend {
    fn rust_kernel(&self, name: &str) -> Result<Self::Kernel> {
        self.kernel(name)
    }
}
