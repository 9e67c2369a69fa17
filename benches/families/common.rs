//! What every family's bench shares: the backends present, the sizes for each, and timing
//! a prepared workload with the backend's device timer (so the device's completion is
//! inside the timed region).

use std::time::Duration;

use criterion::{BenchmarkGroup, Criterion, Throughput, measurement::WallTime};
use dynsmem::host::backend::Backend;
use dynsmem::host::kernels::{Kernels, Workload};
use dynsmem::suite::Sizes;

/// Sizes for `backend`: the suite's, except that a GPU gets 1/16 of the elements (a
/// criterion sample repeats a run many times; 2^24 elements is still 64 MB, past the L2).
pub fn sizes<B: Backend>(backend: &B) -> Sizes {
    let mut s = Sizes::for_backend(backend, None, false);
    if !backend.info().is_cpu {
        s.n /= 16;
        s.side /= 4;
        s.softmax_rows /= 16;
        s.nbody /= 4;
    }
    s
}

/// A group named `<family>/<backend>`, the backend in every bench's name.
pub fn group<'c, B: Backend>(c: &'c mut Criterion, family: &str, backend: &B) -> BenchmarkGroup<'c, WallTime> {
    c.benchmark_group(format!("{family}/{}", backend.kind()))
}

/// Verifies `w` once, then benches it as `name`: each sample is `iters` runs timed by
/// [`time_runs`]. Throughput is the workload's bytes, or its flops as
/// elements when it has no bytes.
pub fn bench<B: Kernels, W: Workload>(group: &mut BenchmarkGroup<'_, WallTime>, backend: &B, name: &str, w: W) {
    w.run().expect("first run");
    w.check().expect("verified before it is timed");
    if w.bytes() > 0 {
        group.throughput(Throughput::Bytes(w.bytes()));
    } else {
        group.throughput(Throughput::Elements(w.flops() as u64));
    }
    group.bench_function(name, |b| b.iter_custom(|iters| time_runs(backend, iters, &|| w.run())));
}

/// Device time of `iters` calls of `run`, timed by the backend's device timer in scopes of
/// at most 32 runs (a wgpu timing scope holds a bounded number of passes).
pub fn time_runs<B: Backend>(backend: &B, iters: u64, run: &dyn Fn() -> dynsmem::host::Result<()>) -> Duration {
    let mut ms = 0.0;
    let mut left = iters;
    while left > 0 {
        let now = left.min(32);
        ms += backend
            .time_ms(&mut || {
                for _ in 0..now {
                    run()?;
                }
                Ok(())
            })
            .expect("timed run");
        left -= now;
    }
    Duration::from_secs_f64(ms * 1e-3)
}

/// Runs `$body` with `$b` bound to each GPU backend present (CUDA, then WGSL), printing a
/// SKIPPED line for each absent one. A macro because the backends are different types.
#[macro_export]
macro_rules! each_backend {
    ($family:literal, |$b:ident| $body:block) => {{
        use dynsmem::host::backend::Probe;
        match dynsmem::cuda(0) {
            Probe::Ready($b) => $body,
            Probe::Unavailable(..) => eprintln!("SKIPPED: no CUDA device ({}/cuda benches)", $family),
        }
        match dynsmem::wgsl() {
            Probe::Ready($b) => $body,
            Probe::Unavailable(..) => eprintln!("SKIPPED: no Vulkan adapter ({}/wgsl benches)", $family),
        }
    }};
}
