//! Attention backward's description: the forward's problem (batch, heads, sequence, head
//! dimension, type, mask), its parameters (`kind`: the SIMT kernels or the sm_90a wgmma
//! kernel; the query rows per tile `bq`: SIMT's dQ threads and dK/dV staged tile, wgmma's 64
//! compiled in; the key rows per tile `bk`: SIMT's dK/dV threads and dQ staged tile, wgmma's
//! keys per block (64 per math warpgroup); wgmma's ring `stages`: launch-time values of one
//! compiled image), its bench cases and its launches.

use dynsmem_kernels::attention_backward::{AttentionBwdConfig, AttentionBwdKind, DELTA_THREADS};
use serde_json::json;

use super::{AttentionProblem, HostInputs, validate};
use crate::backend::{BackendKind, Variant};
use crate::contract::{Footprint, Kernel, Param, Params, Target, invalid, layout_reason};
use crate::error::Result;
use crate::families::attention::Half;
use crate::family::AnyBackend;
use crate::family::kernel::{Case, KernelFamily, Size};
use crate::tune::tunable::SeedInputs;

/// Whether the device's default sizes are a GPU's (the registry's GEMM side 1024 or more).
fn gpu(s: &crate::family::Sizes) -> bool {
    s.gemm >= 1024
}

/// The problem's options, as the forward's.
pub const SIZES: &[Size] = &[
    Size::of("batch", |s| if gpu(s) { 8 } else { 1 }, "Batch (default: 8 on a GPU)"),
    Size::of("heads", |s| if gpu(s) { 16 } else { 2 }, "Heads per batch entry (default: 16 on a GPU)"),
    Size::of(
        "seq",
        |s| if gpu(s) { 4096 } else { s.gemm as u64 + 1 },
        "Queries and keys per head (default: 4096 on a GPU)",
    ),
    Size::fixed("d", 128, "Head dimension: 64 or 128"),
    Size::choice("dtype", &["f16", "bf16"], "Input and output type"),
    Size::switch("causal", ["none", "causal"], "The mask: none, or causal (query i sees keys 0..=i)").long("mask"),
];

pub static ATTENTION_BACKWARD: KernelFamily = KernelFamily {
    name: "attention-backward",
    about: "Attention backward (FlashAttention-2's: dQ, dK, dV from P recomputed with the forward's lse; f16/bf16 in, \
            f32 gradients, D 64/128, causal or not): an sm_90a wgmma kernel with a launch-sized Q/dO ring and key \
            tile, or SIMT kernels with launch-sized query and K/V tiles on every backend with the Rust kernels.",
    sizes: SIZES,
    build: |p| {
        let dtype = if p.choice("dtype") == "bf16" { Half::Bf16 } else { Half::F16 };
        let problem = AttentionProblem {
            batch: p.u32("batch")?,
            heads: p.u32("heads")?,
            seq: p.u32("seq")?,
            d: p.u32("d")?,
            dtype,
            causal: p.flag("causal"),
        };
        // The inputs of the last seed (with the forward's outputs and the reference, once the
        // first config has made them), shared by every config of this problem.
        let inputs = SeedInputs::<HostInputs>::default();
        Ok(Kernel::new(dynsmem_kernels::attention_backward::KERNELS, "attention_bwd_delta_f16")
            .space(space)
            .footprint_by(move |p, t| footprint(&problem, &config_of(p), t))
            .default_by(move |b| params_of(&default_config(b, &problem)))
            .workload_by(move |b, p, v, seed| {
                let inputs = || inputs.get(seed, || HostInputs::new(&problem, seed));
                crate::erased_workload!(b, b => super::prepare(b, problem, config_of(p), v, inputs))
            }))
    },
    // On a GPU: f16, D 128, sequence 4096 (batch 4 x 16 heads), causal and not, and D 64 in
    // bf16; at small sizes an odd sequence (the registry's GEMM side + 1), both types and
    // head dimensions, causal and not.
    cases: Some(|s| {
        let p = |batch, heads, seq, d, dtype, causal| {
            Case::default_config(
                json!({"batch": batch, "heads": heads, "seq": seq, "d": d, "dtype": dtype, "causal": causal}),
            )
        };
        if !gpu(s) {
            let seq = s.gemm.min(96) + 1;
            return vec![p(1, 2, seq, 64, "f16", false), p(1, 2, seq, 128, "bf16", true)];
        }
        vec![p(4, 16, 4096, 128, "f16", false), p(4, 16, 4096, 128, "f16", true), p(4, 16, 4096, 64, "bf16", false)]
    }),
    compute_bound: true,
    shapes: include_str!("shapes.txt"),
    ..KernelFamily::EMPTY
};

