//! Builds `device-kernels` for the GPU targets and embeds the images, through the build
//! helper `dynsmem-build` (`host/build/`: the same one a researcher's own crate calls; it
//! documents the nested build). Writes `$OUT_DIR/kernels.rs`, a module of `pub const`
//! images that `src/lib.rs` includes.
//!
//! Settings (environment):
//! - `DYNSMEM_CUDA_ARCH` (default `sm_90a`) and `DYNSMEM_CUDA_PTX` (default `ptx80`): the
//!   PTX target. `sm_90a` (not the helper's `sm_90`) because the tensor-core GEMM's `wgmma`
//!   and `setmaxnreg` exist only there; such PTX loads on compute capability 9.0 alone. Use
//!   `sm_80` + `ptx75` for an image that also loads on an A100, `sm_90` for one that later
//!   GPUs can JIT (the `wgmma` entries then trap and the host refuses them).
//! - `DYNSMEM_AMDGPU_ARCH` (default `gfx90a,gfx942`): one or more comma-separated `gfx`
//!   names (gfx1100 and other RDNA targets build too; each arch compiles `core` once).
//! - `DYNSMEM_KERNELS_CHECKED=1`: bounds-check every shared-memory access on the device.
//! - `DYNSMEM_GIT_COMMIT`: the commit recorded in results, when `git` cannot tell.

use std::env;
use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed=rust-toolchain.toml");

    let arch = env::var("DYNSMEM_CUDA_ARCH").unwrap_or_else(|_| "sm_90a".into());
    let ptx = env::var("DYNSMEM_CUDA_PTX").unwrap_or_else(|_| "ptx80".into());
    let images = dynsmem_build::Builder::new("device-kernels")
        .cuda(&arch, &ptx)
        .max_registers(MAX_REGISTERS)
        .clusters(CLUSTERS)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    images.write_module(&out_dir.join("kernels.rs")).expect("writing kernels.rs");
    dynsmem_build::emit_provenance(&root);
}

/// PTX entries whose registers per thread ptxas must keep at or under a cap (`.maxnreg`),
/// which Rust has no attribute for. The GEMM entries: their block size is a launch-time
/// value, so ptxas cannot see that a 256-thread block needs at most 128 registers for two
/// blocks per multiprocessor; uncapped it gave the launch-time entry 159 (one block per
/// SM; the cost is in `host/src/families/sgemm/NOTES.md`). Blocks past 512 threads are then
/// refused before launch (the kernel's own limit), not failed.
const MAX_REGISTERS: &[(&str, u32)] = &[
    ("sgemm_f32", 128),
    ("sgemm_f32_bk8", 128),
    ("sgemm_f32_bk16", 128),
    ("sgemm_f32_bk32", 128),
    ("sgemm_f32_unroll4", 128),
    ("sgemm_f32_128x128x16s2", 128),
    ("hgemm_f16_f32", 128),
    // Warp-specialised wgmma: blocks of up to 384 threads (65536 / 384 rounded down to 8);
    // the warpgroups then trade registers with `setmaxnreg` (40 copying, 232 multiplying).
    ("hgemm_wgmma_f16_n256", 168),
    ("hgemm_wgmma_bf16_n256", 168),
    ("hgemm_wgmma_f16_n128", 168),
    ("hgemm_wgmma_bf16_n128", 168),
    ("hgemm_wgmma_f16_n256_fixed", 168),
    ("hgemm_wgmma_f16_n256_c2", 168),
    ("hgemm_wgmma_bf16_n256_c2", 168),
    ("hgemm_wgmma_f16_n256_c2_fixed", 168),
    // mma.sync: 64 accumulators; two 256-thread blocks per SM at 128.
    ("hgemm_mma_f16", 128),
    ("hgemm_mma_bf16", 128),
    // 16 x 8 thread tiles: 128 accumulators; one 256-thread block per SM at up to 255.
    ("sgemm_f32_tm16", 255),
    ("sgemm_f32_tm16_bk8", 255),
    ("sgemm_f32_tm16_bk16", 255),
    ("sgemm_f32_tm16_bk32", 255),
    ("sgemm_f32_tm16_bk64", 255),
    ("sgemm_f32_tm16_bk32_u8", 255),
    ("sgemm_f32_tm16_bk32_u16", 255),
];

/// PTX entries launched as thread-block clusters (`.reqnctapercluster`): the tensor-core
/// GEMM's `_c2` entries, whose two blocks share their B tiles by multicast copies
/// (`dynsmem_kernels::hgemm::CLUSTER`).
const CLUSTERS: &[(&str, u32)] =
    &[("hgemm_wgmma_f16_n256_c2", 2), ("hgemm_wgmma_bf16_n256_c2", 2), ("hgemm_wgmma_f16_n256_c2_fixed", 2)];
