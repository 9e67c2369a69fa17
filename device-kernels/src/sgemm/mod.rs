//! Matrix multiply `C = alpha * A * B + beta * C`, row-major, any `M x N x K`, f32 inputs or
//! f16 inputs with f32 accumulation. Measurements, history: `host/src/families/sgemm/NOTES.md`.
//!
//! # Compiled in, launch-time
//! A thread's `TM x 8` tile of `C` (`TM` = 4, 8 or 16, [`SgemmConfig::tm`]) is compiled in: its
//! loops must unroll with constant indices to stay in registers. The block tile `BM x BN`, the
//! depth `BK` and the stages only size shared memory and trip counts, so they are launch-time
//! (past 48 KB is just a bigger launch). `_bk*` entries ([`COMPILED_BK`]) compile `BK` in so
//! the k loop unrolls; `sgemm_f32_128x128x16s2` ([`Dims`]) compiles the whole tile in, to
//! isolate what launch-time sizing costs. The entries cap 8-row tiles at 128 registers (two
//! 256-thread blocks per SM), 16-row ones at 255 (one), 4-row ones at 112 (the small-problem
//! tiles: four 128-thread blocks per SM; at 96 their copy addressing spills).
//!
//! # Kernels and thread mapping
//! Block `b` computes the tile at `(BM * (b / tiles_n), BN * (b % tiles_n))`; thread
//! `(tx, ty)`, `tx = t % (BN/8)`, owns row groups `ty + q * BM/TM` (`q < TM/4`, rows
//! `4 * group + i`) and columns `{tx*4 + j, BN/2 + tx*4 + j}` (`j < 4`). `BK`-deep tiles of A
//! and B pass through a ring of `stages` shared slots (`ring_pipeline`), one barrier per k-tile.
//! - `sgemm_kgroups` (f32): a tile is groups of 4 rows (of B: columns) of `BK + 1` 16-byte
//!   slots, slot `kk` the group's values at `k = kk` (the odd length puts the groups a warp
//!   reads in different banks): one k is `TM/4 + 2` reads for `8 * TM` FMAs. Filled by
//!   `cp.async` (A, a transpose, word by word; B in 16-byte chunks, or word by word where
//!   n is not a multiple of 4); at the matrices' edges the same copies, predicated (zeros
//!   past the edge); element by element only for tiles the copies cannot map.
//! - `gemm_rowmajor` (f16): A and B row-major in 16-byte chunks, A's rows padded by one chunk.
//! - the tensor-map kernels (f32, sm_90, [`SgemmConfig::tma`], [`tma`]): one thread starts two
//!   tensor-map copies per k-tile, which complete the slot's `mbarrier` and zero-fill the
//!   edges, so no thread spends registers or instructions on copies (the k-group kernel's copies
//!   crowd its load/store queue). Thread tile 8 x `BN / 8`; `BK`, `BN` compiled in. Rows of A
//!   or B that are not 16-byte aligned are padded first ([`pack`]). `sgemm_f32_tma_bk*`: one
//!   block per tile (or split-K); `sgemm_f32_sk*` ([`SgemmConfig::sk`]): stream-K, a persistent
//!   grid sharing out every tile's k-tiles evenly, split tiles summed in a fixed order
//!   ([`streamk`]).
//!
//! # Launch-sized memory ([`SgemmConfig::layout`])
//! f32: `stages * ceil(BM/4)` and `stages * ceil(BN/4)` groups of `BK + 1` 16-byte slots; TMA:
//! `stages * BM * BK` and `stages * BK * BN` floats, then `stages` 8-byte barriers (`bars`)
//! and, for stream-K, one word (`flag`); f16: `stages * BM * (BK + 8)` and `stages * BK * BN`
//! elements.
//!
//! # Entry points ([`entry_name`] picks one)
//! `sgemm_f32(a, b, c, m, n, k, alpha, beta, bm, bn, bk, stages)`, `sgemm_f32_bk{8,16,32}`,
//! `sgemm_f32_tm4[_bk{8,16,32}]`, `sgemm_f32_tm16[_bk{8,16,32,64}]`, `sgemm_f32_128x128x16s2`,
//! ablations `sgemm_f32_unroll4`, `sgemm_f32_tm16_bk32_u{8,16}` (`a`, `b`: `*const f32`);
//! `hgemm_f16_f32` (`*const u16`, f16 bits); `sgemm_f32_tma_bk{32,64}` (`a`, `b`:
//! `CUtensorMap`s in device memory); `c` is f32; `sgemm_f32_sk[_n64|_n32]` (the tensor maps,
//! then `partials`, `counters`: the stream-K workspace, [`SgemmConfig::sk_workspace`]);
//! `sgemm_split_sum` ([`split`]); `sgemm_pack` ([`pack`]). An entry traps on a
//! launch that contradicts what it compiles in. Grid: `ceil(M/BM) * ceil(N/BN)` blocks of `BM *
//! BN / (8 * TM)` threads (`BM` for the tensor-map kernels), times [`SgemmConfig::splits`]
//! under split-K (`SplitK`: the splits of a tile share its k-tiles; `c` is then the workspace
//! of `splits` slices of `M x N`, split `s` storing `alpha` times its part in slice `s`, and
//! `sgemm_split_sum` ([`split`]) adds the slices in one fixed order into `C`: the same bits on
//! every run); stream-K: [`SgemmConfig::sk_grid`] blocks.

use crate::gpu::{self, SharedArray};
use crate::layout::{Carve, LayoutError, Slice};
use crate::vector::{self, Vec4};

pub use tma::{MAX_SK, SK_BK, SK_BN, SK_MAX_THREADS, SK_STATE_WORDS, TMA_BK, TMA_BN, TMA_MAX_BOX, TMA_TN, sk_tn};

/// Columns of `C` each thread computes, and the rows unless [`SgemmConfig::tm`] says 16.
pub const THREAD_TILE: u32 = 8;
/// The rows of `C` a thread can compute ([`SgemmConfig::tm`]): 8 (64 accumulators, 128
/// registers, two 256-thread blocks per SM), 16 for f32 (128 accumulators, up to 255
/// registers, one 256-thread block per SM: the shape cuBLAS's own FFMA kernels take on the
/// H100, fewer shared reads and copies per FMA) or 4 for f32 (32 accumulators, 112 registers:
/// short dependent chains and many warps per scheduler for problems of a few MFLOP, where
/// the bigger tiles leave one or two warps per scheduler; cuBLAS's 32 x 32 and 64 x 64 SIMT
/// kernels take this shape there).
pub const THREAD_ROWS: [u32; 3] = [4, 8, 16];
/// Most pipeline stages.
pub const MAX_STAGES: u32 = 4;
/// Most blocks per output tile under split-K ([`SgemmConfig::splits`]): two per
/// multiprocessor of a 132-SM GPU for the one or two tiles of a skinny, deep problem.
pub const MAX_SPLITS: u32 = 264;
/// Most threads a block has on any GPU the image targets (`BM * BN / 64`).
pub const MAX_THREADS: u32 = 1024;
/// Blocks along each grid dimension are folded into one (`tiles_m * tiles_n` blocks).
pub const MAX_GRID: u64 = 2_147_483_647;

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SgemmConfig {
    pub bm: u32,
    pub bn: u32,
    pub bk: u32,
    pub stages: u32,
    /// Rows of `C` per thread, one of [`THREAD_ROWS`] (each thread always has 8 columns);
    /// 8 in records and caches written before it existed.
    #[cfg_attr(feature = "serde", serde(default = "default_tm"))]
    pub tm: u32,
    /// f32 only: both tiles arrive by tensor-map copies (TMA, sm_90), thread tile 8 x 16,
    /// [`TMA_BN`] and the depth compiled in ([`TMA_BK`]); see the module documentation.
    /// Absent (false) in records and caches written before it existed.
    #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "core::ops::Not::not"))]
    pub tma: bool,
    /// Split-K: blocks per output tile, each taking a share of the k-tiles and storing its
    /// part in a workspace slice, which `sgemm_split_sum` adds into `C` in a fixed order
    /// ([`SplitK`], [`split`]); 1 to [`MAX_SPLITS`]. 1 (one block per tile, `C` stored once)
    /// in records written before it existed.
    #[cfg_attr(feature = "serde", serde(default = "one_split", skip_serializing_if = "is_one_split"))]
    pub splits: u32,
    /// Stream-K (the tensor-map kernel only): a persistent grid of `sk` blocks per
    /// multiprocessor ([`SgemmConfig::sk_grid`]) sharing out the k-tiles of every output tile
    /// ([`streamk`]); 0 (absent in records written before it existed): one block per tile.
    #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "is_zero"))]
    pub sk: u32,
}

