//! Attention forward (FlashAttention's algorithm): `O = softmax(Q K^T / sqrt(D)) V` per
//! (batch, head), f16 or bf16 in and out, f32 scores and softmax statistics, with the row
//! log-sum-exp `lse` written beside `O`. Causal masking is top-left aligned (query `i` sees
//! keys `0..=i`). Measurements, history: `host/src/families/attention/NOTES.md`.
//!
//! # Tensors
//! `q`, `k`, `v`, `o`: `bh x seq x D` row-major 16-bit (`bh` = batch x heads, each head's rows
//! contiguous: PyTorch's `[B, H, S, D]`), seen as one `(bh * seq) x D` matrix. `lse`:
//! `bh x seq` f32, natural log of `sum_j exp(s_ij)` with `s = q k / sqrt(D)`.
//!
//! # Kernels
//! - `attention_wgmma_*` (sm_90a): warp-specialised. Warpgroup 0's first thread copies the
//!   block's Q tile once and K/V tiles of [`WGMMA_BK`] keys into a ring of `stages` slots
//!   (TMA, 128-byte swizzle, panels of 64 columns) and completes each slot's `full` barrier.
//!   Warpgroups 1..=`bq / 64` each own 64 query rows and run FlashAttention-3's pipeline:
//!   per K/V tile, `S = Q K^T` (wgmma m64n128k16, both operands K-major in shared memory) is
//!   issued together with the previous tile's `O += P V` (wgmma with A from registers and V
//!   N-major: no transpose of V); the online softmax of `S` (row maxima over a lane quad)
//!   runs while the tensor cores multiply `P V`; then `O` is rescaled and the new `P` rounded
//!   to 16 bits in the accumulator layout. K and V slots are released apart (`empty`
//!   barriers), K's once `S` is done. Two math warpgroups may issue their products in turn
//!   (`pingpong`: hardware barriers 1 and 2), so one's softmax runs under the other's MMAs.
//! - `attention_simt_*` (any target, the CPU backend included): one thread per query row
//!   (`bq` threads), its query row and output accumulators in launch-sized memory (a row of
//!   `D` floats per thread would be a register array indexed in loops: local memory), K/V
//!   tiles of `bk` keys beside them (converted to f32 once per tile), per-key online softmax.
//!
//! # Compiled in, launch-time
//! Compiled in: the head dimension `D` (64 or 128: the accumulators are registers), the
//! element type, and for wgmma the K/V tile depth [`WGMMA_BK`] (the score tile's registers).
//! Launch-time: `bq` (math warpgroups, or threads), `stages` (the ring's slots: its bytes),
//! `pingpong`, SIMT's `bk`. `_fixed` entries compile `bq`, `stages` and `pingpong` in too
//! ([`FIXED`]).
//!
//! # Launch-sized memory ([`AttentionConfig::layout`])
//! wgmma: the Q tile (`bq x D`), `stages` K slots and `stages` V slots (`WGMMA_BK x D`), each
//! a run of 64-column panels of 128-byte rows, 1024-byte aligned; then the Q barrier,
//! `stages` K `full`, `stages` V `full`, `stages` K `empty` and `stages` V `empty` barriers. SIMT: a K tile and a V tile of `bk x D` f32,
//! then the query rows and the output rows, `D x bq` f32 each.
//!
//! # Entry points ([`entry_name`])
//! `attention_{wgmma,simt}_{f16,bf16}_d{64,128}(q, k, v, o, lse, seq, bh, causal, bq, bk,
//! stages, pingpong)`: for wgmma `q`, `k`, `v` are `CUtensorMap`s (box 64 x `bq` for Q, 64 x
//! [`WGMMA_BK`] for K and V, 128-byte swizzle), for SIMT the tensors. Grid
//! [`AttentionConfig::grid`]: one block per (query tile, head), heads outermost.

use crate::gpu::{self, WARPGROUP};
use crate::layout::{Carve, LayoutError, Slice};

/// `$body` once per value, `$i` bound to it (a `usize`): loops over register arrays written
/// out, so that every index is a constant and the arrays stay in registers.
macro_rules! unroll {
    ($i:ident in [$($v:literal)*] $body:block) => {
        $( { let $i: usize = $v; $body } )*
    };
}

/// Keys per K/V tile of the wgmma kernel: the N of `S = Q K^T` (m64n128k16), 64 score
/// registers per thread.
pub const WGMMA_BK: u32 = 128;
/// Query rows per math warpgroup.
pub const ROWS_PER_WARPGROUP: u32 = 64;
/// Most math warpgroups: two, with the copy warpgroup, fill the register file.
pub const MAX_WARPGROUPS: u32 = 2;
/// Fewest ring slots of the wgmma kernel: the producer fills one while the math warpgroups
/// read the other.
pub const MIN_STAGES: u32 = 2;
/// Most ring slots.
pub const MAX_STAGES: u32 = 8;
/// Head dimensions the entries are compiled for.
pub const HEAD_DIMS: [u32; 2] = [64, 128];
/// Columns of one swizzle panel: 128 bytes of 16-bit elements.
pub const PANEL: u32 = 64;
/// Panels and slots are 1024-byte aligned (the 128-byte swizzle's period).
pub const SLOT_ALIGN: u32 = 1024;
/// SIMT: most threads (query rows) per block, and most keys per tile.
pub const SIMT_MAX_BQ: u32 = 256;
pub const SIMT_MAX_BK: u32 = 256;

