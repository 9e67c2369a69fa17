//! The tensor-map (TMA, sm_90) kernels: both tiles of a k-step arrive by two tensor-map copies
//! that one thread starts, so no thread spends an instruction or a register on a copy, and the
//! edges of the matrices arrive as zeros.
//!
//! - `sgemm_tma` (`sgemm_f32_tma_bk*`): one block per output tile, or `splits` blocks per tile
//!   storing their parts in a workspace that `sgemm_split_sum` adds up ([`super::SplitK`]);
//!   `bn` = [`TMA_BN`].
//! - `sgemm_streamk` (`sgemm_f32_sk*`): a persistent grid over the units of
//!   [`StreamK`](super::streamk::StreamK), the pieces of split tiles summed in a fixed order
//!   through a workspace (deterministic: no atomic adds into `C`); `bn` 128, 64 or 32
//!   ([`SK_BN`]), compiled in per entry.
//!
//! # Shared memory and thread mapping (both)
//! A `[bm][BK]` and B `[BK][BN]` tiles lie dense in each of `stages` ring slots, each slot
//! with a transaction barrier (`mbarrier`) that its two copies complete; the stream-K kernel
//! adds nine words (the fix-up's flag and its copies' cursor). A thread computes an `8 x TN`
//! tile of C (`TN` 16 in `sgemm_tma`, [`sk_tn`] in `sgemm_streamk`): the block has `bm / 8`
//! rows of `X = BN / TN` threads, and thread `(tx, ty)` (`tx = t % X`) computes rows
//! `8 ty + i` (`i < 8`) and columns `4 X c + 4 tx + e` (`c < TN / 4`, `e < 4`). Per 4 k it
//! reads its 8 rows' 4 values (8 16-byte reads, which the threads of a row share), per k its
//! `TN` columns (`TN / 4` 16-byte reads, 8 consecutive threads 128 consecutive bytes). Every
//! read is an immediate offset of one A and one B pointer: BK and BN are compiled in.
//! `a_map`, `b_map`: tensor maps (`CUtensorMap`) of A (`k` x `m`, box `BK` x `bm`) and B (`n`
//! x `k`, box `BN` x `BK`), f32, no swizzle, zero fill; their rows may be padded
//! ([`super::pack`]) so that they are 16-byte aligned.

use super::{SgemmConfig, SplitK, THREAD_TILE, store_tile};
use crate::gpu::{self, SharedArray, SharedPtr};
use crate::streamk::{Segment, StreamK, read_l2};
use crate::vector::Vec4;

/// The tensor-map kernel's columns per block (compiled in: B's row stride is then an
/// immediate offset of every shared read).
pub const TMA_BN: u32 = 128;
/// The tensor-map kernel's depths, each an entry (`sgemm_f32_tma_bk{32,64}`).
pub const TMA_BK: [u32; 2] = [32, 64];
/// Columns of `C` per thread in the tensor-map kernel (rows: [`THREAD_TILE`]).
pub const TMA_TN: u32 = 16;
/// The largest box side a tensor map allows (elements).
pub const TMA_MAX_BOX: u32 = 256;
/// The stream-K kernel's block columns, each an entry (`sgemm_f32_sk`, `_n64`, `_n32`).
pub const SK_BN: [u32; 3] = [128, 64, 32];
/// The stream-K kernel's depth (compiled in).
pub const SK_BK: u32 = 32;
/// Columns of `C` per thread in the stream-K kernel (rows: [`THREAD_TILE`]) at block width
/// `bn`: 8 (a 128-wide block has 16 threads to a row, a 64-wide one 8), and 4 at 32 (8 threads
/// to a row: with 8 columns, 4 threads to a row left the narrow tile too few threads to hide
/// latency).
pub const fn sk_tn(bn: u32) -> u32 {
    if bn == 32 { 4 } else { 8 }
}
/// Most threads of a stream-K block: its entries take about 200 registers per thread (64
/// accumulators and the next fragments in flight), and 256 such threads fill an SM's 65536.
pub const SK_MAX_THREADS: u32 = 256;
/// Most stream-K blocks per multiprocessor a config may ask for ([`SgemmConfig::sk`]).
pub const MAX_SK: u32 = 8;
/// Words of shared state of a stream-K block: the fix-up's flag and the copies' cursor.
pub const SK_STATE_WORDS: u32 = 9;