#[cfg(feature = "serde")]
fn is_zero(v: &u32) -> bool {
    *v == 0
}

#[cfg(feature = "serde")]
fn one_split() -> u32 {
    1
}

#[cfg(feature = "serde")]
fn is_one_split(s: &u32) -> bool {
    *s == 1
}

#[cfg(feature = "serde")]
fn default_tm() -> u32 {
    THREAD_TILE
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SgemmLayout {
    /// `stages` tiles of `A`, `bm` rows of `bk + pad` elements, as 16-byte chunks.
    pub a: Slice<Vec4<u32>>,
    /// `stages` tiles of `B`, `bk` rows of `bn` elements, as 16-byte chunks.
    pub b: Slice<Vec4<u32>>,
    /// The tensor-map kernel's transaction barriers, one per stage (empty for the others).
    pub bars: Slice<u64>,
    /// Stream-K: word 0 tells the block's threads whether it sums a tile's pieces, words 1
    /// to 8 hold the copies' cursor (nine words; empty for the other kernels).
    pub flag: Slice<u32>,
    pub bytes: u32,
}

impl SgemmConfig {
    /// A config with the 8 x 8 thread tile.
    pub const fn new(bm: u32, bn: u32, bk: u32, stages: u32) -> Self {
        SgemmConfig { bm, bn, bk, stages, tm: THREAD_TILE, tma: false, splits: 1, sk: 0 }
    }

    /// The tensor-map (TMA) kernel's config: `bm` rows (a multiple of 8, at most 256: one
    /// tensor-map box), [`TMA_BN`] columns, `bk` one of [`TMA_BK`].
    pub const fn tma(bm: u32, bk: u32, stages: u32) -> Self {
        SgemmConfig { bm, bn: TMA_BN, bk, stages, tm: THREAD_TILE, tma: true, splits: 1, sk: 0 }
    }

    /// The stream-K tensor-map kernel's config: `bm` rows (as for [`SgemmConfig::tma`]), `bn`
    /// one of [`SK_BN`], depth [`SK_BK`], `sk` blocks per multiprocessor (1 to [`MAX_SK`]).
    pub const fn streamk(bm: u32, bn: u32, stages: u32, sk: u32) -> Self {
        SgemmConfig { bm, bn, bk: SK_BK, stages, tm: THREAD_TILE, tma: true, splits: 1, sk }
    }

    /// This config with `tm` rows per thread.
    pub const fn with_tm(self, tm: u32) -> Self {
        SgemmConfig { tm, ..self }
    }

    /// This config with its k-tiles split among `splits` blocks per output tile.
    pub const fn with_splits(self, splits: u32) -> Self {
        SgemmConfig { splits, ..self }
    }

    /// Threads per block: `bm / tm * bn / 8`.
    pub fn threads(&self) -> u32 {
        if self.tma && self.sk > 0 {
            // Rows of bn / TN threads, each an 8 x TN tile of C.
            return (self.bm / THREAD_TILE).saturating_mul(self.bn / sk_tn(self.bn));
        }
        if self.tma {
            // Rows of 8 threads, each 8 rows of C.
            return self.bm / THREAD_TILE * 8;
        }
        self.bm.checked_div(self.tm).unwrap_or(0).saturating_mul(self.bn / THREAD_TILE)
    }

    /// Whether the kernel can run this config with elements of `elem_bytes` (4 or 2):
    /// tiles of whole thread tiles (`tm` one of [`THREAD_ROWS`], 16 only for f32), `bk` a
    /// multiple of a 16-byte chunk and of 4, 1 to [`MAX_STAGES`] stages, at most
    /// [`MAX_THREADS`] threads.
    pub fn fits(&self, elem_bytes: u32) -> bool {
        let chunk = 16 / elem_bytes.clamp(1, 16);
        if self.tma && self.sk > 0 {
            return elem_bytes == 4
                && self.tm == THREAD_TILE
                && SK_BN.contains(&self.bn)
                && self.bk == SK_BK
                && self.bm >= THREAD_TILE
                && self.bm <= TMA_MAX_BOX
                && self.bm.is_multiple_of(THREAD_TILE)
                && (2..=MAX_STAGES).contains(&self.stages)
                && self.splits == 1
                && self.sk <= MAX_SK
                && self.threads() <= SK_MAX_THREADS;
        }
        if self.sk > 0 {
            return false;
        }
        if self.tma {
            return elem_bytes == 4
                && self.tm == THREAD_TILE
                && self.bn == TMA_BN
                && TMA_BK.contains(&self.bk)
                && self.bm >= THREAD_TILE
                && self.bm <= TMA_MAX_BOX
                && self.bm.is_multiple_of(THREAD_TILE)
                && (2..=MAX_STAGES).contains(&self.stages)
                && (1..=MAX_SPLITS).contains(&self.splits)
                && self.threads() <= MAX_THREADS;
        }
        THREAD_ROWS.contains(&self.tm)
            && (elem_bytes == 4 || self.tm == THREAD_TILE)
            && self.bm >= self.tm
            && self.bn >= THREAD_TILE
            && self.bm.is_multiple_of(self.tm)
            && self.bn.is_multiple_of(THREAD_TILE)
            && self.bn.is_multiple_of(chunk)
            && self.bk >= 4
            && self.bk.is_multiple_of(4)
            && self.bk.is_multiple_of(chunk)
            && (1..=MAX_STAGES).contains(&self.stages)
            && (1..=MAX_SPLITS).contains(&self.splits)
            && self.threads() <= MAX_THREADS
    }

    /// The carve for elements of `elem_bytes`: f32 tiles in k-groups, f16 tiles row-major,
    /// the tensor-map kernel's tiles dense with a transaction barrier per stage (see the
    /// module documentation).
    pub fn layout(&self, elem_bytes: u32) -> Result<SgemmLayout, LayoutError> {
        let overflow = LayoutError::Overflow { offset: 0, len: self.bm, elem_bytes };
        // u64 products of three u32 fields can still overflow: checked (found by the
        // `layout` fuzz target).
        let to_u32 = |v: Option<u64>| v.and_then(|v| u32::try_from(v).ok()).ok_or(overflow);
        let (a, b) = if self.tma {
            // Dense tiles, as the tensor-map copies write them: A `[bm][bk]`, B `[bk][bn]`,
            // in 16-byte chunks; every stage a multiple of 128 bytes (bm a multiple of 8,
            // bk of 32) so that each box lands 128-byte aligned.
            let stage = |rows: u32, cols: u32| (rows as u64 * cols as u64 / 4).checked_mul(self.stages as u64);
            (to_u32(stage(self.bm, self.bk))?, to_u32(stage(self.bk, self.bn))?)
        } else if elem_bytes == 4 {
            // Groups of 4 rows (columns) of bk + 1 16-byte slots each.
            let group = self.bk as u64 + 1;
            let tile = |rows: u32| {
                (rows as u64).div_ceil(4).checked_mul(group).and_then(|v| v.checked_mul(self.stages as u64))
            };
            (to_u32(tile(self.bm))?, to_u32(tile(self.bn))?)
        } else {
            let chunks = |elems: u64| (elems * elem_bytes as u64).div_ceil(16);
            let a_row = chunks(self.bk as u64) + 1;
            let a = a_row.checked_mul(self.bm as u64).and_then(|v| v.checked_mul(self.stages as u64));
            let b = chunks(self.bn as u64).checked_mul(self.bk as u64).and_then(|v| v.checked_mul(self.stages as u64));
            (to_u32(a)?, to_u32(b)?)
        };
        let mut carve = Carve::new();
        let a = carve.array::<Vec4<u32>>(a)?;
        let b = carve.array::<Vec4<u32>>(b)?;
        // The tensor-map kernel's transaction barriers, one per stage.
        let bars = carve.array::<u64>(if self.tma { self.stages } else { 0 })?;
        let flag = carve.array::<u32>(if self.sk > 0 { SK_STATE_WORDS } else { 0 })?;
        Ok(SgemmLayout { a, b, bars, flag, bytes: carve.bytes() })
    }

    pub fn shared_bytes(&self, elem_bytes: u32) -> Result<u32, LayoutError> {
        Ok(self.layout(elem_bytes)?.bytes)
    }

    /// Output tiles of an `m x n` result (at least 1).
    pub fn grid(&self, m: u32, n: u32) -> u64 {
        (m.div_ceil(self.bm.max(1)) as u64 * n.div_ceil(self.bn.max(1)) as u64).max(1)
    }

    /// Blocks of the multiply's launch: [`grid`](Self::grid) times the splits (u64: it
    /// can pass u32). Stream-K configs: [`sk_grid`](Self::sk_grid).
    pub fn launch_grid(&self, m: u32, n: u32) -> u64 {
        self.grid(m, n).saturating_mul(self.splits.max(1) as u64)
    }

    /// k-tiles of each output tile (at least 1).
    pub fn k_tiles(&self, k: u32) -> u32 {
        k.div_ceil(self.bk.max(1)).max(1)
    }

    /// The stream-K launch's blocks on `multiprocessors`: `sk` per multiprocessor, at most
    /// one per unit (a unit is a k-tile of an output tile), at least 1.
    pub fn sk_grid(&self, m: u32, n: u32, k: u32, multiprocessors: u32) -> u32 {
        let units = self.grid(m, n).saturating_mul(self.k_tiles(k) as u64);
        (self.sk as u64 * multiprocessors as u64).min(units).clamp(1, u32::MAX as u64) as u32
    }

    /// The stream-K schedule of an `m x n x k` problem over `blocks` blocks.
    pub fn schedule(&self, m: u32, n: u32, k: u32, blocks: u32) -> streamk::StreamK {
        let tiles = self.grid(m, n).min(u32::MAX as u64) as u32;
        streamk::StreamK::new(tiles, self.k_tiles(k), blocks)
    }

    /// Floats of the stream-K workspace for `blocks` blocks (two pieces of a tile each), and
    /// the tile counters it needs (one per tile).
    pub fn sk_workspace(&self, m: u32, n: u32, blocks: u32) -> (u64, u64) {
        (2 * blocks as u64 * self.bm as u64 * self.bn as u64, self.grid(m, n))
    }
}

/// An input element type: f32, or f16 carried as its bits (`u16`).
pub trait GemmInput: Copy {
    const BYTES: u32;
    const ZERO: Self;
    /// Four consecutive elements as one aligned load (16 bytes of f32, 8 of f16).
    type Quad: Copy;
    fn quad_to_f32(q: Self::Quad) -> [f32; 4];
}

impl GemmInput for f32 {
    const BYTES: u32 = 4;
    const ZERO: f32 = 0.0;
    type Quad = Vec4<f32>;
    #[inline(always)]
    fn quad_to_f32(q: Vec4<f32>) -> [f32; 4] {
        q.0
    }
}

/// Four f16 (as bits), 8-byte aligned.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct Half4(pub [u16; 4]);

impl GemmInput for u16 {
    const BYTES: u32 = 2;
    const ZERO: u16 = 0;
    type Quad = Half4;
    #[inline(always)]
    fn quad_to_f32(q: Half4) -> [f32; 4] {
        q.0.map(|h| f16::from_bits(h) as f32)
    }
}

/// The block tile: runtime values, or constants the compiler folds into the code.
pub trait Dims: Copy {
    fn bm(self) -> u32;
    fn bn(self) -> u32;
    fn bk(self) -> u32;
    fn stages(self) -> u32;
}

/// Block tile chosen at launch.
#[derive(Clone, Copy)]
pub struct Runtime(pub SgemmConfig);

impl Dims for Runtime {
    #[inline(always)]
    fn bm(self) -> u32 {
        self.0.bm
    }
    #[inline(always)]
    fn bn(self) -> u32 {
        self.0.bn
    }
    #[inline(always)]
    fn bk(self) -> u32 {
        self.0.bk
    }
    #[inline(always)]
    fn stages(self) -> u32 {
        self.0.stages
    }
}

/// Block tile chosen at launch except its depth `BK`, compiled in: the k loop then unrolls
/// completely and its trip counts fold (one entry per [`COMPILED_BK`]).
#[derive(Clone, Copy)]
pub struct RuntimeTile<const BK: u32>(pub SgemmConfig);

impl<const BK: u32> Dims for RuntimeTile<BK> {
    #[inline(always)]
    fn bm(self) -> u32 {
        self.0.bm
    }
    #[inline(always)]
    fn bn(self) -> u32 {
        self.0.bn
    }
    #[inline(always)]
    fn bk(self) -> u32 {
        BK
    }
    #[inline(always)]
    fn stages(self) -> u32 {
        self.0.stages
    }
}

/// The `bk` values with an f32 entry of their own (`sgemm_f32_bk{8,16,32}`, the k loop
/// compiled in); any other `bk` runs `sgemm_f32`, every dimension at launch.
pub const COMPILED_BK: [u32; 3] = [8, 16, 32];

/// Block tile compiled in.
#[derive(Clone, Copy)]
pub struct Fixed<const BM: u32, const BN: u32, const BK: u32, const S: u32>;

impl<const BM: u32, const BN: u32, const BK: u32, const S: u32> Dims for Fixed<BM, BN, BK, S> {
    #[inline(always)]
    fn bm(self) -> u32 {
        BM
    }
    #[inline(always)]
    fn bn(self) -> u32 {
        BN
    }
    #[inline(always)]
    fn bk(self) -> u32 {
        BK
    }
    #[inline(always)]
    fn stages(self) -> u32 {
        S
    }
}

/// The compiled-in tile of `sgemm_f32_128x128x16s2`.
pub const FIXED_128X128X16S2: SgemmConfig = SgemmConfig::new(128, 128, 16, 2);

/// # Contract
/// `a` holds `m * k`, `b` `k * n`, `c` `m * n` elements; the launch has [`SgemmConfig::grid`]
/// blocks of [`SgemmConfig::threads`] threads and the layout's bytes.
// Index loops over register arrays with constant bounds are what keeps them registers.
#[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
#[inline(always)]
fn gemm_rowmajor<E: GemmInput, D: Dims>(
    dims: D,
    a: *const E,
    b: *const E,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
) {
    let (bm, bn, bk, stages) = (dims.bm(), dims.bn(), dims.bk(), dims.stages());
    let cfg = SgemmConfig::new(bm, bn, bk, stages);
    let tid = gpu::thread_idx_x();
    if !cfg.fits(E::BYTES) || gpu::block_dim_x() != cfg.threads() {
        gpu::trap();
    }
    let Ok(l) = cfg.layout(E::BYTES) else { gpu::trap() };
    let region = gpu::launch_region(l.bytes);
    let (a_chunks, b_chunks): (SharedArray<Vec4<u32>>, SharedArray<Vec4<u32>>) = (region.array(l.a), region.array(l.b));
    // Elements per 16-byte chunk, and the row strides of the shared tiles in elements.
    let ce = 16 / E::BYTES;
    let a_stride = bk + ce;
    let a_stage = bm * a_stride;
    let b_stage = bk * bn;
    let a_elems: SharedArray<E> = unsafe { a_chunks.cast() };
    let b_elems: SharedArray<E> = unsafe { b_chunks.cast() };
    let a_quads: SharedArray<E::Quad> = unsafe { a_chunks.cast() };
    let b_quads: SharedArray<E::Quad> = unsafe { b_chunks.cast() };

    let tiles_n = n.div_ceil(bn).max(1);
    let split = SplitK::of_block(m.div_ceil(bm).max(1) * tiles_n, k.div_ceil(bk));
    let (m0, n0) = ((split.tile / tiles_n) * bm, (split.tile % tiles_n) * bn);
    let threads_x = bn / THREAD_TILE;
    let (tx, ty) = (tid % threads_x, tid / threads_x);
    let threads = cfg.threads();
    // Row i < 8 of the thread tile, and column j < 8, within the block tile.
    let row = |i: usize| if i < 4 { ty * 4 + i as u32 } else { bm / 2 + ty * 4 + i as u32 - 4 };
    let col = |j: usize| if j < 4 { tx * 4 + j as u32 } else { bn / 2 + tx * 4 + j as u32 - 4 };

    let a_vec = vector::is_aligned16(a) && k.is_multiple_of(ce);
    let b_vec = vector::is_aligned16(b) && n.is_multiple_of(ce);
    // Copies k-tile `kt` into ring slot `slot`: 16-byte cp.async chunks when the tile is
    // inside the matrix and rows are chunk-aligned, element by element with zero fill else.
    let load_tile = |kt: u32, slot: u32| {
        let k0 = (split.kt0 + kt) * bk;
        // Shared offsets in 16-byte chunks (a_stride, bk and bn are whole chunks).
        if a_vec && m0 + bm <= m && k0 + bk <= k {
            let base = slot * a_stage / ce;
            copy_rows_async(a, k, (m0, k0), (bm, bk / ce), a_chunks, base, a_stride / ce, tid, threads);
        } else {
            let at = |r: u32, q: u32| r * a_stride + q;
            gather_tile(a, (m, k), (m0, k0), (bm, bk), a_elems, slot * a_stage, at, tid, threads);
        }
        if b_vec && n0 + bn <= n && k0 + bk <= k {
            let base = slot * b_stage / ce;
            copy_rows_async(b, n, (k0, n0), (bk, bn / ce), b_chunks, base, bn / ce, tid, threads);
        } else {
            let at = |r: u32, q: u32| r * bn + q;
            gather_tile(b, (k, n), (k0, n0), (bk, bn), b_elems, slot * b_stage, at, tid, threads);
        }
        gpu::copy_async_commit();
    };

    let mut acc = [[0.0f32; 8]; 8];
    ring_pipeline(stages, split.count, load_tile, |slot| {
        // Indices of this thread's 8 rows of the A tile and its two column groups of the B
        // tile, walked by increments (an index computed per access costs four instructions
        // per load with run-time strides; 64-bit pointers instead cost 10 more registers,
        // which took the kernel past 128 and one block per SM).
        let (aq, bq) = (a_stride / 4, bn / 4);
        let a_base = slot * a_stage / 4;
        let b_base = slot * b_stage / 4;
        let mut ia = [0u32; 8];
        for i in 0..8 {
            ia[i] = a_base + row(i) * aq;
        }
        let mut ib_lo = b_base + tx;
        let mut ib_hi = b_base + bq / 2 + tx;
        let mut kk = 0;
        while kk < bk {
            let mut af = [[0.0f32; 4]; 8];
            for i in 0..8 {
                af[i] = E::quad_to_f32(unsafe { a_quads.read(ia[i]) });
                ia[i] += 1;
            }
            // One k of the four: a macro so that `j4` is a literal and every index into
            // the register arrays a constant (a loop this large is not unrolled, and a
            // rolled one indexes `af` at run time, which puts it in local memory).
            macro_rules! k_step {
                ($j4:literal) => {
                    let lo = E::quad_to_f32(unsafe { b_quads.read(ib_lo) });
                    let hi = E::quad_to_f32(unsafe { b_quads.read(ib_hi) });
                    ib_lo += bq;
                    ib_hi += bq;
                    let bf = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
                    for i in 0..8 {
                        for j in 0..8 {
                            acc[i][j] = gpu::fma(af[i][$j4], bf[j], acc[i][j]);
                        }
                    }
                };
            }
            k_step!(0);
            k_step!(1);
            k_step!(2);
            k_step!(3);
            kk += 4;
        }
    });

    let (c, beta) = split.output(c, m, n, beta);
    store_tile(&acc, c, m, n, m0, n0, alpha, beta, row, col);
}

/// Invokes `$m!(i)` for the literal rows `i` = 0 to 15 of a thread tile (the kernels guard
/// rows past their `TM`).
macro_rules! for_rows {
    ($m:ident) => {
        $m!(0);
        $m!(1);
        $m!(2);
        $m!(3);
        $m!(4);
        $m!(5);
        $m!(6);
        $m!(7);
        $m!(8);
        $m!(9);
        $m!(10);
        $m!(11);
        $m!(12);
        $m!(13);
        $m!(14);
        $m!(15);
    };
}

/// Runs `$body` with `$h` bound to each column quad `0 .. $tn / 4` of a thread tile (at most
/// four), as a constant: every register index in the body stays a constant after unrolling.
macro_rules! for_quads {
    ($tn:expr, $h:ident, $body:block) => {
        if 0 < $tn / 4 {
            let $h: usize = 0;
            $body
        }
        if 1 < $tn / 4 {
            let $h: usize = 1;
            $body
        }
        if 2 < $tn / 4 {
            let $h: usize = 2;
            $body
        }
        if 3 < $tn / 4 {
            let $h: usize = 3;
            $body
        }
    };
}

pub mod pack;
pub mod split;
/// The stream-K schedule (shared with the tensor-core GEMM).
pub use crate::streamk;
pub mod tma;

/// The f32 kernel: tiles in k-groups (see the module documentation).
///
/// # Contract
/// As for [`gemm_rowmajor`].
#[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
#[inline(always)]
fn sgemm_kgroups<D: Dims, const UNROLL: u32, const TM: usize>(
    dims: D,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
) {
    let (bm, bn, bk, stages) = (dims.bm(), dims.bn(), dims.bk(), dims.stages());
    let cfg = SgemmConfig { bm, bn, bk, stages, tm: TM as u32, tma: false, splits: 1, sk: 0 };
    let tid = gpu::thread_idx_x();
    if !cfg.fits(4) || gpu::block_dim_x() != cfg.threads() {
        gpu::trap();
    }
    let Ok(l) = cfg.layout(4) else { gpu::trap() };
    let region = gpu::launch_region(l.bytes);
    let a_slots: SharedArray<Vec4<f32>> = unsafe { region.array(l.a).cast() };
    let b_slots: SharedArray<Vec4<f32>> = unsafe { region.array(l.b).cast() };
    let a_words: SharedArray<f32> = unsafe { a_slots.cast() };
    let b_words: SharedArray<f32> = unsafe { b_slots.cast() };
    // 16-byte slots per group (odd: the groups a warp reads at one k start in different
    // banks), and per ring stage.
    let gs = bk + 1;
    let a_stage = bm / 4 * gs;
    let b_stage = bn / 4 * gs;

    let tiles_n = n.div_ceil(bn).max(1);
    let split = SplitK::of_block(m.div_ceil(bm).max(1) * tiles_n, k.div_ceil(bk));
    let (m0, n0) = ((split.tile / tiles_n) * bm, (split.tile % tiles_n) * bn);
    let threads_x = bn / THREAD_TILE;
    let (tx, ty) = (tid % threads_x, tid / threads_x);
    let threads = cfg.threads();
    // Row group q < TM / 4 of this thread (4 rows each), `bm / TM` groups apart.
    let group_stride = bm / TM as u32;
    let row = |i: usize| (ty + (i / 4) as u32 * group_stride) * 4 + (i % 4) as u32;
    let col = |j: usize| if j < 4 { tx * 4 + j as u32 } else { bn / 2 + tx * 4 + j as u32 - 4 };

    // A is gathered word by word, in units of 4 groups (16 rows): lane `4 * kk + r` of a
    // warp copies row `4 * i + r` of each group `i` of a unit, columns `8 * kb + kk` for
    // every kb, so one copy reads 4 rows x 32 bytes (4 whole sectors) and writes 128
    // consecutive bytes. Warp `w` takes units `w`, `w + warps`, ..., two per pass. Every
    // copy of a unit is addressed at a constant offset from one shared address and four row
    // pointers, computed afresh per unit: a register a `cp.async` reads is not rewritten
    // soon after it (the H100 stalls such a rewrite until the copy has read its operands;
    // stepping one address per group would do it after every fourth copy). Needs whole
    // warps, bk a multiple of 8 and bm of 16.
    let warps = threads / 32;
    let a_fast = threads.is_multiple_of(32) && bk.is_multiple_of(8) && bm.is_multiple_of(16);
    let (lane, w) = (tid % 32, tid / 32);
    let a_units = bm / 16;
    let a_src0 = (m0 + lane % 4) as usize * k as usize + (lane / 4) as usize;
    let a_dst0 = (lane / 4) * 4 + lane % 4;
    let a_row4 = 4 * k as usize;
    // B moves in 16-byte chunks, each one slot: thread t copies chunk column `t % (bn/4)`
    // of `b_rows` consecutive rows from row `t / (bn/4) * b_rows`, four at a time at
    // constant offsets from one shared address (a warp reads whole rows of the tile).
    let qn = bn / 4;
    let b_fast = vector::is_aligned16(b) && n.is_multiple_of(4) && threads.is_multiple_of(qn);
    let b_rows = bk.div_ceil((threads / qn).max(1));
    let (b_q, b_r0) = (tid % qn, tid / qn * b_rows);
    // Where B's rows are not 16-byte aligned (n not a multiple of 4) its interior tiles move
    // word by word: thread t copies column `t % bn` of rows `t / bn`, `t / bn + threads /
    // bn`, ... (a warp reads 128 consecutive bytes of a row). Needs threads a multiple of bn.
    let b_words_ok = !b_fast && threads.is_multiple_of(bn);
    let b_row_step = threads / bn;
    let (bw_q, bw_r0) = (tid % bn, tid / bn);

    // The tiles as 32-bit shared addresses, which the copies step through.
    let a_shared = unsafe { a_words.shared_ptr(0, a_words.len()) };
    let b_shared = unsafe { b_slots.shared_ptr(0, b_slots.len()) };
    let b_word_shared = unsafe { b_words.shared_ptr(0, b_words.len()) };

    let load_tile = |kt: u32, slot: u32| {
        let k0 = (split.kt0 + kt) * bk;
        if a_fast && m0 + bm <= m && k0 + bk <= k {
            let src0 = a.wrapping_add(a_src0 + k0 as usize);
            let dst0 = a_shared.wrapping_add(slot * a_stage * 4 + a_dst0);
            // The 16 rows of unit `u`: its shared address and its four row pointers (plain
            // values, not an array: an array of pointers is put on the stack).
            let unit = |u: u32| {
                let s = src0.wrapping_add(u as usize * 4 * a_row4);
                let rows = (s, s.wrapping_add(a_row4), s.wrapping_add(2 * a_row4), s.wrapping_add(3 * a_row4));
                (dst0.wrapping_add(u * 16 * gs), rows)
            };
            type Unit = (gpu::SharedPtr<f32>, (*const f32, *const f32, *const f32, *const f32));
            let copy_unit = |(dst, (r0, r1, r2, r3)): Unit| {
                // With bk compiled in this unrolls into 4 * bk / 8 copies.
                let mut kb = 0;
                while kb < bk {
                    unsafe {
                        dst.wrapping_add(kb * 4).copy_async_word(r0.wrapping_add(kb as usize));
                        dst.wrapping_add(gs * 4 + kb * 4).copy_async_word(r1.wrapping_add(kb as usize));
                        dst.wrapping_add(2 * gs * 4 + kb * 4).copy_async_word(r2.wrapping_add(kb as usize));
                        dst.wrapping_add(3 * gs * 4 + kb * 4).copy_async_word(r3.wrapping_add(kb as usize));
                    }
                    kb += 8;
                }
            };
            let mut u = w;
            while u < a_units {
                let (first, second) = (unit(u), unit(u + warps));
                copy_unit(first);
                if u + warps < a_units {
                    copy_unit(second);
                }
                u += 2 * warps;
            }
        } else if a_fast {
            // An edge tile: the same copies, one unit at a time, each predicated: rows past m
            // and columns past k arrive as zeros (nothing read; `a` as the address).
            let dst0 = a_shared.wrapping_add(slot * a_stage * 4 + a_dst0);
            let mut u = w;
            while u < a_units {
                let dst = dst0.wrapping_add(u * 16 * gs);
                let mut i = 0;
                while i < 4 {
                    let row = m0 + u * 16 + 4 * i + lane % 4;
                    let src_row = a.wrapping_add(row as usize * k as usize);
                    let mut kb = 0;
                    while kb < bk {
                        let col = k0 + kb + lane / 4;
                        let ok = row < m && col < k;
                        let src = if ok { src_row.wrapping_add(col as usize) } else { a };
                        unsafe { dst.wrapping_add(i * gs * 4 + kb * 4).copy_async_word_if(src, ok) };
                        kb += 8;
                    }
                    i += 1;
                }
                u += warps;
            }
        } else {
            // Element (r, q) of the tile is row r of group r / 4 at k = q.
            let at = |r: u32, q: u32| (r / 4 * gs + q) * 4 + r % 4;
            gather_tile(a, (m, k), (m0, k0), (bm, bk), a_words, slot * a_stage * 4, at, tid, threads);
        }
        if b_fast && n0 + bn <= n && k0 + bk <= k {
            let src = b.wrapping_add((k0 + b_r0) as usize * n as usize + (n0 + b_q * 4) as usize);
            let dst = b_shared.wrapping_add(slot * b_stage + b_q * gs + b_r0);
            let row = |j: u32| src.wrapping_add(j as usize * n as usize);
            let mut j = 0;
            while j + 4 <= b_rows && b_r0 + j + 4 <= bk {
                let (r0, r1, r2, r3) = (row(j), row(j + 1), row(j + 2), row(j + 3));
                unsafe {
                    dst.wrapping_add(j).copy_async(r0.cast());
                    dst.wrapping_add(j + 1).copy_async(r1.cast());
                    dst.wrapping_add(j + 2).copy_async(r2.cast());
                    dst.wrapping_add(j + 3).copy_async(r3.cast());
                }
                j += 4;
            }
            while j < b_rows && b_r0 + j < bk {
                unsafe { dst.wrapping_add(j).copy_async(row(j).cast()) };
                j += 1;
            }
        } else if b_fast {
            // An edge tile: the same chunks, each predicated (n is a multiple of 4, so a
            // chunk is wholly inside or outside): past n or k they arrive as zeros.
            let col_ok = n0 + b_q * 4 < n;
            let dst = b_shared.wrapping_add(slot * b_stage + b_q * gs + b_r0);
            let mut j = 0;
            while j < b_rows && b_r0 + j < bk {
                let kr = k0 + b_r0 + j;
                let ok = col_ok && kr < k;
                let src = if ok { b.wrapping_add(kr as usize * n as usize + (n0 + b_q * 4) as usize) } else { b };
                unsafe { dst.wrapping_add(j).copy_async_if(src.cast(), ok) };
                j += 1;
            }
        } else if b_words_ok {
            // Element (r, q) of the tile is column q of group q / 4 at k = r; at an edge,
            // words past n or k arrive as zeros.
            let col = n0 + bw_q;
            let dst = b_word_shared.wrapping_add((slot * b_stage + bw_q / 4 * gs + bw_r0) * 4 + bw_q % 4);
            let interior = n0 + bn <= n && k0 + bk <= k;
            let mut r = 0;
            while bw_r0 + r < bk {
                let kr = k0 + bw_r0 + r;
                let ok = interior || (col < n && kr < k);
                let src = if ok { b.wrapping_add(kr as usize * n as usize + col as usize) } else { b };
                unsafe { dst.wrapping_add(r * 4).copy_async_word_if(src, ok) };
                r += b_row_step;
            }
        } else {
            // Element (r, q) of the tile is column q of group q / 4 at k = r.
            let at = |r: u32, q: u32| (q / 4 * gs + r) * 4 + q % 4;
            gather_tile(b, (k, n), (k0, n0), (bk, bn), b_words, slot * b_stage * 4, at, tid, threads);
        }
        gpu::copy_async_commit();
    };

    let mut acc = [[0.0f32; 8]; TM];
    // Inlined whatever its size: out of line (LLVM's choice for the 16-row body) the
    // accumulators live behind a pointer, in memory.
    let multiply = #[inline(always)]
    |slot: u32| {
        // This thread's TM / 4 row groups of A and two column groups of B; slot `kk` of a
        // group holds its 4 values at k = kk. Walked by pointer so that the k of an
        // unrolled step are immediate offsets of one address.
        // Four named pointers, not an array: LLVM proves each one shared (LDS, not generic
        // loads) only as a plain value. Groups past TM / 4 repeat group 0 and go unused.
        let a_group = |q: u32| {
            let group = ty + if (q as usize) < TM / 4 { q * group_stride } else { 0 };
            unsafe { a_slots.range_ptr(slot * a_stage + group * gs, bk) }.cast_const()
        };
        let (mut pa0, mut pa1, mut pa2, mut pa3) = (a_group(0), a_group(1), a_group(2), a_group(3));
        let mut pb_lo = unsafe { b_slots.range_ptr(slot * b_stage + tx * gs, bk) }.cast_const();
        let mut pb_hi = unsafe { b_slots.range_ptr(slot * b_stage + (bn / 8 + tx) * gs, bk) }.cast_const();
        // One k: TM values of A and 8 of B from slot `$j` past the pointers, then 8 * TM
        // FMAs. Macros over literal indices (groups and rows past TM compiled out, `% TM`
        // keeping the index in bounds for the compiler's checks): a loop over 16 rows is
        // not unrolled, and a rolled one indexes the accumulators at run time, which puts
        // them in local memory.
        macro_rules! fragments {
            ($j:expr) => {
                unsafe {
                    let mut af = [0.0f32; TM];
                    macro_rules! read_group {
                        ($q:literal, $p:ident) => {
                            if $q < TM / 4 {
                                let v = gpu::read_shared($p.add($j)).0;
                                af[(4 * $q) % TM] = v[0];
                                af[(4 * $q + 1) % TM] = v[1];
                                af[(4 * $q + 2) % TM] = v[2];
                                af[(4 * $q + 3) % TM] = v[3];
                            }
                        };
                    }
                    read_group!(0, pa0);
                    read_group!(1, pa1);
                    read_group!(2, pa2);
                    read_group!(3, pa3);
                    let (bl, bh) = (gpu::read_shared(pb_lo.add($j)).0, gpu::read_shared(pb_hi.add($j)).0);
                    (af, [bl[0], bl[1], bl[2], bl[3], bh[0], bh[1], bh[2], bh[3]])
                }
            };
        }
        macro_rules! multiply {
            ($f:expr) => {
                let (af, bf) = $f;
                macro_rules! fma_row {
                    ($i:literal) => {
                        if $i < TM {
                            for j in 0..8 {
                                acc[$i % TM][j] = gpu::fma(af[$i % TM], bf[j], acc[$i % TM][j]);
                            }
                        }
                    };
                }
                for_rows!(fma_row);
            };
        }
        macro_rules! advance {
            ($by:literal) => {
                pa0 = pa0.wrapping_add($by);
                pa1 = pa1.wrapping_add($by);
                pa2 = pa2.wrapping_add($by);
                pa3 = pa3.wrapping_add($by);
                pb_lo = pb_lo.wrapping_add($by);
                pb_hi = pb_hi.wrapping_add($by);
            };
        }
        let mut kk = 0;
        // The k loop unrolled by UNROLL (8, 16 or 32; then by 4 for a bk that leaves 4):
        // straight-line code that ptxas can reorder to read the next k's fragments while
        // this k's FMAs issue. (Carrying prefetched fragments across iterations instead made
        // LLVM split them into 16 scalar loads through 16 pointers: 159 registers.)
        macro_rules! steps {
            ($($j:literal)*) => {
                $(multiply!(fragments!($j));)*
            };
        }
        if UNROLL >= 32 {
            while kk + 32 <= bk {
                steps!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
                advance!(32);
                kk += 32;
            }
        }
        if UNROLL >= 16 {
            while kk + 16 <= bk {
                steps!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
                advance!(16);
                kk += 16;
            }
        }
        if UNROLL >= 8 {
            while kk + 8 <= bk {
                steps!(0 1 2 3 4 5 6 7);
                advance!(8);
                kk += 8;
            }
        }
        while kk < bk {
            steps!(0 1 2 3);
            advance!(4);
            kk += 4;
        }
    };
    ring_pipeline(stages, split.count, load_tile, multiply);
    let (c, beta) = split.output(c, m, n, beta);
    store_tile(&acc, c, m, n, m0, n0, alpha, beta, row, col);
}

/// Copies the `tile.0 x tile.1` tile at `origin` of the row-major `dims.0 x dims.1` matrix
/// `src` into `dst`, element `(r, q)` at element `base + at(r, q)`, zero past the matrix's
/// edges: both kernels' path for tiles the asynchronous copies cannot take. Thread `tid`
/// of `threads` takes every `threads`-th element.
///
/// # Contract
/// `src` holds `dims.0 * dims.1` elements; `base + at(r, q)` is inside `dst` for every
/// element of the tile, and no other thread touches those words until a barrier.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn gather_tile<E: GemmInput>(
    src: *const E,
    dims: (u32, u32),
    origin: (u32, u32),
    tile: (u32, u32),
    dst: SharedArray<E>,
    base: u32,
    at: impl Fn(u32, u32) -> u32,
    tid: u32,
    threads: u32,
) {
    let mut e = tid;
    while e < tile.0 * tile.1 {
        let (r, q) = (e / tile.1, e % tile.1);
        let (gr, gq) = (origin.0 + r, origin.1 + q);
        let v = if gr < dims.0 && gq < dims.1 {
            unsafe { gpu::read_global(src.add(gr as usize * dims.1 as usize + gq as usize)) }
        } else {
            E::ZERO
        };
        unsafe { dst.write(base + at(r, q), v) };
        e += threads;
    }
}

