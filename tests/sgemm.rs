//! GEMM conformance on the CPU backend and the WGSL path always (lavapipe in CI) and on
//! CUDA where a device is: awkward shapes, configs of one to four stages (WGSL: one or
//! two, both variants), configs past 48 KB of launch-sized memory on CUDA, f32 and f16
//! inputs, and the compiled-in tile; on WGSL the configs it refuses before a pipeline is
//! made.

mod common;

use common::{conformance, cuda_or_skip, wgsl_or_skip};
use dynsmem::host::backend::Backend;
use dynsmem::host::backend::Variant;
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::device::sgemm::SgemmConfig;
use dynsmem::host::families::sgemm::{SgemmProblem, prepare};
use dynsmem::host::{Error, contract::Workload};

const fn cfg(bm: u32, bn: u32, bk: u32, stages: u32) -> SgemmConfig {
    SgemmConfig::new(bm, bn, bk, stages)
}

#[test]
fn cpu_backend() {
    let cpu = CpuBackend::new();
    let shapes = [(1, 1, 1), (17, 33, 65), (33, 17, 1), (64, 64, 64), (70, 40, 37)];
    // 64 x 32 has whole warps (32 threads): the f32 kernel's warp-wide gather of A.
    let configs = [
        cfg(16, 16, 8, 2),
        cfg(32, 16, 4, 1),
        cfg(16, 32, 16, 3),
        cfg(32, 32, 8, 4),
        cfg(64, 32, 8, 2),
        // 16 x 8 thread tiles (f32 only): 4 threads, and 32 (a whole warp: the warp-wide
        // gather of A).
        cfg(32, 16, 8, 2).with_tm(16),
        cfg(128, 16, 16, 3).with_tm(16),
        // A 32-deep tile with three stages, one warp: it copies A in units of 16 rows, two
        // per pass (8 rows per thread: two units, one pass; 16 rows: four units, two).
        cfg(64, 32, 32, 3),
        cfg(64, 64, 32, 3).with_tm(16),
        // 4 x 8 thread tiles (f32 only): 8 threads at bk 12 at launch, and 32 (one warp:
        // A in units of 16 rows).
        cfg(16, 16, 12, 2).with_tm(4),
        cfg(32, 32, 16, 3).with_tm(4),
    ];
    // f16 needs bk % 8 == 0: five of the six 8-row configs.
    assert_eq!(conformance::sgemm(&cpu, &shapes, &configs), 5 * (6 + 5 + 5));
}

/// Split-K on the CPU backend: the splits of a tile store their parts in the workspace and
/// the sum adds them and beta C into C, over k-tiles that do not divide evenly (37 = 4 + 4 +
/// 4 + ... in k-tiles of 4 and 8), f32 with 4, 8 and 16 rows and f16, and a skinny, deep
/// problem split 40 ways; exact (integer inputs), so a split that skips or repeats a k-tile,
/// a slice the sum leaves out, or C scaled twice, fails.
#[test]
fn cpu_backend_split_k() {
    let cpu = CpuBackend::new();
    let shapes = [(17, 33, 65), (70, 40, 37), (9, 5, 200)];
    let configs = [
        cfg(16, 16, 8, 2).with_splits(3),
        cfg(32, 16, 4, 1).with_splits(4),
        cfg(32, 16, 8, 2).with_tm(16).with_splits(2),
        cfg(64, 32, 8, 3).with_splits(5),
        cfg(32, 32, 8, 2).with_tm(4).with_splits(3),
    ];
    // f16 (bk % 8 == 0, 8 rows): the first and fourth configs.
    assert_eq!(conformance::sgemm(&cpu, &shapes, &configs), 3 * (5 + 2));
    let skinny = [cfg(32, 32, 16, 3).with_tm(4).with_splits(40)];
    assert_eq!(conformance::sgemm(&cpu, &[(20, 9, 2000)], &skinny), 1);
}

