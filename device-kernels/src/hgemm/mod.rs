//! Tensor-core GEMM, `C (m x n) = A (m x k) B^T`, with `A` row-major `m x k` and `B` given
//! as its transpose, row-major `n x k` (both K-major: a linear layer's `X W^T`; cuBLAS's
//! "TN"); f16 or bf16 inputs, f32 accumulation, `C` row-major in f32 or the input type.
//! Measurements, history: `host/src/families/hgemm/NOTES.md`.
//!
//! # Kernels
//! - `hgemm_wgmma_*` (sm_90a): warp-specialised. Warpgroup 0 is the producer: one thread
//!   starts two tensor-map copies (TMA, 128-byte swizzle) per k-tile of 64 into a ring of
//!   `stages` slots and completes the slot's `full` barrier; its warpgroup then gives its
//!   registers back (`setmaxnreg`). The math warpgroups run four `wgmma` m64nBNk16 per
//!   k-tile on the slot, keep one k-tile's group in flight, and release the slot before
//!   (`empty` barrier, one arrival per reader). Blocks are persistent: block `b` takes
//!   tiles `b`, `b + grid`, ... in grouped order ([`tile_coords`]), so the producer copies
//!   the next tile's k-tiles while the math warpgroups store the last. Two schedules, chosen
//!   at launch:
//!   - cooperative: warpgroups 1..=`units` each own 64 rows of every `BM x BN` tile
//!     (`BM = 64 * units`), and store together after the tile's last k-tile;
//!   - ping-pong (two math warpgroups): tiles are `64 x BN` and alternate between the
//!     warpgroups, whose k-tiles follow each other in the ring; one stores its tile while
//!     the other multiplies, so the stores are hidden.
//!
//!   A whole tile is stored from registers, or (launch-time, [`TMA_STORE`]) through staging
//!   buffers in shared memory by tensor-map stores that run on under the next tile's MMAs
//!   ([`store`]).
//!
//!   Cooperative blocks can also take the stream-K schedule ([`STREAMK`], [`crate::streamk`]):
//!   whole waves of tiles data-parallel, the last wave and the tail split by k-tile evenly
//!   over the clusters, so no SM idles through a partial last wave. A piece of a split tile
//!   is summed per math warp: the warp writes its 16 x `BN` part to the workspace, counts
//!   itself on its counter, and the warp that counts last adds every piece in cluster order
//!   and stores ([`fix_up`]); no warp waits for another.
//! - `hgemm_mma_*` (sm_80): `mma.sync` m16n8k16 from `ldmatrix`, one block per tile, a
//!   `cp.async` ring of `stages` k-tiles of 32 (rows XOR-swizzled by 16-byte chunk so that
//!   `ldmatrix` reads eight rows without a bank conflict). Warps `4 * wm + wn` own 64 x 32
//!   of the `BM x 128` tile.
//!
//! # Compiled in, launch-time
//! Compiled in: the instruction shapes (wgmma N = `BN` 128, 160, 192, 224 or 256 by entry,
//! k-tile 64;
//! mma warp tile 64 x 32, k-tile 32), the element type and the cluster size. Launch-time:
//! `BM` (the math warpgroups or warp rows, so the block size), the schedule, the stages (the
//! ring's bytes), the output type and the tile order; `_fixed` entries compile `BM`, `BN`
//! and the stages in, to measure what the launch-time forms cost.
//!
//! # Launch-sized memory ([`HgemmConfig::layout`])
//! `stages` slots of A (a tile's rows, [`HgemmConfig::tile_rows`]) then `stages` of B (`BN`
//! rows), each row `2 * BK` bytes, slots 1024-byte aligned; then (wgmma) `stages` `full` and
//! `stages` `empty` barriers, ping-pong's two `turn` barriers, and with [`TMA_STORE`]
//! `stage_buffers` (2 to 4) staging buffers of `64 x` [`STAGE_COLS`] f32 per math warpgroup
//! (1024-byte aligned).
//!
//! # Entry points ([`entry_name`])
//! `hgemm_wgmma_{f16,bf16}_n{128,160,192,224,256}[_c2](a_map, b_map, c, c_map, m, n, k, flags, bm,
//! stages, group_m, partials, counters)` (`a_map`, `b_map`: `CUtensorMap`s in device memory, box
//! `64 x tile_rows` and `64 x BN / cluster`, 128-byte swizzle; `c_map`: `C`'s, box
//! [`STAGE_COLS`] x 64, 128-byte swizzle for f32 and 64-byte for 16-bit output, null without
//! [`TMA_STORE`]; `partials`, `counters`: the stream-K workspace,
//! [`HgemmConfig::sk_workspace`], null without [`STREAMK`]); `hgemm_mma_{f16,bf16}(a, b, c,
//! ...)` (the same scalars; `a`, `b` the matrices; `c_map` and the workspace unused);
//! `hgemm_wgmma_f16_n256[_c2]_fixed` (`BM` 128, 4 stages, cooperative). `flags`: [`OUT16`]
//! writes `C` in the input type, else f32; [`PINGPONG`] picks the ping-pong schedule;
//! [`DEPTH2`] keeps two k-tile groups in flight; [`STREAMK`] the stream-K schedule;
//! [`TMA_STORE`] stores whole tiles through shared memory, through 3 or 4 buffers per math
//! warpgroup with [`STAGE3`] or [`STAGE4`] (else 2). Grid:
//! wgmma at most one block per tile without stream-K, at most one cluster per k-tile with it
//! ([`HgemmConfig::schedule`]); mma one per tile.

use crate::gpu::{self, WARPGROUP};
use crate::layout::{Carve, LayoutError, Slice};
use crate::streamk::{Segment, StreamK, read_l2};
use crate::vector::Vec4;

/// `$body` once per value, `$i` bound to it (a `usize`): loops over register arrays written
/// out, so every index is a constant and the arrays stay in registers (a loop LLVM leaves
/// rolled moves them to local memory).
macro_rules! unroll {
    ($i:ident in [$($v:literal)*] $body:block) => {
        $( { let $i: usize = $v; $body } )*
    };
}

mod store;
pub use store::{MAX_STAGE_BUFFERS, MIN_STAGE_BUFFERS, STAGE_COLS, STAGE_WORDS, staged_offset};
use store::{Staging, store_pair, store_staged};

/// Depth of a wgmma k-tile: one 128-byte row of 16-bit elements (the swizzle's width).
pub const WGMMA_BK: u32 = 64;
/// Depth of an mma k-tile: 64-byte rows, four 16-byte chunks.
pub const MMA_BK: u32 = 32;
/// Block tile columns of the mma kernel (four warps of 32).
pub const MMA_BN: u32 = 128;
/// Block tile columns the wgmma entries have (one entry each). The widths between the powers
/// of two let the cost model fill the SMs' waves: 2560 columns are 10 tiles of 256 but 16 of
/// 160, 3072 are 12 of 256 but 16 of 192.
pub const WGMMA_BN: [u32; 5] = [128, 160, 192, 224, 256];
/// Rows of `C` per math warpgroup (wgmma) or per row of four warps (mma).
pub const ROWS_PER_UNIT: u32 = 64;
/// Most math units: two warpgroups of 128 accumulators fit the register file beside the
/// producer ([`gpu::registers_for_math`]).
pub const MAX_UNITS: u32 = 2;
/// Most ring slots.
pub const MAX_STAGES: u32 = 8;
/// Fewest ring slots: each keeps one k-tile's MMAs in flight while the next is copied (with
/// one slot the wgmma kernel's producer would wait for a release that comes only after the
/// next copy).
pub const MIN_STAGES: u32 = 2;
/// Slots are 1024-byte aligned (the 128-byte swizzle's period).
pub const SLOT_ALIGN: u32 = 1024;

