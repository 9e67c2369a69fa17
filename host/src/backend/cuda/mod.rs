//! CUDA backend: the Rust kernels' PTX through the CUDA driver (cudarc), with
//! launch-sized shared memory up to the device's opt-in limit.

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
}

impl CudaKernel {
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
            // Thread-block clusters from compute capability 9.0; 8 blocks is the portable size.
            max_cluster: 1,
        };
        let (major, minor) = ctx.compute_capability().map_err(driver_err("cuDeviceGetAttribute"))?;
        let limits = Limits { max_cluster: if major >= 9 { 8 } else { 1 }, ..limits };
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

impl Backend for CudaBackend {
    type Raw = CudaSlice<u8>;
    type Kernel = Rc<CudaKernel>;

    fn device_id(&self) -> Option<String> {
        let u = self.ctx.uuid().ok()?.bytes.map(|b| b as u8);
        let hex = |r: std::ops::Range<usize>| u[r].iter().map(|b| format!("{b:02x}")).collect::<String>();
        Some(format!("GPU-{}-{}-{}-{}-{}", hex(0..4), hex(4..6), hex(6..8), hex(8..10), hex(10..16)))
    }

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn observer(&self) -> Option<&dyn crate::observe::Observer> {
        let nvml = self.observer.get_or_init(|| {
            let uuid = self.device_id()?;
            crate::observe::nvml::NvmlObserver::for_uuid(&uuid).ok().map(Box::new)
        });
        nvml.as_deref().map(|o| o as &dyn crate::observe::Observer)
    }

    fn alloc<T: Element>(&self, len: usize) -> Result<Buffer<Self::Raw, T>> {
        Ok(Buffer::from_raw(self.alloc_bytes(super::byte_len::<T>(&self.info, len)?)?, len))
    }

