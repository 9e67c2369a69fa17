//! Reduce's face to the registry: its command-line options, defaults and bench cases.

use dynsmem_kernels::Dtype;

use super::{ReduceConfig, ReduceOp, ReduceProblem};
use crate::backend::Variant;
use crate::contract::halvings;
use crate::contract::{FamilyBackend, Workload, bytes_of};
use crate::error::Result;
use crate::family::DtypeArg;
use crate::family::space::Tuner;
use crate::family::{BenchCase, Family, Sizes};

pub struct Reduce;

/// A staged config with 200 KB of launch-sized tile per block: past the 48 KB a kernel
/// gets without opt-in, and past what static WGSL arrays may hold.
pub const STAGED_200K: ReduceConfig = ReduceConfig { block: 256, items_per_thread: 200, staged: true };

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum OpArg {
    Sum,
    Min,
    Max,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ProblemArgs {
    /// Number of elements (default: 2^28 on a GPU, 2^22 on a CPU Vulkan adapter, 2^16 on the CPU backend).
    #[arg(long)]
    pub n: Option<u64>,
    #[arg(long, value_enum, default_value = "sum")]
    pub op: OpArg,
    #[arg(long, value_enum, default_value = "f32")]
    pub dtype: DtypeArg,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ConfigArgs {
    /// Threads per block (default: the backend's default config).
    #[arg(long)]
    pub block: Option<u32>,
    /// Elements each thread folds per chunk (default: the backend's default config).
    #[arg(long)]
    pub ipt: Option<u32>,
    /// Stage each chunk through a launch-sized tile of block * ipt elements.
    #[arg(long)]
    pub staged: bool,
}

impl Family for Reduce {
    const NAME: &'static str = "reduce";
    const ABOUT: &'static str = "Sum / min / max of n elements to one value.";
    const WGSL_TEMPLATE: &'static str = super::WGSL_TEMPLATE;
    const SHAPES: &'static str = include_str!("shapes.txt");
    type Problem = ReduceProblem;
    type Config = ReduceConfig;
    type ProblemArgs = ProblemArgs;
    type ConfigArgs = ConfigArgs;
    type Tunable = Tuner<Self>;

    fn problem(a: &ProblemArgs, sizes: &Sizes) -> ReduceProblem {
        let op = match a.op {
            OpArg::Sum => ReduceOp::Sum,
            OpArg::Min => ReduceOp::Min,
            OpArg::Max => ReduceOp::Max,
        };
        ReduceProblem { n: a.n.unwrap_or(sizes.n), op, dtype: a.dtype.dtype() }
    }
    /// `--staged` picks the staged kernel; without it the default's choice stands (a tuning
    /// database entry may be staged).
    fn select(a: &ConfigArgs, d: ReduceConfig) -> ReduceConfig {
        ReduceConfig { staged: a.staged || d.staged, ..d }
    }
    fn config(a: &ConfigArgs, d: &ReduceConfig) -> ReduceConfig {
        ReduceConfig {
            block: a.block.unwrap_or(d.block),
            items_per_thread: a.ipt.unwrap_or(d.items_per_thread),
            staged: a.staged || d.staged,
        }
    }
    fn default_config<B: FamilyBackend>(backend: &B, _: &ReduceProblem) -> ReduceConfig {
        super::default_config(backend)
    }
    fn static_bytes(p: &ReduceProblem, c: &ReduceConfig) -> Option<u32> {
        c.shared_bytes(p.dtype).ok()
    }
    /// The static forms' fallbacks: a staged config whose
    /// tile is over the static limit keeps its block and stages fewer items per thread (the
    /// most that fit, multiples of 4 first for the 16-byte loads); an unstaged one halves its
    /// block.
    fn static_fallbacks(_: &ReduceProblem, c: &ReduceConfig) -> Vec<ReduceConfig> {
        if c.staged {
            let ipts = (1..c.items_per_thread).rev();
            ipts.clone()
                .filter(|i| i % 4 == 0)
                .chain(ipts.filter(|i| i % 4 != 0))
                .map(|items_per_thread| ReduceConfig { items_per_thread, ..*c })
                .collect()
        } else {
            halvings(c.block, 32).map(|block| ReduceConfig { block, ..*c }).collect()
        }
    }
    fn prepare<'b, B: FamilyBackend>(
        backend: &'b B,
        p: &ReduceProblem,
        c: &ReduceConfig,
        variant: Variant,
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        super::tune::prepare(backend, *p, *c, variant, seed)
    }
    fn anchor_bytes(p: &ReduceProblem) -> Option<u64> {
        Some(bytes_of(p.n, p.dtype.bytes() as u64))
    }
    /// The backend's default config, and a staged one with 200 KB of tile per block.
    /// 2^23 + 3 elements in chunks of 4 x 32: 65537 chunks, past the 65535-block grid.
    fn edge_cases() -> Vec<BenchCase<Self>> {
        let problem = ReduceProblem { n: (1 << 23) + 3, op: ReduceOp::Sum, dtype: Dtype::F32 };
        vec![BenchCase { problem, config: ReduceConfig { block: 4, items_per_thread: 32, staged: false } }]
    }
    fn bench_cases<B: FamilyBackend>(backend: &B, sizes: &Sizes) -> Vec<BenchCase<Self>> {
        let problem = ReduceProblem { n: sizes.n, op: ReduceOp::Sum, dtype: Dtype::F32 };
        [super::default_config(backend), STAGED_200K].into_iter().map(|config| BenchCase { problem, config }).collect()
    }
}