/// Which instruction the kernel multiplies with.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(rename_all = "lowercase"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MmaKind {
    /// sm_90a `wgmma.mma_async` fed by tensor-map copies.
    Wgmma,
    /// sm_80 `mma.sync` fed by `cp.async`.
    Mma,
}

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HgemmConfig {
    pub kind: MmaKind,
    /// Block rows: 64 per math unit, 64 or 128. Cooperative (the default), the units share one
    /// `bm`-row tile; ping-pong, each takes its own 64-row tile ([`HgemmConfig::tile_rows`]).
    pub bm: u32,
    /// Block tile columns: one of [`WGMMA_BN`] (wgmma), [`MMA_BN`] (mma).
    pub bn: u32,
    /// Ring slots: k-tiles in flight ([`MIN_STAGES`] to [`MAX_STAGES`]).
    pub stages: u32,
    /// Tile rows per group of the tile order ([`tile_coords`]): consecutive tiles walk a
    /// group's rows first, so the tiles in flight share their B tiles in L2.
    pub group_m: u32,
    /// Blocks per cluster sharing B tiles (wgmma, `bn` 256): 1 or [`CLUSTER`]. Compiled in
    /// (its own entries): a cluster's size is fixed in the PTX. 1 in records written
    /// before it existed.
    #[cfg_attr(feature = "serde", serde(default = "one", skip_serializing_if = "is_one"))]
    pub cluster: u32,
    /// wgmma with two math warpgroups: each warpgroup computes its own 64-row tile (the
    /// block's tiles alternate between them), so one's epilogue runs under the other's
    /// MMAs (CUTLASS's ping-pong). Launch-time. Absent (false) in records written before it
    /// existed.
    #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "core::ops::Not::not"))]
    pub pingpong: bool,
    /// wgmma: k-tile groups each math warpgroup keeps in flight, 1 or 2 (with at least 3
    /// stages: the ring then holds two unreleased k-tiles per reader and the next). With 2,
    /// a warpgroup waits for the group before last and releases its slot, so the tensor
    /// cores have one more k-tile queued behind the one running. Launch-time; 1 in records
    /// written before it existed.
    #[cfg_attr(feature = "serde", serde(default = "one", skip_serializing_if = "is_one"))]
    pub depth: u32,
    /// Cooperative wgmma: the stream-K schedule ([`HgemmConfig::schedule`]): the tiles past
    /// the last whole wave but one are split by k-tile evenly over the clusters, so a partial
    /// last wave leaves no SM idle; the pieces are summed in a fixed order (the result does
    /// not depend on timing). Launch-time; false in records written before it existed.
    #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "core::ops::Not::not"))]
    pub streamk: bool,
    /// wgmma: store each whole tile through launch-sized staging buffers by tensor-map stores
    /// ([`store::store_staged`]), so the next tile's MMAs start once the tile is in shared
    /// memory; else straight from registers. Needs `C`'s rows to be 16-byte multiples (the
    /// host's check). Launch-time; false in records written before it existed.
    #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "core::ops::Not::not"))]
    pub tma_store: bool,
    /// Staged stores' buffers per math warpgroup, [`MIN_STAGE_BUFFERS`] to [`MAX_STAGE_BUFFERS`]
    /// (past 2 only with `tma_store`): with more, a chunk's store has more chunks' time to read
    /// its buffer before the buffer is written again, at 8 KB per warpgroup each. Launch-time;
    /// 2 in records written before it existed.
    #[cfg_attr(feature = "serde", serde(default = "two", skip_serializing_if = "is_two"))]
    pub stage_buffers: u32,
}

#[cfg(feature = "serde")]
fn one() -> u32 {
    1
}
#[cfg(feature = "serde")]
fn is_one(v: &u32) -> bool {
    *v == 1
}
#[cfg(feature = "serde")]
fn two() -> u32 {
    MIN_STAGE_BUFFERS
}
#[cfg(feature = "serde")]
fn is_two(v: &u32) -> bool {
    *v == MIN_STAGE_BUFFERS
}

/// Bit of an entry's `flags`: write `C` in the input type (else f32).
pub const OUT16: u32 = 1;
/// Bit of an entry's `flags`: the ping-pong schedule ([`HgemmConfig::pingpong`]; wgmma, two
/// math warpgroups).
pub const PINGPONG: u32 = 2;
/// Bit of an entry's `flags`: two k-tile groups in flight ([`HgemmConfig::depth`] 2).
pub const DEPTH2: u32 = 4;
/// Bit of an entry's `flags`: the stream-K schedule ([`HgemmConfig::streamk`]).
pub const STREAMK: u32 = 8;
/// Bit of an entry's `flags`: whole tiles stored through shared memory by tensor-map stores
/// ([`HgemmConfig::tma_store`]; the entry's `c_map` is `C`'s tensor map).
pub const TMA_STORE: u32 = 16;
/// Bits of an entry's `flags`: 3 or 4 staging buffers per math warpgroup
/// ([`HgemmConfig::stage_buffers`]; neither: 2).
pub const STAGE3: u32 = 32;
pub const STAGE4: u32 = 64;

/// Blocks of the clustered wgmma entries (`_c2`).
pub const CLUSTER: u32 = 2;

/// Where a config's arrays sit in the launch-sized region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HgemmLayout {
    /// `stages` slots of `bm x bk` 16-bit elements.
    pub a: Slice<u16>,
    /// `stages` slots of `bn x bk`.
    pub b: Slice<u16>,
    /// wgmma: `stages` barriers the copies complete, then `stages` the consumers release.
    pub full: Slice<u64>,
    pub empty: Slice<u64>,
    /// Ping-pong: one barrier per math warpgroup, completed when the other has waited for
    /// every k-tile of its tile (its turn to multiply); empty otherwise.
    pub turn: Slice<u64>,
    /// [`HgemmConfig::tma_store`]: each math warpgroup's `stage_buffers` staging buffers of
    /// [`STAGE_WORDS`] words, 1024-byte aligned (the swizzle's period); empty otherwise.
    pub stage: Slice<u32>,
}

