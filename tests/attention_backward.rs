//! Attention backward conformance. On the CPU backend (every machine): the SIMT entries (f16
//! and bf16, D 64 and 128, causal and not, several tile sizes) at sequence lengths that leave
//! partial query and key tiles (1, 65, 1000 among them), against the f64 reference of dQ, dK
//! and dV with per-entry bounds (one left-out pair fails each, see the family's unit tests);
//! `O` and `lse` from the forward's SIMT kernel on the same backend. On CUDA where a device is
//! (prints `SKIPPED: no CUDA device` and passes elsewhere): several tile sizes at odd sequence
//! lengths (1, 65, 1000, 4097) and several heads, `O` and `lse` from the forward's default
//! kernel there; on sm_90a the wgmma kernel likewise, against the tensor-core bounds. And the
//! refusals before anything launches.

mod common;

use std::sync::Arc;
use std::time::Instant;

use common::{cuda_or_skip, note};
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::backend::{Backend, Variant};
use dynsmem::host::contract::{FamilyBackend, Workload};
use dynsmem::host::device::attention_backward::AttentionBwdConfig;
use dynsmem::host::families::attention::AttentionProblem;
use dynsmem::host::families::attention::Half;
use dynsmem::host::families::attention::backward::{HostInputs, prepare};

fn problem(batch: u32, heads: u32, seq: u32, d: u32, dtype: Half, causal: bool) -> AttentionProblem {
    AttentionProblem { batch, heads, seq, d, dtype, causal }
}

/// Runs `cfg` on `p` and checks it against the reference, naming the case on failure.
fn verify<B: FamilyBackend>(backend: &B, p: AttentionProblem, cfg: AttentionBwdConfig, inputs: &Arc<HostInputs>) {
    let what = format!("{p:?} {cfg:?}");
    let w = prepare(backend, p, cfg, Variant::LaunchSized, || inputs.clone())
        .unwrap_or_else(|e| panic!("{what}: prepare: {e}"));
    w.check().unwrap_or_else(|e| panic!("{what}: {e}"));
}

#[test]
fn cpu_backend_simt_entries_at_partial_tiles() {
    let cpu = CpuBackend::new();
    let start = Instant::now();
    let mut ran = 0;
    for (batch, heads, seq, d, dtype, causal, configs) in [
        (1, 2, 37, 64, Half::F16, false, &[(16, 16), (5, 7)][..]),
        (1, 2, 37, 64, Half::F16, true, &[(5, 7), (16, 3)][..]),
        (2, 1, 20, 128, Half::Bf16, true, &[(8, 3)][..]),
        (1, 1, 65, 128, Half::F16, false, &[(32, 16)][..]),
        (1, 3, 1, 64, Half::Bf16, false, &[(1, 1), (16, 16)][..]),
        (1, 1, 1, 128, Half::F16, true, &[(4, 4)][..]),
        (1, 1, 65, 64, Half::Bf16, true, &[(16, 64)][..]),
    ] {
        let p = problem(batch, heads, seq, d, dtype, causal);
        let inputs = Arc::new(HostInputs::new(&p, 5));
        for &(bq, bk) in configs {
            verify(&cpu, p, AttentionBwdConfig::new(bq, bk), &inputs);
            ran += 1;
        }
    }
    note(&format!("attention-backward: {ran} SIMT cases verified on the CPU backend in {:.1?}", start.elapsed()));
}

/// A long sequence, causal and not: many query and key tiles, a partial last one, the
/// reference's sampled rows at the causal size.
#[test]
fn cpu_backend_a_thousand_keys() {
    let cpu = CpuBackend::new();
    let start = Instant::now();
    for (causal, d, dtype, cfg) in [
        (true, 64, Half::F16, AttentionBwdConfig::new(16, 16)),
        (false, 64, Half::Bf16, AttentionBwdConfig::new(32, 24)),
    ] {
        let p = problem(1, 1, 1000, d, dtype, causal);
        verify(&cpu, p, cfg, &Arc::new(HostInputs::new(&p, 7)));
    }
    note(&format!("attention-backward: seq 1000 verified on the CPU backend in {:.1?}", start.elapsed()));
}