/// The default config: wgmma with 128 keys per block and 2 ring slots where it runs (CUDA,
/// sm_90a); else SIMT, 16 x 16 on the CPU backend (one OS thread per kernel thread) and at
/// D = 128 on a GPU (the dK/dV kernel's 49280 B, within HIP's 64 KB), 32 x 32 at D = 64
/// (49408 B).
pub fn default_config(backend: AnyBackend<'_>, p: &AttentionProblem) -> AttentionBwdConfig {
    if let AnyBackend::Cuda(c) = backend
        && c.runs_wgmma()
    {
        return AttentionBwdConfig::wgmma(128, 2);
    }
    if backend.kind() == BackendKind::Cpu || p.d == 128 {
        AttentionBwdConfig::new(16, 16)
    } else {
        AttentionBwdConfig::new(32, 32)
    }
}

/// The kinds by name (index = the `kind` parameter's value).
const KINDS: &[&str] = &["simt", "wgmma"];

/// On a CPU target, SIMT block sizes an OS thread per kernel thread affords; on a GPU both
/// kinds (the footprint refuses what a kind cannot run: wgmma's `bq` is 64, SIMT's `stages`
/// 1). Entries recorded before `kind` and `stages` existed are SIMT's.
fn space(target: &Target) -> Vec<Param> {
    if target.is_cpu {
        return vec![
            Param::choice("kind", KINDS, &[0]).absent_as(0),
            Param::new("bq", &[1, 5, 16]),
            Param::new("bk", &[1, 7, 16]),
            Param::new("stages", &[1]).absent_as(1),
        ];
    }
    vec![
        Param::choice("kind", KINDS, &[0, 1]).absent_as(0),
        Param::new("bq", &[16, 32, 64, 128]),
        Param::new("bk", &[16, 32, 64, 128]),
        Param::new("stages", &[1, 2, 3, 4]).absent_as(1),
    ]
}

fn config_of(p: &Params) -> AttentionBwdConfig {
    let kind = if p["kind"] == 1 { AttentionBwdKind::Wgmma } else { AttentionBwdKind::Simt };
    AttentionBwdConfig { kind, bq: p["bq"], bk: p["bk"], stages: p["stages"] }
}

fn params_of(c: &AttentionBwdConfig) -> Params {
    let kind = (c.kind == AttentionBwdKind::Wgmma) as u32;
    Params([("kind", kind), ("bq", c.bq), ("bk", c.bk), ("stages", c.stages)].into_iter().collect())
}

/// SIMT: the larger of the two gradient kernels' threads, blocks and launch-sized bytes (the
/// pre-pass's 128 threads and no bytes fit wherever they do); wgmma: its kernel's. The
/// launch-sized Rust kernels are the only form.
pub fn footprint(p: &AttentionProblem, cfg: &AttentionBwdConfig, target: &Target) -> Result<Footprint> {
    const NAME: &str = "attention-backward";
    if target.variant != Variant::LaunchSized {
        return Err(invalid(NAME, "the launch-sized Rust kernel is the only form"));
    }
    validate(p, cfg).map_err(|(kernel, reason)| invalid(&kernel, reason))?;
    if cfg.kind == AttentionBwdKind::Wgmma && target.backend != BackendKind::Cuda {
        return Err(invalid("attention_bwd_wgmma", "wgmma and tensor-map copies run on CUDA only"));
    }
    let bytes = |b: std::result::Result<u32, _>| b.map_err(|e| invalid(NAME, layout_reason(e)));
    let (launch_bytes, threads) = match cfg.kind {
        AttentionBwdKind::Simt => {
            (bytes(cfg.dkdv_bytes(p.d))?.max(bytes(cfg.dq_bytes(p.d))?), cfg.bq.max(cfg.bk).max(DELTA_THREADS))
        }
        AttentionBwdKind::Wgmma => (bytes(cfg.wgmma_bytes(p.d))?, cfg.threads()),
    };
    let grid = super::grid(p, cfg);
    Ok(Footprint { threads, grid: grid.min(u32::MAX as u64) as u32, launch_bytes, static_bytes: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_footprint_takes_the_larger_kernel_s_bytes_and_refuses_tiles_past_256() {
        let p = AttentionProblem { batch: 4, heads: 16, seq: 4096, d: 128, dtype: Half::F16, causal: false };
        let target = Target {
            backend: BackendKind::Cuda,
            variant: Variant::LaunchSized,
            limits: crate::tune::cache::tests::limits(),
            is_cpu: false,
        };
        let fp = footprint(&p, &AttentionBwdConfig::new(16, 32), &target).expect("fits");
        assert_eq!(fp.launch_bytes, (2 * 16 * 128 + 2 * 16 + 4 * 128 * 32) * 4);
        assert_eq!((fp.threads, fp.grid), (128, 4096 / 16 * 64));
        let refused = footprint(&p, &AttentionBwdConfig::new(16, 300), &target).unwrap_err().to_string();
        assert!(refused.contains("bk 1 to 256"), "{refused}");
    }
}