impl HgemmConfig {
    pub const fn wgmma(bm: u32, bn: u32, stages: u32) -> Self {
        HgemmConfig {
            kind: MmaKind::Wgmma,
            bm,
            bn,
            stages,
            group_m: 8,
            cluster: 1,
            pingpong: false,
            depth: 1,
            streamk: false,
            tma_store: false,
            stage_buffers: MIN_STAGE_BUFFERS,
        }
    }
    pub const fn mma(bm: u32, stages: u32) -> Self {
        HgemmConfig {
            kind: MmaKind::Mma,
            bm,
            bn: MMA_BN,
            stages,
            group_m: 8,
            cluster: 1,
            pingpong: false,
            depth: 1,
            streamk: false,
            tma_store: false,
            stage_buffers: MIN_STAGE_BUFFERS,
        }
    }
    /// This config in clusters of `cluster` blocks.
    pub const fn with_cluster(self, cluster: u32) -> Self {
        HgemmConfig { cluster, ..self }
    }
    /// This config with the ping-pong schedule (see the field).
    pub const fn with_pingpong(self, pingpong: bool) -> Self {
        HgemmConfig { pingpong, ..self }
    }
    /// This config with `depth` groups in flight (see the field).
    pub const fn with_depth(self, depth: u32) -> Self {
        HgemmConfig { depth, ..self }
    }
    /// This config with the stream-K schedule on or off (see the field).
    pub const fn with_streamk(self, streamk: bool) -> Self {
        HgemmConfig { streamk, ..self }
    }
    /// This config with tensor-map stores of whole tiles on or off (see the field).
    pub const fn with_tma_store(self, tma_store: bool) -> Self {
        HgemmConfig { tma_store, ..self }
    }
    /// This config with `stage_buffers` staging buffers per math warpgroup (see the field).
    pub const fn with_stage_buffers(self, stage_buffers: u32) -> Self {
        HgemmConfig { stage_buffers, ..self }
    }
    /// The launch-time choices of this config as an entry's `flags` (without [`OUT16`], which
    /// is the problem's): the inverse of [`HgemmConfig::with_flags`].
    pub const fn flags(&self) -> u32 {
        (if self.pingpong { PINGPONG } else { 0 })
            | (if self.depth == 2 { DEPTH2 } else { 0 })
            | (if self.streamk { STREAMK } else { 0 })
            | (if self.tma_store { TMA_STORE } else { 0 })
            | match self.stage_buffers {
                3 => STAGE3,
                4 => STAGE4,
                _ => 0,
            }
    }
    /// This config with the launch-time choices of an entry's `flags` ([`PINGPONG`],
    /// [`DEPTH2`], [`STREAMK`], [`TMA_STORE`], [`STAGE3`], [`STAGE4`]).
    pub const fn with_flags(self, flags: u32) -> Self {
        HgemmConfig {
            pingpong: flags & PINGPONG != 0,
            depth: if flags & DEPTH2 != 0 { 2 } else { 1 },
            streamk: flags & STREAMK != 0,
            tma_store: flags & TMA_STORE != 0,
            // Both bits: not a count any config has (`fits` refuses it).
            stage_buffers: match (flags & STAGE3 != 0, flags & STAGE4 != 0) {
                (false, false) => MIN_STAGE_BUFFERS,
                (true, false) => 3,
                (false, true) => 4,
                (true, true) => 0,
            },
            ..self
        }
    }
    /// Rows of one output tile (and of an A slot): `bm`, or 64 in ping-pong.
    pub const fn tile_rows(&self) -> u32 {
        if self.pingpong { ROWS_PER_UNIT } else { self.bm }
    }
    /// Math warpgroups that read each slot, so arrive on its `empty` barrier (per block).
    pub const fn readers_per_slot(&self) -> u32 {
        if self.pingpong { 1 } else { self.units() }
    }
    /// Depth of a k-tile.
    pub const fn bk(&self) -> u32 {
        match self.kind {
            MmaKind::Wgmma => WGMMA_BK,
            MmaKind::Mma => MMA_BK,
        }
    }
    /// Rows of B (of the `bn` a slot holds) that one block's TMA copy brings: the whole tile
    /// alone, its `1 / cluster` share in a cluster (multicast to every block). The host's B
    /// tensor map has this box height.
    pub const fn b_box_rows(&self) -> u32 {
        let cluster = if self.cluster == 0 { 1 } else { self.cluster };
        self.bn / cluster
    }
    /// Math units: warpgroups (wgmma) or rows of four warps (mma).
    pub const fn units(&self) -> u32 {
        self.bm / ROWS_PER_UNIT
    }
    /// Threads per block: the producer warpgroup and the math warpgroups (wgmma), four warps
    /// per unit (mma).
    pub const fn threads(&self) -> u32 {
        match self.kind {
            MmaKind::Wgmma => WARPGROUP * (1 + self.units()),
            MmaKind::Mma => WARPGROUP * self.units(),
        }
    }
    /// Whether the kernel can run this config (see the fields' rules); the host says which
    /// rule a refused config breaks.
    pub const fn fits(&self) -> bool {
        let bn_ok = match self.kind {
            MmaKind::Wgmma => {
                let mut i = 0;
                let mut found = false;
                while i < WGMMA_BN.len() {
                    found |= self.bn == WGMMA_BN[i];
                    i += 1;
                }
                found
            }
            MmaKind::Mma => self.bn == MMA_BN,
        };
        let cluster_ok = self.cluster == 1
            || (self.cluster == CLUSTER && matches!(self.kind, MmaKind::Wgmma) && self.bn != WGMMA_BN[0]);
        let pingpong_ok = !self.pingpong || (matches!(self.kind, MmaKind::Wgmma) && self.units() == MAX_UNITS);
        let depth_ok = self.depth == 1 || (self.depth == 2 && matches!(self.kind, MmaKind::Wgmma) && self.stages >= 3);
        let streamk_ok = !self.streamk || (matches!(self.kind, MmaKind::Wgmma) && !self.pingpong);
        let tma_store_ok = !self.tma_store || matches!(self.kind, MmaKind::Wgmma);
        let buffers_ok = self.stage_buffers == MIN_STAGE_BUFFERS
            || (self.tma_store && self.stage_buffers > MIN_STAGE_BUFFERS && self.stage_buffers <= MAX_STAGE_BUFFERS);
        bn_ok
            && self.bm.is_multiple_of(ROWS_PER_UNIT)
            && self.units() >= 1
            && self.units() <= MAX_UNITS
            && self.stages >= MIN_STAGES
            && self.stages <= MAX_STAGES
            && self.group_m >= 1
            && cluster_ok
            && pingpong_ok
            && depth_ok
            && streamk_ok
            && tma_store_ok
            && buffers_ok
    }
    /// The carve of the launch-sized region (see the module documentation).
    pub fn layout(&self) -> Result<HgemmLayout, LayoutError> {
        let mut carve = Carve::new();
        let a = carve.array_aligned::<u16>(self.stages * self.tile_rows() * self.bk(), SLOT_ALIGN)?;
        let b = carve.array_aligned::<u16>(self.stages * self.bn * self.bk(), SLOT_ALIGN)?;
        let bars = if self.kind == MmaKind::Wgmma { self.stages } else { 0 };
        let full = carve.array::<u64>(bars)?;
        let empty = carve.array::<u64>(bars)?;
        let turn = carve.array::<u64>(if self.pingpong { MAX_UNITS } else { 0 })?;
        let staged = self.tma_store && self.kind == MmaKind::Wgmma;
        let stage = carve.array_aligned::<u32>(
            if staged { self.units() * self.stage_buffers * STAGE_WORDS } else { 0 },
            SLOT_ALIGN,
        )?;
        Ok(HgemmLayout { a, b, full, empty, turn, stage })
    }
    /// Launch-sized bytes of the layout.
    pub fn shared_bytes(&self) -> Result<u32, LayoutError> {
        let l = self.layout()?;
        Ok(match self.kind {
            MmaKind::Wgmma if self.tma_store => l.stage.end(),
            MmaKind::Wgmma => l.turn.end(),
            MmaKind::Mma => l.b.end(),
        })
    }
    /// Output tiles of an `m x n` result.
    pub const fn tiles(&self, m: u32, n: u32) -> u64 {
        m.div_ceil(self.tile_rows()) as u64 * n.div_ceil(self.bn) as u64
    }
    /// Blocks per cluster, at least 1.
    const fn cluster_size(&self) -> u32 {
        if self.cluster == 0 { 1 } else { self.cluster }
    }
    /// Work items of an `m x n` result (wgmma): column tiles of `cluster` row tiles, one per
    /// block of a cluster.
    pub const fn items(&self, m: u32, n: u32) -> u32 {
        m.div_ceil(self.tile_rows()).div_ceil(self.cluster_size()) * n.div_ceil(self.bn)
    }
    /// The schedule of a wgmma launch of `grid` blocks on `m x n x k`: the items (in
    /// [`tile_coords`] order) over the grid's clusters, stream-K or every item whole.
    pub const fn schedule(&self, m: u32, n: u32, k: u32, grid: u32) -> StreamK {
        let (items, k_tiles, workers) = (self.items(m, n), k.div_ceil(self.bk()), grid / self.cluster_size());
        if self.streamk {
            StreamK::new(items, k_tiles, workers)
        } else {
            StreamK::data_parallel(items, k_tiles, workers)
        }
    }
    /// Math warps of a block: each sums its own 16 rows of a split tile ([`fix_up`]).
    pub const fn math_warps(&self) -> u32 {
        self.units() * 4
    }
    /// The stream-K workspace of a launch (`(floats of the pieces, counters)`, both 0 without
    /// stream-K): two pieces per block of each cluster, a tile each, and a counter per math
    /// warp of each block's tile of every stream-K item. The counters are zero before a launch
    /// and left zero after it.
    pub const fn sk_workspace(&self, m: u32, n: u32, k: u32, grid: u32) -> (u64, u64) {
        if !self.streamk {
            return (0, 0);
        }
        let s = self.schedule(m, n, k, grid);
        let blocks = s.blocks as u64 * self.cluster_size() as u64;
        let tile = self.tile_rows() as u64 * self.bn as u64;
        let sk_tiles = (s.tiles - s.dp_tiles) as u64 * self.cluster_size() as u64;
        (2 * blocks * tile, sk_tiles * self.math_warps() as u64)
    }
}

