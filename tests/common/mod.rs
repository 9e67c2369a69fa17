//! Shared by the integration tests: finding backends (or skipping with a visible line),
//! and the conformance suite written once and run per backend.
#![allow(dead_code)]

pub mod cli;
pub mod conformance;

use std::io::Write;

use dynsmem::host::backend::Probe;
use dynsmem::host::backend::cuda::CudaBackend;
use dynsmem::host::backend::wgpu::WgpuBackend;

/// Writes straight to stderr: the test harness captures `println!`/`eprintln!`, and a
/// skip or the adapter a suite ran on must show in CI's log.
pub fn note(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

/// The CUDA backend, or `None` after printing `SKIPPED: no CUDA device`. Where the driver
/// reports a device but the backend cannot be made (a context left broken by an earlier
/// fault in this process, say), the test fails instead of skipping.
pub fn cuda_or_skip(test: &str) -> Option<CudaBackend> {
    match dynsmem::cuda(0) {
        Probe::Ready(b) => Some(b),
        Probe::Unavailable(_, why) if CudaBackend::device_present() => {
            panic!("{test}: a CUDA device is present but the backend failed: {why}")
        }
        Probe::Unavailable(_, why) => {
            note(&format!("SKIPPED: no CUDA device ({test}: {why})"));
            None
        }
    }
}

/// The WGSL backend. Without an adapter it skips with a printed line, unless
/// `DYNSMEM_REQUIRE_WGSL=1` (set by CI, which installs lavapipe), where it fails.
pub fn wgsl_or_skip(test: &str) -> Option<WgpuBackend> {
    match dynsmem::wgsl() {
        Probe::Ready(b) => {
            note(&format!("{test}: running on wgsl adapter \"{}\" ({})", b_name(&b), b_driver(&b)));
            Some(b)
        }
        Probe::Unavailable(_, why) => {
            if std::env::var("DYNSMEM_REQUIRE_WGSL").is_ok_and(|v| v == "1") {
                panic!("{test}: DYNSMEM_REQUIRE_WGSL=1 but no wgsl adapter: {why}");
            }
            note(&format!("SKIPPED: no Vulkan adapter ({test}: {why})"));
            None
        }
    }
}

fn b_name(b: &WgpuBackend) -> String {
    use dynsmem::host::backend::Backend;
    b.info().name.clone()
}

fn b_driver(b: &WgpuBackend) -> String {
    use dynsmem::host::backend::Backend;
    b.info().driver.clone()
}

/// The `dynsmem` binary the CLI tests run: `$DYNSMEM_BIN` if set, else the one cargo built
/// beside this test (its compile-time path), else the one next to this test executable, as
/// on a GPU machine where `.device/bin/` holds both and the build tree is absent.
pub fn dynsmem_bin() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("DYNSMEM_BIN") {
        return p.into();
    }
    let built = std::path::PathBuf::from(env!("CARGO_BIN_EXE_dynsmem"));
    if built.exists() {
        return built;
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    exe.parent().expect("a directory").join("dynsmem")
}

/// A tuning-database entry on the CPU backend's device: `family`'s `problem` tuned to
/// `params`, measured on the kernel image `image`.
pub fn cpu_db_entry(
    family: &str,
    problem: serde_json::Value,
    params: &[(&str, u32)],
    image: &str,
) -> dynsmem::host::tune::db::DbEntry {
    use dynsmem::host::backend::Backend;
    let cpu = dynsmem::host::backend::cpu::CpuBackend::new();
    let info = cpu.info();
    dynsmem::host::tune::db::DbEntry {
        fingerprint: dynsmem::host::tune::db::Fingerprint {
            device: info.name.clone(),
            backend: info.backend,
            multiprocessors: info.limits.multiprocessors,
            driver: info.driver.clone(),
            image_hash: image.into(),
            sm_clock_mhz: None,
        },
        family: family.into(),
        variant: "launch-sized".into(),
        problem,
        objective: "time".into(),
        params: params.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        score: 1.0,
        median_ms: 1.0,
        gbps: None,
        tflops: None,
        verified_configs: 1,
        commit: "test".into(),
        unix_time: 0,
    }
}
