//! Registers, spills, stack, static shared memory and barriers of every PTX entry, as ptxas
//! reports them (`ptxas -v`), for each PTX image the build made: the embedded one
//! (`images::PTX_ARCH`) and those `DYNSMEM_CUDA_ALSO` asked for (e.g. `sm_80:ptx75`). No GPU
//! or driver: ptxas comes from the CUDA toolchain wheels (`ci/ptxas.sh` installs them).
//!
//! Fails when an entry spills that its `kernels!` line does not mark `[spills = "why"]`, or
//! when its registers pass its `[max_registers = N]` cap. Prints one table per image;
//! `DYNSMEM_PTXAS_TABLE=FILE` also writes them there (`ci/ptxas.sh` regenerates the committed
//! table so). Without ptxas (`DYNSMEM_PTXAS`, `PATH`, `CUDA_HOME/bin`), or with one older than
//! the image's PTX, it prints `SKIPPED`, unless `DYNSMEM_REQUIRE_PTXAS=1` (CI) makes that a failure.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::note;
use dynsmem::images;

/// What ptxas says of one entry.
#[derive(Debug, Default, Clone, PartialEq)]
struct Resources {
    registers: u32,
    spill_stores: u32,
    spill_loads: u32,
    stack: u32,
    shared: u32,
    barriers: u32,
}

/// The ptxas to run: `DYNSMEM_PTXAS`, else `ptxas` on `PATH`, else `$CUDA_HOME/bin/ptxas`.
fn ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DYNSMEM_PTXAS") {
        return Some(PathBuf::from(p));
    }
    let on_path = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("ptxas")).find(|p| p.is_file()));
    on_path
        .or_else(|| std::env::var_os("CUDA_HOME").map(|h| PathBuf::from(h).join("bin/ptxas")).filter(|p| p.is_file()))
}

/// The first number before `unit` in `line` (`"..., 28 bytes spill stores"` -> 28).
fn number_before(line: &str, unit: &str) -> Option<u32> {
    let at = line.find(unit)?;
    line[..at].split([',', ' ', ':']).rev().find(|w| !w.is_empty())?.parse().ok()
}

/// Parses `ptxas -v` output: entries by name. ptxas prints, per function, a
/// "Compiling entry function 'NAME'" line (entries only), "N bytes stack frame, N bytes
/// spill stores, N bytes spill loads" and "Used N registers, used N barriers, N bytes smem".
fn parse(text: &str) -> BTreeMap<String, Resources> {
    let mut out = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or_default().to_string();
            out.insert(name.clone(), Resources::default());
            current = Some(name);
        } else if line.contains("Function properties for ") && !line.contains(current.as_deref().unwrap_or("\0")) {
            current = None; // a device function's properties, not the entry's
        } else if let Some(r) = current.as_ref().and_then(|n| out.get_mut(n)) {
            if line.contains("bytes stack frame") {
                r.stack = number_before(line, "bytes stack frame").unwrap_or(0);
                r.spill_stores = number_before(line, "bytes spill stores").unwrap_or(0);
                r.spill_loads = number_before(line, "bytes spill loads").unwrap_or(0);
            } else if line.contains("Used ") && line.contains(" registers") {
                r.registers = number_before(line, "registers").unwrap_or(0);
                r.barriers = number_before(line, "barriers").unwrap_or(0);
                r.shared = number_before(line, "bytes smem").unwrap_or(0);
            }
        }
    }
    out
}

/// The PTX images of this build: (arch, path or text).
fn images_built() -> Vec<(String, String)> {
    let mut v = vec![(images::PTX_ARCH.to_string(), images::PTX.to_string())];
    for path in env!("DYNSMEM_PTX_ALSO").split(';').filter(|p| !p.is_empty()) {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let arch = text
            .lines()
            .find_map(|l| l.strip_prefix(".target "))
            .map(|t| t.split([',', ' ']).next().unwrap_or(t).to_string())
            .unwrap_or_else(|| panic!("{path}: no .target line"));
        v.push((arch, text));
    }
    v
}

