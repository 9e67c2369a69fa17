//! GEMM conformance on the CPU backend always and on CUDA where a device is (WGSL has no
//! GEMM yet): awkward shapes, configs of one to four stages, configs past 48 KB of
//! launch-sized memory on CUDA, f32 and f16 inputs, and the compiled-in tile.

mod common;

use common::{conformance, cuda_or_skip};
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::device::sgemm::SgemmConfig;

const fn cfg(bm: u32, bn: u32, bk: u32, stages: u32) -> SgemmConfig {
    SgemmConfig { bm, bn, bk, stages }
}

#[test]
fn cpu_backend() {
    let cpu = CpuBackend::new();
    let shapes = [(1, 1, 1), (17, 33, 65), (33, 17, 1), (64, 64, 64), (70, 40, 37)];
    // 64 x 32 has whole warps (32 threads): the f32 kernel's warp-wide gather of A.
    let configs = [cfg(16, 16, 8, 2), cfg(32, 16, 4, 1), cfg(16, 32, 16, 3), cfg(32, 32, 8, 4), cfg(64, 32, 8, 2)];
    // f16 needs bk % 8 == 0: four of the five configs.
    assert_eq!(conformance::sgemm(&cpu, &shapes, &configs), 5 * (5 + 4));
}

#[test]
fn cuda() {
    let Some(cuda) = cuda_or_skip("sgemm::cuda") else { return };
    let shapes = [(1, 1, 1), (17, 33, 65), (1000, 1003, 997), (4095, 4097, 1), (65536, 64, 64), (1024, 1024, 1024)];
    let configs = [
        cfg(128, 128, 16, 2),
        // 55 KB and 70 KB of launch-sized memory: past the 48 KB default.
        cfg(128, 128, 16, 3),
        cfg(128, 128, 32, 2),
        cfg(64, 64, 16, 2),
        cfg(128, 64, 8, 4),
    ];
    // Launch-sized: f16 needs bk % 8 == 0 (all five); the fixed-tile entry adds one case per
    // shape. cuda-static: the same source with the tile compiled in and static arrays, which
    // must fit 48 KB: f32 128x128x16 with three stages (55296 B) and 128x128x32 with two
    // (69632 B) are refused before anything is built; every f16 config fits.
    assert_eq!(conformance::sgemm(&cuda, &shapes, &configs), 6 * (5 * 2 + 1) + 6 * (3 + 5));
}
