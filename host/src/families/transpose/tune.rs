//! Transpose: block, tile side, padding (floats per tile row).

use dynsmem_kernels::transpose::TransposeConfig;

use super::Transpose;
use crate::backend::BackendKind;
use crate::families::Variant;
use crate::families::layout_reason;
use crate::families::transpose::{TransposeProblem, wgsl_spec};
use crate::tune::{Footprint, Param, Space, Target};

impl Space for Transpose {
    fn params(target: &Target, _: &TransposeProblem) -> Vec<Param> {
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

    fn config_of(point: &[u32]) -> TransposeConfig {
        TransposeConfig { block: point[0], tile: point[1], pad: point[2] }
    }

    fn check(
        problem: &TransposeProblem,
        config: &TransposeConfig,
        _: &Target,
    ) -> std::result::Result<Footprint, String> {
        let cfg = *config;
        // The entry point's contract (`dynsmem_kernels::transpose`): the block's threads
        // cover whole tile rows.
        if cfg.tile == 0 || cfg.block < cfg.tile || !cfg.block.is_multiple_of(cfg.tile) {
            return Err(format!("block ({}) must be a positive multiple of tile ({})", cfg.block, cfg.tile));
        }
        let launch_bytes = cfg.shared_bytes().map_err(layout_reason)?;
        let static_bytes = wgsl_spec(&cfg, Variant::WgslLiteral).static_bytes;
        let grid = cfg.grid(problem.rows, problem.cols);
        Ok(Footprint { threads: cfg.block, grid, launch_bytes, static_bytes })
    }
}
