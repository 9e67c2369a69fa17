//! Row-wise softmax of a row-major `rows x cols` f32 matrix, one row per thread-block
//! cluster (of one block by default), the row held in launch-sized shared memory.
//!
//! # Algorithm
//! On the row skeleton ([`crate::rows`]: its thread mapping and launch-sized layout):
//! each thread copies its vectors into the shared row, keeping their maximum `m_t`; it
//! replaces each of its elements by `exp(x - m_t)` and sums them into `s_t`; one fold over
//! the cluster combines the pairs `(m_t, s_t)` into the row's maximum `m` and sum
//! `s = sum exp(x - m)` ([`combine`]); each thread writes `exp(x - m_t) * (exp(m_t - m) / s)`.
//! Subtracting a maximum keeps `exp` from overflowing (numerically stable); one fold, not
//! one for the maximum and one for the sum, halves the barriers a row costs. A row of `+inf`
//! or NaN, or of only `-inf`, gives NaN.
//!
//! # Entry point
//! `softmax_f32(input, output, rows: u32, cols: u32)`, grid [`SoftmaxConfig::grid`], in
//! clusters of [`SoftmaxConfig::cluster`] blocks.

use crate::gpu;
use crate::rows::Row;
pub use crate::rows::{MAX_GRID, RowConfig as SoftmaxConfig, RowLayout as SoftmaxLayout};

/// `(m, s)` of two parts of a row into that of both: `m` the larger maximum, `s` each sum
/// rescaled to it. A part with no finite maximum (`-inf`: no elements, or only `-inf`) adds
/// nothing.
#[inline(always)]
pub fn combine(a: [f32; 2], b: [f32; 2]) -> [f32; 2] {
    let m = a[0].max(b[0]);
    let term = |p: [f32; 2]| if p[0] == f32::NEG_INFINITY { 0.0 } else { p[1] * gpu::exp(p[0] - m) };
    [m, term(a) + term(b)]
}

/// # Safety
/// `input` and `output` hold `rows * cols` floats; the launch gave the layout's bytes.
#[inline(always)]
unsafe fn softmax(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    let row = unsafe { Row::new(cols, false) };
    row.each_row(rows, |r| {
        let offset = r as usize * cols as usize;
        // Lanes outside the row are -inf: no maximum, and exp(-inf - m) = 0 in the sum.
        let max4 = |m: f32, v: [f32; 4]| m.max(v[0]).max(v[1]).max(v[2]).max(v[3]);
        let (mt, span) = unsafe { row.load(input.add(offset), f32::NEG_INFINITY, f32::NEG_INFINITY, max4) };
        // A thread with no finite maximum has only -inf lanes: exp(-inf - 0) = 0.
        let base = if mt == f32::NEG_INFINITY { 0.0 } else { mt };
        let exp4 = |s: f32, v: [f32; 4]| {
            let e = [gpu::exp(v[0] - base), gpu::exp(v[1] - base), gpu::exp(v[2] - base), gpu::exp(v[3] - base)];
            (s + ((e[0] + e[1]) + (e[2] + e[3])), e)
        };
        let st = row.map(span, 0.0, exp4);
        let [m, s] = row.fold_n([mt, st], combine);
        let scale = gpu::exp(base - m) / s;
        let scale4 = |_, e: [f32; 4], _| [e[0] * scale, e[1] * scale, e[2] * scale, e[3] * scale];
        unsafe { row.store(output.add(offset), span, scale4) };
    });
}

crate::kernels! { KERNELS;
    /// Row-wise softmax; see the module documentation.
    pub fn softmax_f32(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        unsafe { softmax(input, output, rows, cols) }
    }
}
