//! Attention backward (FlashAttention-2's algorithm, `P` recomputed from the forward's row
//! log-sum-exp): given `Q`, `K`, `V`, the forward's `O` and `lse`, and the output gradient
//! `dO`, the gradients `dQ`, `dK`, `dV` per (batch, head). 16-bit inputs (f16 or bf16), f32
//! arithmetic, f32 gradients. Causal masking is the forward's: top-left aligned, query `i`
//! sees keys `0..=i`. Design decisions: `host/src/families/attention/NOTES.md`, "Backward".
//!
//! # The algorithm
//! With `scale = 1 / sqrt(D)` and `s_ij = scale q_i . k_j`:
//! - `Delta_i = sum_d dO_id O_id` (the pre-pass [`attention_bwd_delta`]);
//! - `P_ij = exp(s_ij - lse_i)` (masked keys: 0), `dP_ij = dO_i . v_j`,
//!   `dS_ij = P_ij (dP_ij - Delta_i)`;
//! - `dV_j = sum_i P_ij dO_i`, `dK_j = scale sum_i dS_ij q_i`, `dQ_i = scale sum_j dS_ij k_j`.
//!
//! Scores and `lse` are taken to the base-2 domain (`s log2(e)`, `lse log2(e)`), so each
//! weight is one `exp2`: the thread's own row (a key row in the dK/dV kernel, a query row in
//! the dQ kernel) is stored pre-multiplied by `scale log2(e)`, the staged tile's rows as they
//! are (they are the rows the gradient sums).
//!
//! # Tensors
//! `q`, `k`, `v`, `o`, `d_o`: `bh x seq x D` row-major 16-bit (`bh` = batch x heads, each
//! head's rows contiguous: PyTorch's `[B, H, S, D]`). `lse`, `delta`: `bh x seq` f32.
//! `dq`, `dk`, `dv`: `bh x seq x D` f32, every entry written once (each row of every head
//! belongs to one thread of one block: no atomics).
//!
//! # Kernels, thread mapping
//! - [`attention_bwd_delta`]: one thread per row of `O` over all heads, [`DELTA_THREADS`]
//!   per block; no launch-sized memory.
//! - [`attention_bwd_dkdv`]: one block per (key tile of `bk` keys, head), one thread per
//!   key row. The thread's `k` (pre-scaled), `v` and its `dK`, `dV` accumulators sit in
//!   launch-sized memory (a row of `D` floats per thread in registers would be an array
//!   indexed in loops: local memory). The block walks the query tiles of `bq` rows (from its
//!   first key under the causal mask: earlier queries see none of its keys), staging each
//!   tile's `q` and `dO` rows (f32) and their `lse` (base 2) and `Delta`.
//! - [`attention_bwd_dq`]: one block per (query tile of `bq` rows, head), one thread per
//!   query row: its `q` (pre-scaled), `dO` and `dQ` accumulator in launch-sized memory, its
//!   `lse` and `Delta` in registers. The block walks the K/V tiles of `bk` keys (up to its
//!   last row under the causal mask), staging each as f32. Under the mask the longest
//!   query tiles go first, as in the forward.
//!
//! # Compiled in, launch-time
//! Compiled in: the head dimension `D` (64 or 128) and the element type. Launch-time: `bq`
//! and `bk` (threads and staged-tile rows, in both kernels), so the shared bytes
//! ([`AttentionBwdConfig::dkdv_layout`], [`AttentionBwdConfig::dq_layout`]) are sized per
//! launch.
//!
//! # Entry points ([`entry_names`])
//! - `attention_bwd_delta_{f16,bf16}(o, d_o, delta, rows, d)`: grid
//!   [`AttentionBwdConfig::delta_grid`].
//! - `attention_bwd_simt_dkdv_{f16,bf16}_d{64,128}(q, k, v, d_o, lse, delta, dk, dv, seq, bh,
//!   causal, bq, bk)`: `bk` threads, grid [`AttentionBwdConfig::dkdv_grid`].
//! - `attention_bwd_simt_dq_{f16,bf16}_d{64,128}(q, k, v, d_o, lse, delta, dq, seq, bh,
//!   causal, bq, bk)`: `bq` threads, grid [`AttentionBwdConfig::dq_grid`].
//!
//! The dK/dV and dQ kernels read `delta`: the pre-pass runs first, in stream order.

use crate::attention::{HEAD_DIMS, block_coords, keys_seen, scale_log2, to_f32};
use crate::gpu;
use crate::layout::{Carve, LayoutError, Slice};

pub mod wgmma;