/// The ring of tensor-map slots of one block: the tiles, their barriers, and where thread
/// `(tx, ty)` reads them.
#[derive(Clone, Copy)]
struct Ring<const BK: u32, const BN: u32> {
    a_tiles: SharedArray<Vec4<f32>>,
    b_tiles: SharedArray<Vec4<f32>>,
    bars: SharedArray<u64>,
    bm: u32,
    stages: u32,
}

impl<const BK: u32, const BN: u32> Ring<BK, BN> {
    /// 16-byte chunks of one slot's A and B tiles.
    #[inline(always)]
    fn a_stage(&self) -> u32 {
        self.bm * BK / 4
    }
    #[inline(always)]
    fn b_stage(&self) -> u32 {
        BK * BN / 4
    }
    #[inline(always)]
    fn bar(&self, slot: u32) -> SharedPtr<u64> {
        unsafe { self.bars.shared_ptr(slot, 1) }
    }
    /// Thread 0, before any copy: initialises every slot's barrier (one arrival: the thread
    /// that starts the copies) and checks that the boxes land 128-byte aligned (the stages
    /// are multiples of 128 bytes, so the region's base decides). The block must pass a
    /// barrier before using the ring.
    #[inline(always)]
    fn init(&self) {
        let a0 = unsafe { self.a_tiles.shared_ptr(0, self.a_stage()) };
        if a0.shared_addr() % 128 != 0 {
            gpu::trap();
        }
        let mut s = 0;
        while s < self.stages {
            unsafe { self.bar(s).mbar_init(1) };
            s += 1;
        }
        gpu::mbar_init_fence();
    }
    /// Starts the copies of k-tile `k0` (in elements) of the tile at `(m0, n0)` into `slot`.
    ///
    /// # Contract
    /// One thread; the slot is free (every thread is past its last multiply).
    #[inline(always)]
    fn start(&self, a_map: *const u8, b_map: *const u8, slot: u32, m0: u32, n0: u32, k0: u32) {
        let tile_bytes = (self.bm * BK + BK * BN) * 4;
        let a_dst = unsafe { self.a_tiles.shared_ptr(slot * self.a_stage(), self.a_stage()) };
        let b_dst = unsafe { self.b_tiles.shared_ptr(slot * self.b_stage(), self.b_stage()) };
        unsafe {
            self.bar(slot).mbar_arrive_expect_tx(tile_bytes);
            a_dst.copy_tile_2d(a_map, k0 as i32, m0 as i32, self.bar(slot));
            b_dst.copy_tile_2d(b_map, n0 as i32, k0 as i32, self.bar(slot));
        }
    }
    /// `acc += A B` over the k-tile in `slot` for thread `(tx, ty)` (see the module
    /// documentation). Macros over literal rows (`for_rows!`, rows past 8 compiled out, `% 8`
    /// keeping the index in bounds for the compiler's checks), chunks and k, so every register
    /// index is a constant (a loop over the 8 x TN FMAs of one k is not unrolled, and a rolled
    /// one puts the accumulators in local memory).
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    fn multiply<const TN: usize>(&self, acc: &mut [[f32; TN]; THREAD_TILE as usize], slot: u32, tx: u32, ty: u32) {
        const TM: usize = THREAD_TILE as usize;
        let pa = unsafe {
            self.a_tiles.range_ptr(slot * self.a_stage() + ty * THREAD_TILE * (BK / 4), THREAD_TILE * BK / 4)
        }
        .cast_const();
        let pb = unsafe { self.b_tiles.range_ptr(slot * self.b_stage() + tx, self.b_stage() - tx) }.cast_const();
        // Chunks between a thread's column groups: the `BN / TN` threads of a row, 4 columns
        // each.
        let group = BN as usize / TN;
        macro_rules! k4 {
            ($q:literal) => {
                let mut af = [[0.0f32; 4]; TM];
                macro_rules! read_a {
                    ($i:literal) => {
                        if $i < TM {
                            af[$i % TM] = unsafe { gpu::read_shared(pa.add($i * (BK / 4) as usize + $q)) }.0;
                        }
                    };
                }
                for_rows!(read_a);
                macro_rules! k1 {
                    ($kk:literal) => {
                        let mut bf = [0.0f32; TN];
                        macro_rules! read_b {
                            ($cq:literal) => {
                                if $cq < TN / 4 {
                                    let v = unsafe {
                                        gpu::read_shared(pb.add((4 * $q + $kk) * (BN / 4) as usize + $cq * group))
                                    }
                                    .0;
                                    bf[(4 * $cq) % TN] = v[0];
                                    bf[(4 * $cq + 1) % TN] = v[1];
                                    bf[(4 * $cq + 2) % TN] = v[2];
                                    bf[(4 * $cq + 3) % TN] = v[3];
                                }
                            };
                        }
                        read_b!(0);
                        read_b!(1);
                        read_b!(2);
                        read_b!(3);
                        macro_rules! fma_row {
                            ($i:literal) => {
                                if $i < TM {
                                    for j in 0..TN {
                                        acc[$i % TM][j] = gpu::fma(af[$i % TM][$kk], bf[j], acc[$i % TM][j]);
                                    }
                                }
                            };
                        }
                        for_rows!(fma_row);
                    };
                }
                k1!(0);
                k1!(1);
                k1!(2);
                k1!(3);
            };
        }
        macro_rules! k_tile {
            ($($q:literal)*) => {
                $(if $q < (BK / 4) as usize {
                    k4!($q);
                })*
            };
        }
        k_tile!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
    }
}

