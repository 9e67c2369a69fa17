//! Any backend by reference ([`AnyBackend`]), for code that holds a backend it did not
//! pick by type: the erased registry, the tuner's erased spaces, the CLI.

use super::cpu::CpuBackend;
use super::cuda::CudaBackend;
use super::hip::HipBackend;
use super::wgpu::WgpuBackend;
use super::{Backend, BackendKind};

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

impl AnyBackend<'_> {
    pub fn kind(&self) -> BackendKind {
        with_backend!(*self, b => b.kind())
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
