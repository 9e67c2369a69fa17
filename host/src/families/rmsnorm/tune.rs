//! RMSNorm: threads per row.

use dynsmem_kernels::rmsnorm::RmsnormConfig;

use super::Rmsnorm;
use crate::contract::layout_reason;
use crate::families::rmsnorm::{RmsnormProblem, wgsl_static_bytes};
use crate::family::space::Space;
use crate::tune::{Footprint, Param, Target};

impl Space for Rmsnorm {
    fn params(target: &Target, _: &RmsnormProblem) -> Vec<Param> {
        if target.is_cpu {
            vec![Param::new("block", &[4, 8, 16, 32])]
        } else {
            vec![Param::new("block", &[32, 64, 128, 256, 512, 1024])]
        }
    }

    fn config_of(point: &[u32]) -> RmsnormConfig {
        RmsnormConfig { block: point[0] }
    }

    fn check(problem: &RmsnormProblem, config: &RmsnormConfig, _: &Target) -> std::result::Result<Footprint, String> {
        let cfg = *config;
        if cfg.block == 0 {
            return Err("block must be at least 1 thread".into());
        }
        let launch_bytes = cfg.shared_bytes(problem.cols).map_err(layout_reason)?;
        let static_bytes = wgsl_static_bytes(problem, &cfg);
        Ok(Footprint { threads: cfg.block, grid: cfg.grid(problem.rows), launch_bytes, static_bytes })
    }
}
