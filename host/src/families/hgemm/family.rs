//! HGEMM's face to the registry: its command-line options, defaults and bench cases. On
//! CUDA its workloads carry cuBLAS on the same inputs as their anchor.

use std::sync::Arc;

use dynsmem_kernels::hgemm::{HgemmConfig, MmaKind};
use serde::{Deserialize, Serialize};

use super::{Half, HgemmProblem, HgemmTunable, HostInputs, OutType};
use crate::backend::{Backend, BackendKind, Variant};
use crate::contract::{FamilyBackend, Workload};
use crate::error::Result;
use crate::family::{AnyBackend, BenchCase, Family, Sizes};

pub struct Hgemm;

/// What `run hgemm` runs: a config, on the entry with [`dynsmem_kernels::hgemm::FIXED`]
/// compiled in when `fixed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HgemmRun {
    #[serde(flatten)]
    pub config: HgemmConfig,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fixed: bool,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ProblemArgs {
    /// Rows of A and C (default: 4096 on a GPU).
    #[arg(long)]
    pub m: Option<u32>,
    /// Columns of C, rows of B (B is given n x k, row-major; default: as m).
    #[arg(long)]
    pub n: Option<u32>,
    /// Columns of A and B (a multiple of 8; default: as m).
    #[arg(long)]
    pub k: Option<u32>,
    /// Input type.
    #[arg(long, value_enum, default_value = "f16")]
    pub dtype: Half,
    /// Type of C: f32, or the input type.
    #[arg(long, value_enum, default_value = "f32")]
    pub out: OutType,
}

#[derive(clap::Args, Debug, Clone, Default)]
pub struct ConfigArgs {
    /// The sm_80 kernel (mma.sync from a cp.async ring) instead of sm_90a's wgmma.
    #[arg(long)]
    pub mma: bool,
    /// The entry with the wgmma 128 x 256, 4-stage tile compiled in (f16; in clusters of 2
    /// unless --cluster 1).
    #[arg(long)]
    pub fixed: bool,
    /// Block tile rows: 64 or 128 (64 per math warpgroup / row of warps).
    #[arg(long)]
    pub bm: Option<u32>,
    /// Block tile columns: wgmma 128, 160, 192, 224 or 256; mma 128.
    #[arg(long)]
    pub bn: Option<u32>,
    /// Ring slots (k-tiles in flight): 2-8, within the shared-memory limit.
    #[arg(long)]
    pub stages: Option<u32>,
    /// Tile rows per group of the tile order (L2 reuse).
    #[arg(long)]
    pub group_m: Option<u32>,
    /// Blocks per cluster sharing B tiles by multicast copies: 1 or 2 (wgmma, bn past 128).
    #[arg(long)]
    pub cluster: Option<u32>,
    /// The ping-pong schedule (true: each of two math warpgroups takes its own 64-row tile,
    /// one storing while the other multiplies) or cooperative (false: both share a `bm`-row
    /// tile). wgmma with bm 128.
    #[arg(long)]
    pub pingpong: Option<bool>,
    /// wgmma k-tile groups each math warpgroup keeps in flight: 1, or 2 (at least 3 stages).
    #[arg(long)]
    pub depth: Option<u32>,
    /// The stream-K schedule (true: the tiles of a partial last wave are split by k-tile over
    /// every cluster, the pieces summed in a fixed order) or data-parallel (false: whole
    /// tiles). Cooperative wgmma.
    #[arg(long)]
    pub streamk: Option<bool>,
    /// Store whole tiles through shared memory by tensor-map stores (true), which run on under
    /// the next tile's MMAs, or from registers (false). wgmma; C's rows a multiple of 16
    /// bytes.
    #[arg(long)]
    pub tma_store: Option<bool>,
    /// Staging buffers per math warpgroup for staged stores: 2, or 3 or 4 (each 8 KB more
    /// per warpgroup, so fewer ring stages fit; a store then has more chunks' time to read
    /// its buffer before the buffer is written again).
    #[arg(long)]
    pub stage_buffers: Option<u32>,
}

/// The default config: on sm_90a, the wgmma config the cost model ([`super::cost`]) predicts
/// fastest for the problem among every tile width, schedule and cluster size (each with the
/// most stages that fit); elsewhere the mma kernel, 128 x 128 with 4 stages, or 64 x 128
/// where 128-row tiles would not fill half the SMs.
pub fn default_config(backend: AnyBackend<'_>, p: &HgemmProblem) -> HgemmConfig {
    if let AnyBackend::Cuda(c) = backend
        && c.runs_wgmma()
    {
        let limits = &c.info().limits;
        // Only choices the problem allows (staged stores need C's rows in 16-byte multiples).
        let choices: Vec<HgemmConfig> =
            super::cost::wgmma_choices(limits).into_iter().filter(|c| super::validate(p, c, false).is_ok()).collect();
        if let Some(best) = super::cost::fastest(p, &choices, limits) {
            return best;
        }
    }
    let sms = match backend {
        AnyBackend::Cuda(c) => c.info().limits.multiprocessors.unwrap_or(132) as u64,
        _ => 132,
    };
    let big = HgemmConfig::mma(128, 4);
    if big.tiles(p.m, p.n) * 2 < sms { HgemmConfig::mma(64, 4) } else { big }
}