/// `ptxas -v` on `ptx` for `arch`: its report, or `None` where this ptxas is too old for the
/// image's PTX version.
fn run_ptxas(ptxas: &Path, arch: &str, ptx: &str) -> Option<String> {
    let dir = std::env::temp_dir().join(format!("dynsmem-ptxas-{}-{arch}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (src, cubin) = (dir.join("k.ptx"), dir.join("k.cubin"));
    std::fs::write(&src, ptx).unwrap();
    let out = Command::new(ptxas)
        .args(["-v", "--gpu-name", arch, "-o"])
        .arg(&cubin)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", ptxas.display()));
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() && text.contains("Unsupported .version") {
        return None; // a ptxas older than the image's PTX ISA (a CUDA 11 toolkit on PATH)
    }
    assert!(out.status.success(), "ptxas --gpu-name {arch} failed:\n{text}");
    Some(text)
}

#[test]
fn every_entry_within_its_register_cap_and_spilling_only_where_marked() {
    let required = std::env::var("DYNSMEM_REQUIRE_PTXAS").is_ok_and(|v| v == "1");
    let Some(ptxas) = ptxas() else {
        assert!(!required, "DYNSMEM_REQUIRE_PTXAS=1 and no ptxas found (DYNSMEM_PTXAS, PATH, CUDA_HOME/bin)");
        note(
            "SKIPPED: no ptxas (ptxas::every_entry_within_its_register_cap_and_spilling_only_where_marked: set DYNSMEM_PTXAS or put the CUDA toolchain's bin on PATH; ci/ptxas.sh installs it)",
        );
        return;
    };
    if images::PTX.is_empty() {
        note("SKIPPED: built without device images (DYNSMEM_DEVICE_IMAGES=none)");
        return;
    }
    let version =
        Command::new(&ptxas).arg("--version").output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    let version = version.ok().and_then(|v| v.lines().last().map(str::to_string)).unwrap_or_default();
    let entries: Vec<_> = dynsmem::host::device::KERNELS.iter().flat_map(|t| t.iter()).collect();
    let mut tables = Vec::new();
    let mut wrong = Vec::new();
    for (arch, ptx) in images_built() {
        let Some(report) = run_ptxas(&ptxas, &arch, &ptx) else {
            assert!(!required, "DYNSMEM_REQUIRE_PTXAS=1 and {} is older than the {arch} image's PTX", ptxas.display());
            note(&format!("SKIPPED: {} ({version}) is older than the {arch} image's PTX version", ptxas.display()));
            continue;
        };
        let found = parse(&report);
        let mut rows = vec![
            format!("### {arch} ({version})\n"),
            "| entry | registers (cap) | spill stores B | spill loads B | stack B | static shared B | barriers | spills allowed because |".into(),
            "| --- | --- | --- | --- | --- | --- | --- | --- |".into(),
        ];
        for e in &entries {
            let Some(r) = found.get(e.name) else {
                wrong.push(format!("{arch}: {} is not among ptxas's entries", e.name));
                continue;
            };
            let cap = if e.max_registers > 0 { format!(" ({})", e.max_registers) } else { String::new() };
            rows.push(format!(
                "| {} | {}{cap} | {} | {} | {} | {} | {} | {} |",
                e.name, r.registers, r.spill_stores, r.spill_loads, r.stack, r.shared, r.barriers, e.spills
            ));
            if (r.spill_stores > 0 || r.spill_loads > 0) && e.spills.is_empty() {
                wrong.push(format!(
                    "{arch}: {} spills ({} B stores, {} B loads) and its kernels! line has no [spills = \"why\"]",
                    e.name, r.spill_stores, r.spill_loads
                ));
            }
            if e.max_registers > 0 && r.registers > e.max_registers {
                wrong.push(format!(
                    "{arch}: {} uses {} registers, over its cap of {}",
                    e.name, r.registers, e.max_registers
                ));
            }
            if !e.spills.is_empty() && r.spill_stores == 0 && r.spill_loads == 0 {
                note(&format!("{arch}: {} is marked [spills] and does not spill here", e.name));
            }
        }
        tables.push(rows.join("\n"));
    }
    let text = tables.join("\n\n");
    note(&text);
    if let Some(path) = std::env::var_os("DYNSMEM_PTXAS_TABLE") {
        std::fs::write(&path, format!("{text}\n")).unwrap_or_else(|e| panic!("{}: {e}", Path::new(&path).display()));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn ptxas_output_parses_per_entry() {
    let text = "\
ptxas info    : Compiling entry function 'sgemm_f32' for 'sm_90a'
ptxas info    : Function properties for sgemm_f32
    32 bytes stack frame, 28 bytes spill stores, 60 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 32 bytes cumulative stack size, 1024 bytes smem
ptxas info    : Function properties for _ZN4core9panicking9panic_fmt
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Compiling entry function 'transpose_f32' for 'sm_90a'
ptxas info    : Function properties for transpose_f32
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers
";
    let p = parse(text);
    let want = Resources { registers: 128, spill_stores: 28, spill_loads: 60, stack: 32, shared: 1024, barriers: 1 };
    assert_eq!(p["sgemm_f32"], want);
    assert_eq!(p["transpose_f32"], Resources { registers: 32, barriers: 1, ..Resources::default() });
    assert_eq!(p.len(), 2, "device functions are not entries");
}
