//! Histogram: the conformance suite on every backend present, and the bin counts that only
//! launch-sized memory can hold.

mod common;

use common::{conformance, cuda_or_skip, wgsl_or_skip};
use dynsmem::host::Error;
use dynsmem::host::backend::Backend;
use dynsmem::host::backend::Variant;
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::device::histogram::HistogramConfig;
use dynsmem::host::families::histogram::{HistogramProblem, prepare};

const SIZES: [u64; 4] = [0, 1, 1003, 100_003];
const BINS: [u32; 4] = [1, 5, 256, 4096];

#[test]
fn cpu_backend() {
    let cpu = CpuBackend::new();
    assert_eq!(conformance::histogram(&cpu, &SIZES, &BINS), 4 * 4 * 3);
}

#[test]
fn wgsl() {
    let Some(wgsl) = wgsl_or_skip("histogram::wgsl") else { return };
    assert_eq!(conformance::histogram(&wgsl, &SIZES, &BINS), 4 * 4 * 3 * 2);
}

#[test]
fn cuda() {
    let Some(cuda) = cuda_or_skip("histogram::cuda") else { return };
    // Launch-sized and cuda-static: every config's counters fit 48 KB (at most 32 KB).
    assert_eq!(conformance::histogram(&cuda, &[0, 1, 1_000_003, 1 << 26], &[1, 256, 4096]), 4 * 3 * 3 * 2);
}

/// 49152 bins of u32 counters (192 KB per block) run where launch-sized memory can hold
/// them: the CPU backend (H100 limits) here, the H100 itself in `cuda`.
fn bins_past_48k<B: dynsmem::host::contract::FamilyBackend>(backend: &B, n: u64) {
    let problem = HistogramProblem { n, bins: 49_152, out_of_range_pct: 5 };
    let config = HistogramConfig { block: 256, grid: 2, copies: 1, cluster: 1, held: 0, bits: 32, merge: false };
    let w = prepare(backend, problem, config, Variant::LaunchSized, 9).unwrap();
    use dynsmem::host::contract::Workload;
    assert_eq!(w.kernel().shared_bytes, 196_608);
    w.run().unwrap();
    w.check().unwrap();
}

#[test]
fn cpu_backend_bins_past_48k() {
    bins_past_48k(&CpuBackend::new(), 300_000);
}

#[test]
fn cuda_bins_past_48k() {
    let Some(cuda) = cuda_or_skip("histogram::cuda_bins_past_48k") else { return };
    bins_past_48k(&cuda, 1 << 24);
}

#[test]
fn wgsl_cannot_express_bins_past_its_static_limit() {
    let Some(wgsl) = wgsl_or_skip("histogram::wgsl_cannot_express_bins_past_its_static_limit") else { return };
    let limit = wgsl.info().limits.static_shared_max;
    let problem = HistogramProblem { n: 1000, bins: 49_152, out_of_range_pct: 0 };
    let config = HistogramConfig { block: 256, grid: 2, copies: 1, cluster: 1, held: 0, bits: 32, merge: false };
    for variant in [Variant::WgslLiteral, Variant::WgslOverride] {
        match prepare(&wgsl, problem, config, variant, 1) {
            Err(Error::SharedMemoryLimit { kind: "static", requested: 196_608, limit: l, .. }) => {
                assert_eq!(l, limit as u64)
            }
            Err(e) => panic!("{variant}: {e}"),
            Ok(_) => panic!("{variant}: 196608 B of static workgroup memory was accepted"),
        }
    }
}

/// Bins past one block's memory: 65537 and 131072 bins with the default config (16- and
/// 8-bit counters holding every bin, summed over a cluster where the backend has them on a
/// GPU), as many 32-bit bins as fit held in shared memory (the rest counted with device
/// atomics), split over a thread-block cluster's shared memory (clusters of 2 and 4), and
/// packed counters merged over clusters of 4; then every cluster size, counter width and held
/// count at bin counts that do not divide evenly, copies 1 and 3, 7% of keys out of range.
fn bins_in_clusters<B: dynsmem::host::contract::FamilyBackend>(backend: &B, n: u64, grid: u32) -> usize {
    use dynsmem::host::contract::Workload;
    use dynsmem::host::families::histogram::default_config;
    let mut checked = 0;
    let fit = backend.info().limits.launch_shared_max / 4;
    for (bins, cluster, bits) in [(65_537, 2, 16), (131_072, 4, 8)] {
        let problem = HistogramProblem { n, bins, out_of_range_pct: 3 };
        let default = default_config(backend, &problem);
        assert_eq!((default.held, default.bits), (0, bits), "{bins} bins: {default:?}");
        let held = HistogramConfig { cluster: 1, grid, held: fit, bits: 32, merge: false, ..default };
        let split = HistogramConfig { cluster, grid: grid * cluster, held: 0, bits: 32, merge: false, ..default };
        let merged = HistogramConfig { cluster: 4, grid: grid * 4, held: 0, bits, merge: true, ..default };
        for config in [default, held, split, merged] {
            let w = prepare(backend, problem, config, Variant::LaunchSized, bins as u64).unwrap();
            assert!(w.kernel().shared_bytes <= backend.info().limits.launch_shared_max);
            w.run().unwrap();
            w.check().unwrap();
            checked += 1;
        }
    }
    // (bins, cluster, copies, held, bits, merge)
    let cases = [
        (1, 2, 1, 0, 32, false),
        (1001, 2, 3, 0, 32, false),
        (1001, 4, 1, 0, 32, false),
        (4097, 8, 3, 0, 32, false),
        (9, 8, 1, 0, 32, false),
        (1001, 1, 1, 100, 32, false),
        (4097, 2, 3, 1000, 32, false),
        (5, 1, 2, 1, 32, false),
        (1001, 2, 3, 0, 8, true),
        (4097, 4, 1, 0, 16, true),
        (9, 8, 1, 0, 16, true),
        (5, 1, 2, 0, 8, false),
        (1001, 1, 3, 101, 8, false),
        (4097, 2, 1, 1001, 16, true),
        (4097, 2, 1, 0, 32, true),
    ];
    for (bins, cluster, copies, held, bits, merge) in cases {
        let problem = HistogramProblem { n: n / 8, bins, out_of_range_pct: 7 };
        let config = HistogramConfig { block: 32, grid: grid * cluster, copies, cluster, held, bits, merge };
        let what = format!("{} {problem:?} {config:?}", backend.kind());
        checked += conformance::run_case(&what, prepare(backend, problem, config, Variant::LaunchSized, 5)) as usize;
    }
    checked
}

