//! The tensor-core backward (sm_90a `wgmma`): one kernel for `dK`, `dV` and `dQ`, after the
//! `Delta` pre-pass. Algorithm and tensors: the parent module.
//!
//! # Block, thread mapping
//! One block per (key tile of `bk` keys, head), heads outermost; `bk / 64` math warpgroups,
//! each owning 64 keys (the M of its products), and a copy warpgroup. The copy warpgroup's
//! first thread copies the block's K and V tiles once, then each query tile's `Q` and `dO`
//! ([`WGMMA_BQ`] rows) into a ring of `stages` slots (tensor maps, 128-byte swizzle, panels
//! of 64 columns), from the first query that sees the block's keys. Per query tile, each math
//! warpgroup:
//! 1. `S^T = K Q^T` and `dP^T = V dO^T` (m64n64k16, both operands K-major in shared memory):
//!    keys on the rows, the tile's 64 queries on the columns;
//! 2. `P^T = exp2(S^T scale log2(e) - lse log2(e))` in the accumulators (masked pairs 0),
//!    rounded to 16 bits as the A fragment of `dV += P^T dO` (`dO` an N-major B: no
//!    transpose);
//! 3. `dS^T = P^T (dP^T - Delta)` (with `P` as rounded), rounded likewise, for
//!    `dK += dS^T Q`;
//! 4. stores `dS^T` (16-bit, 128-byte swizzled rows of 64 queries) into a shared buffer; after
//!    a barrier of the math warpgroups, `dQ = dS K` for its share of the tile (m64n64k16 with
//!    A and B both MN-major: `dS^T` rows and K rows as stored) is staged through a shared f32
//!    buffer and added into `dq` a row at a time by bulk reductions in L2
//!    (`cp.reduce.async.bulk .add.f32`: no atomics from the SMs).
//!
//! `dK` (scaled by `1 / sqrt(D)` at the end) and `dV` stay in registers over the query
//! tiles and are written once. `dq` must hold zeros before the launch; the order in which
//! blocks add into it is not fixed, so its rounding is not either (the SIMT kernels' `dQ` is
//! deterministic).
//!
//! # dQ shares
//! Two column pieces of `D / 2` (m64n64k16 at D 128, m64n32k16 at D 64), each over all `bk`
//! keys (every warpgroup's `dS^T`: hence the barrier): warpgroup `u` computes pieces `u, u +
//! units, ..`, so each entry of `dq` gets one addition per block.
//!
//! # Compiled in, launch-time
//! Compiled in: `D`, the element type and [`WGMMA_BQ`] (the score tiles' registers).
//! Launch-time: `bk` (64 or 128: the math warpgroups) and `stages` (the ring's slots), so
//! the shared bytes ([`AttentionBwdConfig::wgmma_layout`]) are sized per launch.

use super::{AttentionBwdConfig, AttentionBwdKind};
use crate::attention::{PANEL, SLOT_ALIGN, scale_log2, to_f32};
use crate::gpu::{self, SharedPtr, WARPGROUP};

/// Query rows per tile: the N of `S^T` and `dP^T` (32 accumulators per thread each).
pub const WGMMA_BQ: u32 = 64;
/// Keys per math warpgroup: the M of its products.
pub const KEYS_PER_WARPGROUP: u32 = 64;
/// Most math warpgroups: `dK` and `dV` stay in registers, `D / 2` each per thread.
pub const MAX_WARPGROUPS: u32 = 2;
/// Column pieces of a dQ tile, shared out among the math warpgroups.
pub const DQ_PIECES: u32 = 2;
/// Floats per row of a dQ buffer: a piece (at most 64 columns) and 4 more, so that the 8 rows a warp
/// writes at once fall in different banks (a row is 16-byte aligned for the bulk copy).
pub const DQ_ROW: u32 = PANEL + 4;
/// Fewest and most ring slots of `Q` and `dO` tiles.
pub const MIN_STAGES: u32 = 2;
pub const MAX_STAGES: u32 = 4;

/// `$body` once per value, `$i` bound to it: register arrays indexed by constants only.
macro_rules! unroll {
    ($i:ident in [$($v:literal)*] $body:block) => {
        $( { let $i: usize = $v; $body } )*
    };
}