/// The block's ring, carved from the launch-sized region, its barriers initialised (thread 0)
/// and published (a barrier); traps on a launch that contradicts the config.
#[inline(always)]
fn ring<const BK: u32, const BN: u32>(cfg: &SgemmConfig) -> (Ring<BK, BN>, SharedArray<u32>) {
    if !cfg.tma || cfg.bk != BK || cfg.bn != BN || !cfg.fits(4) || gpu::block_dim_x() != cfg.threads() {
        gpu::trap();
    }
    let Ok(l) = cfg.layout(4) else { gpu::trap() };
    let region = gpu::launch_region(l.bytes);
    let ring = Ring {
        a_tiles: unsafe { region.array(l.a).cast() },
        b_tiles: unsafe { region.array(l.b).cast() },
        bars: region.array(l.bars),
        bm: cfg.bm,
        stages: cfg.stages,
    };
    if gpu::thread_idx_x() == 0 {
        ring.init();
    }
    gpu::barrier();
    (ring, region.array(l.flag))
}

/// The ring's position: the slot of the next k-tile and its barrier's phase parity.
#[derive(Clone, Copy)]
struct Turn {
    slot: u32,
    parity: u32,
}

impl Turn {
    #[inline(always)]
    fn advance(&mut self, stages: u32) {
        if self.slot + 1 == stages {
            self.slot = 0;
            self.parity ^= 1;
        } else {
            self.slot += 1;
        }
    }
}

/// The stream-K copies' cursor ([`sgemm_streamk`]).
#[derive(Clone, Copy)]
struct CursorState {
    j: u32,
    kt: u32,
    kt1: u32,
    m0: u32,
    n0: u32,
    issued: u32,
    turn: Turn,
}

