//! AMD SMI (`libamd_smi.so`, ROCm's management library), loaded at run time through
//! `libloading`: the same readings as [`super::nvml`] for an AMD GPU. Not run here: no AMD
//! GPU was available; the HIP backend offers it where the library loads.
//!
//! The C API used (amd_smi/amdsmi.h, ROCm 6): `amdsmi_init(AMDSMI_INIT_AMD_GPUS)`,
//! `amdsmi_get_socket_handles` / `amdsmi_get_processor_handles` to reach the GPUs in
//! order, `amdsmi_get_clk_freq` (`AMDSMI_CLK_TYPE_SYS` and `_MEM`: current level of a
//! frequency table), `amdsmi_get_power_info` (`current_socket_power`, W),
//! `amdsmi_get_temp_metric` (`AMDSMI_TEMPERATURE_TYPE_EDGE`, `_CURRENT`: millidegrees
//! before ROCm 6.1, degrees after, so only values below 200 are taken as degrees) and
//! `amdsmi_get_energy_count` (counter × resolution in µJ).

use std::ffi::c_void;

use libloading::{Library, Symbol};

use super::{Observer, Sample};

type Handle = *mut c_void;
const AMDSMI_INIT_AMD_GPUS: u64 = 1 << 1;
const AMDSMI_STATUS_SUCCESS: u32 = 0;
const AMDSMI_CLK_TYPE_SYS: u32 = 0;
const AMDSMI_CLK_TYPE_MEM: u32 = 4;
const AMDSMI_TEMPERATURE_TYPE_EDGE: u32 = 0;
const AMDSMI_TEMP_CURRENT: u32 = 0;
const AMDSMI_MAX_NUM_FREQUENCIES: usize = 33;

/// `amdsmi_frequencies_t`.
#[repr(C)]
struct Frequencies {
    has_deep_sleep: bool,
    num_supported: u32,
    current: u32,
    frequency: [u64; AMDSMI_MAX_NUM_FREQUENCIES],
}

/// `amdsmi_power_info_t` (ROCm 6.x: the leading fields, then reserved words).
#[repr(C)]
struct PowerInfo {
    current_socket_power: u64,
    average_socket_power: u64,
    gfx_voltage: u64,
    soc_voltage: u64,
    mem_voltage: u64,
    power_limit: u32,
    reserved: [u64; 18],
}

/// One AMD GPU's readings.
pub struct AmdSmiObserver {
    lib: Library,
    /// The GPU's processor handle, found once at open: the sampler reads every 5 ms.
    handle: Handle,
}

// SAFETY: the handle is an opaque token AMD SMI hands out for the process; its calls are
// documented thread-safe after `amdsmi_init`.
unsafe impl Send for AmdSmiObserver {}
unsafe impl Sync for AmdSmiObserver {}

impl AmdSmiObserver {
    /// The observer of the `ordinal`-th AMD GPU AMD SMI lists.
    pub fn open(ordinal: usize) -> Result<AmdSmiObserver, String> {
        // SAFETY: loading the library runs its initialisers, as any ROCm program does.
        let lib = unsafe { Library::new("libamd_smi.so") }.map_err(|e| format!("AMD SMI: {e}"))?;
        // SAFETY: the signature of amdsmi_init in amdsmi.h.
        let status = unsafe {
            let init: Symbol<unsafe extern "C" fn(u64) -> u32> =
                lib.get(b"amdsmi_init").map_err(|e| format!("AMD SMI: {e}"))?;
            init(AMDSMI_INIT_AMD_GPUS)
        };
        if status != AMDSMI_STATUS_SUCCESS {
            return Err(format!("amdsmi_init failed with status {status}"));
        }
        let handle = find_handle(&lib, ordinal).ok_or_else(|| format!("AMD SMI lists no GPU {ordinal}"))?;
        Ok(AmdSmiObserver { lib, handle })
    }

    fn clock(&self, kind: u32) -> Option<f64> {
        // SAFETY: amdsmi_get_clk_freq(handle, clk_type, *frequencies).
        unsafe {
            let f: Symbol<unsafe extern "C" fn(Handle, u32, *mut Frequencies) -> u32> =
                self.lib.get(b"amdsmi_get_clk_freq").ok()?;
            let mut out: Frequencies = std::mem::zeroed();
            (f(self.handle, kind, &mut out) == AMDSMI_STATUS_SUCCESS)
                .then(|| out.frequency.get(out.current as usize).map(|hz| *hz as f64 / 1e6))
                .flatten()
        }
    }
}