/// The tensor-map kernels on the CPU backend (its stand-in tensor maps): one block per tile,
/// and stream-K at 1 to 4 blocks per "multiprocessor" with 128, 64 and 32 columns and 2 to 4
/// stages. The GPU-shaped backend has 132 of them, so most launches have more blocks than
/// tiles: every tile is split over several blocks (up to one k-tile each), and the larger
/// shapes have data-parallel tiles before the stream-K ones; shapes with k or n not a
/// multiple of 4 pad their rows first. Exact (integer inputs): a piece summed twice or
/// skipped, a unit computed twice or not at all, a wrong padded stride, fails.
#[test]
fn cpu_backend_tensor_map_kernels() {
    let sk = SgemmConfig::streamk;
    let shapes = [(1, 1, 1), (17, 33, 65), (70, 40, 37), (9, 130, 200), (40, 64, 96), (300, 36, 64)];
    let configs = [
        SgemmConfig::tma(8, 32, 2),
        SgemmConfig::tma(16, 32, 3),
        sk(8, 32, 2, 1),
        sk(16, 64, 3, 2),
        sk(8, 128, 4, 4),
        sk(24, 32, 2, 3),
    ];
    for cpu in [CpuBackend::new(), CpuBackend::gpu_shaped()] {
        // f32 only: f16 inputs and the static forms have no tensor-map kernel.
        assert_eq!(conformance::sgemm(&cpu, &shapes, &configs), shapes.len() * configs.len());
    }
}

/// The stream-K schedule the CPU test above runs really splits tiles, and reaches the
/// data-parallel waves: the cases it claims to cover.
#[test]
fn the_cpu_stream_k_cases_split_tiles_and_run_data_parallel_waves() {
    let (m, n, k) = (300, 36, 64);
    let cfg = SgemmConfig::streamk(8, 32, 2, 1);
    let blocks = cfg.sk_grid(m, n, k, 2);
    let s = cfg.schedule(m, n, k, blocks);
    assert!(s.dp_tiles > 0, "{s:?}: data-parallel tiles at 2 blocks");
    let split = cfg.schedule(70, 40, 37, SgemmConfig::streamk(16, 64, 3, 2).sk_grid(70, 40, 37, 132));
    assert!((0..split.tiles).any(|t| split.pieces(t).1 > split.pieces(t).0), "{split:?}: a split tile");
}

/// Split-K asked for where it cannot run is refused before launch: more splits than
/// k-tiles, more than the kernel takes, and in a static form.
#[test]
fn split_k_refusals() {
    let cpu = CpuBackend::new();
    let p = SgemmProblem { m: 64, n: 64, k: 20, f16_inputs: false };
    match prepare(&cpu, p, cfg(16, 16, 8, 2).with_splits(4), false, Variant::LaunchSized, 1).map(|_| ()) {
        Err(Error::InvalidConfig { kernel, reason }) => {
            assert_eq!(kernel, "sgemm_f32_bk8");
            assert!(reason.contains("4 splits") && reason.contains("3 k-tiles"), "{reason}");
        }
        other => panic!("4 splits of 3 k-tiles: {other:?}"),
    }
    let deep = SgemmProblem { k: 4096, ..p };
    match prepare(&cpu, deep, cfg(16, 16, 8, 2).with_splits(265), false, Variant::LaunchSized, 1).map(|_| ()) {
        Err(Error::InvalidConfig { reason, .. }) => assert!(reason.contains("splits 1 to 264"), "{reason}"),
        other => panic!("265 splits: {other:?}"),
    }
    if let Some(wgsl) = wgsl_or_skip("sgemm::split_k_refusals") {
        match prepare(&wgsl, deep, cfg(16, 16, 8, 2).with_splits(2), false, Variant::WgslLiteral, 1).map(|_| ()) {
            Err(Error::Unsupported { what, .. }) => assert!(what.contains("split-K"), "{what}"),
            other => panic!("split-K in WGSL: {other:?}"),
        }
    }
}