/// Which kernel runs the config.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(rename_all = "lowercase"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttentionKind {
    /// sm_90a wgmma fed by tensor-map copies.
    Wgmma,
    /// One thread per query row, any target.
    Simt,
}

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AttentionConfig {
    pub kind: AttentionKind,
    /// Query rows per block: wgmma 64 or 128 (64 per math warpgroup); SIMT 1 to
    /// [`SIMT_MAX_BQ`] (one thread each).
    pub bq: u32,
    /// Keys per K/V tile: wgmma [`WGMMA_BK`] (compiled in); SIMT 1 to [`SIMT_MAX_BK`].
    pub bk: u32,
    /// Ring slots of K/V tiles: wgmma [`MIN_STAGES`] to [`MAX_STAGES`]; SIMT 1.
    pub stages: u32,
    /// wgmma with two math warpgroups: they issue their products in turn (ping-pong), so
    /// one's softmax runs under the other's MMAs. Otherwise false.
    #[cfg_attr(feature = "serde", serde(default))]
    pub pingpong: bool,
}

/// Where a config's arrays sit in the launch-sized region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttentionLayout {
    /// wgmma: the Q tile, `D / 64` panels of `bq` rows. SIMT: empty.
    pub q: Slice<u16>,
    /// wgmma: `stages` K slots, each `D / 64` panels of `bk` rows. SIMT: `bk x D` f32 as
    /// bits, the K tile.
    pub k: Slice<u32>,
    /// As `k`, for V.
    pub v: Slice<u32>,
    /// SIMT: the block's query rows (pre-scaled) then its output accumulators, `D x bq` f32
    /// as bits each, element `i` of thread `t`'s row at `i * bq + t` (consecutive threads,
    /// consecutive banks). wgmma: empty.
    pub rows: Slice<u32>,
    /// wgmma: the Q copy's barrier, then `stages` each of K full, V full, K empty, V empty.
    pub bars: Slice<u64>,
}

impl AttentionConfig {
    /// wgmma, in ping-pong where it has two math warpgroups.
    pub const fn wgmma(bq: u32, stages: u32) -> Self {
        AttentionConfig { kind: AttentionKind::Wgmma, bq, bk: WGMMA_BK, stages, pingpong: bq / ROWS_PER_WARPGROUP > 1 }
    }
    pub const fn simt(bq: u32, bk: u32) -> Self {
        AttentionConfig { kind: AttentionKind::Simt, bq, bk, stages: 1, pingpong: false }
    }
    /// The config with ping-pong set to `on`.
    pub const fn with_pingpong(self, on: bool) -> Self {
        AttentionConfig { pingpong: on, ..self }
    }
    /// Math warpgroups (wgmma).
    pub const fn warpgroups(&self) -> u32 {
        self.bq / ROWS_PER_WARPGROUP
    }
    /// Threads per block: the copy warpgroup and the math warpgroups (wgmma); one per query
    /// row (SIMT).
    pub const fn threads(&self) -> u32 {
        match self.kind {
            AttentionKind::Wgmma => WARPGROUP * (1 + self.warpgroups()),
            AttentionKind::Simt => self.bq,
        }
    }
    /// Whether the kernels can run this config with head dimension `d` (see the fields'
    /// rules); the host says which rule a refused config breaks.
    pub const fn fits(&self, d: u32) -> bool {
        let d_ok = d == HEAD_DIMS[0] || d == HEAD_DIMS[1];
        let shape_ok = match self.kind {
            AttentionKind::Wgmma => {
                self.bq.is_multiple_of(ROWS_PER_WARPGROUP)
                    && self.warpgroups() >= 1
                    && self.warpgroups() <= MAX_WARPGROUPS
                    && self.bk == WGMMA_BK
                    && self.stages >= MIN_STAGES
                    && self.stages <= MAX_STAGES
                    && (!self.pingpong || self.warpgroups() == 2)
            }
            AttentionKind::Simt => {
                self.bq >= 1
                    && self.bq <= SIMT_MAX_BQ
                    && self.bk >= 1
                    && self.bk <= SIMT_MAX_BK
                    && self.stages == 1
                    && !self.pingpong
            }
        };
        d_ok && shape_ok
    }
    /// The carve of the launch-sized region for head dimension `d` (module documentation).
    pub fn layout(&self, d: u32) -> Result<AttentionLayout, LayoutError> {
        let mut carve = Carve::new();
        match self.kind {
            AttentionKind::Wgmma => {
                let q = carve.array_aligned::<u16>(self.bq * d, SLOT_ALIGN)?;
                // 16-bit tiles as words: two elements each.
                let k = carve.array_aligned::<u32>(self.stages * self.bk * d / 2, SLOT_ALIGN)?;
                let v = carve.array_aligned::<u32>(self.stages * self.bk * d / 2, SLOT_ALIGN)?;
                let bars = carve.array::<u64>(1 + 4 * self.stages)?;
                let rows = carve.array::<u32>(0)?;
                Ok(AttentionLayout { q, k, v, rows, bars })
            }
            AttentionKind::Simt => {
                let q = carve.array::<u16>(0)?;
                let k = carve.array::<u32>(self.bk * d)?;
                let v = carve.array::<u32>(self.bk * d)?;
                let rows = carve.array::<u32>(2 * d * self.bq)?;
                let bars = carve.array::<u64>(0)?;
                Ok(AttentionLayout { q, k, v, rows, bars })
            }
        }
    }
    /// Launch-sized bytes of the layout.
    pub fn shared_bytes(&self, d: u32) -> Result<u32, LayoutError> {
        let l = self.layout(d)?;
        Ok(match self.kind {
            AttentionKind::Wgmma => l.bars.end(),
            AttentionKind::Simt => l.rows.end(),
        })
    }
    /// Query tiles per head.
    pub const fn q_tiles(&self, seq: u32) -> u32 {
        seq.div_ceil(self.bq)
    }
    /// Blocks of a launch: one per (query tile, head).
    pub const fn grid(&self, seq: u32, bh: u32) -> u64 {
        self.q_tiles(seq) as u64 * bh as u64
    }
}

