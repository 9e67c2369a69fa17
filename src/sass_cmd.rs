//! `dynsmem sass`: per family, the machine code of the launch-sized Rust entry beside that
//! of its CUDA C twin at the config the bench runs on an H100, as instruction mixes with
//! the classes that differ named. No GPU: ptxas compiles the embedded PTX, nvcc the twin
//! (the options NVRTC gets), nvdisasm lists both (see `dynsmem_host::twins::sass`).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, anyhow, bail};
use dynsmem::host::families::FAMILIES;
use dynsmem::host::family::DynFamily;
use dynsmem::host::tune::db::TuningDb;
use dynsmem::host::twins::{self, sass};

use super::emit;

pub fn sass(families: &[String], markdown: bool, json: Option<&Path>, db: Option<TuningDb>) -> anyhow::Result<()> {
    let chosen: Vec<&dyn DynFamily> =
        FAMILIES.iter().copied().filter(|f| families.is_empty() || families.iter().any(|n| n == f.name())).collect();
    if let Some(n) = families.iter().find(|n| !FAMILIES.iter().any(|f| f.name() == *n)) {
        let all: Vec<&str> = FAMILIES.iter().map(|f| f.name()).collect();
        bail!("no family `{n}` (families: {})", all.join(", "));
    }
    let tools = sass::Tools::find().map_err(|e| anyhow!(e))?;
    let list = twins::bench_twins(&chosen, twins::h100(), db.as_ref());
    if list.is_empty() {
        bail!("none of {} has a CUDA C twin", families.join(", "));
    }
    let dir = std::env::temp_dir().join(format!("dynsmem-sass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let rust_arch = dynsmem::images::PTX_ARCH;
    let twin_arch = "sm_90";
    let rust = tools.rust_cubin(dynsmem::images::PTX, rust_arch, &dir).map_err(|e| anyhow!(e))?;
    let rust = tools.disassemble(&rust).map_err(|e| anyhow!(e))?;
    say!(
        "SASS instruction mixes (static counts): Rust entries from the embedded PTX through {} for {rust_arch}; \
         CUDA C twins through {} for {twin_arch} with NVRTC's options; configs of the bench on an H100.",
        tools.ptxas.display(),
        tools.nvcc.display()
    );
    let mut out = match json {
        Some(p) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("opening {}", p.display()))?,
        ),
        None => None,
    };
    for (n, twin) in list.iter().enumerate() {
        let cubin = tools.twin_cubin(&twin.source, twin_arch, &dir, n).map_err(|e| anyhow!(e))?;
        let funcs = tools.disassemble(&cubin).map_err(|e| anyhow!(e))?;
        let r = rust.get(&twin.rust_entry).ok_or_else(|| anyhow!("{} is not in the PTX image", twin.rust_entry))?;
        let c = funcs.get(twin.source.entry).ok_or_else(|| anyhow!("{} is not in its cubin", twin.source.entry))?;
        let (rm, cm) = (sass::mix(r), sass::mix(c));
        let diff = sass::differences(&rm, &cm);
        say!("\n{} {}: {} (launch-sized) vs {}", twin.family, twin.problem, twin.rust_entry, twin.source.name);
        print_table(&rm, &cm, markdown)?;
        let named: Vec<String> = diff.iter().map(|(class, r, c)| format!("{class} {r} vs {c}")).collect();
        say!("  differ (Rust vs CUDA C): {}", if named.is_empty() { "none".into() } else { named.join(", ") });
        if let Some(f) = out.as_mut() {
            let line = serde_json::json!({
                "family": twin.family,
                "problem": twin.problem,
                "config": twin.config,
                "rust_entry": twin.rust_entry,
                "rust_arch": rust_arch,
                "twin": twin.source.name,
                "twin_arch": twin_arch,
                "rust": rm,
                "cuda": cm,
                "commit": dynsmem::COMMIT,
            });
            writeln!(f, "{line}").context("writing the JSON lines")?;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The classes either side has, one row each.
fn print_table(rust: &BTreeMap<&str, u32>, cuda: &BTreeMap<&str, u32>, markdown: bool) -> anyhow::Result<()> {
    let rows = sass::CLASSES.iter().filter(|c| rust.contains_key(*c) || cuda.contains_key(*c));
    if markdown {
        say!("\n| class | Rust | CUDA C |\n|---|---:|---:|");
    } else {
        say!("  {:<11} {:>6} {:>7}", "class", "Rust", "CUDA C");
    }
    for class in rows {
        let (r, c) = (rust.get(class).copied().unwrap_or(0), cuda.get(class).copied().unwrap_or(0));
        if markdown {
            say!("| {class} | {r} | {c} |");
        } else {
            say!("  {class:<11} {r:>6} {c:>7}");
        }
    }
    Ok(())
}
