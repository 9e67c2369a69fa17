//! Any backend by reference ([`AnyBackend`]), for code that holds a backend it did not
//! pick by type: the erased registry, the tuner's erased spaces, the CLI.

use super::cpu::CpuBackend;
use super::cuda::CudaBackend;
use super::hip::HipBackend;
use super::wgpu::WgpuBackend;
use super::{Backend, BackendKind, Probe};

/// A backend as the erased registry takes it: one of the four, by reference.
#[derive(Clone, Copy)]
pub enum AnyBackend<'a> {
    Cuda(&'a CudaBackend),
    Hip(&'a HipBackend),
    Wgsl(&'a WgpuBackend),
    Cpu(&'a CpuBackend),
}

/// Calls `$body` with `$b` bound to the concrete backend of an [`AnyBackend`].
#[macro_export]
macro_rules! with_backend {
    ($any:expr, $b:ident => $body:expr) => {
        match $any {
            $crate::backend::AnyBackend::Cuda($b) => $body,
            $crate::backend::AnyBackend::Hip($b) => $body,
            $crate::backend::AnyBackend::Wgsl($b) => $body,
            $crate::backend::AnyBackend::Cpu($b) => $body,
        }
    };
}

impl<'a> AnyBackend<'a> {
    pub fn kind(&self) -> BackendKind {
        with_backend!(*self, b => b.kind())
    }
    pub fn info(&self) -> &'a super::DeviceInfo {
        with_backend!(*self, b => b.info())
    }
    /// [`super::Backend::small_configs`].
    pub fn small_configs(&self) -> bool {
        with_backend!(*self, b => super::Backend::small_configs(b))
    }
}

/// A backend's [`AnyBackend`]: how generic code hands its backend to the erased registry.
pub trait Erase {
    fn erase(&self) -> AnyBackend<'_>;
}

impl Erase for CudaBackend {
    fn erase(&self) -> AnyBackend<'_> {
        AnyBackend::Cuda(self)
    }
}
impl Erase for HipBackend {
    fn erase(&self) -> AnyBackend<'_> {
        AnyBackend::Hip(self)
    }
}
impl Erase for WgpuBackend {
    fn erase(&self) -> AnyBackend<'_> {
        AnyBackend::Wgsl(self)
    }
}
impl Erase for CpuBackend {
    fn erase(&self) -> AnyBackend<'_> {
        AnyBackend::Cpu(self)
    }
}

/// A backend of any kind, owned: what a row of [`BACKENDS`] probes.
pub enum OwnedBackend {
    Cuda(CudaBackend),
    Hip(HipBackend),
    Wgsl(WgpuBackend),
    Cpu(CpuBackend),
}

impl OwnedBackend {
    /// The backend by reference, for [`with_backend!`].
    pub fn erase(&self) -> AnyBackend<'_> {
        match self {
            OwnedBackend::Cuda(b) => b.erase(),
            OwnedBackend::Hip(b) => b.erase(),
            OwnedBackend::Wgsl(b) => b.erase(),
            OwnedBackend::Cpu(b) => b.erase(),
        }
    }
}

/// The device images the backends load: the built-in ones and those of the registry's own
/// families (a researcher's kernel crate), each loaded beside the others.
#[derive(Clone, Copy, Default)]
pub struct Images<'a> {
    /// PTX images, searched in order for an entry; empty ones are left out.
    pub ptx: &'a [&'static str],
    /// nvcc's cubins of the CUDA C twins (`dynsmem_build::twins`).
    pub twin_cubins: super::cuda::TwinCubins,
    /// `(gfx arch, code object)` of the built-in image.
    pub amdgpu: &'static [(&'static str, &'static [u8])],
    /// `kernels!` tables the CPU backend runs besides the built-in ones.
    pub cpu: &'a [&'static [dynsmem_kernels::KernelEntry]],
    /// The first PTX image's target, as records name it (`sm_90a ptx80`).
    pub ptx_target: &'a str,
    /// The WGSL twins' templates of the registry's families: the WGSL "image" (a config's
    /// pipeline is its template filled with sizes from the problem and the config, both in
    /// the tuning cache's key, and its `override` constants).
    pub wgsl: &'a [&'static str],
    /// `rustc -V` of the build (the CPU backend's image is this build of the kernels).
    pub rustc: &'a str,
}

