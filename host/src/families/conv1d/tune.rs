//! Conv1d: block, outputs per thread (a const generic: only the instantiations in the
//! image, [`OUTPUTS_PER_THREAD`], are candidates).

use dynsmem_kernels::conv1d::{Conv1dConfig, OUTPUTS_PER_THREAD};

use super::Conv1d;
use crate::backend::BackendKind;
use crate::error::Result;
use crate::families::conv1d::Conv1dProblem;
use crate::family::space::Space;
use crate::tune::{Footprint, Param, Target};

impl Space for Conv1d {
    fn params(target: &Target, _: &Conv1dProblem) -> Vec<Param> {
        let blocks: &[u32] =
            if target.backend == BackendKind::Cpu { &[4, 8, 16, 32, 64] } else { &[32, 64, 128, 256, 512, 1024] };
        vec![Param::new("block", blocks), Param::new("outputs_per_thread", &OUTPUTS_PER_THREAD)]
    }

    fn config_of(point: &[u32]) -> Conv1dConfig {
        Conv1dConfig { block: point[0], outputs_per_thread: point[1] }
    }

    fn check(problem: &Conv1dProblem, config: &Conv1dConfig, target: &Target) -> Result<Footprint> {
        super::check(problem, config, target)
    }
}
