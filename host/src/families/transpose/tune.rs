//! Transpose: block, tile side, padding (floats per tile row).

use dynsmem_kernels::transpose::TransposeConfig;

use super::Transpose;
use crate::backend::BackendKind;
use crate::error::Result;
use crate::families::transpose::TransposeProblem;
use crate::family::space::Space;
use crate::tune::{Footprint, Param, Target};

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

    fn check(problem: &TransposeProblem, config: &TransposeConfig, target: &Target) -> Result<Footprint> {
        super::check(problem, config, target)
    }
}