#[test]
fn cuda_odd_sequences_and_tiles() {
    let Some(cuda) = cuda_or_skip("attention_backward::cuda_odd_sequences_and_tiles") else { return };
    let configs = [AttentionBwdConfig::new(16, 16), AttentionBwdConfig::new(32, 32), AttentionBwdConfig::new(64, 16)];
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
            for cfg in configs {
                let limit = cuda.info().limits.launch_shared_max;
                if cfg.dkdv_bytes(d).is_ok_and(|b| b > limit) {
                    continue;
                }
                verify(&cuda, p, cfg, &inputs);
                ran += 1;
            }
        }
    }
    note(&format!("attention-backward: {ran} cases verified on {}", cuda.info().name));
}

/// The wgmma kernel (sm_90a) at odd sequence lengths (partial query and key tiles, one
/// query), both key tiles and several ring depths, against the tensor-core bounds.
#[test]
fn cuda_wgmma_at_odd_sequences() {
    let Some(cuda) = cuda_or_skip("attention_backward::cuda_wgmma_at_odd_sequences") else { return };
    if !cuda.runs_wgmma() {
        note("SKIPPED: attention_backward::cuda_wgmma_at_odd_sequences: no sm_90a device and image");
        return;
    }
    let configs =
        [AttentionBwdConfig::wgmma(128, 2), AttentionBwdConfig::wgmma(64, 2), AttentionBwdConfig::wgmma(64, 4)];
    let mut ran = 0;
    for (batch, heads, seq) in [(1, 3, 1), (2, 2, 65), (1, 4, 1000), (1, 2, 4097)] {
        for (d, dtype, causal) in
            [(128, Half::F16, false), (128, Half::Bf16, true), (64, Half::F16, true), (64, Half::Bf16, false)]
        {
            let p = problem(batch, heads, seq, d, dtype, causal);
            let inputs = Arc::new(HostInputs::new(&p, 13));
            for cfg in configs {
                verify(&cuda, p, cfg, &inputs);
                ran += 1;
            }
        }
    }
    note(&format!("attention-backward: {ran} wgmma cases verified on {}", cuda.info().name));
}

#[test]
fn bad_configs_and_problems_are_refused_before_launch() {
    let cpu = CpuBackend::new();
    let refusal = |p: AttentionProblem, cfg: AttentionBwdConfig| {
        let inputs = || Arc::new(HostInputs::new(&p, 1));
        prepare(&cpu, p, cfg, Variant::LaunchSized, inputs).err().expect("refused").to_string()
    };
    let p = problem(1, 1, 16, 96, Half::F16, false);
    let err = refusal(p, AttentionBwdConfig::new(16, 16));
    assert!(err.contains("attention_bwd_simt") && err.contains("64 or 128"), "{err}");
    let p = problem(1, 1, 16, 64, Half::F16, false);
    let err = refusal(p, AttentionBwdConfig::new(300, 16));
    assert!(err.contains("bq 1 to 256"), "{err}");
    let err = refusal(p, AttentionBwdConfig::new(16, 0));
    assert!(err.contains("bk 1 to 256"), "{err}");
    let err = refusal(problem(1, 1, 0, 64, Half::F16, false), AttentionBwdConfig::new(16, 16));
    assert!(err.contains("at least 1"), "{err}");
    // Past the CPU backend's launch-sized limit: the dK/dV kernel's 256 key rows of 4 x 128
    // floats and a 256-row query tile.
    let err = refusal(problem(1, 1, 16, 128, Half::F16, false), AttentionBwdConfig::new(256, 256));
    assert!(err.contains("attention_bwd_simt_dkdv_f16_d128"), "{err}");
    // The wgmma kernel: its shapes, then the backend.
    let err = refusal(p, AttentionBwdConfig::wgmma(96, 2));
    assert!(err.contains("attention_bwd_wgmma") && err.contains("bk 64 or 128"), "{err}");
    let err = refusal(p, AttentionBwdConfig::wgmma(128, 2));
    assert!(err.contains("attention_bwd_wgmma_f16_d64") && err.contains("CUDA only"), "{err}");
}
