//! Criterion benches of reduce, one group per backend present (the backend is in every
//! name). Each sample is timed with the backend's device timer around `iters` whole
//! reduces (every pass), so the device's own completion is inside the timed region.

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

use dynsmem::host::backend::Probe;
use dynsmem::host::kernels::reduce::{ReduceElement, ReduceKernels, ReduceOp, ReducePlan, ReduceProblem, fit_config};
use dynsmem_kernels::Dtype;

// The families' helpers; this target uses only the timing loop.
#[allow(dead_code, unused_macros)]
#[path = "families/common.rs"]
mod common;

fn bench_backend<B: ReduceKernels>(c: &mut Criterion, backend: &B) {
    let n: u64 = if backend.info().is_cpu { 1 << 20 } else { 1 << 26 };
    let data = f32::inputs(n as usize, 1);
    let input = backend.htod(&data).expect("upload");
    let problem = ReduceProblem { n, op: ReduceOp::Sum, dtype: Dtype::F32 };
    let mut group = c.benchmark_group(format!("reduce/{}", backend.kind()));
    group.throughput(Throughput::Bytes(n * 4));
    for &variant in backend.reduce_variants() {
        let (config, _) = fit_config(backend, variant, Dtype::F32, backend.reduce_default_config());
        let plan = ReducePlan::new(backend, problem, config, variant).expect("plan");
        let partials = plan.alloc_partials::<f32>().expect("partials");
        plan.verify(&data, backend.dtoh(plan.launch(&input, &partials).expect("launch")).expect("dtoh")[0])
            .expect("verified before it is timed");
        group.bench_function(format!("sum_f32/n={n}/{variant}"), |b| {
            b.iter_custom(|iters| common::time_runs(backend, iters, &|| plan.launch(&input, &partials).map(|_| ())))
        });
    }
    group.finish();
}

fn reduce(c: &mut Criterion) {
    if let Probe::Ready(cuda) = dynsmem::cuda(0) {
        bench_backend(c, &cuda);
    } else {
        eprintln!("SKIPPED: no CUDA device (reduce/cuda benches)");
    }
    if let Probe::Ready(wgsl) = dynsmem::wgsl() {
        bench_backend(c, &wgsl);
    } else {
        eprintln!("SKIPPED: no Vulkan adapter (reduce/wgsl benches)");
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = reduce
}
criterion_main!(benches);
