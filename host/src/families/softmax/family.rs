//! Softmax's face to the registry: its command-line options, defaults and bench cases.

use dynsmem_kernels::softmax::SoftmaxConfig;

use super::SoftmaxProblem;
use crate::backend::Variant;
use crate::contract::{FamilyBackend, Workload, bytes_of};
use crate::error::Result;
use crate::family::rows::{self, RowFamily, RowKernel};
use crate::family::space::Tuner;
use crate::family::{BenchCase, Family, Sizes};

pub struct Softmax;

#[derive(clap::Args, Debug, Clone)]
pub struct ProblemArgs {
    /// Rows (default: 65536 on a GPU).
    #[arg(long)]
    pub rows: Option<u32>,
    /// Row length: up to 57344 floats in one block on an H100, 458752 in clusters of 8.
    #[arg(long, default_value_t = 4096)]
    pub cols: u32,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ConfigArgs {
    #[arg(long)]
    pub block: Option<u32>,
    /// Blocks of the thread-block cluster that shares a row (1, 2, 4 or 8; CUDA sm_90+ and
    /// the CPU backend).
    #[arg(long)]
    pub cluster: Option<u32>,
}

impl Family for Softmax {
    const NAME: &'static str = "softmax";
    const SUBGROUP_TWIN: bool = true;
    const ABOUT: &'static str = "Row-wise softmax, one row per block held in workgroup memory.";
    const WGSL_TEMPLATE: &'static str = super::WGSL_TEMPLATE;
    const SHAPES: &'static str = include_str!("shapes.txt");
    type Problem = SoftmaxProblem;
    type Config = SoftmaxConfig;
    type ProblemArgs = ProblemArgs;
    type ConfigArgs = ConfigArgs;
    type Tunable = Tuner<Self>;

    fn problem(a: &ProblemArgs, sizes: &Sizes) -> SoftmaxProblem {
        SoftmaxProblem { rows: a.rows.unwrap_or(sizes.rows), cols: a.cols }
    }
    fn config(a: &ConfigArgs, d: &SoftmaxConfig) -> SoftmaxConfig {
        SoftmaxConfig { block: a.block.unwrap_or(d.block), cluster: a.cluster.unwrap_or(d.cluster) }
    }
    fn default_config<B: FamilyBackend>(backend: &B, p: &SoftmaxProblem) -> SoftmaxConfig {
        super::default_config(backend, p.rows, p.cols)
    }
    fn static_bytes(p: &SoftmaxProblem, c: &SoftmaxConfig) -> Option<u32> {
        Some(rows::static_bytes(p.cols, c))
    }
    fn static_fallbacks(_: &SoftmaxProblem, c: &SoftmaxConfig) -> Vec<SoftmaxConfig> {
        rows::static_fallbacks(c)
    }
    fn fit_config<B: FamilyBackend>(
        backend: &B,
        variant: Variant,
        problem: &SoftmaxProblem,
        config: SoftmaxConfig,
    ) -> (SoftmaxConfig, Option<String>) {
        rows::fit_config(backend, variant, problem.cols, config)
    }
    fn prepare<'b, B: FamilyBackend>(
        backend: &'b B,
        p: &SoftmaxProblem,
        c: &SoftmaxConfig,
        variant: Variant,
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        Ok(Box::new(super::prepare(backend, *p, *c, variant, seed)?))
    }
    fn anchor_bytes(p: &SoftmaxProblem) -> Option<u64> {
        Some(bytes_of(p.rows as u64 * p.cols as u64, 4))
    }
    /// Rows of 4096, and rows of 32768 floats (128 KB: past any static limit).
    /// 65537 rows, one block each: past the 65535-block grid.
    fn edge_cases() -> Vec<BenchCase<Self>> {
        vec![BenchCase { problem: SoftmaxProblem { rows: 65_537, cols: 5 }, config: SoftmaxConfig::blocks(4) }]
    }
    fn bench_cases<B: FamilyBackend>(backend: &B, sizes: &Sizes) -> Vec<BenchCase<Self>> {
        [(sizes.rows, 4096), ((sizes.rows / 8).max(1), 32_768)]
            .into_iter()
            .map(|(rows, cols)| BenchCase {
                problem: SoftmaxProblem { rows, cols },
                config: super::default_config(backend, rows, cols),
            })
            .collect()
    }
}

impl RowFamily for Softmax {
    const KERNEL: RowKernel = super::KERNEL;
    fn shape(p: &SoftmaxProblem) -> (u32, u32) {
        (p.rows, p.cols)
    }
}
