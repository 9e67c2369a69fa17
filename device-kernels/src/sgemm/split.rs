//! The second launch of split-K: `C = sum_s W[s] + beta * C`, where the workspace `W` holds
//! `splits` slices of `M x N` floats (slice `s` is split `s`'s `alpha * A B` over its
//! k-tiles, stored by the multiply's blocks: [`super::SplitK`]). The slices are added in
//! split order, 0 first, then `beta * C` (one `fma`), so a split problem gives the same bits
//! on every run, unlike atomic adds into `C` whose order the hardware picks.
//!
//! Thread `t` of block `b` takes the 4 elements from `4 (b * SUM_THREADS + t)` of the
//! flattened `M x N` result: one 16-byte load per slice where the workspace, `C` and
//! `M * N` allow ([`vector::load4`]), element by element at the end and otherwise. The
//! launch is memory-bound: `(splits + 2) * M * N` floats move (`C` read only where beta is
//! not 0).

use crate::gpu;
use crate::vector::{self, Vec4};

/// Threads of a sum block.
pub const SUM_THREADS: u32 = 256;
/// Elements each thread sums.
pub const SUM_PER_THREAD: u32 = 4;

/// Blocks of the sum over an `m x n` result (at least 1).
pub const fn sum_blocks(m: u32, n: u32) -> u64 {
    let per_block = (SUM_THREADS * SUM_PER_THREAD) as u64;
    let blocks = (m as u64 * n as u64).div_ceil(per_block);
    if blocks == 0 { 1 } else { blocks }
}

/// Workspace floats of `splits` slices of an `m x n` result.
pub const fn workspace_floats(m: u32, n: u32, splits: u32) -> u64 {
    splits as u64 * m as u64 * n as u64
}

/// This thread's four elements of `C` (see the module documentation).
///
/// # Contract
/// `ws` holds [`workspace_floats`]`(m, n, splits)` floats, `c` holds `m * n`; the launch has
/// [`sum_blocks`] blocks of [`SUM_THREADS`] (a block past them stores nothing).
#[inline(always)]
pub(super) fn split_sum(ws: *const f32, c: *mut f32, m: u32, n: u32, splits: u32, beta: f32) {
    if gpu::block_dim_x() != SUM_THREADS || splits == 0 {
        gpu::trap();
    }
    let len = m as u64 * n as u64;
    let start = (gpu::block_idx_x() as u64 * SUM_THREADS as u64 + gpu::thread_idx_x() as u64) * SUM_PER_THREAD as u64;
    if start >= len {
        return;
    }
    // Every slice starts 16-byte aligned when the workspace does and `len` is a multiple of 4.
    let aligned = vector::is_aligned16(ws) && vector::is_aligned16(c) && len.is_multiple_of(4);
    let mut sum = Vec4::splat(0.0f32);
    let mut s = 0;
    while s < splits {
        let slice = ws.wrapping_add((s as u64 * len) as usize);
        let part = vector::load4(slice, start as i64, len, 0.0, aligned);
        for e in 0..4 {
            sum.0[e] += part.0[e];
        }
        s += 1;
    }
    if beta != 0.0 {
        let old = vector::load4(c.cast_const(), start as i64, len, 0.0, aligned);
        for e in 0..4 {
            sum.0[e] = gpu::fma(beta, old.0[e], sum.0[e]);
        }
    }
    vector::store4(c, start, len, sum, aligned);
}
