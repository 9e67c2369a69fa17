//! HIP backend: the Rust kernels' HSA code objects through the HIP runtime on AMD GPUs,
//! with launch-sized LDS (`sharedMemBytes`) per launch.
//!
//! Layers as on CUDA: the runtime's symbols ([`ffi`], `libloading`), thin `Result`
//! wrappers (`HipApi::check`), and this safe [`Backend`]. Arguments are packed into one
//! kernarg buffer at the offsets of [`dynsmem_kernels::kernarg_layout`] (the layout CI
//! checks against every code object's metadata) and passed with `HIP_LAUNCH_PARAM_*`.
//!
//! Not yet run on AMD hardware (no AMD GPU has been available to this project): it is
//! built and type-checked in CI, and `dynsmem devices` reports why it is unavailable.

pub mod code_object;
mod ffi;
pub mod occupancy;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{CString, c_char, c_int, c_void};
use std::rc::Rc;
use std::sync::Arc;

use dynsmem_kernels::{KernelEntry, ParamKind, kernarg_layout, kernarg_size};

use self::ffi::{HipApi, attr};
use super::{Arg, Backend, BackendKind, Buffer, DeviceInfo, KernelName, LaunchDims, Limits, Probe, RustKernels};
use crate::element::Element;
use crate::error::{Error, Result};

/// Device memory from `hipMalloc`, freed on drop.
pub struct HipMem {
    ptr: ffi::DevicePtr,
    api: Arc<HipApi>,
}

impl Drop for HipMem {
    fn drop(&mut self) {
        // SAFETY: allocated by hipMalloc of this runtime; freed once.
        unsafe { (self.api.hipFree)(self.ptr) };
    }
}

/// A kernel of the loaded code object.
pub struct HipKernel {
    entry: &'static KernelEntry,
    func: ffi::Function,
    optin_bytes: Cell<u32>,
}

impl KernelName for HipKernel {
    fn name(&self) -> &str {
        self.entry.name
    }
}

/// One AMD GPU through the HIP runtime, with the code object for its `gfx` target loaded.
pub struct HipBackend {
    api: Arc<HipApi>,
    module: ffi::Module,
    /// The `gfx` target of the loaded code object.
    pub arch: String,
    info: DeviceInfo,
    kernels: RefCell<HashMap<String, Rc<HipKernel>>>,
    timer: (ffi::Event, ffi::Event),
    ordinal: usize,
    /// AMD SMI for this GPU, opened at the first measurement (`None` inside: none). AMD
    /// SMI numbers every GPU, so under `HIP_VISIBLE_DEVICES` it may name another one.
    observer: std::cell::OnceCell<Option<Box<crate::observe::amdsmi::AmdSmiObserver>>>,
}

/// Allocations are rounded up to this, as on CUDA.
const ALLOC_GRANULE: usize = 16;

impl HipBackend {
    /// Finds GPU `ordinal` and loads the first of `images` (`(gfx arch, code object)`) the
    /// runtime accepts for it; a missing runtime or device is [`Probe::Unavailable`].
    pub fn probe(ordinal: usize, images: &[(&str, &[u8])]) -> Probe<HipBackend> {
        match HipBackend::new(ordinal, images) {
            Ok(b) => Probe::Ready(b),
            Err(Error::Unavailable { reason, .. }) => Probe::Unavailable(BackendKind::Hip, reason),
            Err(e) => Probe::Unavailable(BackendKind::Hip, e.to_string()),
        }
    }

