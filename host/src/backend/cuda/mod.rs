//! CUDA backend: the Rust kernels' PTX through the CUDA driver (cudarc), with
//! launch-sized shared memory up to the device's opt-in limit.

mod backend;
pub(crate) mod driver;
pub mod nvrtc;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::c_void;
use std::rc::Rc;
use std::sync::Arc;

use cudarc::driver::sys::{CUdevice_attribute as Attr, CUfunction_attribute};
use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, sys};
use cudarc::nvrtc::Ptx;

use self::driver::{attribute, driver_err};
use self::nvrtc::CudaSource;
use super::{
    Arg, Backend, BackendKind, Buffer, DeviceInfo, KernelName, LaunchDims, Limits, Probe, RustKernels, TensorSwizzle,
};
use crate::element::Element;
use crate::error::{Error, Result};

/// Allocations are rounded up to this many bytes, so an empty buffer still has a valid
/// pointer and 16-byte vector loads of a tail stay inside the allocation.
const ALLOC_GRANULE: usize = 16;

/// A kernel of the loaded PTX module.
pub struct CudaKernel {
    name: String,
    func: CudaFunction,
    /// The `MAX_DYNAMIC_SHARED_SIZE_BYTES` currently set on the function.
    optin_bytes: Cell<u32>,
    /// The function's `MAX_THREADS_PER_BLOCK` (its registers decide it), asked once.
    max_threads: std::cell::OnceCell<Option<u32>>,
    /// Whether the function was opted in to clusters past the portable 8 blocks.
    nonportable: Cell<bool>,
}

/// The largest cluster a function runs without opting in.
pub const PORTABLE_CLUSTER: u32 = 8;

impl CudaKernel {
    /// Opts the function in to clusters past [`PORTABLE_CLUSTER`] blocks
    /// (`CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`) where `cluster` is past it;
    /// the context is current.
    fn allow_cluster(&self, cluster: u32) -> Result<()> {
        if cluster > PORTABLE_CLUSTER && !self.nonportable.get() {
            self.func
                .set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
                .map_err(driver_err("cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)"))?;
            self.nonportable.set(true);
        }
        Ok(())
    }
    /// Bytes of static `__shared__` arrays the loaded function declares, as the driver
    /// reports them (`CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`; 0 for the Rust kernels).
    pub fn static_shared_bytes(&self) -> Result<u32> {
        Ok(self.func.shared_size_bytes().map_err(driver_err("cuFuncGetAttribute(SHARED_SIZE_BYTES)"))? as u32)
    }
}

impl KernelName for CudaKernel {
    fn name(&self) -> &str {
        &self.name
    }
}

/// One CUDA device, one stream, one loaded PTX image.
pub struct CudaBackend {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
    /// Further images (a researcher's kernel crate, [`CudaBackend::with_module`]), searched
    /// after `module` in order.
    more_modules: Vec<Arc<CudaModule>>,
    info: DeviceInfo,
    kernels: RefCell<HashMap<String, Rc<CudaKernel>>>,
    /// The cuda-static kernels compiled so far, by (entry, source, defines): a bench or a
    /// sweep compiles each config once.
    static_kernels: RefCell<HashMap<StaticKey, Rc<CudaKernel>>>,
    /// Compute capability (major, minor): NVRTC compiles for exactly this device.
    capability: (i32, i32),
    /// Cubins of CUDA C twins compiled ahead of time (nvcc, at build time), used instead of
    /// NVRTC where one's key matches ([`CudaBackend::with_twin_cubins`]).
    twin_cubins: TwinCubins,
    /// The loaded image's PTX target (its `.target` line, e.g. `sm_90a`).
    ptx_target: String,
    timer: (CudaEvent, CudaEvent),
    /// NVML for this GPU, opened at the first measurement (`None` inside: no NVML).
    observer: std::cell::OnceCell<Option<Box<crate::observe::nvml::NvmlObserver>>>,
    /// Padding of every launch's shared bytes, and the launches seen meanwhile.
    launch_log: super::LaunchLog,
}

/// The first word of a PTX module's `.target` directive (`sm_90a` of `.target sm_90a`).
fn ptx_target(ptx: &str) -> String {
    ptx.lines()
        .find_map(|l| l.trim().strip_prefix(".target"))
        .and_then(|t| t.split([',', ' ']).find(|w| !w.is_empty()))
        .unwrap_or("unknown")
        .to_string()
}

type StaticKey = (&'static str, &'static str, Vec<(&'static str, String)>);

/// CUDA C twins compiled ahead of time, as `dynsmem_build::twins` embeds them:
/// `(key, arch, name, cubin)`.
pub type TwinCubins = &'static [(u64, &'static str, &'static str, &'static [u8])];

