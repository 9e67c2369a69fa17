//! Transpose: block, tile side, padding (floats per tile row).

use dynsmem_kernels::transpose::TransposeConfig;

use super::layout_reason;
use crate::backend::BackendKind;
use crate::error::Result;
use crate::kernels::transpose::{TransposeProblem, prepare, wgsl_spec};
use crate::kernels::{Variant, Workload};
use crate::tune::{Footprint, Param, Target, Tunable, TuneBackend};

pub struct TransposeTunable {
    problem: TransposeProblem,
}

impl TransposeTunable {
    pub fn new(problem: TransposeProblem) -> TransposeTunable {
        TransposeTunable { problem }
    }
}

impl Tunable for TransposeTunable {
    type Problem = TransposeProblem;
    type Config = TransposeConfig;

    fn config(&self, point: &[u32]) -> TransposeConfig {
        TransposeConfig { block: point[0], tile: point[1], pad: point[2] }
    }

    fn family(&self) -> &'static str {
        "transpose"
    }

    fn problem(&self) -> &TransposeProblem {
        &self.problem
    }

    fn params(&self, target: &Target) -> Vec<Param> {
        if target.backend == BackendKind::Cpu {
            vec![Param::new("block", &[8, 16, 32, 64]), Param::new("tile", &[4, 8, 16, 32]), Param::new("pad", &[0, 1])]
        } else {
            vec![
                Param::new("block", &[64, 128, 256, 512, 1024]),
                Param::new("tile", &[8, 16, 32, 64]),
                Param::new("pad", &[0, 1, 2]),
            ]
        }
    }

    fn check(&self, point: &[u32], _: &Target) -> std::result::Result<Footprint, String> {
        let cfg = self.config(point);
        // The entry point's contract (`dynsmem_kernels::transpose`): the block's threads
        // cover whole tile rows.
        if cfg.tile == 0 || cfg.block < cfg.tile || !cfg.block.is_multiple_of(cfg.tile) {
            return Err(format!("block ({}) must be a positive multiple of tile ({})", cfg.block, cfg.tile));
        }
        let launch_bytes = cfg.shared_bytes().map_err(layout_reason)?;
        let static_bytes = wgsl_spec(&cfg, Variant::WgslLiteral).static_bytes;
        let grid = cfg.grid(self.problem.rows, self.problem.cols);
        Ok(Footprint { threads: cfg.block, grid, launch_bytes, static_bytes })
    }

    fn prepare<'b, B: TuneBackend>(
        &self,
        backend: &'b B,
        variant: Variant,
        point: &[u32],
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        Ok(Box::new(prepare(backend, self.problem, self.config(point), variant, seed)?))
    }
}
