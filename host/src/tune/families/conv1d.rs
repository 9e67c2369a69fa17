//! Conv1d: block, outputs per thread (a const generic: only the instantiations in the
//! image, [`OUTPUTS_PER_THREAD`], are candidates).

use dynsmem_kernels::conv1d::{Conv1dConfig, OUTPUTS_PER_THREAD};

use super::layout_reason;
use crate::backend::BackendKind;
use crate::error::Result;
use crate::kernels::conv1d::{Conv1dProblem, prepare, wgsl_spec};
use crate::kernels::{Variant, Workload};
use crate::tune::{Footprint, Param, Target, Tunable, TuneBackend};

pub struct Conv1dTunable {
    problem: Conv1dProblem,
}

impl Conv1dTunable {
    pub fn new(problem: Conv1dProblem) -> Conv1dTunable {
        Conv1dTunable { problem }
    }
}

impl Tunable for Conv1dTunable {
    type Problem = Conv1dProblem;
    type Config = Conv1dConfig;

    fn config(&self, point: &[u32]) -> Conv1dConfig {
        Conv1dConfig { block: point[0], outputs_per_thread: point[1] }
    }

    fn family(&self) -> &'static str {
        "conv1d"
    }

    fn problem(&self) -> &Conv1dProblem {
        &self.problem
    }

    fn params(&self, target: &Target) -> Vec<Param> {
        let blocks: &[u32] =
            if target.backend == BackendKind::Cpu { &[4, 8, 16, 32, 64] } else { &[32, 64, 128, 256, 512, 1024] };
        vec![Param::new("block", blocks), Param::new("outputs_per_thread", &OUTPUTS_PER_THREAD)]
    }

    fn check(&self, point: &[u32], _: &Target) -> std::result::Result<Footprint, String> {
        let cfg = self.config(point);
        if !OUTPUTS_PER_THREAD.contains(&cfg.outputs_per_thread) {
            return Err(format!("outputs per thread not in the image (one of {OUTPUTS_PER_THREAD:?})"));
        }
        if !cfg.fits() {
            return Err("block must be at least 1 and outputs per thread a multiple of 4".into());
        }
        let launch_bytes = cfg.shared_bytes(self.problem.taps).map_err(layout_reason)?;
        let static_bytes = wgsl_spec(&self.problem, &cfg, Variant::WgslLiteral).static_bytes;
        Ok(Footprint { threads: cfg.block, grid: cfg.grid(self.problem.n), launch_bytes, static_bytes })
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
