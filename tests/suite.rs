//! The kernel suite's conformance (transpose, softmax, conv1d, stencil2d, scan, nbody) on every backend
//! present: the CPU backend and the WGSL path always (lavapipe in CI), CUDA where a device
//! is. Each suite is written once in `common::conformance` and run per backend here.

mod common;

use common::{conformance, cuda_or_skip, wgsl_or_skip};
use dynsmem::host::backend::cpu::CpuBackend;

// (3, 1001) to (2, 5): thin matrices, cut in slabs (one side of at most 8).
const TRANSPOSE: [(u32, u32); 10] =
    [(0, 0), (1, 1), (1, 37), (37, 1), (33, 65), (130, 97), (3, 1001), (1001, 7), (8, 333), (2, 5)];
const SOFTMAX: [(u32, u32); 5] = [(1, 1), (3, 7), (2, 33), (5, 1000), (2, 4097)];
const CONV1D_SIZES: [u64; 4] = [1, 5, 1000, 10_007];
const CONV1D_TAPS: [u32; 3] = [3, 33, 129];
// (64, 20) and (132, 9): widths that are whole vectors, so rows are loaded and stored as such.
const STENCIL: [(u32, u32); 7] = [(1, 1), (1, 9), (7, 5), (70, 33), (130, 67), (64, 20), (132, 9)];
// Radii 3 to 6 start the window at every offset in its first vector (each with its
// remainder of 2r + 1 taps over whole chunks of four); 9 and 16 take halos of three and four
// vectors.
const STENCIL_ANY: [(u32, u32); 4] = [(1, 1), (7, 5), (70, 33), (132, 9)];
const RADII_ANY: [u32; 8] = [3, 4, 5, 6, 7, 8, 9, 16];
const SCAN: [u64; 6] = [0, 1, 2, 191, 4097, 100_003];
const NBODY: [u32; 5] = [1, 2, 100, 1000, 1001];
// Rows of every start alignment, shorter than a cluster's blocks (1, 5) and longer.
const ROWS_IN_CLUSTERS: [(u32, u32); 5] = [(3, 1), (4, 5), (4, 7), (3, 1001), (2, 4099)];
// (threads, blocks per cluster): 5 and 3 threads are not warps or powers of two; 16 blocks
// is past the portable cluster size.
const CLUSTER_CONFIGS: [(u32, u32); 4] = [(8, 2), (5, 4), (3, 8), (4, 16)];

#[test]
fn cpu_backend() {
    let cpu = CpuBackend::new();
    assert_eq!(conformance::transpose(&cpu, &TRANSPOSE), 10 * 3);
    assert_eq!(conformance::softmax(&cpu, &SOFTMAX), 5 * 2);
    assert_eq!(conformance::conv1d(&cpu, &CONV1D_SIZES, &CONV1D_TAPS), 4 * 3 * 3);
    assert_eq!(conformance::stencil2d(&cpu, &STENCIL), 7 * 4 * 2);
    assert_eq!(conformance::stencil2d_any_radius(&cpu, &STENCIL_ANY, &RADII_ANY), 4 * 8 * 2);
    assert_eq!(conformance::scan(&cpu, &SCAN), 6 * 4 * 2);
    assert_eq!(conformance::nbody(&cpu, &NBODY), 5 * 3);
    assert_eq!(conformance::rows_in_clusters(&cpu, &ROWS_IN_CLUSTERS, &CLUSTER_CONFIGS), 5 * 4 * 2);
}

#[test]
fn wgsl() {
    let Some(wgsl) = wgsl_or_skip("suite::wgsl") else { return };
    assert_eq!(conformance::transpose(&wgsl, &TRANSPOSE), 10 * 3 * 2);
    // Softmax's twin has a subgroup form: a third variant where the adapter has subgroups.
    let rows = serde_json::json!({"rows": 1, "cols": 1});
    let softmax_variants = conformance::variants_in(&dynsmem::host::families::softmax::SOFTMAX, &rows, &wgsl).len();
    assert_eq!(conformance::softmax(&wgsl, &SOFTMAX), 5 * 2 * softmax_variants);
    assert_eq!(conformance::conv1d(&wgsl, &CONV1D_SIZES, &CONV1D_TAPS), 4 * 3 * 3 * 2);
    assert_eq!(conformance::stencil2d(&wgsl, &STENCIL), 7 * 4 * 2 * 2);
    let scan = serde_json::json!({"n": 1, "dtype": "f32"});
    let scan_variants = conformance::variants_in(&dynsmem::host::families::scan::SCAN, &scan, &wgsl).len();
    assert_eq!(conformance::scan(&wgsl, &SCAN), 6 * 4 * scan_variants * 2);
    assert_eq!(conformance::nbody(&wgsl, &NBODY), 5 * 3 * 2);
}

#[test]
fn cuda() {
    let Some(cuda) = cuda_or_skip("suite::cuda") else { return };
    // Two variants each, launch-sized and cuda-static. cuda-static refuses what its 48 KB
    // of static arrays cannot hold (before building anything): rows of 32768 floats (both
    // configs), and the scan default of 512 x 48 (100752 B; the other three scan configs
    // fit).
    let thin = [(3, 1_000_003), (777_777, 7), (8, 4099)];
    assert_eq!(conformance::transpose(&cuda, &[(0, 0), (1, 37), (1000, 1003), (4096, 4100)]), 4 * 3 * 2);
    assert_eq!(conformance::transpose(&cuda, &thin), 3 * 3 * 2);
    assert_eq!(conformance::softmax(&cuda, &[(1, 1), (7, 1000), (3, 4096), (5, 32768), (1000, 4099)]), 5 * 2 * 2 - 2);
    assert_eq!(conformance::conv1d(&cuda, &[1, 1000, 1 << 20], &[3, 33, 129]), 3 * 3 * 3 * 2);
    assert_eq!(conformance::stencil2d(&cuda, &[(1, 1), (7, 5), (1000, 777), (16384, 35)]), 4 * 4 * 2 * 2);
    let any = [(1, 1), (1000, 777), (4099, 67)];
    assert_eq!(conformance::stencil2d_any_radius(&cuda, &any, &[3, 4, 5, 6, 7, 8, 13, 16]), 3 * 8 * 2);
    assert_eq!(conformance::scan(&cuda, &[0, 1, 191, 100_003, 1 << 24]), 5 * 4 * 2 + 5 * 3 * 2);
    assert_eq!(conformance::nbody(&cuda, &[1, 100, 1001, 1 << 16]), 4 * 3 * 2);
    let shapes = [(3, 1), (7, 1001), (1000, 20000), (9, 32771)];
    let configs = [(256, 2), (1024, 4), (512, 8), (33, 2), (256, 16)];
    assert_eq!(conformance::rows_in_clusters(&cuda, &shapes, &configs), 4 * 5 * 2);
    // Rows whose part and RMSNorm's held weights fit only clusters of 16 (one row of
    // 262147: the default's case for a cluster of 16).
    let long = [(5, 65536), (1, 262_147)];
    assert_eq!(conformance::rows_in_clusters(&cuda, &long, &[(256, 16), (33, 16)]), 2 * 2 * 2);
}
