//! Tensor-core GEMM conformance on CUDA where a device is (prints `SKIPPED: no CUDA device`
//! and passes elsewhere): every entry (wgmma n128 / n160 / n192 / n224 / n256 with one and two math
//! warpgroups, cooperative and ping-pong, data-parallel and stream-K, alone and in clusters
//! of two, the compiled-in tiles, mma.sync with one and two warp rows) at awkward shapes (m and n
//! not multiples of any tile, k not a multiple of the k-tile, fewer k-tiles than stages),
//! two to six stages, past 48 KB of launch-sized memory, f16 and bf16 inputs, f32 and
//! 16-bit outputs, each against the CPU reference (exact integer inputs: one wrong product
//! fails) and, for some, against cuBLAS in the same process. Without a device: the
//! refusals before anything launches.

mod common;

use std::sync::Arc;

use common::{cuda_or_skip, note};
use dynsmem::host::backend::Backend;
use dynsmem::host::backend::Variant;
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::backend::cuda::CudaBackend;
use dynsmem::host::contract::Workload;
use dynsmem::host::device::hgemm::{FIXED, FIXED_C2, HgemmConfig};
use dynsmem::host::families::hgemm::{Half, HgemmProblem, HostInputs, OutType, prepare};
use dynsmem::host::measure::TimingOptions;

fn problem(m: u32, n: u32, k: u32, dtype: Half, out: OutType) -> HgemmProblem {
    HgemmProblem { m, n, k, dtype, out }
}

/// Prepares `cfg` on `p` (`fixed`: the compiled-in entry) and checks its result against the CPU
/// reference, panicking with the problem and config on a refusal or a wrong entry.
fn verify(cuda: &CudaBackend, p: HgemmProblem, inputs: &Arc<HostInputs>, cfg: HgemmConfig, fixed: bool) {
    let what = format!("{p:?} {cfg:?}{}", if fixed { " compiled in" } else { "" });
    let w = prepare(cuda, p, cfg, fixed, Variant::LaunchSized, || inputs.clone())
        .unwrap_or_else(|e| panic!("{what}: prepare: {e}"));
    w.check().unwrap_or_else(|e| panic!("{what}: {e}"));
}