/// Set to `nvcc`, the cuda-static kernels run the embedded cubins nvcc built of them (where
/// one was built for the twin: the bench's twins on an H100), else NVRTC compiles them at run
/// time as by default. Opt-in, not the default where cubins exist: nvcc and NVRTC of one
/// toolkit version make different code of the same source and options (nvcc's PTX addresses
/// shared memory with 32-bit pointers, NVRTC's with 64-bit), so the default would make the
/// cuda-static figures depend on whether the building machine had nvcc (see the twins'
/// notes in `docs/backends.md`).
pub const TWIN_COMPILER_ENV: &str = "DYNSMEM_TWIN_COMPILER";

impl CudaBackend {
    /// Finds device `ordinal` and loads `ptx` on it; a missing driver or device is
    /// [`Probe::Unavailable`] with the reason, never a panic.
    /// Whether the driver is installed and reports at least one device: where it does, a
    /// backend that cannot be created is a failure, not an absence (tests skip only without).
    pub fn device_present() -> bool {
        driver::library_present()
            && std::panic::catch_unwind(driver::device_count).is_ok_and(|count| count.is_ok_and(|n| n > 0))
    }

    pub fn probe(ordinal: usize, ptx: &str) -> Probe<CudaBackend> {
        if !driver::library_present() {
            return Probe::Unavailable(
                BackendKind::Cuda,
                "libcuda.so not found (no NVIDIA driver on this machine)".into(),
            );
        }
        // cudarc panics when a driver symbol it expects is missing (an older driver):
        // turn that into a reason too.
        let attempt = std::panic::catch_unwind(|| -> Result<CudaBackend> {
            let count = driver::device_count()?;
            if ordinal >= count {
                return Err(Error::Unavailable {
                    backend: BackendKind::Cuda,
                    reason: if count == 0 {
                        "the driver reports no CUDA device".into()
                    } else {
                        format!("device {ordinal} asked for, {count} present")
                    },
                });
            }
            CudaBackend::new(ordinal, ptx)
        });
        match attempt {
            Ok(Ok(b)) => Probe::Ready(b),
            Ok(Err(e)) => Probe::Unavailable(BackendKind::Cuda, e.to_string()),
            Err(_) => Probe::Unavailable(
                BackendKind::Cuda,
                "the CUDA driver is too old for this build (a driver call is missing)".into(),
            ),
        }
    }

