//! N-body's face to the registry: its command-line options, defaults and bench cases.

use dynsmem_kernels::nbody::NbodyConfig;

use super::NbodyProblem;
use crate::backend::Variant;
use crate::contract::halvings;
use crate::contract::{FamilyBackend, Workload};
use crate::error::Result;
use crate::family::space::Tuner;
use crate::family::{BenchCase, Family, Sizes};

pub struct Nbody;

#[derive(clap::Args, Debug, Clone)]
pub struct ProblemArgs {
    /// Bodies (default: 65536 on a GPU).
    #[arg(long)]
    pub n: Option<u32>,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ConfigArgs {
    #[arg(long)]
    pub block: Option<u32>,
    /// Bodies per shared-memory tile.
    #[arg(long)]
    pub tile: Option<u32>,
}

impl Family for Nbody {
    const NAME: &'static str = "nbody";
    const ABOUT: &'static str = "One all-pairs n-body step, bodies staged in tiles.";
    const WGSL_TEMPLATE: &'static str = super::WGSL_TEMPLATE;
    const SHAPES: &'static str = include_str!("shapes.txt");
    type Problem = NbodyProblem;
    type Config = NbodyConfig;
    type ProblemArgs = ProblemArgs;
    type ConfigArgs = ConfigArgs;
    type Tunable = Tuner<Self>;

    fn problem(a: &ProblemArgs, sizes: &Sizes) -> NbodyProblem {
        NbodyProblem::new(a.n.unwrap_or(sizes.bodies))
    }
    fn config(a: &ConfigArgs, d: &NbodyConfig) -> NbodyConfig {
        NbodyConfig { block: a.block.unwrap_or(d.block), tile: a.tile.unwrap_or(d.tile) }
    }
    fn default_config<B: FamilyBackend>(backend: &B, _: &NbodyProblem) -> NbodyConfig {
        super::default_config(backend)
    }
    fn static_bytes(_: &NbodyProblem, c: &NbodyConfig) -> Option<u32> {
        c.shared_bytes().ok()
    }
    /// The static forms' fallbacks: smaller tiles (the
    /// default 256 bodies fit: 4 KB).
    fn static_fallbacks(_: &NbodyProblem, c: &NbodyConfig) -> Vec<NbodyConfig> {
        halvings(c.tile, 1).map(|tile| NbodyConfig { tile, ..*c }).collect()
    }
    fn prepare<'b, B: FamilyBackend>(
        backend: &'b B,
        p: &NbodyProblem,
        c: &NbodyConfig,
        variant: Variant,
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        Ok(Box::new(super::prepare(backend, *p, *c, variant, seed)?))
    }
    /// Compute-bound: no copy anchor.
    fn anchor_bytes(_: &NbodyProblem) -> Option<u64> {
        None
    }
    fn bench_cases<B: FamilyBackend>(backend: &B, sizes: &Sizes) -> Vec<BenchCase<Self>> {
        vec![BenchCase { problem: NbodyProblem::new(sizes.bodies), config: super::default_config(backend) }]
    }
}