#[test]
fn cuda_every_entry_at_awkward_shapes() {
    let Some(cuda) = cuda_or_skip("hgemm::cuda_every_entry_at_awkward_shapes") else { return };
    let wgmma = cuda.capability() == (9, 0) && cuda.ptx_target() == "sm_90a";
    // The last two give every persistent block several tiles (ping-pong's warpgroups then
    // take turns and skip each other's k-tiles in the ring), with fewer and more k-tiles
    // than stages.
    let shapes = [
        (1, 1, 8),
        (67, 131, 72),
        (200, 300, 1000),
        (129, 257, 64),
        (513, 250, 4104),
        (2050, 1030, 136),
        (1100, 2100, 520),
        // A partial last wave on 132 SMs (135 tiles of 128 x 256, 72 cluster items), checked
        // whole: stream-K splits the last wave's tiles.
        (1920, 2304, 192),
    ];
    let mut configs = vec![HgemmConfig::mma(64, 2), HgemmConfig::mma(128, 3), HgemmConfig::mma(64, 6)];
    if wgmma {
        configs.extend([
            HgemmConfig::wgmma(64, 128, 2),
            HgemmConfig::wgmma(128, 128, 3),
            HgemmConfig::wgmma(64, 256, 2),
            HgemmConfig::wgmma(128, 256, 4),
            HgemmConfig { group_m: 3, ..HgemmConfig::wgmma(128, 256, 2) },
            // Clusters of 2 sharing B: an odd number of row tiles leaves a block of a
            // cluster with rows past m (zeros in, nothing stored).
            HgemmConfig::wgmma(128, 256, 4).with_cluster(2),
            HgemmConfig { group_m: 1, ..HgemmConfig::wgmma(64, 256, 3).with_cluster(2) },
            HgemmConfig::wgmma(128, 192, 5),
            HgemmConfig::wgmma(64, 192, 3).with_cluster(2),
            // Ping-pong: 64-row tiles alternating between the two math warpgroups.
            HgemmConfig::wgmma(128, 128, 2).with_pingpong(true),
            HgemmConfig::wgmma(128, 256, 5).with_pingpong(true),
            HgemmConfig { group_m: 3, ..HgemmConfig::wgmma(128, 256, 3).with_pingpong(true).with_cluster(2) },
            HgemmConfig::wgmma(128, 192, 7).with_pingpong(true).with_cluster(2),
            // Two k-tile groups in flight: the fewest stages it allows, and ping-pong.
            HgemmConfig::wgmma(128, 256, 3).with_depth(2).with_cluster(2),
            HgemmConfig::wgmma(128, 256, 5).with_pingpong(true).with_depth(2),
            // Stream-K: pieces of split tiles summed per math warp, alone and in clusters,
            // one math warpgroup, two groups in flight.
            HgemmConfig::wgmma(128, 256, 4).with_streamk(true),
            HgemmConfig::wgmma(128, 256, 4).with_cluster(2).with_streamk(true),
            HgemmConfig { group_m: 3, ..HgemmConfig::wgmma(64, 192, 3).with_cluster(2).with_streamk(true) },
            HgemmConfig::wgmma(128, 128, 3).with_depth(2).with_streamk(true),
            // The widths between the powers of two (wave-filling tiles).
            HgemmConfig::wgmma(128, 160, 5).with_cluster(2),
            HgemmConfig::wgmma(64, 160, 4),
            HgemmConfig::wgmma(128, 224, 4),
            HgemmConfig { group_m: 3, ..HgemmConfig::wgmma(128, 224, 5).with_cluster(2).with_pingpong(true) },
            HgemmConfig::wgmma(128, 224, 4).with_cluster(2).with_streamk(true),
        ]);
    } else {
        note("hgemm: no sm_90a image on a 9.0 device: wgmma entries not run");
    }
    let mut ran = 0;
    for (m, n, k) in shapes {
        for (dtype, out) in [(Half::F16, OutType::F32), (Half::Bf16, OutType::F32), (Half::F16, OutType::Input)] {
            let p = problem(m, n, k, dtype, out);
            let inputs = Arc::new(HostInputs::new(&p, 11));
            for cfg in &configs {
                verify(&cuda, p, &inputs, *cfg, false);
                ran += 1;
            }
            if wgmma && dtype == Half::F16 {
                for fixed in [FIXED, FIXED_C2] {
                    verify(&cuda, p, &inputs, fixed, true);
                    ran += 1;
                }
            }
        }
    }
    note(&format!("hgemm: {ran} cases verified on {}", cuda.info().name));
}

/// Staged stores (tensor-map stores of whole tiles through shared memory) at shapes whose `n`
/// the tensor map takes (a multiple of 8: f32 and 16-bit rows in 16-byte multiples) but no
/// tile divides, with every schedule: the chunks past `n`, a cooperative tile's second
/// warpgroup wholly past `m`, ping-pong's warpgroups storing alternately, stream-K's split
/// tiles stored from registers beside staged whole ones, and blocks staging several tiles
/// in turn through the same 2, 3 or 4 buffers. Exact integer inputs: one wrong entry fails.
#[test]
fn cuda_staged_stores_at_awkward_shapes() {
    let Some(cuda) = cuda_or_skip("hgemm::cuda_staged_stores_at_awkward_shapes") else { return };
    if !(cuda.capability() == (9, 0) && cuda.ptx_target() == "sm_90a") {
        note("hgemm: staged stores need wgmma (sm_90a on a 9.0 device): not run");
        return;
    }
    let shapes = [(1, 8, 8), (67, 136, 72), (200, 296, 1000), (513, 264, 4104), (2050, 1032, 136), (1920, 2304, 192)];
    // Two, three and four staging buffers per warpgroup (a chunk reuses the buffer of the
    // store `buffers` chunks back, across tiles too).
    let configs = [
        HgemmConfig::wgmma(128, 256, 4).with_cluster(2),
        HgemmConfig::wgmma(64, 128, 2).with_stage_buffers(4),
        HgemmConfig { group_m: 3, ..HgemmConfig::wgmma(128, 160, 4).with_stage_buffers(3) },
        HgemmConfig::wgmma(128, 192, 3).with_cluster(2).with_depth(2).with_stage_buffers(4),
        HgemmConfig::wgmma(128, 224, 4).with_cluster(2).with_pingpong(true),
        HgemmConfig::wgmma(128, 256, 4).with_cluster(2).with_streamk(true),
        HgemmConfig::wgmma(64, 192, 3).with_streamk(true),
    ]
    .map(|c| c.with_tma_store(true));
    let mut ran = 0;
    for (m, n, k) in shapes {
        for (dtype, out) in [(Half::F16, OutType::F32), (Half::Bf16, OutType::Input), (Half::F16, OutType::Input)] {
            let p = problem(m, n, k, dtype, out);
            let inputs = Arc::new(HostInputs::new(&p, 5));
            for cfg in &configs {
                verify(&cuda, p, &inputs, *cfg, false);
                ran += 1;
            }
        }
    }
    note(&format!("hgemm: {ran} staged-store cases verified on {}", cuda.info().name));
}

