//! Conv1d: block, outputs per thread (a const generic: only the instantiations in the
//! image, [`OUTPUTS_PER_THREAD`], are candidates).

use dynsmem_kernels::conv1d::{Conv1dConfig, OUTPUTS_PER_THREAD};

use super::Conv1d;
use crate::backend::BackendKind;
use crate::backend::Variant;
use crate::contract::layout_reason;
use crate::families::conv1d::{Conv1dProblem, wgsl_spec};
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

    fn check(problem: &Conv1dProblem, config: &Conv1dConfig, _: &Target) -> std::result::Result<Footprint, String> {
        let cfg = *config;
        if !OUTPUTS_PER_THREAD.contains(&cfg.outputs_per_thread) {
            return Err(format!("outputs per thread not in the image (one of {OUTPUTS_PER_THREAD:?})"));
        }
        if !cfg.fits() {
            return Err("block must be at least 1 and outputs per thread a multiple of 4".into());
        }
        let launch_bytes = cfg.shared_bytes(problem.taps).map_err(layout_reason)?;
        let static_bytes = wgsl_spec(problem, &cfg, Variant::WgslLiteral).static_bytes;
        Ok(Footprint { threads: cfg.block, grid: cfg.grid(problem.n), launch_bytes, static_bytes })
    }
}
