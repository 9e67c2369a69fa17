//! Stencil2d: block, tile width, tile height (the radius is the problem's: a const
//! generic of the image, one of [`RADII`]).

use dynsmem_kernels::stencil2d::{RADII, Stencil2dConfig};

use super::Stencil2d;
use crate::backend::BackendKind;
use crate::backend::Variant;
use crate::contract::layout_reason;
use crate::families::stencil2d::{Stencil2dProblem, wgsl_spec};
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

    fn check(
        problem: &Stencil2dProblem,
        config: &Stencil2dConfig,
        _: &Target,
    ) -> std::result::Result<Footprint, String> {
        let cfg = *config;
        if !RADII.contains(&problem.radius) {
            return Err(format!("radius {} is not in the image (one of {RADII:?})", problem.radius));
        }
        if !cfg.fits() {
            return Err("the threads must divide the tile: tile_w a multiple of 4, block a multiple of tile_w / 4, \
                 tile_h a multiple of block / (tile_w / 4)"
                .into());
        }
        let launch_bytes = cfg.shared_bytes(problem.radius).map_err(layout_reason)?;
        let static_bytes = wgsl_spec(problem, &cfg, Variant::WgslLiteral).static_bytes;
        let grid = cfg.grid(problem.width, problem.height);
        Ok(Footprint { threads: cfg.block, grid, launch_bytes, static_bytes })
    }
}