/// Where thread 0 keeps the cursor: words 1 to 8 of the kernel's state words (word 0 is the
/// fix-up's flag).
#[derive(Clone, Copy)]
struct Cursor(SharedArray<u32>);

impl Cursor {
    #[inline(always)]
    fn new(state: SharedArray<u32>) -> Cursor {
        Cursor(state)
    }
    #[inline(always)]
    fn load(&self) -> CursorState {
        let w = |i: u32| unsafe { self.0.read(1 + i) };
        CursorState {
            j: w(0),
            kt: w(1),
            kt1: w(2),
            m0: w(3),
            n0: w(4),
            issued: w(5),
            turn: Turn { slot: w(6), parity: w(7) },
        }
    }
    #[inline(always)]
    fn store(&self, c: &CursorState) {
        let words = [c.j, c.kt, c.kt1, c.m0, c.n0, c.issued, c.turn.slot, c.turn.parity];
        for (i, w) in words.into_iter().enumerate() {
            unsafe { self.0.write(1 + i as u32, w) };
        }
    }
}

/// The data-parallel / split-K tensor-map kernel (`sgemm_f32_tma_bk*`); see the module
/// documentation.
///
/// # Contract
/// As for `gemm_rowmajor`, with the tensor maps describing `a` and `b`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn sgemm_tma<const BK: u32>(
    a_map: *const u8,
    b_map: *const u8,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
    cfg: SgemmConfig,
) {
    const BN: u32 = TMA_BN;
    const TN: usize = TMA_TN as usize;
    let (ring, _) = ring::<BK, BN>(&cfg);
    let tid = gpu::thread_idx_x();
    let tiles_n = n.div_ceil(BN).max(1);
    let split = SplitK::of_block(m.div_ceil(cfg.bm).max(1) * tiles_n, k.div_ceil(BK));
    let (m0, n0) = ((split.tile / tiles_n) * cfg.bm, (split.tile % tiles_n) * BN);
    let (tx, ty) = (tid % (BN / TMA_TN), tid / (BN / TMA_TN));
    let k0 = |kt: u32| (split.kt0 + kt) * BK;
    // This block's k-tiles, counted from its split's first.
    let k_tiles = split.count;
    if tid == 0 {
        let mut s = 0;
        while s + 1 < cfg.stages && s < k_tiles {
            ring.start(a_map, b_map, s, m0, n0, k0(s));
            s += 1;
        }
    }
    let mut acc = [[0.0f32; TN]; THREAD_TILE as usize];
    let (mut turn, mut next) = (Turn { slot: 0, parity: 0 }, Turn { slot: cfg.stages - 1, parity: 0 });
    let mut kt = 0;
    while kt < k_tiles {
        unsafe { ring.bar(turn.slot).mbar_wait(turn.parity) };
        // Every warp is past tile kt - 1, so its slot may be refilled.
        gpu::barrier();
        if tid == 0 && kt + cfg.stages - 1 < k_tiles {
            ring.start(a_map, b_map, next.slot, m0, n0, k0(kt + cfg.stages - 1));
        }
        ring.multiply::<TN>(&mut acc, turn.slot, tx, ty);
        turn.advance(cfg.stages);
        next.advance(cfg.stages);
        kt += 1;
    }
    let row = |i: usize| ty * THREAD_TILE + i as u32;
    let col = |j: usize| (j / 4) as u32 * 32 + tx * 4 + (j % 4) as u32;
    let (c, beta) = split.output(c, m, n, beta);
    store_tile(&acc, c, m, n, m0, n0, alpha, beta, row, col);
}

