//! Attention backward's face to the registry: its command-line options (the problem's are the
//! forward's), defaults and bench cases.

use std::sync::Arc;

use dynsmem_kernels::attention_backward::AttentionBwdConfig;

use super::super::family::ProblemArgs;
use super::{AttentionBwdTunable, AttentionProblem, HostInputs};
use crate::backend::{BackendKind, Variant};
use crate::contract::{FamilyBackend, Workload};
use crate::error::Result;
use crate::families::attention::{Attention, Half};
use crate::family::{BenchCase, Family, Sizes};

pub struct AttentionBackward;

#[derive(clap::Args, Debug, Clone, Default)]
pub struct ConfigArgs {
    /// Query rows per tile: the dQ kernel's threads, the dK/dV kernel's staged query tile
    /// (1-256).
    #[arg(long)]
    pub bq: Option<u32>,
    /// Key rows per tile: the dK/dV kernel's threads, the dQ kernel's staged K/V tile (1-256).
    #[arg(long)]
    pub bk: Option<u32>,
}

/// The default config: 16 x 16 on the CPU backend (one OS thread per kernel thread) and at
/// D = 128 on a GPU (the dK/dV kernel's 49280 B, within HIP's 64 KB); 32 x 32 at D = 64
/// (49408 B).
pub fn default_config(kind: BackendKind, p: &AttentionProblem) -> AttentionBwdConfig {
    if kind == BackendKind::Cpu || p.d == 128 {
        AttentionBwdConfig::new(16, 16)
    } else {
        AttentionBwdConfig::new(32, 32)
    }
}

impl Family for AttentionBackward {
    const NAME: &'static str = "attention-backward";
    const ABOUT: &'static str = "Attention backward (FlashAttention-2's: dQ, dK, dV from P recomputed with the forward's \
                                 lse; f16/bf16 in, f32 gradients, D 64/128, causal or not): SIMT kernels with \
                                 launch-sized query and K/V tiles, on every backend with the Rust kernels.";
    const WGSL_TEMPLATE: &'static str = "";
    const SHAPES: &'static str = include_str!("shapes.txt");
    type Problem = AttentionProblem;
    type Config = AttentionBwdConfig;
    type ProblemArgs = ProblemArgs;
    type ConfigArgs = ConfigArgs;
    type Tunable = AttentionBwdTunable;

    /// The forward's problem options and defaults.
    fn problem(a: &ProblemArgs, sizes: &Sizes) -> AttentionProblem {
        <Attention as Family>::problem(a, sizes)
    }
    fn config(a: &ConfigArgs, d: &AttentionBwdConfig) -> AttentionBwdConfig {
        AttentionBwdConfig::new(a.bq.unwrap_or(d.bq), a.bk.unwrap_or(d.bk))
    }
    fn default_config<B: FamilyBackend>(backend: &B, p: &AttentionProblem) -> AttentionBwdConfig {
        default_config(backend.kind(), p)
    }
    fn prepare<'b, B: FamilyBackend>(
        backend: &'b B,
        p: &AttentionProblem,
        config: &AttentionBwdConfig,
        variant: Variant,
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        let inputs = || Arc::new(HostInputs::new(p, seed));
        Ok(Box::new(super::prepare(backend, *p, *config, variant, inputs)?))
    }
    /// Compute-bound: no copy anchor.
    fn anchor_bytes(_: &AttentionProblem) -> Option<u64> {
        None
    }
    /// On a GPU: f16, D 128, sequence 4096 (batch 4 x 16 heads), causal and not, and D 64 in
    /// bf16; on the CPU backends and at small sizes an odd sequence (the registry's GEMM side
    /// + 1), both types and head dimensions, causal and not.
    fn bench_cases<B: FamilyBackend>(backend: &B, sizes: &Sizes) -> Vec<BenchCase<Self>> {
        let case = |problem: AttentionProblem| BenchCase { problem, config: Self::default_config(backend, &problem) };
        if sizes.gemm < 1024 || backend.kind() == BackendKind::Cpu {
            let seq = sizes.gemm.min(96) + 1;
            let p = |d, dtype, causal| AttentionProblem { batch: 1, heads: 2, seq, d, dtype, causal };
            return vec![case(p(64, Half::F16, false)), case(p(128, Half::Bf16, true))];
        }
        let p = |d, dtype, causal| AttentionProblem { batch: 4, heads: 16, seq: 4096, d, dtype, causal };
        vec![case(p(128, Half::F16, false)), case(p(128, Half::F16, true)), case(p(64, Half::Bf16, false))]
    }
    fn bench_variant(_: &AttentionProblem, variant: Variant) -> bool {
        variant == Variant::LaunchSized
    }
}
