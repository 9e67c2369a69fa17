//! Attention's search space: the kernel (`simt` 0 = wgmma, 1 = SIMT), the query rows per
//! block `bq`, the keys per K/V tile `bk` (SIMT; wgmma's is compiled in), the ring's
//! `stages` and `pingpong` (wgmma, two math warpgroups), every one a launch-time value of one
//! compiled image except the kernel.

use std::sync::Arc;

use dynsmem_kernels::attention::{AttentionConfig, AttentionKind};

use super::{AttentionProblem, HostInputs, prepare, validate};
use crate::backend::Variant;
use crate::contract::{FamilyBackend, Workload, layout_reason};
use crate::error::Result;
use crate::tune::tunable::SeedInputs;
use crate::tune::{Footprint, Param, Target, Tunable};

pub struct AttentionTunable {
    problem: AttentionProblem,
    /// The inputs of the last seed, made once for every config.
    inputs: SeedInputs<HostInputs>,
}

impl AttentionTunable {
    pub fn new(problem: AttentionProblem) -> AttentionTunable {
        AttentionTunable { problem, inputs: SeedInputs::default() }
    }

    fn inputs(&self, seed: u64) -> Arc<HostInputs> {
        self.inputs.get(seed, || HostInputs::new(&self.problem, seed))
    }
}

impl crate::family::space::ForProblem for AttentionTunable {
    fn for_problem(problem: AttentionProblem) -> AttentionTunable {
        AttentionTunable::new(problem)
    }
}

impl Tunable for AttentionTunable {
    type Problem = AttentionProblem;
    type Config = AttentionConfig;

    fn family(&self) -> &'static str {
        "attention"
    }

    fn problem(&self) -> &AttentionProblem {
        &self.problem
    }

    /// On a CPU target the SIMT kernel only, at block sizes an OS thread per kernel thread
    /// affords.
    fn params(&self, target: &Target) -> Vec<Param> {
        if target.is_cpu {
            return vec![
                Param::new("simt", &[1]),
                Param::new("bq", &[1, 5, 16, 32]),
                Param::new("bk", &[1, 7, 16, 64]),
                Param::new("stages", &[1]),
                Param::new("pingpong", &[0]),
            ];
        }
        vec![
            Param::new("simt", &[0, 1]),
            Param::new("bq", &[32, 64, 128]),
            Param::new("bk", &[32, 64, 128]),
            Param::new("stages", &[1, 2, 3, 4, 5, 6]),
            Param::new("pingpong", &[0, 1]),
        ]
    }

    fn config(&self, point: &[u32]) -> AttentionConfig {
        let kind = if point[0] == 1 { AttentionKind::Simt } else { AttentionKind::Wgmma };
        AttentionConfig { kind, bq: point[1], bk: point[2], stages: point[3], pingpong: point[4] == 1 }
    }

    fn check(&self, point: &[u32], target: &Target) -> std::result::Result<Footprint, String> {
        if target.variant != Variant::LaunchSized {
            return Err("the launch-sized Rust kernel is the only form".into());
        }
        let cfg = self.config(point);
        validate(&self.problem, &cfg, false).map_err(|(kernel, reason)| format!("{kernel}: {reason}"))?;
        let launch_bytes = cfg.shared_bytes(self.problem.d).map_err(layout_reason)?;
        let grid = cfg.grid(self.problem.seq, self.problem.bh() as u32);
        Ok(Footprint { threads: cfg.threads(), grid: grid.min(u32::MAX as u64) as u32, launch_bytes, static_bytes: 0 })
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::BackendKind;
    use crate::families::attention::Half;

    #[test]
    fn the_space_keeps_rings_past_48_kb_and_filters_each_kind_s_other_shapes() {
        let p = AttentionProblem { batch: 8, heads: 16, seq: 4096, d: 128, dtype: Half::F16, causal: false };
        let t = AttentionTunable::new(p);
        let target = Target {
            backend: BackendKind::Cuda,
            variant: Variant::LaunchSized,
            limits: crate::tune::cache::tests::limits(),
            is_cpu: false,
        };
        let fp = t.check(&[0, 128, 128, 2, 1], &target).expect("the wgmma default fits");
        assert_eq!((fp.threads, fp.launch_bytes), (384, 32768 + 4 * 32768 + 9 * 8));
        assert!(fp.launch_bytes > 48 * 1024);
        let refused = t.check(&[0, 128, 64, 2, 1], &target).unwrap_err();
        assert!(refused.contains("attention_wgmma") && refused.contains("bk 128"), "{refused}");
        let alone = t.check(&[0, 64, 128, 2, 1], &target).unwrap_err();
        assert!(alone.contains("pingpong only with two math warpgroups"), "{alone}");
        assert!(t.check(&[0, 64, 128, 2, 0], &target).is_ok());
        assert!(t.check(&[1, 64, 32, 2, 0], &target).is_err(), "SIMT has no ring");
        assert!(t.check(&[1, 64, 32, 1, 1], &target).is_err(), "SIMT has no ping-pong");
        assert_eq!(t.check(&[1, 64, 32, 1, 0], &target).unwrap().threads, 64);
    }
}