    fn htod<T: Element>(&self, data: &[T]) -> Result<Buffer<Self::Raw, T>> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let mut raw = self.alloc_bytes(bytes.len())?;
        if !bytes.is_empty() {
            self.stream.memcpy_htod(bytes, &mut raw.slice_mut(0..bytes.len())).map_err(driver_err("cuMemcpyHtoD"))?;
        }
        Ok(Buffer::from_raw(raw, data.len()))
    }

    fn dtoh<T: Element>(&self, buf: &Buffer<Self::Raw, T>) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); buf.len()];
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
        if !bytes.is_empty() {
            let n = bytes.len();
            self.stream.memcpy_dtoh(&buf.raw().slice(0..n), bytes).map_err(driver_err("cuMemcpyDtoH"))?;
        }
        self.synchronize()?;
        Ok(out)
    }

    fn copy<T: Element>(&self, src: &Buffer<Self::Raw, T>, dst: &mut Buffer<Self::Raw, T>) -> Result<()> {
        super::check_copy_lengths("copy", src.len(), dst.len())?;
        let n = src.bytes() as usize;
        self.stream
            .memcpy_dtod(&src.raw().slice(0..n), &mut dst.raw.slice_mut(0..n))
            .map_err(driver_err("cuMemcpyDtoD"))
    }

    fn fill_zero<T: Element>(&self, buf: &Buffer<Self::Raw, T>) -> Result<()> {
        let (ptr, _) = buf.raw().device_ptr(&self.stream);
        // SAFETY: the allocation holds at least `buf.bytes()` bytes; stream-ordered.
        unsafe { cudarc::driver::result::memset_d8_async(ptr, 0, buf.bytes() as usize, self.stream.cu_stream()) }
            .map_err(driver_err("cuMemsetD8Async"))
    }

    fn tensor_map_2d<T: Element>(
        &self,
        buf: &Buffer<Self::Raw, T>,
        elem_bytes: u32,
        dims: [u64; 2],
        row_bytes: u64,
        box_dims: [u32; 2],
        swizzle: TensorSwizzle,
    ) -> Result<Buffer<Self::Raw, u32>> {
        use sys::CUtensorMapDataType as D;
        // The copy engine moves bytes; only the element size matters (zeros past the edges).
        let data_type = match elem_bytes {
            4 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            2 => D::CU_TENSOR_MAP_DATA_TYPE_UINT16,
            _ => {
                return Err(Error::Unsupported {
                    backend: BackendKind::Cuda,
                    what: format!("tensor maps of {elem_bytes}-byte elements"),
                });
            }
        };
        let swizzle_mode = match swizzle {
            TensorSwizzle::None => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
            TensorSwizzle::B128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
        };
        let (ptr, _sync) = buf.raw().device_ptr(&self.stream);
        let mut map = sys::CUtensorMap { opaque: [0; 16] };
        let (strides, element_strides) = ([row_bytes], [1u32, 1]);
        // SAFETY: every array holds `rank` (2) entries, strides `rank - 1`; the map is
        // written in place; the address stays valid while `buf` lives.
        let status = unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                data_type,
                2,
                ptr as *mut std::ffi::c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                box_dims.as_ptr(),
                element_strides.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle_mode,
                sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        if status != sys::CUresult::CUDA_SUCCESS {
            return Err(Error::Driver {
                backend: BackendKind::Cuda,
                call: "cuTensorMapEncodeTiled",
                message: format!(
                    "{status:?} ({elem_bytes}-byte elements, dims {dims:?}, row bytes {row_bytes}, box {box_dims:?}, \
                     {swizzle:?})"
                ),
            });
        }
        let words: &[u32] = bytemuck::cast_slice(&map.opaque);
        self.htod(words)
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
        self.check_launch(&kernel.name, dims)?;
        // A kernel's own ceiling can be below the device's: its registers times the block
        // must fit the register file (`CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES` otherwise).
        let kernel_max = kernel.max_threads.get_or_init(|| {
            let _ = self.ctx.bind_to_thread();
            kernel.func.max_threads_per_block().ok().map(|t| t as u32)
        });
        if let Some(max) = *kernel_max
            && dims.block > max
        {
            let regs = kernel.func.num_regs().map(|r| format!("{r} registers per thread")).unwrap_or_default();
            return Err(Error::KernelBlockLimit {
                kernel: kernel.name.clone(),
                requested: dims.block,
                limit: max,
                why: regs,
            });
        }
        if dims.shared_bytes > kernel.optin_bytes.get() {
            // Above 48 KB the launch fails with CUDA_ERROR_INVALID_VALUE unless the
            // function was opted in first.
            self.ctx.bind_to_thread().map_err(driver_err("cuCtxSetCurrent"))?;
            kernel
                .func
                .set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dims.shared_bytes as i32,
                )
                .map_err(driver_err("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)"))?;
            kernel.optin_bytes.set(dims.shared_bytes);
        }
        self.launch_log.note(&kernel.name, dims, || {
            let f = &kernel.func;
            let blocks = f.occupancy_max_active_blocks_per_multiprocessor(dims.block, dims.shared_bytes as usize, None);
            let config = cudarc::driver::LaunchConfig {
                grid_dim: (dims.grid, 1, 1),
                block_dim: (dims.block, 1, 1),
                shared_mem_bytes: dims.shared_bytes,
            };
            let clusters = if dims.cluster > 1 {
                let geometry = (dims.grid, dims.block, dims.shared_bytes);
                driver::max_active_clusters(f.cu_function(), geometry, dims.cluster, self.stream.cu_stream()).ok()
            } else {
                f.occupancy_max_active_clusters(config, &self.stream).ok()
            };
            (blocks.ok(), clusters)
        });
        // Every argument gets an 8-byte slot; the driver reads each parameter's size
        // from the kernel's signature, so a u32 in the low half of a slot is right on
        // this little-endian ABI.
        let mut slots: Vec<u64> = Vec::with_capacity(args.len());
        for a in args {
            slots.push(match *a {
                Arg::Buffer(raw) => raw.device_ptr(&self.stream).0,
                Arg::U32(v) => v as u64,
                Arg::U64(v) => v,
                Arg::F32(v) => v.to_bits() as u64,
            });
        }
        let mut params: Vec<*mut c_void> = slots.iter_mut().map(|s| s as *mut u64 as *mut c_void).collect();
        // SAFETY: the function belongs to this context; `params` matches the kernel's
        // signature (the family launchers pass the documented arguments in order), and
        // the buffers outlive the launch because the caller holds them until sync.
        if dims.cluster > 1 {
            let geometry = (dims.grid, dims.block, dims.shared_bytes);
            // SAFETY: as below; `check_launch` checked the cluster against the device.
            return unsafe {
                driver::launch_clustered(
                    kernel.func.cu_function(),
                    geometry,
                    dims.cluster,
                    self.stream.cu_stream(),
                    &mut params,
                )
            };
        }
        unsafe {
            cudarc::driver::result::launch_kernel(
                kernel.func.cu_function(),
                (dims.grid, 1, 1),
                (dims.block, 1, 1),
                dims.shared_bytes,
                self.stream.cu_stream(),
                &mut params,
            )
        }
        .map_err(driver_err("cuLaunchKernel"))
    }

    fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(driver_err("cuStreamSynchronize"))
    }

    fn time_ms(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
        let (start, end) = &self.timer;
        start.record(&self.stream).map_err(driver_err("cuEventRecord"))?;
        work()?;
        end.record(&self.stream).map_err(driver_err("cuEventRecord"))?;
        end.synchronize().map_err(driver_err("cuEventSynchronize"))?;
        Ok(start.elapsed_ms(end).map_err(driver_err("cuEventElapsedTime"))? as f64)
    }

    fn time_runs(&self, runs: u32, work: &mut dyn FnMut() -> Result<()>) -> Result<Vec<f64>> {
        // An event before and after each run, all queued; one wait at the end.
        let event =
            || self.ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(driver_err("cuEventCreate"));
        let mut marks = Vec::with_capacity(runs as usize);
        for _ in 0..runs {
            let (start, end) = (event()?, event()?);
            start.record(&self.stream).map_err(driver_err("cuEventRecord"))?;
            work()?;
            end.record(&self.stream).map_err(driver_err("cuEventRecord"))?;
            marks.push((start, end));
        }
        self.stream.synchronize().map_err(driver_err("cuStreamSynchronize"))?;
        marks
            .iter()
            .map(|(start, end)| Ok(start.elapsed_ms(end).map_err(driver_err("cuEventElapsedTime"))? as f64))
            .collect()
    }

    fn timer_name(&self) -> &'static str {
        "cuda-events"
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
