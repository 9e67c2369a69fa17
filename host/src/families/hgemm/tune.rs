//! HGEMM's search space: the kernel (`mma` 0 = wgmma, 1 = mma.sync), the block rows `bm`
//! and tile columns `bn`, the ring's stages, the tile order's `group_m`, the cluster size, the
//! schedule (`pingpong`, `streamk`), the k-tile groups in flight (`depth`) and the epilogue
//! (`tma_store`: whole tiles through shared memory by tensor-map stores, through
//! `stage_buffers` buffers per math warpgroup), every one a launch-time
//! value of one compiled image except `bn` and the cluster size of wgmma (one entry per
//! value) and the instruction. The cost model ([`super::cost`]) ranks the space for tuning
//! on first use. Points past the 48 KB default are ordinary points: the shared-memory
//! limit filtered is the opt-in one. CUDA only: elsewhere the space is empty of runnable
//! points (prepare refuses them).

use std::sync::Arc;

use dynsmem_kernels::hgemm::{HgemmConfig, MAX_STAGE_BUFFERS, MIN_STAGE_BUFFERS, MmaKind};

use super::{HgemmProblem, HostInputs, launch_grid, prepare, validate};
use crate::backend::Variant;
use crate::contract::{FamilyBackend, Workload, layout_reason};
use crate::error::Result;
use crate::tune::space::SearchSpace;
use crate::tune::tunable::SeedInputs;
use crate::tune::{Footprint, Param, Target, Tunable};

pub struct HgemmTunable {
    problem: HgemmProblem,
    /// The inputs of the last seed, made once for every config.
    inputs: SeedInputs<HostInputs>,
}

impl HgemmTunable {
    pub fn new(problem: HgemmProblem) -> HgemmTunable {
        HgemmTunable { problem, inputs: SeedInputs::default() }
    }

    fn inputs(&self, seed: u64) -> Arc<HostInputs> {
        self.inputs.get(seed, || HostInputs::new(&self.problem, seed))
    }
}

impl crate::family::space::ForProblem for HgemmTunable {
    fn for_problem(problem: HgemmProblem) -> HgemmTunable {
        HgemmTunable::new(problem)
    }
}

impl Tunable for HgemmTunable {
    type Problem = HgemmProblem;
    type Config = HgemmConfig;

