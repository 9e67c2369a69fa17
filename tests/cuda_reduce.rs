//! Reduce on CUDA: the conformance matrix, launch-sized memory past 48 KB, and the limits.
//! Each test prints `SKIPPED: no CUDA device` and passes where there is none.

mod common;

use common::conformance::{self, ReduceMatrix};
use common::cuda_or_skip;
use dynsmem::host::Error;
use dynsmem::host::backend::Backend;
use dynsmem::host::backend::Variant;
use dynsmem::host::families::reduce::{ReduceConfig, ReduceOp, ReducePlan, ReduceProblem, run_and_verify};
use dynsmem_kernels::Dtype;

const POW2_BLOCKS: [u32; 6] = [32, 64, 128, 256, 512, 1024];

#[test]
fn conformance_matrix() {
    let Some(cuda) = cuda_or_skip("cuda_reduce::conformance_matrix") else { return };
    let m = ReduceMatrix {
        sizes: vec![0, 1, 1_000_003, 1 << 28],
        blocks: POW2_BLOCKS.to_vec(),
        extra: vec![
            ReduceConfig { block: 96, items_per_thread: 7, staged: false },
            ReduceConfig { block: 1000, items_per_thread: 1, staged: false },
            ReduceConfig { block: 256, items_per_thread: 16, staged: true },
        ],
        seed: 7,
    };
    // 4 sizes x 9 configs x 3 ops x 2 dtypes x 2 variants (launch-sized, cuda-static: the
    // largest static arrays here, 256 x 16 staged, are 17 KB).
    assert_eq!(conformance::reduce(&cuda, &m), 4 * 9 * 3 * 2 * 2);
}

#[test]
fn launch_sized_memory_past_48k_runs_and_verifies() {
    let Some(cuda) = cuda_or_skip("cuda_reduce::launch_sized_memory_past_48k_runs_and_verifies") else { return };
    let limits = cuda.info().limits;
    assert_eq!(limits.launch_shared_default, 48 * 1024, "default dynamic shared memory per block");
    // 200 KB of staged items, and exactly the opt-in limit (232448 B on an H100).
    let max_block = 256;
    let max_ipt = limits.launch_shared_max / 4 / max_block - 1;
    for config in [
        ReduceConfig { block: 256, items_per_thread: 200, staged: true },
        ReduceConfig { block: max_block, items_per_thread: max_ipt, staged: true },
    ] {
        for (op, dtype) in [(ReduceOp::Sum, Dtype::F32), (ReduceOp::Max, Dtype::U32)] {
            let problem = ReduceProblem { n: 10_000_019, op, dtype };
            let plan = ReducePlan::new(&cuda, problem, config, Variant::LaunchSized).unwrap();
            assert!(plan.shared_bytes > 48 * 1024, "{config:?} uses {} B", plan.shared_bytes);
            drop(plan);
            match dtype {
                Dtype::F32 => {
                    run_and_verify::<_, f32>(&cuda, problem, config, Variant::LaunchSized, 3).unwrap();
                }
                Dtype::U32 => {
                    run_and_verify::<_, u32>(&cuda, problem, config, Variant::LaunchSized, 3).unwrap();
                }
            }
        }
    }
    let exact = ReduceConfig { block: max_block, items_per_thread: max_ipt, staged: true };
    assert_eq!(exact.shared_bytes(Dtype::F32).unwrap(), limits.launch_shared_max, "the opt-in limit itself runs");
}