/// Block `block`'s (head, query tile): heads outermost, so the blocks running at once share
/// a few heads' K and V in L2; under a causal mask the longest tiles (the last) first.
#[inline(always)]
pub const fn block_coords(block: u32, q_tiles: u32, causal: bool) -> (u32, u32) {
    let (head, i) = (block / q_tiles, block % q_tiles);
    (head, if causal { q_tiles - 1 - i } else { i })
}

/// Keys query tile `tile` (of `bq` rows) reads: all `seq`, or under a causal mask those up
/// to its last row.
#[inline(always)]
pub const fn keys_seen(tile: u32, bq: u32, seq: u32, causal: bool) -> u32 {
    let end = (tile + 1) * bq;
    if causal && end < seq { end } else { seq }
}

/// `softmax scale * log2(e)`: scores go to the base-2 domain in one multiply.
#[inline(always)]
pub(crate) fn scale_log2(d: u32) -> f32 {
    core::f32::consts::LOG2_E * gpu::rsqrt(d as f32)
}

/// A 16-bit element's value.
#[inline(always)]
pub(crate) fn to_f32<const BF16: bool>(bits: u16) -> f32 {
    if BF16 { f32::from_bits((bits as u32) << 16) } else { f16::from_bits(bits) as f32 }
}

/// The SIMT kernel (module documentation). `D` the head dimension.
///
/// # Contract
/// `q`, `k`, `v`, `o` hold `bh * seq * D` elements, `lse` `bh * seq`; the launch gave the
/// layout's bytes, `cfg.threads()` threads and [`AttentionConfig::grid`] blocks.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn attention_simt<const BF16: bool, const D: usize>(
    q: *const u16,
    k: *const u16,
    v: *const u16,
    o: *mut u16,
    lse: *mut f32,
    seq: u32,
    causal: bool,
    cfg: AttentionConfig,
) {
    let d = D as u32;
    if cfg.kind != AttentionKind::Simt || !cfg.fits(d) || gpu::block_dim_x() != cfg.threads() {
        gpu::trap();
    }
    let Ok(layout) = cfg.layout(d) else { gpu::trap() };
    let Ok(bytes) = cfg.shared_bytes(d) else { gpu::trap() };
    let region = gpu::launch_region(bytes);
    let (k_s, v_s, rows) = (region.array(layout.k), region.array(layout.v), region.array(layout.rows));
    let t = gpu::thread_idx_x();
    let q_tiles = cfg.q_tiles(seq);
    let (head, tile) = block_coords(gpu::block_idx_x(), q_tiles, causal);
    let row = tile * cfg.bq + t;
    let live = row < seq;
    let base = head as usize * seq as usize * D;
    let bq = cfg.bq;
    // This thread's query row (pre-scaled into the base-2 domain) and output accumulators.
    // SAFETY (every access below): element `i < D` of thread `t < bq`, inside `rows`.
    let q_at = |i: u32| i * bq + t;
    let o_at = |i: u32| (d + i) * bq + t;
    let scale = scale_log2(d);
    for i in 0..d {
        let x = if live { unsafe { gpu::read_global(q.add(base + row as usize * D + i as usize)) } } else { 0 };
        unsafe {
            rows.write(q_at(i), (to_f32::<BF16>(x) * scale).to_bits());
            rows.write(o_at(i), 0f32.to_bits());
        }
    }
    let (mut m, mut l) = (f32::NEG_INFINITY, 0f32);
    let keys = keys_seen(tile, cfg.bq, seq, causal);
    let mut k0 = 0;
    while k0 < keys {
        let n = if keys - k0 < cfg.bk { keys - k0 } else { cfg.bk };
        // Every thread is done with the last tile before it is overwritten.
        gpu::barrier();
        let mut i = t;
        while i < n * d {
            let at = base + k0 as usize * D + i as usize;
            unsafe {
                k_s.write(i, to_f32::<BF16>(gpu::read_global(k.add(at))).to_bits());
                v_s.write(i, to_f32::<BF16>(gpu::read_global(v.add(at))).to_bits());
            }
            i += cfg.threads();
        }
        gpu::barrier();
        if live {
            // Under a causal mask keys past `row` are skipped (none of this tile's if `row < k0`).
            let last = match causal {
                true if row < k0 => 0,
                true if row + 1 - k0 < n => row + 1 - k0,
                _ => n,
            };
            for j in 0..last {
                let mut s = 0f32;
                for i in 0..d {
                    let (qi, ki) = unsafe { (rows.read(q_at(i)), k_s.read(j * d + i)) };
                    s = gpu::fma(f32::from_bits(qi), f32::from_bits(ki), s);
                }
                // A new maximum rescales what the row has summed so far.
                let alpha = if s > m { gpu::exp2(m - s) } else { 1.0 };
                if s > m {
                    m = s;
                }
                let p = gpu::exp2(s - m);
                l = l * alpha + p;
                for i in 0..d {
                    let (oi, vi) = unsafe { (rows.read(o_at(i)), v_s.read(j * d + i)) };
                    let acc = gpu::fma(p, f32::from_bits(vi), f32::from_bits(oi) * alpha);
                    unsafe { rows.write(o_at(i), acc.to_bits()) };
                }
            }
        }
        k0 += n;
    }
    if live {
        let inv = 1.0 / l;
        let out = base + row as usize * D;
        for i in (0..d).step_by(2) {
            let (a, b) = unsafe { (rows.read(o_at(i)), rows.read(o_at(i + 1))) };
            let w = gpu::pack_half2::<BF16>(f32::from_bits(a) * inv, f32::from_bits(b) * inv);
            unsafe { gpu::write_global(o.add(out + i as usize).cast::<u32>(), w) };
        }
        let lse_at = head as usize * seq as usize + row as usize;
        unsafe { gpu::write_global(lse.add(lse_at), (m + gpu::log2(l)) * core::f32::consts::LN_2) };
    }
}

