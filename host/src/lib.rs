//! dynsmem host library: backends (CUDA through cudarc, WGSL through wgpu), the host side
//! of every kernel family (launchers, WGSL sources, CPU references), verification, timing
//! and records.
//!
//! The device images come from the root package (`dynsmem::images`), which embeds what
//! `build.rs` compiled from `device-kernels`; this crate takes them as parameters
//! (e.g. [`backend::cuda::CudaBackend::new`] takes the PTX text), so tests can inject any.

pub mod backend;
pub mod backend_kind;
pub mod bench;
pub mod contract;
pub mod element;
pub mod error;
pub mod families;
pub mod family;
pub mod measure;
pub mod memprobe;
pub mod observe;
pub use dynsmem_reference::par;
pub mod report;
pub use dynsmem_cpu::rng;
pub mod stats;
pub mod tune;
pub mod twins;
pub mod verify;

pub use dynsmem_kernels as device;
pub use error::{Error, Result};