/// Most threads of the dK/dV kernel (key rows per block) and of the dQ kernel (query rows
/// per block); also the most rows of a staged tile.
pub const MAX_TILE: u32 = 256;
/// Threads per block of the `Delta` pre-pass.
pub const DELTA_THREADS: u32 = 128;

/// Which kernels run a config.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(rename_all = "lowercase"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AttentionBwdKind {
    /// The SIMT dK/dV and dQ kernels, any target.
    #[default]
    Simt,
    /// The one sm_90a tensor-core kernel ([`wgmma`]).
    Wgmma,
}

#[cfg(feature = "serde")]
const fn one() -> u32 {
    1
}

/// The launch-time tile sizes of a backward pass.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AttentionBwdConfig {
    /// SIMT (the default, and what records without the field ran) or wgmma.
    #[cfg_attr(feature = "serde", serde(default))]
    pub kind: AttentionBwdKind,
    /// Query rows per tile. SIMT: the dQ kernel's threads, the dK/dV kernel's staged query
    /// tile, 1 to [`MAX_TILE`]; wgmma: [`wgmma::WGMMA_BQ`] (compiled in).
    pub bq: u32,
    /// Key rows per tile. SIMT: the dK/dV kernel's threads, the dQ kernel's staged K/V tile,
    /// 1 to [`MAX_TILE`]; wgmma: 64 per math warpgroup, 64 or 128.
    pub bk: u32,
    /// wgmma: the ring's slots of `Q` and `dO` tiles, [`wgmma::MIN_STAGES`] to
    /// [`wgmma::MAX_STAGES`]. SIMT: 1.
    #[cfg_attr(feature = "serde", serde(default = "one"))]
    pub stages: u32,
}

/// Where the wgmma kernel's arrays sit in the launch-sized region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WgmmaLayout {
    /// The block's K tile: `D / 64` panels of `bk` rows of 64 16-bit elements (128 bytes,
    /// swizzled), 1024-byte aligned.
    pub k: Slice<u16>,
    /// Its V tile, as `k`.
    pub v: Slice<u16>,
    /// `stages` slots, each a Q tile then a dO tile of `D / 64` panels of [`wgmma::WGMMA_BQ`]
    /// rows.
    pub ring: Slice<u16>,
    /// Two `dS^T` buffers of `bk` rows of 64 16-bit queries (32 words, swizzled).
    pub ds: Slice<u32>,
    /// Two buffers of a query tile's `lse log2(e)` then its `Delta`, 64 f32 each.
    pub stats: Slice<f32>,
    /// Per math warpgroup, a dQ piece on its way to `dq`: 64 rows of [`wgmma::DQ_ROW`] f32.
    pub dq: Slice<f32>,
    /// The K/V barrier, then `stages` full and `stages` empty barriers.
    pub bars: Slice<u64>,
}

/// Where the dK/dV kernel's arrays sit in the launch-sized region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DkdvLayout {
    /// The staged query tile's `q` rows, `bq x D` f32, row-major.
    pub q: Slice<f32>,
    /// Its `dO` rows, `bq x D` f32, row-major.
    pub d_o: Slice<f32>,
    /// Its rows' `lse log2(e)`, then their `Delta`: `2 bq` f32.
    pub stats: Slice<f32>,
    /// Each thread's key row (pre-scaled), value row, `dK` and `dV` accumulators: `4 D x bk`
    /// f32, element `i` of thread `t`'s array `a` (0 to 3) at `(a D + i) bk + t`
    /// (consecutive threads, consecutive banks).
    pub rows: Slice<f32>,
}

/// Where the dQ kernel's arrays sit in the launch-sized region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DqLayout {
    /// The staged K tile, `bk x D` f32, row-major.
    pub k: Slice<f32>,
    /// The staged V tile, as `k`.
    pub v: Slice<f32>,
    /// Each thread's query row (pre-scaled), `dO` row and `dQ` accumulator: `3 D x bq` f32,
    /// element `i` of thread `t`'s array `a` (0 to 2) at `(a D + i) bq + t`.
    pub rows: Slice<f32>,
}