/// Starts copying the tile of `tile.0` rows of `tile.1` 16-byte chunks at `origin` of the
/// row-major matrix `src` (`ld` elements per row) into `dst`, row `r`'s chunk `q` at chunk
/// `base + r * stride + q`: the row-major kernel's path for tiles inside the matrix.
///
/// # Contract
/// Every chunk of the tile is inside `src` and 16-byte aligned; `base + r * stride + q` is
/// inside `dst` for every chunk, untouched by other threads until the wait and a barrier.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn copy_rows_async<E: GemmInput>(
    src: *const E,
    ld: u32,
    origin: (u32, u32),
    tile: (u32, u32),
    dst: SharedArray<Vec4<u32>>,
    base: u32,
    stride: u32,
    tid: u32,
    threads: u32,
) {
    let ce = 16 / E::BYTES;
    let mut i = tid;
    while i < tile.0 * tile.1 {
        let (r, q) = (i / tile.1, i % tile.1);
        let chunk = unsafe { src.add((origin.0 + r) as usize * ld as usize + (origin.1 + q * ce) as usize) };
        unsafe { dst.copy_async(base + r * stride + q, chunk.cast()) };
        i += threads;
    }
}

/// A block's output tile and its share of the k-tiles. The launch has `tiles * splits`
/// blocks ([`SgemmConfig::launch_grid`]; `splits` is read back as `grid / tiles`): block
/// `b` computes tile `b % tiles` over k-tiles `kt0 .. kt0 + count` of split `b / tiles`,
/// `ceil(k_tiles / splits)` of them (fewer in the last split, none past the end: such a
/// split stores zeros). With one split the tile is stored (`alpha * acc + beta * C`); with
/// more, `c` is the workspace and split `s` stores `alpha * acc` in its slice
/// ([`SplitK::output`]), which `sgemm_split_sum` adds up in a fixed order. Traps on a grid
/// that is not a multiple of `tiles`.
#[derive(Clone, Copy)]
struct SplitK {
    tile: u32,
    kt0: u32,
    count: u32,
    split: u32,
    splits: u32,
}