/// The warp-specialised wgmma kernel (module documentation). `D` the head dimension,
/// `ACC_O` = `D / 2` output accumulators per math thread.
///
/// # Contract
/// As for [`attention_simt`], with tensor maps for `q`, `k`, `v` (boxes 64 x `bq` and
/// 64 x [`WGMMA_BK`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn attention_wgmma<const BF16: bool, const D: u32, const ACC_O: usize>(
    q_map: *const u8,
    k_map: *const u8,
    v_map: *const u8,
    o: *mut u16,
    lse: *mut f32,
    seq: u32,
    causal: bool,
    cfg: AttentionConfig,
) {
    const ACC_S: usize = (WGMMA_BK / 2) as usize;
    let t = gpu::thread_idx_x();
    if cfg.kind != AttentionKind::Wgmma
        || !cfg.fits(D)
        || gpu::block_dim_x() != cfg.threads()
        || ACC_O != D as usize / 2
    {
        gpu::trap();
    }
    let Ok(layout) = cfg.layout(D) else { gpu::trap() };
    let Ok(bytes) = cfg.shared_bytes(D) else { gpu::trap() };
    let region = gpu::launch_region(bytes);
    let (q_s, bars) = (region.array(layout.q), region.array(layout.bars));
    // K and V slots as 16-bit elements.
    let (k_s, v_s) = unsafe { (region.array(layout.k).cast::<u16>(), region.array(layout.v).cast::<u16>()) };
    let stages = cfg.stages;
    let panels = D / PANEL;
    let (q_panel, kv_panel) = (cfg.bq * PANEL, WGMMA_BK * PANEL);
    let kv_slot = panels * kv_panel;
    // SAFETY (all the pointers below): panel `p < D / 64` of slot `s < stages`, in bounds by
    // the layout; barrier `i < 1 + 4 stages`.
    let q_at = |p: u32| unsafe { q_s.shared_ptr(p * q_panel, q_panel) };
    let k_at = |s: u32, p: u32| unsafe { k_s.shared_ptr(s * kv_slot + p * kv_panel, kv_panel) };
    let v_at = |s: u32, p: u32| unsafe { v_s.shared_ptr(s * kv_slot + p * kv_panel, kv_panel) };
    let q_full = unsafe { bars.shared_ptr(0, 1) };
    // K and V have barriers of their own: a K slot is free once `S` is computed, its V slot
    // only after the next tile's `S` (the product with `P` is issued a tile late).
    let k_full_at = |s: u32| unsafe { bars.shared_ptr(1 + s, 1) };
    let v_full_at = |s: u32| unsafe { bars.shared_ptr(1 + stages + s, 1) };
    let k_empty_at = |s: u32| unsafe { bars.shared_ptr(1 + 2 * stages + s, 1) };
    let v_empty_at = |s: u32| unsafe { bars.shared_ptr(1 + 3 * stages + s, 1) };
    if t == 0 {
        if q_at(0).shared_addr() % SLOT_ALIGN != 0 {
            gpu::trap();
        }
        unsafe { q_full.mbar_init(1) };
        for s in 0..stages {
            unsafe {
                k_full_at(s).mbar_init(1);
                v_full_at(s).mbar_init(1);
                k_empty_at(s).mbar_init(cfg.warpgroups());
                v_empty_at(s).mbar_init(cfg.warpgroups());
            }
        }
        gpu::mbar_init_fence();
    }
    gpu::barrier();

    let (head, tile) = block_coords(gpu::block_idx_x(), cfg.q_tiles(seq), causal);
    let row0 = head * seq + tile * cfg.bq;
    let keys = keys_seen(tile, cfg.bq, seq, causal);
    let k_tiles = keys.div_ceil(WGMMA_BK);
    // Warp-uniform as ptxas sees it: the descriptors computed from it stay in uniform registers.
    let warpgroup = gpu::warp_uniform(t / WARPGROUP);
    if warpgroup == 0 {
        gpu::registers_for_copies();
        if t == 0 {
            unsafe {
                q_full.mbar_arrive_expect_tx(cfg.bq * D * 2);
                for p in 0..panels {
                    q_at(p).copy_tile_2d(q_map, (p * PANEL) as i32, row0 as i32, q_full);
                }
            }
            let (mut s, mut phase) = (0, 0);
            for kt in 0..k_tiles {
                let y = (head * seq + kt * WGMMA_BK) as i32;
                unsafe {
                    // A fresh barrier's phase "before the first" counts as complete.
                    k_empty_at(s).mbar_wait(phase ^ 1);
                    k_full_at(s).mbar_arrive_expect_tx(WGMMA_BK * D * 2);
                    for p in 0..panels {
                        k_at(s, p).copy_tile_2d(k_map, (p * PANEL) as i32, y, k_full_at(s));
                    }
                    v_empty_at(s).mbar_wait(phase ^ 1);
                    v_full_at(s).mbar_arrive_expect_tx(WGMMA_BK * D * 2);
                    for p in 0..panels {
                        v_at(s, p).copy_tile_2d(v_map, (p * PANEL) as i32, y, v_full_at(s));
                    }
                }
                s += 1;
                if s == stages {
                    s = 0;
                    phase ^= 1;
                }
            }
        }
        return;
    }
    gpu::registers_for_math();
    let unit = warpgroup - 1;
    let lead = t.is_multiple_of(WARPGROUP);
    // Fragment coordinates (see `gpu::wgmma`): rows `g` and `g + 8` of this warp's 16,
    // columns `2c`, `2c + 1` of each 8-column chunk.
    let (lane, warp) = (t % 32, (t % WARPGROUP) / 32);
    let (g, c) = (lane / 4, lane % 4);
    // Sequence positions of this thread's two rows (`g` and `g + 8`).
    let row_lo = tile * cfg.bq + unit * ROWS_PER_WARPGROUP + warp * 16 + g;
    let row_hi = row_lo + 8;
    let scale = scale_log2(D);
    let mut m = [f32::NEG_INFINITY; 2];
    let mut l = [0f32; 2];
    let mut acc = [0f32; ACC_O];
    // Descriptors step by adding to their address field (bytes / 16; a shared address is
    // under 2^18, so the field never carries out): this warpgroup's Q rows once, each slot's
    // K and V from its first panel, the rest by constant or loop-invariant steps.
    let q_desc = q_at(0).wrapping_add(unit * ROWS_PER_WARPGROUP * PANEL).wgmma_desc_sw128();
    let q_panel_step = (q_panel * 2 / 16) as u64;
    let kv_panel_step = (kv_panel * 2 / 16) as u64;

    // The pipeline (FlashAttention-3's, per math warpgroup): tile `kt`'s `S = Q K^T` and the
    // previous tile's `O += P V` are issued together, `O` rescaled between the two (under
    // the first product); the online softmax of `S` then runs while the tensor cores
    // multiply `P V`, and the new `P` is packed once that product is done (its A operand is
    // `P`'s registers). In ping-pong the two math warpgroups issue their products in turn:
    // warpgroup `u` waits at hardware barrier `1 + u` (its 128 threads and the other
    // warpgroup's 128 arriving), and arrives at the other's after issuing. Warpgroup 1
    // arrives once first (warpgroup 0 goes first) and not after its last turn, so every
    // barrier's arrivals match. Slots are made warp-uniform for ptxas once per tile (a
    // loop-carried value is not seen as one): their addresses and descriptors then stay in
    // uniform registers.
    const TURN_THREADS: u32 = 2 * WARPGROUP;
    let pingpong = cfg.pingpong;
    // Turns per warpgroup: one per tile and the last tile's `P V`.
    let last_turn = k_tiles;
    let take_turn = || match (pingpong, unit) {
        (true, 0) => gpu::named_barrier_sync::<1>(TURN_THREADS),
        (true, _) => gpu::named_barrier_sync::<2>(TURN_THREADS),
        _ => {}
    };
    let pass_turn = |turn: u32| match (pingpong, unit) {
        (true, 0) => gpu::named_barrier_arrive::<2>(TURN_THREADS),
        (true, _) if turn != last_turn => gpu::named_barrier_arrive::<1>(TURN_THREADS),
        _ => {}
    };
    if pingpong && unit == 1 {
        gpu::named_barrier_arrive::<1>(TURN_THREADS);
    }
    // S = Q K^T from K slot `s`: D / 16 k-steps, four per 64-column panel (32 bytes along the
    // swizzled rows each: 2 in the descriptor's address field). One commit group.
    let issue_s = #[inline(always)]
    |scores: &mut [f32; ACC_S], s: u32| {
        let k_desc = k_at(s, 0).wgmma_desc_sw128();
        gpu::wgmma_fence(scores);
        for step in 0..(D / 16) as u64 {
            let (p, kk) = (step / 4, step % 4);
            let (qd, kd) = (q_desc + p * q_panel_step + 2 * kk, k_desc + p * kv_panel_step + 2 * kk);
            unsafe { gpu::wgmma::<BF16, ACC_S>(scores, qd, kd, step > 0) };
        }
        gpu::wgmma_commit();
    };
    // O += P V from V slot `s`: V's k-steps of 16 keys are 2048 bytes apart; its panels (64
    // columns of O each) one panel's bytes apart. One commit group.
    let issue_pv = #[inline(always)]
    |acc: &mut [f32; ACC_O], pa: &[[u32; 4]; 8], s: u32| {
        let v_desc = v_at(s, 0).wgmma_desc_sw128_n_major(kv_panel * 2);
        gpu::wgmma_fence(acc);
        unroll!(kk in [0 1 2 3 4 5 6 7] {
            let vd = v_desc + kk as u64 * (16 * PANEL as u64 * 2 / 16);
            unsafe { gpu::wgmma_rs::<BF16, ACC_O>(acc, pa[kk], vd, true) };
        });
        gpu::wgmma_commit();
    };
    let rescale = #[inline(always)]
    |acc: &mut [f32; ACC_O], alpha: [f32; 2]| {
        unroll!(r in [0 1] {
            unroll!(j in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] {
                if 4 * j < ACC_O {
                    acc[4 * j + 2 * r] *= alpha[r];
                    acc[4 * j + 2 * r + 1] *= alpha[r];
                }
            });
        });
    };
    let release = |empty: crate::gpu::SharedPtr<u64>| {
        if lead {
            unsafe { empty.mbar_arrive() };
        }
    };
    // Tile `kt`'s scores to weights in place, where `mask` masked keys (past the sequence,
    // or causal past the row) to -inf first (only the last tile and, causal, the diagonal's
    // have any: the callers choose the form, so the others carry no mask code). Updates the
    // row maxima (base-2 domain) and this thread's partial sums (its quarter of each row; the
    // quad's sum is taken once at the end); returns each row's rescale of `O`. The maximum is
    // taken over the raw scores (the scale is positive) and each weight is one `fma` and one
    // `ex2.approx.ftz`: the softmax's instructions share the issue slots with the MMAs'.
    let softmax = #[inline(always)]
    |scores: &mut [f32; ACC_S], m: &mut [f32; 2], l: &mut [f32; 2], kt: u32, mask: bool| -> [f32; 2] {
        let k0 = kt * WGMMA_BK;
        if mask {
            unroll!(j in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] {
                unroll!(e in [0 1 2 3] {
                    let key = k0 + 8 * j as u32 + 2 * c + (e as u32 & 1);
                    let row = if e >= 2 { row_hi } else { row_lo };
                    if key >= seq || (causal && key > row) {
                        scores[4 * j + e] = f32::NEG_INFINITY;
                    }
                });
            });
        }
        let mut alpha = [1f32; 2];
        unroll!(r in [0 1] {
            let mut mx = f32::NEG_INFINITY;
            unroll!(j in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] {
                mx = mx.max(scores[4 * j + 2 * r]).max(scores[4 * j + 2 * r + 1]);
            });
            let mx = (gpu::quad_reduce(mx, f32::max) * scale).max(m[r]);
            // A row with every key so far masked keeps exp2(-inf) = 0 everywhere.
            let base = if mx == f32::NEG_INFINITY { 0.0 } else { mx };
            alpha[r] = gpu::exp2_ftz(m[r] - base);
            m[r] = mx;
            let mut sum = 0f32;
            unroll!(j in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] {
                let p0 = gpu::exp2_ftz(gpu::fma(scores[4 * j + 2 * r], scale, -base));
                let p1 = gpu::exp2_ftz(gpu::fma(scores[4 * j + 2 * r + 1], scale, -base));
                scores[4 * j + 2 * r] = p0;
                scores[4 * j + 2 * r + 1] = p1;
                sum += p0 + p1;
            });
            l[r] = l[r] * alpha[r] + sum;
        });
        alpha
    };
    // P as 16-bit A fragments: k-step `kk` (keys 16 kk..) is score chunks 2 kk and 2 kk + 1.
    let pack = #[inline(always)]
    |scores: &[f32; ACC_S]| -> [[u32; 4]; 8] {
        let mut pa = [[0u32; 4]; 8];
        unroll!(kk in [0 1 2 3 4 5 6 7] {
            unroll!(i in [0 1 2 3] {
                pa[kk][i] = gpu::pack_half2::<BF16>(scores[8 * kk + 2 * i], scores[8 * kk + 2 * i + 1]);
            });
        });
        pa
    };
    unsafe { q_full.mbar_wait(0) };
    // Tiles before `unmasked` have no masked key: inside the sequence and, causal, at or
    // before the block's first row.
    let full_tiles = seq / WGMMA_BK;
    let unmasked =
        if causal && (tile * cfg.bq + 1) / WGMMA_BK < full_tiles { (tile * cfg.bq + 1) / WGMMA_BK } else { full_tiles };
    // Ring slot and barrier parity of the next tile (`s`) and of the tile whose `P V` is
    // still to issue (`vs`).
    let (mut s, mut phase) = (0, 0);
    let advance = |s: &mut u32, phase: &mut u32| {
        *s += 1;
        if *s == stages {
            *s = 0;
            *phase ^= 1;
        }
    };
    let mut scores = [0f32; ACC_S];
    // Tile 0: `S` alone.
    unsafe { k_full_at(0).mbar_wait(0) };
    take_turn();
    issue_s(&mut scores, 0);
    pass_turn(0);
    gpu::wgmma_wait::<0, ACC_S>(&mut scores);
    release(k_empty_at(0));
    let mut alpha = if unmasked == 0 {
        softmax(&mut scores, &mut m, &mut l, 0, true)
    } else {
        softmax(&mut scores, &mut m, &mut l, 0, false)
    };
    let mut pa = pack(&scores);
    let (mut vs, mut vphase) = (s, phase);
    advance(&mut s, &mut phase);
    for kt in 1..k_tiles {
        let (su, vu) = (gpu::warp_uniform(s), gpu::warp_uniform(vs));
        unsafe {
            k_full_at(su).mbar_wait(phase);
            v_full_at(vu).mbar_wait(vphase);
        }
        take_turn();
        issue_s(&mut scores, su);
        rescale(&mut acc, alpha);
        issue_pv(&mut acc, &pa, vu);
        pass_turn(kt);
        gpu::wgmma_wait::<1, ACC_S>(&mut scores);
        release(k_empty_at(su));
        alpha = if kt >= unmasked {
            softmax(&mut scores, &mut m, &mut l, kt, true)
        } else {
            softmax(&mut scores, &mut m, &mut l, kt, false)
        };
        gpu::wgmma_wait::<0, ACC_O>(&mut acc);
        release(v_empty_at(vu));
        pa = pack(&scores);
        (vs, vphase) = (s, phase);
        advance(&mut s, &mut phase);
    }
    // The last tile's `P V`.
    let vu = gpu::warp_uniform(vs);
    unsafe { v_full_at(vu).mbar_wait(vphase) };
    take_turn();
    rescale(&mut acc, alpha);
    issue_pv(&mut acc, &pa, vu);
    pass_turn(last_turn);
    gpu::wgmma_wait::<0, ACC_O>(&mut acc);
    release(v_empty_at(vu));
    // Normalise and store: O's 8-column chunk `j` holds columns 8j + 2c and the next.
    unroll!(r in [0 1] {
        let total = gpu::quad_reduce(l[r], |a, b| a + b);
        let row = if r == 1 { row_hi } else { row_lo };
        if row < seq {
            let inv = 1.0 / total;
            let out = (head as usize * seq as usize + row as usize) * D as usize;
            unroll!(j in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] {
                if 4 * j < ACC_O {
                    let w = gpu::pack_half2::<BF16>(acc[4 * j + 2 * r] * inv, acc[4 * j + 2 * r + 1] * inv);
                    let col = 8 * j + 2 * c as usize;
                    unsafe { gpu::write_global(o.add(out + col).cast::<u32>(), w) };
                }
            });
            if c == 0 {
                let at = head as usize * seq as usize + row as usize;
                unsafe { gpu::write_global(lse.add(at), (m[r] + gpu::log2(total)) * core::f32::consts::LN_2) };
            }
        }
    });
}

