//! The row skeleton of the row-wise families (softmax, RMSNorm): one row of a row-major
//! `rows x cols` f32 matrix per thread-block cluster, held in the cluster's launch-sized
//! shared memory (a cluster of one: one block).
//!
//! # Thread mapping
//! Cluster `c` (blocks `c * size .. (c + 1) * size`, `size` = [`gpu::micro::cluster_size`])
//! walks rows `c, c + grid / size, ...` ([`Row::each_row`]). A row is seen in *slots*: slot
//! `j` holds column `j - shift`, where `shift` (0..=3) is the row's start in floats past a
//! 16-byte boundary, so that slots `4v .. 4v + 4` are one aligned 16-byte vector of the
//! row wherever the row starts. The `cols + shift` slots are split in `size` parts of
//! [`RowConfig::part`] slots (whole vectors); block rank `r` holds part `r` in its shared
//! memory. Thread `t` owns the part's vectors `t, t + block, ...`; a vector half outside the
//! row (the first and last of a row that does not start or end on a boundary) is read
//! lane by lane, its lanes outside the row filled with the pass's identity.
//!
//! A pass ([`Row::load`], [`Row::map`], [`Row::store`]) touches only the vectors its thread
//! owns, so passes need no barrier between them; [`Row::fold`] combines one value per
//! thread of the whole cluster and is the only synchronisation inside a row. The row is
//! read from and written to device memory once. `load` keeps four vector reads per thread
//! in flight.
//!
//! # Launch-sized memory ([`RowConfig::layout`])
//! `part`: [`RowConfig::part`] f32, 16-byte aligned; `scratch`: `block` f32; `partials`:
//! 2 f32, the block's result of the last two folds, read by the cluster's other blocks.
//! Rows of 32768 floats take 128 KB in one block, 64 KB per block in clusters of two; rows
//! of 65536 (256 KB) fit only split over a cluster.

use crate::gpu::{self, SharedArray, micro};
use crate::layout::{Carve, LayoutError, Slice};
use crate::vector::Vec4;

/// The launch-time config of a row-wise kernel: threads per block, blocks per row.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RowConfig {
    pub block: u32,
    /// Blocks of the thread-block cluster that shares a row (1: a block per row).
    #[cfg_attr(feature = "serde", serde(default = "one"))]
    pub cluster: u32,
}

#[cfg(feature = "serde")]
fn one() -> u32 {
    1
}

/// Most blocks a launch uses; clusters loop over the rows past it.
pub const MAX_GRID: u32 = 65_535;

/// Where a row-wise kernel finds its part of the row, its scratch and its partials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowLayout {
    pub part: Slice<f32>,
    pub scratch: Slice<f32>,
    pub partials: Slice<f32>,
    pub bytes: u32,
}

impl RowConfig {
    /// A block per row.
    pub const fn blocks(block: u32) -> RowConfig {
        RowConfig { block, cluster: 1 }
    }

    /// Slots of a row each block holds: the `cols + 3` slots a row may take, split over the
    /// cluster and rounded up to whole vectors.
    pub fn part(&self, cols: u32) -> u64 {
        (cols as u64 + 3).div_ceil(self.cluster.max(1) as u64).next_multiple_of(4)
    }

    pub fn layout(&self, cols: u32) -> Result<RowLayout, LayoutError> {
        let mut carve = Carve::new();
        // Past u32 the carve reports the overflow.
        let part = self.part(cols).min(u32::MAX as u64) as u32;
        let part = carve.array_aligned::<f32>(part, 16)?;
        let scratch = carve.array::<f32>(self.block)?;
        let partials = carve.array::<f32>(2)?;
        Ok(RowLayout { part, scratch, partials, bytes: carve.bytes() })
    }

    pub fn shared_bytes(&self, cols: u32) -> Result<u32, LayoutError> {
        Ok(self.layout(cols)?.bytes)
    }

    /// Blocks of the launch: a cluster per row, at most [`MAX_GRID`] blocks.
    pub fn grid(&self, rows: u32) -> u32 {
        let size = self.cluster.max(1);
        rows.clamp(1, (MAX_GRID / size).max(1)) * size
    }
}

