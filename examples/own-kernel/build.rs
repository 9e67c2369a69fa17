//! Builds `kernels/` for the GPU (PTX only: name gfx targets in `.amdgpu(..)` for HIP) into
//! `$OUT_DIR/kernels.rs` (`PTX`, `AMDGPU`, `IMAGE_INFO`, ...), which the programs include.

fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let images = dynsmem_build::Builder::new("kernels").amdgpu(&[]).build().unwrap_or_else(|e| panic!("{e}"));
    images.write_module(&out.join("kernels.rs")).expect("writing kernels.rs");
    dynsmem_build::emit_provenance(env!("CARGO_MANIFEST_DIR").as_ref());
}