#[test]
fn thread_rows_other_than_the_entries_have_are_refused_before_launch() {
    let cpu = CpuBackend::new();
    let f16 = SgemmProblem { m: 64, n: 64, k: 64, f16_inputs: true };
    match prepare(&cpu, f16, cfg(64, 64, 16, 2).with_tm(16), false, Variant::LaunchSized, 1).map(|_| ()) {
        Err(Error::InvalidConfig { kernel, reason }) => {
            assert_eq!(kernel, "hgemm_f16_f32");
            assert!(reason.contains("tm = 16"), "{reason}");
        }
        other => panic!("f16 with 16 rows per thread: {other:?}"),
    }
    let f32 = SgemmProblem { f16_inputs: false, ..f16 };
    match prepare(&cpu, f32, cfg(48, 64, 16, 2).with_tm(12), false, Variant::LaunchSized, 1).map(|_| ()) {
        Err(Error::InvalidConfig { kernel, reason }) => {
            assert_eq!(kernel, "sgemm_f32");
            assert!(reason.contains("tm = 12"), "{reason}");
        }
        other => panic!("12 rows per thread: {other:?}"),
    }
    match prepare(&cpu, f32, cfg(128, 128, 16, 2).with_tm(16), true, Variant::LaunchSized, 1).map(|_| ()) {
        Err(Error::InvalidConfig { kernel, .. }) => assert_eq!(kernel, "sgemm_f32"),
        other => panic!("the compiled-in tile with 16 rows per thread: {other:?}"),
    }
}

#[test]
fn cuda() {
    let Some(cuda) = cuda_or_skip("sgemm::cuda") else { return };
    let shapes = [(1, 1, 1), (17, 33, 65), (1000, 1003, 997), (4095, 4097, 1), (65536, 64, 64), (1024, 1024, 1024)];
    let configs = [
        cfg(128, 128, 16, 2),
        // 55 KB and 70 KB of launch-sized memory: past the 48 KB default.
        cfg(128, 128, 16, 3),
        cfg(128, 128, 32, 2),
        cfg(64, 64, 16, 2),
        cfg(128, 64, 8, 4),
        // The default at 1024^3 (76032 B).
        cfg(128, 64, 32, 3),
        // 16 x 8 thread tiles, f32 launch-sized only: 256 threads with 78336 B (three
        // stages), 128 threads, and bk at launch (24: no entry has it compiled in); and the
        // default at 4096^3 (152064 B, the next tile's copies after the multiply).
        cfg(256, 128, 16, 3).with_tm(16),
        cfg(128, 128, 32, 2).with_tm(16),
        cfg(256, 128, 24, 2).with_tm(16),
        cfg(256, 128, 32, 3).with_tm(16),
        // 4 x 8 thread tiles: 32 x 32 (one warp), 64 x 64 at bk 16 (128 threads), bk 24 at
        // launch.
        cfg(32, 32, 32, 3).with_tm(4),
        cfg(64, 64, 16, 4).with_tm(4),
        cfg(64, 32, 24, 2).with_tm(4),
    ];
    // Launch-sized: f16 needs bk % 8 == 0 (all six); the fixed-tile entry adds one case per
    // shape. cuda-static: the same source with the tile compiled in and static arrays, which
    // must fit 48 KB: f32 128x128x16 with three stages (52224 B), 128x128x32 with two
    // (67584 B) and 128x64x32 with three (76032 B) are refused before anything is built;
    // every f16 config fits.
    // tm = 16 and 4: one case per shape and config (f32, launch-sized).
    assert_eq!(conformance::sgemm(&cuda, &shapes, &configs), 6 * (6 * 2 + 1) + 6 * (3 + 6) + 6 * 7);
}

/// The tensor-map (TMA) kernel: shapes with k and n multiples of 4 and shapes whose rows of A
/// or B are not 16-byte aligned (padded by `sgemm_pack` in the same run), edges past every
/// tile side (the copies fill zeros), both depths, two to four stages, and its default at
/// 4096^3 (256 x 128 x 32, three stages, 147480 B).
#[test]
fn cuda_tma() {
    let Some(cuda) = cuda_or_skip("sgemm::cuda_tma") else { return };
    let shapes = [(1, 4, 4), (17, 36, 64), (1000, 1004, 996), (4095, 4096, 4), (65536, 64, 64), (300, 260, 1000)];
    let configs = [
        SgemmConfig::tma(256, 32, 3),
        SgemmConfig::tma(256, 32, 2),
        SgemmConfig::tma(128, 32, 4),
        SgemmConfig::tma(64, 64, 2),
        SgemmConfig::tma(8, 32, 3),
    ];
    assert_eq!(conformance::sgemm(&cuda, &shapes, &configs), 6 * 5);
    let odd = [(1, 1, 1), (17, 33, 65), (999, 1001, 997), (300, 257, 1023)];
    assert_eq!(conformance::sgemm(&cuda, &odd, &configs[..3]), 4 * 3);
}

