//! Scan: block, items per thread (a multiple of 4: the kernel moves whole 16-byte vectors).

use dynsmem_kernels::Dtype;
use dynsmem_kernels::scan::ScanConfig;

use super::layout_reason;
use crate::backend::BackendKind;
use crate::error::Result;
use crate::kernels::scan::{ScanProblem, prepare, wgsl_spec};
use crate::kernels::{Variant, Workload};
use crate::tune::{Footprint, Param, Target, Tunable, TuneBackend};

/// Most workgroups the WGSL form dispatches (it loops over the tiles past it).
const WGSL_MAX_GRID: u64 = 65_535;

pub struct ScanTunable {
    problem: ScanProblem,
}

impl ScanTunable {
    pub fn new(problem: ScanProblem) -> ScanTunable {
        ScanTunable { problem }
    }
}

impl Tunable for ScanTunable {
    type Problem = ScanProblem;
    type Config = ScanConfig;

    fn config(&self, point: &[u32]) -> ScanConfig {
        ScanConfig { block: point[0], items_per_thread: point[1] }
    }

    fn family(&self) -> &'static str {
        "scan"
    }

    fn problem(&self) -> &ScanProblem {
        &self.problem
    }

    fn params(&self, target: &Target) -> Vec<Param> {
        if target.backend == BackendKind::Cpu {
            vec![Param::new("block", &[4, 8, 16, 32, 64]), Param::new("ipt", &[4, 8, 16, 32])]
        } else {
            vec![Param::new("block", &[64, 128, 256, 512, 1024]), Param::new("ipt", &[4, 8, 12, 16, 24, 32, 48, 64])]
        }
    }

    fn check(&self, point: &[u32], target: &Target) -> std::result::Result<Footprint, String> {
        let cfg = self.config(point);
        if !cfg.fits() {
            return Err("items per thread must be a positive multiple of 4 (whole 16-byte vectors)".into());
        }
        let launch_bytes = cfg.shared_bytes().map_err(layout_reason)?;
        let static_bytes = wgsl_spec(self.problem.dtype, &cfg, Variant::WgslLiteral, "tile_sums").static_bytes;
        let tiles = cfg.tiles(self.problem.n);
        // One block per tile with decoupled look-back; the WGSL passes loop past 65535.
        let grid = if target.variant == Variant::LaunchSized { tiles } else { tiles.min(WGSL_MAX_GRID) };
        Ok(Footprint { threads: cfg.block, grid: grid.min(u32::MAX as u64) as u32, launch_bytes, static_bytes })
    }

    fn prepare<'b, B: TuneBackend>(
        &self,
        backend: &'b B,
        variant: Variant,
        point: &[u32],
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        let cfg = self.config(point);
        Ok(match self.problem.dtype {
            Dtype::F32 => Box::new(prepare::<B, f32>(backend, self.problem, cfg, variant, seed)?),
            Dtype::U32 => Box::new(prepare::<B, u32>(backend, self.problem, cfg, variant, seed)?),
        })
    }
}
