//! The CUDA C twins listed without a GPU (`dynsmem_host::twins`): the committed manifest
//! the build compiles with nvcc is the list the bench's cases give on an H100; the cubins
//! the build embedded are found under the keys the host computes; and the SASS comparison
//! runs on one twin (with the CUDA tools; `SKIPPED` without them unless
//! `DYNSMEM_REQUIRE_PTXAS=1`).
//!
//! `DYNSMEM_BLESS=1` rewrites `host/src/families/twins.manifest` instead of comparing.

mod common;

use std::path::Path;

use common::note;
use dynsmem::host::families::FAMILIES;
use dynsmem::host::family::DynFamily;
use dynsmem::host::tune::db::TuningDb;
use dynsmem::host::twins::{self, Twin, sass};
use dynsmem::images;

fn h100_twins() -> Vec<Twin> {
    let families: Vec<&dyn DynFamily> = FAMILIES.to_vec();
    twins::bench_twins(&families, twins::h100(), Some(&TuningDb::built_in()))
}

fn families_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("host/src/families")
}

#[test]
fn the_manifest_lists_the_h100_bench_twins() {
    let list = h100_twins();
    // Every family with a `.cu` file has a twin, each twin's source is that file and its
    // Rust entry is a kernel of the image.
    for f in FAMILIES.iter().filter(|_| families_dir().is_dir()) {
        let has_cu = families_dir().join(f.name()).join(format!("{}.cu", f.name())).is_file();
        assert_eq!(list.iter().any(|t| t.family == f.name()), has_cu, "{}: twins listed vs .cu file", f.name());
    }
    let entries: Vec<&str> = dynsmem::device::KERNELS.iter().flat_map(|t| t.iter()).map(|k| k.name).collect();
    // The source paths the manifest gives build.rs, where the source tree is at hand (a test
    // executable copied to a GPU machine may run without it).
    let tree = families_dir().is_dir();
    for t in list.iter().filter(|_| tree) {
        let path = families_dir().join(twins::source_path(t));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(text, t.source.source, "{}: the twin's source is not {}", t.source.name, path.display());
    }
    for t in &list {
        assert!(entries.contains(&t.rust_entry.as_str()), "{}: no Rust entry {}", t.source.name, t.rust_entry);
        let options = dynsmem::host::backend::cuda::nvrtc::source_options(&t.source);
        assert!(options.iter().all(|o| !o.contains(char::is_whitespace)), "{}: {options:?}", t.source.name);
    }
    let text = twins::manifest(&list);
    let file = families_dir().join("twins.manifest");
    if std::env::var("DYNSMEM_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&file, &text).unwrap();
        return;
    }
    let committed = include_str!("../host/src/families/twins.manifest");
    assert!(
        committed == text,
        "{} is not the list the bench gives on an H100 (a default config or a twin changed): \
         DYNSMEM_BLESS=1 cargo test --release --test twins rewrites it\n--- committed\n{committed}\n--- now\n{text}",
        file.display()
    );
}

#[test]
fn embedded_cubins_are_found_under_the_hosts_keys() {
    if images::TWIN_CUBINS.is_empty() {
        let required = std::env::var("DYNSMEM_REQUIRE_NVCC").is_ok_and(|v| v == "1");
        assert!(!required, "DYNSMEM_REQUIRE_NVCC=1 and the build embedded no twin cubin: {}", images::TWIN_NVCC);
        note(&format!("SKIPPED: no twin cubins embedded (twins::embedded_cubins...: {})", images::TWIN_NVCC));
        return;
    }
    let list = h100_twins();
    let archs: std::collections::BTreeSet<&str> = images::TWIN_CUBINS.iter().map(|(_, a, ..)| *a).collect();
    for arch in archs {
        for t in &list {
            let key = dynsmem::host::backend::cuda::nvrtc::twin_key(&t.source, arch);
            let found = images::TWIN_CUBINS.iter().find(|(k, a, ..)| *k == key && *a == arch);
            let (.., name, cubin) =
                found.unwrap_or_else(|| panic!("{} ({arch}): no cubin under the host's key", t.source.name));
            assert_eq!(*name, t.source.name);
            assert_eq!(&cubin[..4], b"\x7fELF", "{}: not an ELF cubin", t.source.name);
        }
        let listed = images::TWIN_CUBINS.iter().filter(|(_, a, ..)| *a == arch).count();
        assert_eq!(listed, list.len(), "{arch}: cubins embedded vs twins listed");
    }
}

#[test]
fn sass_mixes_of_the_reduce_twin_and_its_rust_entry() {
    let tools = match sass::Tools::find() {
        Ok(t) => t,
        Err(why) => {
            let required = std::env::var("DYNSMEM_REQUIRE_PTXAS").is_ok_and(|v| v == "1");
            assert!(!required, "DYNSMEM_REQUIRE_PTXAS=1 and {why}");
            note(&format!("SKIPPED: twins::sass_mixes...: {why}"));
            return;
        }
    };
    let list = h100_twins();
    let twin = list.iter().find(|t| t.family == "reduce").expect("reduce has a twin");
    let dir = std::env::temp_dir().join(format!("dynsmem-twins-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cuda = tools.disassemble(&tools.twin_cubin(&twin.source, (9, 0), &dir, 0).unwrap()).unwrap();
    let rust = tools.disassemble(&tools.rust_cubin(images::PTX, images::PTX_ARCH, &dir).unwrap()).unwrap();
    let mut sides = vec![("CUDA C nvcc", cuda, twin.source.entry), ("Rust", rust, twin.rust_entry.as_str())];
    // NVRTC's build, where libnvrtc loads (ci/ptxas.sh puts the wheel's on the loader path).
    if dynsmem::host::backend::cuda::nvrtc::library_present() {
        let nvrtc = tools.disassemble(&tools.nvrtc_cubin(&twin.source, (9, 0), &dir, 0).unwrap()).unwrap();
        sides.push(("CUDA C NVRTC", nvrtc, twin.source.entry));
    } else {
        note("twins::sass_mixes...: no libnvrtc, the NVRTC build is not compared");
    }
    let _ = std::fs::remove_dir_all(&dir);
    for (side, funcs, entry) in &sides {
        let mix = sass::mix(funcs.get(*entry).unwrap_or_else(|| panic!("{side}: no function {entry}")));
        // A block reduction: shared stores and loads, barriers, global loads.
        for class in ["STS.32", "LDS.32", "BAR", "LDG.128"] {
            assert!(mix.get(class).copied().unwrap_or(0) > 0, "{side} {entry}: no {class} in {mix:?}");
        }
    }
}
