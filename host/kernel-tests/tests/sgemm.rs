//! GEMM, `C = alpha A B + beta C` (device-kernels/src/sgemm/mod.rs, pack.rs, tma.rs, and the
//! stream-K schedule device-kernels/src/streamk.rs): every entry of `sgemm::KERNELS`, launched
//! as the host launches it (`host/src/families/sgemm/workload.rs`): the k-group entries at
//! launch-time depths (unrolled by 8 then 4, or by 4 only) and compiled-in ones (8 to 64, 16
//! rows a thread), the compiled-in 128 x 128 tile, the f16 row-major kernel, the tensor-map
//! entries through CPU tensor maps (as `tensor_map_2d` of the CPU backend builds them) with
//! `sgemm_pack` padding rows that are not 16 bytes, and stream-K with its fix-up. Shapes that
//! do not divide the tiles, depths that are not a multiple of the tile depth or shorter than
//! one tile, one-tile and skinny problems, every copy path of the k-group kernel (warp units
//! of A and 16-byte chunks of B inside the matrix, the same predicated at its edges, words of
//! B where its rows are not 16-byte aligned, the element gather), one to four stages,
//! split-K with an empty split, beta 0 over a `C` of NaN (never read).
//!
//! Inputs are small integers (f16: quarters), so every partial sum, in any order and with
//! any FMA contraction, is exact in f32 and every result must equal the f64 reference
//! exactly: one dropped, doubled or misplaced product (at least 1/16 in size) fails.

use dynsmem_cpu::CpuSchedule;
use dynsmem_cpu::rng::SplitMix64;
use dynsmem_kernel_tests::*;
use dynsmem_kernels::gpu::host::{Fault, FaultKind, HostTensorMap};
use dynsmem_kernels::sgemm::pack::{PACK_SPAN, PACK_THREADS, pack_blocks, padded_ld};
use dynsmem_kernels::sgemm::split::{
    SUM_GROUPS, SUM_LANES, SUM_PER_THREAD, SUM_THREADS, sum_blocks, sum_bytes, workspace_floats,
};
use dynsmem_kernels::sgemm::{FIXED_128X128X16S2, KERNELS, MAX_SPLITS, SgemmConfig};
use dynsmem_kernels::streamk::{Segment, StreamK};

/// `(m, n, k)`.
type Shape = (u32, u32, u32);

/// alpha of every draw: not 1, so a kernel that drops it fails.
const ALPHA: f32 = 1.5;
/// beta of most draws (not 0 or 1: `C` is read and scaled); draws with beta 0 give a `C` of
/// NaN, which a kernel that reads it turns into NaN results.
const BETA: f32 = -0.5;

const fn cfg(bm: u32, bn: u32, bk: u32, stages: u32) -> SgemmConfig {
    SgemmConfig::new(bm, bn, bk, stages)
}

/// One problem: the inputs, and `C` as the reference reads it.
struct Gemm {
    shape: Shape,
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
    beta: f32,
}

/// `len` nonzero integers of magnitude at most `mag`, times `unit`.
fn ints(len: usize, seed: u64, mag: u32, unit: f32) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    (0..len).map(|_| rng.signed_nonzero(mag) as f32 * unit).collect()
}

impl Gemm {
    /// Integer inputs up to 4 in magnitude (f32 entries; `unit` 1) or up to 4 in quarters
    /// (f16: 16 magnitudes, mantissas of several bits): every product a multiple of 1/16 and
    /// every sum below 2^21, exact in f32 for the depths drawn here (k <= 1100).
    fn new((m, n, k): Shape, seed: u64, beta: f32, unit: f32) -> Gemm {
        let (m, n, k) = (m as usize, n as usize, k as usize);
        let mag = if unit == 1.0 { 4 } else { 16 };
        let c = if beta == 0.0 { vec![f32::NAN; m * n] } else { ints(m * n, seed + 2, 4, 1.0) };
        Gemm {
            shape: (m as u32, n as u32, k as u32),
            a: ints(m * k, seed, mag, unit),
            b: ints(k * n, seed + 1, mag, unit),
            c,
            beta,
        }
    }

    /// Every entry of `alpha A B + beta C` in f64 (with beta 0, `C` is not read: zeros).
    fn want(&self) -> Vec<f64> {
        let (m, n, k) = (self.shape.0 as usize, self.shape.1 as usize, self.shape.2 as usize);
        let zeros = vec![0.0; m * n];
        let c = if self.beta == 0.0 { &zeros } else { &self.c };
        (0..m * n)
            .map(|e| dynsmem_reference::gemm_entry((&self.a, &self.b, c), (n, k), (ALPHA, self.beta), (e / n, e % n)).0)
            .collect()
    }

    /// `got` equals the reference exactly (see the module documentation).
    #[track_caller]
    fn check(&self, what: &str, got: &[f32]) {
        assert_close(what, got, &self.want(), None, Tol::EXACT);
    }
}

fn dims(grid: u64, config: &SgemmConfig, elem_bytes: u32) -> LaunchDims {
    let shared_bytes = config.shared_bytes(elem_bytes).expect("layout");
    LaunchDims { grid: u32::try_from(grid).expect("grid"), block: config.threads(), shared_bytes, cluster: 1 }
}

/// The twelve arguments every multiply entry takes after its `a` and `b`: `c`, the shape at
/// depth `k`, alpha and beta, and the tile.
fn tail<'a>(c: &'a CpuMem, g: &Gemm, k: u32, config: &SgemmConfig) -> [Arg<'a>; 10] {
    let (m, n, _) = g.shape;
    let SgemmConfig { bm, bn, bk, stages, .. } = *config;
    [
        Arg::Mem(c),
        Arg::U32(m),
        Arg::U32(n),
        Arg::U32(k),
        Arg::F32(ALPHA),
        Arg::F32(g.beta),
        Arg::U32(bm),
        Arg::U32(bn),
        Arg::U32(bk),
        Arg::U32(stages),
    ]
}

/// Runs a multiply entry as the host does: under split-K, the splits store their parts in a
/// workspace (of NaN: a slice entry a split leaves unwritten shows), then `sgemm_split_sum`
/// adds the slices and `beta C` into `C`.
fn multiply(
    cpu: &Cpu,
    name: &str,
    config: &SgemmConfig,
    elem_bytes: u32,
    (a, b): (&CpuMem, &CpuMem),
    g: &Gemm,
) -> Vec<f32> {
    let e = entry(KERNELS, name);
    let c = mem(&g.c);
    let (m, n, k) = g.shape;
    let ws = mem(&vec![f32::NAN; workspace_floats(m, n, config.splits) as usize]);
    let out = if config.splits > 1 { &ws } else { &c };
    let mut args = vec![Arg::Mem(a), Arg::Mem(b)];
    args.extend(tail(out, g, k, config));
    launch(cpu, e, dims(config.launch_grid(m, n), config, elem_bytes), &args);
    if config.splits > 1 {
        split_sum(cpu, &ws, &c, g.shape, config.splits, g.beta);
    }
    c.to_vec()
}

