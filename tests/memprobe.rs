//! The memory probes (`dynsmem probe`): every probe's kernel checked on the CPU backend
//! (the chase's last index, the sums of what was read, the atomics' final words and
//! attempts), the WGSL twins on an adapter (lavapipe in CI), the occupancy explorer's
//! padding, resuming from records, and on CUDA where a device is (else `SKIPPED: no CUDA
//! device`). Figures are measured by `dynsmem probe` on the GPU, never asserted here.

mod common;

use std::collections::HashSet;

use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::backend::{Backend, BackendKind};
use dynsmem::host::contract::FamilyBackend;
use dynsmem::host::measure::TimingOptions;
use dynsmem::host::memprobe::{self, ProbeKind, ProbeOptions, ProbeRecord, occupancy, published};
use dynsmem::host::report::TableStyle;

fn opts(kind: BackendKind) -> ProbeOptions {
    ProbeOptions {
        // One untimed and one timed run: these tests check results, not figures.
        timing: TimingOptions { warmup: 1, warmup_ms: 0.0, repeats: 1, energy_ms: 0.0, ..TimingOptions::default() },
        quick: true,
        seed: 3,
        provenance: dynsmem::provenance(kind, "tests/memprobe.rs"),
    }
}

fn run_all<B: FamilyBackend>(b: &B, kinds: &[ProbeKind]) -> Vec<ProbeRecord> {
    memprobe::run(b, kinds, &opts(b.kind()), &HashSet::new(), &mut |_| {})
}

/// Every record verified; the failures listed otherwise.
fn assert_verified(records: &[ProbeRecord]) {
    let bad: Vec<String> = records
        .iter()
        .filter(|r| !r.record.verified)
        .map(|r| format!("{} {} {}: {:?}", r.probe, r.record.variant, r.point, r.record.error))
        .collect();
    assert!(bad.is_empty(), "{} of {} probe points failed:\n{}", bad.len(), records.len(), bad.join("\n"));
}

#[test]
fn every_probe_verifies_on_the_cpu_backend() {
    let cpu = CpuBackend::new();
    let records = run_all(&cpu, &ProbeKind::ALL);
    assert_verified(&records);
    for kind in ProbeKind::ALL {
        assert!(records.iter().any(|r| r.probe == kind), "{kind}: no point ran");
    }
    // The chases read the clock (nanoseconds on the CPU backend) and count steps.
    for r in records.iter().filter(|r| matches!(r.probe, ProbeKind::SharedLatency | ProbeKind::GlobalLatency)) {
        assert!(r.cycles.is_some_and(|c| c > 0.0), "{} {}: no clock reading", r.probe, r.point);
    }
    let atomics = records.iter().filter(|r| r.probe == ProbeKind::Atomics).count();
    assert_eq!(atomics, 18, "3 operations x 2 memories x 3 contentions");
    // The tables and plots a run prints take these records.
    // The comparison with published figures takes CUDA records only.
    let table = published::comparison(&records, TableStyle::Text);
    assert!(table.contains("29.0") && table.contains("shared-memory latency"), "{table}");
    assert_eq!(table, published::comparison(&[], TableStyle::Text), "CPU records are not set beside GPU figures");
    let plots = memprobe::plot::render(&records).unwrap();
    for file in ["probe-shared-stride-cycles.svg", "probe-global-latency.svg", "probe-atomics.svg"] {
        assert!(
            plots.iter().any(|p| p.file == file),
            "no {file} among {:?}",
            plots.iter().map(|p| &p.file).collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_resumed_run_measures_nothing_again() {
    let cpu = CpuBackend::new();
    let first = run_all(&cpu, &[ProbeKind::SharedLatency, ProbeKind::Fences]);
    assert!(!first.is_empty());
    let done: HashSet<String> = first.iter().map(ProbeRecord::key).collect();
    let again =
        memprobe::run(&cpu, &[ProbeKind::SharedLatency, ProbeKind::Fences], &opts(cpu.kind()), &done, &mut |_| {});
    assert!(again.is_empty(), "measured again: {:?}", again.iter().map(|r| r.point.to_string()).collect::<Vec<_>>());
}

#[test]
fn the_occupancy_explorer_pads_every_launch_and_checks_each_padding() {
    let cpu = CpuBackend::new();
    let reduce = dynsmem::host::family::find(dynsmem::host::families::FAMILIES, "reduce").unwrap();
    let records = occupancy::explore(&cpu, reduce, &opts(cpu.kind()), 65_536, None, &mut |_| {}).unwrap();
    assert_verified(&records);
    let limit = cpu.info().limits.launch_shared_max;
    let bytes: Vec<u32> = records.iter().map(|r| r.record.shared_bytes).collect();
    assert!(bytes.len() >= 3, "paddings {bytes:?}");
    assert!(bytes.windows(2).all(|w| w[1] > w[0]), "padded bytes rise: {bytes:?}");
    assert_eq!(*bytes.last().unwrap(), limit, "the last padding reaches the opt-in limit");
    // Padding off afterwards: a plain launch logs nothing.
    assert!(cpu.take_launches().is_empty());
}

#[test]
fn a_padding_past_the_limit_is_refused_before_launch() {
    use dynsmem::host::backend::{LaunchDims, RustKernels};
    let cpu = CpuBackend::new();
    let limit = cpu.info().limits.launch_shared_max;
    let kernel = cpu.rust_kernel("probe_fence").unwrap();
    let (slots, timing) = (cpu.alloc::<u32>(32).unwrap(), cpu.alloc::<u32>(3).unwrap());
    let args = [slots.arg(), dynsmem::host::backend::Arg::U32(0), dynsmem::host::backend::Arg::U32(1), timing.arg()];
    let dims = LaunchDims::new(1, 32, 16);
    cpu.set_launch_padding(Some(limit)).unwrap();
    let err = cpu.launch(&kernel, dims, &args).expect_err("padded past the limit").to_string();
    assert!(err.contains("probe_fence") && err.contains(&limit.to_string()), "{err}");
    // Refused before launch: the log holds nothing; without the padding the launch runs.
    assert!(cpu.take_launches().is_empty());
    cpu.set_launch_padding(None).unwrap();
    cpu.launch(&kernel, dims, &args).unwrap();
    assert_eq!(cpu.dtoh(&slots).unwrap(), vec![1; 32]);
}

#[test]
fn the_wgsl_twins_of_the_probes_verify() {
    let Some(wgsl) = common::wgsl_or_skip("the_wgsl_twins_of_the_probes_verify") else { return };
    let records = run_all(&wgsl, &ProbeKind::ALL);
    assert_verified(&records);
    let kinds: HashSet<ProbeKind> = records.iter().map(|r| r.probe).collect();
    assert_eq!(kinds, HashSet::from([ProbeKind::SharedLatency, ProbeKind::SharedStride]), "the probes with twins");
    assert!(records.iter().all(|r| r.cycles.is_none()), "WGSL has no clock");
    assert!(records.iter().filter(|r| r.probe == ProbeKind::SharedLatency).all(|r| r.ns.is_some()));
}

#[test]
fn every_probe_verifies_on_cuda() {
    let Some(cuda) = common::cuda_or_skip("every_probe_verifies_on_cuda") else { return };
    let records = run_all(&cuda, &ProbeKind::ALL);
    assert_verified(&records);
    for r in records.iter().filter(|r| r.probe != ProbeKind::GlobalBandwidth) {
        assert!(r.cycles.is_some_and(|c| c > 0.0), "{} {}: no clock reading", r.probe, r.point);
    }
}