/// The stream-K kernel on the GPU: 128, 64 and 32 columns, 2 to 4 stages, 1 to 4 blocks per
/// multiprocessor, at shapes with fewer tiles than blocks (every tile split, up to a k-tile a
/// piece), with a partial last wave (data-parallel waves, then a stream-K one), odd sides
/// (padded rows, edge tiles) and deep k; exact (integer inputs), every entry of C where the
/// problem is small and 4096 sampled entries past 2^31 multiply-adds.
#[test]
fn cuda_stream_k() {
    let Some(cuda) = cuda_or_skip("sgemm::cuda_stream_k") else { return };
    let sk = SgemmConfig::streamk;
    let shapes = [(1, 1, 1), (17, 33, 65), (705, 546, 717), (2999, 3001, 3003), (64, 4096, 64), (97, 61, 8191)];
    let configs = [
        sk(128, 128, 4, 1),
        sk(128, 128, 3, 2),
        sk(128, 64, 4, 2),
        sk(64, 32, 2, 4),
        sk(256, 64, 3, 1),
        sk(256, 32, 3, 3),
        sk(8, 128, 2, 3),
    ];
    assert_eq!(conformance::sgemm(&cuda, &shapes, &configs), shapes.len() * configs.len());
}

/// Split-K on the GPU: the k-group kernel (4, 8 and 16 rows), the tensor-map kernel and f16,
/// on small tiles of deep problems (the shapes split-K is for) and edges on every side, and
/// skinny problems of deep k split up to 264 ways.
#[test]
fn cuda_split_k() {
    let Some(cuda) = cuda_or_skip("sgemm::cuda_split_k") else { return };
    let shapes = [(256, 256, 8192), (300, 260, 1000), (97, 61, 4099)];
    let configs = [
        cfg(128, 64, 32, 3).with_splits(4),
        cfg(64, 64, 16, 2).with_splits(16),
        cfg(256, 128, 32, 3).with_tm(16).with_splits(3),
        cfg(64, 64, 32, 3).with_tm(4).with_splits(6),
    ];
    // f16: the two 8-row configs (bk % 8 == 0), launch-sized only.
    assert_eq!(conformance::sgemm(&cuda, &shapes, &configs), 3 * (4 + 2));
    let skinny = [cfg(64, 64, 32, 3).with_tm(4).with_splits(264), cfg(32, 32, 16, 4).with_tm(4).with_splits(132)];
    assert_eq!(conformance::sgemm(&cuda, &[(64, 64, 50000), (48, 17, 80001), (1, 1, 9000)], &skinny), 3 * 2);
    // The tensor-map kernel: k and n multiples of 4.
    let tma = [SgemmConfig::tma(128, 32, 3).with_splits(8), SgemmConfig::tma(256, 32, 2).with_splits(2)];
    assert_eq!(conformance::sgemm(&cuda, &[(256, 256, 8192), (300, 260, 1000)], &tma), 2 * 2);
}

/// Split-K's sum adds the splits' parts in a fixed order, so a split problem gives the same
/// bits run after run (random inputs: another order of the adds would round differently
/// somewhere), the skinny 264-way split and an 8-way split of an odd shape alike.
#[test]
fn cuda_split_k_gives_the_same_bits_every_run() {
    let Some(cuda) = cuda_or_skip("sgemm::cuda_split_k_gives_the_same_bits_every_run") else { return };
    for ((m, n, k), config) in [
        ((64, 64, 50000), cfg(64, 64, 32, 3).with_tm(4).with_splits(264)),
        ((300, 257, 8191), cfg(128, 64, 32, 3).with_splits(8)),
    ] {
        let problem = SgemmProblem { m, n, k, f16_inputs: false };
        let w = prepare(&cuda, problem, config, false, Variant::LaunchSized, 5).expect("prepares");
        let first: Vec<u32> = w.result_from_initial().expect("runs").iter().map(|v| v.to_bits()).collect();
        w.compare(&w.result_from_initial().expect("runs")).expect("verified");
        for run in 0..3 {
            let again: Vec<u32> = w.result_from_initial().expect("runs").iter().map(|v| v.to_bits()).collect();
            let differ = first.iter().zip(&again).filter(|(a, b)| a != b).count();
            assert_eq!(differ, 0, "{m}x{n}x{k} {config:?}: run {} differs from the first at {differ} entries", run + 2);
        }
    }
}