    pub fn new(ordinal: usize, images: &[(&str, &[u8])]) -> Result<HipBackend> {
        let unavailable = |reason: String| Error::Unavailable { backend: BackendKind::Hip, reason };
        let api = Arc::new(HipApi::load().map_err(unavailable)?);
        // SAFETY: plain runtime calls with valid out-pointers.
        unsafe {
            let init = (api.hipInit)(0);
            if init == ffi::HIP_ERROR_NO_DEVICE {
                return Err(unavailable("the HIP runtime reports no AMD GPU".into()));
            }
            api.check(init, "hipInit")?;
            let mut count = 0;
            api.check((api.hipGetDeviceCount)(&mut count), "hipGetDeviceCount")?;
            if ordinal >= count as usize {
                return Err(unavailable(format!("device {ordinal} asked for, {count} present")));
            }
            api.check((api.hipSetDevice)(ordinal as c_int), "hipSetDevice")?;
        }
        let dev = ordinal as c_int;

        // Load the first code object the runtime accepts: a code object for another gfx
        // target is refused (hipErrorNoBinaryForGpu), so this finds the device's arch
        // without parsing the versioned hipDeviceProp_t.
        let mut module: ffi::Module = std::ptr::null_mut();
        let mut arch = None;
        let mut refused = Vec::new();
        for (a, image) in images {
            // SAFETY: `image` is a complete HSA code object (ELF) embedded by build.rs.
            let code = unsafe { (api.hipModuleLoadData)(&mut module, image.as_ptr().cast()) };
            match api.check(code, "hipModuleLoadData") {
                Ok(()) => {
                    arch = Some(a.to_string());
                    break;
                }
                Err(e) => refused.push(format!("{a}: {e}")),
            }
        }
        let Some(arch) = arch else {
            return Err(unavailable(format!(
                "no embedded code object loads on this GPU (rebuild with DYNSMEM_AMDGPU_ARCH=<its gfx target>): {}",
                refused.join("; ")
            )));
        };

        let mut name = [0 as c_char; 256];
        // SAFETY: writes at most 256 bytes including the terminator.
        api.check(unsafe { (api.hipDeviceGetName)(name.as_mut_ptr(), 256, dev) }, "hipDeviceGetName")?;
        // SAFETY: NUL-terminated by hipDeviceGetName.
        let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        let (mut runtime, mut driver) = (0, 0);
        // SAFETY: write one int each.
        unsafe {
            api.check((api.hipRuntimeGetVersion)(&mut runtime), "hipRuntimeGetVersion")?;
            api.check((api.hipDriverGetVersion)(&mut driver), "hipDriverGetVersion")?;
        }
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: write two size_t.
        api.check(unsafe { (api.hipMemGetInfo)(&mut free, &mut total) }, "hipMemGetInfo")?;
        let shared_default = api.attribute(attr::MAX_SHARED_MEMORY_PER_BLOCK, dev)? as u32;
        let shared_optin = (api.attribute(attr::SHARED_MEM_PER_BLOCK_OPTIN, dev)? as u32).max(shared_default);
        let wave = api.attribute(attr::WARP_SIZE, dev)?;
        let info = DeviceInfo {
            backend: BackendKind::Hip,
            name,
            driver: format!("HIP driver {driver}"),
            api: format!("HIP runtime {runtime}, code object {arch}, wavefront {wave}"),
            is_cpu: false,
            limits: Limits {
                max_threads_per_block: api.attribute(attr::MAX_THREADS_PER_BLOCK, dev)? as u32,
                max_grid_x: api.attribute(attr::MAX_GRID_DIM_X, dev)? as u64,
                launch_shared_default: shared_default,
                launch_shared_max: shared_optin,
                static_shared_max: shared_default,
                shared_per_multiprocessor: Some(api.attribute(attr::SHARED_MEM_PER_MULTIPROCESSOR, dev)? as u32),
                multiprocessors: Some(api.attribute(attr::MULTIPROCESSOR_COUNT, dev)? as u32),
                max_buffer_bytes: u64::MAX,
                memory_bytes: Some(total as u64),
                max_cluster: 1,
            },
        };
        let mut timer: (ffi::Event, ffi::Event) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: create two events.
        unsafe {
            api.check((api.hipEventCreate)(&mut timer.0), "hipEventCreate")?;
            api.check((api.hipEventCreate)(&mut timer.1), "hipEventCreate")?;
        }
        Ok(HipBackend {
            api,
            module,
            arch,
            info,
            kernels: RefCell::new(HashMap::new()),
            timer,
            ordinal,
            observer: std::cell::OnceCell::new(),
        })
    }

