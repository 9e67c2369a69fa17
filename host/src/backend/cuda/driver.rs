//! Thin `Result` wrappers over the CUDA driver calls cudarc's safe layer does not cover,
//! mapping `DriverError` into [`Error`] with the call named.

use std::sync::Arc;

use cudarc::driver::{CudaContext, DriverError, sys};

use crate::backend::BackendKind;
use crate::error::{Error, Result};

pub(crate) fn driver_err(call: &'static str) -> impl FnOnce(DriverError) -> Error {
    move |e| Error::Driver { backend: BackendKind::Cuda, call, message: e.to_string() }
}

/// Whether `libcuda` can be loaded. cudarc panics on first use when it cannot, so this is
/// asked before anything else.
pub(crate) fn library_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { sys::is_culib_present() }
}

pub(crate) fn device_count() -> Result<usize> {
    cudarc::driver::result::init().map_err(driver_err("cuInit"))?;
    Ok(CudaContext::device_count().map_err(driver_err("cuDeviceGetCount"))? as usize)
}

pub(crate) fn attribute(ctx: &Arc<CudaContext>, attr: sys::CUdevice_attribute) -> Result<i32> {
    ctx.attribute(attr).map_err(driver_err("cuDeviceGetAttribute"))
}

/// "CUDA 13.0" from `cuDriverGetVersion`.
pub(crate) fn api_version() -> String {
    let mut v = 0;
    // SAFETY: writes one int.
    let ok = unsafe { sys::cuDriverGetVersion(&mut v) } == sys::CUresult::CUDA_SUCCESS;
    if ok { format!("CUDA {}.{}", v / 1000, (v % 1000) / 10) } else { "CUDA (version unknown)".into() }
}

/// The kernel-module driver version ("580.159.04") where Linux exposes it.
pub(crate) fn kernel_driver_version() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue ..."
    text.lines()
        .next()?
        .split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .map(str::to_string)
}

/// Attribute `attr` of CUDA device `ordinal`, read without a context (the driver must be
/// initialised: [`device_count`] does it).
fn device_attribute(ordinal: usize, attr: sys::CUdevice_attribute) -> Option<i32> {
    let dev = cudarc::driver::result::device::get(ordinal as i32).ok()?;
    // SAFETY: `dev` is a valid device handle from cuDeviceGet; the call writes one int.
    unsafe { cudarc::driver::result::device::get_attribute(dev, attr) }.ok()
}

/// The ordinal of the CUDA device at PCI bus id `bus_id` (`"0000:1b:00.0"`, as Vulkan
/// reports it), found without a context; `None` where there is no driver or no such device.
pub(crate) fn ordinal_at_pci(bus_id: &str) -> Option<usize> {
    use sys::CUdevice_attribute as A;
    if !library_present() {
        return None;
    }
    let wanted = bus_id.to_ascii_lowercase();
    (0..device_count().ok()?).find(|&ordinal| {
        let attr = |a| device_attribute(ordinal, a);
        match (
            attr(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
            attr(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
            attr(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
        ) {
            (Some(domain), Some(bus), Some(device)) => {
                wanted.starts_with(&format!("{domain:04x}:{bus:02x}:{device:02x}"))
            }
            _ => false,
        }
    })
}

/// The multiprocessor count and shared memory per multiprocessor of CUDA device `ordinal`
/// (found by [`ordinal_at_pci`]), read without a context. Vulkan reports neither figure,
/// and the WGSL twins size their grids by them as the Rust kernels do.
pub(crate) fn multiprocessors(ordinal: usize) -> Option<(u32, u32)> {
    use sys::CUdevice_attribute as A;
    Some((
        device_attribute(ordinal, A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        device_attribute(ordinal, A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)? as u32,
    ))
}

/// The launch attribute that makes consecutive blocks `cluster` at a time one thread-block
/// cluster (`CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`, 1-D).
fn cluster_attribute(cluster: u32) -> sys::CUlaunchAttribute {
    // SAFETY: an all-zero attribute is valid plain data; the id and the union field it
    // names are set below.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 { x: cluster, y: 1, z: 1 };
    attr
}

fn launch_config(
    (grid, block, shared_bytes): (u32, u32, u32),
    stream: sys::CUstream,
    attr: &mut sys::CUlaunchAttribute,
) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: grid,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: block,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: shared_bytes,
        hStream: stream,
        attrs: attr,
        numAttrs: 1,
    }
}

/// `cuLaunchKernelEx` of `f` over `grid` blocks in clusters of `cluster`.
///
/// # Safety
/// As `cuLaunchKernel`: `f` belongs to the current context, `params` matches its
/// signature and what they point to outlives the launch.
pub(crate) unsafe fn launch_clustered(
    f: sys::CUfunction,
    geometry: (u32, u32, u32),
    cluster: u32,
    stream: sys::CUstream,
    params: &mut [*mut std::ffi::c_void],
) -> Result<()> {
    let mut attr = cluster_attribute(cluster);
    let config = launch_config(geometry, stream, &mut attr);
    // SAFETY: the caller's contract; `config` and `attr` outlive the call.
    unsafe { sys::cuLaunchKernelEx(&config, f, params.as_mut_ptr(), std::ptr::null_mut()) }
        .result()
        .map_err(driver_err("cuLaunchKernelEx"))
}

/// Clusters of `cluster` blocks of `f` that fit on the device at once
/// (`cuOccupancyMaxActiveClusters` with the cluster attribute).
pub(crate) fn max_active_clusters(
    f: sys::CUfunction,
    geometry: (u32, u32, u32),
    cluster: u32,
    stream: sys::CUstream,
) -> Result<u32> {
    let mut attr = cluster_attribute(cluster);
    let config = launch_config(geometry, stream, &mut attr);
    let mut n: std::ffi::c_int = 0;
    // SAFETY: writes one int; `config` and `attr` outlive the call.
    unsafe { sys::cuOccupancyMaxActiveClusters(&mut n, f, &config) }
        .result()
        .map_err(driver_err("cuOccupancyMaxActiveClusters"))?;
    Ok(n as u32)
}
