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

use dynsmem_host::backend::cpu::CpuBackend;
use dynsmem_host::backend::cuda::CudaBackend;
use dynsmem_host::backend::hip::HipBackend;
use dynsmem_host::backend::wgpu::WgpuBackend;
use dynsmem_host::backend::{BACKENDS, BackendKind, BackendRow, Images, OwnedBackend, Probe};
use dynsmem_host::family::DynFamily;
use dynsmem_host::family::kernel::DeviceImage;
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

static FAMILIES: std::sync::OnceLock<Vec<&'static dyn DynFamily>> = std::sync::OnceLock::new();

/// The families this process runs: those [`cli::main`] was given, else the built-in
/// registry ([`dynsmem_host::families::FAMILIES`]).
pub fn families() -> &'static [&'static dyn DynFamily] {
    FAMILIES.get().map_or(dynsmem_host::families::FAMILIES, Vec::as_slice)
}

/// Sets [`families`] once per process (the command line's registry); a second, different
/// set is an error.
pub fn set_families(families: &[&'static dyn DynFamily]) -> anyhow::Result<()> {
    let same = |set: &Vec<&'static dyn DynFamily>| {
        set.len() == families.len() && set.iter().zip(families).all(|(a, b)| a.name() == b.name())
    };
    let set = FAMILIES.get_or_init(|| families.to_vec());
    anyhow::ensure!(same(set), "the registry of this process is already set (to {} families)", set.len());
    let mut names: Vec<&str> = families.iter().map(|f| f.name()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        anyhow::bail!("two families of the registry are named `{}`", w[0]);
    }
    Ok(())
}

/// The device images of [`families`] other than the built-in one, each once (in the
/// registry's order).
pub fn more_images() -> Vec<DeviceImage> {
    let mut images: Vec<DeviceImage> = Vec::new();
    for image in families().iter().filter_map(|f| f.image()) {
        if !images.iter().any(|i| std::ptr::eq(i.ptx, image.ptx) && std::ptr::eq(i.cpu, image.cpu)) {
            images.push(image);
        }
    }
    images
}

/// The images of this process: the built-in ones and those of [`families`] (their PTX
/// beside ours, their `kernels!` tables, their WGSL twins), handed to `f`.
fn with_images<T>(f: impl FnOnce(&Images<'_>) -> T) -> T {
    let more = more_images();
    let ptx: Vec<&'static str> = std::iter::once(images::PTX).chain(more.iter().map(|i| i.ptx)).collect();
    let cpu: Vec<&'static [dynsmem_host::device::KernelEntry]> = more.iter().map(|i| i.cpu).collect();
    let wgsl: Vec<&'static str> = families().iter().map(|f| f.wgsl_template()).collect();
    let ptx_target = format!("{} {}", images::PTX_ARCH, images::PTX_VERSION);
    f(&Images {
        ptx: &ptx,
        twin_cubins: images::TWIN_CUBINS,
        amdgpu: images::AMDGPU,
        cpu: &cpu,
        ptx_target: &ptx_target,
        wgsl: &wgsl,
        rustc: RUSTC,
    })
}

/// Backend `kind` (device `ordinal`) with the built-in images and those of [`families`]
/// loaded, through its row of the backend table ([`dynsmem_host::backend::BACKENDS`]), or why
/// not.
pub fn probe(kind: BackendKind, ordinal: usize) -> Probe<OwnedBackend> {
    with_images(|images| (BackendRow::of(kind).probe)(images, ordinal))
}

/// The image `kind` runs, as records name it, and its hash (part of every tuning-cache key).
pub fn image(kind: BackendKind) -> (String, String) {
    with_images(|images| {
        let (name, parts) = (BackendRow::of(kind).image)(images);
        (name, dynsmem_host::tune::image_hash(&parts))
    })
}

/// The backends of the table in its order that `asked` names (every one when it is empty),
/// each probed when the iterator reaches it.
pub fn backends(asked: &[BackendKind]) -> impl Iterator<Item = (&'static BackendRow, Probe<OwnedBackend>)> + '_ {
    BACKENDS.iter().filter(|row| asked.is_empty() || asked.contains(&row.kind)).map(|row| (row, probe(row.kind, 0)))
}

/// Whether a run over several backends (`bench`, `shapes`, `probe`) takes the CPU backend:
/// where it was asked for, or where none was asked and no GPU backend of the Rust kernels
/// ran (the CPU backend is for machines without one).
pub fn runs_cpu(asked: &[BackendKind], rust_gpu_ran: bool) -> bool {
    asked.contains(&BackendKind::Cpu) || (asked.is_empty() && !rust_gpu_ran)
}

/// CUDA device `ordinal` with the embedded PTX (and the PTX of [`families`]' own images)
/// loaded and the embedded twin cubins at hand, or why not.
pub fn cuda(ordinal: usize) -> Probe<CudaBackend> {
    probe(BackendKind::Cuda, ordinal)
        .map(|b| if let OwnedBackend::Cuda(b) = b { b } else { unreachable!("the CUDA row probes CUDA") })
}

/// The CPU backend, running the built-in kernels and those of [`families`]' own images.
pub fn cpu() -> CpuBackend {
    match probe(BackendKind::Cpu, 0) {
        Probe::Ready(OwnedBackend::Cpu(b)) => b,
        _ => unreachable!("the CPU backend's row is always ready"),
    }
}

/// AMD GPU `ordinal` through HIP with the embedded code object for its `gfx` target, or why
/// not. Only the built-in image: a family's own AMD image is not loaded beside it yet.
pub fn hip(ordinal: usize) -> Probe<HipBackend> {
    probe(BackendKind::Hip, ordinal)
        .map(|b| if let OwnedBackend::Hip(b) = b { b } else { unreachable!("the HIP row probes HIP") })
}

/// The preferred Vulkan adapter through wgpu, or why not.
pub fn wgsl() -> Probe<WgpuBackend> {
    probe(BackendKind::Wgsl, 0)
        .map(|b| if let OwnedBackend::Wgsl(b) = b { b } else { unreachable!("the WGSL row probes WGSL") })
}

/// Provenance for records a backend makes under `command`.
pub fn provenance(backend: BackendKind, command: &str) -> Provenance {
    Provenance { rustc: RUSTC.into(), commit: COMMIT.into(), command: command.into(), image: image(backend).0 }
}
