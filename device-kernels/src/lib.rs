//! dynsmem device kernels.
//!
//! Every kernel takes its tiles and scratch from the launch-sized workgroup-memory region
//! (`core::intrinsics::gpu::gpu_launch_sized_workgroup_mem`; CUDA "dynamic shared memory",
//! HIP "dynamic LDS"), carved by [`layout`]. Built as a `cdylib` for `nvptx64-nvidia-cuda`
//! (PTX) and `amdgcn-amd-amdhsa` (an HSA code object) by the root package's build script;
//! on the host the same crate is a plain library of layouts, configs and entry names, so
//! both sides compute shared-memory sizes with one piece of code.
//!
//! Modules: [`gpu`] (the only code touching `core::arch::*`, with a host implementation
//! for the CPU backend), [`layout`] (carving), [`entry`] (the kernel definition form), one
//! module per kernel family, [`streamk`] (the stream-K schedule both GEMMs share), and [`memprobe`] (the microbenchmarks of `dynsmem probe`).
//!
//! Kernel logic is in safe functions with scoped `unsafe` blocks around the accesses
//! themselves (the primitives of [`gpu`] stay `unsafe fn`): mutation testing (cargo-mutants
//! skips `unsafe fn` bodies) reaches it, and the kernel tests (host/kernel-tests) must catch
//! what it changes. What such a function needs of its caller (pointers holding so many
//! elements, the launch's layout bytes) is under its `# Contract` heading: unchecked, as an
//! `unsafe fn`'s `# Safety` would be, and only the kernel entries call them.
#![no_std]
#![allow(
    clippy::not_unsafe_ptr_arg_deref,
    reason = "kernel functions take device pointers under their `# Contract` (see above), safe so that mutation testing reaches them"
)]
// f16 inputs of hgemm on the device and in the CPU backend (the primitive, not `half`:
// `half` on the device is software emulation).
#![feature(f16)]
// `#[inline(always)]` on a closure (the GEMM's k-tile body).
#![feature(stmt_expr_attributes)]
#![cfg_attr(
    gpu,
    feature(abi_gpu_kernel, core_intrinsics, gpu_intrinsics, gpu_launch_sized_workgroup_mem),
    allow(internal_features)
)]
#![cfg_attr(target_arch = "nvptx64", feature(stdarch_nvptx, asm_experimental_arch))]
#![cfg_attr(target_arch = "amdgpu", feature(stdarch_amdgpu))]

pub mod attention;
pub mod attention_backward;
pub mod conv1d;
pub mod entry;
pub mod gpu;
pub mod hgemm;
pub mod histogram;
pub mod layout;
pub mod memprobe;
pub mod nbody;
pub mod reduce;
pub mod rmsnorm;
pub mod rows;
pub mod scan;
pub mod sgemm;
pub mod softmax;
pub mod stage;
pub mod stencil2d;
pub mod streamk;
pub mod transpose;
pub mod vector;

pub use entry::{KernelEntry, KernelParam, LaunchDims, ParamKind, kernarg_layout, kernarg_size};

/// Every kernel of the image, family by family.
pub const KERNELS: &[&[KernelEntry]] = &[
    reduce::KERNELS,
    histogram::KERNELS,
    transpose::KERNELS,
    softmax::KERNELS,
    rmsnorm::KERNELS,
    conv1d::KERNELS,
    stencil2d::KERNELS,
    scan::KERNELS,
    nbody::KERNELS,
    sgemm::KERNELS,
    hgemm::KERNELS,
    attention::KERNELS,
    attention_backward::KERNELS,
    memprobe::KERNELS,
];

/// Element types the kernels are instantiated for.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(rename_all = "lowercase"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dtype {
    F32,
    U32,
}

impl Dtype {
    pub const ALL: [Dtype; 2] = [Dtype::F32, Dtype::U32];

    /// Bytes per element.
    pub const fn bytes(self) -> u32 {
        match self {
            Dtype::F32 | Dtype::U32 => 4,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::U32 => "u32",
        }
    }
}

/// A panic on the device (an index check, an overflow in a checked build) must stop the
/// kernel with an error the host sees: `loop {}` here would hang the GPU.
#[cfg(gpu)]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    gpu::trap()
}