    fn family(&self) -> &'static str {
        "hgemm"
    }

    fn problem(&self) -> &HgemmProblem {
        &self.problem
    }

    fn params(&self, _target: &Target) -> Vec<Param> {
        vec![
            Param::new("mma", &[0, 1]),
            Param::new("bm", &[64, 128]),
            Param::new("bn", &dynsmem_kernels::hgemm::WGMMA_BN),
            Param::new("stages", &[2, 3, 4, 5, 6]),
            Param::new("group_m", &[1, 4, 8, 16]),
            Param::new("cluster", &[1, 2]).absent_as(1),
            Param::new("pingpong", &[0, 1]).absent_as(0),
            Param::new("depth", &[1, 2]).absent_as(1),
            Param::new("streamk", &[0, 1]).absent_as(0),
            Param::new("tma_store", &[0, 1]).absent_as(0),
            Param::new("stage_buffers", &[MIN_STAGE_BUFFERS, 3, MAX_STAGE_BUFFERS]).absent_as(MIN_STAGE_BUFFERS),
        ]
    }

    fn config(&self, point: &[u32]) -> HgemmConfig {
        let kind = if point[0] == 1 { MmaKind::Mma } else { MmaKind::Wgmma };
        let cluster = point.get(5).copied().unwrap_or(1);
        let pingpong = point.get(6).is_some_and(|&p| p == 1);
        let depth = point.get(7).copied().unwrap_or(1);
        let streamk = point.get(8).is_some_and(|&p| p == 1);
        let tma_store = point.get(9).is_some_and(|&p| p == 1);
        let stage_buffers = point.get(10).copied().unwrap_or(MIN_STAGE_BUFFERS);
        HgemmConfig {
            kind,
            bm: point[1],
            bn: point[2],
            stages: point[3],
            group_m: point[4],
            cluster,
            pingpong,
            depth,
            streamk,
            tma_store,
            stage_buffers,
        }
    }

    fn check(&self, point: &[u32], target: &Target) -> std::result::Result<Footprint, String> {
        if target.variant != Variant::LaunchSized {
            return Err("the launch-sized Rust kernel is the only form".into());
        }
        let cfg = self.config(point);
        validate(&self.problem, &cfg, false).map_err(|(kernel, reason)| format!("{kernel}: {reason}"))?;
        let launch_bytes = cfg.shared_bytes().map_err(layout_reason)?;
        let sms = target.limits.multiprocessors.unwrap_or(1);
        let grid = launch_grid(&cfg, self.problem.m, self.problem.n, self.problem.k, sms);
        Ok(Footprint { threads: cfg.threads(), grid: grid as u32, launch_bytes, static_bytes: 0 })
    }

    fn prepare<'b, B: FamilyBackend>(
        &self,
        backend: &'b B,
        variant: Variant,
        point: &[u32],
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        let inputs = || self.inputs(seed);
        Ok(Box::new(prepare(backend, self.problem, self.config(point), false, variant, inputs)?))
    }

    fn candidates(&self, space: &SearchSpace, limit: usize) -> Option<Vec<usize>> {
        let configs: Vec<HgemmConfig> = space.points.iter().map(|p| self.config(p)).collect();
        Some(super::cost::ranked_by_shape(&self.problem, &configs, &space.target.limits, limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::BackendKind;
    use crate::families::hgemm::{Half, OutType};

    #[test]
    fn the_space_keeps_configs_past_48_kb_and_filters_the_mma_kernels_other_columns() {
        let t = HgemmTunable::new(HgemmProblem { m: 4096, n: 4096, k: 4096, dtype: Half::F16, out: OutType::F32 });
        let target = Target {
            backend: BackendKind::Cuda,
            variant: Variant::LaunchSized,
            limits: crate::tune::cache::tests::limits(),
            is_cpu: false,
        };
        let fp = t.check(&[0, 128, 256, 4, 8, 2, 0, 1, 0], &target).expect("the cooperative wgmma tile fits");
        assert_eq!((fp.threads, fp.launch_bytes), (384, 4 * 384 * 128 + 64));
        assert!(fp.launch_bytes > 48 * 1024);
        let pp = t.check(&[0, 128, 256, 5, 8, 2, 1, 1, 0], &target).expect("ping-pong 64 x 256 fits 5 stages");
        assert_eq!(pp.launch_bytes, 5 * 320 * 128 + 80 + 16, "the ring, its barriers and the two turn barriers");
        assert!(t.check(&[0, 64, 256, 5, 8, 2, 1, 1, 0], &target).is_err(), "ping-pong needs two warpgroups");
        let refused = t.check(&[1, 128, 256, 4, 8, 1, 0, 1, 0], &target).unwrap_err();
        assert!(refused.contains("hgemm_mma") && refused.contains("bn"), "{refused}");
        let mma = t.check(&[1, 128, 128, 4, 8, 1, 0, 1, 0], &target).expect("mma 128 x 128 fits");
        assert!(t.check(&[1, 128, 128, 4, 8, 2, 0, 1, 0], &target).is_err(), "mma has no clusters");
        assert!(t.check(&[0, 128, 256, 3, 8, 2, 1, 2, 0], &target).is_ok(), "two groups in flight with 3 stages");
        assert!(t.check(&[0, 128, 256, 2, 8, 2, 0, 2, 0], &target).is_err(), "two groups in flight need 3 stages");
        assert_eq!((mma.threads, mma.launch_bytes), (256, 4 * (128 + 128) * 64));
        let sk = t.check(&[0, 128, 256, 4, 8, 2, 0, 1, 1], &target).expect("stream-K on the cooperative tile");
        assert_eq!(sk.launch_bytes, fp.launch_bytes, "stream-K's workspace is device memory");
        assert!(t.check(&[0, 128, 256, 5, 8, 2, 1, 1, 1], &target).is_err(), "stream-K is cooperative only");
    }
}
