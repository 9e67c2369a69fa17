//! Stencil2d: block, tile width, tile height (the radius is the problem's, given at launch).

use dynsmem_kernels::stencil2d::Stencil2dConfig;

use super::Stencil2d;
use crate::backend::BackendKind;
use crate::error::Result;
use crate::families::stencil2d::Stencil2dProblem;
use crate::family::space::Space;
use crate::tune::{Footprint, Param, Target};

impl Space for Stencil2d {
    fn params(target: &Target, _: &Stencil2dProblem) -> Vec<Param> {
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

    fn config_of(point: &[u32]) -> Stencil2dConfig {
        Stencil2dConfig { block: point[0], tile_w: point[1], tile_h: point[2] }
    }

    fn check(problem: &Stencil2dProblem, config: &Stencil2dConfig, target: &Target) -> Result<Footprint> {
        super::check(problem, config, target)
    }
}
