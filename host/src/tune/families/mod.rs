//! The [`Tunable`](super::Tunable) impl of each family: its parameters, their default
//! candidate values, and its constraints, using the family's own `fits()` and layout
//! (`shared_bytes()`, the same carving code the kernels use) and its WGSL form's static
//! bytes, so that a config is filtered before launch for exactly the reasons its launcher
//! would refuse it.
//!
//! Default candidate lists differ on a CPU device ([`super::Target::is_cpu`]): every kernel
//! thread of the CPU backend is an OS thread, so its lists stop at small blocks. `dynsmem
//! tune --values NAME=V,V,..` replaces any list.

pub mod conv1d;
pub mod histogram;
pub mod reduce;
pub mod scan;
pub mod sgemm;
pub mod stencil2d;
pub mod transpose;

pub use conv1d::Conv1dTunable;
pub use histogram::HistogramTunable;
pub use reduce::ReduceTunable;
pub use scan::ScanTunable;
pub use sgemm::SgemmTunable;
pub use stencil2d::Stencil2dTunable;
pub use transpose::TransposeTunable;

/// A layout error as a filter reason.
pub(crate) fn layout_reason(e: dynsmem_kernels::layout::LayoutError) -> String {
    format!("shared-memory layout: {e}")
}