/// The compiled-in tile of the `_fixed` entry: two math warpgroups in ping-pong, two ring
/// slots.
pub const FIXED: AttentionConfig = AttentionConfig::wgmma(128, 2);

// Register caps (`[max_registers = N]`): the wgmma entries run 384-thread blocks (65536 / 384
// rounded down to 8); their warpgroups then trade registers with `setmaxnreg`. The SIMT
// entries hold a query row and an output row per thread (2 D floats): they spill at D = 128
// on a GPU, where they are the portable form, not the fast one.
crate::kernels! { KERNELS;
    /// wgmma, f16, D = 128.
    pub fn attention_wgmma_f16_d128(q: *const u8, k: *const u8, v: *const u8, o: *mut u16, lse: *mut f32, seq: u32, bh: u32, causal: u32, bq: u32, bk: u32, stages: u32, pingpong: u32) [max_registers = 168] {
        let _ = (bh, bk);
        attention_wgmma::<false, 128, 64>(q, k, v, o, lse, seq, causal != 0, AttentionConfig::wgmma(bq, stages).with_pingpong(pingpong != 0))
    }
    /// wgmma, bf16, D = 128.
    pub fn attention_wgmma_bf16_d128(q: *const u8, k: *const u8, v: *const u8, o: *mut u16, lse: *mut f32, seq: u32, bh: u32, causal: u32, bq: u32, bk: u32, stages: u32, pingpong: u32) [max_registers = 168] {
        let _ = (bh, bk);
        attention_wgmma::<true, 128, 64>(q, k, v, o, lse, seq, causal != 0, AttentionConfig::wgmma(bq, stages).with_pingpong(pingpong != 0))
    }
    /// wgmma, f16, D = 64.
    pub fn attention_wgmma_f16_d64(q: *const u8, k: *const u8, v: *const u8, o: *mut u16, lse: *mut f32, seq: u32, bh: u32, causal: u32, bq: u32, bk: u32, stages: u32, pingpong: u32) [max_registers = 168] {
        let _ = (bh, bk);
        attention_wgmma::<false, 64, 32>(q, k, v, o, lse, seq, causal != 0, AttentionConfig::wgmma(bq, stages).with_pingpong(pingpong != 0))
    }
    /// wgmma, bf16, D = 64.
    pub fn attention_wgmma_bf16_d64(q: *const u8, k: *const u8, v: *const u8, o: *mut u16, lse: *mut f32, seq: u32, bh: u32, causal: u32, bq: u32, bk: u32, stages: u32, pingpong: u32) [max_registers = 168] {
        let _ = (bh, bk);
        attention_wgmma::<true, 64, 32>(q, k, v, o, lse, seq, causal != 0, AttentionConfig::wgmma(bq, stages).with_pingpong(pingpong != 0))
    }
    /// `attention_wgmma_f16_d128` with [`FIXED`] compiled in (its `bq` and `stages` must
    /// match).
    pub fn attention_wgmma_f16_d128_fixed(q: *const u8, k: *const u8, v: *const u8, o: *mut u16, lse: *mut f32, seq: u32, bh: u32, causal: u32, bq: u32, bk: u32, stages: u32, pingpong: u32) [max_registers = 168] {
        let _ = (bh, bk);
        if bq != FIXED.bq || stages != FIXED.stages || (pingpong != 0) != FIXED.pingpong {
            gpu::trap();
        }
        attention_wgmma::<false, 128, 64>(q, k, v, o, lse, seq, causal != 0, FIXED)
    }
    /// SIMT, f16, D = 128.
    pub fn attention_simt_f16_d128(q: *const u8, k: *const u8, v: *const u8, o: *mut u16, lse: *mut f32, seq: u32, bh: u32, causal: u32, bq: u32, bk: u32, stages: u32, pingpong: u32) [spills = "a query and an output row of 128 floats per thread"] {
        let _ = (bh, stages);
        attention_simt::<false, 128>(q.cast(), k.cast(), v.cast(), o, lse, seq, causal != 0, AttentionConfig::simt(bq, bk).with_pingpong(pingpong != 0))
    }
    /// SIMT, bf16, D = 128.
    pub fn attention_simt_bf16_d128(q: *const u8, k: *const u8, v: *const u8, o: *mut u16, lse: *mut f32, seq: u32, bh: u32, causal: u32, bq: u32, bk: u32, stages: u32, pingpong: u32) [spills = "a query and an output row of 128 floats per thread"] {
        let _ = (bh, stages);
        attention_simt::<true, 128>(q.cast(), k.cast(), v.cast(), o, lse, seq, causal != 0, AttentionConfig::simt(bq, bk).with_pingpong(pingpong != 0))
    }
    /// SIMT, f16, D = 64.
    pub fn attention_simt_f16_d64(q: *const u8, k: *const u8, v: *const u8, o: *mut u16, lse: *mut f32, seq: u32, bh: u32, causal: u32, bq: u32, bk: u32, stages: u32, pingpong: u32) [spills = "a query and an output row of 64 floats per thread"] {
        let _ = (bh, stages);
        attention_simt::<false, 64>(q.cast(), k.cast(), v.cast(), o, lse, seq, causal != 0, AttentionConfig::simt(bq, bk).with_pingpong(pingpong != 0))
    }
    /// SIMT, bf16, D = 64.
    pub fn attention_simt_bf16_d64(q: *const u8, k: *const u8, v: *const u8, o: *mut u16, lse: *mut f32, seq: u32, bh: u32, causal: u32, bq: u32, bk: u32, stages: u32, pingpong: u32) [spills = "a query and an output row of 64 floats per thread"] {
        let _ = (bh, stages);
        attention_simt::<true, 64>(q.cast(), k.cast(), v.cast(), o, lse, seq, causal != 0, AttentionConfig::simt(bq, bk).with_pingpong(pingpong != 0))
    }
}