impl Family for Hgemm {
    const NAME: &'static str = "hgemm";
    const ABOUT: &'static str = "C = A B^T on tensor cores (f16/bf16 in, f32 accumulate): sm_90a wgmma + TMA ring or \
                                 sm_80 mma.sync + cp.async ring, sized at launch; on CUDA beside cuBLAS.";
    const WGSL_TEMPLATE: &'static str = "";
    const SHAPES: &'static str = include_str!("shapes.txt");
    type Problem = HgemmProblem;
    type Config = HgemmRun;
    type ProblemArgs = ProblemArgs;
    type ConfigArgs = ConfigArgs;
    type Tunable = HgemmTunable;

    fn problem(a: &ProblemArgs, sizes: &Sizes) -> HgemmProblem {
        let m = a.m.unwrap_or(sizes.gemm);
        HgemmProblem { m, n: a.n.unwrap_or(m), k: a.k.unwrap_or(m), dtype: a.dtype, out: a.out }
    }
    fn config(a: &ConfigArgs, d: &HgemmRun) -> HgemmRun {
        let mut base = d.config;
        if a.mma && base.kind != MmaKind::Mma {
            base = HgemmConfig { group_m: base.group_m, ..HgemmConfig::mma(base.bm, base.stages.max(2)) };
        }
        if a.fixed {
            base = if a.cluster == Some(1) { dynsmem_kernels::hgemm::FIXED } else { dynsmem_kernels::hgemm::FIXED_C2 };
        }
        let config = HgemmConfig {
            bm: a.bm.unwrap_or(base.bm),
            bn: a.bn.unwrap_or(base.bn),
            stages: a.stages.unwrap_or(base.stages),
            group_m: a.group_m.unwrap_or(base.group_m),
            cluster: a.cluster.unwrap_or(if a.mma || a.bn == Some(128) { 1 } else { base.cluster }),
            // Asking for stream-K asks for the cooperative schedule it runs on.
            pingpong: a.pingpong.unwrap_or(base.pingpong && a.bm.is_none_or(|bm| bm == 128) && a.streamk != Some(true)),
            depth: a.depth.unwrap_or(base.depth),
            streamk: a.streamk.unwrap_or(base.streamk && a.pingpong != Some(true) && !a.mma && !a.fixed),
            tma_store: a.tma_store.unwrap_or(base.tma_store && !a.mma && !a.fixed),
            // More buffers than two only for staged stores.
            stage_buffers: a.stage_buffers.unwrap_or(if a.tma_store == Some(false) || a.mma || a.fixed {
                dynsmem_kernels::hgemm::MIN_STAGE_BUFFERS
            } else {
                base.stage_buffers
            }),
            ..base
        };
        HgemmRun { config, fixed: a.fixed }
    }
    fn default_config<B: FamilyBackend>(backend: &B, p: &HgemmProblem) -> HgemmRun {
        HgemmRun { config: default_config(backend.erase(), p), fixed: false }
    }
    fn prepare<'b, B: FamilyBackend>(
        backend: &'b B,
        p: &HgemmProblem,
        run: &HgemmRun,
        variant: Variant,
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        let inputs = || Arc::new(HostInputs::new(p, seed));
        Ok(Box::new(super::prepare(backend, *p, run.config, run.fixed, variant, inputs)?))
    }
    /// Compute-bound: cuBLAS instead of a copy.
    fn anchor_bytes(_: &HgemmProblem) -> Option<u64> {
        None
    }
    /// On CUDA: f16 and bf16 at 2048, 4096 and 8192 cubed (f32 out), f16 4096 with f16 out, and
    /// the mma kernel at 4096; at small sizes (the registry's odd ones) `m x (m + 2) x k`, k
    /// rounded up to 8, in both kernels, types and outputs. None elsewhere (no other
    /// backend has the kernels).
    fn bench_cases<B: FamilyBackend>(backend: &B, sizes: &Sizes) -> Vec<BenchCase<Self>> {
        if backend.kind() != BackendKind::Cuda {
            return Vec::new();
        }
        let mut cases = Vec::new();
        if sizes.gemm < 1024 {
            let (m, k) = (sizes.gemm, sizes.gemm.next_multiple_of(8));
            for (dtype, out) in [(Half::F16, OutType::F32), (Half::Bf16, OutType::Input)] {
                let problem = HgemmProblem { m, n: m + 2, k, dtype, out };
                cases.push(BenchCase { problem, config: Self::default_config(backend, &problem) });
                let mma = HgemmRun { config: HgemmConfig::mma(64, 3), fixed: false };
                cases.push(BenchCase { problem, config: mma });
            }
            return cases;
        }
        for side in [2048, 4096, 8192] {
            for dtype in [Half::F16, Half::Bf16] {
                let problem = HgemmProblem { m: side, n: side, k: side, dtype, out: OutType::F32 };
                cases.push(BenchCase { problem, config: Self::default_config(backend, &problem) });
            }
        }
        let f16_out = HgemmProblem { m: 4096, n: 4096, k: 4096, dtype: Half::F16, out: OutType::Input };
        cases.push(BenchCase { problem: f16_out, config: Self::default_config(backend, &f16_out) });
        let mma = HgemmProblem { out: OutType::F32, ..f16_out };
        cases.push(BenchCase { problem: mma, config: HgemmRun { config: HgemmConfig::mma(128, 4), fixed: false } });
        cases
    }
    fn bench_variant(_: &HgemmProblem, variant: Variant) -> bool {
        variant == Variant::LaunchSized
    }
}
