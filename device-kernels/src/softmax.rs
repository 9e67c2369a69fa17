//! Row-wise softmax of a row-major `rows x cols` f32 matrix, one row per row group (several
//! rows a block where rows are short, a thread-block cluster where they are long; see
//! [`crate::rows`]), the row held in launch-sized shared memory.
//!
//! # Algorithm
//! On the row skeleton ([`crate::rows`]: its thread mapping and launch-sized layout):
//! each thread copies its vectors into the shared row, keeping their maximum; a fold gives
//! the row's maximum `m`; each thread replaces its elements by `e = 2^((x - m) log2 e)`
//! (`ex2.approx.ftz`: weights under 2^-126 of the row's largest are 0) and sums them; a
//! second fold gives the sum `s`; each thread writes `e / s`. Subtracting the maximum keeps
//! `exp` from overflowing (numerically stable). Two folds of plain maxima and sums: the
//! weights are computed once, against the row's maximum, and no fold step computes an `exp`
//! (a fold of `(max, sum)` pairs rescales a sum at each of its steps: two `exp` a step, in
//! every thread, several times the row's own). A row of `+inf` or NaN, or of only `-inf`,
//! gives NaN.
//!
//! # Entry point
//! `softmax_f32(input, output, rows: u32, cols: u32)`, grid [`SoftmaxConfig::grid`], in
//! clusters of [`SoftmaxConfig::cluster`] blocks.

use crate::gpu;
use crate::rows::Row;
pub use crate::rows::{MAX_GRID, RowConfig as SoftmaxConfig, RowLayout as SoftmaxLayout};

/// `e^(x - m)` as the kernel computes it: the difference first (exact where `x` is near `m`),
/// then one `ex2.approx.ftz`.
#[inline(always)]
pub fn weight(x: f32, m: f32) -> f32 {
    gpu::exp2_ftz((x - m) * core::f32::consts::LOG2_E)
}

/// # Contract
/// `input` and `output` hold `rows * cols` floats; the launch gave the layout's bytes.
#[inline(always)]
fn softmax(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    let row = Row::new(cols, false);
    row.each_row(rows, |r| {
        let offset = r as usize * cols as usize;
        // Lanes outside the row are -inf: no maximum, and a weight of 0 in the sum.
        let max4 = |m: f32, v: [f32; 4]| m.max(v[0]).max(v[1]).max(v[2]).max(v[3]);
        let (mt, span) = unsafe { row.load(input.add(offset), f32::NEG_INFINITY, f32::NEG_INFINITY, max4) };
        let m = row.fold(mt, f32::max);
        // A row of only -inf: every weight is exp(-inf - 0) = 0, the sum 0, the result NaN.
        let m = if m == f32::NEG_INFINITY { 0.0 } else { m };
        let exp4 = |s: f32, v: [f32; 4]| {
            let e = [weight(v[0], m), weight(v[1], m), weight(v[2], m), weight(v[3], m)];
            (s + ((e[0] + e[1]) + (e[2] + e[3])), e)
        };
        let st = row.map(span, 0.0, exp4);
        let inv = 1.0 / row.fold(st, |a, b| a + b);
        let scale4 = |_, e: [f32; 4], _| [e[0] * inv, e[1] * inv, e[2] * inv, e[3] * inv];
        unsafe { row.store(output.add(offset), span, scale4) };
    });
}

crate::kernels! { KERNELS;
    /// Row-wise softmax; see the module documentation.
    pub fn softmax_f32(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        softmax(input, output, rows, cols)
    }
}
