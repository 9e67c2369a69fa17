//! dynsmem, assembled: the device images `build.rs` compiled from `device-kernels`,
//! wired into the host library's backends, and the suite the CLI runs.
//!
//! ```no_run
//! use dynsmem::host::backend::Probe;
//! use dynsmem::host::families::reduce::*;
//! use dynsmem::host::backend::Variant;
//! use dynsmem::host::device::{Dtype, reduce::ReduceOp};
//!
//! let Probe::Ready(cuda) = dynsmem::cuda(0) else { return };
//! let problem = ReduceProblem { n: 1 << 20, op: ReduceOp::Sum, dtype: Dtype::F32 };
//! // 200 KB of staged items per block: past the 48 KB default, opted in per launch.
//! let config = ReduceConfig { block: 256, items_per_thread: 200, staged: true };
//! let sum: f32 = run_and_verify(&cuda, problem, config, Variant::LaunchSized, 42).unwrap();
//! ```

pub mod cli;
pub mod shapes;
pub mod slurm;
pub mod suite;

pub use dynsmem_host as host;
pub use dynsmem_kernels as device;

use dynsmem_host::backend::cuda::CudaBackend;
use dynsmem_host::backend::hip::HipBackend;
use dynsmem_host::backend::wgpu::WgpuBackend;
use dynsmem_host::backend::{BackendKind, Probe};
use dynsmem_host::report::Provenance;

/// The device images of `dynsmem-kernels`, embedded at build time.
pub mod images {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
    include!(concat!(env!("OUT_DIR"), "/twins.rs"));
}

/// `rustc -V` of the nightly that built this binary and its kernels.
pub const RUSTC: &str = env!("DYNSMEM_RUSTC");
/// Git commit of the source this binary was built from.
pub const COMMIT: &str = env!("DYNSMEM_GIT_COMMIT");

/// CUDA device `ordinal` with the embedded PTX loaded and the embedded twin cubins at hand,
/// or why not.
pub fn cuda(ordinal: usize) -> Probe<CudaBackend> {
    match CudaBackend::probe(ordinal, images::PTX) {
        Probe::Ready(b) => Probe::Ready(b.with_twin_cubins(images::TWIN_CUBINS)),
        other => other,
    }
}

/// AMD GPU `ordinal` through HIP with the embedded code object for its `gfx` target, or why not.
pub fn hip(ordinal: usize) -> Probe<HipBackend> {
    HipBackend::probe(ordinal, images::AMDGPU)
}

/// The preferred Vulkan adapter through wgpu, or why not.
pub fn wgsl() -> Probe<WgpuBackend> {
    WgpuBackend::probe()
}

/// The image a backend runs, as records name it.
pub fn image_name(backend: BackendKind) -> String {
    match backend {
        BackendKind::Cuda => format!("nvptx64-nvidia-cuda {} {}", images::PTX_ARCH, images::PTX_VERSION),
        BackendKind::Hip => {
            let archs: Vec<&str> = images::AMDGPU.iter().map(|(a, _)| *a).collect();
            format!("amdgcn-amd-amdhsa {}", archs.join(","))
        }
        BackendKind::Wgsl => "wgsl source (naga -> SPIR-V)".into(),
        BackendKind::Cpu => format!("{} host build of dynsmem-kernels (same source)", std::env::consts::ARCH),
    }
}

/// Provenance for records a backend makes under `command`.
pub fn provenance(backend: BackendKind, command: &str) -> Provenance {
    Provenance { rustc: RUSTC.into(), commit: COMMIT.into(), command: command.into(), image: image_name(backend) }
}