/// What the tensor-map kernels refuse before anything is launched: a backend without tensor
/// maps, an empty side, a depth without an entry, a block tile past one box, stream-K at a
/// width or depth it has no entry for or with split-K; and what they accept: any k and n
/// (padded), on the CPU backend too.
#[test]
fn tma_refusals() {
    let cpu = CpuBackend::new();
    let p = SgemmProblem { m: 64, n: 64, k: 64, f16_inputs: false };
    if let Some(wgsl) = wgsl_or_skip("sgemm::tma_refusals (WGSL part)") {
        match prepare(&wgsl, p, SgemmConfig::tma(64, 32, 2), false, Variant::WgslLiteral, 1).map(|_| ()) {
            Err(Error::Unsupported { what, .. }) => assert!(what.contains("sgemm_f32_tma_bk32"), "{what}"),
            other => panic!("TMA in WGSL: {other:?}"),
        }
    }
    match prepare(&cpu, SgemmProblem { k: 0, ..p }, SgemmConfig::tma(64, 32, 2), false, Variant::LaunchSized, 1)
        .map(|_| ())
    {
        Err(Error::InvalidProblem { kernel, reason }) => {
            assert_eq!(kernel, "sgemm_f32_tma_bk32");
            assert!(reason.contains("at least one element"), "{reason}");
        }
        other => panic!("TMA with k 0: {other:?}"),
    }
    match prepare(&cpu, p, SgemmConfig::tma(64, 48, 2), false, Variant::LaunchSized, 1).map(|_| ()) {
        Err(Error::InvalidConfig { kernel, reason }) => {
            assert_eq!(kernel, "sgemm_f32_tma");
            assert!(reason.contains("bk one of [32, 64]"), "{reason}");
        }
        other => panic!("TMA with bk 48: {other:?}"),
    }
    match prepare(&cpu, p, SgemmConfig::tma(512, 32, 2), false, Variant::LaunchSized, 1).map(|_| ()) {
        Err(Error::InvalidConfig { kernel, reason }) => {
            assert_eq!(kernel, "sgemm_f32_tma_bk32");
            assert!(reason.contains("up to 256"), "{reason}");
        }
        other => panic!("TMA with bm 512: {other:?}"),
    }
    for (bad, why) in [
        (SgemmConfig::streamk(64, 96, 2, 1), "bn 96"),
        (SgemmConfig { bk: 64, ..SgemmConfig::streamk(64, 64, 2, 1) }, "bk 64"),
        (SgemmConfig::streamk(64, 64, 2, 1).with_splits(2), "split-K"),
        (SgemmConfig::streamk(64, 64, 2, 9), "9 blocks per multiprocessor"),
        (SgemmConfig::streamk(256, 128, 2, 1), "512 threads"),
    ] {
        match prepare(&cpu, p, bad, false, Variant::LaunchSized, 1).map(|_| ()) {
            Err(Error::InvalidConfig { kernel, reason }) => {
                assert!(kernel.starts_with("sgemm_f32_sk"), "{why}: {kernel}");
                assert!(reason.contains("stream-K") || reason.contains("bn one of"), "{why}: {reason}");
            }
            other => panic!("stream-K with {why}: {other:?}"),
        }
    }
    assert_eq!(SgemmConfig::tma(256, 32, 3).shared_bytes(4), Ok(256 * 32 * 4 * 3 + 32 * 128 * 4 * 3 + 3 * 8));
    assert_eq!(SgemmConfig::tma(256, 32, 3).threads(), 256);
    // Stream-K: the ring, its barriers, then the flag and the copies' cursor (9 words).
    assert_eq!(SgemmConfig::streamk(128, 64, 3, 2).shared_bytes(4), Ok((128 * 32 + 32 * 64) * 4 * 3 + 3 * 8 + 9 * 4));
    // 8 x 8 per thread (8 x 4 at 32 columns): a 128-wide block has 16 threads to a row, 32 has 8.
    assert_eq!(
        (SgemmConfig::streamk(128, 128, 3, 2).threads(), SgemmConfig::streamk(256, 32, 3, 2).threads()),
        (256, 256)
    );
    // Odd k and n: padded, accepted.
    let odd = SgemmProblem { m: 5, n: 66 + 1, k: 64 + 3, f16_inputs: false };
    assert!(prepare(&cpu, odd, SgemmConfig::tma(8, 32, 2), false, Variant::LaunchSized, 1).is_ok());
}

