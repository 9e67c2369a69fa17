//! Row-wise RMSNorm forward of a row-major `rows x cols` f32 matrix with a weight of
//! `cols` floats, one row per row group (several rows a block where rows are short, a
//! thread-block cluster where they are long; see [`crate::rows`]), the row held in
//! launch-sized shared memory:
//! `y[r][c] = x[r][c] / sqrt(mean_c(x[r][c]^2) + eps) * g[c]`.
//!
//! # Algorithm
//! On the row skeleton ([`crate::rows`]: its thread mapping and launch-sized layout): each
//! thread copies its vectors into the shared row, summing their squares; a fold over the
//! cluster gives the row's sum of squares `s`; with `inv = 1 / sqrt(s / cols + eps)`, each
//! thread writes `x * inv * g` for the elements it stored, reading them back from the
//! shared row and `g` at the same columns: from the block's held part of `g` where the row is
//! split over a cluster ([`Row::hold`]: copied once per launch, so the write pass reads no
//! device memory), else from device memory (L2; a block per row keeps its shared memory for
//! the row alone); 16-byte reads where `g` starts as aligned as the row. A row holding a
//! NaN gives NaN; one holding an infinity (mean square inf, `inv` 0) gives 0 at its finite
//! elements and NaN at the infinity, as the definition does.
//!
//! # Entry point
//! `rmsnorm_f32(x, g, y, rows: u32, cols: u32, eps: f32)`, grid [`RmsnormConfig::grid`], in
//! clusters of [`RmsnormConfig::cluster`] blocks.

use crate::gpu;
use crate::rows::Row;
pub use crate::rows::{MAX_GRID, RowConfig as RmsnormConfig, RowLayout as RmsnormLayout};

/// # Contract
/// `x` and `y` hold `rows * cols` floats, `g` holds `cols`; the launch gave the layout's
/// bytes.
#[inline(always)]
fn rmsnorm(x: *const f32, g: *const f32, y: *mut f32, rows: u32, cols: u32, eps: f32) {
    let row = Row::new(cols, true);
    // One row loop per source of the weights, each with only its own addresses live: in one
    // loop the two sources' addresses together passed the register cap (spills).
    match row.hold(g) {
        Some(h) => rows_with(&row, x, y, rows, eps, |span, v, _| row.held_at(h, span, v)),
        None => rows_with(&row, x, y, rows, eps, |span, v, whole| row.read(g, span, v, whole && row.aligned(g, span))),
    }
}

/// The rows of this block's cluster, `weight(span, v, whole)` giving the weights of vector `v`.
///
/// # Contract
/// As [`rmsnorm`]; `weight` reads only inside `g`.
#[inline(always)]
fn rows_with(
    row: &Row,
    x: *const f32,
    y: *mut f32,
    rows: u32,
    eps: f32,
    weight: impl Fn(crate::rows::Span, u32, bool) -> [f32; 4],
) {
    let cols = row.cols;
    let inv_cols = 1.0 / cols as f32;
    row.each_row(rows, |r| {
        let offset = r as usize * cols as usize;
        // Lanes outside the row are 0: no square.
        let squares4 = |s: f32, v: [f32; 4]| s + ((v[0] * v[0] + v[1] * v[1]) + (v[2] * v[2] + v[3] * v[3]));
        let (s, span) = unsafe { row.load(x.add(offset), 0.0, 0.0, squares4) };
        let s = row.fold(s, |a, b| a + b);
        let inv = 1.0 / gpu::sqrt(s * inv_cols + eps);
        let scale4 = |v: u32, x: [f32; 4], whole: bool| {
            let w = weight(span, v, whole);
            [x[0] * inv * w[0], x[1] * inv * w[1], x[2] * inv * w[2], x[3] * inv * w[3]]
        };
        unsafe { row.store(y.add(offset), span, scale4) };
    });
}

crate::kernels! { KERNELS;
    /// Row-wise RMSNorm; see the module documentation. 64 registers: blocks of 1024 threads
    /// run, and four blocks of 256 share a multiprocessor. A lower cap spills the row loop's
    /// addresses into local memory inside the loop (see the family's NOTES.md before lowering it).
    pub fn rmsnorm_f32(x: *const f32, g: *const f32, y: *mut f32, rows: u32, cols: u32, eps: f32) [max_registers = 64] [spills = "at the 64-register cap, the row loop's addresses: 12 B on sm_90a"] {
        rmsnorm(x, g, y, rows, cols, eps)
    }
}
