//! The row skeleton of the row-wise families (softmax, RMSNorm): one row of a row-major
//! `rows x cols` f32 matrix per block, held in launch-sized shared memory.
//!
//! # Thread mapping
//! Block `b` walks rows `b, b + grid, ...` ([`Row::each_row`]). For a row, thread `t`
//! owns elements `t, t + block, ...`, or 16-byte vectors `t, t + block, ...` (then the
//! elements past the last whole vector) when the row's global pointers are 16-byte
//! aligned and `cols` is a multiple of 4. A pass ([`Row::load`], [`Row::map`],
//! [`Row::store`]) touches only the elements its thread owns, so passes need no barrier
//! between them; [`Row::fold`] combines one value per thread through `scratch` and is
//! the only synchronisation inside a row. The row is read from and written to device
//! memory once.
//!
//! # Launch-sized memory ([`RowConfig::layout`])
//! `row`: `cols` f32, 16-byte aligned; `scratch`: `block` f32. Rows of 32768 floats take
//! 128 KB: past the 48 KB a static array may hold.

use crate::gpu::{self, SharedArray};
use crate::layout::{Carve, LayoutError, Slice};
use crate::vector::Vec4;

/// The launch-time config of a row-wise kernel: threads per row.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RowConfig {
    pub block: u32,
}

/// Most blocks a launch uses; blocks loop over the rows past it.
pub const MAX_GRID: u32 = 65_535;

/// Where a row-wise kernel finds its row and scratch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowLayout {
    pub row: Slice<f32>,
    pub scratch: Slice<f32>,
    pub bytes: u32,
}

impl RowConfig {
    pub fn layout(&self, cols: u32) -> Result<RowLayout, LayoutError> {
        let mut carve = Carve::new();
        let row = carve.array_aligned::<f32>(cols, 16)?;
        let scratch = carve.array::<f32>(self.block)?;
        Ok(RowLayout { row, scratch, bytes: carve.bytes() })
    }

    pub fn shared_bytes(&self, cols: u32) -> Result<u32, LayoutError> {
        Ok(self.layout(cols)?.bytes)
    }

    pub fn grid(&self, rows: u32) -> u32 {
        rows.clamp(1, MAX_GRID)
    }
}

/// Whether `p` may be read or written as 16-byte vectors.
#[inline(always)]
pub fn aligned<T>(p: *const T) -> bool {
    (p as usize).is_multiple_of(16)
}

/// One block's view of its launch-sized row (see the module documentation).
#[derive(Clone, Copy)]
pub struct Row {
    pub tid: u32,
    pub block: u32,
    pub cols: u32,
    /// Whole 16-byte vectors of a row this block reads as vectors (0: elements only).
    pub vectors: u32,
    row: SharedArray<f32>,
    row4: SharedArray<Vec4<f32>>,
    scratch: SharedArray<f32>,
}

impl Row {
    /// The row of this block; vectors where `aligned` (every global pointer of the row is
    /// 16-byte aligned) and `cols` is a multiple of 4. Traps when the layout fails.
    ///
    /// # Safety
    /// The launch gave [`RowConfig::layout`]'s bytes for `cols` and this block size.
    #[inline(always)]
    pub unsafe fn new(cols: u32, aligned: bool) -> Row {
        let tid = gpu::thread_idx_x();
        let block = gpu::block_dim_x();
        let Ok(l) = (RowConfig { block }).layout(cols) else { gpu::trap() };
        let region = gpu::launch_region(l.bytes);
        let row = region.array(l.row);
        let vectors = if aligned && cols.is_multiple_of(4) { cols / 4 } else { 0 };
        Row { tid, block, cols, vectors, row, row4: unsafe { row.cast() }, scratch: region.array(l.scratch) }
    }

    /// Runs `f(r)` for each row `r < rows` of this block, with a barrier after each (the
    /// next row overwrites the shared row).
    #[inline(always)]
    pub fn each_row(&self, rows: u32, mut f: impl FnMut(u32)) {
        let mut r = gpu::block_idx_x();
        while r < rows {
            f(r);
            gpu::barrier();
            r += gpu::grid_dim_x();
        }
    }

    /// Copies this thread's elements of the row at `src` into shared memory and folds
    /// them into `acc`: `fold4` takes a vector, `fold1` an element.
    ///
    /// # Safety
    /// `src` holds `cols` floats, 16-byte aligned when [`Row::new`] was told so.
    #[inline(always)]
    pub unsafe fn load(
        &self,
        src: *const f32,
        mut acc: f32,
        fold4: impl Fn(f32, [f32; 4]) -> f32,
        fold1: impl Fn(f32, f32) -> f32,
    ) -> f32 {
        let mut i = self.tid;
        while i < self.vectors {
            let v = unsafe { (src as *const Vec4<f32>).add(i as usize).read() }.0;
            acc = fold4(acc, v);
            unsafe { self.row4.write(i, Vec4(v)) };
            i += self.block;
        }
        let mut i = self.vectors * 4 + self.tid;
        while i < self.cols {
            let v = unsafe { src.add(i as usize).read() };
            acc = fold1(acc, v);
            unsafe { self.row.write(i, v) };
            i += self.block;
        }
        acc
    }

    /// Replaces this thread's stored elements by `f4` / `f1` of them, which also fold the
    /// new values into `acc` (returned as the first of the pair).
    #[inline(always)]
    pub fn map(
        &self,
        mut acc: f32,
        f4: impl Fn(f32, [f32; 4]) -> (f32, [f32; 4]),
        f1: impl Fn(f32, f32) -> (f32, f32),
    ) -> f32 {
        let mut i = self.tid;
        while i < self.vectors {
            let (a, e) = f4(acc, unsafe { self.row4.read(i) }.0);
            acc = a;
            unsafe { self.row4.write(i, Vec4(e)) };
            i += self.block;
        }
        let mut i = self.vectors * 4 + self.tid;
        while i < self.cols {
            let (a, e) = f1(acc, unsafe { self.row.read(i) });
            acc = a;
            unsafe { self.row.write(i, e) };
            i += self.block;
        }
        acc
    }

    /// Writes `f4(vector index, vector)` / `f1(element index, element)` of this thread's
    /// stored elements to the row at `dst`.
    ///
    /// # Safety
    /// `dst` holds `cols` floats, 16-byte aligned when [`Row::new`] was told so.
    #[inline(always)]
    pub unsafe fn store(&self, dst: *mut f32, f4: impl Fn(u32, [f32; 4]) -> [f32; 4], f1: impl Fn(u32, f32) -> f32) {
        let mut i = self.tid;
        while i < self.vectors {
            let o = f4(i, unsafe { self.row4.read(i) }.0);
            unsafe { (dst as *mut Vec4<f32>).add(i as usize).write(Vec4(o)) };
            i += self.block;
        }
        let mut i = self.vectors * 4 + self.tid;
        while i < self.cols {
            let o = f1(i, unsafe { self.row.read(i) });
            unsafe { dst.add(i as usize).write(o) };
            i += self.block;
        }
    }

    /// Folds every thread's `value` with `op` (a tree over `scratch`); every thread gets
    /// the result.
    #[inline(always)]
    pub fn fold(&self, value: f32, op: impl Fn(f32, f32) -> f32) -> f32 {
        let (tid, scratch) = (self.tid, self.scratch);
        unsafe { scratch.write(tid, value) };
        gpu::barrier();
        let mut live = self.block;
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
}
