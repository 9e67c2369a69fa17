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
    let config = HistogramConfig { block: 256, grid: 2, copies: 1 };
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
    let config = HistogramConfig { block: 256, grid: 2, copies: 1 };
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
