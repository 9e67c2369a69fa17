//! Scan: block, items per thread (a multiple of 4: the kernel moves whole 16-byte vectors).

use dynsmem_kernels::scan::ScanConfig;

use super::Scan;
use crate::backend::BackendKind;
use crate::error::Result;
use crate::families::scan::ScanProblem;
use crate::family::space::Space;
use crate::tune::{Footprint, Param, Target};

impl Space for Scan {
    fn params(target: &Target, _: &ScanProblem) -> Vec<Param> {
        if target.backend == BackendKind::Cpu {
            vec![Param::new("block", &[4, 8, 16, 32, 64]), Param::new("ipt", &[4, 8, 16, 32])]
        } else {
            vec![Param::new("block", &[64, 128, 256, 512, 1024]), Param::new("ipt", &[4, 8, 12, 16, 24, 32, 48, 64])]
        }
    }

    fn config_of(point: &[u32]) -> ScanConfig {
        ScanConfig { block: point[0], items_per_thread: point[1] }
    }

    fn check(problem: &ScanProblem, config: &ScanConfig, target: &Target) -> Result<Footprint> {
        super::check(problem, config, target)
    }
}