    /// Opens device `ordinal` and loads `ptx`. Prefer [`CudaBackend::probe`] where the
    /// machine may have no driver.
    pub fn new(ordinal: usize, ptx: &str) -> Result<CudaBackend> {
        if !driver::library_present() {
            return Err(Error::Unavailable { backend: BackendKind::Cuda, reason: "libcuda.so not found".into() });
        }
        let ctx = CudaContext::new(ordinal).map_err(driver_err("cuCtxCreate"))?;
        // One stream, used in order: cudarc's per-buffer event tracking buys nothing here
        // and would put event records between timed launches.
        // SAFETY: all work goes to `stream`, so stream order is the only order needed.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let module = ctx.load_module(Ptx::from_src(ptx)).map_err(driver_err("cuModuleLoadData"))?;

        let limits = Limits {
            max_threads_per_block: attribute(&ctx, Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as u32,
            max_grid_x: attribute(&ctx, Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)? as u64,
            launch_shared_default: attribute(&ctx, Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)? as u32,
            launch_shared_max: attribute(&ctx, Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as u32,
            static_shared_max: attribute(&ctx, Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)? as u32,
            shared_per_multiprocessor: Some(attribute(
                &ctx,
                Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            )? as u32),
            multiprocessors: Some(attribute(&ctx, Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32),
            max_buffer_bytes: u64::MAX,
            memory_bytes: Some(ctx.total_mem().map_err(driver_err("cuDeviceTotalMem"))? as u64),
            // Thread-block clusters from compute capability 9.0: 8 blocks is the portable
            // size, 16 the most a function opted in ([`PORTABLE_CLUSTER`]) may ask for.
            max_cluster: 1,
        };
        let (major, minor) = ctx.compute_capability().map_err(driver_err("cuDeviceGetAttribute"))?;
        let limits = Limits { max_cluster: if major >= 9 { 16 } else { 1 }, ..limits };
        let api = driver::api_version();
        let info = DeviceInfo {
            backend: BackendKind::Cuda,
            name: ctx.name().map_err(driver_err("cuDeviceGetName"))?,
            driver: driver::kernel_driver_version().unwrap_or_else(|| api.clone()),
            api: format!("{api}, sm_{major}{minor}"),
            is_cpu: false,
            limits,
        };
        let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let timer = (
            ctx.new_event(timing).map_err(driver_err("cuEventCreate"))?,
            ctx.new_event(timing).map_err(driver_err("cuEventCreate"))?,
        );
        Ok(CudaBackend {
            ctx,
            stream,
            module,
            more_modules: Vec::new(),
            info,
            kernels: RefCell::new(HashMap::new()),
            static_kernels: RefCell::new(HashMap::new()),
            capability: (major, minor),
            twin_cubins: &[],
            ptx_target: ptx_target(ptx),
            timer,
            observer: std::cell::OnceCell::new(),
            launch_log: Default::default(),
        })
    }

    /// Holds `cubins` (nvcc's builds of CUDA C twins, `dynsmem_build::twins`) for the
    /// cuda-static kernels whose program, architecture and options they were built from,
    /// used under `DYNSMEM_TWIN_COMPILER=nvcc` ([`TWIN_COMPILER_ENV`]); any other twin is
    /// compiled by NVRTC.
    pub fn with_twin_cubins(mut self, cubins: TwinCubins) -> CudaBackend {
        self.twin_cubins = cubins;
        self
    }

    /// The embedded cubin of `src` for this device, where nvcc's builds are asked for.
    fn twin_cubin(&self, src: &CudaSource) -> Option<&'static [u8]> {
        if !std::env::var(TWIN_COMPILER_ENV).is_ok_and(|v| v == "nvcc") || self.twin_cubins.is_empty() {
            return None;
        }
        let arch = nvrtc::arch(self.capability.0, self.capability.1);
        let key = nvrtc::twin_key(src, &arch);
        self.twin_cubins.iter().find(|(k, a, ..)| *k == key && *a == arch).map(|(.., cubin)| *cubin)
    }

    /// Loads `ptx` (another kernel crate's image, built for the same device) beside the
    /// first: its entries are found after the first image's.
    pub fn with_module(mut self, ptx: &str) -> Result<CudaBackend> {
        self.ctx.bind_to_thread().map_err(driver_err("cuCtxSetCurrent"))?;
        let module = self.ctx.load_module(Ptx::from_src(ptx)).map_err(driver_err("cuModuleLoadData"))?;
        self.more_modules.push(module);
        Ok(self)
    }

    /// Compute capability (major, minor) of the device.
    pub fn capability(&self) -> (i32, i32) {
        self.capability
    }

    /// The PTX target of the loaded image (`sm_90a`, `sm_80`, ...): which instructions its
    /// entries were compiled with (`wgmma` only under `sm_90a`).
    pub fn ptx_target(&self) -> &str {
        &self.ptx_target
    }

    /// Whether this device runs the image's `wgmma` entries: compute capability 9.0 and an
    /// `sm_90a` image (`wgmma` and `setmaxnreg` exist only there).
    pub fn runs_wgmma(&self) -> bool {
        self.capability == (9, 0) && self.ptx_target == "sm_90a"
    }

    /// Why the `wgmma` kernel `entry` cannot run here (device and image named), or `None`.
    pub fn wgmma_refusal(&self, entry: &str) -> Option<String> {
        let (major, minor) = self.capability;
        (!self.runs_wgmma()).then(|| {
            format!(
                "{entry}: wgmma needs compute capability 9.0 and an sm_90a image (device sm_{major}{minor}, image {}; \
                 build with DYNSMEM_CUDA_ARCH=sm_90a)",
                self.ptx_target
            )
        })
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Registers per thread and local (spill) bytes per thread of kernel `name`, as ptxas
    /// compiled it for this device (`CU_FUNC_ATTRIBUTE_NUM_REGS`, `LOCAL_SIZE_BYTES`).
    pub fn kernel_resources(&self, name: &str) -> Result<(u32, u32)> {
        let k = self.kernel(name)?;
        self.ctx.bind_to_thread().map_err(driver_err("cuCtxSetCurrent"))?;
        let regs = k.func.num_regs().map_err(driver_err("cuFuncGetAttribute"))?;
        let local = k.func.local_size_bytes().map_err(driver_err("cuFuncGetAttribute"))?;
        Ok((regs as u32, local as u32))
    }

    /// The kernel `name` of the loaded image (cached).
    pub fn kernel(&self, name: &str) -> Result<Rc<CudaKernel>> {
        if let Some(k) = self.kernels.borrow().get(name) {
            return Ok(k.clone());
        }
        // Only "not found" means the image lacks it; any other error is the driver's (a
        // context left unusable by an earlier launch's fault says so here).
        let mut found = Err(Error::MissingKernel {
            name: name.into(),
            backend: BackendKind::Cuda,
            detail: format!("in none of the {} loaded images", 1 + self.more_modules.len()),
        });
        for module in std::iter::once(&self.module).chain(&self.more_modules) {
            match module.load_function(name) {
                Ok(f) => {
                    found = Ok(f);
                    break;
                }
                Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NOT_FOUND => {}
                Err(e) => return Err(driver_err("cuModuleGetFunction")(e)),
            }
        }
        let func = found?;
        let k = Rc::new(CudaKernel {
            name: name.into(),
            func,
            optin_bytes: Cell::new(self.info.limits.launch_shared_default),
            nonportable: Cell::new(false),
            max_threads: std::cell::OnceCell::new(),
        });
        self.kernels.borrow_mut().insert(name.into(), k.clone());
        Ok(k)
    }

    /// The cuda-static kernel `src` (its embedded nvcc cubin under
    /// `DYNSMEM_TWIN_COMPILER=nvcc`, else compiled through NVRTC for this device; loaded as a module of its own on first use,
    /// cached after): refused before compiling when its
    /// static arrays are over the static limit (48 KB per block: static `__shared__` arrays
    /// cannot opt in to more, only launch-sized memory can).
    pub fn nvrtc_kernel(&self, src: &CudaSource) -> Result<Rc<CudaKernel>> {
        src.check_static_limit(self.info.limits.static_shared_max)?;
        let key: StaticKey = (src.entry, src.source, src.defines.clone());
        if let Some(k) = self.static_kernels.borrow().get(&key) {
            return Ok(k.clone());
        }
        let (major, minor) = self.capability;
        // An embedded cubin is the same program, options and architecture built by nvcc;
        // records tell the two apart by the kernel's name.
        let (image, what, name) = match self.twin_cubin(src) {
            Some(cubin) => (Ptx::from_binary(cubin.to_vec()), "nvcc cubin", format!("{} (nvcc)", src.name)),
            None => (nvrtc::compile(src, major, minor)?, "NVRTC output", src.name.clone()),
        };
        let module = self.ctx.load_module(image).map_err(driver_err("cuModuleLoadData (cuda-static twin)"))?;
        let func = module.load_function(src.entry).map_err(|e| Error::MissingKernel {
            name: src.entry.into(),
            backend: BackendKind::Cuda,
            detail: format!("{} ({what} of {}): {e}", src.name, src.file),
        })?;
        let k = Rc::new(CudaKernel {
            name,
            func,
            optin_bytes: Cell::new(self.info.limits.launch_shared_default),
            nonportable: Cell::new(false),
            max_threads: std::cell::OnceCell::new(),
        });
        self.static_kernels.borrow_mut().insert(key, k.clone());
        Ok(k)
    }

    fn alloc_bytes(&self, bytes: usize) -> Result<CudaSlice<u8>> {
        let padded = bytes.max(1).checked_next_multiple_of(ALLOC_GRANULE).ok_or(Error::OutOfMemory {
            backend: BackendKind::Cuda,
            requested: bytes as u64,
            free: None,
            total: self.info.limits.memory_bytes,
        })?;
        self.stream.alloc_zeros::<u8>(padded).map_err(|e| self.alloc_error(e, padded))
    }

    fn alloc_error(&self, e: cudarc::driver::DriverError, bytes: usize) -> Error {
        if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            let mem = self.ctx.mem_get_info().ok();
            Error::OutOfMemory {
                backend: BackendKind::Cuda,
                requested: bytes as u64,
                free: mem.map(|(free, _)| free as u64),
                total: mem.map(|(_, total)| total as u64).or(self.info.limits.memory_bytes),
            }
        } else {
            driver_err("cuMemAlloc")(e)
        }
    }
}

impl RustKernels for CudaBackend {
    fn rust_kernel(&self, name: &str) -> Result<Self::Kernel> {
        self.kernel(name)
    }

    fn max_active_clusters(&self, kernel: &Self::Kernel, block: u32, shared_bytes: u32, cluster: u32) -> Option<u32> {
        self.ctx.bind_to_thread().ok()?;
        if shared_bytes > kernel.optin_bytes.get() {
            // The driver counts a function past 48 KB only once it is opted in, as a launch does.
            kernel
                .func
                .set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared_bytes as i32,
                )
                .ok()?;
            kernel.optin_bytes.set(shared_bytes);
        }
        kernel.allow_cluster(cluster).ok()?;
        let geometry = (cluster, block, shared_bytes);
        driver::max_active_clusters(kernel.func.cu_function(), geometry, cluster, self.stream.cu_stream()).ok()
    }

    fn rust_variants(&self) -> &'static [crate::backend::Variant] {
        &[crate::backend::Variant::LaunchSized, crate::backend::Variant::CudaStatic]
    }

    fn static_kernel(&self, src: &CudaSource) -> Result<(Self::Kernel, u32)> {
        let k = self.nvrtc_kernel(src)?;
        self.ctx.bind_to_thread().map_err(driver_err("cuCtxSetCurrent"))?;
        let bytes = k.static_shared_bytes()?;
        Ok((k, bytes))
    }
}
