//! Stencil2d: block, tile width, tile height (the radius is the problem's: a const
//! generic of the image, one of [`RADII`]).

use dynsmem_kernels::stencil2d::{RADII, Stencil2dConfig};

use super::layout_reason;
use crate::backend::BackendKind;
use crate::error::Result;
use crate::kernels::stencil2d::{Stencil2dProblem, prepare, wgsl_spec};
use crate::kernels::{Variant, Workload};
use crate::tune::{Footprint, Param, Target, Tunable, TuneBackend};

pub struct Stencil2dTunable {
    problem: Stencil2dProblem,
}

impl Stencil2dTunable {
    pub fn new(problem: Stencil2dProblem) -> Stencil2dTunable {
        Stencil2dTunable { problem }
    }
}

impl Tunable for Stencil2dTunable {
    type Problem = Stencil2dProblem;
    type Config = Stencil2dConfig;

    fn config(&self, point: &[u32]) -> Stencil2dConfig {
        Stencil2dConfig { block: point[0], tile_w: point[1], tile_h: point[2] }
    }

    fn family(&self) -> &'static str {
        "stencil2d"
    }

    fn problem(&self) -> &Stencil2dProblem {
        &self.problem
    }

    fn params(&self, target: &Target) -> Vec<Param> {
        if target.backend == BackendKind::Cpu {
            vec![
                Param::new("block", &[4, 8, 16, 32, 64]),
                Param::new("tile_w", &[16, 32, 64]),
                Param::new("tile_h", &[4, 8, 16, 32]),
            ]
        } else {
            vec![
                Param::new("block", &[64, 128, 256, 512, 1024]),
                Param::new("tile_w", &[16, 32, 64, 128, 256]),
                Param::new("tile_h", &[4, 8, 16, 32, 64]),
            ]
        }
    }

    fn check(&self, point: &[u32], _: &Target) -> std::result::Result<Footprint, String> {
        let cfg = self.config(point);
        if !RADII.contains(&self.problem.radius) {
            return Err(format!("radius {} is not in the image (one of {RADII:?})", self.problem.radius));
        }
        if !cfg.fits() {
            return Err("the threads must divide the tile: tile_w a multiple of 4, block a multiple of tile_w / 4, \
                 tile_h a multiple of block / (tile_w / 4)"
                .into());
        }
        let launch_bytes = cfg.shared_bytes(self.problem.radius).map_err(layout_reason)?;
        let static_bytes = wgsl_spec(&self.problem, &cfg, Variant::WgslLiteral).static_bytes;
        let grid = cfg.grid(self.problem.width, self.problem.height);
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
