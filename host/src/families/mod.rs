//! The kernel families: one folder each (problem, config, launcher, CPU reference, WGSL
//! and CUDA C twins, its `Family` impl, its search space, notes), and the registry
//! [`FAMILIES`] that lists them. What their launchers share is [`crate::contract`].

pub mod attention;
pub mod conv1d;
pub mod hgemm;
pub mod histogram;
pub mod nbody;
pub mod reduce;
pub mod rmsnorm;
pub mod scan;
pub mod sgemm;
pub mod softmax;
pub mod stencil2d;
pub mod transpose;

use crate::family::{DynFamily, Entry};

/// Every kernel family of dynsmem, once: `run`, `bench`, `tune`, the conformance suites,
/// the criterion benches and the fuzz targets iterate this table. A family is its folder
/// here, its `mod` line above and its line below.
pub static FAMILIES: &[&dyn DynFamily] = &[
    &Entry::<reduce::Reduce>::NEW,
    &Entry::<scan::Scan>::NEW,
    &Entry::<histogram::Histogram>::NEW,
    &Entry::<conv1d::Conv1d>::NEW,
    &Entry::<stencil2d::Stencil2d>::NEW,
    &transpose::TRANSPOSE,
    &softmax::SOFTMAX,
    &rmsnorm::RMSNORM,
    &Entry::<nbody::Nbody>::NEW,
    &Entry::<sgemm::Sgemm>::NEW,
    &Entry::<hgemm::Hgemm>::NEW,
    &Entry::<attention::Attention>::NEW,
    &Entry::<attention::backward::AttentionBackward>::NEW,
];
