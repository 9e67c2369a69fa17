//! Row-wise softmax of a row-major `rows x cols` f32 matrix, one row per block, the row
//! held in launch-sized shared memory.
//!
//! # Algorithm and thread mapping
//! Block `b` walks rows `b, b + grid, ...`. For a row, thread `t` copies elements
//! `t, t + block, ...` (16-byte vectors `t, t + block, ...` when the row is 16-byte
//! aligned) into the shared row, keeping their maximum; a shared-memory tree gives the row
//! maximum `m`; each thread then replaces its elements by `e = exp(x - m)` and sums them;
//! a second tree gives the sum `s`; each thread writes `e / s`. The row is read from and
//! written to device memory once. Subtracting `m` keeps `exp` from overflowing
//! (numerically stable). A row of `+inf` or NaN gives NaN.
//!
//! # Launch-sized memory ([`SoftmaxConfig::layout`])
//! `row`: `cols` f32, 16-byte aligned; `scratch`: `block` f32. Rows of 32768 floats take
//! 128 KB: past the 48 KB a static array may hold.
//!
//! # Entry point
//! `softmax_f32(input, output, rows: u32, cols: u32)`, `grid = min(rows, 65535)`.

use crate::gpu::{self, SharedArray};
use crate::layout::{Carve, LayoutError, Slice};
use crate::vector::Vec4;

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SoftmaxConfig {
    pub block: u32,
}

/// Most blocks a launch uses; blocks loop over the rows past it.
pub const MAX_GRID: u32 = 65_535;

/// Where softmax finds its row and scratch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SoftmaxLayout {
    pub row: Slice<f32>,
    pub scratch: Slice<f32>,
    pub bytes: u32,
}

impl SoftmaxConfig {
    pub fn layout(&self, cols: u32) -> Result<SoftmaxLayout, LayoutError> {
        let mut carve = Carve::new();
        let row = carve.array_aligned::<f32>(cols, 16)?;
        let scratch = carve.array::<f32>(self.block)?;
        Ok(SoftmaxLayout { row, scratch, bytes: carve.bytes() })
    }

    pub fn shared_bytes(&self, cols: u32) -> Result<u32, LayoutError> {
        Ok(self.layout(cols)?.bytes)
    }

    pub fn grid(&self, rows: u32) -> u32 {
        rows.clamp(1, MAX_GRID)
    }
}

/// Folds every thread's `value` with `op` through `scratch`; every thread gets the result.
#[inline(always)]
fn block_fold(scratch: SharedArray<f32>, tid: u32, block: u32, value: f32, op: impl Fn(f32, f32) -> f32) -> f32 {
    unsafe { scratch.write(tid, value) };
    gpu::barrier();
    let mut live = block;
    while live > 1 {
        let half = live.div_ceil(2);
        if tid + half < live {
            unsafe { scratch.write(tid, op(scratch.read(tid), scratch.read(tid + half))) };
        }
        gpu::barrier();
        live = half;
    }
    let result = unsafe { scratch.read(0) };
    // Slot 0 is overwritten by the next fold.
    gpu::barrier();
    result
}

/// # Safety
/// `input` and `output` hold `rows * cols` floats; the launch gave the layout's bytes.
#[inline(always)]
unsafe fn softmax(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let Ok(l) = (SoftmaxConfig { block }).layout(cols) else { gpu::trap() };
    let region = gpu::launch_region(l.bytes);
    let (row, scratch) = (region.array(l.row), region.array(l.scratch));
    let vectors =
        if (input as usize).is_multiple_of(16) && (output as usize).is_multiple_of(16) && cols.is_multiple_of(4) {
            cols / 4
        } else {
            0
        };
    let row4: SharedArray<Vec4<f32>> = unsafe { row.cast() };

    let mut r = gpu::block_idx_x();
    while r < rows {
        let src = unsafe { input.add(r as usize * cols as usize) };
        let dst = unsafe { output.add(r as usize * cols as usize) };
        let mut m = f32::NEG_INFINITY;
        let mut i = tid;
        while i < vectors {
            let v = unsafe { (src as *const Vec4<f32>).add(i as usize).read() }.0;
            m = m.max(v[0]).max(v[1]).max(v[2]).max(v[3]);
            unsafe { row4.write(i, Vec4([v[0], v[1], v[2], v[3]])) };
            i += block;
        }
        let mut i = vectors * 4 + tid;
        while i < cols {
            let v = unsafe { src.add(i as usize).read() };
            m = m.max(v);
            unsafe { row.write(i, v) };
            i += block;
        }
        let m = block_fold(scratch, tid, block, m, f32::max);

        // Each thread revisits the elements it stored: no barrier needed before this.
        let mut s = 0.0f32;
        let mut i = tid;
        while i < vectors {
            let v = unsafe { row4.read(i) }.0;
            let e = [gpu::exp(v[0] - m), gpu::exp(v[1] - m), gpu::exp(v[2] - m), gpu::exp(v[3] - m)];
            s += (e[0] + e[1]) + (e[2] + e[3]);
            unsafe { row4.write(i, Vec4(e)) };
            i += block;
        }
        let mut i = vectors * 4 + tid;
        while i < cols {
            let e = gpu::exp(unsafe { row.read(i) } - m);
            s += e;
            unsafe { row.write(i, e) };
            i += block;
        }
        let s = block_fold(scratch, tid, block, s, |a, b| a + b);
        let inv = 1.0 / s;

        let mut i = tid;
        while i < vectors {
            let e = unsafe { row4.read(i) }.0;
            let o = Vec4([e[0] * inv, e[1] * inv, e[2] * inv, e[3] * inv]);
            unsafe { (dst as *mut Vec4<f32>).add(i as usize).write(o) };
            i += block;
        }
        let mut i = vectors * 4 + tid;
        while i < cols {
            unsafe { dst.add(i as usize).write(row.read(i) * inv) };
            i += block;
        }
        // The next row overwrites the shared row.
        gpu::barrier();
        r += gpu::grid_dim_x();
    }
}

crate::kernels! { KERNELS;
    /// Row-wise softmax; see the module documentation.
    pub fn softmax_f32(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        unsafe { softmax(input, output, rows, cols) }
    }
}