/// The entry that runs `cfg` with head dimension `d` and `bf16` (else f16) inputs; `fixed`
/// asks for the compiled-in tile. `None` where no entry has that shape.
pub fn entry_name(cfg: &AttentionConfig, d: u32, bf16: bool, fixed: bool) -> Option<&'static str> {
    Some(match (cfg.kind, d, bf16, fixed) {
        (AttentionKind::Wgmma, 128, false, true) if *cfg == FIXED => "attention_wgmma_f16_d128_fixed",
        (.., true) => return None,
        (AttentionKind::Wgmma, 128, false, _) => "attention_wgmma_f16_d128",
        (AttentionKind::Wgmma, 128, true, _) => "attention_wgmma_bf16_d128",
        (AttentionKind::Wgmma, 64, false, _) => "attention_wgmma_f16_d64",
        (AttentionKind::Wgmma, 64, true, _) => "attention_wgmma_bf16_d64",
        (AttentionKind::Simt, 128, false, _) => "attention_simt_f16_d128",
        (AttentionKind::Simt, 128, true, _) => "attention_simt_bf16_d128",
        (AttentionKind::Simt, 64, false, _) => "attention_simt_f16_d64",
        (AttentionKind::Simt, 64, true, _) => "attention_simt_bf16_d64",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wgmma_panels_are_swizzle_aligned_and_the_largest_ring_fits_the_h100() {
        let cfg = AttentionConfig::wgmma(128, 3);
        let l = cfg.layout(128).unwrap();
        assert_eq!((l.q.offset(), l.k.offset(), l.v.offset()), (0, 32768, 32768 + 3 * 32768));
        assert_eq!(cfg.shared_bytes(128).unwrap(), 32768 + 6 * 32768 + 13 * 8);
        assert!(cfg.shared_bytes(128).unwrap() <= 232448);
        let small = AttentionConfig::wgmma(64, 5).layout(64).unwrap();
        assert!([small.k.offset(), small.v.offset()].iter().all(|o| o % SLOT_ALIGN == 0));
    }

    #[test]
    fn blocks_cover_every_tile_of_every_head_once_longest_first_when_causal() {
        for causal in [false, true] {
            let mut seen = [[false; 5]; 3];
            for b in 0..15 {
                let (h, t) = block_coords(b, 5, causal);
                assert!(!seen[h as usize][t as usize]);
                seen[h as usize][t as usize] = true;
            }
            assert_eq!(block_coords(0, 5, causal).1, if causal { 4 } else { 0 });
        }
    }

    #[test]
    fn causal_tiles_read_keys_up_to_their_last_row() {
        assert_eq!(keys_seen(0, 128, 1000, true), 128);
        assert_eq!(keys_seen(7, 128, 1000, true), 1000);
        assert_eq!(keys_seen(0, 128, 1000, false), 1000);
    }

    #[test]
    fn fits_names_each_kind_s_shapes() {
        assert!(AttentionConfig::wgmma(128, 2).fits(128));
        assert!(!AttentionConfig::wgmma(192, 2).fits(128));
        assert!(!AttentionConfig::wgmma(128, 1).fits(64));
        assert!(!AttentionConfig::wgmma(128, 2).fits(96));
        assert!(AttentionConfig::simt(33, 7).fits(64));
        assert!(!AttentionConfig::simt(300, 7).fits(64));
        assert_eq!(entry_name(&FIXED, 128, false, true), Some("attention_wgmma_f16_d128_fixed"));
        assert_eq!(entry_name(&AttentionConfig::wgmma(64, 2), 128, false, true), None);
    }
}
