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
//! - `DYNSMEM_CUDA_ALSO` (e.g. `sm_80:ptx75`, comma-separated): more PTX images to build, with
//!   the same entry directives, for the resource check only (`tests/ptxas.rs`, which finds
//!   them through `DYNSMEM_PTX_ALSO`); the host embeds the first image alone.
//! - `NVCC` (else `nvcc` on `PATH`, as the `cc` crate finds it), `DYNSMEM_TWIN_ARCHS` (default
//!   `sm_90`) and `DYNSMEM_REQUIRE_NVCC=1`: the CUDA C twins of `host/src/families/twins.manifest`
//!   compiled to cubins for each arch and embedded (`TWIN_CUBINS`); without nvcc none are, and the
//!   host compiles every twin with NVRTC at run time.
//! - `DYNSMEM_GIT_COMMIT`: the commit recorded in results, when `git` cannot tell.
//!
//! Without the `builtin-images` feature (on by default) no image is built and no twin is
//! compiled: a researcher's crate that takes only the command line (`dynsmem::cli::main`)
//! for kernels of its own builds none of ours.

use std::env;
use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed=rust-toolchain.toml");

    let arch = env::var("DYNSMEM_CUDA_ARCH").unwrap_or_else(|_| "sm_90a".into());
    let ptx = env::var("DYNSMEM_CUDA_PTX").unwrap_or_else(|_| "ptx80".into());
    // Register caps and cluster sizes come from the kernels' own table (`[max_registers = N]`,
    // `[cluster = N]` in `kernels!`): see `dynsmem_kernels::entry`.
    let entries: Vec<&dynsmem_kernels::KernelEntry> = dynsmem_kernels::KERNELS.iter().flat_map(|t| t.iter()).collect();
    let caps: Vec<(&str, u32)> =
        entries.iter().filter(|e| e.max_registers > 0).map(|e| (e.name, e.max_registers)).collect();
    let clusters: Vec<(&str, u32)> = entries.iter().filter(|e| e.cluster > 1).map(|e| (e.name, e.cluster)).collect();
    let builtin = env::var_os("CARGO_FEATURE_BUILTIN_IMAGES").is_some();
    println!("cargo:rerun-if-env-changed=DYNSMEM_CUDA_ALSO");
    let specs: Vec<(String, String)> = env::var("DYNSMEM_CUDA_ALSO")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|spec| {
            let (arch, ptx) = spec
                .trim()
                .split_once(':')
                .unwrap_or_else(|| panic!("DYNSMEM_CUDA_ALSO: {spec:?} is not ARCH:PTX (e.g. sm_80:ptx75)"));
            (arch.to_string(), ptx.to_string())
        })
        .collect();
    // The CUDA C twins the bench runs on an H100, compiled by nvcc where it is found (see
    // `dynsmem_build::twins`); the host uses a cubin only where its key matches the source
    // it would hand NVRTC.
    let families = root.join("host/src/families");
    // The embedded images, the resource-check images and the twins' cubins are independent
    // (each image has a target folder of its own): built at once, they take the longest of
    // the three instead of the sum.
    let (images, also, cubins) = std::thread::scope(|s| {
        let also = s.spawn(|| {
            specs
                .iter()
                .map(|(arch, ptx)| {
                    let images = dynsmem_build::Builder::new("device-kernels")
                        .cuda(arch, ptx)
                        .amdgpu(&[])
                        .max_registers(&caps)
                        .clusters(&clusters)
                        .build()
                        .unwrap_or_else(|e| panic!("{e}"));
                    images.ptx.display().to_string()
                })
                .collect::<Vec<String>>()
        });
        let cubins = s.spawn(|| {
            builtin.then(|| {
                dynsmem_build::twins::compile(
                    &families.join("twins.manifest"),
                    &root.join("host/src/backend/cuda/prelude.cuh"),
                    &out_dir,
                )
                .unwrap_or_else(|e| panic!("compiling the CUDA C twins: {e}"))
            })
        });
        let images = dynsmem_build::Builder::new("device-kernels")
            .cuda(&arch, &ptx)
            .max_registers(&caps)
            .clusters(&clusters)
            .skip_images(!builtin)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let also = also.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        let cubins = cubins.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (images, also, cubins)
    });
    images.write_module(&out_dir.join("kernels.rs")).expect("writing kernels.rs");
    println!("cargo:rustc-env=DYNSMEM_PTX_ALSO={}", also.join(";"));
    let Some(cubins) = cubins else {
        std::fs::write(out_dir.join("twins.rs"), dynsmem_build::twins::Cubins::default().module())
            .expect("writing twins.rs");
        dynsmem_build::emit_provenance(&root);
        return;
    };
    for why in cubins.skipped.iter().chain(&cubins.rejected) {
        println!("cargo:warning=dynsmem: {}", why.replace('\n', " | "));
    }
    std::fs::write(out_dir.join("twins.rs"), cubins.module()).expect("writing twins.rs");
    dynsmem_build::emit_provenance(&root);
}