impl AttentionBwdConfig {
    /// The SIMT kernels with these tiles.
    pub const fn new(bq: u32, bk: u32) -> Self {
        AttentionBwdConfig { kind: AttentionBwdKind::Simt, bq, bk, stages: 1 }
    }
    /// The wgmma kernel with `bk` keys per block and `stages` ring slots.
    pub const fn wgmma(bk: u32, stages: u32) -> Self {
        AttentionBwdConfig { kind: AttentionBwdKind::Wgmma, bq: wgmma::WGMMA_BQ, bk, stages }
    }
    /// Whether the kernels can run this config with head dimension `d` (see the fields'
    /// rules); the host says which rule a refused config breaks.
    pub const fn fits(&self, d: u32) -> bool {
        let d_ok = d == HEAD_DIMS[0] || d == HEAD_DIMS[1];
        let shape_ok = match self.kind {
            AttentionBwdKind::Simt => {
                self.bq >= 1 && self.bq <= MAX_TILE && self.bk >= 1 && self.bk <= MAX_TILE && self.stages == 1
            }
            AttentionBwdKind::Wgmma => {
                self.bq == wgmma::WGMMA_BQ
                    && self.bk.is_multiple_of(wgmma::KEYS_PER_WARPGROUP)
                    && self.bk >= wgmma::KEYS_PER_WARPGROUP
                    && self.bk <= wgmma::KEYS_PER_WARPGROUP * wgmma::MAX_WARPGROUPS
                    && self.stages >= wgmma::MIN_STAGES
                    && self.stages <= wgmma::MAX_STAGES
            }
        };
        d_ok && shape_ok
    }
    /// Threads of the wgmma kernel's blocks: a copy warpgroup and one per 64 keys.
    pub const fn threads(&self) -> u32 {
        gpu::WARPGROUP * (1 + self.bk / wgmma::KEYS_PER_WARPGROUP)
    }
    /// The wgmma kernel's carve for head dimension `d` (the [`wgmma`] module).
    pub fn wgmma_layout(&self, d: u32) -> Result<WgmmaLayout, LayoutError> {
        use crate::attention::SLOT_ALIGN;
        let mut carve = Carve::new();
        let k = carve.array_aligned::<u16>(self.bk * d, SLOT_ALIGN)?;
        let v = carve.array_aligned::<u16>(self.bk * d, SLOT_ALIGN)?;
        let ring = carve.array_aligned::<u16>(self.stages * 2 * wgmma::WGMMA_BQ * d, SLOT_ALIGN)?;
        let ds = carve.array_aligned::<u32>(2 * self.bk * wgmma::WGMMA_BQ / 2, SLOT_ALIGN)?;
        let stats = carve.array::<f32>(2 * 2 * wgmma::WGMMA_BQ)?;
        let units = self.bk / wgmma::KEYS_PER_WARPGROUP;
        let dq = carve.array_aligned::<f32>(units * wgmma::WGMMA_BQ * wgmma::DQ_ROW, 16)?;
        let bars = carve.array::<u64>(1 + 2 * self.stages)?;
        Ok(WgmmaLayout { k, v, ring, ds, stats, dq, bars })
    }
    /// Launch-sized bytes of the wgmma kernel.
    pub fn wgmma_bytes(&self, d: u32) -> Result<u32, LayoutError> {
        Ok(self.wgmma_layout(d)?.bars.end())
    }
    /// Blocks of the wgmma kernel: one per (key tile, head), heads outermost.
    pub const fn wgmma_grid(&self, seq: u32, bh: u32) -> u64 {
        seq.div_ceil(self.bk) as u64 * bh as u64
    }
    /// The dK/dV kernel's carve for head dimension `d` (module documentation).
    pub fn dkdv_layout(&self, d: u32) -> Result<DkdvLayout, LayoutError> {
        let mut carve = Carve::new();
        let q = carve.array::<f32>(self.bq * d)?;
        let d_o = carve.array::<f32>(self.bq * d)?;
        let stats = carve.array::<f32>(2 * self.bq)?;
        let rows = carve.array::<f32>(4 * d * self.bk)?;
        Ok(DkdvLayout { q, d_o, stats, rows })
    }
    /// The dQ kernel's carve for head dimension `d` (module documentation).
    pub fn dq_layout(&self, d: u32) -> Result<DqLayout, LayoutError> {
        let mut carve = Carve::new();
        let k = carve.array::<f32>(self.bk * d)?;
        let v = carve.array::<f32>(self.bk * d)?;
        let rows = carve.array::<f32>(3 * d * self.bq)?;
        Ok(DqLayout { k, v, rows })
    }
    /// Launch-sized bytes of the dK/dV kernel.
    pub fn dkdv_bytes(&self, d: u32) -> Result<u32, LayoutError> {
        Ok(self.dkdv_layout(d)?.rows.end())
    }
    /// Launch-sized bytes of the dQ kernel.
    pub fn dq_bytes(&self, d: u32) -> Result<u32, LayoutError> {
        Ok(self.dq_layout(d)?.rows.end())
    }
    /// Blocks of the pre-pass over `rows` rows of all heads.
    pub const fn delta_grid(rows: u64) -> u64 {
        rows.div_ceil(DELTA_THREADS as u64)
    }
    /// Blocks of the dK/dV kernel: one per (key tile, head).
    pub const fn dkdv_grid(&self, seq: u32, bh: u32) -> u64 {
        seq.div_ceil(self.bk) as u64 * bh as u64
    }
    /// Blocks of the dQ kernel: one per (query tile, head).
    pub const fn dq_grid(&self, seq: u32, bh: u32) -> u64 {
        seq.div_ceil(self.bq) as u64 * bh as u64
    }
}

