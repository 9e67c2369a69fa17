//! Reduce on the static-WGSL path, both sizings (literal and override), through wgpu on
//! whatever Vulkan adapter is present: lavapipe in CI, the GPU's driver elsewhere.

mod common;

use common::conformance::{self, ReduceMatrix};
use common::wgsl_or_skip;
use dynsmem::host::Error;
use dynsmem::host::backend::Backend;
use dynsmem::host::backend::Variant;
use dynsmem::host::families::reduce::{ReduceConfig, ReduceOp, ReducePlan, ReduceProblem};
use dynsmem_kernels::Dtype;

#[test]
fn conformance_matrix() {
    let Some(wgsl) = wgsl_or_skip("wgsl_reduce::conformance_matrix") else { return };
    let m = ReduceMatrix {
        sizes: vec![0, 1, 2, 1023, 1_000_003],
        blocks: vec![32, 64, 128, 256, 512, 1024],
        extra: vec![
            ReduceConfig { block: 96, items_per_thread: 7, staged: false },
            ReduceConfig { block: 64, items_per_thread: 16, staged: true },
        ],
        seed: 11,
    };
    // 5 sizes x 8 configs x 3 ops x 2 variants x 2 dtypes.
    assert_eq!(conformance::reduce(&wgsl, &m), 5 * 8 * 3 * 2 * 2);
}

#[test]
fn static_arrays_over_the_workgroup_storage_limit_are_refused() {
    let Some(wgsl) = wgsl_or_skip("wgsl_reduce::static_arrays_over_the_workgroup_storage_limit_are_refused") else {
        return;
    };
    let limit = wgsl.info().limits.static_shared_max;
    // The 200 KB staged config the CUDA path runs: not expressible with static arrays.
    let config = ReduceConfig { block: 256, items_per_thread: 200, staged: true };
    let problem = ReduceProblem { n: 1 << 20, op: ReduceOp::Sum, dtype: Dtype::F32 };
    for variant in [Variant::WgslLiteral, Variant::WgslOverride] {
        match ReducePlan::new(&wgsl, problem, config, variant) {
            Err(Error::SharedMemoryLimit { kind, requested, limit: l, limit_name, .. }) => {
                assert_eq!(kind, "static");
                assert_eq!(requested, (256 + 256 * 200) * 4);
                assert_eq!((l, limit_name), (limit as u64, "max_compute_workgroup_storage_size"));
            }
            other => panic!("{variant}: expected SharedMemoryLimit, got {:?}", other.err()),
        }
    }
}

#[test]
fn launch_sized_variant_is_not_offered() {
    let Some(wgsl) = wgsl_or_skip("wgsl_reduce::launch_sized_variant_is_not_offered") else { return };
    let problem = ReduceProblem { n: 10, op: ReduceOp::Max, dtype: Dtype::F32 };
    let config = ReduceConfig { block: 64, items_per_thread: 1, staged: false };
    assert!(matches!(ReducePlan::new(&wgsl, problem, config, Variant::LaunchSized), Err(Error::Unsupported { .. })));
}

#[test]
fn more_than_u32_elements_are_refused() {
    let Some(wgsl) = wgsl_or_skip("wgsl_reduce::more_than_u32_elements_are_refused") else { return };
    let problem = ReduceProblem { n: 1 << 32, op: ReduceOp::Sum, dtype: Dtype::U32 };
    let config = ReduceConfig { block: 64, items_per_thread: 4, staged: false };
    let refused = ReducePlan::new(&wgsl, problem, config, Variant::WgslLiteral);
    assert!(
        matches!(refused, Err(Error::IndexOverflow { requested, limit, .. }) if requested == 1 << 32 && limit == u32::MAX as u64)
    );
}

#[test]
fn back_to_back_timing_times_every_run_across_batches() {
    let Some(wgsl) = wgsl_or_skip("wgsl_reduce::back_to_back_timing_times_every_run_across_batches") else { return };
    let src = wgsl.htod(&vec![1.0f32; 1 << 16]).unwrap();
    let mut dst = wgsl.alloc::<f32>(1 << 16).unwrap();
    // Two passes per run: 300 runs are 600 passes, past one scope's timestamps, so the
    // runs go in several submissions and every one must still get its own time.
    let mut calls = 0u32;
    let times = wgsl
        .time_runs(300, &mut || {
            calls += 1;
            wgsl.copy(&src, &mut dst)?;
            wgsl.copy(&src, &mut dst)
        })
        .unwrap();
    assert_eq!((calls, times.len()), (300, 300));
    assert!(times.iter().all(|t| t.is_finite() && *t > 0.0), "{times:?}");
    assert_eq!(wgsl.dtoh(&dst).unwrap(), vec![1.0f32; 1 << 16]);
}