/// Tile `tile`'s block-tile coordinates (row, column) in grouped order: tiles go down the
/// `group_m` tile rows of a group, then across, so tiles running at once share B's tiles
/// (and A's, within a group) in L2.
#[inline(always)]
pub fn tile_coords(tile: u32, tiles_m: u32, tiles_n: u32, group_m: u32) -> (u32, u32) {
    let per_group = group_m * tiles_n;
    let first = tile / per_group * group_m;
    let rows = if tiles_m - first < group_m { tiles_m - first } else { group_m };
    let inner = tile % per_group;
    (first + inner % rows, inner / rows)
}

/// The ring position `n` k-tiles on from slot `slot` at barrier phase `phase`: the phase
/// flips once per pass over the `stages` slots.
#[inline(always)]
pub const fn ring_advance(slot: u32, phase: u32, n: u32, stages: u32) -> (u32, u32) {
    // Never 0 (`fits`); `max` lets the compiler drop the division's zero check.
    let stages = if stages == 0 { 1 } else { stages };
    let to = slot + n;
    (to % stages, phase ^ ((to / stages) & 1))
}

/// The warp-specialised wgmma kernel (module documentation). `ACC` = `BN / 2` accumulators
/// per math thread. `CLUSTER` (1 or 2) blocks form a cluster that computes vertically
/// adjacent tiles (rows `CLUSTER * i + rank`, the same columns): each block's producer
/// copies its own A tile and `1 / CLUSTER` of the shared B tile into every block of the
/// cluster (multicast), so L2 serves B once per cluster; a slot is then free only when
/// the math warpgroups of every block have released it (each arrives on every block's
/// `empty` barrier).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn hgemm_wgmma<const BF16: bool, const BN: u32, const ACC: usize, const CLUSTER: u32>(
    a_map: *const u8,
    b_map: *const u8,
    (c, c_map): (*mut u8, *const u8),
    m: u32,
    n: u32,
    k: u32,
    flags: u32,
    cfg: HgemmConfig,
    (partials, counters): (*mut f32, *mut u32),
) {
    let t = gpu::thread_idx_x();
    let sched = cfg.schedule(m, n, k, gpu::grid_dim_x());
    // k > 0: every tile has a k-tile, whose first wgmma overwrites the accumulators. With
    // stream-K every cluster has a unit (the host sizes the grid so).
    let bad_launch = !gpu::grid_dim_x().is_multiple_of(CLUSTER)
        || k == 0
        || (cfg.streamk && (sched.blocks > sched.sk_units() || partials.is_null() || counters.is_null()))
        || (cfg.tma_store && c_map.is_null());
    if cfg.kind != MmaKind::Wgmma || cfg.bn != BN || !cfg.fits() || gpu::block_dim_x() != cfg.threads() || bad_launch {
        gpu::trap();
    }
    let Ok(layout) = cfg.layout() else { gpu::trap() };
    let Ok(bytes) = cfg.shared_bytes() else { gpu::trap() };
    let region = gpu::launch_region(bytes);
    let (a_s, b_s) = (region.array(layout.a), region.array(layout.b));
    let (full, empty, turn) = (region.array(layout.full), region.array(layout.empty), region.array(layout.turn));
    let stages = cfg.stages;
    let (a_slot, b_slot) = (cfg.tile_rows() * WGMMA_BK, BN * WGMMA_BK);
    // SAFETY (all the pointers below): slot `s < stages` of each array, in bounds by the layout.
    let a_at = |s: u32| unsafe { a_s.shared_ptr(s * a_slot, a_slot) };
    let b_at = |s: u32| unsafe { b_s.shared_ptr(s * b_slot, b_slot) };
    let full_at = |s: u32| unsafe { full.shared_ptr(s, 1) };
    let empty_at = |s: u32| unsafe { empty.shared_ptr(s, 1) };
    // SAFETY: `u < MAX_UNITS`, the ping-pong layout's length.
    let turn_at = |u: u32| unsafe { turn.shared_ptr(u, 1) };
    let rank = if CLUSTER > 1 { gpu::cluster_rank() } else { 0 };
    if t == 0 {
        if a_at(0).shared_addr() % SLOT_ALIGN != 0 {
            gpu::trap();
        }
        for s in 0..stages {
            unsafe {
                full_at(s).mbar_init(1);
                empty_at(s).mbar_init(cfg.readers_per_slot() * CLUSTER);
            }
        }
        if cfg.pingpong {
            for u in 0..MAX_UNITS {
                unsafe { turn_at(u).mbar_init(1) };
            }
        }
        gpu::mbar_init_fence();
    }
    // Every block's barriers are initialised before any block arrives on them.
    if CLUSTER > 1 {
        gpu::cluster_barrier();
    } else {
        gpu::barrier();
    }

    let rows = cfg.tile_rows();
    let (tiles_m, tiles_n) = (m.div_ceil(rows), n.div_ceil(BN));
    // Work items are column tiles of `CLUSTER` row tiles, one per block of a cluster; the
    // schedule deals them (or, stream-K, their k-tiles) to the clusters, `worker` this one.
    let items_m = tiles_m.div_ceil(CLUSTER);
    let worker = gpu::block_idx_x() / CLUSTER;
    let coords = |item: u32| {
        let (im, tn) = tile_coords(item, items_m, tiles_n, cfg.group_m);
        (im * CLUSTER + rank, tn)
    };
    let k_tiles = k.div_ceil(WGMMA_BK);
    let warpgroup = t / WARPGROUP;
    if warpgroup == 0 {
        gpu::registers_for_copies();
        if t == 0 {
            let tile_bytes = (rows + BN) * WGMMA_BK * 2;
            // This block's share of B: `BN / CLUSTER` rows, into every block's slot.
            let b_rows = cfg.b_box_rows();
            let (mut s, mut phase) = (0, 0);
            let mut j = 0;
            while let Some(seg) = sched.segment(worker, j) {
                let (tm, tn) = coords(seg.tile);
                for kt in seg.kt0..seg.kt1 {
                    // The slot's previous k-tile has been released (a fresh barrier's phase
                    // "before the first" counts as complete: parity 1 passes at once).
                    unsafe {
                        empty_at(s).mbar_wait(phase ^ 1);
                        full_at(s).mbar_arrive_expect_tx(tile_bytes);
                        let k0 = (kt * WGMMA_BK) as i32;
                        a_at(s).copy_tile_2d(a_map, k0, (tm * rows) as i32, full_at(s));
                        if CLUSTER > 1 {
                            let dst = b_at(s).wrapping_add(rank * b_rows * WGMMA_BK);
                            let y = (tn * BN + rank * b_rows) as i32;
                            dst.copy_tile_2d_multicast(b_map, k0, y, full_at(s), ((1u32 << CLUSTER) - 1) as u16);
                        } else {
                            b_at(s).copy_tile_2d(b_map, k0, (tn * BN) as i32, full_at(s));
                        }
                    }
                    s += 1;
                    if s == stages {
                        s = 0;
                        phase ^= 1;
                    }
                }
                j += 1;
            }
        }
    } else {
        gpu::registers_for_math();
        // Warp-uniform (a shuffle), so that the ring position and descriptors derived from it
        // stay in uniform registers.
        let unit = gpu::warp_uniform(warpgroup - 1);
        let lead = t.is_multiple_of(WARPGROUP);
        let release = |s: u32| {
            if lead {
                if CLUSTER > 1 {
                    for r in 0..CLUSTER {
                        unsafe { empty_at(s).mbar_arrive_cluster(r) };
                    }
                } else {
                    unsafe { empty_at(s).mbar_arrive() };
                }
            }
        };
        // Cooperative: every math warpgroup takes every segment of the block, `unit`'s 64 rows
        // of its tile. Ping-pong (items whole): warpgroup `unit` takes the block's items `unit`,
        // `unit + 2`, ...; the producer fills the ring with the block's items in order, so this
        // warpgroup's k-tiles start `unit` items in and it skips the other's after each own.
        // Turns: a warpgroup waits for its k-tiles only once the other has waited for all of
        // its own (`turn` barriers), so no wait is more than one pass of the ring ahead of
        // the copies (a barrier's phase parity cannot tell further passes apart), and the two
        // multiply in turn while the other stores.
        let pingpong = cfg.pingpong;
        let deep = cfg.depth == 2;
        let (mut j, j_step) = if pingpong { (unit, 2) } else { (0, 1) };
        let (mut s, mut phase) = if pingpong { ring_advance(0, 0, unit * k_tiles, stages) } else { (0, 0) };
        let unit_rows = if pingpong { 0 } else { unit * ROWS_PER_UNIT };
        // Fragment coordinates of this thread (see `gpu::wgmma`).
        let (lane, warp) = (t % 32, (t % WARPGROUP) / 32);
        let row_in = unit_rows + warp * 16 + lane / 4;
        let col_in = 2 * (lane % 4);
        let mut acc = [0f32; ACC];
        // This warpgroup's tiles so far: the phase of its turn barrier to wait for.
        let mut own = 0;
        let out16 = flags & OUT16 != 0;
        // The staging buffer this warpgroup's next chunk goes to (`TMA_STORE`).
        let mut staged = 0;
        while let Some(seg) = sched.segment(worker, j) {
            // The same in every lane: shuffled from lane 0 so that ptxas keeps the ring
            // position and the loop bounds in uniform registers (see `warp_uniform`).
            let seg = Segment {
                tile: gpu::warp_uniform(seg.tile),
                kt0: gpu::warp_uniform(seg.kt0),
                kt1: gpu::warp_uniform(seg.kt1),
            };
            // Warpgroup 0's first tile is its turn at once; every other follows the other
            // warpgroup's previous tile.
            if pingpong && (unit == 1 || own > 0) {
                unsafe { turn_at(unit).mbar_wait((own - (1 - unit)) & 1) };
            }
            // Slots of the last two k-tiles issued (the one before `s`, and the one before that).
            let (mut prev, mut prev2) = (0, 0);
            for done in 0..seg.kt1 - seg.kt0 {
                // The segment's first k-tile overwrites the accumulators.
                let fresh = done == 0;
                unsafe { full_at(s).mbar_wait(phase) };
                let a_desc = a_at(s).wrapping_add(unit_rows * WGMMA_BK).wgmma_desc_sw128();
                let b_desc = b_at(s).wgmma_desc_sw128();
                gpu::wgmma_fence(&mut acc);
                // Four k-steps of 16: 32 bytes further along the (swizzled) rows each, 2 in
                // the descriptor's address field (bytes / 16).
                for kk in 0..(WGMMA_BK / 16) as u64 {
                    unsafe { gpu::wgmma::<BF16, ACC>(&mut acc, a_desc + 2 * kk, b_desc + 2 * kk, !fresh || kk > 0) };
                }
                gpu::wgmma_commit();
                // The group `depth` k-tiles back is done: its slot can be refilled.
                if deep {
                    gpu::wgmma_wait::<2, ACC>(&mut acc);
                    if done > 1 {
                        release(prev2);
                    }
                } else {
                    gpu::wgmma_wait::<1, ACC>(&mut acc);
                    if done > 0 {
                        release(prev);
                    }
                }
                prev2 = prev;
                prev = s;
                s += 1;
                if s == stages {
                    s = 0;
                    phase ^= 1;
                }
            }
            if pingpong && lead {
                unsafe { turn_at(1 - unit).mbar_arrive() };
            }
            own += 1;
            gpu::wgmma_wait::<0, ACC>(&mut acc);
            if deep && seg.kt1 - seg.kt0 > 1 {
                release(prev2);
            }
            release(prev);
            // A whole tile is stored; a piece of a split tile only by the warp that sums the
            // pieces (each warp its own 16 rows).
            let piece = |g: u32| {
                let slot = sched.slot(g, seg.tile) * CLUSTER + rank;
                partials.wrapping_add(((slot * rows + unit_rows + warp * 16) * BN) as usize)
            };
            let counter = || {
                let at = ((seg.tile - sched.dp_tiles) * CLUSTER + rank) * cfg.math_warps() + (t - WARPGROUP) / 32;
                counters.wrapping_add(at as usize)
            };
            if cfg.tma_store && sched.whole(&seg) {
                // The warpgroup's 64 rows, unless they lie wholly past `m` (the bottom tile's
                // second warpgroup): the same for its every thread.
                let (tm, tn) = coords(seg.tile);
                let y0 = tm * rows + unit_rows;
                if y0 < m {
                    let words = cfg.stage_buffers * STAGE_WORDS;
                    let buffers = region.array(layout.stage).window(unit * words, words);
                    let mut st = Staging { buffers, depth: cfg.stage_buffers, c_map, unit, next: staged };
                    store_staged::<BF16, BN, ACC>(&acc, &mut st, out16, (tn * BN, y0), n);
                    staged = st.next;
                }
            } else if sched.whole(&seg) || fix_up(&sched, worker, &seg, &mut acc, piece, counter()) {
                let (tm, tn) = coords(seg.tile);
                let (row0, col0) = (tm * rows + row_in, tn * BN + col_in);
                // Per 8-column chunk `q` of the fragment (written out: see `unroll!`).
                unroll!(q in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31] {
                    if 4 * q < ACC {
                        let col = col0 + 8 * q as u32;
                        store_pair::<BF16>(c, out16, m, n, row0, col, acc[4 * q], acc[4 * q + 1]);
                        store_pair::<BF16>(c, out16, m, n, row0 + 8, col, acc[4 * q + 2], acc[4 * q + 3]);
                    }
                });
            }
            j += j_step;
            if pingpong {
                (s, phase) = ring_advance(s, phase, k_tiles, stages);
            }
        }
        // The staged stores have read their buffers before the block's shared memory goes
        // (nothing to wait for without them).
        if lead && cfg.tma_store {
            gpu::bulk_wait();
        }
    }
    // No block exits while another may still copy into its slots or arrive on its barriers.
    // (The producer and the math warpgroups are the two branches of one `if`: ptxas then
    // gives the math branch the registers `setmaxnreg` moves to it.)
    if CLUSTER > 1 {
        gpu::cluster_barrier();
    }
}