#[test]
fn cuda_block_over_the_kernels_register_limit_is_refused_before_launch() {
    let Some(cuda) = cuda_or_skip("sgemm::cuda_block_over_the_kernels_register_limit_is_refused_before_launch") else {
        return;
    };
    // 256 x 256 tiles: 1024 threads, which the device allows and the GEMM entries (capped
    // at 128 registers) do not: 65536 / 128 = 512.
    let p = SgemmProblem { m: 512, n: 512, k: 64, f16_inputs: false };
    let w = prepare(&cuda, p, cfg(256, 256, 16, 2), false, Variant::LaunchSized, 1).expect("prepares");
    match w.run() {
        Err(Error::KernelBlockLimit { kernel, requested: 1024, limit: 512, why }) => {
            assert_eq!(kernel, "sgemm_f32_bk16");
            assert!(why.contains("registers"), "{why}");
        }
        other => panic!("1024-thread GEMM block: {other:?}"),
    }
    // 16 rows per thread: 512 threads of over 128 registers each.
    let w = prepare(&cuda, p, cfg(256, 256, 16, 2).with_tm(16), false, Variant::LaunchSized, 1).expect("prepares");
    match w.run() {
        Err(Error::KernelBlockLimit { kernel, requested: 512, limit, .. }) => {
            assert_eq!(kernel, "sgemm_f32_tm16_bk16");
            assert!(limit < 512, "{limit}");
        }
        other => panic!("512-thread 16-row GEMM block: {other:?}"),
    }
}

#[test]
fn wgsl() {
    let Some(wgsl) = wgsl_or_skip("sgemm::wgsl") else { return };
    // Tall-skinny and wide shapes; K % 4 == 0 with N % 4 != 0 (vec4 loads of A, element
    // loads of B and C) and the reverse; whole tiles (all vec4); K = 0 (C = beta C).
    let shapes =
        [(1, 1, 1), (17, 33, 65), (100, 103, 97), (4099, 5, 36), (3, 1001, 13), (64, 64, 64), (40, 36, 20), (5, 7, 0)];
    let configs = [
        cfg(16, 16, 8, 1),
        cfg(32, 32, 16, 2),
        // bk 4: one chunk per row of the A tile.
        cfg(64, 32, 4, 2),
        cfg(32, 64, 8, 1),
        // The GPU default: 256 invocations, 16640 B.
        cfg(128, 128, 8, 2),
    ];
    // Both variants: f32 with every config, f16 inputs (where the adapter has f16, as
    // lavapipe does) with the four whose bk is a multiple of 8.
    let f16 = if wgsl.has_f16() { 8 * 4 * 2 } else { 0 };
    assert_eq!(conformance::sgemm(&wgsl, &shapes, &configs), 8 * 5 * 2 + f16);
}

/// More 8 x 8 tiles (257 x 256) than a dispatch may have workgroups along x (65535 on
/// every Vulkan adapter wgpu admits): the grid is capped and the kernel loops over the
/// tiles past it.
#[test]
fn wgsl_grid_stride_covers_tiles_past_the_dispatch_limit() {
    let Some(wgsl) = wgsl_or_skip("sgemm::wgsl_grid_stride") else { return };
    let max_grid = wgsl.info().limits.max_grid_x;
    let p = SgemmProblem { m: 2056, n: 2048, k: 4, f16_inputs: false };
    let c = cfg(8, 8, 4, 2);
    assert!(c.grid(p.m, p.n) > max_grid, "{} tiles, the limit is {max_grid}", c.grid(p.m, p.n));
    let w = prepare(&wgsl, p, c, false, Variant::WgslOverride, 3).expect("prepare");
    w.check().expect("every tile computed");
}

