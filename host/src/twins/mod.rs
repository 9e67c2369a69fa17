//! The CUDA C twins the registry's families build on a GPU, listed without that GPU: for the
//! ahead-of-time build of their cubins (the manifest `dynsmem_build::twins` compiles) and
//! for the machine-code comparison with the launch-sized Rust entries ([`sass`]).
//!
//! A twin is captured, not compiled: each family's bench cases are resolved and prepared
//! for the cuda-static variant on a [`CpuBackend::capturing_twins`] standing in for the GPU
//! (its name, limits and tuning-database entries), which records the [`CudaSource`] it is
//! asked for. The Rust entry of the same case is the one the twin's name starts with
//! (`<entry>[cuda-static,...]`).

pub mod sass;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::backend::cpu::CpuBackend;
use crate::backend::cuda::nvrtc::{CudaSource, source_options};
use crate::backend::{BackendKind, DeviceInfo, Limits, Variant};
use crate::family::{DynFamily, Erase, Sizes};
use crate::tune::db::TuningDb;

/// The H100 (SXM, 80 GB HBM3) as its driver describes it (name and limits as the CUDA
/// backend reads them there): the GPU the manifest's twins are listed for.
pub fn h100() -> DeviceInfo {
    DeviceInfo {
        backend: BackendKind::Cuda,
        name: "NVIDIA H100 80GB HBM3".into(),
        driver: "(listed without the device)".into(),
        api: "CUDA, sm_90".into(),
        is_cpu: false,
        limits: Limits::h100(),
    }
}

/// One bench case's CUDA C twin and the Rust entry it is the twin of.
#[derive(Debug, Clone)]
pub struct Twin {
    pub family: &'static str,
    pub problem: Value,
    /// The config the cuda-static variant runs (fitted to the static limit).
    pub config: Value,
    /// The launch-sized Rust entry of the case.
    pub rust_entry: String,
    pub source: CudaSource,
}

/// The twins of `families`' bench cases on the GPU `info` describes, at that GPU's bench
/// sizes, configs from `db` as the bench takes them; a case whose twin is the same source
/// and defines as an earlier one is listed once.
pub fn bench_twins(families: &[&dyn DynFamily], info: DeviceInfo, db: Option<&TuningDb>) -> Vec<Twin> {
    let backend = CpuBackend::capturing_twins(info);
    let sizes = Sizes::for_backend(&backend, None, false);
    let mut twins: Vec<Twin> = Vec::new();
    for family in families {
        for case in family.bench_cases(backend.erase(), Variant::CudaStatic, &sizes, db) {
            // Refused once the twin is captured (or earlier, for a case the family refuses
            // on this GPU): only the capture is wanted.
            let _ = family.prepare(backend.erase(), &case.problem, &case.config, Variant::CudaStatic, 0);
            for source in backend.captured_twins() {
                if twins.iter().any(|t| t.source == source) {
                    continue;
                }
                let rust_entry = source.name.split('[').next().unwrap_or_default().to_string();
                twins.push(Twin {
                    family: family.name(),
                    problem: case.problem.clone(),
                    config: case.config.clone(),
                    rust_entry,
                    source,
                });
            }
        }
    }
    twins
}

/// Where a registry family's twin source lives: `<family>/<file>` under
/// `host/src/families/` (the manifest's directory).
pub fn source_path(twin: &Twin) -> PathBuf {
    Path::new(twin.family).join(twin.source.file)
}

/// The manifest text `dynsmem_build::twins::compile` reads: a header, then one line per
/// twin (name, source path, file, entry, options but the architecture).
pub fn manifest(twins: &[Twin]) -> String {
    let mut text = String::from(
        "# CUDA C twins compiled ahead of time by nvcc (build.rs, dynsmem_build::twins), one per line:\n\
         # name, source (from this folder), file, entry, options. The cuda-static kernels of the bench on\n\
         # an H100 (bench sizes, built-in tuning database). Written by the test that checks it:\n\
         #   DYNSMEM_BLESS=1 cargo test --release --test twins\n",
    );
    for t in twins {
        let spec = dynsmem_build::twins::TwinSpec {
            name: t.source.name.clone(),
            path: source_path(t),
            file: t.source.file.into(),
            entry: t.source.entry.into(),
            options: source_options(&t.source),
        };
        text.push_str(&spec.line());
        text.push('\n');
    }
    text
}
