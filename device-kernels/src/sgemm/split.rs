//! The second launch of split-K: `C = sum_s W[s] + beta * C`, where the workspace `W` holds
//! `splits` slices of `M x N` floats (slice `s` is split `s`'s `alpha * A B` over its
//! k-tiles, stored by the multiply's blocks: [`super::SplitK`]). The slices are added in one
//! fixed order, so a split problem gives the same bits on every run, unlike atomic adds into
//! `C` whose order the hardware picks.
//!
//! # Thread mapping and order
//! A block is [`SUM_GROUPS`] groups of [`SUM_LANES`] threads and sums [`SUM_LANES`] 16-byte
//! vectors of the flattened `M x N` result: lane `l` takes the 4 elements from `4 (b *
//! SUM_LANES + l)` in every group. Group `g` adds slices `g, g + G, g + 2G, ...` (`G` =
//! [`SUM_GROUPS`]) in that order, loading [`BATCH`] of them before it adds any (the loads of
//! a thread are in flight together: one after another, 264 slices took 264 round trips to
//! memory). Then lane `l` of group 0 adds the groups' sums in group order, 0 first, through
//! shared memory ([`sum_layout`], launch-sized), and `beta * C` (one `fma`). Vector
//! loads where the workspace, `C` and `M * N` allow ([`vector::load4`]), element by element
//! otherwise. Memory-bound: `(splits + 2) * M * N` floats move (`C` read only where beta is
//! not 0).

use crate::gpu;
use crate::layout::{Carve, LayoutError, Slice};
use crate::vector::{self, Vec4};

/// Threads of a sum block.
pub const SUM_THREADS: u32 = 256;
/// Threads of a group: the 16-byte vectors of the result a block sums.
pub const SUM_LANES: u32 = 32;
/// Groups of a block: the slices are dealt out to them in turn.
pub const SUM_GROUPS: u32 = SUM_THREADS / SUM_LANES;
/// Elements each thread sums.
pub const SUM_PER_THREAD: u32 = 4;
/// Slices a thread loads before it adds them.
pub const BATCH: usize = 4;

/// Blocks of the sum over an `m x n` result (at least 1).
pub const fn sum_blocks(m: u32, n: u32) -> u64 {
    let per_block = (SUM_LANES * SUM_PER_THREAD) as u64;
    let blocks = (m as u64 * n as u64).div_ceil(per_block);
    if blocks == 0 { 1 } else { blocks }
}

/// Workspace floats of `splits` slices of an `m x n` result.
pub const fn workspace_floats(m: u32, n: u32, splits: u32) -> u64 {
    splits as u64 * m as u64 * n as u64
}

/// The partial sums' carve: one vector per thread, thread `t` at `t`.
pub fn sum_layout() -> Result<Slice<Vec4<f32>>, LayoutError> {
    Carve::new().array::<Vec4<f32>>(SUM_THREADS)
}

/// Launch-sized bytes of a sum block: the end of [`sum_layout`].
pub fn sum_bytes() -> Result<u32, LayoutError> {
    Ok(sum_layout()?.end())
}

/// `a += b`, lane by lane.
#[inline(always)]
fn add(a: &mut Vec4<f32>, b: Vec4<f32>) {
    for e in 0..4 {
        a.0[e] += b.0[e];
    }
}

/// This thread's part of the sum (see the module documentation).
///
/// # Contract
/// `ws` holds [`workspace_floats`]`(m, n, splits)` floats, `c` holds `m * n`; the launch has
/// [`sum_blocks`] blocks of [`SUM_THREADS`] and [`sum_bytes`] (a block past them
/// stores nothing).
#[inline(always)]
pub(super) fn split_sum(ws: *const f32, c: *mut f32, m: u32, n: u32, splits: u32, beta: f32) {
    if gpu::block_dim_x() != SUM_THREADS || splits == 0 {
        gpu::trap();
    }
    let Ok(slice) = sum_layout() else { gpu::trap() };
    let partials = gpu::launch_region(slice.end()).array(slice);
    let len = m as u64 * n as u64;
    let tid = gpu::thread_idx_x();
    let (lane, group) = (tid % SUM_LANES, tid / SUM_LANES);
    let start = (gpu::block_idx_x() as u64 * SUM_LANES as u64 + lane as u64) * SUM_PER_THREAD as u64;
    let inside = start < len;
    // Every slice starts 16-byte aligned when the workspace does and `len` is a multiple of 4.
    let aligned = vector::is_aligned16(ws) && vector::is_aligned16(c) && len.is_multiple_of(4);
    let load = |si: u32| {
        if si < splits {
            vector::load4(ws.wrapping_add((si as u64 * len) as usize), start as i64, len, 0.0, aligned)
        } else {
            Vec4::splat(0.0)
        }
    };
    let mut sum = Vec4::splat(0.0f32);
    let mut s = group;
    while inside && s < splits {
        // BATCH = 4 named values, not an array: an array of vectors is put in local memory.
        let g = SUM_GROUPS;
        let (p0, p1, p2, p3) = (load(s), load(s + g), load(s + 2 * g), load(s + 3 * g));
        add(&mut sum, p0);
        if s + g < splits {
            add(&mut sum, p1);
        }
        if s + 2 * g < splits {
            add(&mut sum, p2);
        }
        if s + 3 * g < splits {
            add(&mut sum, p3);
        }
        s += BATCH as u32 * g;
    }
    // SAFETY: thread `tid` < SUM_THREADS writes its own vector; the barrier orders the
    // writes before group 0 reads them.
    unsafe { partials.write(tid, sum) };
    gpu::barrier();
    if group == 0 && inside {
        let mut total = sum;
        let mut g = 1;
        while g < SUM_GROUPS {
            add(&mut total, unsafe { partials.read(g * SUM_LANES + lane) });
            g += 1;
        }
        if beta != 0.0 {
            let old = vector::load4(c.cast_const(), start as i64, len, 0.0, aligned);
            for e in 0..4 {
                total.0[e] = gpu::fma(beta, old.0[e], total.0[e]);
            }
        }
        vector::store4(c, start, len, total, aligned);
    }
}