impl SplitK {
    #[inline(always)]
    fn of_block(tiles: u32, k_tiles: u32) -> SplitK {
        let (grid, block) = (gpu::grid_dim_x(), gpu::block_idx_x());
        if tiles == 0 || !grid.is_multiple_of(tiles) {
            gpu::trap();
        }
        let splits = grid / tiles;
        let per = k_tiles.div_ceil(splits);
        let kt0 = (block / tiles * per).min(k_tiles);
        SplitK { tile: block % tiles, kt0, count: per.min(k_tiles - kt0), split: block / tiles, splits }
    }

    /// Where this block stores its tile, and the beta it stores with: `C` and `beta` with
    /// one split; with more, slice `split` of the workspace `c` (`split * m * n` floats in)
    /// and beta 0 (the slice is written, never read).
    #[inline(always)]
    fn output(&self, c: *mut f32, m: u32, n: u32, beta: f32) -> (*mut f32, f32) {
        if self.splits > 1 { (c.wrapping_add(self.split as usize * m as usize * n as usize), 0.0) } else { (c, beta) }
    }
}

/// The ring of `stages` shared tile buffers both GEMM kernels run: `load_tile(kt, slot)`
/// starts copying k-tile `kt` into ring slot `slot` and commits its copies as one group,
/// `multiply(slot)` multiplies the tile in `slot`. While tile `kt` is multiplied, tiles up
/// to `kt + stages - 2` are in flight, and `kt + stages - 1` starts after it (during it with
/// two stages); one barrier per k-tile (two with one stage).
#[inline(always)]
fn ring_pipeline(stages: u32, k_tiles: u32, load_tile: impl Fn(u32, u32), mut multiply: impl FnMut(u32)) {
    let mut s = 0;
    while s + 1 < stages {
        if s < k_tiles {
            load_tile(s, s);
        } else {
            gpu::copy_async_commit();
        }
        s += 1;
    }
    // Ring slots of tile kt and of tile kt + stages - 1, stepped instead of computed as
    // `% stages` (a run-time divisor is some twenty instructions per k-tile).
    let (mut slot, mut next_slot) = (0, stages - 1);
    let mut kt = 0;
    while kt < k_tiles {
        // Tile kt's copies (this thread's) have landed once at most stages - 2 newer groups
        // are pending; the barrier publishes every thread's, and tells that slot (kt - 1)
        // is free to refill.
        gpu::copy_async_wait_pending(stages.saturating_sub(2));
        gpu::barrier();
        let next = kt + stages - 1;
        // With three or more stages the copies of the next tile wait until this tile is
        // multiplied: its slot has been free since the barrier either way, the tile is not
        // needed for stages - 2 more multiplies, and a warp's copies then overlap the
        // other warps' FMAs and the wait at the next barrier instead of stalling every warp
        // at once right after this one. Two stages need them at once.
        let late = stages > 2;
        let load_next = || {
            if next < k_tiles {
                load_tile(next, next_slot);
            } else {
                gpu::copy_async_commit();
            }
        };
        if stages == 1 {
            load_tile(kt, 0);
            gpu::copy_async_wait_pending(0);
            gpu::barrier();
        } else if !late {
            load_next();
        }
        multiply(slot);
        if late {
            load_next();
        }
        slot = if slot + 1 == stages { 0 } else { slot + 1 };
        next_slot = if next_slot + 1 == stages { 0 } else { next_slot + 1 };
        kt += 1;
    }
}