/// The pre-pass: `delta[r] = sum_i dO[r][i] O[r][i]` (f32) for each of the `rows` rows of
/// width `d`, one thread per row.
///
/// # Contract
/// `o` and `d_o` hold `rows * d` elements, `delta` `rows`; [`AttentionBwdConfig::delta_grid`]
/// blocks of [`DELTA_THREADS`] threads.
#[inline(always)]
fn attention_bwd_delta<const BF16: bool>(o: *const u16, d_o: *const u16, delta: *mut f32, rows: u32, d: u32) {
    if !HEAD_DIMS.contains(&d) || gpu::block_dim_x() != DELTA_THREADS {
        gpu::trap();
    }
    let row = gpu::block_idx_x() as u64 * DELTA_THREADS as u64 + gpu::thread_idx_x() as u64;
    if row >= rows as u64 {
        return;
    }
    let at = row as usize * d as usize;
    let mut sum = 0f32;
    for i in 0..d as usize {
        // SAFETY: element `i < d` of row `row < rows`.
        let (x, g) = unsafe { (gpu::read_global(o.add(at + i)), gpu::read_global(d_o.add(at + i))) };
        sum = gpu::fma(to_f32::<BF16>(x), to_f32::<BF16>(g), sum);
    }
    // SAFETY: `row < rows`.
    unsafe { gpu::write_global(delta.add(row as usize), sum) };
}

/// The dK/dV kernel (module documentation). `D` the head dimension.
///
/// # Contract
/// `q`, `k`, `v`, `d_o` hold `bh * seq * D` elements, `lse` and `delta` `bh * seq` (the
/// pre-pass's `delta`, complete), `dk` and `dv` `bh * seq * D`; the launch gave
/// [`AttentionBwdConfig::dkdv_bytes`], `cfg.bk` threads and
/// [`AttentionBwdConfig::dkdv_grid`] blocks.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn attention_bwd_dkdv<const BF16: bool, const D: usize>(
    [q, k, v, d_o]: [*const u16; 4],
    [lse, delta]: [*const f32; 2],
    [dk, dv]: [*mut f32; 2],
    seq: u32,
    causal: bool,
    cfg: AttentionBwdConfig,
) {
    let d = D as u32;
    if !cfg.fits(d) || gpu::block_dim_x() != cfg.bk {
        gpu::trap();
    }
    let Ok(layout) = cfg.dkdv_layout(d) else { gpu::trap() };
    let region = gpu::launch_region(layout.rows.end());
    let (q_s, do_s, stats, rows) =
        (region.array(layout.q), region.array(layout.d_o), region.array(layout.stats), region.array(layout.rows));
    let (t, bq, bk) = (gpu::thread_idx_x(), cfg.bq, cfg.bk);
    // Key tiles in order: under the mask the first tiles see the most queries.
    let (head, tile) = block_coords(gpu::block_idx_x(), seq.div_ceil(bk), false);
    let k0 = tile * bk;
    let key = k0 + t;
    let live = key < seq;
    let base = head as usize * seq as usize * D;
    let stat_base = head as usize * seq as usize;
    // SAFETY (every `rows` access below): element `i < D` of thread `t < bk`'s four arrays.
    let k_at = |i: u32| i * bk + t;
    let v_at = |i: u32| (d + i) * bk + t;
    let dk_at = |i: u32| (2 * d + i) * bk + t;
    let dv_at = |i: u32| (3 * d + i) * bk + t;
    let scale = scale_log2(d);
    for i in 0..d {
        let at = base + key as usize * D + i as usize;
        // SAFETY: row `key < seq` of this head, element `i < D`.
        let (x, y) = if live { unsafe { (gpu::read_global(k.add(at)), gpu::read_global(v.add(at))) } } else { (0, 0) };
        unsafe {
            rows.write(k_at(i), to_f32::<BF16>(x) * scale);
            rows.write(v_at(i), to_f32::<BF16>(y));
            rows.write(dk_at(i), 0.0);
            rows.write(dv_at(i), 0.0);
        }
    }
    // Queries before the block's first key see none of its keys under the mask.
    let mut q0 = if causal { k0 } else { 0 };
    while q0 < seq {
        let n = if seq - q0 < bq { seq - q0 } else { bq };
        // Every thread is done with the last tile before it is overwritten.
        gpu::barrier();
        let mut i = t;
        while i < n * d {
            let at = base + q0 as usize * D + i as usize;
            // SAFETY: rows `q0..q0 + n` of this head (`q0 + n <= seq`); `i < n D <= bq D`.
            unsafe {
                q_s.write(i, to_f32::<BF16>(gpu::read_global(q.add(at))));
                do_s.write(i, to_f32::<BF16>(gpu::read_global(d_o.add(at))));
            }
            i += bk;
        }
        let mut r = t;
        while r < n {
            let at = stat_base + (q0 + r) as usize;
            // SAFETY: row `q0 + r < seq` of this head; `r < n <= bq`.
            unsafe {
                stats.write(r, gpu::read_global(lse.add(at)) * core::f32::consts::LOG2_E);
                stats.write(bq + r, gpu::read_global(delta.add(at)));
            }
            r += bk;
        }
        gpu::barrier();
        if live {
            // Under the mask, the tile's rows before `key` do not see it.
            let first = if causal && key > q0 { key - q0 } else { 0 };
            for r in first..n {
                // SAFETY (the tile's reads): row `r < n` of the staged tile, element `i < D`.
                let row = r * d;
                let mut s = 0f32;
                for i in 0..d {
                    let (qi, ki) = unsafe { (q_s.read(row + i), rows.read(k_at(i))) };
                    s = gpu::fma(qi, ki, s);
                }
                let (lse2, delta_r) = unsafe { (stats.read(r), stats.read(bq + r)) };
                let p = gpu::exp2(s - lse2);
                // dV += p dO_r and dP = dO_r . v in one pass over the row.
                let mut dp = 0f32;
                for i in 0..d {
                    let (gi, vi, acc) = unsafe { (do_s.read(row + i), rows.read(v_at(i)), rows.read(dv_at(i))) };
                    dp = gpu::fma(gi, vi, dp);
                    unsafe { rows.write(dv_at(i), gpu::fma(p, gi, acc)) };
                }
                let ds = p * (dp - delta_r);
                for i in 0..d {
                    let (qi, acc) = unsafe { (q_s.read(row + i), rows.read(dk_at(i))) };
                    unsafe { rows.write(dk_at(i), gpu::fma(ds, qi, acc)) };
                }
            }
        }
        q0 += n;
    }
    if live {
        let out = base + key as usize * D;
        let softmax_scale = gpu::rsqrt(d as f32);
        for i in 0..d {
            // SAFETY: row `key < seq` of this head, element `i < D`.
            unsafe {
                gpu::write_global(dk.add(out + i as usize), rows.read(dk_at(i)) * softmax_scale);
                gpu::write_global(dv.add(out + i as usize), rows.read(dv_at(i)));
            }
        }
    }
}

