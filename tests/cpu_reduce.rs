//! Reduce's Rust kernels, from the same source as the PTX, on the CPU backend: the
//! conformance suite at small sizes, run in CI.

mod common;

use common::conformance::{self, ReduceMatrix};
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::families::reduce::ReduceConfig;

#[test]
fn conformance_matrix() {
    let cpu = CpuBackend::new();
    let m = ReduceMatrix {
        sizes: vec![0, 1, 2, 1023, 100_003],
        blocks: vec![32, 64, 128, 256, 1024],
        extra: vec![
            ReduceConfig { block: 96, items_per_thread: 7, staged: false },
            ReduceConfig { block: 64, items_per_thread: 16, staged: true },
            // 205824 B of launch-sized memory per workgroup, past the 48 KB default.
            ReduceConfig { block: 256, items_per_thread: 200, staged: true },
        ],
        seed: 5,
    };
    // 5 sizes x 8 configs x 3 ops x 2 dtypes, one variant.
    assert_eq!(conformance::reduce(&cpu, &m), 5 * 8 * 3 * 2);
}
