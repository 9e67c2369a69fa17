//! Every family of the registry, derived from it: its bench cases at odd sizes (no side a
//! power of two or a multiple of 4), in every variant the backend runs, prepared, run and
//! verified against the CPU reference. One line per backend; a family added to the
//! registry is in it with no change here.

mod common;

use common::{cuda_or_skip, note, wgsl_or_skip};
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::contract::FamilyBackend;
use dynsmem::host::families::FAMILIES;
use dynsmem::host::family::Sizes;

/// Odd sizes, small enough for the CPU backend.
const ODD: Sizes = Sizes { n: 10_007, side: 67, rows: 5, bodies: 101, gemm: 37 };

/// Returns the number of cases verified; panics naming the family, case and error.
fn every_family<B: FamilyBackend>(backend: &B, sizes: &Sizes) -> usize {
    let mut verified = 0;
    for family in FAMILIES {
        for &variant in backend.variants() {
            for case in family.bench_cases(backend.erase(), variant, sizes, None) {
                let what = format!("{} {} {variant} {} {}", backend.kind(), family.name(), case.problem, case.config);
                let w = match family.prepare(backend.erase(), &case.problem, &case.config, variant, 7) {
                    // cuda-static's 48 KB of static arrays cannot hold what launch-sized
                    // memory can (rows of 32768 floats): refused with the limit, before launch.
                    Err(dynsmem::host::Error::SharedMemoryLimit { kind: "static", requested, limit, .. }) => {
                        assert!(requested > limit, "{what}: refused under its limit");
                        note(&format!("{what}: refused: {requested} B of static arrays, over {limit} B"));
                        continue;
                    }
                    other => other.unwrap_or_else(|e| panic!("{what}: prepare: {e}")),
                };
                w.run().unwrap_or_else(|e| panic!("{what}: run: {e}"));
                w.check().unwrap_or_else(|e| panic!("{what}: check: {e}"));
                verified += 1;
            }
        }
    }
    note(&format!("registry: {} cases verified on {}", verified, backend.kind()));
    verified
}

#[test]
fn cpu_backend() {
    assert!(every_family(&CpuBackend::new(), &ODD) >= FAMILIES.len());
}

#[test]
fn wgsl() {
    let Some(w) = wgsl_or_skip("registry::wgsl") else { return };
    assert!(every_family(&w, &ODD) >= FAMILIES.len());
}

#[test]
fn cuda() {
    let Some(c) = cuda_or_skip("registry::cuda") else { return };
    assert!(every_family(&c, &ODD) >= FAMILIES.len());
}

/// docs/families.md has a section (`## <name>`) for every family of the registry.
#[test]
fn every_family_has_a_section_in_the_docs() {
    const DOCS: &str = include_str!("../docs/families.md");
    let missing: Vec<&str> =
        FAMILIES.iter().map(|f| f.name()).filter(|n| !DOCS.lines().any(|l| l.trim() == format!("## {n}"))).collect();
    assert!(missing.is_empty(), "docs/families.md has no section for {missing:?}");
}

/// ci/sanitize.sh has a compute-sanitizer case (`"<name> --..."`) for every family of the registry.
#[test]
fn every_family_has_a_sanitizer_case() {
    const SCRIPT: &str = include_str!("../ci/sanitize.sh");
    let missing: Vec<&str> =
        FAMILIES.iter().map(|f| f.name()).filter(|n| !SCRIPT.contains(&format!("\n  \"{n} "))).collect();
    assert!(missing.is_empty(), "ci/sanitize.sh has no case for {missing:?}");
}
