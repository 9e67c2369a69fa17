//! Every family of the registry (`FAMILIES`; no family is named here), on the paths the
//! per-family suites do not reach:
//! - the bench's cases with the configs a GPU runs ([`CpuBackend::gpu_shaped`]: scan's
//!   512 x 48, softmax's 256-thread rows, SGEMM's 128 x 128 tiles) at the CPU backend's
//!   sizes, so the code those configs select (the scan's vectorised raking runs, for one)
//!   runs before any GPU does;
//! - each family's edge cases ([`Family::edge_cases`](dynsmem::host::family::Family::edge_cases)):
//!   launches of more tiles than the 65535-block grid, which only the kernels'
//!   grid-stride loops cover; on the CPU backend and on WGSL (lavapipe in CI).
//!
//! Every case is prepared, run once and checked against its CPU reference; a failure
//! names the family, variant, problem, config and seed (the CPU backend's device name
//! carries its schedule's seed).

mod common;

use common::wgsl_or_skip;
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::backend::{Backend, Variant};
use dynsmem::host::contract::FamilyBackend;
use dynsmem::host::families::FAMILIES;
use dynsmem::host::family::{DynFamily, Erase, Resolved, Sizes};

const SEED: u64 = 25;

/// Runs and checks `cases` of every family on `backend`; returns how many ran.
fn check_all<B: FamilyBackend>(backend: &B, cases: impl Fn(&dyn DynFamily, Variant) -> Vec<Resolved>) -> usize {
    let mut ran = 0;
    for family in FAMILIES {
        for &variant in backend.variants() {
            for case in cases(*family, variant) {
                let what = format!(
                    "{} {variant} on {}: problem {} config {} seed {SEED}",
                    family.name(),
                    backend.info().name,
                    case.problem,
                    case.config
                );
                let w = family
                    .prepare(backend.erase(), &case.problem, &case.config, variant, SEED)
                    .unwrap_or_else(|e| panic!("{what}: prepare: {e}"));
                w.run().unwrap_or_else(|e| panic!("{what}: run: {e}"));
                w.check().unwrap_or_else(|e| panic!("{what}: {e}"));
                ran += 1;
            }
        }
    }
    ran
}

#[test]
fn gpu_shaped_configs_on_the_cpu_backend() {
    let cpu = CpuBackend::gpu_shaped();
    let sizes = Sizes::cpu_backend();
    let ran = check_all(&cpu, |f, v| f.bench_cases(cpu.erase(), v, &sizes, None));
    common::note(&format!("GPU-shaped configs on the CPU backend: {ran} cases verified"));
    // Every family's bench has at least one case.
    assert!(ran >= FAMILIES.len(), "{ran} cases");
}

#[test]
fn edge_cases_on_the_cpu_backend() {
    let cpu = CpuBackend::new();
    let ran = check_all(&cpu, |f, v| f.edge_cases(cpu.erase(), v));
    common::note(&format!("edge cases on the CPU backend: {ran} verified"));
    assert!(ran >= 6, "{ran} cases: every family with a grid-stride loop has one");
}

#[test]
fn edge_cases_on_wgsl() {
    let Some(wgsl) = wgsl_or_skip("registry_conformance::edge_cases_on_wgsl") else { return };
    let ran = check_all(&wgsl, |f, v| f.edge_cases(wgsl.erase(), v));
    common::note(&format!("edge cases on WGSL ({}): {ran} verified", wgsl.info().name));
    assert!(ran >= 6, "{ran} cases");
}
