//! SGEMM / HGEMM: the block tile `bm x bn x bk` and the pipeline stages, all launch-time
//! values of one compiled image, and for f32 on CUDA the rows per thread `tm` (4, 8 or 16,
//! each compiled into its own entries), `tma` (0 or 1: the tensor-map kernel, whose own
//! rules filter most of its points before launch), `sk` and `splits` (split-K's blocks per
//! tile, where the tiles leave the GPU idle). Threads per block are `bm / tm * bn / 8`
//! (`bm * bn / 128` for the tensor-map kernel); the kernel's own register limit can refuse
//! a block the device would allow, which the runner records as that config's error. On
//! WGSL (f32 only) each point is a pipeline of its own, with 1 or 2 stages and the rules
//! of [`wgsl_check`]; its static bytes are checked against the adapter's limit.

use std::sync::Arc;

use dynsmem_kernels::sgemm::{SgemmConfig, THREAD_ROWS, THREAD_TILE};

use crate::backend::BackendKind;
use crate::backend::Variant;
use crate::contract::FamilyBackend;
use crate::contract::Workload;
use crate::error::Result;
use crate::families::sgemm::{HostInputs, SgemmProblem, check, prepare_with};
use crate::tune::tunable::SeedInputs;
use crate::tune::{Footprint, Param, SearchSpace, Target, Tunable};

/// Stream-K blocks per multiprocessor in the CUDA f32 space (0: one block per tile).
pub const SK: [u32; 5] = [0, 1, 2, 3, 4];
/// ... and in the CPU backend's (whose "multiprocessors" are its cores).
pub const SK_CPU: [u32; 4] = [0, 1, 2, 4];

/// The split-K values of the CUDA f32 space, where the problem has one ([`wants_split_k`]):
/// up to two blocks per multiprocessor of a 132-SM GPU for the single tile of a skinny,
/// deep problem.
pub const SPLIT_K: [u32; 16] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 132, 192, 264];

/// Whether a problem's space has a `splits` parameter: where 128 x 128 tiles give fewer than
/// four per multiprocessor and k is at least 256. Below four waves of big tiles, the last
/// partial wave costs up to half the time, and splits even the waves out; past it a tile size
/// fills the GPU, and the space stays as it was, so that the large problems' caches still
/// match it.
pub fn wants_split_k(problem: &SgemmProblem, sms: u64) -> bool {
    SgemmConfig::new(128, 128, 32, 1).grid(problem.m, problem.n) < 4 * sms && problem.k >= 256
}

pub struct SgemmTunable {
    problem: SgemmProblem,
    /// The `tm` values of the CUDA f32 space; a `tm` parameter exists only where there is
    /// more than one (sweeps recorded before it existed rebuild with `[8]`).
    thread_rows: &'static [u32],
    /// The inputs of the last seed, made once for every config.
    inputs: SeedInputs<HostInputs>,
}

impl SgemmTunable {
    pub fn new(problem: SgemmProblem) -> SgemmTunable {
        SgemmTunable::with_thread_rows(problem, &THREAD_ROWS)
    }

    /// A tunable whose CUDA f32 space takes `tm` from `thread_rows`.
    pub fn with_thread_rows(problem: SgemmProblem, thread_rows: &'static [u32]) -> SgemmTunable {
        SgemmTunable { problem, thread_rows, inputs: SeedInputs::default() }
    }

    fn inputs(&self, seed: u64) -> Arc<HostInputs> {
        self.inputs.get(seed, || HostInputs::new(&self.problem, seed))
    }
}

impl crate::family::space::ForProblem for SgemmTunable {
    fn for_problem(problem: SgemmProblem) -> SgemmTunable {
        SgemmTunable::new(problem)
    }
}

impl Tunable for SgemmTunable {
    type Problem = SgemmProblem;
    type Config = SgemmConfig;

    fn config(&self, point: &[u32]) -> SgemmConfig {
        // Spaces without a `tm` parameter (f16, the static forms, WGSL) run 8 rows per thread.
        let tm = point.get(4).copied().unwrap_or(THREAD_TILE);
        let config = SgemmConfig::new(point[0], point[1], point[2], point[3]).with_tm(tm);
        // `tma` (f32 on CUDA and the CPU backend, after `tm`): the tensor-map kernels at this
        // tile; their rules (bn, tm 8, bk, ...) filter the points that break them. `sk` (after
        // `tma`): stream-K blocks per multiprocessor, 0 for one block per tile. `splits` (CUDA,
        // after `sk`, where the problem has it: [`SPLIT_K`]).
        let sk = point.get(6).copied().unwrap_or(0);
        let splits = point.get(7).copied().unwrap_or(1);
        SgemmConfig { tma: point.get(5) == Some(&1), sk, ..config }.with_splits(splits)
    }