/// The dQ kernel (module documentation). `D` the head dimension.
///
/// # Contract
/// As for [`attention_bwd_dkdv`], with `dq` for `dk` and `dv`; the launch gave
/// [`AttentionBwdConfig::dq_bytes`], `cfg.bq` threads and [`AttentionBwdConfig::dq_grid`]
/// blocks.
#[inline(always)]
fn attention_bwd_dq<const BF16: bool, const D: usize>(
    [q, k, v, d_o]: [*const u16; 4],
    [lse, delta]: [*const f32; 2],
    dq: *mut f32,
    seq: u32,
    causal: bool,
    cfg: AttentionBwdConfig,
) {
    let d = D as u32;
    if !cfg.fits(d) || gpu::block_dim_x() != cfg.bq {
        gpu::trap();
    }
    let Ok(layout) = cfg.dq_layout(d) else { gpu::trap() };
    let region = gpu::launch_region(layout.rows.end());
    let (k_s, v_s, rows) = (region.array(layout.k), region.array(layout.v), region.array(layout.rows));
    let (t, bq, bk) = (gpu::thread_idx_x(), cfg.bq, cfg.bk);
    let (head, tile) = block_coords(gpu::block_idx_x(), seq.div_ceil(bq), causal);
    let row = tile * bq + t;
    let live = row < seq;
    let base = head as usize * seq as usize * D;
    // SAFETY (every `rows` access below): element `i < D` of thread `t < bq`'s three arrays.
    let q_at = |i: u32| i * bq + t;
    let do_at = |i: u32| (d + i) * bq + t;
    let dq_at = |i: u32| (2 * d + i) * bq + t;
    let scale = scale_log2(d);
    for i in 0..d {
        let at = base + row as usize * D + i as usize;
        // SAFETY: row `row < seq` of this head, element `i < D`.
        let (x, g) =
            if live { unsafe { (gpu::read_global(q.add(at)), gpu::read_global(d_o.add(at))) } } else { (0, 0) };
        unsafe {
            rows.write(q_at(i), to_f32::<BF16>(x) * scale);
            rows.write(do_at(i), to_f32::<BF16>(g));
            rows.write(dq_at(i), 0.0);
        }
    }
    let stat = head as usize * seq as usize + row as usize;
    // SAFETY: row `row < seq` of this head.
    let (lse2, delta_r) = if live {
        unsafe { (gpu::read_global(lse.add(stat)) * core::f32::consts::LOG2_E, gpu::read_global(delta.add(stat))) }
    } else {
        (0.0, 0.0)
    };
    let keys = keys_seen(tile, bq, seq, causal);
    let mut k0 = 0;
    while k0 < keys {
        let n = if keys - k0 < bk { keys - k0 } else { bk };
        // Every thread is done with the last tile before it is overwritten.
        gpu::barrier();
        let mut i = t;
        while i < n * d {
            let at = base + k0 as usize * D + i as usize;
            // SAFETY: keys `k0..k0 + n` of this head (`k0 + n <= keys <= seq`); `i < n D <= bk D`.
            unsafe {
                k_s.write(i, to_f32::<BF16>(gpu::read_global(k.add(at))));
                v_s.write(i, to_f32::<BF16>(gpu::read_global(v.add(at))));
            }
            i += bq;
        }
        gpu::barrier();
        if live {
            // Under the mask keys past `row` are skipped (none of this tile's if `row < k0`).
            let last = match causal {
                true if row < k0 => 0,
                true if row + 1 - k0 < n => row + 1 - k0,
                _ => n,
            };
            for j in 0..last {
                // SAFETY (the tile's reads): key `j < n` of the staged tile, element `i < D`.
                let key = j * d;
                let (mut s, mut dp) = (0f32, 0f32);
                for i in 0..d {
                    let (qi, ki, gi, vi) =
                        unsafe { (rows.read(q_at(i)), k_s.read(key + i), rows.read(do_at(i)), v_s.read(key + i)) };
                    s = gpu::fma(qi, ki, s);
                    dp = gpu::fma(gi, vi, dp);
                }
                let ds = gpu::exp2(s - lse2) * (dp - delta_r);
                for i in 0..d {
                    let (ki, acc) = unsafe { (k_s.read(key + i), rows.read(dq_at(i))) };
                    unsafe { rows.write(dq_at(i), gpu::fma(ds, ki, acc)) };
                }
            }
        }
        k0 += n;
    }
    if live {
        let out = base + row as usize * D;
        let softmax_scale = gpu::rsqrt(d as f32);
        for i in 0..d {
            // SAFETY: row `row < seq` of this head, element `i < D`.
            unsafe { gpu::write_global(dq.add(out + i as usize), rows.read(dq_at(i)) * softmax_scale) };
        }
    }
}

