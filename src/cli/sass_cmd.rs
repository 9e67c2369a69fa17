//! `dynsmem sass`: per family, the machine code of the launch-sized Rust entry beside that
//! of its CUDA C twin at the config the bench runs on an H100 (built by NVRTC, as the
//! cuda-static variant runs it, and by nvcc), as instruction mixes with the classes that
//! differ named. No GPU: ptxas compiles the embedded PTX and NVRTC's, nvcc the twin with the
//! same options, nvdisasm lists them (see `dynsmem_host::twins::sass`).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use crate::host::family::DynFamily;
use crate::host::tune::db::TuningDb;
use crate::host::twins::{self, sass};
use anyhow::{Context, anyhow, bail};

use super::emit;

pub fn sass(families: &[String], markdown: bool, json: Option<&Path>, db: Option<TuningDb>) -> anyhow::Result<()> {
    let chosen: Vec<&dyn DynFamily> = crate::families()
        .iter()
        .copied()
        .filter(|f| families.is_empty() || families.iter().any(|n| n == f.name()))
        .collect();
    if let Some(n) = families.iter().find(|n| !crate::families().iter().any(|f| f.name() == *n)) {
        let all: Vec<&str> = crate::families().iter().map(|f| f.name()).collect();
        bail!("no family `{n}` (families: {})", all.join(", "));
    }
    let tools = sass::Tools::find().map_err(|e| anyhow!(e))?;
    let list = twins::bench_twins(&chosen, twins::h100(), db.as_ref());
    if list.is_empty() {
        bail!("none of {} has a CUDA C twin", families.join(", "));
    }
    let dir = std::env::temp_dir().join(format!("dynsmem-sass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let rust_arch = crate::images::PTX_ARCH;
    let twin_arch = crate::host::backend::cuda::nvrtc::arch(TWIN_CAPABILITY.0, TWIN_CAPABILITY.1);
    let rust = tools.rust_cubin(crate::images::PTX, rust_arch, &dir).map_err(|e| anyhow!(e))?;
    let rust = tools.disassemble(&rust).map_err(|e| anyhow!(e))?;
    say!(
        "SASS instruction mixes (static counts): Rust entries from the embedded PTX through {} for {rust_arch}; \
         CUDA C twins through NVRTC (its PTX through ptxas, as the driver would JIT it) and through {}, for \
         {twin_arch} with the same options; configs of the bench on an H100.",
        tools.ptxas.display(),
        tools.nvcc.display()
    );
    let mut out = crate::cli::files::append_to(json)?;
    let mut nvrtc_missing = None;
    for (n, twin) in list.iter().enumerate() {
        let entry = twin.source.entry;
        let mix_of = |cubin: Result<std::path::PathBuf, String>| -> anyhow::Result<Mix> {
            let funcs = tools.disassemble(&cubin.map_err(|e| anyhow!(e))?).map_err(|e| anyhow!(e))?;
            Ok(sass::mix(funcs.get(entry).ok_or_else(|| anyhow!("{entry} is not in its cubin"))?))
        };
        let r = rust.get(&twin.rust_entry).ok_or_else(|| anyhow!("{} is not in the PTX image", twin.rust_entry))?;
        let rust_mix = sass::mix(r);
        let nvcc = mix_of(tools.twin_cubin(&twin.source, TWIN_CAPABILITY, &dir, n))?;
        // NVRTC's column needs libnvrtc; without it the comparison is with nvcc's build.
        let nvrtc = match tools.nvrtc_cubin(&twin.source, TWIN_CAPABILITY, &dir, n) {
            Ok(c) => Some(mix_of(Ok(c))?),
            Err(e) => {
                nvrtc_missing.get_or_insert(e);
                None
            }
        };
        say!("\n{} {}: {} (launch-sized) vs {}", twin.family, twin.problem, twin.rust_entry, twin.source.name);
        print_table(&rust_mix, nvrtc.as_ref(), &nvcc, markdown)?;
        let (twin_mix, by) = match &nvrtc {
            Some(m) => (m, "NVRTC"),
            None => (&nvcc, "nvcc"),
        };
        say!("  differ, Rust vs CUDA C ({by}): {}", named(&sass::differences(&rust_mix, twin_mix)));
        if let Some(m) = &nvrtc {
            say!("  differ, CUDA C NVRTC vs nvcc: {}", named(&sass::differences(m, &nvcc)));
        }
        if let Some(f) = out.as_mut() {
            let line = serde_json::json!({
                "family": twin.family,
                "problem": twin.problem,
                "config": twin.config,
                "rust_entry": twin.rust_entry,
                "rust_arch": rust_arch,
                "twin": twin.source.name,
                "twin_arch": twin_arch,
                "rust": rust_mix,
                "nvrtc": nvrtc,
                "nvcc": nvcc,
                "commit": crate::COMMIT,
            });
            writeln!(f, "{line}").context("writing the JSON lines")?;
        }
    }
    if let Some(why) = nvrtc_missing {
        say!("\n(no NVRTC column: {why})");
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

type Mix = BTreeMap<&'static str, u32>;

/// The twins' compute capability: the H100's (NVRTC compiles for `sm_90` there).
const TWIN_CAPABILITY: (i32, i32) = (9, 0);

/// `class a vs b, ...`, or `none`.
fn named(diff: &[sass::Difference]) -> String {
    let named: Vec<String> = diff.iter().map(|(class, a, b)| format!("{class} {a} vs {b}")).collect();
    if named.is_empty() { "none".into() } else { named.join(", ") }
}

/// The classes any side has, one row each.
fn print_table(rust: &Mix, nvrtc: Option<&Mix>, nvcc: &Mix, markdown: bool) -> anyhow::Result<()> {
    let has = |m: &Mix, c: &str| m.contains_key(c);
    let rows = sass::CLASSES.iter().filter(|c| has(rust, c) || has(nvcc, c) || nvrtc.is_some_and(|m| has(m, c)));
    let get = |m: &Mix, c: &str| m.get(c).copied().unwrap_or(0);
    let nvrtc_cell = |c: &str| nvrtc.map_or("-".to_string(), |m| get(m, c).to_string());
    if markdown {
        say!("\n| class | Rust | CUDA C (NVRTC) | CUDA C (nvcc) |\n|---|---:|---:|---:|");
    } else {
        say!("  {:<11} {:>6} {:>13} {:>12}", "class", "Rust", "CUDA C NVRTC", "CUDA C nvcc");
    }
    for class in rows {
        let (r, v, c) = (get(rust, class), nvrtc_cell(class), get(nvcc, class));
        if markdown {
            say!("| {class} | {r} | {v} | {c} |");
        } else {
            say!("  {class:<11} {r:>6} {v:>13} {c:>12}");
        }
    }
    Ok(())
}