/// One block's view of its launch-sized part of the row (see the module documentation).
pub struct Row {
    pub tid: u32,
    pub block: u32,
    pub cols: u32,
    size: u32,
    /// Slots of the row held by the blocks of lower rank.
    base: u32,
    part: SharedArray<f32>,
    part4: SharedArray<Vec4<f32>>,
    scratch: SharedArray<f32>,
    partials: SharedArray<f32>,
    /// Folds so far: picks the partials slot of the next one.
    folds: core::cell::Cell<u32>,
}

/// The slots of one row a block holds: `lo..hi` of its part (`hi <= lo`: none) and the
/// row's shift.
#[derive(Clone, Copy)]
pub struct Span {
    lo: u32,
    hi: u32,
    shift: u32,
}

impl Row {
    /// This block's part of the row. Traps when the layout fails.
    ///
    /// # Safety
    /// The launch gave [`RowConfig::layout`]'s bytes for `cols`, this block size and the
    /// launch's cluster size.
    #[inline(always)]
    pub unsafe fn new(cols: u32) -> Row {
        let tid = gpu::thread_idx_x();
        let block = gpu::block_dim_x();
        let size = micro::cluster_size();
        let config = RowConfig { block, cluster: size };
        let Ok(l) = config.layout(cols) else { gpu::trap() };
        let region = gpu::launch_region(l.bytes);
        let part = region.array(l.part);
        let rank = micro::cluster_rank();
        Row {
            tid,
            block,
            cols,
            size,
            base: rank * l.part.len(),
            part,
            part4: unsafe { part.cast() },
            scratch: region.array(l.scratch),
            partials: region.array(l.partials),
            folds: core::cell::Cell::new(0),
        }
    }

    /// Runs `f(r)` for each row `r < rows` of this block's cluster; at the end, waits until
    /// the cluster's blocks are done reading each other's partials.
    #[inline(always)]
    pub fn each_row(&self, rows: u32, mut f: impl FnMut(u32)) {
        let clusters = gpu::grid_dim_x() / self.size;
        let mut r = gpu::block_idx_x() / self.size;
        while r < rows {
            f(r);
            r += clusters;
        }
        if self.size > 1 {
            micro::cluster_barrier();
        }
    }

    /// The slots this block holds of the row starting at `start`.
    #[inline(always)]
    pub fn span(&self, start: *const f32) -> Span {
        let shift = ((start as usize / 4) % 4) as u32;
        let len = self.part.len();
        let clamp = |slot: u32| slot.saturating_sub(self.base).min(len);
        Span { lo: clamp(shift), hi: clamp(shift + self.cols), shift }
    }

    /// Vector `v` of the part, read from the row whose column 0 is at `col0` (lanes
    /// outside the span are `fill`): one 16-byte read where the whole vector is in the
    /// span and aligned, else lane by lane.
    ///
    /// # Safety
    /// `col0` holds `cols` floats.
    #[inline(always)]
    pub unsafe fn gather(&self, col0: *const f32, s: Span, v: u32, fill: f32) -> [f32; 4] {
        let j = 4 * v;
        let p = col0.wrapping_add((self.base + j) as usize).wrapping_sub(s.shift as usize);
        if j >= s.lo && j + 4 <= s.hi && (p as usize).is_multiple_of(16) {
            return unsafe { (p as *const Vec4<f32>).read() }.0;
        }
        let mut out = [fill; 4];
        for (l, o) in out.iter_mut().enumerate() {
            let slot = j + l as u32;
            if slot >= s.lo && slot < s.hi {
                *o = unsafe { p.add(l).read() };
            }
        }
        out
    }

    /// Copies this thread's vectors of the row at `src` into shared memory (lanes outside
    /// the row: `fill`) and folds them into `acc` with `fold4`; returns the fold and the
    /// span the other passes of this row take.
    ///
    /// # Safety
    /// `src` holds `cols` floats.
    #[inline(always)]
    pub unsafe fn load(
        &self,
        src: *const f32,
        fill: f32,
        mut acc: f32,
        fold4: impl Fn(f32, [f32; 4]) -> f32,
    ) -> (f32, Span) {
        let s = self.span(src);
        let (block, end) = (self.block, s.hi.div_ceil(4));
        let mut v = s.lo / 4 + self.tid;
        // Four reads in flight before any is stored.
        while v + 3 * block < end {
            let x = unsafe {
                [
                    self.gather(src, s, v, fill),
                    self.gather(src, s, v + block, fill),
                    self.gather(src, s, v + 2 * block, fill),
                    self.gather(src, s, v + 3 * block, fill),
                ]
            };
            for (k, x) in x.into_iter().enumerate() {
                acc = fold4(acc, x);
                unsafe { self.part4.write(v + k as u32 * block, Vec4(x)) };
            }
            v += 4 * block;
        }
        while v < end {
            let x = unsafe { self.gather(src, s, v, fill) };
            acc = fold4(acc, x);
            unsafe { self.part4.write(v, Vec4(x)) };
            v += block;
        }
        (acc, s)
    }

