//! Transpose's face to the registry: its command-line options, defaults and bench cases.

use dynsmem_kernels::transpose::TransposeConfig;

use super::TransposeProblem;
use crate::backend::Variant;
use crate::contract::halvings;
use crate::contract::{FamilyBackend, Workload};
use crate::error::Result;
use crate::family::space::Tuner;
use crate::family::{BenchCase, Family, Sizes};

pub struct Transpose;

#[derive(clap::Args, Debug, Clone)]
pub struct ProblemArgs {
    /// Rows and columns (default: 16384 on a GPU).
    #[arg(long)]
    pub rows: Option<u32>,
    #[arg(long)]
    pub cols: Option<u32>,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ConfigArgs {
    #[arg(long)]
    pub block: Option<u32>,
    #[arg(long)]
    pub tile: Option<u32>,
    /// Floats of padding per shared-tile row (1 avoids bank conflicts).
    #[arg(long)]
    pub pad: Option<u32>,
}

impl Family for Transpose {
    const NAME: &'static str = "transpose";
    const ABOUT: &'static str = "Matrix transpose through padded tiles.";
    const WGSL_TEMPLATE: &'static str = super::WGSL_TEMPLATE;
    const SHAPES: &'static str = include_str!("shapes.txt");
    type Problem = TransposeProblem;
    type Config = TransposeConfig;
    type ProblemArgs = ProblemArgs;
    type ConfigArgs = ConfigArgs;
    type Tunable = Tuner<Self>;

    fn problem(a: &ProblemArgs, sizes: &Sizes) -> TransposeProblem {
        TransposeProblem { rows: a.rows.unwrap_or(sizes.side), cols: a.cols.unwrap_or(sizes.side) }
    }
    fn config(a: &ConfigArgs, d: &TransposeConfig) -> TransposeConfig {
        TransposeConfig {
            block: a.block.unwrap_or(d.block),
            tile: a.tile.unwrap_or(d.tile),
            pad: a.pad.unwrap_or(d.pad),
        }
    }
    fn default_config<B: FamilyBackend>(backend: &B, _: &TransposeProblem) -> TransposeConfig {
        super::default_config(backend)
    }
    fn static_bytes(_: &TransposeProblem, c: &TransposeConfig) -> Option<u32> {
        c.shared_bytes().ok()
    }
    /// The static forms' fallbacks: smaller tiles with the
    /// same padding and block, down to 16 (the default 64 x 65 fits: 16.6 KB).
    fn static_fallbacks(_: &TransposeProblem, c: &TransposeConfig) -> Vec<TransposeConfig> {
        halvings(c.tile, 16)
            .map(|tile| TransposeConfig { tile, ..*c })
            .filter(|c| c.block >= c.tile && c.block.is_multiple_of(c.tile))
            .collect()
    }
    fn prepare<'b, B: FamilyBackend>(
        backend: &'b B,
        problem: &TransposeProblem,
        config: &TransposeConfig,
        variant: Variant,
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        Ok(Box::new(super::prepare(backend, *problem, *config, variant, seed)?))
    }
    fn anchor_bytes(p: &TransposeProblem) -> Option<u64> {
        Some(crate::contract::bytes_of(p.rows as u64 * p.cols as u64, 4))
    }
    /// The default, and the same without padding (bank conflicts on the reads).
    /// 2049 x 2048 in 8 x 8 tiles: 257 x 256 = 65792 tiles, past the 65535-block grid.
    fn edge_cases() -> Vec<BenchCase<Self>> {
        let config = TransposeConfig { block: 8, tile: 8, pad: 1 };
        vec![BenchCase { problem: TransposeProblem { rows: 2049, cols: 2048 }, config }]
    }
    fn bench_cases<B: FamilyBackend>(backend: &B, sizes: &Sizes) -> Vec<BenchCase<Self>> {
        let problem = TransposeProblem { rows: sizes.side, cols: sizes.side };
        let d = super::default_config(backend);
        [d, TransposeConfig { pad: 0, ..d }].into_iter().map(|config| BenchCase { problem, config }).collect()
    }
}