crate::kernels! { KERNELS;
    /// `Delta` pre-pass, f16.
    pub fn attention_bwd_delta_f16(o: *const u16, d_o: *const u16, delta: *mut f32, rows: u32, d: u32) {
        attention_bwd_delta::<false>(o, d_o, delta, rows, d)
    }
    /// `Delta` pre-pass, bf16.
    pub fn attention_bwd_delta_bf16(o: *const u16, d_o: *const u16, delta: *mut f32, rows: u32, d: u32) {
        attention_bwd_delta::<true>(o, d_o, delta, rows, d)
    }
    /// dK and dV, f16, D = 128.
    pub fn attention_bwd_simt_dkdv_f16_d128(q: *const u16, k: *const u16, v: *const u16, d_o: *const u16, lse: *const f32, delta: *const f32, dk: *mut f32, dv: *mut f32, seq: u32, bh: u32, causal: u32, bq: u32, bk: u32) {
        let _ = bh;
        attention_bwd_dkdv::<false, 128>([q, k, v, d_o], [lse, delta], [dk, dv], seq, causal != 0, AttentionBwdConfig::new(bq, bk))
    }
    /// dK and dV, bf16, D = 128.
    pub fn attention_bwd_simt_dkdv_bf16_d128(q: *const u16, k: *const u16, v: *const u16, d_o: *const u16, lse: *const f32, delta: *const f32, dk: *mut f32, dv: *mut f32, seq: u32, bh: u32, causal: u32, bq: u32, bk: u32) {
        let _ = bh;
        attention_bwd_dkdv::<true, 128>([q, k, v, d_o], [lse, delta], [dk, dv], seq, causal != 0, AttentionBwdConfig::new(bq, bk))
    }
    /// dK and dV, f16, D = 64.
    pub fn attention_bwd_simt_dkdv_f16_d64(q: *const u16, k: *const u16, v: *const u16, d_o: *const u16, lse: *const f32, delta: *const f32, dk: *mut f32, dv: *mut f32, seq: u32, bh: u32, causal: u32, bq: u32, bk: u32) {
        let _ = bh;
        attention_bwd_dkdv::<false, 64>([q, k, v, d_o], [lse, delta], [dk, dv], seq, causal != 0, AttentionBwdConfig::new(bq, bk))
    }
    /// dK and dV, bf16, D = 64.
    pub fn attention_bwd_simt_dkdv_bf16_d64(q: *const u16, k: *const u16, v: *const u16, d_o: *const u16, lse: *const f32, delta: *const f32, dk: *mut f32, dv: *mut f32, seq: u32, bh: u32, causal: u32, bq: u32, bk: u32) {
        let _ = bh;
        attention_bwd_dkdv::<true, 64>([q, k, v, d_o], [lse, delta], [dk, dv], seq, causal != 0, AttentionBwdConfig::new(bq, bk))
    }
    /// dQ, f16, D = 128.
    pub fn attention_bwd_simt_dq_f16_d128(q: *const u16, k: *const u16, v: *const u16, d_o: *const u16, lse: *const f32, delta: *const f32, dq: *mut f32, seq: u32, bh: u32, causal: u32, bq: u32, bk: u32) {
        let _ = bh;
        attention_bwd_dq::<false, 128>([q, k, v, d_o], [lse, delta], dq, seq, causal != 0, AttentionBwdConfig::new(bq, bk))
    }
    /// dQ, bf16, D = 128.
    pub fn attention_bwd_simt_dq_bf16_d128(q: *const u16, k: *const u16, v: *const u16, d_o: *const u16, lse: *const f32, delta: *const f32, dq: *mut f32, seq: u32, bh: u32, causal: u32, bq: u32, bk: u32) {
        let _ = bh;
        attention_bwd_dq::<true, 128>([q, k, v, d_o], [lse, delta], dq, seq, causal != 0, AttentionBwdConfig::new(bq, bk))
    }
    /// dQ, f16, D = 64.
    pub fn attention_bwd_simt_dq_f16_d64(q: *const u16, k: *const u16, v: *const u16, d_o: *const u16, lse: *const f32, delta: *const f32, dq: *mut f32, seq: u32, bh: u32, causal: u32, bq: u32, bk: u32) {
        let _ = bh;
        attention_bwd_dq::<false, 64>([q, k, v, d_o], [lse, delta], dq, seq, causal != 0, AttentionBwdConfig::new(bq, bk))
    }
    /// dQ, bf16, D = 64.
    pub fn attention_bwd_simt_dq_bf16_d64(q: *const u16, k: *const u16, v: *const u16, d_o: *const u16, lse: *const f32, delta: *const f32, dq: *mut f32, seq: u32, bh: u32, causal: u32, bq: u32, bk: u32) {
        let _ = bh;
        attention_bwd_dq::<true, 64>([q, k, v, d_o], [lse, delta], dq, seq, causal != 0, AttentionBwdConfig::new(bq, bk))
    }
    /// wgmma, f16, D = 128.
    pub fn attention_bwd_wgmma_f16_d128(q: *const u8, k: *const u8, v: *const u8, d_o: *const u8, lse: *const f32, delta: *const f32, dq: *mut f32, dk: *mut f32, dv: *mut f32, seq: u32, bh: u32, causal: u32, bk: u32, stages: u32) [max_registers = 168] [spills = "dK and dV (128 registers) beside the score tiles at 240 per math thread: the tile loop's scalars, 132 B on sm_90a; the copy thread's loop at 24"] {
        let _ = bh;
        wgmma::attention_bwd_wgmma::<false, 128, 64, 32>(q, k, v, d_o, lse, delta, dq, dk, dv, seq, causal != 0, AttentionBwdConfig::wgmma(bk, stages))
    }
    /// wgmma, bf16, D = 128.
    pub fn attention_bwd_wgmma_bf16_d128(q: *const u8, k: *const u8, v: *const u8, d_o: *const u8, lse: *const f32, delta: *const f32, dq: *mut f32, dk: *mut f32, dv: *mut f32, seq: u32, bh: u32, causal: u32, bk: u32, stages: u32) [max_registers = 168] [spills = "dK and dV (128 registers) beside the score tiles at 240 per math thread: the tile loop's scalars, 132 B on sm_90a; the copy thread's loop at 24"] {
        let _ = bh;
        wgmma::attention_bwd_wgmma::<true, 128, 64, 32>(q, k, v, d_o, lse, delta, dq, dk, dv, seq, causal != 0, AttentionBwdConfig::wgmma(bk, stages))
    }
    /// wgmma, f16, D = 64.
    pub fn attention_bwd_wgmma_f16_d64(q: *const u8, k: *const u8, v: *const u8, d_o: *const u8, lse: *const f32, delta: *const f32, dq: *mut f32, dk: *mut f32, dv: *mut f32, seq: u32, bh: u32, causal: u32, bk: u32, stages: u32) [max_registers = 168] {
        let _ = bh;
        wgmma::attention_bwd_wgmma::<false, 64, 32, 16>(q, k, v, d_o, lse, delta, dq, dk, dv, seq, causal != 0, AttentionBwdConfig::wgmma(bk, stages))
    }
    /// wgmma, bf16, D = 64.
    pub fn attention_bwd_wgmma_bf16_d64(q: *const u8, k: *const u8, v: *const u8, d_o: *const u8, lse: *const f32, delta: *const f32, dq: *mut f32, dk: *mut f32, dv: *mut f32, seq: u32, bh: u32, causal: u32, bk: u32, stages: u32) [max_registers = 168] {
        let _ = bh;
        wgmma::attention_bwd_wgmma::<true, 64, 32, 16>(q, k, v, d_o, lse, delta, dq, dk, dv, seq, causal != 0, AttentionBwdConfig::wgmma(bk, stages))
    }
}

