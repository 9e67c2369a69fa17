//! Every family of the registry, from arbitrary bytes: a family, then a point of its search
//! space (candidate values and arbitrary ones mixed), through both of the family's gates,
//! the tuner's check and `prepare` on the CPU backend (nothing launched). They must agree
//! and neither may panic (`dynsmem_host::family::probe_point`, which
//! `tests/registry_points.rs` also runs on seeded points in CI). A family added to the
//! registry is fuzzed with no change here.
#![no_main]

use std::sync::OnceLock;

use dynsmem_host::backend::cpu::CpuBackend;
use dynsmem_host::families::FAMILIES;
use libfuzzer_sys::fuzz_target;

static CPU: OnceLock<CpuBackend> = OnceLock::new();

fuzz_target!(|input: (u8, Vec<u32>)| {
    let (which, values) = input;
    let family = FAMILIES[which as usize % FAMILIES.len()];
    let cpu = CPU.get_or_init(CpuBackend::new);
    if let Err(e) = dynsmem_host::family::probe_point(family, cpu, &values, 1) {
        panic!("{}: the gates disagree: {e}", family.name());
    }
});