    /// Replaces this thread's stored vectors of span `s` by `f4` of them, which also folds
    /// the new values into `acc` (the first of the pair). Lanes outside the row hold the
    /// load's fill, and `f4` must map them to values that leave `acc` as it is.
    #[inline(always)]
    pub fn map(&self, s: Span, mut acc: f32, f4: impl Fn(f32, [f32; 4]) -> (f32, [f32; 4])) -> f32 {
        let mut v = s.lo / 4 + self.tid;
        while v < s.hi.div_ceil(4) {
            let (a, e) = f4(acc, unsafe { self.part4.read(v) }.0);
            acc = a;
            unsafe { self.part4.write(v, Vec4(e)) };
            v += self.block;
        }
        acc
    }

    /// Writes `f4(v, vector v)` of this thread's stored vectors of span `s` to the row at
    /// `dst` (its lanes inside the row; one 16-byte write where the whole vector is in the
    /// span and aligned).
    ///
    /// # Safety
    /// `dst` holds `cols` floats.
    #[inline(always)]
    pub unsafe fn store(&self, dst: *mut f32, s: Span, f4: impl Fn(u32, [f32; 4]) -> [f32; 4]) {
        let mut v = s.lo / 4 + self.tid;
        while v < s.hi.div_ceil(4) {
            let o = f4(v, unsafe { self.part4.read(v) }.0);
            let j = 4 * v;
            let p = dst.wrapping_add((self.base + j) as usize).wrapping_sub(s.shift as usize);
            if j >= s.lo && j + 4 <= s.hi && (p as usize).is_multiple_of(16) {
                unsafe { (p as *mut Vec4<f32>).write(Vec4(o)) };
            } else {
                for (l, o) in o.into_iter().enumerate() {
                    let slot = j + l as u32;
                    if slot >= s.lo && slot < s.hi {
                        unsafe { p.add(l).write(o) };
                    }
                }
            }
            v += self.block;
        }
    }

    /// Folds every thread's `value` of the whole cluster with `op`; every thread gets the
    /// result. Within the block: 32 threads fold the scratch in strides of 32, then every
    /// thread folds those 32 (three barriers). Across the cluster: each block publishes its
    /// result in a partials slot (the two alternate, so a slot is rewritten only after a
    /// cluster barrier that every reader of it has passed) and folds all of them in rank
    /// order, so every block gets the same value.
    #[inline(always)]
    pub fn fold(&self, value: f32, op: impl Fn(f32, f32) -> f32) -> f32 {
        let (tid, scratch) = (self.tid, self.scratch);
        unsafe { scratch.write(tid, value) };
        gpu::barrier();
        if tid < 32 {
            let mut a = unsafe { scratch.read(tid) };
            let mut j = tid + 32;
            while j < self.block {
                a = op(a, unsafe { scratch.read(j) });
                j += 32;
            }
            unsafe { scratch.write(tid, a) };
        }
        gpu::barrier();
        let mut result = unsafe { scratch.read(0) };
        for j in 1..self.block.min(32) {
            result = op(result, unsafe { scratch.read(j) });
        }
        if self.size == 1 {
            // The scratch is written by the next fold.
            gpu::barrier();
            return result;
        }
        let slot = self.folds.get() % 2;
        self.folds.set(self.folds.get() + 1);
        if tid == 0 {
            unsafe { self.partials.write(slot, result) };
        }
        micro::cluster_barrier();
        let mine = unsafe { self.partials.range_ptr(slot, 1) } as *const u32;
        let mut all = f32::from_bits(unsafe { micro::cluster_load(micro::cluster_map(mine, 0)) });
        for rank in 1..self.size {
            all = op(all, f32::from_bits(unsafe { micro::cluster_load(micro::cluster_map(mine, rank)) }));
        }
        all
    }
}