/// The wgmma entry for head dimension `d` and `bf16` (else f16) inputs (after the pre-pass
/// of [`entry_names`]).
pub fn wgmma_entry_name(d: u32, bf16: bool) -> Option<&'static str> {
    Some(match (d, bf16) {
        (128, false) => "attention_bwd_wgmma_f16_d128",
        (128, true) => "attention_bwd_wgmma_bf16_d128",
        (64, false) => "attention_bwd_wgmma_f16_d64",
        (64, true) => "attention_bwd_wgmma_bf16_d64",
        _ => return None,
    })
}

/// The entries of one backward pass: the pre-pass, the dK/dV kernel and the dQ kernel for
/// head dimension `d` and `bf16` (else f16) inputs. `None` where no entry has that shape.
pub fn entry_names(d: u32, bf16: bool) -> Option<[&'static str; 3]> {
    Some(match (d, bf16) {
        (128, false) => {
            ["attention_bwd_delta_f16", "attention_bwd_simt_dkdv_f16_d128", "attention_bwd_simt_dq_f16_d128"]
        }
        (128, true) => {
            ["attention_bwd_delta_bf16", "attention_bwd_simt_dkdv_bf16_d128", "attention_bwd_simt_dq_bf16_d128"]
        }
        (64, false) => ["attention_bwd_delta_f16", "attention_bwd_simt_dkdv_f16_d64", "attention_bwd_simt_dq_f16_d64"],
        (64, true) => {
            ["attention_bwd_delta_bf16", "attention_bwd_simt_dkdv_bf16_d64", "attention_bwd_simt_dq_bf16_d64"]
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_the_documented_arrays_back_to_back() {
        let cfg = AttentionBwdConfig::new(16, 32);
        let l = cfg.dkdv_layout(128).unwrap();
        assert_eq!((l.q.offset(), l.d_o.offset(), l.stats.offset()), (0, 16 * 128 * 4, 2 * 16 * 128 * 4));
        assert_eq!(cfg.dkdv_bytes(128).unwrap(), (2 * 16 * 128 + 2 * 16 + 4 * 128 * 32) * 4);
        assert_eq!(cfg.dq_bytes(64).unwrap(), (2 * 32 * 64 + 3 * 64 * 16) * 4);
    }

    #[test]
    fn fits_names_the_tiles_and_head_dimensions() {
        assert!(AttentionBwdConfig::new(1, 1).fits(64));
        assert!(AttentionBwdConfig::new(256, 256).fits(128));
        assert!(!AttentionBwdConfig::new(0, 16).fits(64));
        assert!(!AttentionBwdConfig::new(16, 257).fits(64));
        assert!(!AttentionBwdConfig::new(16, 16).fits(96));
        assert_eq!(entry_names(96, false), None);
        assert_eq!(entry_names(64, true).unwrap()[2], "attention_bwd_simt_dq_bf16_d64");
    }

    #[test]
    fn grids_cover_every_tile_of_every_head() {
        let cfg = AttentionBwdConfig::new(16, 7);
        assert_eq!(cfg.dkdv_grid(65, 3), 10 * 3);
        assert_eq!(cfg.dq_grid(65, 3), 5 * 3);
        assert_eq!(AttentionBwdConfig::delta_grid(65 * 3), 2);
    }
}
