//! Attention forward conformance. On the CPU backend (every machine): the SIMT entries (f16
//! and bf16, D 64 and 128, causal and not) at sequence lengths that leave partial query and
//! key tiles, against the f64 reference (O and the row log-sum-exp; one wrong key fails, see
//! the family's unit tests). On CUDA where a device is (prints `SKIPPED: no CUDA device` and
//! passes elsewhere): every wgmma entry with one and two math warpgroups (in ping-pong and
//! not), two to five ring
//! slots (past 48 KB of launch-sized memory), the compiled-in tile, and the SIMT entries, at
//! odd sequence lengths (1, 65, 1000, 4097) and several heads. And the refusals before
//! anything launches.

mod common;

use std::sync::Arc;

use common::{cuda_or_skip, note};
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::backend::{Backend, Variant};
use dynsmem::host::contract::Workload;
use dynsmem::host::device::attention::{AttentionConfig, FIXED};
use dynsmem::host::families::attention::{AttentionProblem, Half, HostInputs, prepare};

fn problem(batch: u32, heads: u32, seq: u32, d: u32, dtype: Half, causal: bool) -> AttentionProblem {
    AttentionProblem { batch, heads, seq, d, dtype, causal }
}

/// Runs `cfg` on `p` and checks it against the reference, naming the case on failure.
fn verify<B: dynsmem::host::contract::FamilyBackend>(
    backend: &B,
    p: AttentionProblem,
    cfg: AttentionConfig,
    fixed: bool,
    inputs: &Arc<HostInputs>,
) {
    let what = format!("{p:?} {cfg:?}{}", if fixed { " compiled in" } else { "" });
    let w = prepare(backend, p, cfg, fixed, Variant::LaunchSized, || inputs.clone())
        .unwrap_or_else(|e| panic!("{what}: prepare: {e}"));
    w.check().unwrap_or_else(|e| panic!("{what}: {e}"));
}

#[test]
fn cpu_backend_simt_entries_at_partial_tiles() {
    let cpu = CpuBackend::new();
    let mut ran = 0;
    for (seq, d, dtype, causal, cfg) in [
        (37, 64, Half::F16, false, AttentionConfig::simt(16, 16)),
        (37, 64, Half::F16, true, AttentionConfig::simt(5, 7)),
        (20, 128, Half::Bf16, true, AttentionConfig::simt(8, 3)),
        (9, 128, Half::F16, false, AttentionConfig::simt(32, 64)),
        (1, 64, Half::Bf16, false, AttentionConfig::simt(1, 1)),
    ] {
        let p = problem(1, 2, seq, d, dtype, causal);
        verify(&cpu, p, cfg, false, &Arc::new(HostInputs::new(&p, 5)));
        ran += 1;
    }
    note(&format!("attention: {ran} SIMT cases verified on the CPU backend"));
}

#[test]
fn cuda_every_entry_at_odd_sequences() {
    let Some(cuda) = cuda_or_skip("attention::cuda_every_entry_at_odd_sequences") else { return };
    let wgmma = cuda.capability() == (9, 0) && cuda.ptx_target() == "sm_90a";
    let mut configs = vec![AttentionConfig::simt(64, 32)];
    if wgmma {
        configs.extend([
            AttentionConfig::wgmma(64, 2),
            AttentionConfig::wgmma(128, 2),
            AttentionConfig::wgmma(128, 2).with_pingpong(false),
            AttentionConfig::wgmma(128, 3),
            AttentionConfig::wgmma(64, 5),
        ]);
    } else {
        note("attention: no sm_90a image on a 9.0 device: wgmma entries not run");
    }
    let mut ran = 0;
    for (batch, heads, seq) in [(1, 3, 1), (2, 2, 65), (1, 4, 1000), (1, 2, 4097)] {
        for (d, dtype, causal) in [
            (128, Half::F16, false),
            (128, Half::F16, true),
            (128, Half::Bf16, true),
            (64, Half::F16, false),
            (64, Half::Bf16, true),
        ] {
            let p = problem(batch, heads, seq, d, dtype, causal);
            let inputs = Arc::new(HostInputs::new(&p, 11));
            for cfg in &configs {
                let limit = cuda.info().limits.launch_shared_max;
                if cfg.shared_bytes(d).is_ok_and(|b| b > limit) {
                    continue;
                }
                verify(&cuda, p, *cfg, false, &inputs);
                ran += 1;
            }
            if wgmma && d == 128 && dtype == Half::F16 {
                verify(&cuda, p, FIXED, true, &inputs);
                ran += 1;
            }
        }
    }
    note(&format!("attention: {ran} cases verified on {}", cuda.info().name));
}

#[test]
fn bad_configs_and_problems_are_refused_before_launch() {
    let cpu = CpuBackend::new();
    let refusal = |p: AttentionProblem, cfg: AttentionConfig| {
        let inputs = || Arc::new(HostInputs::new(&p, 1));
        prepare(&cpu, p, cfg, false, Variant::LaunchSized, inputs).err().expect("refused").to_string()
    };
    let p = problem(1, 1, 16, 96, Half::F16, false);
    let err = refusal(p, AttentionConfig::simt(16, 16));
    assert!(err.contains("attention_simt") && err.contains("64 or 128"), "{err}");
    let p = problem(1, 1, 16, 64, Half::F16, false);
    let err = refusal(p, AttentionConfig::simt(300, 16));
    assert!(err.contains("bq 1 to 256"), "{err}");
    let err = refusal(p, AttentionConfig::wgmma(128, 2));
    assert!(err.contains("attention_wgmma_f16_d64") && err.contains("CUDA only"), "{err}");
    let err = refusal(problem(1, 1, 0, 64, Half::F16, false), AttentionConfig::simt(16, 16));
    assert!(err.contains("at least 1"), "{err}");
}
