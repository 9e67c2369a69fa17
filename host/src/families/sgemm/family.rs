//! SGEMM's face to the registry: its command-line options, defaults and bench cases. On
//! CUDA its workloads carry cuBLAS on the same inputs as their anchor
//! ([`crate::families::Workload::vendor_anchor`]).

use dynsmem_kernels::sgemm::{SK_BK, SgemmConfig, THREAD_TILE, TMA_BN};
use serde::{Deserialize, Serialize};

use super::{SgemmProblem, SgemmTunable};
use crate::backend::{BackendKind, Variant};
use crate::contract::{FamilyBackend, Workload};
use crate::error::Result;
use crate::family::{BenchCase, Family, Sizes};

pub struct Sgemm;

/// What `run sgemm` runs: a config, on the entry with the 128 x 128 x 16 two-stage tile
/// compiled in when `fixed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SgemmRun {
    #[serde(flatten)]
    pub config: SgemmConfig,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fixed: bool,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ProblemArgs {
    /// Rows of A and C (default: 4096 on a GPU, 256 on a CPU Vulkan adapter, 96 on the CPU backend).
    #[arg(long)]
    pub m: Option<u32>,
    /// Columns of B and C (default: as m).
    #[arg(long)]
    pub n: Option<u32>,
    /// Columns of A, rows of B (default: as m).
    #[arg(long)]
    pub k: Option<u32>,
    /// f16 inputs with f32 accumulation and output (hgemm_f16_f32).
    #[arg(id = "f16_inputs", long = "f16")]
    pub f16: bool,
}

#[derive(clap::Args, Debug, Clone, Default)]
pub struct ConfigArgs {
    /// The entry with the 128 x 128 x 16 two-stage block tile compiled in (f32 only).
    #[arg(long)]
    pub fixed: bool,
    /// Block tile rows (multiple of 8).
    #[arg(long)]
    pub bm: Option<u32>,
    /// Block tile columns (multiple of 8).
    #[arg(long)]
    pub bn: Option<u32>,
    /// Depth of a k-step (multiple of 4, and of 8 for f16).
    #[arg(long)]
    pub bk: Option<u32>,
    /// Pipeline stages (1 to 4; WGSL: 1 or 2): k-tiles in flight in shared memory.
    #[arg(long)]
    pub stages: Option<u32>,
    /// Rows of C per thread: 8 (64 accumulators), 16 (128) or 4 (32: small problems); 4 and
    /// 16 for f32 in the launch-sized form only.
    /// Default: 8 when a tile (--bm, --bn, --bk, --stages) is given, else the default
    /// config's.
    #[arg(long)]
    pub tm: Option<u32>,
    /// f32 on CUDA sm_90: the tensor-map (TMA) kernel, thread tile 8 x 16, bn 128, bk 32
    /// or 64 (both tiles by the copy engine; K and N multiples of 4).
    #[arg(long)]
    pub tma: bool,
    /// Split-K: blocks per output tile, sharing its k-tiles; their parts go to a workspace
    /// and a second launch adds them into C in a fixed order (the same bits every run; 1 to
    /// 264; launch-sized only). Default: 1 when a tile is given, else the default config's.
    #[arg(long)]
    pub splits: Option<u32>,
    /// Stream-K (f32, the tensor-map kernel; CUDA sm_90 or the CPU backend): a persistent
    /// grid of this many blocks per multiprocessor (1 to 8) sharing out every tile's
    /// k-tiles, split tiles summed in a fixed order; bn 128, 64 or 32, bk 32. Default: 0
    /// (one block per tile) when a tile or --tma is given, else the default config's.
    #[arg(long)]
    pub sk: Option<u32>,
}

impl ConfigArgs {
    /// The config these options ask for over `default`: each tile option given replaces its
    /// field. A tile given without `--tm` (or `--fixed`) runs 8 rows per thread; with none
    /// given, `default` runs whole (16 rows for f32 on CUDA).
    /// `--sk N` (N > 0) asks for the stream-K kernel whatever else is given: the tile options
    /// then set its tile, the default's where absent (128 columns, depth 32 where the
    /// default is another kernel).
    pub fn config_over(&self, default: SgemmConfig) -> SgemmConfig {
        let tile_given = self.fixed || [self.bm, self.bn, self.bk, self.stages].iter().any(Option::is_some);
        let sk_given = self.sk.is_some_and(|s| s > 0);
        let other_kernel = tile_given || self.tma || self.tm.is_some();
        let sk = self.sk.unwrap_or(if other_kernel { 0 } else { default.sk });
        let from_sk_default = default.sk > 0;
        SgemmConfig {
            bm: self.bm.unwrap_or(default.bm),
            bn: self.bn.unwrap_or(if (sk_given && !from_sk_default) || self.tma { TMA_BN } else { default.bn }),
            bk: self.bk.unwrap_or(if sk_given { SK_BK } else { default.bk }),
            stages: self.stages.unwrap_or(default.stages),
            tm: self.tm.unwrap_or(if tile_given || self.tma || sk_given { THREAD_TILE } else { default.tm }),
            tma: sk_given || self.tma || (!tile_given && self.tm.is_none() && default.tma),
            splits: self.splits.unwrap_or(if tile_given || self.tma || sk > 0 { 1 } else { default.splits }),
            sk,
        }
    }
}

