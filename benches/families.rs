//! Criterion benches of every family of the registry, derived from it: for each backend
//! present, one group per family (`<family>/<backend>`, the backend in every name) and one
//! bench per bench case and variant. Every workload is verified against its CPU reference
//! before it is timed, and timed with the backend's device timer, so the device's
//! completion is inside the timed region. CI runs them in test mode on lavapipe (each
//! once).

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dynsmem::host::backend::{Backend, Probe};
use dynsmem::host::contract::{FamilyBackend, Workload};
use dynsmem::host::families::FAMILIES;
use dynsmem::host::family::Sizes;

/// The bench sizes of `backend`: the suite's, except that a GPU gets 1/16 of the elements
/// (a criterion sample repeats a run many times; 2^24 elements is still 64 MB, past the L2).
fn sizes<B: Backend>(backend: &B) -> Sizes {
    let mut s = Sizes::for_backend(backend, None, false);
    if !backend.info().is_cpu {
        s.n /= 16;
        s.side /= 4;
        s.rows /= 16;
        s.bodies /= 4;
    }
    s
}

/// Device time of `iters` runs, timed by the backend's device timer in scopes of at most
/// 32 runs (a wgpu timing scope holds a bounded number of passes).
fn time_runs<B: Backend>(backend: &B, iters: u64, w: &dyn Workload) -> Duration {
    let mut ms = 0.0;
    let mut left = iters;
    while left > 0 {
        let now = left.min(32);
        ms += backend
            .time_ms(&mut || {
                for _ in 0..now {
                    w.run()?;
                }
                Ok(())
            })
            .expect("timed run");
        left -= now;
    }
    Duration::from_secs_f64(ms * 1e-3)
}

fn bench_backend<B: FamilyBackend>(c: &mut Criterion, backend: &B) {
    let sizes = sizes(backend);
    for family in FAMILIES {
        let mut g = c.benchmark_group(format!("{}/{}", family.name(), backend.kind()));
        for &variant in backend.variants() {
            for case in family.bench_cases(backend.erase(), variant, &sizes, None) {
                let w = match family.prepare(backend.erase(), &case.problem, &case.config, variant, 1) {
                    Ok(w) => w,
                    // Static arrays cannot hold what launch-sized memory can (a 200 KB tile on
                    // WGSL): refused before anything is built, as the bench table records.
                    Err(e @ dynsmem::host::Error::SharedMemoryLimit { kind: "static", .. }) => {
                        eprintln!("SKIPPED: {} {} {variant}: {e}", family.name(), case.problem);
                        continue;
                    }
                    Err(e) => panic!("{} {} {variant}: {e}", family.name(), case.problem),
                };
                w.run().expect("first run");
                w.check().expect("verified before it is timed");
                if w.bytes() > 0 {
                    g.throughput(Throughput::Bytes(w.bytes()));
                } else {
                    g.throughput(Throughput::Elements(w.flops() as u64));
                }
                let name = format!("{}/{variant}/{}", case.problem, case.config);
                g.bench_function(name, |b| b.iter_custom(|iters| time_runs(backend, iters, &*w)));
            }
        }
        g.finish();
    }
}

fn benches(c: &mut Criterion) {
    match dynsmem::cuda(0) {
        Probe::Ready(b) => bench_backend(c, &b),
        Probe::Unavailable(..) => eprintln!("SKIPPED: no CUDA device (cuda benches)"),
    }
    match dynsmem::wgsl() {
        Probe::Ready(b) => bench_backend(c, &b),
        // CI installs lavapipe and sets DYNSMEM_REQUIRE_WGSL=1: a missing adapter there is a
        // failure, as in the tests, not a skip.
        Probe::Unavailable(_, why) if std::env::var("DYNSMEM_REQUIRE_WGSL").is_ok_and(|v| v == "1") => {
            panic!("DYNSMEM_REQUIRE_WGSL=1 but no Vulkan adapter (wgsl benches): {why}")
        }
        Probe::Unavailable(..) => eprintln!("SKIPPED: no Vulkan adapter (wgsl benches)"),
    }
}

criterion_group! {
    name = group;
    config = Criterion::default().sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
    targets = benches
}
criterion_main!(group);
