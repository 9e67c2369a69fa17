//! NVML (NVIDIA's management library, `libnvidia-ml.so`, loaded at run time through
//! `nvml-wrapper`): clocks, power, temperature, throttle reasons and the energy counter of
//! one GPU, found by the UUID the CUDA driver gives it (so it is the GPU the backend runs
//! on, whatever `CUDA_VISIBLE_DEVICES` renumbered), or by the PCI bus id Vulkan gives an
//! NVIDIA adapter (the WGSL backend).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::enums::device::GpuLockedClocksSetting;

use super::{Observer, Sample};

/// One GPU's NVML readings.
pub struct NvmlObserver {
    nvml: Nvml,
    /// NVML's index of the GPU (NVML numbers all GPUs, ignoring `CUDA_VISIBLE_DEVICES`).
    index: u32,
    /// What a clock lock asked for and whether it took (records say so).
    lock_state: Mutex<Option<String>>,
    /// A lock took: reset when the observer is dropped.
    holds_lock: AtomicBool,
}

impl NvmlObserver {
    /// The observer of the GPU whose UUID is `uuid` (`GPU-…`, as `nvidia-smi -L` prints
    /// it). The error says why there is none: no library, no such GPU.
    pub fn for_uuid(uuid: &str) -> Result<NvmlObserver, String> {
        let nvml = Nvml::init().map_err(|e| format!("NVML: {e}"))?;
        let index = nvml
            .device_by_uuid(uuid)
            .and_then(|d| d.index())
            .map_err(|e| format!("NVML has no GPU with UUID {uuid}: {e}"))?;
        Ok(NvmlObserver { nvml, index, lock_state: Mutex::new(None), holds_lock: AtomicBool::new(false) })
    }
}

impl NvmlObserver {
    /// The observer of the GPU at PCI bus id `bus_id` (as Vulkan reports it, e.g.
    /// `0000:19:00.0`); with an empty id, the only NVIDIA GPU when there is one.
    pub fn for_pci_bus_id(bus_id: &str) -> Result<NvmlObserver, String> {
        let nvml = Nvml::init().map_err(|e| format!("NVML: {e}"))?;
        let index = if bus_id.is_empty() {
            match nvml.device_count().map_err(|e| format!("NVML: {e}"))? {
                1 => 0,
                n => return Err(format!("no PCI bus id to tell {n} NVIDIA GPUs apart")),
            }
        } else {
            nvml.device_by_pci_bus_id(bus_id)
                .and_then(|d| d.index())
                .map_err(|e| format!("NVML has no GPU at PCI bus id {bus_id}: {e}"))?
        };
        Ok(NvmlObserver { nvml, index, lock_state: Mutex::new(None), holds_lock: AtomicBool::new(false) })
    }
}

impl Observer for NvmlObserver {
    fn source(&self) -> &'static str {
        "nvml"
    }

    fn sample(&self) -> Sample {
        let Ok(d) = self.nvml.device_by_index(self.index) else { return Sample::default() };
        Sample {
            sm_clock_mhz: d.clock_info(Clock::SM).ok().map(f64::from),
            mem_clock_mhz: d.clock_info(Clock::Memory).ok().map(f64::from),
            power_w: d.power_usage().ok().map(|mw| mw as f64 / 1e3),
            temperature_c: d.temperature(TemperatureSensor::Gpu).ok().map(f64::from),
            throttle_reasons: d
                .current_throttle_reasons()
                .map(|r| r.iter_names().map(|(name, _)| name.to_ascii_lowercase()).collect())
                .unwrap_or_default(),
        }
    }

    fn energy_mj(&self) -> Option<u64> {
        self.nvml.device_by_index(self.index).ok()?.total_energy_consumption().ok()
    }

    fn lock_clocks(&self, mhz: u32) -> Result<(), String> {
        let mut d = self.nvml.device_by_index(self.index).map_err(|e| e.to_string())?;
        let result = d
            .set_gpu_locked_clocks(GpuLockedClocksSetting::Numeric { min_clock_mhz: mhz, max_clock_mhz: mhz })
            .map_err(|e| format!("NVML refused to lock the SM clock at {mhz} MHz: {e}"));
        let state = match &result {
            Ok(()) => format!("SM clock locked at {mhz} MHz"),
            Err(e) => format!("not locked: {e}"),
        };
        self.holds_lock.fetch_or(result.is_ok(), Ordering::Relaxed);
        *self.lock_state.lock().unwrap_or_else(|p| p.into_inner()) = Some(state);
        result
    }

    fn clock_lock(&self) -> Option<String> {
        self.lock_state.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for NvmlObserver {
    fn drop(&mut self) {
        if self.holds_lock.load(Ordering::Relaxed)
            && let Ok(mut d) = self.nvml.device_by_index(self.index)
        {
            let _ = d.reset_gpu_locked_clocks();
        }
    }
}