/// Sixteen-bit pairs of `x` in the A-fragment layout of four k-steps of 16 (columns
/// `16 kk ..`): accumulator chunks `2 kk` and `2 kk + 1`.
#[inline(always)]
fn pack<const BF16: bool>(x: &[f32; 32]) -> [[u32; 4]; 4] {
    let mut a = [[0u32; 4]; 4];
    unroll!(kk in [0 1 2 3] {
        unroll!(i in [0 1 2 3] {
            a[kk][i] = gpu::pack_half2::<BF16>(x[8 * kk + 2 * i], x[8 * kk + 2 * i + 1]);
        });
    });
    a
}

/// The kernel (module documentation). `ACC_D` = `D / 2`: the `dK` and `dV` accumulators per
/// math thread; `ACC_Q` = `D / 4`: a dQ piece's.
///
/// # Contract
/// `q_map`, `k_map`, `v_map`, `do_map` are tensor maps of the `bh * seq x D` 16-bit tensors
/// with boxes of 64 columns x 64 rows and the 128-byte swizzle; `lse` and `delta` hold
/// `bh * seq` f32 (`delta` from the pre-pass), `dq`, `dk`, `dv` `bh * seq * D` f32, `dq`
/// zeroed; the launch gave the layout's bytes, `cfg.threads()` threads and
/// [`AttentionBwdConfig::wgmma_grid`] blocks.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn attention_bwd_wgmma<const BF16: bool, const D: u32, const ACC_D: usize, const ACC_Q: usize>(
    q_map: *const u8,
    k_map: *const u8,
    v_map: *const u8,
    do_map: *const u8,
    lse: *const f32,
    delta: *const f32,
    dq: *mut f32,
    dk: *mut f32,
    dv: *mut f32,
    seq: u32,
    causal: bool,
    cfg: AttentionBwdConfig,
) {
    const ACC_S: usize = (WGMMA_BQ / 2) as usize;
    // Columns of a dQ piece: half of D.
    let nq = D / DQ_PIECES;
    let t = gpu::thread_idx_x();
    if cfg.kind != AttentionBwdKind::Wgmma
        || !cfg.fits(D)
        || gpu::block_dim_x() != cfg.threads()
        || ACC_D != D as usize / 2
        || ACC_Q != D as usize / 4
    {
        gpu::trap();
    }
    let Ok(layout) = cfg.wgmma_layout(D) else { gpu::trap() };
    let region = gpu::launch_region(layout.bars.end());
    let (ds, stats, bars) = (region.array(layout.ds), region.array(layout.stats), region.array(layout.bars));
    let (k_s, v_s, ring) = (region.array(layout.k), region.array(layout.v), region.array(layout.ring));
    let (bk, stages, units) = (cfg.bk, cfg.stages, cfg.bk / KEYS_PER_WARPGROUP);
    let panels = D / PANEL;
    // Elements of one panel of the K/V tiles (`bk` rows) and of a Q or dO tile (64 rows); a
    // slot is Q's panels then dO's.
    let (kv_panel, tile_panel) = (bk * PANEL, WGMMA_BQ * PANEL);
    let slot = 2 * panels * tile_panel;
    // A dS^T buffer: `bk` rows of 64 queries (32 words).
    let ds_words = bk * WGMMA_BQ / 2;
    // SAFETY (all the pointers below): panel `p < D / 64`, slot `s < stages`, buffer `b < 2`,
    // barrier `i < 1 + 2 stages`: in bounds by the layout.
    let k_at = |p: u32| unsafe { k_s.shared_ptr(p * kv_panel, kv_panel) };
    let v_at = |p: u32| unsafe { v_s.shared_ptr(p * kv_panel, kv_panel) };
    let q_at = |s: u32, p: u32| unsafe { ring.shared_ptr(s * slot + p * tile_panel, tile_panel) };
    let do_at = |s: u32, p: u32| unsafe { ring.shared_ptr(s * slot + (panels + p) * tile_panel, tile_panel) };
    let ds_at = |b: u32| unsafe { ds.shared_ptr(b * ds_words, ds_words) };
    let kv_full = unsafe { bars.shared_ptr(0, 1) };
    let full_at = |s: u32| unsafe { bars.shared_ptr(1 + s, 1) };
    let empty_at = |s: u32| unsafe { bars.shared_ptr(1 + stages + s, 1) };
    if t == 0 {
        if k_at(0).shared_addr() % SLOT_ALIGN != 0 {
            gpu::trap();
        }
        unsafe { kv_full.mbar_init(1) };
        for s in 0..stages {
            unsafe {
                full_at(s).mbar_init(1);
                empty_at(s).mbar_init(units);
            }
        }
        gpu::mbar_init_fence();
    }
    gpu::barrier();

    let k_blocks = seq.div_ceil(bk);
    let (head, kb) = (gpu::block_idx_x() / k_blocks, gpu::block_idx_x() % k_blocks);
    let k0 = kb * bk;
    // Query tiles from the first that sees a key of this block.
    let q_tiles = seq.div_ceil(WGMMA_BQ);
    let qt0 = if causal { k0 / WGMMA_BQ } else { 0 };
    let warpgroup = gpu::warp_uniform(t / WARPGROUP);
    if warpgroup == 0 {
        // D 128's accumulators need 240 registers per math thread; D 64's fit 232, which
        // leaves the copy thread's loop enough not to spill.
        if D == 128 {
            gpu::registers_for_copies_24();
        } else {
            gpu::registers_for_copies();
        }
        if t == 0 {
            let tile_bytes = WGMMA_BQ * D * 2;
            unsafe {
                kv_full.mbar_arrive_expect_tx(2 * bk * D * 2);
                for p in 0..panels {
                    for u in 0..units {
                        let (x, y) = ((p * PANEL) as i32, (head * seq + k0 + u * KEYS_PER_WARPGROUP) as i32);
                        let rows = u * KEYS_PER_WARPGROUP * PANEL;
                        k_at(p).wrapping_add(rows).copy_tile_2d(k_map, x, y, kv_full);
                        v_at(p).wrapping_add(rows).copy_tile_2d(v_map, x, y, kv_full);
                    }
                }
            }
            let (mut s, mut phase) = (0, 0);
            for qt in qt0..q_tiles {
                let y = (head * seq + qt * WGMMA_BQ) as i32;
                unsafe {
                    // A fresh barrier's phase "before the first" counts as complete.
                    empty_at(s).mbar_wait(phase ^ 1);
                    full_at(s).mbar_arrive_expect_tx(2 * tile_bytes);
                    for p in 0..panels {
                        q_at(s, p).copy_tile_2d(q_map, (p * PANEL) as i32, y, full_at(s));
                        do_at(s, p).copy_tile_2d(do_map, (p * PANEL) as i32, y, full_at(s));
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
    if D == 128 {
        gpu::registers_for_math_240();
    } else {
        gpu::registers_for_math();
    }
    let unit = warpgroup - 1;
    let lead = t.is_multiple_of(WARPGROUP);
    // Fragment coordinates (see `gpu::wgmma`): rows `g` and `g + 8` of this warp's 16 (keys
    // here), columns `2c`, `2c + 1` of each 8-column chunk (queries, or D for dK, dV, dQ).
    let (lane, warp) = (t % 32, (t % WARPGROUP) / 32);
    let (g, c) = (lane / 4, lane % 4);
    // This thread's rows within the block's keys (`r` and `r + 8`).
    let r = unit * KEYS_PER_WARPGROUP + warp * 16 + g;
    let (key_lo, key_hi) = (k0 + r, k0 + r + 8);
    let scale2 = scale_log2(D);
    let scale = gpu::rsqrt(D as f32);
    let mut dk_acc = [0f32; ACC_D];
    let mut dv_acc = [0f32; ACC_D];
    // Descriptors step by adding to their address field (bytes / 16): this warpgroup's K and
    // V rows (A, K-major), 32 bytes per k-step along a swizzled row, a panel's bytes per 64
    // columns; N-major operands step 16 rows (2048 bytes) per k-step. The K and V
    // descriptors are computed in each tile from values made warp-uniform there (a shuffle
    // LLVM does not hoist): hoisted out of the loop, the 16 k-steps' sums (the panel step is
    // a launch-time value) would sit in vector registers and spill.
    let tile_panel_step = (tile_panel * 2 / 16) as u64;
    const ROWS16: u64 = 16 * PANEL as u64 * 2 / 16;
    // S^T = K Q^T and dP^T = V dO^T from slot `s`: D / 16 k-steps each, two commit groups.
    let issue_sdp = #[inline(always)]
    |s_acc: &mut [f32; ACC_S], dp_acc: &mut [f32; ACC_S], s: u32| {
        let rows_off = gpu::warp_uniform(unit) * KEYS_PER_WARPGROUP * PANEL;
        let kv_panel_step = (gpu::warp_uniform(kv_panel) * 2 / 16) as u64;
        // acc = A B^T over D, A this warpgroup's rows of `kv`, B the slot's tile `tile`.
        let product = #[inline(always)]
        |acc: &mut [f32; ACC_S], kv: SharedPtr<u16>, tile: SharedPtr<u16>| {
            let (ad, bd) = (kv.wrapping_add(rows_off).wgmma_desc_sw128(), tile.wgmma_desc_sw128());
            gpu::wgmma_fence(acc);
            for step in 0..(D / 16) as u64 {
                let off = |panel_step: u64| (step / 4) * panel_step + 2 * (step % 4);
                unsafe { gpu::wgmma::<BF16, ACC_S>(acc, ad + off(kv_panel_step), bd + off(tile_panel_step), step > 0) };
            }
            gpu::wgmma_commit();
        };
        product(s_acc, k_at(0), q_at(s, 0));
        product(dp_acc, v_at(0), do_at(s, 0));
    };
    // acc += A B over the tile's 64 queries (four k-steps), A from registers, B the slot's
    // tile `first` (N-major: D columns across its panels). One commit group.
    let issue_rs = #[inline(always)]
    |acc: &mut [f32; ACC_D], a: &[[u32; 4]; 4], first: SharedPtr<u16>| {
        let bd = first.wgmma_desc_sw128_n_major(tile_panel * 2);
        gpu::wgmma_fence(acc);
        unroll!(kk in [0 1 2 3] {
            unsafe { gpu::wgmma_rs::<BF16, ACC_D>(acc, a[kk], bd + kk as u64 * ROWS16, true) };
        });
        gpu::wgmma_commit();
    };
    // This warpgroup's dQ share (module documentation): pieces `unit, unit + units, ..` of
    // the two, over all `bk` keys.
    let (count, k_steps) = (DQ_PIECES / units, bk / 16);
    let math_threads = units * WARPGROUP;
    // This warpgroup's dQ buffer (64 rows of [`DQ_ROW`] f32), the threads that add its rows
    // into `dq`, and its own hardware barrier (2 or 3).
    let dq_s = region.array(layout.dq);
    let dq_base = unit * WGMMA_BQ * DQ_ROW;
    let issuer = t % WARPGROUP < WGMMA_BQ;
    let unit_barrier = || match unit {
        0 => gpu::named_barrier_sync::<2>(WARPGROUP),
        _ => gpu::named_barrier_sync::<3>(WARPGROUP),
    };

    // Each tile's `lse log2(e)` and `Delta` (64 each) in shared memory, two buffers: math
    // thread `m < 128` reads entry `m` of the next tile during a tile and stores it before
    // the tile's barrier, after which every math thread reads it.
    let m = t - WARPGROUP;
    let load_stats = |qt: u32| {
        let q = qt * WGMMA_BQ + m % WGMMA_BQ;
        let (base, mul) = if m < WGMMA_BQ { (lse, core::f32::consts::LOG2_E) } else { (delta, 1.0) };
        if m < 2 * WGMMA_BQ && q < seq {
            unsafe { gpu::read_global(base.add((head * seq + q) as usize)) * mul }
        } else {
            0.0
        }
    };
    let store_stats = |b: u32, x: f32| {
        if m < 2 * WGMMA_BQ {
            // SAFETY: index under 2 x 2 x 64; the barrier after orders it before the reads.
            unsafe { stats.write(b * 2 * WGMMA_BQ + m, x) };
        }
    };
    store_stats(0, load_stats(qt0));
    gpu::named_barrier_sync::<1>(math_threads);
    unsafe { kv_full.mbar_wait(0) };
    let (mut s, mut phase) = (0, 0);
    // The score, dP and dQ accumulators are made fresh where their products start (the first
    // k-step overwrites them): declared outside the loop, the asm's in-out operands would keep
    // them live across it, and `dK`, `dV` beside them would not fit the registers.
    for qt in qt0..q_tiles {
        let mut s_acc = [0f32; ACC_S];
        let mut dp_acc = [0f32; ACC_S];
        let su = gpu::warp_uniform(s);
        let q0 = qt * WGMMA_BQ;
        unsafe { full_at(su).mbar_wait(phase) };
        issue_sdp(&mut s_acc, &mut dp_acc, su);
        // Pairs to mask: queries past the sequence, keys past it, or (causal) keys past the
        // query; only tiles at the edges and across the diagonal have any.
        let mask = q0 + WGMMA_BQ > seq || k0 + bk > seq || (causal && q0 + 1 < k0 + bk);
        // The next tile's statistics, read now and stored before the barrier below.
        let next = load_stats(qt + 1);
        // Statistic `which` (0 `lse` to base 2, 1 `Delta`) of this thread's query `8j + 2c +
        // e`, from the buffer of this tile.
        let b = (qt - qt0) % 2;
        // SAFETY: index under 2 x 2 x 64.
        let stat = |which: u32, j: usize, e: usize| unsafe {
            stats.read(b * 2 * WGMMA_BQ + which * WGMMA_BQ + 8 * j as u32 + 2 * c + e as u32)
        };
        gpu::wgmma_wait::<1, ACC_S>(&mut s_acc);
        // P^T in place of S^T, `lse` read where it is used (as `Delta` below).
        unroll!(j in [0 1 2 3 4 5 6 7] {
            unroll!(e in [0 1] {
                let lse2 = stat(0, j, e);
                unroll!(h in [0 1] {
                    let i = 4 * j + 2 * h + e;
                    s_acc[i] = gpu::exp2_ftz(gpu::fma(s_acc[i], scale2, -lse2));
                });
            });
        });
        if mask {
            unroll!(j in [0 1 2 3 4 5 6 7] {
                unroll!(e in [0 1 2 3] {
                    let q = q0 + 8 * j as u32 + 2 * c + (e as u32 & 1);
                    let key = if e >= 2 { key_hi } else { key_lo };
                    if q >= seq || key >= seq || (causal && key > q) {
                        s_acc[4 * j + e] = 0.0;
                    }
                });
            });
        }
        let pa = pack::<BF16>(&s_acc);
        issue_rs(&mut dv_acc, &pa, do_at(su, 0));
        gpu::wgmma_wait::<1, ACC_S>(&mut dp_acc);
        // dS^T in place of dP^T (masked pairs: P is 0), from `P` as rounded for `dV`: the f32
        // `P` beside `dP`, the packed `P` and `dS` would not fit the registers at D 128.
        unroll!(j in [0 1 2 3 4 5 6 7] {
            unroll!(e in [0 1] {
                let dl = stat(1, j, e);
                unroll!(h in [0 1] {
                    let i = 4 * j + 2 * h + e;
                    let word = pa[j / 2][2 * (j % 2) + h];
                    let p = to_f32::<BF16>((word >> (16 * e as u32)) as u16);
                    dp_acc[i] = p * (dp_acc[i] - dl);
                });
            });
        });
        let da = pack::<BF16>(&dp_acc);
        issue_rs(&mut dk_acc, &da, q_at(su, 0));
        // dS^T into buffer `b`: row `r` (and `r + 8`) of 64 queries, 16-byte chunk `j` at
        // `j ^ (row % 8)` (the 128-byte swizzle; `row % 8` is `g` for both rows). Word `w`
        // of `da[kk]` holds chunk `2 kk + w / 2` of row `r + 8 (w % 2)`.
        let buf = ds_at(b);
        let words = ds.window(b * ds_words, ds_words);
        unroll!(j in [0 1 2 3 4 5 6 7] {
            unroll!(h in [0 1] {
                let row = r + 8 * h as u32;
                let at = row * 32 + ((j as u32) ^ g) * 4 + c;
                unsafe { words.write(at, da[j / 2][2 * (j % 2) + h]) };
            });
        });
        store_stats(b ^ 1, next);
        gpu::fence_proxy_async_shared();
        gpu::named_barrier_sync::<1>(math_threads);
        let a_desc = buf.wgmma_desc_sw128_n_major(ds_words * 4);
        for n in 0..count {
            let piece = unit + n * units;
            let mut dq_acc = [0f32; ACC_Q];
            // The piece's first column: in panel `col / 64`, `col % 64` elements into its
            // swizzled rows (the swizzle is of the address, so a descriptor may start there).
            let col = piece * nq;
            let b_desc = k_at(col / PANEL).wrapping_add(col % PANEL).wgmma_desc_sw128_n_major(kv_panel * 2);
            gpu::wgmma_fence(&mut dq_acc);
            for st in 0..k_steps as u64 {
                unsafe {
                    gpu::wgmma_mn::<BF16, ACC_Q>(&mut dq_acc, a_desc + st * ROWS16, b_desc + st * ROWS16, st > 0)
                };
            }
            gpu::wgmma_commit();
            gpu::wgmma_wait::<0, ACC_Q>(&mut dq_acc);
            // Into this warpgroup's dQ buffer (once the last piece's bulk additions have read
            // it), then each of its first 64 threads adds one row (a query: `warp * 16 + g`
            // and `+ 8` of the accumulators) into `dq` in L2.
            if issuer {
                gpu::bulk_wait_read();
            }
            unit_barrier();
            unroll!(h in [0 1] {
                let row = warp * 16 + g + 8 * h as u32;
                unroll!(j in [0 1 2 3 4 5 6 7] {
                    if 4 * j < ACC_Q {
                        let col = row * DQ_ROW + 8 * j as u32 + 2 * c;
                        // SAFETY: row < 64, col + 1 < nq < DQ_ROW: inside this unit's buffer.
                        unsafe {
                            dq_s.write(dq_base + col, dq_acc[4 * j + 2 * h] * scale);
                            dq_s.write(dq_base + col + 1, dq_acc[4 * j + 2 * h + 1] * scale);
                        }
                    }
                });
            });
            gpu::fence_proxy_async_shared();
            unit_barrier();
            let q = q0 + t % WARPGROUP;
            if issuer && q < seq {
                let out = (head * seq + q) as usize * D as usize + col as usize;
                // SAFETY: row `t % 128 < 64` of the buffer, `nq` floats, 16-byte aligned; `dq`
                // holds the row (q < seq); read before the next write (the wait above).
                unsafe {
                    dq_s.shared_ptr(dq_base + (t % WARPGROUP) * DQ_ROW, nq).bulk_reduce_add_to(dq.add(out), nq * 4)
                };
                gpu::bulk_commit();
            }
        }
        // dV's and dK's groups are done too (the wait above is for all of them).
        gpu::wgmma_wait::<0, ACC_D>(&mut dk_acc);
        gpu::wgmma_wait::<0, ACC_D>(&mut dv_acc);
        if lead {
            unsafe { empty_at(su).mbar_arrive() };
        }
        s += 1;
        if s == stages {
            s = 0;
            phase ^= 1;
        }
    }
    if issuer {
        gpu::bulk_wait();
    }
    // dK (scaled) and dV: chunk `j` of D holds columns `8j + 2c` and the next.
    unroll!(h in [0 1] {
        let key = if h == 1 { key_hi } else { key_lo };
        if key < seq {
            let out = (head * seq + key) as usize * D as usize;
            unroll!(j in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] {
                if 4 * j < ACC_D {
                    let col = out + 8 * j + 2 * c as usize;
                    unsafe {
                        gpu::write_global(dk.add(col), dk_acc[4 * j + 2 * h] * scale);
                        gpu::write_global(dk.add(col + 1), dk_acc[4 * j + 2 * h + 1] * scale);
                        gpu::write_global(dv.add(col), dv_acc[4 * j + 2 * h]);
                        gpu::write_global(dv.add(col + 1), dv_acc[4 * j + 2 * h + 1]);
                    }
                }
            });
        }
    });
}