/// `C = alpha * acc + beta * C` for a thread's `TM x TN` tile at rows `m0 + row(i)`,
/// columns `n0 + col(j)` (columns in runs of 4: `col(4h + e) = col(4h) + e`); `C` is not
/// read when beta is 0 (it may hold anything).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn store_tile<const TM: usize, const TN: usize>(
    acc: &[[f32; TN]; TM],
    c: *mut f32,
    m: u32,
    n: u32,
    m0: u32,
    n0: u32,
    alpha: f32,
    beta: f32,
    row: impl Fn(usize) -> u32,
    col: impl Fn(usize) -> u32,
) {
    let c_vec = vector::is_aligned16(c) && n.is_multiple_of(4);
    // A macro over the literal row: a rolled loop would index `acc` at run time. Rows past
    // TM are compiled out (`$i % TM` keeps the index in bounds for the compiler's checks).
    // Columns 4h .. 4h + 4 of row `$i`: a macro over literal `h` too (a loop over h with a
    // branch inside, such as split-K's atomic adds once were, is not unrolled, and the
    // accumulators it indexes at run time go to local memory).
    macro_rules! store_quad {
        ($i:literal, $h:literal, $c_row:expr) => {
            if $h < TN / 4 {
                let c_row = $c_row;
                let gn = n0 + col(4 * $h);
                let mut out = Vec4([0.0f32; 4]);
                for e in 0..4 {
                    out.0[e] = alpha * acc[$i % TM][(4 * $h + e) % TN];
                }
                if beta != 0.0 {
                    let old = vector::load4(c_row, gn as i64, n as u64, 0.0, c_vec);
                    for e in 0..4 {
                        out.0[e] = gpu::fma(beta, old.0[e], out.0[e]);
                    }
                }
                vector::store4(c_row, gn as u64, n as u64, out, c_vec);
            }
        };
    }
    macro_rules! store_row {
        ($i:literal) => {
            let gm = m0 + row($i);
            if $i < TM && gm < m {
                let c_row = unsafe { c.add(gm as usize * n as usize) };
                store_quad!($i, 0, c_row);
                store_quad!($i, 1, c_row);
                store_quad!($i, 2, c_row);
                store_quad!($i, 3, c_row);
            }
        };
    }
    for_rows!(store_row);
}

