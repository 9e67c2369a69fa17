//! Scan: block, items per thread (a multiple of 4: the kernel moves whole 16-byte vectors).

use dynsmem_kernels::scan::ScanConfig;

use super::Scan;
use crate::backend::BackendKind;
use crate::backend::Variant;
use crate::contract::layout_reason;
use crate::families::scan::{ScanProblem, wgsl_spec};
use crate::family::space::Space;
use crate::tune::{Footprint, Param, Target};

/// Most workgroups the WGSL form dispatches (it loops over the tiles past it).
const WGSL_MAX_GRID: u64 = 65_535;

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

    fn check(problem: &ScanProblem, config: &ScanConfig, target: &Target) -> std::result::Result<Footprint, String> {
        let cfg = *config;
        if !cfg.fits() {
            return Err("items per thread must be a positive multiple of 4 (whole 16-byte vectors)".into());
        }
        let launch_bytes = cfg.shared_bytes().map_err(layout_reason)?;
        let static_bytes = wgsl_spec(problem.dtype, &cfg, Variant::WgslLiteral, "tile_sums").static_bytes;
        let tiles = cfg.tiles(problem.n);
        // One block per tile with decoupled look-back; the WGSL passes loop past 65535.
        let grid = if target.variant == Variant::LaunchSized { tiles } else { tiles.min(WGSL_MAX_GRID) };
        Ok(Footprint { threads: cfg.block, grid: grid.min(u32::MAX as u64) as u32, launch_bytes, static_bytes })
    }
}