/// The stream-K tensor-map kernel (`sgemm_f32_sk*`): block `b` of the launch's `G` computes
/// the units [`StreamK`] gives it, in order, through one ring whose copies run ahead across
/// its segments (thread 0 starts unit `u + stages - 1` while unit `u` is multiplied), and
/// after each segment either stores the tile or takes part in its fix-up (see
/// [`super::streamk`]). `partials`: `2 G` slots of `bm * BN` floats; `counters`: one per
/// tile, zero before the launch and left zero after it.
///
/// # Contract
/// As for [`sgemm_tma`]; `partials` and `counters` as above, used by no other launch at the
/// same time.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn sgemm_streamk<const BN: u32, const TN: usize>(
    a_map: *const u8,
    b_map: *const u8,
    c: *mut f32,
    (m, n, k): (u32, u32, u32),
    (alpha, beta): (f32, f32),
    cfg: SgemmConfig,
    partials: *mut f32,
    counters: *mut u32,
) {
    const BK: u32 = SK_BK;
    const { assert!(TN == sk_tn(BN) as usize && BN.is_multiple_of(TN as u32 * 4)) };
    if cfg.sk == 0 {
        gpu::trap();
    }
    let (ring, state) = ring::<BK, BN>(&cfg);
    let flag = state;
    let (tid, b) = (gpu::thread_idx_x(), gpu::block_idx_x());
    let tiles_n = n.div_ceil(BN).max(1);
    let sched = StreamK::new(m.div_ceil(cfg.bm).max(1) * tiles_n, k.div_ceil(BK).max(1), gpu::grid_dim_x());
    if sched.blocks > sched.sk_units() || !StreamK::fits(sched.tiles as u64, sched.k_tiles as u64) {
        gpu::trap();
    }
    let across = BN / TN as u32;
    let (tx, ty) = (tid % across, tid / across);
    let origin = |s: &Segment| ((s.tile / tiles_n) * cfg.bm, (s.tile % tiles_n) * BN);
    // Units of this block (the host keeps a problem's units within u32).
    let total = sched.units(b);

    // The copies' cursor, kept by thread 0 in shared memory (registers are the multiply's):
    // the next unit to start is k-tile `kt` of segment `j` (ending at `kt1`) of the tile at
    // (`m0`, `n0`), `issued` of `total` started, into `slot` of the ring.
    let cursor = Cursor::new(state);
    let start_next = || {
        let mut c = cursor.load();
        if c.issued < total {
            ring.start(a_map, b_map, c.turn.slot, c.m0, c.n0, c.kt * BK);
            c.issued += 1;
            c.turn.advance(cfg.stages);
            c.kt += 1;
            if c.kt == c.kt1 {
                c.j += 1;
                if let Some(s) = sched.segment(b, c.j) {
                    (c.kt, c.kt1, (c.m0, c.n0)) = (s.kt0, s.kt1, origin(&s));
                }
            }
            cursor.store(&c);
        }
    };
    if tid == 0 {
        let Some(s) = sched.segment(b, 0) else { gpu::trap() };
        let (m0, n0) = origin(&s);
        cursor.store(&CursorState {
            j: 0,
            kt: s.kt0,
            kt1: s.kt1,
            m0,
            n0,
            issued: 0,
            turn: Turn { slot: 0, parity: 0 },
        });
        let mut s = 0;
        while s + 1 < cfg.stages {
            start_next();
            s += 1;
        }
    }

    let mut turn = Turn { slot: 0, parity: 0 };
    let mut j = 0;
    while let Some(seg) = sched.segment(b, j) {
        let mut acc = [[0.0f32; TN]; THREAD_TILE as usize];
        let mut kt = seg.kt0;
        while kt < seg.kt1 {
            unsafe { ring.bar(turn.slot).mbar_wait(turn.parity) };
            // Every warp is past the previous unit, so its slot may be refilled.
            gpu::barrier();
            if tid == 0 {
                start_next();
            }
            ring.multiply::<TN>(&mut acc, turn.slot, tx, ty);
            turn.advance(cfg.stages);
            kt += 1;
        }
        let (m0, n0) = origin(&seg);
        let row = |i: usize| ty * THREAD_TILE + i as u32;
        let col = |jj: usize| (jj / 4) as u32 * across * 4 + tx * 4 + (jj % 4) as u32;
        // A whole tile is stored; a piece takes part in its tile's fix-up (every thread: it has
        // barriers), and the block that sums the pieces stores the tile.
        if sched.whole(&seg) || fix_up(&sched, b, &seg, &mut acc, partials, counters, flag) {
            store_tile(&acc, c, m, n, m0, n0, alpha, beta, row, col);
        }
        j += 1;
    }
}