/// Beside cuBLAS in the same process: its `C` entry by entry against ours, at a shape
/// past several waves of tiles and with a 16-bit output.
#[test]
fn cuda_against_cublas() {
    let Some(cuda) = cuda_or_skip("hgemm::cuda_against_cublas") else { return };
    let timing = TimingOptions { warmup: 1, warmup_ms: 0.0, repeats: 2, energy_ms: 0.0, back_to_back: true };
    for p in [problem(1000, 2056, 520, Half::F16, OutType::F32), problem(777, 1200, 4096, Half::Bf16, OutType::Input)] {
        let inputs = Arc::new(HostInputs::new(&p, 3));
        let cfg = dynsmem::host::families::hgemm::default_config(dynsmem::host::backend::AnyBackend::Cuda(&cuda), &p);
        let w = prepare(&cuda, p, cfg, false, Variant::LaunchSized, || inputs.clone()).expect("prepare");
        let anchor = w.vendor_anchor(timing, 3).expect("cuBLAS on CUDA");
        anchor.result.unwrap_or_else(|e| panic!("{p:?} against cuBLAS: {e}"));
    }
}

/// Refusals name the kernel and the rule before anything is built, on any machine.
#[test]
fn bad_configs_and_problems_are_refused_before_launch() {
    let cpu = CpuBackend::new();
    let p = problem(64, 64, 60, Half::F16, OutType::F32);
    let inputs = || Arc::new(HostInputs::new(&p, 1));
    let err = prepare(&cpu, p, HgemmConfig::mma(64, 2), false, Variant::LaunchSized, inputs).err().unwrap().to_string();
    assert!(err.contains("hgemm_mma_f16") && err.contains("multiple of 8"), "{err}");
    let p = problem(64, 64, 64, Half::F16, OutType::F32);
    let inputs = || Arc::new(HostInputs::new(&p, 1));
    let err = prepare(&cpu, p, HgemmConfig::wgmma(96, 256, 2), false, Variant::LaunchSized, inputs)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("hgemm_wgmma") && err.contains("bm 64 or 128"), "{err}");
    let inputs = || Arc::new(HostInputs::new(&p, 1));
    let err = prepare(&cpu, p, HgemmConfig::mma(64, 2), false, Variant::LaunchSized, inputs).err().unwrap().to_string();
    assert!(err.contains("CUDA only"), "{err}");
    // Staged stores: C's rows in 16-byte multiples (n a multiple of 4 for f32, 8 for 16-bit).
    let staged = HgemmConfig::wgmma(128, 256, 4).with_tma_store(true);
    for (n, out, ok) in
        [(68, OutType::F32, true), (66, OutType::F32, false), (68, OutType::Input, false), (72, OutType::Input, true)]
    {
        let p = problem(64, n, 64, Half::F16, out);
        let got = dynsmem::host::families::hgemm::validate(&p, &staged, false);
        match got {
            Ok(_) => assert!(ok, "n {n} {out:?} accepted"),
            Err((kernel, reason)) => {
                assert!(
                    !ok && kernel.contains("hgemm_wgmma_f16_n256") && reason.contains("tma_store"),
                    "{kernel}: {reason}"
                );
                assert!(reason.contains(&format!("got {n}")), "{reason}");
            }
        }
    }
    let err = prepare(&cpu, p, HgemmConfig::mma(64, 2).with_tma_store(true), false, Variant::LaunchSized, inputs)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("hgemm_mma") && err.contains("tma_store only with wgmma"), "{err}");
}
