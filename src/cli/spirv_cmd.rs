//! `dynsmem spirv`: the SPIR-V profile of every WGSL pipeline the bench builds, per family.
//!
//! Each family's bench cases (both WGSL variants, the bench's default configs at its quick
//! sizes) are built, run once and verified on this machine's Vulkan adapter; the backend
//! profiles each pipeline as it creates it ([`WgpuKernel::spirv`]), and the profiles are
//! read back from its pipeline cache. The profile is of the SPIR-V wgpu hands the driver,
//! so it does not depend on the adapter beyond the assumptions listed in
//! `host/src/backend/wgpu/spirv.rs`.
//!
//! [`WgpuKernel::spirv`]: crate::host::backend::wgpu::WgpuKernel::spirv

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use crate::host::backend::{Backend, Probe};
use crate::host::contract::FamilyBackend;
use crate::host::family::{Erase, Sizes};
use crate::host::tune::db::TuningDb;
use anyhow::{Context, bail};

use super::emit;

pub fn spirv(families: &[String], json: Option<&Path>, db: Option<TuningDb>) -> anyhow::Result<()> {
    for name in families {
        if !crate::families().iter().any(|f| f.name() == name) {
            let all: Vec<&str> = crate::families().iter().map(|f| f.name()).collect();
            bail!("no family `{name}` (families: {})", all.join(", "));
        }
    }
    let backend = match crate::wgsl() {
        Probe::Ready(b) => b,
        Probe::Unavailable(_, why) => bail!("the WGSL pipelines need a Vulkan adapter: {why}"),
    };
    let device = backend.info().name.clone();
    say!("{}", crate::suite::describe(&backend));
    let mut out = crate::cli::files::append_to(json)?;
    let sizes = Sizes::cpu_adapter();
    let mut seen: HashSet<String> = HashSet::new();
    let mut wrong = Vec::new();
    for family in crate::families().iter().filter(|f| families.is_empty() || families.iter().any(|n| n == f.name())) {
        let mut notes = Vec::new();
        for &variant in FamilyBackend::variants(&backend) {
            for case in family.bench_cases(backend.erase(), variant, &sizes, db.as_ref()) {
                let what = format!("{variant} {} {}", case.problem, case.config);
                let ran = family
                    .prepare(backend.erase(), &case.problem, &case.config, variant, 42)
                    .and_then(|w| w.run().and_then(|()| backend.synchronize()).and_then(|()| w.check()));
                match ran {
                    Ok(()) => {}
                    Err(e @ crate::host::Error::Mismatch(_)) => {
                        notes.push(format!("{what}: WRONG: {e}"));
                        wrong.push(format!("{} {what}", family.name()));
                    }
                    Err(e) => notes.push(format!("{what}: not built: {e}")),
                }
            }
        }
        let profiles: Vec<_> = backend.pipeline_profiles().into_iter().filter(|(n, _)| !seen.contains(n)).collect();
        let width = profiles.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        say!("\n{}", family.name());
        for (name, p) in &profiles {
            say!("  {name:<width$}  {p}");
            if let Some(f) = out.as_mut() {
                let line = serde_json::json!({
                    "family": family.name(),
                    "kernel": name,
                    "device": device,
                    "api": backend.info().api,
                    "profile": p,
                });
                writeln!(f, "{line}")
                    .with_context(|| format!("writing {}", json.unwrap_or(Path::new("")).display()))?;
            }
            seen.insert(name.clone());
        }
        if profiles.is_empty() {
            say!("  (no pipeline profiled)");
        }
        for n in notes {
            say!("  note: {n}");
        }
    }
    if !wrong.is_empty() {
        bail!("{} case(s) ran and were wrong: {}", wrong.len(), wrong.join("; "));
    }
    Ok(())
}
