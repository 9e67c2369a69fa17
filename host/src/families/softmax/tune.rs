//! Softmax: threads per row.

use dynsmem_kernels::softmax::SoftmaxConfig;

use super::Softmax;
use crate::contract::layout_reason;
use crate::families::softmax::{SoftmaxProblem, wgsl_static_bytes};
use crate::family::space::Space;
use crate::tune::{Footprint, Param, Target};

impl Space for Softmax {
    fn params(target: &Target, _: &SoftmaxProblem) -> Vec<Param> {
        if target.is_cpu {
            vec![Param::new("block", &[4, 8, 16, 32])]
        } else {
            vec![Param::new("block", &[32, 64, 128, 256, 512, 1024])]
        }
    }

    fn config_of(point: &[u32]) -> SoftmaxConfig {
        SoftmaxConfig { block: point[0] }
    }

    fn check(problem: &SoftmaxProblem, config: &SoftmaxConfig, _: &Target) -> std::result::Result<Footprint, String> {
        let cfg = *config;
        if cfg.block == 0 {
            return Err("block must be at least 1 thread".into());
        }
        let launch_bytes = cfg.shared_bytes(problem.cols).map_err(layout_reason)?;
        let static_bytes = wgsl_static_bytes(problem, &cfg);
        Ok(Footprint { threads: cfg.block, grid: cfg.grid(problem.rows), launch_bytes, static_bytes })
    }
}