#[test]
fn request_over_the_optin_limit_is_refused_before_launch() {
    let Some(cuda) = cuda_or_skip("cuda_reduce::request_over_the_optin_limit_is_refused_before_launch") else { return };
    let limit = cuda.info().limits.launch_shared_max;
    // block * (ipt + 1) * 4 bytes: 9 * 6457 * 4 = 232452, the first size past an H100's 232448.
    let config = ReduceConfig { block: 9, items_per_thread: 6456, staged: true };
    let asked = config.shared_bytes(Dtype::F32).unwrap();
    assert_eq!(asked, 232_452);
    let problem = ReduceProblem { n: 1 << 20, op: ReduceOp::Sum, dtype: Dtype::F32 };
    match ReducePlan::new(&cuda, problem, config, Variant::LaunchSized) {
        Err(Error::SharedMemoryLimit { kernel, requested, limit: l, .. }) if asked > limit => {
            assert_eq!(kernel, "reduce_staged_sum_f32");
            assert_eq!((requested, l), (asked as u64, limit as u64));
        }
        Ok(_) if asked <= limit => {}
        other => panic!("expected SharedMemoryLimit for {asked} B over {limit} B, got {:?}", other.err()),
    }
}

#[test]
fn block_over_the_device_maximum_is_refused() {
    let Some(cuda) = cuda_or_skip("cuda_reduce::block_over_the_device_maximum_is_refused") else { return };
    let max = cuda.info().limits.max_threads_per_block;
    let problem = ReduceProblem { n: 1000, op: ReduceOp::Min, dtype: Dtype::U32 };
    let config = ReduceConfig { block: max + 1, items_per_thread: 1, staged: false };
    match ReducePlan::new(&cuda, problem, config, Variant::LaunchSized) {
        Err(Error::BlockTooLarge { requested, limit, .. }) => assert_eq!((requested, limit), (max + 1, max)),
        other => panic!("expected BlockTooLarge, got {:?}", other.err()),
    }
}

/// On an NVIDIA GPU with NVML, every measurement carries what NVML read meanwhile: SM and
/// memory clocks, power, temperature, and (with an energy window) the energy of one run,
/// consistent with the window's power and the run's time; and the median's interval.
#[test]
fn a_measurement_carries_the_gpus_clocks_power_temperature_and_energy() {
    let Some(cuda) = cuda_or_skip("cuda_reduce::a_measurement_carries_the_gpus_clocks_power_temperature_and_energy")
    else {
        return;
    };
    let Some(observer) = cuda.observer() else {
        panic!("no NVML for {} (libnvidia-ml.so is part of every NVIDIA driver)", cuda.info().name)
    };
    assert_eq!(observer.source(), "nvml");
    let src = cuda.htod(&vec![1.0f32; 1 << 26]).unwrap();
    let mut dst = cuda.alloc::<f32>(1 << 26).unwrap();
    let opts = dynsmem::host::measure::TimingOptions {
        warmup: 3,
        warmup_ms: 100.0,
        repeats: 20,
        energy_ms: 300.0,
        back_to_back: true,
    };
    let (t, _) = dynsmem::host::backend::time(&cuda, opts, &mut || cuda.copy(&src, &mut dst)).unwrap();
    let o = t.observation.expect("an observation");
    let sm = o.sm_clock_mhz.expect("SM clock");
    assert!(sm.min > 100.0 && sm.max < 5000.0, "{sm:?}");
    assert!(o.mem_clock_mhz.is_some() && o.temperature_c.is_some(), "{o:?}");
    let p = o.power_w.expect("power");
    assert!(p.max > 10.0 && p.max < 2000.0, "{p:?}");
    let e = o.energy.expect("the energy counter moved during 300 ms of copies");
    assert!(e.window_ms >= 300.0 && e.runs > 10, "{e:?}");
    // Energy per run is the window's mean power times the window per run.
    let per_run_ms = e.window_ms / e.runs as f64;
    assert!((e.joules_per_run - e.watts * per_run_ms / 1e3).abs() < 1e-9 * e.joules_per_run.max(1e-12) + 1e-12);
    // A run takes at least its device time: the window per run cannot be shorter.
    assert!(per_run_ms >= t.median_ms * 0.9, "{per_run_ms} ms per run in the window, median {} ms", t.median_ms);
    assert!(e.watts > 20.0 && e.watts < 2000.0, "{e:?}");
    let [lo, hi] = t.median_ci95_ms.expect("an interval");
    assert!(lo <= t.median_ms && t.median_ms <= hi, "[{lo}, {hi}] around {}", t.median_ms);
}
