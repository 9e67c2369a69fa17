//! Histogram: block, private copies of the bins per block, grid (in whole waves of the
//! device's multiprocessors where it reports them).

use dynsmem_kernels::histogram::HistogramConfig;

use super::layout_reason;
use crate::backend::BackendKind;
use crate::error::Result;
use crate::kernels::histogram::{HistogramProblem, prepare, wgsl_spec};
use crate::kernels::{Variant, Workload};
use crate::tune::{Footprint, Param, Target, Tunable, TuneBackend};

pub struct HistogramTunable {
    problem: HistogramProblem,
}

impl HistogramTunable {
    pub fn new(problem: HistogramProblem) -> HistogramTunable {
        HistogramTunable { problem }
    }
}

impl Tunable for HistogramTunable {
    type Problem = HistogramProblem;
    type Config = HistogramConfig;

    fn config(&self, point: &[u32]) -> HistogramConfig {
        HistogramConfig { block: point[0], copies: point[1], grid: point[2] }
    }

    fn family(&self) -> &'static str {
        "histogram"
    }

    fn problem(&self) -> &HistogramProblem {
        &self.problem
    }

    fn params(&self, target: &Target) -> Vec<Param> {
        if target.backend == BackendKind::Cpu {
            // Workgroups run one after another there: few blocks.
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
            Param { name: "grid", values: grids },
        ]
    }

    fn check(&self, point: &[u32], _: &Target) -> std::result::Result<Footprint, String> {
        let cfg = self.config(point);
        if cfg.block == 0 || cfg.copies == 0 || cfg.grid == 0 {
            return Err("block, copies and grid must be at least 1".into());
        }
        let launch_bytes = cfg.shared_bytes(self.problem.bins).map_err(layout_reason)?;
        let static_bytes = wgsl_spec(&self.problem, &cfg, Variant::WgslLiteral).static_bytes;
        Ok(Footprint { threads: cfg.block, grid: cfg.grid, launch_bytes, static_bytes })
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