/// `sgemm_kgroups` with depth `BK` and `TM` rows per thread compiled in: the body of
/// `sgemm_f32_bk{8,16,32}` and `sgemm_f32_tm16_bk{8,16,32,64}`. Traps when the launch names
/// another depth. (`cfg.tm` is not read: the kernel's config takes its rows from `TM`.)
///
/// # Contract
/// As for [`gemm_rowmajor`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn sgemm_compiled_bk<const BK: u32, const TM: usize, const UNROLL: u32>(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
    cfg: SgemmConfig,
) {
    if cfg.bk != BK {
        gpu::trap();
    }
    sgemm_kgroups::<RuntimeTile<BK>, UNROLL, TM>(RuntimeTile(cfg), a, b, c, m, n, k, alpha, beta)
}

// Register caps (`[max_registers = N]`, ptxas's `.maxnreg`): the block size is a launch-time
// value, so ptxas cannot see that a 256-thread block needs at most 128 registers for two blocks
// per multiprocessor (uncapped, ptxas gives more and one block fits per SM). Blocks past 512
// threads are then refused before launch (the kernel's own limit), not failed. The 16 x 8 thread tiles (`_tm16`) hold 128 accumulators: one
// 256-thread block per SM at up to 255.
crate::kernels! { KERNELS;
    /// f32 GEMM, block tile chosen at launch; see the module documentation.
    pub fn sgemm_f32(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 128] [spills = "bk given at launch under the 128-register cap (two 256-thread blocks per SM): the k loop keeps its bounds and addresses live; bk 8, 16 and 32 take compiled-in entries"] {
        let cfg = SgemmConfig::new(bm, bn, bk, stages);
        sgemm_kgroups::<Runtime, 8, 8>(Runtime(cfg), a, b, c, m, n, k, alpha, beta)
    }
    /// `sgemm_f32` with `bk` = 8 compiled in (`bm`, `bn`, `stages` at launch; traps on
    /// another `bk`).
    pub fn sgemm_f32_bk8(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 128] {
        sgemm_compiled_bk::<8, 8, 8>(a, b, c, m, n, k, alpha, beta, SgemmConfig::new(bm, bn, bk, stages))
    }
    /// `sgemm_f32` with `bk` = 16 compiled in.
    pub fn sgemm_f32_bk16(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 128] [spills = "the 8-row tile under the 128-register cap since the predicated edge copies and split-K: their addresses and bounds; the shape suites measured it faster than the element gather it replaced (sgemm NOTES.md)"] {
        sgemm_compiled_bk::<16, 8, 8>(a, b, c, m, n, k, alpha, beta, SgemmConfig::new(bm, bn, bk, stages))
    }
    /// `sgemm_f32` with `bk` = 32 compiled in.
    pub fn sgemm_f32_bk32(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 128] [spills = "the 8-row tile under the 128-register cap since the predicated edge copies and split-K: their addresses and bounds; the shape suites measured it faster than the element gather it replaced (sgemm NOTES.md)"] {
        sgemm_compiled_bk::<32, 8, 8>(a, b, c, m, n, k, alpha, beta, SgemmConfig::new(bm, bn, bk, stages))
    }
    /// f32 GEMM with 16 x 8 thread tiles (`tm` = 16), block tile chosen at launch.
    pub fn sgemm_f32_tm16(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 255] {
        let cfg = SgemmConfig::new(bm, bn, bk, stages);
        sgemm_kgroups::<Runtime, 8, 16>(Runtime(cfg), a, b, c, m, n, k, alpha, beta)
    }
    /// `sgemm_f32_tm16` with `bk` = 8 compiled in.
    pub fn sgemm_f32_tm16_bk8(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 255] {
        sgemm_compiled_bk::<8, 16, 8>(a, b, c, m, n, k, alpha, beta, SgemmConfig::new(bm, bn, bk, stages))
    }
    /// `sgemm_f32_tm16` with `bk` = 16 compiled in.
    pub fn sgemm_f32_tm16_bk16(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 255] {
        sgemm_compiled_bk::<16, 16, 16>(a, b, c, m, n, k, alpha, beta, SgemmConfig::new(bm, bn, bk, stages))
    }
    /// `sgemm_f32_tm16` with `bk` = 32 compiled in.
    pub fn sgemm_f32_tm16_bk32(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 255] {
        sgemm_compiled_bk::<32, 16, 32>(a, b, c, m, n, k, alpha, beta, SgemmConfig::new(bm, bn, bk, stages))
    }
    /// `sgemm_f32_tm16` with `bk` = 64 compiled in (two 32-k steps per k-tile).
    pub fn sgemm_f32_tm16_bk64(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 255] {
        sgemm_compiled_bk::<64, 16, 32>(a, b, c, m, n, k, alpha, beta, SgemmConfig::new(bm, bn, bk, stages))
    }
    /// f32 GEMM with 4 x 8 thread tiles (`tm` = 4), block tile chosen at launch: the
    /// small-problem tiles (32 x 32 is 32 threads, 64 x 64 128).
    pub fn sgemm_f32_tm4(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 112] {
        let cfg = SgemmConfig::new(bm, bn, bk, stages);
        sgemm_kgroups::<Runtime, 8, 4>(Runtime(cfg), a, b, c, m, n, k, alpha, beta)
    }
    /// `sgemm_f32_tm4` with `bk` = 8 compiled in.
    pub fn sgemm_f32_tm4_bk8(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 112] {
        sgemm_compiled_bk::<8, 4, 8>(a, b, c, m, n, k, alpha, beta, SgemmConfig::new(bm, bn, bk, stages))
    }
    /// `sgemm_f32_tm4` with `bk` = 16 compiled in.
    pub fn sgemm_f32_tm4_bk16(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 112] {
        sgemm_compiled_bk::<16, 4, 16>(a, b, c, m, n, k, alpha, beta, SgemmConfig::new(bm, bn, bk, stages))
    }
    /// `sgemm_f32_tm4` with `bk` = 32 compiled in.
    pub fn sgemm_f32_tm4_bk32(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 112] {
        sgemm_compiled_bk::<32, 4, 32>(a, b, c, m, n, k, alpha, beta, SgemmConfig::new(bm, bn, bk, stages))
    }
    /// Split-K's sum (`ws`: the workspace of `splits` slices of `m x n`): `C = sum_s ws[s] +
    /// beta * C` in a fixed order, [`split::sum_blocks`] blocks of [`split::SUM_THREADS`]; see
    /// [`split`].
    pub fn sgemm_split_sum(ws: *const f32, c: *mut f32, m: u32, n: u32, splits: u32, beta: f32) {
        split::split_sum(ws, c, m, n, splits, beta)
    }
    /// The tensor-map kernel with `bk` = 32 (`bn` = 128; `a`, `b`: the tensor maps of A and
    /// B in device memory); see `sgemm_tma`.
    pub fn sgemm_f32_tma_bk32(a: *const u8, b: *const u8, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) {
        let cfg = SgemmConfig { bn, ..SgemmConfig::tma(bm, bk, stages) };
        tma::sgemm_tma::<32>(a, b, c, m, n, k, alpha, beta, cfg)
    }
    /// The tensor-map kernel with `bk` = 64.
    pub fn sgemm_f32_tma_bk64(a: *const u8, b: *const u8, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) {
        let cfg = SgemmConfig { bn, ..SgemmConfig::tma(bm, bk, stages) };
        tma::sgemm_tma::<64>(a, b, c, m, n, k, alpha, beta, cfg)
    }
    /// The stream-K tensor-map kernel, 128 columns per block (`a`, `b`: the tensor maps;
    /// `partials`, `counters`: its workspace); see `tma::sgemm_streamk`. `sk` is the host's:
    /// the schedule follows the grid. 16 threads to a row of the block.
    pub fn sgemm_f32_sk(a: *const u8, b: *const u8, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32, partials: *mut f32, counters: *mut u32) {
        let cfg = SgemmConfig { bk, ..SgemmConfig::streamk(bm, bn, stages, 1) };
        tma::sgemm_streamk::<128, 8>(a, b, c, (m, n, k), (alpha, beta), cfg, partials, counters)
    }
    /// The stream-K tensor-map kernel, 64 columns per block.
    pub fn sgemm_f32_sk_n64(a: *const u8, b: *const u8, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32, partials: *mut f32, counters: *mut u32) {
        let cfg = SgemmConfig { bk, ..SgemmConfig::streamk(bm, bn, stages, 1) };
        tma::sgemm_streamk::<64, 8>(a, b, c, (m, n, k), (alpha, beta), cfg, partials, counters)
    }
    /// The stream-K tensor-map kernel, 32 columns per block.
    pub fn sgemm_f32_sk_n32(a: *const u8, b: *const u8, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32, partials: *mut f32, counters: *mut u32) {
        let cfg = SgemmConfig { bk, ..SgemmConfig::streamk(bm, bn, stages, 1) };
        tma::sgemm_streamk::<32, 4>(a, b, c, (m, n, k), (alpha, beta), cfg, partials, counters)
    }
    /// Pads the rows of A (`a_rows x a_cols`, into rows `a_ld` apart) and of B (likewise) for
    /// the tensor-map kernels, in one launch of `pack_blocks(A) + pack_blocks(B)` blocks of
    /// `PACK_THREADS`; see `pack`.
    pub fn sgemm_pack(a: *const f32, a_out: *mut f32, a_rows: u32, a_cols: u32, a_ld: u32, b: *const f32, b_out: *mut f32, b_rows: u32, b_cols: u32, b_ld: u32) {
        if gpu::block_dim_x() != pack::PACK_THREADS || a_ld < a_cols || b_ld < b_cols {
            gpu::trap();
        }
        let a_blocks = pack::pack_blocks(a_rows, a_cols);
        let block = gpu::block_idx_x() as u64;
        if block < a_blocks {
            pack::pack_span(a, a_out, a_cols, a_ld, block as u32)
        } else if block - a_blocks < pack::pack_blocks(b_rows, b_cols) {
            pack::pack_span(b, b_out, b_cols, b_ld, (block - a_blocks) as u32)
        }
    }
    /// `sgemm_f32_tm16_bk32` with its k loop unrolled by 8 instead of the whole tile, an
    /// ablation.
    pub fn sgemm_f32_tm16_bk32_u8(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 255] {
        sgemm_compiled_bk::<32, 16, 8>(a, b, c, m, n, k, alpha, beta, SgemmConfig::new(bm, bn, bk, stages))
    }
    /// `sgemm_f32_tm16_bk32` with its k loop unrolled by 16 instead of the whole tile, an
    /// ablation (half the code of the whole-tile unroll).
    pub fn sgemm_f32_tm16_bk32_u16(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 255] {
        sgemm_compiled_bk::<32, 16, 16>(a, b, c, m, n, k, alpha, beta, SgemmConfig::new(bm, bn, bk, stages))
    }
    /// `sgemm_f32` with its k loop unrolled by 4 instead of 8 (the ablation of it).
    pub fn sgemm_f32_unroll4(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 128] [spills = "the 8-row tile under the 128-register cap since the predicated edge copies and split-K: their addresses and bounds; the shape suites measured it faster than the element gather it replaced (sgemm NOTES.md)"] {
        let cfg = SgemmConfig::new(bm, bn, bk, stages);
        sgemm_kgroups::<Runtime, 4, 8>(Runtime(cfg), a, b, c, m, n, k, alpha, beta)
    }
    /// f32 GEMM with the 128 x 128 x 16, 2-stage block tile compiled in (the same source).
    pub fn sgemm_f32_128x128x16s2(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 128] [spills = "the 8-row tile under the 128-register cap since the predicated edge copies and split-K: their addresses and bounds; the shape suites measured it faster than the element gather it replaced (sgemm NOTES.md)"] {
        if SgemmConfig::new(bm, bn, bk, stages) != FIXED_128X128X16S2 {
            gpu::trap();
        }
        sgemm_kgroups::<Fixed<128, 128, 16, 2>, 8, 8>(Fixed, a, b, c, m, n, k, alpha, beta)
    }
    /// f16 inputs (as bits), f32 accumulation and output; block tile chosen at launch.
    pub fn hgemm_f16_f32(a: *const u16, b: *const u16, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, bm: u32, bn: u32, bk: u32, stages: u32) [max_registers = 128] {
        let cfg = SgemmConfig::new(bm, bn, bk, stages);
        gemm_rowmajor::<u16, Runtime>(Runtime(cfg), a, b, c, m, n, k, alpha, beta)
    }
}

