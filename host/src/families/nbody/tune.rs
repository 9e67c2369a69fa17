//! N-body: threads per block, bodies per shared-memory tile.

use dynsmem_kernels::nbody::NbodyConfig;

use super::Nbody;
use crate::error::Result;
use crate::families::nbody::NbodyProblem;
use crate::family::space::Space;
use crate::tune::{Footprint, Param, Target};

impl Space for Nbody {
    fn params(target: &Target, _: &NbodyProblem) -> Vec<Param> {
        if target.is_cpu {
            vec![Param::new("block", &[8, 16, 32, 64]), Param::new("tile", &[16, 32, 64, 128])]
        } else {
            vec![Param::new("block", &[64, 128, 256, 512, 1024]), Param::new("tile", &[64, 128, 256, 512, 1024, 2048])]
        }
    }

    fn config_of(point: &[u32]) -> NbodyConfig {
        NbodyConfig { block: point[0], tile: point[1] }
    }

    fn check(problem: &NbodyProblem, config: &NbodyConfig, target: &Target) -> Result<Footprint> {
        super::check(problem, config, target)
    }
}