/// The processor handle of the `gpu`-th AMD GPU: the GPUs of every socket, in order.
fn find_handle(lib: &Library, gpu: usize) -> Option<Handle> {
    type List = unsafe extern "C" fn(*mut u32, *mut Handle) -> u32;
    type Processors = unsafe extern "C" fn(Handle, *mut u32, *mut Handle) -> u32;
    // SAFETY: the signatures of amdsmi_get_socket_handles and
    // amdsmi_get_processor_handles; each is called first for a count, then with room.
    unsafe {
        let sockets: Symbol<List> = lib.get(b"amdsmi_get_socket_handles").ok()?;
        let processors: Symbol<Processors> = lib.get(b"amdsmi_get_processor_handles").ok()?;
        let mut n = 0u32;
        if sockets(&mut n, std::ptr::null_mut()) != AMDSMI_STATUS_SUCCESS {
            return None;
        }
        let mut socket_handles = vec![std::ptr::null_mut(); n as usize];
        if sockets(&mut n, socket_handles.as_mut_ptr()) != AMDSMI_STATUS_SUCCESS {
            return None;
        }
        let mut gpus = Vec::new();
        for s in socket_handles.into_iter().take(n as usize) {
            let mut m = 0u32;
            if processors(s, &mut m, std::ptr::null_mut()) != AMDSMI_STATUS_SUCCESS {
                continue;
            }
            let mut p = vec![std::ptr::null_mut(); m as usize];
            if processors(s, &mut m, p.as_mut_ptr()) == AMDSMI_STATUS_SUCCESS {
                gpus.extend(p.into_iter().take(m as usize));
            }
        }
        gpus.get(gpu).copied()
    }
}

impl Observer for AmdSmiObserver {
    fn source(&self) -> &'static str {
        "amd-smi"
    }

    fn sample(&self) -> Sample {
        let h = self.handle;
        // SAFETY: amdsmi_get_power_info(handle, *info) and
        // amdsmi_get_temp_metric(handle, sensor, metric, *i64), as declared in amdsmi.h.
        let (power_w, temperature_c) = unsafe {
            let power = self
                .lib
                .get::<unsafe extern "C" fn(Handle, *mut PowerInfo) -> u32>(b"amdsmi_get_power_info")
                .ok()
                .and_then(|f| {
                    let mut p: PowerInfo = std::mem::zeroed();
                    (f(h, &mut p) == AMDSMI_STATUS_SUCCESS).then_some(p.current_socket_power as f64)
                });
            let temp = self
                .lib
                .get::<unsafe extern "C" fn(Handle, u32, u32, *mut i64) -> u32>(b"amdsmi_get_temp_metric")
                .ok()
                .and_then(|f| {
                    let mut t = 0i64;
                    (f(h, AMDSMI_TEMPERATURE_TYPE_EDGE, AMDSMI_TEMP_CURRENT, &mut t) == AMDSMI_STATUS_SUCCESS)
                        .then(|| if t < 200 { t as f64 } else { t as f64 / 1e3 })
                });
            (power, temp)
        };
        Sample {
            sm_clock_mhz: self.clock(AMDSMI_CLK_TYPE_SYS),
            mem_clock_mhz: self.clock(AMDSMI_CLK_TYPE_MEM),
            power_w,
            temperature_c,
            throttle_reasons: Vec::new(),
        }
    }

    fn energy_mj(&self) -> Option<u64> {
        let h = self.handle;
        // SAFETY: amdsmi_get_energy_count(handle, *counter, *resolution (µJ), *timestamp).
        unsafe {
            let f: Symbol<unsafe extern "C" fn(Handle, *mut u64, *mut f32, *mut u64) -> u32> =
                self.lib.get(b"amdsmi_get_energy_count").ok()?;
            let (mut count, mut resolution, mut stamp) = (0u64, 0f32, 0u64);
            (f(h, &mut count, &mut resolution, &mut stamp) == AMDSMI_STATUS_SUCCESS)
                .then(|| (count as f64 * resolution as f64 / 1e3) as u64)
        }
    }
}
