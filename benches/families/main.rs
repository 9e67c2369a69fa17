//! Criterion benches of every kernel family but reduce (`benches/reduce.rs`), one module
//! per family, one group per family and backend present (`<family>/<backend>`, the backend
//! in every name). Every workload is verified against its CPU reference before it is
//! timed, and timed with the backend's device timer. CI runs them in test mode
//! (`cargo bench --bench families -- --test`: each once) on lavapipe.

use std::time::Duration;

use criterion::{criterion_group, criterion_main};

mod common;
mod conv1d;
mod histogram;
mod nbody;
mod scan;
mod sgemm;
mod softmax;
mod stencil2d;
mod transpose;

criterion_group! {
    name = benches;
    config = criterion::Criterion::default().sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
    targets = scan::bench, histogram::bench, conv1d::bench, stencil2d::bench, transpose::bench, softmax::bench, nbody::bench, sgemm::bench
}
criterion_main!(benches);