/// A math warp's part in the fix-up of its block's piece `seg` of a split tile (see
/// [`crate::streamk`]): writes its 16 x `BN` accumulators to `piece(worker)` (lane `l`'s
/// chunk `q` of four at `32 q + l` 16-byte words: a warp writes 512 consecutive bytes), counts
/// itself on `counter`, and if it counted last, sums every piece of the tile into `acc` in
/// cluster order (its own read back too, so the order and the rounding are the same whichever
/// warp comes last), resets the counter and returns true: the caller stores the tile. A
/// piece's 16 rows are this warp's rows of the tile in every cluster, so only warps in the
/// same place count on one counter.
///
/// # Contract
/// Every lane of the warp calls it; `piece(g)` is 16-byte aligned device memory of `16 BN`
/// floats for each worker `g` of the tile's pieces, `counter` a `u32` of the workspace, zero
/// before the tile's first count.
#[inline(always)]
fn fix_up<const ACC: usize>(
    sched: &StreamK,
    worker: u32,
    seg: &Segment,
    acc: &mut [f32; ACC],
    piece: impl Fn(u32) -> *mut f32,
    counter: *mut u32,
) -> bool {
    let lane = (gpu::thread_idx_x() % 32) as usize;
    let mine = piece(worker).cast::<Vec4<f32>>();
    unroll!(q in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31] {
        if 4 * q < ACC {
            let v = Vec4([acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]]);
            unsafe { gpu::write_global(mine.wrapping_add(32 * q + lane), v) };
        }
    });
    // Every lane's piece is in device memory before lane 0 counts the warp.
    gpu::micro::fence(gpu::micro::FenceScope::Device);
    gpu::warp_sync();
    let (first, last) = sched.pieces(seg.tile);
    let arrived = if lane == 0 { unsafe { gpu::atomic_add_global_u32(counter, 1) } } else { 0 };
    if gpu::warp_uniform(arrived) != last - first {
        return false;
    }
    if lane == 0 {
        // Every piece has counted: reset for the next launch (kernel boundaries order it).
        unsafe { gpu::write_global(counter, 0) };
    }
    // The other warps' pieces, published by their fences before their counts. Summed half
    // the fragment at a time: a whole piece in flight would need as many registers again as
    // the accumulators.
    gpu::warp_sync();
    gpu::micro::fence(gpu::micro::FenceScope::Device);
    macro_rules! sum_chunks {
        ($($q:literal)*) => {
            let mut g = first;
            while g <= last {
                let p = piece(g).cast::<Vec4<f32>>();
                $(
                    if 4 * $q < ACC {
                        let v = read_l2(p.wrapping_add(32 * $q + lane));
                        if g == first {
                            acc[4 * $q] = v[0];
                            acc[4 * $q + 1] = v[1];
                            acc[4 * $q + 2] = v[2];
                            acc[4 * $q + 3] = v[3];
                        } else {
                            acc[4 * $q] += v[0];
                            acc[4 * $q + 1] += v[1];
                            acc[4 * $q + 2] += v[2];
                            acc[4 * $q + 3] += v[3];
                        }
                    }
                )*
                g += 1;
            }
        };
    }
    sum_chunks!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
    sum_chunks!(16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
    true
}