#[test]
fn cpu_backend_bins_in_clusters() {
    assert_eq!(bins_in_clusters(&CpuBackend::new(), 40_000, 1), 23);
}

#[test]
fn cuda_bins_in_clusters() {
    let Some(cuda) = cuda_or_skip("histogram::cuda_bins_in_clusters") else { return };
    assert_eq!(bins_in_clusters(&cuda, 100_000_000, 132), 23);
}

/// Packed counters that wrap: a few bins take every key, so each block's 8-bit counters
/// wrap hundreds of times and its 16-bit ones at least once, with carries into the
/// counters above them in the word (and into the padding past the last bin). Exact counts.
fn packed_counters_wrap<B: dynsmem::host::contract::FamilyBackend>(backend: &B, n: u64, grid: u32) -> usize {
    let mut checked = 0;
    for bins in [1, 2, 3, 4, 7] {
        for (bits, copies) in [(8, 1), (8, 2), (16, 1), (16, 3)] {
            // 8-bit counters wrap with 30 times fewer keys.
            let problem = HistogramProblem { n: if bits == 8 { n / 30 } else { n }, bins, out_of_range_pct: 0 };
            let config = HistogramConfig { block: 32, grid, copies, cluster: 1, held: 0, bits, merge: false };
            let what = format!("{} {problem:?} {config:?}", backend.kind());
            checked +=
                conformance::run_case(&what, prepare(backend, problem, config, Variant::LaunchSized, 3)) as usize;
        }
    }
    checked
}

#[test]
fn cpu_backend_packed_counters_wrap() {
    assert_eq!(packed_counters_wrap(&CpuBackend::new(), 300_000, 1), 20);
}

#[test]
fn cuda_packed_counters_wrap() {
    let Some(cuda) = cuda_or_skip("histogram::cuda_packed_counters_wrap") else { return };
    assert_eq!(packed_counters_wrap(&cuda, 100_000_000, 264), 20);
}

/// Clusters are refused before anything launches where the form has none: the WGSL twins
/// (no clusters), with the kernel, what was asked and why.
#[test]
fn clusters_are_refused_where_the_form_has_none() {
    let cpu = CpuBackend::new();
    let problem = HistogramProblem { n: 100, bins: 1000, out_of_range_pct: 0 };
    let config = HistogramConfig { block: 32, grid: 2, copies: 1, cluster: 2, held: 0, bits: 32, merge: false };
    match prepare(&cpu, problem, HistogramConfig { grid: 3, ..config }, Variant::LaunchSized, 1) {
        Err(Error::InvalidConfig { kernel, reason }) => {
            assert_eq!(kernel, "histogram_u32");
            assert!(reason.contains("not whole clusters of 2"), "{reason}");
        }
        other => panic!("a grid of 3 in clusters of 2: {:?}", other.err()),
    }
    match prepare(&cpu, problem, HistogramConfig { cluster: 32, grid: 32, ..config }, Variant::LaunchSized, 1) {
        Err(Error::InvalidConfig { reason, .. }) => assert!(reason.contains("clusters of 1 to 16"), "{reason}"),
        other => panic!("clusters of 32: {:?}", other.err()),
    }
    let Some(wgsl) = wgsl_or_skip("histogram::clusters_are_refused_where_the_form_has_none") else { return };
    match prepare(&wgsl, problem, config, Variant::WgslOverride, 1) {
        Err(Error::InvalidConfig { reason, .. }) => {
            assert!(reason.contains("holds every bin in one workgroup"), "{reason}")
        }
        other => panic!("a WGSL cluster: {:?}", other.err()),
    }
}
