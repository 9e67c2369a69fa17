//! Row-wise softmax of a row-major `rows x cols` f32 matrix, one row per thread-block
//! cluster (of one block by default), the row held in launch-sized shared memory.
//!
//! # Algorithm
//! On the row skeleton ([`crate::rows`]: its thread mapping and launch-sized layout):
//! each thread copies its vectors into the shared row, keeping their maximum; a fold over
//! the cluster gives the row maximum `m`; each thread replaces its elements by
//! `e = exp(x - m)` and sums them; a second fold gives the sum `s`; each thread writes
//! `e / s`. Subtracting `m` keeps `exp` from overflowing
//! (numerically stable). A row of `+inf` or NaN gives NaN.
//!
//! # Entry point
//! `softmax_f32(input, output, rows: u32, cols: u32)`, grid [`SoftmaxConfig::grid`], in
//! clusters of [`SoftmaxConfig::cluster`] blocks.

use crate::gpu;
use crate::rows::Row;
pub use crate::rows::{MAX_GRID, RowConfig as SoftmaxConfig, RowLayout as SoftmaxLayout};

/// # Safety
/// `input` and `output` hold `rows * cols` floats; the launch gave the layout's bytes.
#[inline(always)]
unsafe fn softmax(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    let row = unsafe { Row::new(cols) };
    row.each_row(rows, |r| {
        let offset = r as usize * cols as usize;
        // Lanes outside the row are -inf: no maximum, and exp(-inf - m) = 0 in the sum.
        let max4 = |m: f32, v: [f32; 4]| m.max(v[0]).max(v[1]).max(v[2]).max(v[3]);
        let (m, span) = unsafe { row.load(input.add(offset), f32::NEG_INFINITY, f32::NEG_INFINITY, max4) };
        let m = row.fold(m, f32::max);
        let exp4 = |s: f32, v: [f32; 4]| {
            let e = [gpu::exp(v[0] - m), gpu::exp(v[1] - m), gpu::exp(v[2] - m), gpu::exp(v[3] - m)];
            (s + ((e[0] + e[1]) + (e[2] + e[3])), e)
        };
        let s = row.map(span, 0.0, exp4);
        let inv = 1.0 / row.fold(s, |a, b| a + b);
        let scale4 = |_, e: [f32; 4], _| [e[0] * inv, e[1] * inv, e[2] * inv, e[3] * inv];
        unsafe { row.store(output.add(offset), span, scale4) };
    });
}

crate::kernels! { KERNELS;
    /// Row-wise softmax; see the module documentation.
    pub fn softmax_f32(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        unsafe { softmax(input, output, rows, cols) }
    }
}
