//! The raw HIP runtime calls, loaded from `libamdhip64.so` with `libloading`, and thin
//! `Result` wrappers over them.
//!
//! Constants and signatures are those of `hip_runtime_api.h` (ROCm/rocm-systems, checked
//! against the ROCm/HIP tags rocm-5.0.0 .. rocm-6.2.0: the attribute values used here did
//! not change across them).

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};

use libloading::Library;

use crate::backend::BackendKind;
use crate::error::{Error, Result};

pub(super) type HipError = c_int;
pub(super) type DevicePtr = *mut c_void;
pub(super) type Module = *mut c_void;
pub(super) type Function = *mut c_void;
pub(super) type Stream = *mut c_void;
pub(super) type Event = *mut c_void;

pub(super) const HIP_SUCCESS: HipError = 0;
pub(super) const HIP_ERROR_OUT_OF_MEMORY: HipError = 2;
pub(super) const HIP_ERROR_NO_DEVICE: HipError = 100;

/// `hipDeviceAttribute_t` (the CUDA-compatible block starts at 0).
pub(super) mod attr {
    use std::ffi::c_int;
    pub const MAX_GRID_DIM_X: c_int = 29;
    pub const MAX_THREADS_PER_BLOCK: c_int = 56;
    pub const MULTIPROCESSOR_COUNT: c_int = 63;
    pub const MAX_SHARED_MEMORY_PER_BLOCK: c_int = 74;
    pub const SHARED_MEM_PER_BLOCK_OPTIN: c_int = 75;
    pub const SHARED_MEM_PER_MULTIPROCESSOR: c_int = 76;
    pub const WARP_SIZE: c_int = 87;
}

/// `hipFuncAttributeMaxDynamicSharedMemorySize`.
pub(super) const FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_MEMORY_SIZE: c_int = 8;

/// Markers of `hipModuleLaunchKernel`'s `extra` argument: `{BUFFER_POINTER, buf,
/// BUFFER_SIZE, &size, END}` passes the kernarg segment as one packed buffer.
pub(super) const LAUNCH_PARAM_BUFFER_POINTER: *mut c_void = std::ptr::without_provenance_mut(1);
pub(super) const LAUNCH_PARAM_BUFFER_SIZE: *mut c_void = std::ptr::without_provenance_mut(2);
pub(super) const LAUNCH_PARAM_END: *mut c_void = std::ptr::without_provenance_mut(3);

macro_rules! hip_api {
    ($($name:ident : fn($($arg:ty),*) -> $ret:ty;)*) => {
        /// The HIP runtime entry points dynsmem uses, resolved once.
        #[allow(non_snake_case)]
        pub(super) struct HipApi {
            $(pub $name: unsafe extern "C" fn($($arg),*) -> $ret,)*
            /// Keeps the library mapped while the pointers above are in use.
            _lib: Library,
        }

        impl HipApi {
            #[allow(non_snake_case)]
            fn resolve(lib: Library) -> std::result::Result<HipApi, String> {
                // SAFETY: each symbol is declared with the signature of hip_runtime_api.h.
                unsafe {
                    $(let $name = *lib
                        .get::<unsafe extern "C" fn($($arg),*) -> $ret>(concat!(stringify!($name), "\0").as_bytes())
                        .map_err(|e| format!("libamdhip64 has no {}: {e}", stringify!($name)))?;)*
                    Ok(HipApi { $($name,)* _lib: lib })
                }
            }
        }
    };
}

hip_api! {
    hipInit: fn(c_uint) -> HipError;
    hipGetDeviceCount: fn(*mut c_int) -> HipError;
    hipSetDevice: fn(c_int) -> HipError;
    hipDeviceGetAttribute: fn(*mut c_int, c_int, c_int) -> HipError;
    hipDeviceGetName: fn(*mut c_char, c_int, c_int) -> HipError;
    hipRuntimeGetVersion: fn(*mut c_int) -> HipError;
    hipDriverGetVersion: fn(*mut c_int) -> HipError;
    hipGetErrorString: fn(HipError) -> *const c_char;
    hipMalloc: fn(*mut DevicePtr, usize) -> HipError;
    hipFree: fn(DevicePtr) -> HipError;
    hipMemcpyHtoD: fn(DevicePtr, *const c_void, usize) -> HipError;
    hipMemcpyDtoH: fn(*mut c_void, DevicePtr, usize) -> HipError;
    hipMemcpyDtoD: fn(DevicePtr, DevicePtr, usize) -> HipError;
    hipMemsetD8: fn(DevicePtr, u8, usize) -> HipError;
    hipMemGetInfo: fn(*mut usize, *mut usize) -> HipError;
    hipDeviceSynchronize: fn() -> HipError;
    hipModuleLoadData: fn(*mut Module, *const c_void) -> HipError;
    hipModuleUnload: fn(Module) -> HipError;
    hipModuleGetFunction: fn(*mut Function, Module, *const c_char) -> HipError;
    hipModuleLaunchKernel: fn(
        Function, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Stream, *mut *mut c_void, *mut *mut c_void
    ) -> HipError;
    hipFuncSetAttribute: fn(*const c_void, c_int, c_int) -> HipError;
    hipEventCreate: fn(*mut Event) -> HipError;
    hipEventRecord: fn(Event, Stream) -> HipError;
    hipEventSynchronize: fn(Event) -> HipError;
    hipEventElapsedTime: fn(*mut f32, Event, Event) -> HipError;
    hipEventDestroy: fn(Event) -> HipError;
}

/// The library names tried, in order.
const LIBRARY_NAMES: [&str; 2] = ["libamdhip64.so", "libamdhip64.so.6"];

impl HipApi {
    /// Loads the HIP runtime, or says why it cannot be used on this machine.
    pub(super) fn load() -> std::result::Result<HipApi, String> {
        let mut tried = Vec::new();
        for name in LIBRARY_NAMES {
            // SAFETY: loading runs the library's initialisers, as any HIP program does.
            match unsafe { Library::new(name) } {
                Ok(lib) => return HipApi::resolve(lib),
                Err(_) => tried.push(name),
            }
        }
        Err(format!("no HIP runtime: libamdhip64.so not found (ROCm is not installed; tried {})", tried.join(", ")))
    }

    /// `Ok` for `hipSuccess`, else a typed error naming the call and HIP's message.
    pub(super) fn check(&self, code: HipError, call: &'static str) -> Result<()> {
        if code == HIP_SUCCESS {
            return Ok(());
        }
        // SAFETY: hipGetErrorString returns a static string for any code.
        let msg = unsafe {
            let p = (self.hipGetErrorString)(code);
            if p.is_null() { "unknown error".into() } else { CStr::from_ptr(p).to_string_lossy().into_owned() }
        };
        Err(Error::Driver { backend: BackendKind::Hip, call, message: format!("{msg} (hipError_t {code})") })
    }

    pub(super) fn attribute(&self, attr: c_int, device: c_int) -> Result<i32> {
        let mut v = 0;
        // SAFETY: writes one int.
        self.check(unsafe { (self.hipDeviceGetAttribute)(&mut v, attr, device) }, "hipDeviceGetAttribute")?;
        Ok(v)
    }
}