/// Byte offset of 16-byte chunk `chunk` (0..4) of row `row` in an mma slot: rows of 64
/// bytes, the chunk XOR-ed with `(row / 2) % 4` so that the 8 rows an `ldmatrix` reads at
/// one chunk fall in 8 different 16-byte bank groups.
#[inline(always)]
pub const fn mma_swizzle(row: u32, chunk: u32) -> u32 {
    row * 64 + ((chunk ^ ((row >> 1) & 3)) * 16)
}

/// The mma kernel (module documentation).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn hgemm_mma<const BF16: bool>(
    a: *const u16,
    b: *const u16,
    c: *mut u8,
    m: u32,
    n: u32,
    k: u32,
    flags: u32,
    cfg: HgemmConfig,
) {
    let t = gpu::thread_idx_x();
    if cfg.kind != MmaKind::Mma || !cfg.fits() || gpu::block_dim_x() != cfg.threads() {
        gpu::trap();
    }
    let Ok(layout) = cfg.layout() else { gpu::trap() };
    let Ok(bytes) = cfg.shared_bytes() else { gpu::trap() };
    let region = gpu::launch_region(bytes);
    // Slots as 16-byte chunks for the copies; as bytes for `ldmatrix` addresses.
    let (a_s, b_s) =
        unsafe { (region.array(layout.a).cast::<Vec4<u32>>(), region.array(layout.b).cast::<Vec4<u32>>()) };
    let (a_chunks, b_chunks) = (cfg.bm * MMA_BK / 8, MMA_BN * MMA_BK / 8);
    let stages = cfg.stages;
    let (tiles_m, tiles_n) = (m.div_ceil(cfg.bm), n.div_ceil(MMA_BN));
    if gpu::block_idx_x() >= tiles_m * tiles_n {
        return;
    }
    let (tm, tn) = tile_coords(gpu::block_idx_x(), tiles_m, tiles_n, cfg.group_m);
    let (m0, n0) = (tm * cfg.bm, tn * MMA_BN);
    let k_tiles = k.div_ceil(MMA_BK);
    let threads = cfg.threads();

    // Copies k-tile `kt` into slot `s`: chunk `q` of a tile is row `q / 4`, chunk `q % 4`;
    // chunks past the matrix's edge (rows past m or n, k past k) are zeros.
    let load = |kt: u32, s: u32| {
        let k0 = kt * MMA_BK;
        let mut q = t;
        while q < a_chunks {
            let (r, ch) = (q / 4, q % 4);
            let (row, kc) = (m0 + r, k0 + 8 * ch);
            let valid = row < m && kc < k;
            let src = if valid { unsafe { a.add(row as usize * k as usize + kc as usize) } } else { a };
            unsafe {
                a_s.shared_ptr(s * a_chunks + mma_swizzle(r, ch) / 16, 1).copy_async_if(src.cast(), valid);
            }
            q += threads;
        }
        let mut q = t;
        while q < b_chunks {
            let (r, ch) = (q / 4, q % 4);
            let (row, kc) = (n0 + r, k0 + 8 * ch);
            let valid = row < n && kc < k;
            let src = if valid { unsafe { b.add(row as usize * k as usize + kc as usize) } } else { b };
            unsafe {
                b_s.shared_ptr(s * b_chunks + mma_swizzle(r, ch) / 16, 1).copy_async_if(src.cast(), valid);
            }
            q += threads;
        }
        gpu::copy_async_commit();
    };

    let (lane, warp) = (t % 32, t / 32);
    let (wm, wn) = (warp / 4, warp % 4);
    let mut acc = [[[0f32; 4]; 4]; 4];
    for kt in 0..stages - 1 {
        if kt < k_tiles {
            load(kt, kt);
        } else {
            gpu::copy_async_commit();
        }
    }
    for kt in 0..k_tiles {
        // k-tile `kt` has landed (at most `stages - 2` later groups still in flight), and
        // every warp is done with the slot the next copy overwrites.
        gpu::copy_async_wait_pending(stages - 2);
        gpu::barrier();
        let next = kt + stages - 1;
        if next < k_tiles {
            load(next, next % stages);
        } else {
            gpu::copy_async_commit();
        }
        let s = kt % stages;
        unroll!(ks in [0 1] {
            // A: matrix `lane / 8` = (rows +8 if odd, k +8 if >= 2); B: (k +8 if odd,
            // columns +8 if >= 2).
            let mut af = [[0u32; 4]; 4];
            unroll!(mi in [0 1 2 3] {
                let r = wm * 64 + mi as u32 * 16 + lane % 16;
                let ch = 2 * ks as u32 + lane / 16;
                af[mi] = unsafe { a_s.shared_ptr(s * a_chunks + mma_swizzle(r, ch) / 16, 1).ldmatrix_x4() };
            });
            let mut bf = [[0u32; 2]; 4];
            unroll!(pair in [0 1] {
                let r = wn * 32 + pair as u32 * 16 + lane % 8 + 8 * (lane / 16);
                let ch = 2 * ks as u32 + (lane / 8) % 2;
                let w = unsafe { b_s.shared_ptr(s * b_chunks + mma_swizzle(r, ch) / 16, 1).ldmatrix_x4() };
                bf[2 * pair] = [w[0], w[1]];
                bf[2 * pair + 1] = [w[2], w[3]];
            });
            unroll!(mi in [0 1 2 3] {
                unroll!(ni in [0 1 2 3] {
                    unsafe { gpu::mma_16x8x16::<BF16>(&mut acc[mi][ni], af[mi], bf[ni]) };
                });
            });
        });
    }
    gpu::copy_async_wait();
    unroll!(mi in [0 1 2 3] {
        unroll!(ni in [0 1 2 3] {
            let d = acc[mi][ni];
            let r = m0 + wm * 64 + mi as u32 * 16 + lane / 4;
            let col = n0 + wn * 32 + ni as u32 * 8 + 2 * (lane % 4);
                store_pair::<BF16>(c, flags & OUT16 != 0, m, n, r, col, d[0], d[1]);
                store_pair::<BF16>(c, flags & OUT16 != 0, m, n, r + 8, col, d[2], d[3]);
        });
    });
}

/// The compiled-in tile of `hgemm_wgmma_f16_n256_fixed`.
pub const FIXED: HgemmConfig = HgemmConfig::wgmma(128, 256, 4);
/// The compiled-in tile of `hgemm_wgmma_f16_n256_c2_fixed`: [`FIXED`] in clusters of 2.
pub const FIXED_C2: HgemmConfig = FIXED.with_cluster(CLUSTER);