/// One backend as everything that picks, lists or loops over backends sees it. A new
/// backend is its folder, a [`BackendKind`] variant, its arms of [`AnyBackend`] /
/// [`OwnedBackend`] / [`with_backend!`] and a row here.
pub struct BackendRow {
    pub kind: BackendKind,
    /// Runs the Rust kernels on a GPU: where such a backend is ready, the CPU backend (last
    /// in the table) is not run unless asked for.
    pub rust_gpu: bool,
    /// Device `ordinal` with `images` loaded, or why not (never a panic).
    pub probe: fn(&Images<'_>, usize) -> Probe<OwnedBackend>,
    /// The image the backend runs of `images`: its name in records, and the parts its hash
    /// in tuning-cache keys is made of (a rebuilt kernel is not answered from an old cache).
    pub image: for<'a> fn(&Images<'a>) -> (String, Vec<&'a [u8]>),
    /// What its limits are called where a refusal names them: the launch-sized (opt-in)
    /// limit, the static limit, and the device's memory.
    pub limit_names: LimitNames,
}

/// See [`BackendRow::limit_names`].
pub struct LimitNames {
    pub launch_shared: &'static str,
    pub static_shared: &'static str,
    pub memory: &'static str,
}

impl BackendRow {
    /// The row of `kind`.
    pub fn of(kind: BackendKind) -> &'static BackendRow {
        BACKENDS.iter().find(|r| r.kind == kind).expect("every backend kind has a row")
    }
}

/// Every backend, in the order a default picks: the first ready one on a GPU (a WGSL adapter
/// that is a CPU does not count), else the CPU backend.
pub const BACKENDS: [BackendRow; 4] = [
    BackendRow {
        kind: BackendKind::Cuda,
        limit_names: LimitNames {
            launch_shared: "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
            static_shared: "MAX_SHARED_MEMORY_PER_BLOCK: static __shared__ arrays cannot opt in past it",
            memory: "cuDeviceTotalMem",
        },
        rust_gpu: true,
        probe: probe_cuda,
        image: |i| (format!("nvptx64-nvidia-cuda {}", i.ptx_target), i.ptx.iter().map(|p| p.as_bytes()).collect()),
    },
    BackendRow {
        kind: BackendKind::Hip,
        limit_names: LimitNames {
            launch_shared: "hipDeviceAttributeSharedMemPerBlockOptin",
            static_shared: "the static workgroup-memory limit",
            memory: "hipMemGetInfo total",
        },
        rust_gpu: true,
        probe: |images, ordinal| HipBackend::probe(ordinal, images.amdgpu).map(OwnedBackend::Hip),
        image: |i| {
            let archs: Vec<&str> = i.amdgpu.iter().map(|(a, _)| *a).collect();
            let parts = i.amdgpu.iter().flat_map(|(a, o)| [a.as_bytes(), &o[..]]).collect();
            (format!("amdgcn-amd-amdhsa {}", archs.join(",")), parts)
        },
    },
    BackendRow {
        kind: BackendKind::Wgsl,
        limit_names: LimitNames {
            launch_shared: "WGSL has no launch-sized workgroup memory",
            static_shared: "max_compute_workgroup_storage_size",
            memory: "the adapter's memory",
        },
        rust_gpu: false,
        probe: |_, _| WgpuBackend::probe().map(OwnedBackend::Wgsl),
        image: |i| ("wgsl source (naga -> SPIR-V)".into(), i.wgsl.iter().map(|t| t.as_bytes()).collect()),
    },
    BackendRow {
        kind: BackendKind::Cpu,
        limit_names: LimitNames {
            launch_shared: "the CPU backend's H100 opt-in limit",
            static_shared: "the static workgroup-memory limit",
            memory: "the host's memory",
        },
        rust_gpu: false,
        probe: |images, _| Probe::Ready(OwnedBackend::Cpu(CpuBackend::with_kernels(images.cpu))),
        // The host build of the same kernel source, which the PTX (compiled from that source by
        // this build) stands for, with the host architecture and compiler.
        image: |i| {
            let name = format!("{} host build of dynsmem-kernels (same source)", std::env::consts::ARCH);
            let head: [&[u8]; 3] = [b"cpu-backend", std::env::consts::ARCH.as_bytes(), i.rustc.as_bytes()];
            (name, head.into_iter().chain(i.ptx.iter().map(|p| p.as_bytes())).collect())
        },
    },
];

/// CUDA device `ordinal` with every PTX image of `images` loaded (the first as its module,
/// the others beside it) and the twins' cubins at hand.
fn probe_cuda(images: &Images<'_>, ordinal: usize) -> Probe<OwnedBackend> {
    let mut ptx = images.ptx.iter().filter(|p| !p.is_empty());
    let Some(first) = ptx.next() else {
        return Probe::Unavailable(
            BackendKind::Cuda,
            "no PTX image (built without GPU images: DYNSMEM_DEVICE_IMAGES=none, or without the builtin-images \
             feature), and no family has an image of its own"
                .into(),
        );
    };
    let mut b = match CudaBackend::probe(ordinal, first).map(|b| b.with_twin_cubins(images.twin_cubins)) {
        Probe::Ready(b) => b,
        Probe::Unavailable(k, why) => return Probe::Unavailable(k, why),
    };
    for p in ptx {
        b = match b.with_module(p) {
            Ok(b) => b,
            Err(e) => return Probe::Unavailable(BackendKind::Cuda, format!("loading a family's image: {e}")),
        };
    }
    Probe::Ready(OwnedBackend::Cuda(b))
}
