//! Attention's face to the registry: its command-line options, defaults and bench cases.

use std::sync::Arc;

use dynsmem_kernels::attention::{AttentionConfig, AttentionKind, FIXED};
use serde::{Deserialize, Serialize};

use super::{AttentionProblem, AttentionTunable, Half, HostInputs};
use crate::backend::{BackendKind, Variant};
use crate::contract::{FamilyBackend, Workload};
use crate::error::Result;
use crate::family::{AnyBackend, BenchCase, Family, Sizes};

pub struct Attention;

/// What `run attention` runs: a config, on the entry with [`FIXED`] compiled in when `fixed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttentionRun {
    #[serde(flatten)]
    pub config: AttentionConfig,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fixed: bool,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ProblemArgs {
    /// Batch (default: 8 on a GPU).
    #[arg(long)]
    pub batch: Option<u32>,
    /// Heads per batch entry (default: 16 on a GPU).
    #[arg(long)]
    pub heads: Option<u32>,
    /// Queries and keys per head (default: 4096 on a GPU).
    #[arg(long)]
    pub seq: Option<u32>,
    /// Head dimension: 64 or 128.
    #[arg(long, default_value_t = 128)]
    pub d: u32,
    /// Input and output type.
    #[arg(long, value_enum, default_value = "f16")]
    pub dtype: Half,
    /// The mask: none, or causal (query i sees keys 0..=i). (Its id is the problem's field,
    /// `causal`, so that suite lines may name it.)
    #[arg(long = "mask", id = "causal", value_enum, default_value = "none")]
    pub mask: Mask,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mask {
    None,
    Causal,
}

#[derive(clap::Args, Debug, Clone, Default)]
pub struct ConfigArgs {
    /// The SIMT kernel (one thread per query row; any backend) instead of sm_90a's wgmma.
    #[arg(long)]
    pub simt: bool,
    /// The entry with the wgmma 128-row, 2-stage tile compiled in (f16, D 128).
    #[arg(long)]
    pub fixed: bool,
    /// Query rows per block: wgmma 64 or 128; SIMT 1-256 (threads).
    #[arg(long)]
    pub bq: Option<u32>,
    /// Keys per K/V tile: wgmma 128 (compiled in); SIMT 1-256.
    #[arg(long)]
    pub bk: Option<u32>,
    /// Ring slots of K/V tiles (wgmma): 2-8, within the shared-memory limit.
    #[arg(long)]
    pub stages: Option<u32>,
    /// The two math warpgroups issue their products in turn (wgmma, bq 128; default on there).
    #[arg(long)]
    pub pingpong: Option<bool>,
}

/// The SIMT config of a backend: 32 query rows by 32 keys on a GPU (64 KB at D = 128: the
/// most a HIP workgroup has); 16 by 16 on the CPU backend (one OS thread per kernel thread).
fn simt_default(backend: AnyBackend<'_>) -> AttentionConfig {
    if backend.kind() == BackendKind::Cpu { AttentionConfig::simt(16, 16) } else { AttentionConfig::simt(32, 32) }
}

/// The default config: wgmma with two math warpgroups (128 query rows) on sm_90a, with
/// the ring as deep as the opt-in limit holds up to 2 slots at D = 128 and 4 at D = 64;
/// the SIMT kernel elsewhere.
pub fn default_config(backend: AnyBackend<'_>, p: &AttentionProblem) -> AttentionConfig {
    let wgmma = match backend {
        AnyBackend::Cuda(c) => c.runs_wgmma(),
        _ => false,
    };
    if !wgmma {
        return simt_default(backend);
    }
    AttentionConfig::wgmma(128, if p.d == 128 { 2 } else { 4 })
}

impl Family for Attention {
    const NAME: &'static str = "attention";
    const ABOUT: &'static str = "Attention forward (online softmax, f16/bf16, D 64/128, causal or not): sm_90a wgmma + \
                                 TMA K/V ring sized at launch, or a SIMT kernel with launch-sized K/V tiles.";
    const WGSL_TEMPLATE: &'static str = "";
    const SHAPES: &'static str = include_str!("shapes.txt");
    type Problem = AttentionProblem;
    type Config = AttentionRun;
    type ProblemArgs = ProblemArgs;
    type ConfigArgs = ConfigArgs;
    type Tunable = AttentionTunable;

    fn problem(a: &ProblemArgs, sizes: &Sizes) -> AttentionProblem {
        let gpu = sizes.gemm >= 1024;
        AttentionProblem {
            batch: a.batch.unwrap_or(if gpu { 8 } else { 1 }),
            heads: a.heads.unwrap_or(if gpu { 16 } else { 2 }),
            seq: a.seq.unwrap_or(if gpu { 4096 } else { sizes.gemm + 1 }),
            d: a.d,
            dtype: a.dtype,
            causal: a.mask == Mask::Causal,
        }
    }
    fn config(a: &ConfigArgs, d: &AttentionRun) -> AttentionRun {
        let mut base = d.config;
        if a.simt && base.kind != AttentionKind::Simt {
            base = AttentionConfig::simt(32, 32);
        }
        if a.fixed {
            base = FIXED;
        }
        let bq = a.bq.unwrap_or(base.bq);
        // Ping-pong follows the rows as the wgmma constructor sets it (two math warpgroups)
        // unless asked for.
        let pingpong =
            a.pingpong.unwrap_or(base.kind == AttentionKind::Wgmma && AttentionConfig::wgmma(bq, base.stages).pingpong);
        let config = AttentionConfig {
            bq,
            bk: a.bk.unwrap_or(base.bk),
            stages: a.stages.unwrap_or(base.stages),
            pingpong,
            ..base
        };
        AttentionRun { config, fixed: a.fixed }
    }
    fn default_config<B: FamilyBackend>(backend: &B, p: &AttentionProblem) -> AttentionRun {
        AttentionRun { config: default_config(backend.erase(), p), fixed: false }
    }
    fn prepare<'b, B: FamilyBackend>(
        backend: &'b B,
        p: &AttentionProblem,
        run: &AttentionRun,
        variant: Variant,
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        let inputs = || Arc::new(HostInputs::new(p, seed));
        Ok(Box::new(super::prepare(backend, *p, run.config, run.fixed, variant, inputs)?))
    }
    /// Compute-bound: PyTorch's SDPA is the anchor (`sdpa.py`), not a copy.
    fn anchor_bytes(_: &AttentionProblem) -> Option<u64> {
        None
    }
    /// On CUDA: f16, D 128, sequence 4096 (batch 8 x 16 heads) and 16384 (2 x 16), causal and
    /// not, bf16 and D 64 at 4096, and the compiled-in tile; on the CPU backends and at
    /// small sizes an odd sequence (the registry's GEMM side + 1), both types and head
    /// dimensions, causal and not, on the default config.
    fn bench_cases<B: FamilyBackend>(backend: &B, sizes: &Sizes) -> Vec<BenchCase<Self>> {
        let case = |problem: AttentionProblem| BenchCase { problem, config: Self::default_config(backend, &problem) };
        if sizes.gemm < 1024 || backend.kind() != BackendKind::Cuda {
            let seq = sizes.gemm.min(96) + 1;
            let p = |d, dtype, causal| AttentionProblem { batch: 1, heads: 2, seq, d, dtype, causal };
            return vec![case(p(64, Half::F16, false)), case(p(128, Half::Bf16, true))];
        }
        let p = |batch, seq, d, dtype, causal| AttentionProblem { batch, heads: 16, seq, d, dtype, causal };
        let mut cases = Vec::new();
        for causal in [false, true] {
            cases.push(case(p(8, 4096, 128, Half::F16, causal)));
            cases.push(case(p(2, 16384, 128, Half::F16, causal)));
        }
        cases.push(case(p(8, 4096, 128, Half::Bf16, false)));
        cases.push(case(p(8, 4096, 64, Half::F16, false)));
        let fixed = p(8, 4096, 128, Half::F16, false);
        cases.push(BenchCase { problem: fixed, config: AttentionRun { config: FIXED, fixed: true } });
        cases
    }
    fn bench_variant(_: &AttentionProblem, variant: Variant) -> bool {
        variant == Variant::LaunchSized
    }
}
