//! Sets `cfg(gpu)` for the GPU targets (nvptx64, amdgpu), as `device-kernels/build.rs`
//! does, so the crate says "on a GPU" once instead of repeating the target list.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(gpu)");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if arch == "nvptx64" || arch == "amdgpu" {
        println!("cargo::rustc-cfg=gpu");
    }
}