// Register caps (`[max_registers = N]`, ptxas's `.maxnreg`): warp-specialised wgmma runs blocks of
// up to 384 threads (65536 / 384 rounded down to 8), whose warpgroups then trade registers with
// `setmaxnreg` (40 copying, 232 multiplying); mma.sync holds 64 accumulators: two 256-thread blocks
// per SM at 128. `[cluster = 2]` (`.reqnctapercluster`): the `_c2` entries' two blocks share their
// B tiles by multicast copies (`CLUSTER`).
crate::kernels! { KERNELS;
    /// wgmma, f16 inputs, `BN` = 256.
    pub fn hgemm_wgmma_f16_n256(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 256, stages) }.with_flags(flags);
        hgemm_wgmma::<false, 256, 128, 1>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// wgmma, bf16 inputs, `BN` = 256.
    pub fn hgemm_wgmma_bf16_n256(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 256, stages) }.with_flags(flags);
        hgemm_wgmma::<true, 256, 128, 1>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// wgmma, f16 inputs, `BN` = 192.
    pub fn hgemm_wgmma_f16_n192(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 192, stages) }.with_flags(flags);
        hgemm_wgmma::<false, 192, 96, 1>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// wgmma, bf16 inputs, `BN` = 192.
    pub fn hgemm_wgmma_bf16_n192(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 192, stages) }.with_flags(flags);
        hgemm_wgmma::<true, 192, 96, 1>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// wgmma, f16 inputs, `BN` = 160.
    pub fn hgemm_wgmma_f16_n160(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 160, stages) }.with_flags(flags);
        hgemm_wgmma::<false, 160, 80, 1>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// wgmma, f16 inputs, `BN` = 160, clusters of 2 blocks sharing B (build.rs sets the
    /// cluster size).
    pub fn hgemm_wgmma_f16_n160_c2(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] [cluster = 2] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 160, stages).with_cluster(CLUSTER) }.with_flags(flags);
        hgemm_wgmma::<false, 160, 80, 2>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// wgmma, bf16 inputs, `BN` = 160.
    pub fn hgemm_wgmma_bf16_n160(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 160, stages) }.with_flags(flags);
        hgemm_wgmma::<true, 160, 80, 1>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// wgmma, bf16 inputs, `BN` = 160, clusters of 2 blocks sharing B (build.rs sets the
    /// cluster size).
    pub fn hgemm_wgmma_bf16_n160_c2(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] [cluster = 2] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 160, stages).with_cluster(CLUSTER) }.with_flags(flags);
        hgemm_wgmma::<true, 160, 80, 2>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// wgmma, f16 inputs, `BN` = 224.
    pub fn hgemm_wgmma_f16_n224(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 224, stages) }.with_flags(flags);
        hgemm_wgmma::<false, 224, 112, 1>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// wgmma, f16 inputs, `BN` = 224, clusters of 2 blocks sharing B (build.rs sets the
    /// cluster size).
    pub fn hgemm_wgmma_f16_n224_c2(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] [cluster = 2] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 224, stages).with_cluster(CLUSTER) }.with_flags(flags);
        hgemm_wgmma::<false, 224, 112, 2>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// wgmma, bf16 inputs, `BN` = 224.
    pub fn hgemm_wgmma_bf16_n224(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 224, stages) }.with_flags(flags);
        hgemm_wgmma::<true, 224, 112, 1>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// wgmma, bf16 inputs, `BN` = 224, clusters of 2 blocks sharing B (build.rs sets the
    /// cluster size).
    pub fn hgemm_wgmma_bf16_n224_c2(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] [cluster = 2] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 224, stages).with_cluster(CLUSTER) }.with_flags(flags);
        hgemm_wgmma::<true, 224, 112, 2>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// wgmma, f16 inputs, `BN` = 128.
    pub fn hgemm_wgmma_f16_n128(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 128, stages) }.with_flags(flags);
        hgemm_wgmma::<false, 128, 64, 1>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// wgmma, bf16 inputs, `BN` = 128.
    pub fn hgemm_wgmma_bf16_n128(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 128, stages) }.with_flags(flags);
        hgemm_wgmma::<true, 128, 64, 1>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// `hgemm_wgmma_f16_n256` with [`FIXED`] compiled in (its `bm` and `stages` must match;
    /// cooperative).
    pub fn hgemm_wgmma_f16_n256_fixed(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] {
        if bm != FIXED.bm || stages != FIXED.stages || flags & (PINGPONG | DEPTH2 | STREAMK | TMA_STORE | STAGE3 | STAGE4) != 0 {
            gpu::trap();
        }
        let cfg = HgemmConfig { group_m, ..FIXED };
        hgemm_wgmma::<false, 256, 128, 1>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// wgmma, f16 inputs, `BN` = 256, clusters of 2 blocks sharing B (build.rs sets the
    /// cluster size).
    pub fn hgemm_wgmma_f16_n256_c2(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] [cluster = 2] [spills = "4-8 B: values computed before the warpgroups trade registers (setmaxnreg), stored once and read once as each branch starts, never in the k-loop or the epilogue (SASS, since the staged store)"] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 256, stages).with_cluster(CLUSTER) }.with_flags(flags);
        hgemm_wgmma::<false, 256, 128, 2>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// wgmma, bf16 inputs, `BN` = 256, clusters of 2 blocks sharing B (build.rs sets the
    /// cluster size).
    pub fn hgemm_wgmma_bf16_n256_c2(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] [cluster = 2] [spills = "4-8 B: values computed before the warpgroups trade registers (setmaxnreg), stored once and read once as each branch starts, never in the k-loop or the epilogue (SASS, since the staged store)"] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 256, stages).with_cluster(CLUSTER) }.with_flags(flags);
        hgemm_wgmma::<true, 256, 128, 2>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// wgmma, f16 inputs, `BN` = 192, clusters of 2 blocks sharing B (build.rs sets the
    /// cluster size).
    pub fn hgemm_wgmma_f16_n192_c2(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] [cluster = 2] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 192, stages).with_cluster(CLUSTER) }.with_flags(flags);
        hgemm_wgmma::<false, 192, 96, 2>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// wgmma, bf16 inputs, `BN` = 192, clusters of 2 blocks sharing B (build.rs sets the
    /// cluster size).
    pub fn hgemm_wgmma_bf16_n192_c2(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] [cluster = 2] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, 192, stages).with_cluster(CLUSTER) }.with_flags(flags);
        hgemm_wgmma::<true, 192, 96, 2>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// `hgemm_wgmma_f16_n256_c2` with [`FIXED_C2`] compiled in (cooperative).
    pub fn hgemm_wgmma_f16_n256_c2_fixed(a_map: *const u8, b_map: *const u8, c: *mut u8, c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, partials: *mut f32, counters: *mut u32) [max_registers = 168] [cluster = 2] {
        if bm != FIXED_C2.bm || stages != FIXED_C2.stages || flags & (PINGPONG | DEPTH2 | STREAMK | TMA_STORE | STAGE3 | STAGE4) != 0 {
            gpu::trap();
        }
        let cfg = HgemmConfig { group_m, ..FIXED_C2 };
        hgemm_wgmma::<false, 256, 128, 2>(a_map, b_map, (c, c_map), m, n, k, flags, cfg, (partials, counters))
    }
    /// mma.sync, f16 inputs.
    pub fn hgemm_mma_f16(a: *const u16, b: *const u16, c: *mut u8, _c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, _partials: *mut f32, _counters: *mut u32) [max_registers = 128] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::mma(bm, stages) }.with_flags(flags);
        hgemm_mma::<false>(a, b, c, m, n, k, flags, cfg)
    }
    /// mma.sync, bf16 inputs.
    pub fn hgemm_mma_bf16(a: *const u16, b: *const u16, c: *mut u8, _c_map: *const u8, m: u32, n: u32, k: u32, flags: u32, bm: u32, stages: u32, group_m: u32, _partials: *mut f32, _counters: *mut u32) [max_registers = 128] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::mma(bm, stages) }.with_flags(flags);
        hgemm_mma::<true>(a, b, c, m, n, k, flags, cfg)
    }
}

