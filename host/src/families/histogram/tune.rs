//! Histogram: block, private copies of the bins per block, grid (in whole waves of the
//! device's multiprocessors where it reports them). Clusters and held bins are configs
//! (`--cluster`, `--held`), not searched: the split over a cluster ran slower than holding
//! what fits (`NOTES.md`).

use dynsmem_kernels::histogram::HistogramConfig;

use super::Histogram;
use crate::backend::BackendKind;
use crate::error::Result;
use crate::families::histogram::HistogramProblem;
use crate::family::space::Space;
use crate::tune::{Footprint, Param, Target};

impl Space for Histogram {
    fn params(target: &Target, _: &HistogramProblem) -> Vec<Param> {
        if target.backend == BackendKind::Cpu {
            // Few blocks there: every kernel thread is an OS thread.
            return vec![
                Param::new("block", &[8, 16, 32, 64]),
                Param::new("copies", &[1, 2, 4]),
                Param::new("grid", &[1, 2, 4, 8]),
            ];
        }
        let grids: Vec<u32> = match target.limits.multiprocessors {
            Some(m) => [1, 2, 4, 8, 16].iter().map(|w| w * m).collect(),
            None => vec![64, 128, 256, 512, 1024, 2048],
        };
        vec![
            Param::new("block", &[128, 256, 512, 1024]),
            Param::new("copies", &[1, 2, 4, 8, 16]),
            Param { name: "grid", values: grids, absent: None },
        ]
    }

    fn config_of(point: &[u32]) -> HistogramConfig {
        HistogramConfig {
            block: point[0],
            copies: point[1],
            grid: point[2],
            cluster: point.get(3).copied().unwrap_or(1),
            held: 0,
            bits: 32,
            merge: false,
        }
    }

    fn check(problem: &HistogramProblem, config: &HistogramConfig, target: &Target) -> Result<Footprint> {
        super::check(problem, config, target)
    }
}
