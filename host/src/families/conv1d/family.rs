//! Conv1d's face to the registry: its command-line options, defaults and bench cases.

use dynsmem_kernels::conv1d::Conv1dConfig;

use super::Conv1dProblem;
use crate::backend::Variant;
use crate::contract::halvings;
use crate::contract::{FamilyBackend, Workload, bytes_of, check_footprint};
use crate::error::Result;
use crate::family::space::Tuner;
use crate::family::{BenchCase, Family, Sizes};

pub struct Conv1d;

#[derive(clap::Args, Debug, Clone)]
pub struct ProblemArgs {
    /// Samples (default: 2^28 on a GPU, 2^22 on a CPU Vulkan adapter, 2^16 on the CPU backend).
    #[arg(long)]
    pub n: Option<u64>,
    /// Taps (odd, 3..=129).
    #[arg(long, default_value_t = 33)]
    pub taps: u32,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ConfigArgs {
    #[arg(long)]
    pub block: Option<u32>,
    /// Outputs per thread: 4 or 8 (instantiated in the image).
    #[arg(long)]
    pub outputs_per_thread: Option<u32>,
}

impl Family for Conv1d {
    const NAME: &'static str = "conv1d";
    const ABOUT: &'static str = "K-tap 1-D convolution with a halo tile.";
    const WGSL_TEMPLATE: &'static str = super::WGSL_TEMPLATE;
    const SHAPES: &'static str = include_str!("shapes.txt");
    type Problem = Conv1dProblem;
    type Config = Conv1dConfig;
    type ProblemArgs = ProblemArgs;
    type ConfigArgs = ConfigArgs;
    type Tunable = Tuner<Self>;

    fn problem(a: &ProblemArgs, sizes: &Sizes) -> Conv1dProblem {
        Conv1dProblem { n: a.n.unwrap_or(sizes.n), taps: a.taps }
    }
    fn config(a: &ConfigArgs, d: &Conv1dConfig) -> Conv1dConfig {
        Conv1dConfig {
            block: a.block.unwrap_or(d.block),
            outputs_per_thread: a.outputs_per_thread.unwrap_or(d.outputs_per_thread),
        }
    }
    fn default_config<B: FamilyBackend>(backend: &B, p: &Conv1dProblem) -> Conv1dConfig {
        super::default_config(backend, p.taps)
    }
    fn static_bytes(p: &Conv1dProblem, c: &Conv1dConfig) -> Option<u32> {
        c.shared_bytes(p.taps).ok()
    }
    /// The static forms' fallbacks: smaller blocks (every
    /// default fits: 128 x 8 outputs and 129 taps are 4.7 KB).
    fn static_fallbacks(_: &Conv1dProblem, c: &Conv1dConfig) -> Vec<Conv1dConfig> {
        halvings(c.block, 32).map(|block| Conv1dConfig { block, ..*c }).collect()
    }
    fn prepare<'b, B: FamilyBackend>(
        backend: &'b B,
        p: &Conv1dProblem,
        c: &Conv1dConfig,
        variant: Variant,
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        // Input and output on the device; the input, the f64 reference and its error
        // scale, the NaN fill and the read-back on the host.
        check_footprint(backend, "conv1d_f32", bytes_of(p.n, 8), bytes_of(p.n, 28))?;
        Ok(Box::new(super::prepare(backend, *p, *c, variant, seed)?))
    }
    fn anchor_bytes(p: &Conv1dProblem) -> Option<u64> {
        Some(bytes_of(p.n, 4))
    }
    /// 2^20 + 17 outputs in tiles of 4 x 4: 65538 tiles, past the 65535-block grid.
    fn edge_cases() -> Vec<BenchCase<Self>> {
        let problem = Conv1dProblem { n: (1 << 20) + 17, taps: 3 };
        vec![BenchCase { problem, config: Conv1dConfig { block: 4, outputs_per_thread: 4 } }]
    }
    fn bench_cases<B: FamilyBackend>(backend: &B, sizes: &Sizes) -> Vec<BenchCase<Self>> {
        [3, 33]
            .into_iter()
            .map(|taps| BenchCase {
                problem: Conv1dProblem { n: sizes.n, taps },
                config: super::default_config(backend, taps),
            })
            .collect()
    }
}