/// What the WGSL form refuses, each with its typed error and before any pipeline is
/// created (the backend's pipeline-creation time does not move).
#[test]
fn wgsl_refusals() {
    let Some(wgsl) = wgsl_or_skip("sgemm::wgsl_refusals") else { return };
    let p = SgemmProblem { m: 64, n: 64, k: 64, f16_inputs: false };
    let before = wgsl.pipeline_ms_total();
    let limit = wgsl.info().limits.static_shared_max;
    for variant in [Variant::WgslLiteral, Variant::WgslOverride] {
        // 64 x (128 + 4) + 64 x 128 floats = 66560 B: past any adapter's 48 KB or less.
        match prepare(&wgsl, p, cfg(128, 128, 64, 1), false, variant, 1).map(|_| ()) {
            Err(Error::SharedMemoryLimit { requested: 66560, kind: "static", limit: l, .. }) => {
                assert_eq!(l, limit as u64)
            }
            other => panic!("{variant} 128x128x64: {other:?}"),
        }
        // Three stages: the launch-sized kernel takes them, the WGSL form does not.
        match prepare(&wgsl, p, cfg(64, 64, 8, 3), false, variant, 1).map(|_| ()) {
            Err(Error::InvalidConfig { reason, .. }) => assert!(reason.contains("1 or 2 stages"), "{reason}"),
            other => panic!("{variant} 3 stages: {other:?}"),
        }
        // Two stages with more than 8 chunks of A per invocation in registers.
        match prepare(&wgsl, p, cfg(32, 32, 32, 2), false, variant, 1).map(|_| ()) {
            Err(Error::InvalidConfig { reason, .. }) => assert!(reason.contains("registers"), "{reason}"),
            other => panic!("{variant} 32x32x32 s2: {other:?}"),
        }
        // 16 rows per thread: the launch-sized CUDA kernel only.
        match prepare(&wgsl, p, cfg(64, 64, 8, 1).with_tm(16), false, variant, 1).map(|_| ()) {
            Err(Error::Unsupported { what, .. }) => assert!(what.contains("tm = 16"), "{what}"),
            other => panic!("{variant} tm 16: {other:?}"),
        }
        // f16 inputs: refused only where the adapter has no f16 (lavapipe has it; the f16
        // form is verified in `wgsl` above).
        if !wgsl.has_f16() {
            let f16 = SgemmProblem { f16_inputs: true, ..p };
            match prepare(&wgsl, f16, cfg(64, 64, 16, 2), false, variant, 1).map(|_| ()) {
                Err(Error::Unsupported { what, .. }) => assert!(what.contains("no SHADER_F16"), "{what}"),
                other => panic!("{variant} f16: {other:?}"),
            }
        }
        // Past the adapter's invocations per workgroup, where it allows fewer than the 1024
        // the form itself allows (lavapipe and most GPUs allow 1024: nothing to refuse).
        let threads_limit = wgsl.info().limits.max_threads_per_block;
        if threads_limit < 1024 {
            match prepare(&wgsl, p, cfg(256, 256, 4, 1), false, variant, 1).map(|_| ()) {
                Err(Error::BlockTooLarge { requested: 1024, limit, .. }) => assert_eq!(limit, threads_limit),
                other => panic!("{variant} 1024 invocations: {other:?}"),
            }
        }
    }
    assert_eq!(wgsl.pipeline_ms_total(), before, "no pipeline was created for a refused config");
}