    fn family(&self) -> &'static str {
        "sgemm"
    }

    fn problem(&self) -> &SgemmProblem {
        &self.problem
    }

    fn params(&self, target: &Target) -> Vec<Param> {
        let f32_kernels = !self.problem.f16_inputs && self.thread_rows.len() > 1;
        if target.backend == BackendKind::Cpu {
            // Small blocks (a thread per GPU thread); the tensor-map kernels through the CPU
            // backend's tensor maps, at their narrowest tiles.
            let mut params = vec![
                Param::new("bm", &[8, 16, 32]),
                Param::new("bn", &[8, 16, 32, 64, 128]),
                Param::new("bk", &[4, 8, 16, 32]),
                Param::new("stages", &[1, 2, 3]),
            ];
            if f32_kernels && target.variant == Variant::LaunchSized {
                // Entries recorded before the CPU space had them ran 8 rows, no tensor maps.
                params.push(Param::new("tm", self.thread_rows).absent_as(THREAD_TILE));
                params.push(Param::new("tma", &[0, 1]).absent_as(0));
                params.push(Param::new("sk", &SK_CPU).absent_as(0));
            }
            params
        } else if target.variant != Variant::LaunchSized {
            // WGSL: 1 or 2 stages; a CPU adapter (lavapipe) runs a workgroup's invocations
            // on one core, so its list stops at 64 x 64 tiles.
            let tiles: &[u32] = if target.is_cpu { &[16, 32, 64] } else { &[32, 64, 128, 256] };
            let bk: &[u32] = if target.is_cpu { &[4, 8, 16] } else { &[8, 16, 32] };
            vec![Param::new("bm", tiles), Param::new("bn", tiles), Param::new("bk", bk), Param::new("stages", &[1, 2])]
        } else {
            let mut params = vec![
                Param::new("bm", &[32, 64, 128, 256]),
                Param::new("bn", &[32, 64, 128, 256]),
                Param::new("bk", &[8, 16, 32, 64]),
                Param::new("stages", &[1, 2, 3, 4]),
            ];
            if f32_kernels {
                params.push(Param::new("tm", self.thread_rows));
                if target.backend == BackendKind::Cuda {
                    params.push(Param::new("tma", &[0, 1]));
                    params.push(Param::new("sk", &SK).absent_as(0));
                    let sms = target.limits.multiprocessors.unwrap_or(132) as u64;
                    if wants_split_k(&self.problem, sms) {
                        params.push(Param::new("splits", &SPLIT_K).absent_as(1));
                    }
                }
            }
            params
        }
    }

    /// The family's one validation ([`check`]), as the space's filter reason.
    fn check(&self, point: &[u32], target: &Target) -> std::result::Result<Footprint, String> {
        check(&self.problem, &self.config(point), false, target).map_err(|e| e.to_string())
    }

    fn prepare<'b, B: FamilyBackend>(
        &self,
        backend: &'b B,
        variant: Variant,
        point: &[u32],
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        let inputs = || self.inputs(seed);
        Ok(Box::new(prepare_with(backend, self.problem, self.config(point), false, variant, inputs)?))
    }

    fn candidates(&self, space: &SearchSpace, limit: usize) -> Option<Vec<usize>> {
        let configs: Vec<(SgemmConfig, Footprint)> =
            space.points.iter().zip(&space.footprints).map(|(p, fp)| (self.config(p), *fp)).collect();
        Some(super::cost::ranked(&self.problem, &configs, &space.target.limits, limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cuda_target() -> Target {
        Target {
            backend: BackendKind::Cuda,
            variant: Variant::LaunchSized,
            limits: crate::tune::cache::tests::limits(),
            is_cpu: false,
        }
    }

    /// Small and skinny problems: the dozen that tuning on first use measures holds a 4-row
    /// tile, and at a skinny, deep problem a 4-row split-K config of at least 64 splits (the
    /// only way to put more than one or two blocks on the GPU there).
    #[test]
    fn small_and_skinny_problems_measure_the_small_tiles_and_wide_splits_first() {
        let target = Target { limits: crate::backend::Limits::h100(), ..cuda_target() };
        for (m, n, k, skinny) in
            [(162, 271, 99, false), (300, 200, 1000, false), (64, 64, 50000, true), (48, 17, 80000, true)]
        {
            let t = SgemmTunable::new(SgemmProblem { m, n, k, f16_inputs: false });
            let space = crate::tune::SearchSpace::build(&t, &target, &[]).expect("the space builds");
            let dozen: Vec<SgemmConfig> =
                t.candidates(&space, 12).expect("ranked").iter().map(|&i| t.config(&space.points[i])).collect();
            assert!(dozen.iter().any(|c| c.tm == 4), "{m}x{n}x{k}: {dozen:?}");
            if skinny {
                assert!(dozen.iter().any(|c| c.tm == 4 && c.splits >= 64), "{m}x{n}x{k}: {dozen:?}");
            }
        }
    }

    /// The spaces without a `tm` parameter (the static forms, f16 inputs) run the 8-row tile
    /// every form has: their points pass the check (a space whose every point took the first
    /// of THREAD_ROWS, 4, was refused whole, and tuning on first use fell back to the
    /// heuristic: the regression gate's cuda-static rows on the H200).
    #[test]
    fn spaces_without_a_tm_parameter_run_eight_rows_and_keep_their_points() {
        let target = Target { limits: crate::backend::Limits::h100(), ..cuda_target() };
        let f32 = SgemmProblem { m: 1024, n: 1024, k: 1024, f16_inputs: false };
        let f16 = SgemmProblem { f16_inputs: true, ..f32 };
        for (problem, variant) in [(f32, Variant::CudaStatic), (f16, Variant::LaunchSized), (f16, Variant::CudaStatic)]
        {
            let t = SgemmTunable::new(problem);
            let target = Target { variant, ..target };
            assert!(!t.params(&target).iter().any(|p| p.name == "tm"), "{variant} f16 {}", problem.f16_inputs);
            let space = crate::tune::SearchSpace::build(&t, &target, &[]).expect("the space builds");
            assert!(!space.points.is_empty(), "{variant} f16 {}: {:?}", problem.f16_inputs, space.filtered.first());
            assert!(space.points.iter().all(|p| t.config(p).tm == THREAD_TILE));
        }
    }

    #[test]
    fn the_cuda_f32_space_has_the_tensor_map_kernel_and_filters_its_points_by_its_rules() {
        let t = SgemmTunable::new(SgemmProblem { m: 4096, n: 4096, k: 4096, f16_inputs: false });
        let names: Vec<_> = t.params(&cuda_target()).iter().map(|p| p.name).collect();
        assert_eq!(names, ["bm", "bn", "bk", "stages", "tm", "tma", "sk"]);
        assert_eq!(t.config(&[256, 128, 32, 3, 8, 1]), SgemmConfig::tma(256, 32, 3));
        assert_eq!(t.config(&[256, 128, 32, 3, 16, 0]), SgemmConfig::new(256, 128, 32, 3).with_tm(16));
        let fp = t.check(&[256, 128, 32, 3, 8, 1], &cuda_target()).expect("the TMA default fits");
        assert_eq!((fp.threads, fp.launch_bytes), (256, 147480));
        let refused = t.check(&[256, 64, 32, 3, 8, 1], &cuda_target()).unwrap_err();
        assert!(refused.contains("bn 128"), "{refused}");
        assert!(t.check(&[256, 128, 32, 3, 16, 1], &cuda_target()).is_err(), "tm 16 has no TMA entry");
        // Rows not 16-byte aligned are padded: the tensor-map kernels take any k and n.
        let odd = SgemmTunable::new(SgemmProblem { m: 4096, n: 4095, k: 4098, f16_inputs: false });
        assert!(odd.check(&[256, 128, 32, 3, 8, 1], &cuda_target()).is_ok());
        // Stream-K: bn 64, 2 blocks per multiprocessor; not at bk 64, nor without tensor maps.
        let sk = SgemmConfig::streamk(128, 64, 4, 2);
        assert_eq!(t.config(&[128, 64, 32, 4, 8, 1, 2]), sk);
        let fp = t.check(&[128, 64, 32, 4, 8, 1, 2], &cuda_target()).expect("stream-K 128 x 64 fits");
        let sms = cuda_target().limits.multiprocessors.unwrap_or(1);
        assert_eq!((fp.threads, fp.grid), (128, 2 * sms));
        assert_eq!(fp.grid, sk.sk_grid(4096, 4096, 4096, sms));
        let refused = t.check(&[128, 64, 64, 4, 8, 1, 1], &cuda_target()).unwrap_err();
        assert!(refused.contains("stream-K"), "{refused}");
        assert!(t.check(&[128, 64, 32, 4, 8, 0, 1], &cuda_target()).is_err(), "stream-K is a tensor-map kernel");
        let empty = SgemmTunable::new(SgemmProblem { m: 0, n: 64, k: 64, f16_inputs: false });
        assert!(empty.check(&[256, 128, 32, 3, 8, 1, 0], &cuda_target()).unwrap_err().contains("at least one"));
        // f16 and HIP: no tma parameter.
        let f16 = SgemmTunable::new(SgemmProblem { f16_inputs: true, ..*t.problem() });
        assert!(!f16.params(&cuda_target()).iter().any(|p| p.name == "tma"));
        let hip = Target { backend: BackendKind::Hip, ..cuda_target() };
        assert!(!t.params(&hip).iter().any(|p| p.name == "tma"));
    }
}
