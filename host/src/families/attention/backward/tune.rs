//! Attention backward's search space: the query rows per tile `bq` (the dQ kernel's threads,
//! the dK/dV kernel's staged query tile) and the key rows per tile `bk` (the dK/dV kernel's
//! threads, the dQ kernel's staged K/V tile), both launch-time values of one compiled image.

use dynsmem_kernels::attention_backward::{AttentionBwdConfig, DELTA_THREADS};

use super::{AttentionProblem, HostInputs, prepare, validate};
use crate::backend::Variant;
use crate::contract::{FamilyBackend, Workload, layout_reason};
use crate::error::Result;
use crate::tune::tunable::SeedInputs;
use crate::tune::{Footprint, Param, Target, Tunable};

pub struct AttentionBwdTunable {
    problem: AttentionProblem,
    /// The inputs of the last seed (with the forward's outputs and the reference, once the
    /// first config has made them), shared by every config.
    inputs: SeedInputs<HostInputs>,
}

impl AttentionBwdTunable {
    pub fn new(problem: AttentionProblem) -> AttentionBwdTunable {
        AttentionBwdTunable { problem, inputs: SeedInputs::default() }
    }
}

impl crate::family::space::ForProblem for AttentionBwdTunable {
    fn for_problem(problem: AttentionProblem) -> AttentionBwdTunable {
        AttentionBwdTunable::new(problem)
    }
}

impl Tunable for AttentionBwdTunable {
    type Problem = AttentionProblem;
    type Config = AttentionBwdConfig;

    fn family(&self) -> &'static str {
        "attention-backward"
    }

    fn problem(&self) -> &AttentionProblem {
        &self.problem
    }

    /// On a CPU target, block sizes an OS thread per kernel thread affords.
    fn params(&self, target: &Target) -> Vec<Param> {
        if target.is_cpu {
            return vec![Param::new("bq", &[1, 5, 16]), Param::new("bk", &[1, 7, 16])];
        }
        vec![Param::new("bq", &[16, 32, 64, 128]), Param::new("bk", &[16, 32, 64, 128])]
    }

    fn config(&self, point: &[u32]) -> AttentionBwdConfig {
        AttentionBwdConfig::new(point[0], point[1])
    }

    /// The larger of the two gradient kernels' threads, blocks and launch-sized bytes (the
    /// pre-pass's 128 threads and no bytes fit wherever they do).
    fn check(&self, point: &[u32], target: &Target) -> std::result::Result<Footprint, String> {
        if target.variant != Variant::LaunchSized {
            return Err("the launch-sized Rust kernel is the only form".into());
        }
        let cfg = self.config(point);
        let p = &self.problem;
        validate(p, &cfg).map_err(|(kernel, reason)| format!("{kernel}: {reason}"))?;
        let bytes = cfg.dkdv_bytes(p.d).map_err(layout_reason)?.max(cfg.dq_bytes(p.d).map_err(layout_reason)?);
        let grid = cfg.dkdv_grid(p.seq, p.bh() as u32).max(cfg.dq_grid(p.seq, p.bh() as u32));
        Ok(Footprint {
            threads: cfg.bq.max(cfg.bk).max(DELTA_THREADS),
            grid: grid.min(u32::MAX as u64) as u32,
            launch_bytes: bytes,
            static_bytes: 0,
        })
    }

    fn prepare<'b, B: FamilyBackend>(
        &self,
        backend: &'b B,
        variant: Variant,
        point: &[u32],
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        let inputs = || self.inputs.get(seed, || HostInputs::new(&self.problem, seed));
        Ok(Box::new(prepare(backend, self.problem, self.config(point), variant, inputs)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::BackendKind;
    use crate::families::attention::Half;

    #[test]
    fn the_space_takes_the_larger_kernel_s_bytes_and_refuses_tiles_past_256() {
        let p = AttentionProblem { batch: 4, heads: 16, seq: 4096, d: 128, dtype: Half::F16, causal: false };
        let t = AttentionBwdTunable::new(p);
        let target = Target {
            backend: BackendKind::Cuda,
            variant: Variant::LaunchSized,
            limits: crate::tune::cache::tests::limits(),
            is_cpu: false,
        };
        let fp = t.check(&[16, 32], &target).expect("fits");
        assert_eq!(fp.launch_bytes, (2 * 16 * 128 + 2 * 16 + 4 * 128 * 32) * 4);
        assert_eq!((fp.threads, fp.grid), (128, 4096 / 16 * 64));
        let refused = t.check(&[16, 300], &target).unwrap_err();
        assert!(refused.contains("bk 1 to 256"), "{refused}");
    }
}