/// Every entry of the SGEMM image that the CPU backend can run, each reached the way a
/// user reaches it (a config, `fixed`, f16 inputs, or an ablation name), on an odd shape,
/// and checked: the compiled-in depths, the 16-row entries, the compiled-in tile and the
/// ablations alike, and the tensor-map entries through the CPU backend's tensor maps (the
/// shape's k is odd: its rows are padded by `sgemm_pack`, which runs with them).
#[test]
fn every_entry_runs_on_the_cpu_backend() {
    use dynsmem::host::device::sgemm::{FIXED_128X128X16S2, KERNELS};
    use dynsmem::host::families::sgemm::{HostInputs, prepare_entry};
    let cpu = CpuBackend::new();
    let mut ran = Vec::new();
    for entry in KERNELS.iter().map(|e| e.name) {
        if entry == "sgemm_pack" || entry == "sgemm_split_sum" {
            continue;
        }
        let tm = if entry.contains("_tm16") {
            16
        } else if entry.contains("_tm4") {
            4
        } else {
            8
        };
        let bk = [("_bk8", 8), ("_bk16", 16), ("_bk32", 32), ("_bk64", 64)]
            .iter()
            .find(|(s, _)| entry.contains(s))
            .map_or(8, |&(_, bk)| bk);
        let f16_inputs = entry.starts_with("hgemm");
        let fixed = entry.contains("128x128");
        let sk_bn = [("_sk_n64", 64), ("_sk_n32", 32), ("_sk", 128)].iter().find(|(s, _)| entry.contains(s));
        let config = match (fixed, entry.contains("_tma"), sk_bn) {
            (true, ..) => FIXED_128X128X16S2,
            (_, true, _) => SgemmConfig::tma(32, bk, 2),
            (_, _, Some(&(_, bn))) => SgemmConfig::streamk(32, bn, 2, 1),
            _ => cfg(32, 16, bk.max(8 * f16_inputs as u32), 2).with_tm(tm),
        };
        let problem = SgemmProblem { m: 70, n: 40, k: 37, f16_inputs };
        let w = prepare_entry(
            &cpu,
            problem,
            config,
            fixed,
            Variant::LaunchSized,
            || std::sync::Arc::new(HostInputs::new(&problem, 7)),
            Some(entry),
        )
        .unwrap_or_else(|e| panic!("{entry}: {e}"));
        assert_eq!(w.kernel_name(), entry, "config {config:?} reaches another entry");
        w.run().unwrap_or_else(|e| panic!("{entry}: {e}"));
        w.check().unwrap_or_else(|e| panic!("{entry}: {e}"));
        ran.push(entry);
    }
    common::note(&format!("{} SGEMM entries verified on the CPU backend: {ran:?}", ran.len()));
    assert!(ran.len() >= 23, "{ran:?}");
}

/// The check has teeth: at k = 4096 the inputs are exact integers, so the reference is
/// exact and so is every correct result, in any summation order; a result that leaves
/// out one of the 4096 terms (first, middle or last) fails the check in every entry of C,
/// while the same sums taken in another order pass.
#[test]
fn the_check_fails_when_one_k_term_of_4096_is_dropped() {
    use dynsmem::host::families::sgemm::{ALPHA, BETA};
    let cpu = CpuBackend::new();
    let problem = SgemmProblem { m: 8, n: 8, k: 4096, f16_inputs: false };
    let w = prepare(&cpu, problem, cfg(16, 16, 8, 2), false, Variant::LaunchSized, 3).expect("prepare");
    let words = |b| cpu.dtoh(b).expect("read back").into_iter().map(f32::from_bits).collect::<Vec<f32>>();
    let (a, b, c) = (words(w.a()), words(w.b()), w.c_initial().to_vec());
    let (m, n, k) = (8usize, 8usize, 4096usize);
    // C as a kernel computes it in f32 (FMA chains), without term `drop`, in order `rev`.
    let result = |drop: Option<usize>, rev: bool| -> Vec<f32> {
        let mut out = vec![0.0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut acc = 0.0f32;
                for q in 0..k {
                    let p = if rev { k - 1 - q } else { q };
                    if Some(p) != drop {
                        acc = a[i * k + p].mul_add(b[p * n + j], acc);
                    }
                }
                out[i * n + j] = ALPHA.mul_add(acc, BETA * c[i * n + j]);
            }
        }
        out
    };
    w.compare(&result(None, false)).expect("the exact result passes");
    w.compare(&result(None, true)).expect("another summation order passes");
    for drop in [0, 2047, 4095] {
        match w.compare(&result(Some(drop), false)) {
            Err(Error::Mismatch(mm)) => assert_eq!(mm.count, m * n, "term {drop} dropped: {mm}"),
            other => panic!("term {drop} of 4096 dropped: the check passed ({other:?})"),
        }
    }
}
