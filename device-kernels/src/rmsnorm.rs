//! Row-wise RMSNorm forward of a row-major `rows x cols` f32 matrix with a weight of
//! `cols` floats, one row per block, the row held in launch-sized shared memory:
//! `y[r][c] = x[r][c] / sqrt(mean_c(x[r][c]^2) + eps) * g[c]`.
//!
//! # Algorithm and thread mapping
//! Block `b` walks rows `b, b + grid, ...`. For a row, thread `t` copies elements
//! `t, t + block, ...` (16-byte vectors `t, t + block, ...` when `x`, `g` and `y` are
//! 16-byte aligned and `cols` is a multiple of 4) into the shared row, summing their
//! squares; a shared-memory tree gives the row's sum of squares `s`; with
//! `inv = 1 / sqrt(s / cols + eps)`, each thread writes `x * inv * g` for the elements it
//! stored, reading them back from the shared row. The row is read from and written to
//! device memory once; `g` is read once per row (it stays in L2). A row holding an
//! infinity or NaN gives NaN.
//!
//! # Launch-sized memory ([`RmsnormConfig::layout`])
//! `row`: `cols` f32, 16-byte aligned; `scratch`: `block` f32. Rows of 32768 floats take
//! 128 KB: past the 48 KB a static array may hold.
//!
//! # Entry point
//! `rmsnorm_f32(x, g, y, rows: u32, cols: u32, eps: f32)`, `grid = min(rows, 65535)`.

use crate::gpu::{self, SharedArray};
use crate::layout::{Carve, LayoutError, Slice};
use crate::vector::Vec4;

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RmsnormConfig {
    pub block: u32,
}

/// Most blocks a launch uses; blocks loop over the rows past it.
pub const MAX_GRID: u32 = 65_535;

/// Where RMSNorm finds its row and scratch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RmsnormLayout {
    pub row: Slice<f32>,
    pub scratch: Slice<f32>,
    pub bytes: u32,
}

impl RmsnormConfig {
    pub fn layout(&self, cols: u32) -> Result<RmsnormLayout, LayoutError> {
        let mut carve = Carve::new();
        let row = carve.array_aligned::<f32>(cols, 16)?;
        let scratch = carve.array::<f32>(self.block)?;
        Ok(RmsnormLayout { row, scratch, bytes: carve.bytes() })
    }

    pub fn shared_bytes(&self, cols: u32) -> Result<u32, LayoutError> {
        Ok(self.layout(cols)?.bytes)
    }

    pub fn grid(&self, rows: u32) -> u32 {
        rows.clamp(1, MAX_GRID)
    }
}

/// Sums every thread's `value` through `scratch`; every thread gets the sum.
#[inline(always)]
fn block_sum(scratch: SharedArray<f32>, tid: u32, block: u32, value: f32) -> f32 {
    unsafe { scratch.write(tid, value) };
    gpu::barrier();
    let mut live = block;
    while live > 1 {
        let half = live.div_ceil(2);
        if tid + half < live {
            unsafe { scratch.write(tid, scratch.read(tid) + scratch.read(tid + half)) };
        }
        gpu::barrier();
        live = half;
    }
    let result = unsafe { scratch.read(0) };
    // Slot 0 is overwritten by the next row's sum.
    gpu::barrier();
    result
}

/// # Safety
/// `x` and `y` hold `rows * cols` floats, `g` holds `cols`; the launch gave the layout's
/// bytes.
#[inline(always)]
unsafe fn rmsnorm(x: *const f32, g: *const f32, y: *mut f32, rows: u32, cols: u32, eps: f32) {
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let Ok(l) = (RmsnormConfig { block }).layout(cols) else { gpu::trap() };
    let region = gpu::launch_region(l.bytes);
    let (row, scratch) = (region.array(l.row), region.array(l.scratch));
    let aligned = (x as usize).is_multiple_of(16) && (g as usize).is_multiple_of(16) && (y as usize).is_multiple_of(16);
    let vectors = if aligned && cols.is_multiple_of(4) { cols / 4 } else { 0 };
    let row4: SharedArray<Vec4<f32>> = unsafe { row.cast() };
    let g4 = g as *const Vec4<f32>;
    let inv_cols = 1.0 / cols as f32;

    let mut r = gpu::block_idx_x();
    while r < rows {
        let src = unsafe { x.add(r as usize * cols as usize) };
        let dst = unsafe { y.add(r as usize * cols as usize) };
        let mut s = 0.0f32;
        let mut i = tid;
        while i < vectors {
            let v = unsafe { (src as *const Vec4<f32>).add(i as usize).read() }.0;
            s += (v[0] * v[0] + v[1] * v[1]) + (v[2] * v[2] + v[3] * v[3]);
            unsafe { row4.write(i, Vec4(v)) };
            i += block;
        }
        let mut i = vectors * 4 + tid;
        while i < cols {
            let v = unsafe { src.add(i as usize).read() };
            s += v * v;
            unsafe { row.write(i, v) };
            i += block;
        }
        let s = block_sum(scratch, tid, block, s);
        let inv = 1.0 / gpu::sqrt(s * inv_cols + eps);

        // Each thread revisits the elements it stored: no barrier needed before this.
        let mut i = tid;
        while i < vectors {
            let v = unsafe { row4.read(i) }.0;
            let w = unsafe { g4.add(i as usize).read() }.0;
            let o = Vec4([v[0] * inv * w[0], v[1] * inv * w[1], v[2] * inv * w[2], v[3] * inv * w[3]]);
            unsafe { (dst as *mut Vec4<f32>).add(i as usize).write(o) };
            i += block;
        }
        let mut i = vectors * 4 + tid;
        while i < cols {
            unsafe { dst.add(i as usize).write(row.read(i) * inv * g.add(i as usize).read()) };
            i += block;
        }
        // The next row overwrites the shared row.
        gpu::barrier();
        r += gpu::grid_dim_x();
    }
}

crate::kernels! { KERNELS;
    /// Row-wise RMSNorm; see the module documentation.
    pub fn rmsnorm_f32(x: *const f32, g: *const f32, y: *mut f32, rows: u32, cols: u32, eps: f32) {
        unsafe { rmsnorm(x, g, y, rows, cols, eps) }
    }
}