/// Block `b`'s part in the fix-up of its piece `seg` of a split tile (see
/// [`super::streamk`]): writes `acc` to its workspace slot, counts itself on the tile's
/// counter, and if it counted last, sums every piece of the tile into `acc` in block order
/// (its own read back too, so that the order, and the rounding, is the same whichever block
/// comes last), resets the counter and returns true: the caller stores the tile. Thread `t`
/// keeps its `8 x TN` values as `2 TN` 16-byte chunks at `chunk * threads + t` of a slot (a
/// warp's writes and reads are 512 consecutive bytes).
///
/// # Contract
/// As for [`sgemm_streamk`]; every thread of the block calls it (it has barriers).
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn fix_up<const TN: usize>(
    sched: &StreamK,
    b: u32,
    seg: &Segment,
    acc: &mut [[f32; TN]; THREAD_TILE as usize],
    partials: *mut f32,
    counters: *mut u32,
    flag: SharedArray<u32>,
) -> bool {
    const TM: usize = THREAD_TILE as usize;
    let (tid, threads) = (gpu::thread_idx_x() as usize, gpu::block_dim_x() as usize);
    let slot_floats = threads * TM * TN;
    let piece = |bb: u32| partials.wrapping_add(sched.slot(bb, seg.tile) as usize * slot_floats).cast::<Vec4<f32>>();
    let mine = piece(b);
    // Macros over literal rows and column quads: every register index a constant (see
    // `Ring::multiply`).
    macro_rules! write_row {
        ($i:literal) => {
            if $i < TM {
                for_quads!(TN, h, {
                    let a = &acc[$i % TM];
                    let v = Vec4([a[4 * h], a[4 * h + 1], a[4 * h + 2], a[4 * h + 3]]);
                    unsafe { gpu::write_global(mine.wrapping_add(($i * (TN / 4) + h) * threads + tid), v) };
                });
            }
        };
    }
    for_rows!(write_row);
    // Each thread's piece is in device memory before its block counts itself.
    gpu::micro::fence(gpu::micro::FenceScope::Device);
    gpu::barrier();
    let (first, last) = sched.pieces(seg.tile);
    if tid == 0 {
        let counter = counters.wrapping_add((seg.tile - sched.dp_tiles) as usize);
        let arrived = unsafe { gpu::atomic_add_global_u32(counter, 1) };
        let is_last = arrived == last - first;
        if is_last {
            // Every piece has counted: reset for the next launch (kernel boundaries order it).
            unsafe { gpu::write_global(counter, 0) };
        }
        unsafe { flag.write(0, is_last as u32) };
    }
    gpu::barrier();
    if unsafe { flag.read(0) } == 0 {
        return false;
    }
    // The other blocks' pieces, published by their fences before their counts.
    gpu::micro::fence(gpu::micro::FenceScope::Device);
    let mut bb = first;
    while bb <= last {
        let p = piece(bb);
        macro_rules! add_row {
            ($i:literal) => {
                if $i < TM {
                    for_quads!(TN, h, {
                        let v = read_l2(p.wrapping_add(($i * (TN / 4) + h) * threads + tid));
                        let a = &mut acc[$i % TM];
                        for e in 0..4 {
                            a[4 * h + e] = if bb == first { v[e] } else { a[4 * h + e] + v[e] };
                        }
                    });
                }
            };
        }
        for_rows!(add_row);
        bb += 1;
    }
    true
}