/// `sgemm_split_sum` over the `splits` slices of `ws` into `c`, as the host launches it.
fn split_sum(cpu: &Cpu, ws: &CpuMem, c: &CpuMem, (m, n, _): Shape, splits: u32, beta: f32) {
    let dims = LaunchDims {
        grid: sum_blocks(m, n) as u32,
        block: SUM_THREADS,
        shared_bytes: sum_bytes().unwrap(),
        cluster: 1,
    };
    let args = [Arg::Mem(ws), Arg::Mem(c), Arg::U32(m), Arg::U32(n), Arg::U32(splits), Arg::F32(beta)];
    launch(cpu, entry(KERNELS, "sgemm_split_sum"), dims, &args);
}

/// `(entry, config, shape, beta)`: the k-group entries (f32 pointers).
type PointerCase = (&'static str, SgemmConfig, Shape, f32);

/// Threads are `bm / tm * bn / 8`; "units" are the warp-wide copies of 16 rows of A (whole
/// warps, bk a multiple of 8 and bm of 16), "chunks" B's 16-byte copies (n a multiple of 4,
/// threads a multiple of bn / 4), "words" B's word copies (n not a multiple of 4, threads a
/// multiple of bn), "gather" the element-by-element path.
const POINTER_CASES: &[PointerCase] = &[
    // One element: one tile, k shorter than a tile, one stage, gathers, scalar stores.
    ("sgemm_f32", cfg(16, 16, 4, 1), (1, 1, 1), BETA),
    // bk 12 at launch (one step of 8, one of 4), three stages (the late refill), 29 = 12 +
    // 12 + 5, ragged m and n.
    ("sgemm_f32", cfg(32, 16, 12, 3), (33, 17, 29), BETA),
    // 32 threads: A's units inside and predicated at m and k, B's chunks (two rows a thread:
    // the one-at-a-time loop) inside and predicated at n; vector stores (n % 4 == 0).
    ("sgemm_f32", cfg(64, 32, 8, 2), (70, 40, 37), BETA),
    // bk 40 at launch (five steps of 8), four stages over two k-tiles (empty groups in the
    // prologue), B's chunks ten rows a thread (two steps of four, then two); m one whole tile.
    ("sgemm_f32", cfg(64, 32, 40, 4), (64, 36, 50), BETA),
    // 64 threads, two warps over eight units of A: two units a pass, two passes; whole tiles.
    ("sgemm_f32", cfg(128, 32, 16, 2), (128, 64, 48), BETA),
    // Whole warps (32 threads) but bk 12, not a multiple of 8: A gathered.
    ("sgemm_f32", cfg(64, 32, 12, 2), (66, 40, 30), BETA),
    // Whole warps (96 threads) and bk 8 but bm 24, not a multiple of 16: A gathered.
    ("sgemm_f32_bk8", cfg(24, 256, 8, 2), (30, 260, 20), BETA),
    // A single unit of A (no second unit in the pass); B's chunks eight rows a thread.
    ("sgemm_f32_bk8", cfg(16, 128, 8, 2), (16, 132, 24), BETA),
    // The same with n not a multiple of 4 and threads not a multiple of bn: B gathered.
    ("sgemm_f32_bk8", cfg(16, 128, 8, 3), (21, 130, 20), BETA),
    // 40 threads, five rows of them over B's 16 rows: the last thread row has none (its
    // four-row step stops at bk), A gathered (not whole warps).
    ("sgemm_f32_bk16", cfg(80, 32, 16, 2), (85, 36, 33), BETA),
    // beta 0 over a C of NaN: C is not read.
    ("sgemm_f32_bk16", cfg(32, 32, 16, 2), (40, 24, 16), 0.0),
    // 16 threads, bn 16, n % 4 != 0: B's words, inside and at the edges; depth 70 = 2 x 32 + 6.
    ("sgemm_f32_bk32", cfg(64, 16, 32, 3), (70, 19, 70), BETA),
    // Split-K: three splits of nine k-tiles into the workspace, summed with beta C, at a
    // ragged n (m * n odd: the sum's scalar path).
    ("sgemm_f32", cfg(32, 16, 8, 2).with_splits(3), (17, 33, 65), BETA),
    // Four splits of five k-tiles (two each: the last split has none and stores zeros), one
    // stage.
    ("sgemm_f32_bk8", cfg(16, 16, 8, 1).with_splits(4), (20, 12, 40), BETA),
    // Split-K with beta 0 over a C of NaN: the sum does not read C.
    ("sgemm_f32_tm16_bk16", cfg(32, 32, 16, 2).with_tm(16).with_splits(2), (35, 20, 50), 0.0),
    // 4 rows a thread: 8 threads at bk 12 at launch (A gathered: not whole warps).
    ("sgemm_f32_tm4", cfg(16, 16, 12, 2).with_tm(4), (19, 21, 30), BETA),
    // 32 threads (one warp) of 4 rows: A's units (two, bm 32), B's chunks; ragged m, n.
    ("sgemm_f32_tm4_bk8", cfg(32, 32, 8, 3).with_tm(4), (37, 36, 41), BETA),
    // 128 threads (64 x 64): four units of A, one pass; B's words (n % 4 != 0).
    ("sgemm_f32_tm4_bk16", cfg(64, 64, 16, 2).with_tm(4), (70, 65, 40), BETA),
    // The skinny, deep shape split-K is for: one tile, 24 splits of 33 k-tiles (two each but
    // the last nine, which have one), beta 0.
    ("sgemm_f32_tm4_bk32", cfg(32, 32, 32, 3).with_tm(4).with_splits(24), (20, 12, 1050), 0.0),
    ("sgemm_f32_tm4_bk32", cfg(64, 32, 32, 4).with_tm(4).with_splits(5), (64, 32, 200), BETA),
    // 16 rows a thread, bk 12 at launch.
    ("sgemm_f32_tm16", cfg(32, 16, 12, 2).with_tm(16), (45, 30, 30), BETA),
    ("sgemm_f32_tm16_bk8", cfg(128, 16, 8, 3).with_tm(16), (130, 17, 23), BETA),
    // 32 threads of 16 rows: A's units (four, one warp), unrolled by 16.
    ("sgemm_f32_tm16_bk16", cfg(64, 64, 16, 2).with_tm(16), (70, 66, 40), BETA),
    ("sgemm_f32_tm16_bk32", cfg(32, 32, 32, 3).with_tm(16), (33, 31, 33), BETA),
    // bk 64: two 32-steps a tile; 100 = 64 + 36.
    ("sgemm_f32_tm16_bk64", cfg(32, 16, 64, 2).with_tm(16), (33, 17, 100), BETA),
    ("sgemm_f32_tm16_bk32_u8", cfg(32, 16, 32, 2).with_tm(16), (20, 20, 45), BETA),
    ("sgemm_f32_tm16_bk32_u16", cfg(32, 32, 32, 4).with_tm(16), (40, 36, 70), BETA),
    // Unrolled by 4 only, bk 12 at launch.
    ("sgemm_f32_unroll4", cfg(16, 16, 12, 2), (19, 21, 30), BETA),
    // The compiled-in 128 x 128 x 16 tile: 256 threads, eight warps over eight units of A
    // (one pass, no second unit); B's chunks, predicated at n.
    ("sgemm_f32_128x128x16s2", FIXED_128X128X16S2, (136, 132, 20), BETA),
];

#[test]
fn the_k_group_entries_match_the_reference() {
    let cpu = cpu();
    for (i, &(name, config, shape, beta)) in POINTER_CASES.iter().enumerate() {
        assert!(config.fits(4), "{name} {config:?}");
        let g = Gemm::new(shape, 10 * i as u64, beta, 1.0);
        let got = multiply(&cpu, name, &config, 4, (&mem(&g.a), &mem(&g.b)), &g);
        g.check(&format!("{name} {config:?} at {shape:?}"), &got);
    }
}

/// The bits of the f16 `v` (a normal half, exactly).
fn f16_bits(v: f32) -> u16 {
    let bits = v.to_bits();
    let exp = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    assert!((1..31).contains(&exp) && bits & 0x1fff == 0, "{v} is no normal f16");
    ((bits >> 16) & 0x8000) as u16 | (exp as u16) << 10 | ((bits >> 13) & 0x3ff) as u16
}

/// `(config, shape, beta)`: `hgemm_f16_f32`, 16-byte chunks of 8 halves.
const HALF_CASES: &[(SgemmConfig, Shape, f32)] = &[
    // k and n not multiples of 8: every tile gathered; one element.
    (cfg(16, 16, 8, 2), (1, 1, 1), BETA),
    (cfg(16, 16, 8, 2), (17, 33, 65), BETA),
    // Chunk-aligned rows: inside tiles by asynchronous chunks, edge tiles (m = 70, and the
    // last k-tile: 40 = 16 + 16 + 8) gathered.
    (cfg(32, 32, 16, 3), (70, 64, 40), BETA),
    // One stage, k shorter than a tile, beta 0.
    (cfg(16, 64, 8, 1), (5, 72, 5), 0.0),
    // Split-K, two splits over five k-tiles.
    (cfg(16, 16, 8, 2).with_splits(2), (24, 16, 40), BETA),
];

#[test]
fn the_f16_entry_matches_the_reference() {
    let cpu = cpu();
    for (i, &(config, shape, beta)) in HALF_CASES.iter().enumerate() {
        assert!(config.fits(2), "{config:?}");
        // Quarters up to 4: exact halves, products multiples of 1/16.
        let g = Gemm::new(shape, 500 + 10 * i as u64, beta, 0.25);
        let half = |v: &[f32]| mem(&v.iter().map(|&x| f16_bits(x)).collect::<Vec<u16>>());
        let got = multiply(&cpu, "hgemm_f16_f32", &config, 2, (&half(&g.a), &half(&g.b)), &g);
        g.check(&format!("hgemm_f16_f32 {config:?} at {shape:?}"), &got);
    }
}

/// A CPU tensor map of the `rows x cols` f32 matrix in `buf`, rows `ld` floats apart, copied
/// in boxes of `boxed` (columns, rows), under the checks `tensor_map_2d` of the CPU backend
/// makes (rows 16-byte aligned, boxes 1 to 256 a side, the matrix inside the buffer).
fn tensor_map(buf: &CpuMem, (rows, cols, ld): (u32, u32, u32), boxed: [u32; 2]) -> CpuMem {
    let bytes = (rows as usize - 1) * ld as usize * 4 + cols as usize * 4;
    assert!(rows >= 1 && cols >= 1 && ld >= cols && ld.is_multiple_of(4) && bytes <= buf.bytes().len());
    assert!(boxed.iter().all(|b| (1..=256).contains(b)), "box {boxed:?}");
    let map = HostTensorMap {
        base: buf.addr(),
        dims: [cols as u64, rows as u64],
        row_bytes: ld as u64 * 4,
        box_dims: boxed,
        elem_bytes: 4,
    };
    mem(&map.to_words())
}

/// Launches `sgemm_pack` for the operands whose rows are not 16-byte aligned (A `m x k`, B
/// `k x n`), as the host does, into buffers of NaN (the padding must never be read), and
/// returns A and B as the tensor maps read them: `(buffer, ld)` each.
fn padded(cpu: &Cpu, g: &Gemm, (a, b): (CpuMem, CpuMem)) -> ((CpuMem, u32), (CpuMem, u32)) {
    let (m, n, k) = g.shape;
    let (pad_a, pad_b) = (!k.is_multiple_of(4), !n.is_multiple_of(4));
    if !pad_a && !pad_b {
        return ((a, k), (b, n));
    }
    let nan = |len: u32| mem(&vec![f32::NAN; len as usize]);
    let a_out = if pad_a { nan(m * padded_ld(k)) } else { nan(1) };
    let b_out = if pad_b { nan(k * padded_ld(n)) } else { nan(1) };
    let (a_rows, b_rows) = (if pad_a { m } else { 0 }, if pad_b { k } else { 0 });
    let grid = pack_blocks(a_rows, k) + pack_blocks(b_rows, n);
    let args = [
        Arg::Mem(&a),
        Arg::Mem(&a_out),
        Arg::U32(a_rows),
        Arg::U32(k),
        Arg::U32(padded_ld(k)),
        Arg::Mem(&b),
        Arg::Mem(&b_out),
        Arg::U32(b_rows),
        Arg::U32(n),
        Arg::U32(padded_ld(n)),
    ];
    let dims = LaunchDims { grid: grid as u32, block: PACK_THREADS, shared_bytes: 0, cluster: 1 };
    launch(cpu, entry(KERNELS, "sgemm_pack"), dims, &args);
    let a = if pad_a { (a_out, padded_ld(k)) } else { (a, k) };
    let b = if pad_b { (b_out, padded_ld(n)) } else { (b, n) };
    (a, b)
}

/// The tensor maps of A (`k` x `m`, box `bk` x `bm`) and B (`n` x `k`, box `bn` x `bk`), over
/// padded copies where the rows need them; the buffers they read are returned with them.
fn maps(cpu: &Cpu, g: &Gemm, config: &SgemmConfig) -> [CpuMem; 4] {
    let (m, n, k) = g.shape;
    let ((a, lda), (b, ldb)) = padded(cpu, g, (mem(&g.a), mem(&g.b)));
    let a_map = tensor_map(&a, (m, k, lda), [config.bk, config.bm]);
    let b_map = tensor_map(&b, (k, n, ldb), [config.bn, config.bk]);
    [a_map, b_map, a, b]
}

/// `(entry, config, shape, beta)`: `sgemm_f32_tma_bk*` (one block per tile, or split-K).
const TMA_CASES: &[PointerCase] = &[
    // One element: k and n padded (rows of 1 float), k shorter than a tile.
    ("sgemm_f32_tma_bk32", SgemmConfig::tma(8, 32, 2), (1, 1, 1), BETA),
    // Both padded (65, 133), three stages over three k-tiles, two column tiles, ragged m.
    ("sgemm_f32_tma_bk32", SgemmConfig::tma(16, 32, 3), (17, 133, 65), BETA),
    // One k-tile under four stages (the prologue stops at the k-tiles); aligned, no padding.
    ("sgemm_f32_tma_bk64", SgemmConfig::tma(8, 64, 4), (9, 128, 64), BETA),
    // Four k-tiles of 64 (200 = 3 x 64 + 8) over three stages; A padded only; beta 0.
    ("sgemm_f32_tma_bk64", SgemmConfig::tma(24, 64, 3), (50, 36, 202), 0.0),
    // Split-K: three splits of four k-tiles (two, two, none) into the workspace, at ragged m.
    ("sgemm_f32_tma_bk32", SgemmConfig::tma(16, 32, 2).with_splits(3), (20, 140, 100), BETA),
];

#[test]
fn the_tensor_map_entries_match_the_reference() {
    let cpu = cpu();
    for (i, &(name, config, shape, beta)) in TMA_CASES.iter().enumerate() {
        assert!(config.fits(4), "{name} {config:?}");
        let g = Gemm::new(shape, 900 + 10 * i as u64, beta, 1.0);
        let [a_map, b_map, _a, _b] = maps(&cpu, &g, &config);
        let got = multiply(&cpu, name, &config, 4, (&a_map, &b_map), &g);
        g.check(&format!("{name} {config:?} at {shape:?}"), &got);
    }
}

/// Runs a stream-K entry on `blocks` blocks (its workspace: partials of NaN, so that a piece
/// read before it is written shows; counters zero) and returns `C` and the counters after.
fn streamk(cpu: &Cpu, name: &str, config: &SgemmConfig, blocks: u32, g: &Gemm) -> (Vec<f32>, Vec<u32>) {
    let (m, n, _) = g.shape;
    let [a_map, b_map, _a, _b] = maps(cpu, g, config);
    let (floats, counters) = config.sk_workspace(m, n, blocks);
    let partials = mem(&vec![f32::NAN; floats as usize]);
    let counters = zeros::<u32>(counters as usize);
    let c = mem(&g.c);
    let mut args = vec![Arg::Mem(&a_map), Arg::Mem(&b_map)];
    args.extend(tail(&c, g, g.shape.2, config));
    args.extend([Arg::Mem(&partials), Arg::Mem(&counters)]);
    launch(cpu, entry(KERNELS, name), dims(blocks as u64, config, 4), &args);
    (c.to_vec(), counters.to_vec())
}

/// `(entry, config, shape, blocks, beta)`: `sgemm_f32_sk*`, on `blocks` blocks (the host's
/// `sk_grid`: `sk` per multiprocessor, at most one per unit).
type StreamKCase = (&'static str, SgemmConfig, Shape, u32, f32);

/// A stream-K config (`sk` only sizes the host's grid; the draws give theirs).
const fn sk(bm: u32, bn: u32, stages: u32) -> SgemmConfig {
    SgemmConfig::streamk(bm, bn, stages, 1)
}

/// The schedule each draw has is asserted in `the_stream_k_draws_have_the_schedules_they_name`.
fn streamk_cases() -> Vec<StreamKCase> {
    vec![
        // One unit, one block: a whole tile; both operands padded.
        ("sgemm_f32_sk", sk(8, 128, 2), (1, 1, 1), 1, BETA),
        // Four tiles of three k-tiles over five blocks: tiles 0 and 1 whole, tile 2 split over
        // blocks 2 and 3, block 3 ending in tile 3 (its second slot), split with block 4.
        ("sgemm_f32_sk_n64", sk(16, 64, 3), (17, 70, 65), 5, BETA),
        // Seven tiles of three k-tiles on three blocks: three data-parallel tiles, then four
        // stream-K tiles: the first and last whole to one block, the middle two split.
        ("sgemm_f32_sk_n32", sk(8, 32, 2), (50, 30, 96), 3, BETA),
        // One tile of four k-tiles on four blocks of one unit each (fewer than the four
        // stages' prologue): four pieces.
        ("sgemm_f32_sk_n32", sk(8, 32, 4), (1, 1, 100), 4, BETA),
        // Two tiles of 11 k-tiles on seven blocks: three or four pieces a tile, blocks holding
        // a piece of each; beta 0.
        ("sgemm_f32_sk_n64", sk(8, 64, 3), (9, 30, 330), 7, 0.0),
        // Six tiles on two blocks: four data-parallel (two each), then two stream-K tiles whole
        // to one block each; 128 columns, 24 rows, four stages running across segments.
        ("sgemm_f32_sk", sk(24, 128, 4), (70, 200, 37), 2, BETA),
        // Many blocks of one or two units over skinny tiles (n = 5): most tiles split.
        ("sgemm_f32_sk", sk(8, 128, 2), (40, 5, 70), 11, BETA),
    ]
}

#[test]
fn the_stream_k_entries_match_the_reference_and_reset_their_counters() {
    let cpu = cpu();
    for (i, (name, config, shape, blocks, beta)) in streamk_cases().into_iter().enumerate() {
        assert!(config.fits(4), "{name} {config:?}");
        let g = Gemm::new(shape, 1300 + 10 * i as u64, beta, 1.0);
        let (got, counters) = streamk(&cpu, name, &config, blocks, &g);
        let what = format!("{name} {config:?} at {shape:?} on {blocks} blocks");
        g.check(&what, &got);
        assert!(counters.iter().all(|&c| c == 0), "{what}: counters left {counters:?}");
    }
}

/// The stream-K draws above have the schedules their comments name: split tiles (with a
/// block's second slot), data-parallel tiles, blocks with fewer units than the prologue.
#[test]
fn the_stream_k_draws_have_the_schedules_they_name() {
    let cases = streamk_cases();
    let sched = |i: usize| {
        let (_, config, (m, n, k), blocks, _) = cases[i];
        assert!(blocks as u64 <= config.grid(m, n) * config.k_tiles(k) as u64);
        config.schedule(m, n, k, blocks)
    };
    let split = |s: &StreamK, t: u32| t >= s.dp_tiles && s.pieces(t).1 > s.pieces(t).0;
    let s = sched(1);
    assert_eq!((s.tiles, s.k_tiles, s.dp_tiles), (4, 3, 0));
    assert_eq!((split(&s, 0), split(&s, 1), s.pieces(2), s.pieces(3)), (false, false, (2, 3), (3, 4)));
    assert_eq!((s.slot(3, 2), s.slot(3, 3)), (6, 7));
    let s = sched(2);
    assert_eq!((s.tiles, s.dp_tiles), (7, 3));
    assert_eq!([3, 4, 5, 6].map(|t| split(&s, t)), [false, true, true, false], "{s:?}");
    let s = sched(3);
    assert_eq!((s.tiles, s.k_tiles, s.pieces(0)), (1, 4, (0, 3)));
    let s = sched(4);
    assert!(s.pieces(0).1 - s.pieces(0).0 >= 2 && split(&s, 1) && s.pieces(0).1 == s.pieces(1).0, "{s:?}");
    let s = sched(5);
    assert_eq!((s.tiles, s.dp_tiles), (6, 4));
    assert!(!split(&s, 4) && !split(&s, 5) && s.segment(0, 2).is_some_and(|seg| s.whole(&seg)), "{s:?}");
    let s = sched(6);
    assert!((0..s.tiles).filter(|&t| split(&s, t)).count() >= 3, "{s:?}");
}

/// Stream-K's sum of pieces has a fixed order: with float inputs (not exact), launches whose
/// blocks run in other orders (other seeds of the fast executor, and the stress executor:
/// an OS thread per kernel thread, three blocks at a time, delays at synchronisation points)
/// give the same bits, within the summation bound of the reference, and leave the counters
/// zero.
#[test]
fn stream_k_results_do_not_depend_on_which_block_sums_a_tile() {
    let (config, shape, blocks) = (sk(16, 64, 2), (30, 100, 300), 9);
    let (m, n, k) = shape;
    let mut rng = SplitMix64::new(77);
    let mut uniform = |len: u32| (0..len).map(|_| 2.0 * rng.next_f32() - 1.0).collect::<Vec<f32>>();
    let g = Gemm { shape, a: uniform(m * k), b: uniform(k * n), c: uniform(m * n), beta: BETA };
    let fast = |seed| Schedule { seed, ..Schedule::fast() };
    let stress = |seed| Schedule { mode: CpuSchedule::Stress, seed, ..Schedule::fast() };
    let runs: Vec<Vec<f32>> = [fast(1), fast(2), fast(3), fast(4), stress(5), stress(6)]
        .into_iter()
        .map(|schedule| {
            let (c, counters) = streamk(&Cpu::new(schedule), "sgemm_f32_sk_n64", &config, blocks, &g);
            assert!(counters.iter().all(|&c| c == 0), "{schedule:?}: counters left {counters:?}");
            c
        })
        .collect();
    for r in &runs[1..] {
        assert_same("stream-K under other block orders", r, &runs[0]);
    }
    let (want, scale): (Vec<f64>, Vec<f64>) = (0..(m * n) as usize)
        .map(|e| {
            dynsmem_reference::gemm_entry(
                (&g.a, &g.b, &g.c),
                (n as usize, k as usize),
                (ALPHA, BETA),
                (e / n as usize, e % n as usize),
            )
        })
        .unzip();
    // k FMAs in f32, a sum of at most `blocks` pieces, alpha and beta: (k + blocks + 2) ulp of
    // the sum of magnitudes.
    let rel = (k + blocks + 2) as f64 * f32::EPSILON as f64;
    assert_close("stream-K with float inputs", &runs[0], &want, Some(&scale), Tol { abs: 0.0, rel });
}

/// `sgemm_pack` alone: rows longer than a span (a whole span, then a part), rows of one
/// float, only one operand padded (the other's rows 0), and a grid with a block past both
/// operands' spans (it copies nothing). The padding is never written: it keeps its NaN.
#[test]
fn the_pack_copies_rows_and_leaves_the_padding() {
    let cpu = cpu();
    let pack = entry(KERNELS, "sgemm_pack");
    // (a_rows, a_cols, b_rows, b_cols, extra blocks)
    let cases: &[(u32, u32, u32, u32, u64)] = &[(3, 2 * PACK_SPAN + 5, 4, 1, 0), (0, 7, 5, 6, 1), (2, 3, 0, 9, 2)];
    for (i, &(ar, ac, br, bc, extra)) in cases.iter().enumerate() {
        let (a, b) = (ints((ar * ac) as usize, 40 + i as u64, 4, 1.0), ints((br * bc) as usize, 50 + i as u64, 4, 1.0));
        let (lda, ldb) = (padded_ld(ac), padded_ld(bc));
        let (a_in, b_in) = (mem(&a), mem(&b));
        let a_out = mem(&vec![f32::NAN; (ar * lda).max(1) as usize]);
        let b_out = mem(&vec![f32::NAN; (br * ldb).max(1) as usize]);
        let args = [
            Arg::Mem(&a_in),
            Arg::Mem(&a_out),
            Arg::U32(ar),
            Arg::U32(ac),
            Arg::U32(lda),
            Arg::Mem(&b_in),
            Arg::Mem(&b_out),
            Arg::U32(br),
            Arg::U32(bc),
            Arg::U32(ldb),
        ];
        let grid = pack_blocks(ar, ac) + pack_blocks(br, bc) + extra;
        launch(&cpu, pack, LaunchDims { grid: grid as u32, block: PACK_THREADS, shared_bytes: 0, cluster: 1 }, &args);
        let want = |src: &[f32], rows: u32, cols: u32, ld: u32| -> Vec<u32> {
            let mut w = vec![f32::NAN.to_bits(); (rows * ld).max(1) as usize];
            for r in 0..rows as usize {
                for c in 0..cols as usize {
                    w[r * ld as usize + c] = src[r * cols as usize + c].to_bits();
                }
            }
            w
        };
        assert_same(&format!("pack of A, case {i}"), &a_out.to_vec::<u32>(), &want(&a, ar, ac, lda));
        assert_same(&format!("pack of B, case {i}"), &b_out.to_vec::<u32>(), &want(&b, br, bc, ldb));
    }
}

/// The schedule's own arithmetic (the kernels and the host share it), checked against its
/// definition on shapes the kernel draws do not reach: every unit of every tile in exactly
/// one block, in its contiguous range, blocks' shares differing by at most one unit, slots
/// unique; the data-parallel schedule; zero tiles, k-tiles or blocks taken as one.
#[test]
fn the_stream_k_schedule_shares_units_out_evenly() {
    for (tiles, k_tiles, blocks) in [(1, 1, 1), (5, 3, 4), (7, 2, 3), (13, 5, 4), (3, 7, 20), (40, 3, 6), (9, 1, 9)] {
        let s = StreamK::new(tiles, k_tiles, blocks);
        let want_dp = if tiles / blocks >= 2 { (tiles / blocks - 1) * blocks } else { 0 };
        assert_eq!(s.dp_tiles, want_dp, "{s:?}");
        let mut owner = vec![u32::MAX; (tiles * k_tiles) as usize];
        let mut slots = std::collections::BTreeSet::new();
        let (mut least, mut most) = (u32::MAX, 0);
        for b in 0..blocks {
            let (mut j, mut units) = (0, 0);
            while let Some(Segment { tile, kt0, kt1 }) = s.segment(b, j) {
                assert!(kt0 < kt1 && kt1 <= k_tiles, "{s:?} block {b} segment {j}");
                for kt in kt0..kt1 {
                    let u = (tile * k_tiles + kt) as usize;
                    assert_eq!(owner[u], u32::MAX, "{s:?}: unit {u} twice");
                    owner[u] = b;
                }
                units += kt1 - kt0;
                if !s.whole(&Segment { tile, kt0, kt1 }) {
                    assert!(slots.insert(s.slot(b, tile)), "{s:?}: slot {} twice", s.slot(b, tile));
                    let (first, last) = s.pieces(tile);
                    assert!(first <= b && b <= last && first < last, "{s:?} tile {tile}");
                } else if tile >= s.dp_tiles {
                    assert_eq!(s.pieces(tile), (b, b), "{s:?} tile {tile}");
                }
                j += 1;
            }
            assert_eq!(units, s.units(b), "{s:?} block {b}");
            let sk = s.sk_begin(b + 1) - s.sk_begin(b);
            (least, most) = (least.min(sk), most.max(sk));
        }
        assert!(owner.iter().all(|&b| b < blocks), "{s:?}: a unit no block computes");
        assert!(most - least <= 1 && s.sk_begin(blocks) == s.sk_units(), "{s:?}");
        for u in 0..s.sk_units() {
            let b = s.block_of(u);
            assert!(s.sk_begin(b) <= u && u < s.sk_begin(b + 1), "{s:?}: unit {u} in block {b}");
        }
    }
    let dp = StreamK::data_parallel(10, 3, 4);
    assert_eq!((dp.dp_tiles, dp.sk_units(), dp.dp_count(1), dp.dp_count(2)), (10, 0, 3, 2));
    assert_eq!(dp.segment(1, 2), Some(Segment { tile: 9, kt0: 0, kt1: 3 }));
    assert_eq!((dp.segment(2, 2), dp.units(3)), (None, 6));
    assert_eq!(StreamK::new(0, 0, 0), StreamK { tiles: 1, k_tiles: 1, blocks: 1, dp_tiles: 0 });
    assert!(StreamK::fits(u32::MAX as u64, 1) && !StreamK::fits(1 << 16, 1 << 16));
}

/// Launches that contradict what an entry compiles in, configs the kernel cannot run, and
/// problems past its counts trap (`gpu::trap`, reported in the kernel file named) before
/// touching memory.
#[test]
fn launches_that_contradict_the_entry_trap() {
    let cpu = cpu();
    let g = Gemm::new((20, 20, 20), 3, BETA, 1.0);
    let (a, b, c) = (mem(&g.a), mem(&g.b), mem(&g.c));
    let [a_map, b_map, _a, _b] = maps(&cpu, &g, &SgemmConfig::tma(8, 32, 2));
    let (partials, counters) = (zeros::<f32>(1 << 12), zeros::<u32>(64));
    // Launches `name` on `grid` blocks of `block` threads (0: the config's) with the config's
    // shared bytes where it has a layout (0 where not), at `(m, n, k)`; expects a trap in `file`.
    let trap = |name: &str, config: SgemmConfig, (grid, block): (u32, u32), (m, n, k): Shape, file: &str| {
        let e = entry(KERNELS, name);
        let tensor_maps = name.contains("_tma") || name.contains("_sk");
        let (a, b) = if tensor_maps { (&a_map, &b_map) } else { (&a, &b) };
        let SgemmConfig { bm, bn, bk, stages, .. } = config;
        let mut args = vec![Arg::Mem(a), Arg::Mem(b), Arg::Mem(&c), Arg::U32(m), Arg::U32(n), Arg::U32(k)];
        args.extend([Arg::F32(ALPHA), Arg::F32(BETA), Arg::U32(bm), Arg::U32(bn), Arg::U32(bk), Arg::U32(stages)]);
        if name.contains("_sk") {
            args.extend([Arg::Mem(&partials), Arg::Mem(&counters)]);
        }
        let elem_bytes = if name.starts_with("hgemm") { 2 } else { 4 };
        let shared_bytes = config.shared_bytes(elem_bytes).unwrap_or(0);
        let block = if block == 0 { config.threads() } else { block };
        let dims = LaunchDims { grid, block, shared_bytes, cluster: 1 };
        match cpu.launch(e, dims, &args) {
            Err(LaunchError::Fault { fault, .. }) => match fault.kind {
                FaultKind::Trap { at } => assert!(at.file().ends_with(file), "{name} {config:?}: trapped at {at}"),
                other => panic!("{name} {config:?} at {dims:?}: {other:?}, not a trap"),
            },
            Ok(()) => panic!("{name} {config:?} at {dims:?} ran"),
            Err(e) => panic!("{name} {config:?}: {e}"),
        }
    };
    let p = g.shape;
    let c16 = cfg(16, 16, 16, 2);
    // A compiled-in depth other than the launch's; the compiled-in tile with another.
    trap("sgemm_f32_bk8", c16, (4, 0), p, "sgemm/mod.rs");
    trap("sgemm_f32_tm4_bk32", c16, (4, 0), p, "sgemm/mod.rs");
    trap("sgemm_f32_128x128x16s2", c16, (4, 0), p, "sgemm/mod.rs");
    // The 4-row entry on a block of the 8-row tile's threads.
    trap("sgemm_f32_tm4", c16, (4, c16.threads()), p, "sgemm/mod.rs");
    // A block of other than the config's threads; a config the kernel cannot run (bk not a
    // multiple of 4; f16 with bk not a multiple of 8).
    trap("sgemm_f32", c16, (4, 8), p, "sgemm/mod.rs");
    trap("hgemm_f16_f32", c16, (4, 8), p, "sgemm/mod.rs");
    trap("sgemm_f32", cfg(16, 16, 6, 2), (4, 0), p, "sgemm/mod.rs");
    trap("hgemm_f16_f32", cfg(16, 16, 12, 2), (4, 0), p, "sgemm/mod.rs");
    // A depth whose ring does not fit a 32-bit carve (fits() bounds no depth).
    trap("sgemm_f32", cfg(16, 16, 1 << 30, 1), (1, 0), p, "sgemm/mod.rs");
    trap("hgemm_f16_f32", cfg(16, 16, 1 << 30, 2), (1, 0), p, "sgemm/mod.rs");
    // A grid that is not a multiple of the tiles; a tile count that wraps u32 to 0 (2^16 x
    // 2^16 tiles: the guard keeps the split's division defined).
    trap("sgemm_f32", c16, (5, 0), p, "sgemm/mod.rs");
    trap("sgemm_f32", c16, (1, 0), (1 << 20, 1 << 20, 0), "sgemm/mod.rs");
    // The tensor-map kernels: a depth or width other than the entry's, a config they cannot
    // run (one stage), a block of other than the config's threads.
    trap("sgemm_f32_tma_bk32", SgemmConfig::tma(8, 64, 2), (3, 0), p, "sgemm/tma.rs");
    trap("sgemm_f32_tma_bk32", SgemmConfig { bn: 64, ..SgemmConfig::tma(8, 32, 2) }, (3, 0), p, "sgemm/tma.rs");
    trap("sgemm_f32_tma_bk64", SgemmConfig::tma(8, 64, 1), (3, 0), p, "sgemm/tma.rs");
    trap("sgemm_f32_tma_bk32", SgemmConfig::tma(8, 32, 2), (3, 16), p, "sgemm/tma.rs");
    trap("sgemm_f32_sk", sk(8, 64, 2), (3, 0), p, "sgemm/tma.rs");
    // Stream-K on more blocks than units (3 tiles of one k-tile); on a problem of more units
    // than u32 counts (33 tiles of 2^27 k-tiles).
    trap("sgemm_f32_sk_n32", sk(8, 32, 2), (4, 0), p, "sgemm/tma.rs");
    trap("sgemm_f32_sk_n32", sk(8, 32, 2), (1, 0), (33 * 8, 20, u32::MAX), "sgemm/tma.rs");
}

/// `sgemm_pack` traps on a block of other than `PACK_THREADS` threads or a row stride
/// shorter than its row.
#[test]
fn pack_launches_that_contradict_it_trap() {
    let cpu = cpu();
    let (src, dst) = (mem(&[1.0f32; 40]), zeros::<f32>(40));
    let args = |a_ld: u32, b_ld: u32| {
        let (a, b) = ((Arg::U32(1), Arg::U32(20), Arg::U32(a_ld)), (Arg::U32(1), Arg::U32(20), Arg::U32(b_ld)));
        [Arg::Mem(&src), Arg::Mem(&dst), a.0, a.1, a.2, Arg::Mem(&src), Arg::Mem(&dst), b.0, b.1, b.2]
    };
    let dims = LaunchDims { grid: 2, block: PACK_THREADS, shared_bytes: 0, cluster: 1 };
    for (dims, a_ld, b_ld) in [(LaunchDims { block: 128, ..dims }, 20, 20), (dims, 16, 20), (dims, 20, 16)] {
        match cpu.launch(entry(KERNELS, "sgemm_pack"), dims, &args(a_ld, b_ld)) {
            Err(LaunchError::Fault { fault: Fault { kind: FaultKind::Trap { at }, .. }, .. }) => {
                assert!(at.file().ends_with("sgemm/mod.rs"), "trapped at {at}")
            }
            other => panic!("sgemm_pack at {dims:?}, lds {a_ld} {b_ld}: {:?}", other.err()),
        }
    }
    assert_same("the pack's destination after its traps", &dst.to_vec::<f32>(), &[0.0; 40]);
}

/// The order `sgemm_split_sum` documents: group `g` adds slices `g, g + G, ...` in turn
/// (from 0), then the groups' sums are added in group order, then `beta C` by one fma.
fn grouped_sum(slices: &[f32], len: usize, splits: usize, e: usize, c: f32, beta: f32) -> f32 {
    let groups = SUM_GROUPS as usize;
    let group = |g: usize| (g..splits).step_by(groups).fold(0.0f32, |acc, s| acc + slices[s * len + e]);
    let sum = (1..groups).fold(group(0), |acc, g| acc + group(g));
    if beta == 0.0 { sum } else { beta.mul_add(c, sum) }
}

/// `sgemm_split_sum` adds the slices in the order it documents ([`grouped_sum`]): at 3 splits
/// (one slice a group), 21 (two or three a group: a partial batch) and 30 (a whole batch of
/// four in some groups), over slices of mixed
/// magnitudes whose sum depends on the order (checked: split order gives other bits), at
/// result lengths with and without a whole vector at the end and past one block, and beta 0
/// over a `C` of NaN. It traps on a block of other than `SUM_THREADS` or zero splits.
#[test]
fn the_split_sum_adds_the_slices_in_its_fixed_order() {
    let cpu = cpu();
    for (m, n, splits, beta) in [(1, 1, 3, BETA), (3, 5, 21, BETA), (33, 40, 30, 0.0), (40, 33, 3, 2.0)] {
        let len = (m * n) as usize;
        let mut rng = SplitMix64::new(len as u64 + splits as u64);
        // Magnitudes 2^-20 .. 2^20 of either sign: most sums round differently in another order.
        let ws: Vec<f32> = (0..splits as usize * len)
            .map(|_| rng.signed_nonzero(4) as f32 * 2f32.powi(rng.signed_nonzero(20)))
            .collect();
        let c0: Vec<f32> = if beta == 0.0 { vec![f32::NAN; len] } else { (0..len).map(|e| (e % 7) as f32).collect() };
        let (ws_mem, c) = (mem(&ws), mem(&c0));
        split_sum(&cpu, &ws_mem, &c, (m, n, 0), splits, beta);
        let want: Vec<f32> = (0..len).map(|e| grouped_sum(&ws, len, splits as usize, e, c0[e], beta)).collect();
        assert_same(&format!("the sum of {splits} slices of {m} x {n}, beta {beta}"), &c.to_vec::<f32>(), &want);
        if splits > SUM_GROUPS && len > 100 {
            let in_split_order = |e: usize| (0..splits as usize).fold(0.0f32, |acc, s| acc + ws[s * len + e]);
            let other = (0..len).filter(|&e| {
                in_split_order(e).to_bits() != grouped_sum(&ws, len, splits as usize, e, 0.0, 0.0).to_bits()
            });
            assert!(other.count() > 0, "the draw does not tell the two orders apart");
        }
    }
    // Blocks: a vector per lane, at least one block (an empty result launches one that
    // stores nothing).
    let per_block = (SUM_LANES * SUM_PER_THREAD) as u64;
    assert_eq!([sum_blocks(0, 5), sum_blocks(1, 1), sum_blocks(16, 8), sum_blocks(16, 9)], [1, 1, 1, 2]);
    assert_eq!(sum_blocks(65535, 65535), (65535u64 * 65535).div_ceil(per_block));
    let (ws, c) = (mem(&[1.0f32; 8]), zeros::<f32>(8));
    for (block, splits) in [(SUM_THREADS / 2, 1), (SUM_THREADS, 0)] {
        let dims = LaunchDims { grid: 1, block, shared_bytes: sum_bytes().unwrap(), cluster: 1 };
        let args = [Arg::Mem(&ws), Arg::Mem(&c), Arg::U32(2), Arg::U32(4), Arg::U32(splits), Arg::F32(0.0)];
        match cpu.launch(entry(KERNELS, "sgemm_split_sum"), dims, &args) {
            Err(LaunchError::Fault { fault: Fault { kind: FaultKind::Trap { at }, .. }, .. }) => {
                assert!(at.file().ends_with("sgemm/split.rs"), "trapped at {at}")
            }
            other => panic!("sgemm_split_sum with {block} threads, {splits} splits: {:?}", other.err()),
        }
    }
}

/// `fits`, which every entry checks before it runs (and traps on): each condition alone
/// refuses a config that passes the others.
#[test]
fn fits_refuses_each_condition_alone() {
    let refuse = |base: SgemmConfig, elem_bytes: u32, bad: &[(SgemmConfig, u32)]| {
        assert!(base.fits(elem_bytes), "{base:?}");
        for &(c, e) in bad {
            assert!(!c.fits(e), "{c:?} with {e}-byte elements");
        }
    };
    // Stream-K: 4-byte elements, 8 rows a thread, bn one of SK_BN, bk 32, 8 <= bm <= 256 in
    // steps of 8, 2 to 4 stages, one split, sk <= 8, at most 256 threads; sk with no tensor maps.
    let s = sk(64, 64, 2);
    refuse(s, 4, &[(s, 2), (s.with_tm(16), 4), (sk(64, 96, 2), 4), (SgemmConfig { bk: 64, ..s }, 4)]);
    refuse(s, 4, &[(sk(0, 64, 2), 4), (sk(264, 64, 2), 4), (sk(12, 64, 2), 4), (sk(64, 64, 1), 4)]);
    refuse(s, 4, &[(sk(64, 64, 5), 4), (s.with_splits(2), 4), (SgemmConfig { sk: 9, ..s }, 4), (sk(256, 128, 2), 4)]);
    refuse(cfg(64, 64, 32, 2), 4, &[(SgemmConfig { sk: 1, ..cfg(64, 64, 32, 2) }, 4)]);
    // The tensor-map kernel: as stream-K with bn 128, bk 32 or 64, 1 to MAX_SPLITS splits.
    let t = SgemmConfig::tma(64, 32, 2);
    refuse(t, 4, &[(t, 2), (t.with_tm(16), 4), (SgemmConfig { bn: 64, ..t }, 4), (SgemmConfig::tma(64, 48, 2), 4)]);
    refuse(
        t,
        4,
        &[(SgemmConfig::tma(0, 32, 2), 4), (SgemmConfig::tma(264, 32, 2), 4), (SgemmConfig::tma(12, 32, 2), 4)],
    );
    refuse(t, 4, &[(SgemmConfig::tma(64, 32, 1), 4), (SgemmConfig::tma(64, 32, 5), 4), (t.with_splits(0), 4)]);
    refuse(t, 4, &[(t.with_splits(MAX_SPLITS + 1), 4)]);
    assert!(t.with_splits(MAX_SPLITS).fits(4));
    // The k-group and row-major kernels: tm 4, 8 or 16 (4 and 16 for f32 only), whole thread
    // tiles, bn and bk whole chunks, bk a multiple of 4, 1 to 4 stages, 1 to MAX_SPLITS
    // splits, at most 1024 threads.
    let p = cfg(32, 32, 8, 2);
    refuse(p, 2, &[(p.with_tm(12), 4), (p.with_tm(16), 2), (cfg(8, 32, 8, 2).with_tm(16), 4), (cfg(32, 4, 8, 2), 4)]);
    refuse(p, 2, &[(p.with_tm(4), 2), (p.with_tm(2), 4), (cfg(6, 32, 8, 2).with_tm(4), 4)]);
    refuse(p, 2, &[(cfg(24, 32, 8, 2).with_tm(16), 4), (cfg(32, 12, 8, 2), 4), (cfg(32, 24, 16, 2), 1)]);
    refuse(p, 2, &[(cfg(32, 32, 0, 2), 4), (cfg(32, 32, 6, 2), 4), (cfg(32, 32, 4, 2), 2), (cfg(32, 32, 8, 0), 4)]);
    refuse(p, 2, &[(cfg(32, 32, 8, 5), 4), (p.with_splits(0), 4), (p.with_splits(MAX_SPLITS + 1), 4)]);
    refuse(p, 2, &[(cfg(256, 512, 8, 2), 4), (cfg(256, 256, 8, 2).with_tm(4), 4)]);
    assert!(cfg(4, 8, 8, 2).with_tm(4).fits(4) && p.with_tm(4).with_splits(MAX_SPLITS).fits(4));
}

/// `entry_name` picks an entry of the table for every config it accepts, the one whose
/// compiled-in depth, rows, tile and width are the config's, and none where no entry has
/// the combination.
#[test]
fn entry_name_picks_the_entry_with_the_config_compiled_in() {
    use dynsmem_kernels::sgemm::entry_name;
    let names = [
        ((false, false, cfg(32, 32, 8, 2)), Some("sgemm_f32_bk8")),
        ((false, false, cfg(32, 32, 16, 2)), Some("sgemm_f32_bk16")),
        ((false, false, cfg(32, 32, 32, 2)), Some("sgemm_f32_bk32")),
        ((false, false, cfg(32, 32, 12, 2)), Some("sgemm_f32")),
        ((false, false, cfg(32, 32, 8, 2).with_tm(16)), Some("sgemm_f32_tm16_bk8")),
        ((false, false, cfg(32, 32, 16, 2).with_tm(16)), Some("sgemm_f32_tm16_bk16")),
        ((false, false, cfg(32, 32, 32, 2).with_tm(16)), Some("sgemm_f32_tm16_bk32")),
        ((false, false, cfg(32, 32, 64, 2).with_tm(16)), Some("sgemm_f32_tm16_bk64")),
        ((false, false, cfg(32, 32, 12, 2).with_tm(16)), Some("sgemm_f32_tm16")),
        ((false, false, cfg(32, 32, 8, 2).with_tm(4)), Some("sgemm_f32_tm4_bk8")),
        ((false, false, cfg(32, 32, 16, 2).with_tm(4)), Some("sgemm_f32_tm4_bk16")),
        ((false, false, cfg(32, 32, 32, 2).with_tm(4)), Some("sgemm_f32_tm4_bk32")),
        ((false, false, cfg(32, 32, 64, 2).with_tm(4)), Some("sgemm_f32_tm4")),
        ((false, true, FIXED_128X128X16S2), Some("sgemm_f32_128x128x16s2")),
        ((true, false, cfg(32, 32, 8, 2)), Some("hgemm_f16_f32")),
        ((false, false, SgemmConfig::tma(64, 32, 2)), Some("sgemm_f32_tma_bk32")),
        ((false, false, SgemmConfig::tma(64, 64, 2)), Some("sgemm_f32_tma_bk64")),
        ((false, false, sk(64, 128, 2)), Some("sgemm_f32_sk")),
        ((false, false, sk(64, 64, 2)), Some("sgemm_f32_sk_n64")),
        ((false, false, sk(64, 32, 2)), Some("sgemm_f32_sk_n32")),
        // No entry: f16 with 16 rows or the compiled-in tile, the fixed tile with 16 rows,
        // tensor maps with f16, another depth or width, or the fixed tile.
        ((true, false, cfg(32, 32, 8, 2).with_tm(16)), None),
        ((true, false, cfg(32, 32, 8, 2).with_tm(4)), None),
        ((false, true, FIXED_128X128X16S2.with_tm(4)), None),
        ((true, true, FIXED_128X128X16S2), None),
        ((false, true, FIXED_128X128X16S2.with_tm(16)), None),
        ((true, false, SgemmConfig::tma(64, 32, 2)), None),
        ((false, true, SgemmConfig::tma(64, 32, 2)), None),
        ((false, false, SgemmConfig::tma(64, 48, 2)), None),
        ((true, false, sk(64, 64, 2)), None),
        ((false, false, sk(64, 96, 2)), None),
    ];
    for ((f16, fixed, config), want) in names {
        let got = entry_name(f16, fixed, &config);
        assert_eq!(got, want, "f16 {f16}, fixed {fixed}, {config:?}");
        if let Some(name) = got {
            assert!(KERNELS.iter().any(|e| e.name == name), "{name} is in no table");
        }
    }
}