    /// The kernel `name` of the loaded code object (cached).
    pub fn kernel(&self, name: &str) -> Result<Rc<HipKernel>> {
        if let Some(k) = self.kernels.borrow().get(name) {
            return Ok(k.clone());
        }
        let missing = |detail: String| Error::MissingKernel { name: name.into(), backend: BackendKind::Hip, detail };
        let entry = dynsmem_kernels::KERNELS
            .iter()
            .flat_map(|t| t.iter())
            .find(|k| k.name == name)
            .ok_or_else(|| missing("no kernels! table defines it".into()))?;
        let cname = CString::new(name).map_err(|_| missing("name contains NUL".into()))?;
        let mut func: ffi::Function = std::ptr::null_mut();
        // SAFETY: the module is loaded; `cname` is NUL-terminated.
        let code = unsafe { (self.api.hipModuleGetFunction)(&mut func, self.module, cname.as_ptr()) };
        self.api.check(code, "hipModuleGetFunction").map_err(|e| missing(e.to_string()))?;
        let k = Rc::new(HipKernel { entry, func, optin_bytes: Cell::new(self.info.limits.launch_shared_default) });
        self.kernels.borrow_mut().insert(name.into(), k.clone());
        Ok(k)
    }

    fn alloc_bytes(&self, bytes: usize) -> Result<HipMem> {
        let padded = bytes.max(1).checked_next_multiple_of(ALLOC_GRANULE).ok_or(Error::OutOfMemory {
            backend: BackendKind::Hip,
            requested: bytes as u64,
            free: None,
            total: self.info.limits.memory_bytes,
        })?;
        let mut ptr: ffi::DevicePtr = std::ptr::null_mut();
        // SAFETY: writes one pointer.
        let code = unsafe { (self.api.hipMalloc)(&mut ptr, padded) };
        if code == ffi::HIP_ERROR_OUT_OF_MEMORY {
            let (mut free, mut total) = (0usize, 0usize);
            // SAFETY: write two size_t.
            let known = unsafe { (self.api.hipMemGetInfo)(&mut free, &mut total) } == ffi::HIP_SUCCESS;
            return Err(Error::OutOfMemory {
                backend: BackendKind::Hip,
                requested: padded as u64,
                free: known.then_some(free as u64),
                total: if known { Some(total as u64) } else { self.info.limits.memory_bytes },
            });
        }
        self.api.check(code, "hipMalloc")?;
        let mem = HipMem { ptr, api: self.api.clone() };
        // SAFETY: `padded` bytes were just allocated.
        self.api.check(unsafe { (self.api.hipMemsetD8)(ptr, 0, padded) }, "hipMemsetD8")?;
        Ok(mem)
    }
}

