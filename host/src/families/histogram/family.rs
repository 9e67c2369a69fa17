//! Histogram's face to the registry: its command-line options, defaults and bench cases.

use dynsmem_kernels::histogram::HistogramConfig;

use super::HistogramProblem;
use crate::backend::Variant;
use crate::contract::{FamilyBackend, Workload, bytes_of};
use crate::error::Result;
use crate::family::space::Tuner;
use crate::family::{BenchCase, Family, Sizes};

pub struct Histogram;

#[derive(clap::Args, Debug, Clone)]
pub struct ProblemArgs {
    /// Keys (default: 2^28 on a GPU, 2^22 on a CPU Vulkan adapter, 2^16 on the CPU backend).
    #[arg(long)]
    pub n: Option<u64>,
    #[arg(long, default_value_t = 256)]
    pub bins: u32,
    /// Percent of keys outside [0, bins) (not counted).
    #[arg(id = "out_of_range_pct", long = "out-of-range", default_value_t = 0)]
    pub out_of_range: u32,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ConfigArgs {
    #[arg(long)]
    pub block: Option<u32>,
    #[arg(long)]
    pub grid: Option<u32>,
    /// Private copies of the bins per block.
    #[arg(long)]
    pub copies: Option<u32>,
    /// Blocks of a thread-block cluster (1, 2, 4 or 8; CUDA sm_90+ and the CPU backend):
    /// their shared memory holds the bins split between them, or with `--merge true` each
    /// holds them all and the cluster sums them before the device atomics.
    #[arg(long)]
    pub cluster: Option<u32>,
    /// In a cluster: each block holds every bin, the cluster sums them (true), or the
    /// blocks split the bins (false).
    #[arg(long)]
    pub merge: Option<bool>,
    /// Bits of a shared-memory counter: 32, or 16 / 8 (two / four bins to a word; a counter
    /// that wraps carries into the device bins).
    #[arg(long)]
    pub bits: Option<u32>,
    /// Bins held in shared memory, the first ones (0: all); keys of the others are counted
    /// with device atomics. Default: all where they fit one block, else as many as fit.
    #[arg(long)]
    pub held: Option<u32>,
}

impl Family for Histogram {
    const NAME: &'static str = "histogram";
    const ABOUT: &'static str = "Counts of u32 keys in bins held in workgroup memory.";
    const WGSL_TEMPLATE: &'static str = super::WGSL_TEMPLATE;
    const SHAPES: &'static str = include_str!("shapes.txt");
    type Problem = HistogramProblem;
    type Config = HistogramConfig;
    type ProblemArgs = ProblemArgs;
    type ConfigArgs = ConfigArgs;
    type Tunable = Tuner<Self>;

    fn problem(a: &ProblemArgs, sizes: &Sizes) -> HistogramProblem {
        HistogramProblem { n: a.n.unwrap_or(sizes.n), bins: a.bins, out_of_range_pct: a.out_of_range }
    }
    fn config(a: &ConfigArgs, d: &HistogramConfig) -> HistogramConfig {
        HistogramConfig {
            block: a.block.unwrap_or(d.block),
            grid: a.grid.unwrap_or(d.grid),
            copies: a.copies.unwrap_or(d.copies),
            cluster: a.cluster.unwrap_or(d.cluster),
            held: a.held.unwrap_or(d.held),
            bits: a.bits.unwrap_or(d.bits),
            merge: a.merge.unwrap_or(d.merge),
        }
    }
    fn default_config<B: FamilyBackend>(backend: &B, p: &HistogramProblem) -> HistogramConfig {
        super::default_config(backend, p)
    }
    fn static_bytes(p: &HistogramProblem, c: &HistogramConfig) -> Option<u32> {
        c.shared_bytes(p.bins).ok()
    }
    /// The static forms' fallbacks: fewer private copies
    /// of the bins, down to one; none fits when one copy is over the static limit (49152 bins
    /// of 4 bytes are 192 KB, four times the 48 KB a static array may hold).
    fn static_fallbacks(_: &HistogramProblem, c: &HistogramConfig) -> Vec<HistogramConfig> {
        (1..c.copies).rev().map(|copies| HistogramConfig { copies, ..*c }).collect()
    }
    /// The twins hold every bin in one workgroup: a cluster config runs as plain blocks
    /// (one copy each where the bins need a cluster), with a note.
    fn fit_config<B: FamilyBackend>(
        backend: &B,
        variant: Variant,
        problem: &HistogramProblem,
        config: HistogramConfig,
    ) -> (HistogramConfig, Option<String>) {
        let (config, note) = super::fit_twin(variant, config);
        let limit = backend.info().limits.static_shared_max;
        let fallbacks = Self::static_fallbacks(problem, &config);
        let (config, fitted) =
            crate::contract::fit_static(variant, limit, config, fallbacks, |c| Self::static_bytes(problem, c));
        (config, note.into_iter().chain(fitted).reduce(|a, b| format!("{a}; {b}")))
    }
    fn prepare<'b, B: FamilyBackend>(
        backend: &'b B,
        p: &HistogramProblem,
        c: &HistogramConfig,
        variant: Variant,
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        Ok(Box::new(super::prepare(backend, *p, *c, variant, seed)?))
    }
    fn anchor_bytes(p: &HistogramProblem) -> Option<u64> {
        Some(bytes_of(p.n, 4))
    }
    /// 256 and 4096 bins, and 49152 (192 KB of bins: past the 48 KB static limit).
    fn bench_cases<B: FamilyBackend>(backend: &B, sizes: &Sizes) -> Vec<BenchCase<Self>> {
        [256, 4096, 49_152]
            .into_iter()
            .map(|bins| {
                let problem = HistogramProblem { n: sizes.n, bins, out_of_range_pct: 0 };
                BenchCase { problem, config: super::default_config(backend, &problem) }
            })
            .collect()
    }
}