impl Family for Sgemm {
    const NAME: &'static str = "sgemm";
    const ABOUT: &'static str = "C = alpha A B + beta C (f32, or f16 inputs), block tile and stages chosen at launch; \
                                 on CUDA beside cuBLAS on the same inputs.";
    const WGSL_TEMPLATE: &'static str = super::WGSL_TEMPLATE;
    const SHAPES: &'static str = include_str!("shapes.txt");
    type Problem = SgemmProblem;
    type Config = SgemmRun;
    type ProblemArgs = ProblemArgs;
    type ConfigArgs = ConfigArgs;
    type Tunable = SgemmTunable;

    fn problem(a: &ProblemArgs, sizes: &Sizes) -> SgemmProblem {
        let m = a.m.unwrap_or(sizes.gemm);
        SgemmProblem { m, n: a.n.unwrap_or(m), k: a.k.unwrap_or(m), f16_inputs: a.f16 }
    }
    fn config(a: &ConfigArgs, d: &SgemmRun) -> SgemmRun {
        SgemmRun { config: a.config_over(d.config), fixed: a.fixed }
    }
    fn default_config<B: FamilyBackend>(backend: &B, p: &SgemmProblem) -> SgemmRun {
        SgemmRun { config: super::default_config(backend, p), fixed: false }
    }
    fn fit_config<B: FamilyBackend>(
        backend: &B,
        variant: Variant,
        p: &SgemmProblem,
        run: SgemmRun,
    ) -> (SgemmRun, Option<String>) {
        let (config, note) = super::fit_config(backend, variant, p, run.config);
        (SgemmRun { config, ..run }, note)
    }
    fn prepare<'b, B: FamilyBackend>(
        backend: &'b B,
        p: &SgemmProblem,
        run: &SgemmRun,
        variant: Variant,
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        Ok(Box::new(super::prepare(backend, *p, run.config, run.fixed, variant, seed)?))
    }
    /// Compute-bound: cuBLAS on CUDA instead of a copy.
    fn anchor_bytes(_: &SgemmProblem) -> Option<u64> {
        None
    }
    /// 1024, 4096 and 8192 cubed (f32) and 4096 (f16) on a GPU; small ones on CPUs.
    fn bench_cases<B: FamilyBackend>(backend: &B, sizes: &Sizes) -> Vec<BenchCase<Self>> {
        let sides: &[(u32, bool)] = match (backend.kind(), sizes.gemm) {
            (BackendKind::Cpu, _) => &[(64, false), (64, true)],
            (_, g) if g < 1024 => &[(128, false), (128, true)],
            _ => &[(1024, false), (4096, false), (8192, false), (4096, true)],
        };
        sides
            .iter()
            .map(|&(side, f16_inputs)| {
                let problem = SgemmProblem { m: side, n: side, k: side, f16_inputs };
                BenchCase { problem, config: Self::default_config(backend, &problem) }
            })
            .collect()
    }
    /// Every variant (the WGSL form reads f16 inputs where the adapter has f16; the bench
    /// records the refusal where it has not).
    fn bench_variant(_: &SgemmProblem, _: Variant) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> ConfigArgs {
        use clap::{Args, FromArgMatches};
        let cmd = ConfigArgs::augment_args(clap::Command::new("sgemm").no_binary_name(true));
        ConfigArgs::from_arg_matches(&cmd.get_matches_from(line.split_whitespace())).unwrap()
    }

    #[test]
    fn a_gemm_tile_given_without_tm_runs_eight_rows_and_none_given_runs_the_default_whole() {
        let default = SgemmConfig::new(256, 128, 32, 3).with_tm(16);
        assert_eq!(args("").config_over(default), default);
        let tile = args("--bm 128 --bn 128 --bk 32 --stages 2").config_over(default);
        assert_eq!(tile, SgemmConfig::new(128, 128, 32, 2));
        assert_eq!(args("--stages 4").config_over(default), SgemmConfig::new(256, 128, 32, 4));
        assert_eq!(args("--bm 128 --tm 16").config_over(default), SgemmConfig::new(128, 128, 32, 3).with_tm(16));
        // The tensor-map default (CUDA f32 at 4096^3): whole with no option, the k-group
        // kernel with any tile option or --tm, and --tma over a k-group default.
        let tma = SgemmConfig::tma(256, 32, 3);
        assert_eq!(args("").config_over(tma), tma);
        assert_eq!(args("--tm 16").config_over(tma), default);
        assert_eq!(args("--stages 2").config_over(tma), SgemmConfig::new(256, 128, 32, 2));
        assert_eq!(args("--tma --stages 4").config_over(default), SgemmConfig::tma(256, 32, 4));
    }
}