/// The entry that runs `cfg` with `bf16` (else f16) inputs; `fixed` asks for the
/// compiled-in tile. `None` where no entry has that shape.
pub fn entry_name(cfg: &HgemmConfig, bf16: bool, fixed: bool) -> Option<&'static str> {
    let this = HgemmConfig { group_m: cfg.group_m, ..*cfg };
    Some(match (cfg.kind, cfg.bn, bf16, cfg.cluster, fixed) {
        (MmaKind::Wgmma, 256, false, 1, true) if this == HgemmConfig { group_m: cfg.group_m, ..FIXED } => {
            "hgemm_wgmma_f16_n256_fixed"
        }
        (MmaKind::Wgmma, 256, false, CLUSTER, true) if this == HgemmConfig { group_m: cfg.group_m, ..FIXED_C2 } => {
            "hgemm_wgmma_f16_n256_c2_fixed"
        }
        (.., true) => return None,
        (MmaKind::Wgmma, 256, false, 1, _) => "hgemm_wgmma_f16_n256",
        (MmaKind::Wgmma, 256, true, 1, _) => "hgemm_wgmma_bf16_n256",
        (MmaKind::Wgmma, 256, false, CLUSTER, _) => "hgemm_wgmma_f16_n256_c2",
        (MmaKind::Wgmma, 256, true, CLUSTER, _) => "hgemm_wgmma_bf16_n256_c2",
        (MmaKind::Wgmma, 192, false, 1, _) => "hgemm_wgmma_f16_n192",
        (MmaKind::Wgmma, 192, true, 1, _) => "hgemm_wgmma_bf16_n192",
        (MmaKind::Wgmma, 192, false, CLUSTER, _) => "hgemm_wgmma_f16_n192_c2",
        (MmaKind::Wgmma, 192, true, CLUSTER, _) => "hgemm_wgmma_bf16_n192_c2",
        (MmaKind::Wgmma, 224, false, 1, _) => "hgemm_wgmma_f16_n224",
        (MmaKind::Wgmma, 224, true, 1, _) => "hgemm_wgmma_bf16_n224",
        (MmaKind::Wgmma, 224, false, CLUSTER, _) => "hgemm_wgmma_f16_n224_c2",
        (MmaKind::Wgmma, 224, true, CLUSTER, _) => "hgemm_wgmma_bf16_n224_c2",
        (MmaKind::Wgmma, 160, false, 1, _) => "hgemm_wgmma_f16_n160",
        (MmaKind::Wgmma, 160, true, 1, _) => "hgemm_wgmma_bf16_n160",
        (MmaKind::Wgmma, 160, false, CLUSTER, _) => "hgemm_wgmma_f16_n160_c2",
        (MmaKind::Wgmma, 160, true, CLUSTER, _) => "hgemm_wgmma_bf16_n160_c2",
        (MmaKind::Wgmma, 128, false, 1, _) => "hgemm_wgmma_f16_n128",
        (MmaKind::Wgmma, 128, true, 1, _) => "hgemm_wgmma_bf16_n128",
        (MmaKind::Mma, MMA_BN, false, 1, _) => "hgemm_mma_f16",
        (MmaKind::Mma, MMA_BN, true, 1, _) => "hgemm_mma_bf16",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_order_visits_every_tile_once() {
        for (tiles_m, tiles_n, g) in [(5, 3, 2), (16, 16, 8), (7, 1, 8), (1, 9, 4), (33, 17, 8)] {
            let mut seen = [false; 1024];
            for t in 0..tiles_m * tiles_n {
                let (i, j) = tile_coords(t, tiles_m, tiles_n, g);
                assert!(i < tiles_m && j < tiles_n, "{t} -> ({i}, {j})");
                let at = (i * tiles_n + j) as usize;
                assert!(!seen[at], "({i}, {j}) twice");
                seen[at] = true;
            }
        }
    }

    #[test]
    fn wgmma_slots_are_swizzle_aligned_and_bars_follow() {
        let cfg = HgemmConfig::wgmma(128, 256, 4);
        let l = cfg.layout().unwrap();
        assert_eq!((l.a.offset(), l.b.offset()), (0, 4 * 128 * 128));
        assert_eq!(l.full.offset(), 4 * (128 + 256) * 128);
        assert_eq!(cfg.shared_bytes().unwrap(), 4 * (128 + 256) * 128 + 64);
        let odd = HgemmConfig::wgmma(64, 128, 3);
        assert_eq!(odd.layout().unwrap().b.offset() % SLOT_ALIGN, 0);
    }

    #[test]
    fn cluster_blocks_copy_disjoint_shares_that_fill_b_s_slot() {
        assert_eq!(HgemmConfig::wgmma(128, 256, 4).b_box_rows(), 256);
        // Rank r's box starts at row r * box: the shares tile the slot's `bn` rows exactly, and
        // each starts on a swizzle atom (8 rows of 128 bytes) as TMA's 128-byte swizzle needs.
        for bn in [160, 192, 224, 256] {
            let c2 = HgemmConfig::wgmma(128, bn, 4).with_cluster(CLUSTER);
            assert!(c2.fits());
            assert_eq!(c2.b_box_rows() * CLUSTER, c2.bn);
            assert_eq!((c2.b_box_rows() * WGMMA_BK * 2) % SLOT_ALIGN, 0);
        }
        assert!(!HgemmConfig::wgmma(128, 128, 4).with_cluster(CLUSTER).fits());
    }

    #[test]
    fn ring_advance_is_n_single_steps() {
        for stages in MIN_STAGES..=MAX_STAGES {
            let (mut s, mut phase) = (0, 0);
            for n in 0..40 {
                assert_eq!(ring_advance(0, 0, n, stages), (s, phase), "n {n}, stages {stages}");
                assert_eq!(ring_advance(s, phase, 3, stages), ring_advance(0, 0, n + 3, stages));
                s += 1;
                if s == stages {
                    s = 0;
                    phase ^= 1;
                }
            }
        }
    }

    #[test]
    fn pingpong_tiles_are_a_warpgroup_high_and_each_slot_has_one_reader() {
        let coop = HgemmConfig::wgmma(128, 192, 4);
        let pp = coop.with_pingpong(true);
        assert!(coop.fits() && pp.fits());
        assert_eq!((coop.tile_rows(), pp.tile_rows()), (128, 64));
        assert_eq!((coop.readers_per_slot(), pp.readers_per_slot()), (2, 1));
        assert_eq!(pp.tiles(4096, 4096), 2 * coop.tiles(4096, 4096));
        assert_eq!(pp.layout().unwrap().b.offset(), 4 * 64 * 128);
        assert_eq!(pp.threads(), coop.threads());
        assert!(!HgemmConfig::wgmma(64, 256, 4).with_pingpong(true).fits(), "one warpgroup has no partner");
        assert!(!HgemmConfig::mma(128, 4).with_pingpong(true).fits());
    }

    #[test]
    fn two_groups_in_flight_need_three_slots_and_come_from_the_flags() {
        assert!(HgemmConfig::wgmma(128, 256, 3).with_depth(2).fits());
        assert!(!HgemmConfig::wgmma(128, 256, 2).with_depth(2).fits(), "two held slots and none to refill");
        assert!(!HgemmConfig::wgmma(128, 256, 4).with_depth(3).fits());
        assert!(!HgemmConfig::mma(128, 4).with_depth(2).fits());
        let c = HgemmConfig::wgmma(128, 256, 4).with_flags(PINGPONG | DEPTH2);
        assert!(c.pingpong && c.depth == 2);
        assert_eq!(HgemmConfig::wgmma(128, 256, 4).with_flags(OUT16), HgemmConfig::wgmma(128, 256, 4));
    }

    #[test]
    fn mma_swizzle_spreads_eight_rows_over_eight_bank_groups() {
        for chunk in 0..4 {
            let mut groups: [u32; 8] = core::array::from_fn(|r| (mma_swizzle(r as u32, chunk) / 16) % 8);
            groups.sort();
            assert_eq!(groups, [0, 1, 2, 3, 4, 5, 6, 7]);
        }
    }
}