/// The entry point for `config` with f32 or f16 inputs, the compiled-in tile or not: f32
/// takes the entry with its `bk` compiled in where there is one ([`COMPILED_BK`]), and the
/// 4- and 16-row entries for `tm` = 4 and 16. `None` for a combination no entry has (f16 with the
/// compiled-in tile or 16 rows, the compiled-in tile with 16 rows).
pub fn entry_name(f16_inputs: bool, fixed: bool, config: &SgemmConfig) -> Option<&'static str> {
    if config.sk > 0 {
        return match (f16_inputs, fixed, config.tma, config.bn) {
            (false, false, true, 128) => Some("sgemm_f32_sk"),
            (false, false, true, 64) => Some("sgemm_f32_sk_n64"),
            (false, false, true, 32) => Some("sgemm_f32_sk_n32"),
            _ => None,
        };
    }
    if config.tma {
        return match (f16_inputs, fixed, config.bk) {
            (false, false, 32) => Some("sgemm_f32_tma_bk32"),
            (false, false, 64) => Some("sgemm_f32_tma_bk64"),
            _ => None,
        };
    }
    match (f16_inputs, fixed, config.tm, config.bk) {
        (false, false, 4, 8) => Some("sgemm_f32_tm4_bk8"),
        (false, false, 4, 16) => Some("sgemm_f32_tm4_bk16"),
        (false, false, 4, 32) => Some("sgemm_f32_tm4_bk32"),
        (false, false, 4, _) => Some("sgemm_f32_tm4"),
        (false, false, 8, 8) => Some("sgemm_f32_bk8"),
        (false, false, 8, 16) => Some("sgemm_f32_bk16"),
        (false, false, 8, 32) => Some("sgemm_f32_bk32"),
        (false, false, 8, _) => Some("sgemm_f32"),
        (false, false, 16, 8) => Some("sgemm_f32_tm16_bk8"),
        (false, false, 16, 16) => Some("sgemm_f32_tm16_bk16"),
        (false, false, 16, 32) => Some("sgemm_f32_tm16_bk32"),
        (false, false, 16, 64) => Some("sgemm_f32_tm16_bk64"),
        (false, false, 16, _) => Some("sgemm_f32_tm16"),
        (false, true, 8, _) => Some("sgemm_f32_128x128x16s2"),
        (true, false, 8, _) => Some("hgemm_f16_f32"),
        _ => None,
    }
}