/// Packs `args` into one kernarg buffer at the offsets of [`kernarg_layout`]; `address`
/// gives a buffer argument's device address.
pub fn pack_kernargs<R>(params: &[ParamKind], args: &[Arg<'_, R>], address: impl Fn(&R) -> u64) -> Vec<u8> {
    let mut buf = vec![0u8; kernarg_size(params) as usize];
    for ((offset, size), arg) in kernarg_layout(params).zip(args) {
        let bytes: [u8; 8] = match *arg {
            Arg::Buffer(mem) => address(mem).to_le_bytes(),
            Arg::U32(v) => (v as u64).to_le_bytes(),
            Arg::U64(v) => v.to_le_bytes(),
            Arg::F32(v) => (v.to_bits() as u64).to_le_bytes(),
        };
        buf[offset as usize..(offset + size) as usize].copy_from_slice(&bytes[..size as usize]);
    }
    buf
}

fn param_kinds<R>(args: &[Arg<'_, R>]) -> Vec<ParamKind> {
    args.iter()
        .map(|a| match a {
            Arg::Buffer(_) => ParamKind::Ptr,
            Arg::U32(_) => ParamKind::U32,
            Arg::U64(_) => ParamKind::U64,
            Arg::F32(_) => ParamKind::F32,
        })
        .collect()
}

impl Backend for HipBackend {
    type Raw = HipMem;
    type Kernel = Rc<HipKernel>;

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn observer(&self) -> Option<&dyn crate::observe::Observer> {
        let smi =
            self.observer.get_or_init(|| crate::observe::amdsmi::AmdSmiObserver::open(self.ordinal).ok().map(Box::new));
        smi.as_deref().map(|o| o as &dyn crate::observe::Observer)
    }

    fn alloc<T: Element>(&self, len: usize) -> Result<Buffer<Self::Raw, T>> {
        Ok(Buffer::from_raw(self.alloc_bytes(super::byte_len::<T>(&self.info, len)?)?, len))
    }

    fn htod<T: Element>(&self, data: &[T]) -> Result<Buffer<Self::Raw, T>> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let mem = self.alloc_bytes(bytes.len())?;
        if !bytes.is_empty() {
            // SAFETY: the allocation holds at least `bytes.len()` bytes.
            let code = unsafe { (self.api.hipMemcpyHtoD)(mem.ptr, bytes.as_ptr().cast(), bytes.len()) };
            self.api.check(code, "hipMemcpyHtoD")?;
        }
        Ok(Buffer::from_raw(mem, data.len()))
    }

    fn dtoh<T: Element>(&self, buf: &Buffer<Self::Raw, T>) -> Result<Vec<T>> {
        self.synchronize()?;
        let mut out = vec![T::zeroed(); buf.len()];
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
        if !bytes.is_empty() {
            // SAFETY: both sides hold `bytes.len()` bytes.
            let code = unsafe { (self.api.hipMemcpyDtoH)(bytes.as_mut_ptr().cast(), buf.raw().ptr, bytes.len()) };
            self.api.check(code, "hipMemcpyDtoH")?;
        }
        Ok(out)
    }

    fn copy<T: Element>(&self, src: &Buffer<Self::Raw, T>, dst: &mut Buffer<Self::Raw, T>) -> Result<()> {
        super::check_copy_lengths("copy", src.len(), dst.len())?;
        // SAFETY: both allocations hold `src.bytes()` bytes.
        let code = unsafe { (self.api.hipMemcpyDtoD)(dst.raw.ptr, src.raw().ptr, src.bytes() as usize) };
        self.api.check(code, "hipMemcpyDtoD")
    }

    fn fill_zero<T: Element>(&self, buf: &Buffer<Self::Raw, T>) -> Result<()> {
        // SAFETY: the allocation holds at least `buf.bytes()` bytes.
        let code = unsafe { (self.api.hipMemsetD8)(buf.raw().ptr, 0, buf.bytes() as usize) };
        self.api.check(code, "hipMemsetD8")
    }

    fn launch(&self, kernel: &Self::Kernel, dims: LaunchDims, args: &[Arg<'_, Self::Raw>]) -> Result<()> {
        self.check_launch(kernel.entry.name, dims)?;
        let kinds = param_kinds(args);
        if kinds != kernel.entry.params {
            return Err(Error::ArgumentMismatch {
                kernel: kernel.entry.name.into(),
                expected: format!("{:?}", kernel.entry.params),
                got: format!("{kinds:?}"),
            });
        }
        if dims.shared_bytes > kernel.optin_bytes.get() {
            // SAFETY: a function handle of this runtime, as hipFuncSetAttribute accepts.
            let code = unsafe {
                (self.api.hipFuncSetAttribute)(
                    kernel.func as *const c_void,
                    ffi::FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_MEMORY_SIZE,
                    dims.shared_bytes as c_int,
                )
            };
            self.api.check(code, "hipFuncSetAttribute(MaxDynamicSharedMemorySize)")?;
            kernel.optin_bytes.set(dims.shared_bytes);
        }
        let mut kernargs = pack_kernargs(kernel.entry.params, args, |m: &HipMem| m.ptr as u64);
        let mut size = kernargs.len();
        let mut extra = [
            ffi::LAUNCH_PARAM_BUFFER_POINTER,
            kernargs.as_mut_ptr().cast::<c_void>(),
            ffi::LAUNCH_PARAM_BUFFER_SIZE,
            (&mut size as *mut usize).cast::<c_void>(),
            ffi::LAUNCH_PARAM_END,
        ];
        // SAFETY: the kernarg buffer matches the kernel's metadata (checked in CI for every
        // kernel) and outlives the call, which copies it.
        let code = unsafe {
            (self.api.hipModuleLaunchKernel)(
                kernel.func,
                dims.grid,
                1,
                1,
                dims.block,
                1,
                1,
                dims.shared_bytes,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                extra.as_mut_ptr(),
            )
        };
        self.api.check(code, "hipModuleLaunchKernel")
    }

    fn synchronize(&self) -> Result<()> {
        // SAFETY: no arguments.
        self.api.check(unsafe { (self.api.hipDeviceSynchronize)() }, "hipDeviceSynchronize")
    }

    fn time_ms(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
        let (start, end) = self.timer;
        let null = std::ptr::null_mut();
        // SAFETY: events of this runtime on the null stream.
        unsafe {
            self.api.check((self.api.hipEventRecord)(start, null), "hipEventRecord")?;
            work()?;
            self.api.check((self.api.hipEventRecord)(end, null), "hipEventRecord")?;
            self.api.check((self.api.hipEventSynchronize)(end), "hipEventSynchronize")?;
            let mut ms = 0f32;
            self.api.check((self.api.hipEventElapsedTime)(&mut ms, start, end), "hipEventElapsedTime")?;
            Ok(ms as f64)
        }
    }

    fn timer_name(&self) -> &'static str {
        "hip-events"
    }
}

impl Drop for HipBackend {
    fn drop(&mut self) {
        // SAFETY: created by this runtime, destroyed once.
        unsafe {
            (self.api.hipEventDestroy)(self.timer.0);
            (self.api.hipEventDestroy)(self.timer.1);
            (self.api.hipModuleUnload)(self.module);
        }
    }
}

impl RustKernels for HipBackend {
    fn rust_kernel(&self, name: &str) -> Result<Self::Kernel> {
        self.kernel(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernargs_are_packed_at_the_hsa_offsets() {
        // reduce's (input, partials, n, items_per_thread): 8 + 8 + 8 + 4 = 28 bytes.
        let params = [ParamKind::Ptr, ParamKind::Ptr, ParamKind::U64, ParamKind::U32];
        let (a, b) = (0x1111_2222_3333_4444u64, 0x5555_6666_7777_8888u64);
        let buf = pack_kernargs(&params, &[Arg::Buffer(&a), Arg::Buffer(&b), Arg::U64(1 << 40), Arg::U32(7)], |r| *r);
        assert_eq!(buf.len(), 28);
        assert_eq!(u64::from_le_bytes(buf[0..8].try_into().unwrap()), a);
        assert_eq!(u64::from_le_bytes(buf[8..16].try_into().unwrap()), b);
        assert_eq!(u64::from_le_bytes(buf[16..24].try_into().unwrap()), 1 << 40);
        assert_eq!(u32::from_le_bytes(buf[24..28].try_into().unwrap()), 7);
        // A u32 before a pointer: the pointer aligns up to 8.
        let params = [ParamKind::U32, ParamKind::Ptr, ParamKind::F32];
        assert_eq!(kernarg_layout(&params).collect::<Vec<_>>(), vec![(0, 4), (8, 8), (16, 4)]);
        let buf = pack_kernargs(&params, &[Arg::U32(9), Arg::Buffer(&a), Arg::F32(1.5)], |r| *r);
        assert_eq!((buf.len(), &buf[0..4], &buf[4..8]), (20, &9u32.to_le_bytes()[..], &[0u8; 4][..]));
        assert_eq!(f32::from_le_bytes(buf[16..20].try_into().unwrap()), 1.5);
    }
}
