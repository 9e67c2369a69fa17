//! Builds the kernel crate `kernels/` for the GPU and embeds the image:
//! `$OUT_DIR/kernels.rs` (`PTX`, `PTX_ARCH`, `PTX_VERSION`, `AMDGPU`, `CHECKED`), which
//! `src/main.rs` includes. `DYNSMEM_CUDA_ARCH` / `DYNSMEM_CUDA_PTX` pick the PTX target.

use std::path::PathBuf;

fn main() {
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let images = dynsmem_build::Builder::new("kernels")
        // PTX only: each AMD arch builds `core` once more, and CI (no GPU) runs this example
        // on the CPU backend. Name gfx targets here (e.g. `&["gfx942"]`) to run on HIP.
        .amdgpu(&[])
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    images.write_module(&out_dir.join("kernels.rs")).expect("writing kernels.rs");
    // DYNSMEM_RUSTC and DYNSMEM_GIT_COMMIT for the records' provenance.
    dynsmem_build::emit_provenance(&root);
}
