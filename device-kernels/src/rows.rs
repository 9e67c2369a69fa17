//! The row skeleton of the row-wise families (softmax, RMSNorm): one row of a row-major
//! `rows x cols` f32 matrix per *row group* of threads, held in launch-sized shared memory.
//! A row group is a whole thread-block cluster where a row is split over one (a cluster of
//! one: one block), or, where rows are short, a part of one block: a block of `block`
//! threads then holds [`RowConfig::rows_per_block`] rows side by side, each taken by
//! [`RowConfig::row_threads`] of its threads.
//!
//! # Thread mapping
//! Thread `tid` of a block is thread `tid % g` of row group `tid / g` (`g` =
//! [`RowConfig::row_threads`]). Cluster `c` (blocks `c * size .. (c + 1) * size`, `size` =
//! [`gpu::micro::cluster_size`]) walks row steps `c, c + grid / size, ...`; step `k` gives
//! group `q` of its blocks row `k * rows_per_block + q` ([`Row::each_row`]; a group whose row
//! is past the last still takes part in the folds, with an empty span). A row is seen in
//! *slots*: slot `j` holds column `j - shift`, where `shift` (0..=3) is the row's start in
//! floats past a 16-byte boundary, so that slots `4v .. 4v + 4` are one aligned 16-byte
//! vector of the row wherever the row starts. The `cols + shift` slots are split in `size`
//! parts of [`RowConfig::part`] slots (whole vectors); block rank `r` holds part `r` in its
//! shared memory. Thread `t` of a group owns the part's vectors `t, t + g, ...` whatever
//! the row's shift: it alone copies them in, maps them and writes them out, so neither the
//! passes of a row nor consecutive rows need a barrier between them. A vector partly outside
//! the row (the first and last of a row that does not start or end on a boundary) is read
//! lane by lane, its lanes outside the row filled with the pass's identity.
//!
//! [`Row::load`] starts asynchronous copies (`cp.async` on NVIDIA) of all of a thread's
//! whole vectors at once, so a block has its whole part in flight, then folds them from
//! shared memory. [`Row::fold`] combines one value per thread of the row group. The row is
//! read from and written to device memory once; `store` keeps four vectors per thread in
//! flight.
//!
//! # Launch-sized memory ([`RowConfig::layout`])
//! `part`: [`RowConfig::rows_per_block`] parts of [`RowConfig::part`] f32, 16-byte aligned;
//! `held`: [`RowConfig::held`] f32 where the kernel holds a second vector (RMSNorm's weight,
//! [`Row::hold`], where the row is split over a cluster: [`RowConfig::holds`]), else none;
//! `scratch`: [`FOLD_LANES`] lanes of `block` f32 (each rounded up to whole vectors), 16-byte
//! aligned, the folds taking them in turn; `partials`: [`FOLD_LANES`] f32, the block's
//! results of the last two folds read by the cluster's other blocks.
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

/// Where a row-wise kernel finds its part of the row, its held part of a second vector,
/// its scratch and its partials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowLayout {
    pub part: Slice<f32>,
    /// [`RowConfig::held`] floats of a vector of `cols` the block keeps for the whole launch
    /// (RMSNorm's weight); empty where the kernel holds none.
    pub held: Slice<f32>,
    pub scratch: Slice<f32>,
    pub partials: Slice<f32>,
    pub bytes: u32,
}

/// Lanes of the scratch: fold `k` takes lane `k % FOLD_LANES`, so a fold's slots are written
/// again only two folds later, after a barrier every reader of them has passed (no barrier
/// at a fold's end).
pub const FOLD_LANES: u32 = 2;

/// Vectors of a row each thread of its group takes, at most, before a block holds several
/// rows ([`RowConfig::row_threads`]).
pub const ROW_VECTORS: u32 = 4;

impl RowConfig {
    /// A block per row.
    pub const fn blocks(block: u32) -> RowConfig {
        RowConfig { block, cluster: 1 }
    }

    /// Threads that take one row: the whole block where the row is split over a cluster or the
    /// block is not a power of two; else the fewest (a power of two, at most `block`) that
    /// leave each at most [`ROW_VECTORS`] of the row's `ceil(cols / 4)` vectors. Rows of 4096
    /// floats take all 256 threads of a block; rows of 512, 32 threads (8 rows a block).
    pub fn row_threads(&self, cols: u32) -> u32 {
        let block = self.block;
        if self.cluster > 1 || !block.is_power_of_two() {
            return block.max(1);
        }
        let want = cols.div_ceil(4).div_ceil(ROW_VECTORS).max(1);
        want.checked_next_power_of_two().unwrap_or(block).min(block)
    }

    /// Rows a block holds at once: `block / row_threads`.
    pub fn rows_per_block(&self, cols: u32) -> u32 {
        (self.block / self.row_threads(cols)).max(1)
    }

    /// Slots of a row each block holds: the `cols + 3` slots a row may take, split over the
    /// cluster and rounded up to whole vectors.
    pub fn part(&self, cols: u32) -> u64 {
        (cols as u64 + 3).div_ceil(self.cluster.max(1) as u64).next_multiple_of(4)
    }

    /// Floats of a held vector each block keeps: its part's columns under every shift a
    /// row may have, and the vector's own shift (see [`Row::hold`]).
    pub fn held(&self, cols: u32) -> u64 {
        self.part(cols) + 8
    }

    /// Whether a kernel that can hold a second vector (`can`) holds it at this config: where
    /// the row is split over a cluster. A block per row reads it from device memory (L2)
    /// instead: holding it would double the block's shared memory and halve the blocks a
    /// multiprocessor keeps.
    pub fn holds(&self, can: bool) -> bool {
        can && self.cluster > 1
    }

    /// Floats of one lane of the scratch: `block`, rounded up to whole vectors.
    pub fn scratch_pitch(&self) -> u32 {
        self.block.next_multiple_of(4)
    }

    /// The layout of a kernel that holds a second vector of `cols` floats where `held`
    /// (see [`RowConfig::holds`]).
    pub fn layout(&self, cols: u32, held: bool) -> Result<RowLayout, LayoutError> {
        let mut carve = Carve::new();
        // Past u32 the carve reports the overflow.
        let clamp = |n: u64| n.min(u32::MAX as u64) as u32;
        let part = carve.array_aligned::<f32>(clamp(self.part(cols) * self.rows_per_block(cols) as u64), 16)?;
        let held = carve.array_aligned::<f32>(if held { clamp(self.held(cols)) } else { 0 }, 16)?;
        // `scratch_pitch` checked: a block near u32::MAX has no whole-vector pitch.
        let lanes = self
            .block
            .checked_next_multiple_of(4)
            .and_then(|p| p.checked_mul(FOLD_LANES))
            .ok_or(LayoutError::Overflow { offset: 0, len: self.block, elem_bytes: 4 * FOLD_LANES })?;
        let scratch = carve.array_aligned::<f32>(lanes, 16)?;
        let partials = carve.array::<f32>(FOLD_LANES)?;
        Ok(RowLayout { part, held, scratch, partials, bytes: carve.bytes() })
    }

    pub fn shared_bytes(&self, cols: u32, held: bool) -> Result<u32, LayoutError> {
        Ok(self.layout(cols, held)?.bytes)
    }

    /// Blocks of the launch: a cluster per [`RowConfig::rows_per_block`] rows, at most
    /// [`MAX_GRID`] blocks.
    pub fn grid(&self, rows: u32, cols: u32) -> u32 {
        let size = self.cluster.max(1);
        rows.div_ceil(self.rows_per_block(cols)).clamp(1, (MAX_GRID / size).max(1)) * size
    }

    /// Rows one step of the launch takes (its clusters times the rows each holds): the row
    /// counter of [`Row::each_row`] passes the last row by less than this.
    pub fn step(&self, rows: u32, cols: u32) -> u64 {
        (self.grid(rows, cols) / self.cluster.max(1)) as u64 * self.rows_per_block(cols) as u64
    }
}

/// One block's view of its launch-sized part of the row (see the module documentation).
pub struct Row {
    /// This thread's index in its row group.
    pub tid: u32,
    /// Threads of the row group ([`RowConfig::row_threads`]).
    pub block: u32,
    pub cols: u32,
    size: u32,
    /// This thread's row group, and the groups of its block.
    group: u32,
    groups: u32,
    /// Whether the group's row of this step is a row of the matrix (set by [`Row::each_row`]).
    live: core::cell::Cell<bool>,
    /// Slot of the scratch lanes where the group's slots start.
    slot0: u32,
    /// Slots of the row held by the blocks of lower rank.
    base: u32,
    part: SharedArray<f32>,
    part4: SharedArray<Vec4<f32>>,
    /// Whether the block holds a second vector ([`RowConfig::holds`]).
    holding: bool,
    held: SharedArray<f32>,
    held4: SharedArray<Vec4<f32>>,
    scratch: SharedArray<f32>,
    /// Floats of one lane of the scratch.
    pitch: u32,
    partials: SharedArray<f32>,
    /// Folds so far: picks the scratch lane and partials slot of the next one.
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

/// A vector [`Row::hold`] keeps in the block's held array, and its shift.
#[derive(Clone, Copy)]
pub struct Held {
    shift: u32,
}

impl Row {
    /// This block's part of the row, and of a held vector where the kernel `can` hold one
    /// and the config [`holds`](RowConfig::holds) it. Traps when the layout fails.
    ///
    /// # Contract
    /// The launch gave [`RowConfig::layout`]'s bytes for `cols`, `config.holds(can)`, this
    /// block size and the launch's cluster size.
    #[inline(always)]
    pub fn new(cols: u32, can: bool) -> Row {
        let tid = gpu::thread_idx_x();
        let size = micro::cluster_size();
        let config = RowConfig { block: gpu::block_dim_x(), cluster: size };
        let holding = config.holds(can);
        let Ok(l) = config.layout(cols, holding) else { gpu::trap() };
        let (threads, groups) = (config.row_threads(cols), config.rows_per_block(cols));
        let group = tid / threads;
        let region = gpu::launch_region(l.bytes);
        let len = l.part.len() / groups;
        let part = region.array(l.part).window(group * len, len);
        let held = region.array(l.held);
        let rank = micro::cluster_rank();
        Row {
            tid: tid - group * threads,
            block: threads,
            cols,
            size,
            group,
            groups,
            live: core::cell::Cell::new(true),
            slot0: group * threads,
            base: rank * len,
            part,
            part4: unsafe { part.cast() },
            holding,
            held,
            held4: unsafe { held.cast() },
            scratch: region.array(l.scratch),
            pitch: config.scratch_pitch(),
            partials: region.array(l.partials),
            folds: core::cell::Cell::new(0),
        }
    }

    /// Copies the columns of the `cols`-float vector at `src` that this block's part may
    /// hold under any row shift into the held array, for the whole launch: held slot `k`
    /// is column `base - 4 - shift + k` (`shift`: `src`'s start past a 16-byte boundary),
    /// so the copies are aligned vectors; slots outside the vector are 0. Ends with a
    /// barrier: every thread reads slots others copied. `None` (and nothing copied) where
    /// the block holds no vector.
    ///
    /// # Contract
    /// `src` holds `cols` floats.
    #[inline(always)]
    pub fn hold(&self, src: *const f32) -> Option<Held> {
        if !self.holding {
            return None;
        }
        let shift = ((src as usize / 4) % 4) as u32;
        // Column of held slot 0, and of vector k's first lane: c0 + 4k.
        let c0 = self.base as i64 - 4 - shift as i64;
        let vectors = self.held.len() / 4;
        let cols = self.cols as i64;
        let mut k = self.tid;
        while k < vectors {
            let c = c0 + 4 * k as i64;
            if c >= 0 && c + 4 <= cols {
                unsafe { self.held4.copy_async(k, src.wrapping_add(c as usize) as *const Vec4<f32>) };
            } else {
                let lane = |l: i64| {
                    if c + l >= 0 && c + l < cols {
                        unsafe { gpu::read_global(src.wrapping_add((c + l) as usize)) }
                    } else {
                        0.0
                    }
                };
                unsafe { self.held4.write(k, Vec4([lane(0), lane(1), lane(2), lane(3)])) };
            }
            k += self.block;
        }
        gpu::copy_async_commit();
        gpu::copy_async_wait();
        gpu::barrier();
        Some(Held { shift })
    }

    /// The held vector's values at the columns of vector `v` of span `s` (lanes outside the
    /// row: whatever the held array has there). Row slot `j` is column `base + j - s.shift`,
    /// held slot `j + 4 + h.shift - s.shift`: one 16-byte read where the shifts agree, else
    /// four.
    #[inline(always)]
    pub fn held_at(&self, h: Held, s: Span, v: u32) -> [f32; 4] {
        if h.shift == s.shift {
            unsafe { self.held4.read(v + 1) }.0
        } else {
            let k = 4 * v + 4 + h.shift - s.shift;
            unsafe { [self.held.read(k), self.held.read(k + 1), self.held.read(k + 2), self.held.read(k + 3)] }
        }
    }

    /// Runs `f(r)` for this row group's row of each step of this block's cluster (see the
    /// module documentation); at the end, waits until the cluster's blocks are done reading
    /// each other's partials. Every group of a block takes every step, for the folds'
    /// barriers: a group whose row is past the last gets `rows - 1`, and an empty
    /// [`Row::span`], so it reads and writes nothing. No barrier between rows: a thread's
    /// vectors are the same in every row.
    #[inline(always)]
    pub fn each_row(&self, rows: u32, mut f: impl FnMut(u32)) {
        let step = gpu::grid_dim_x() / self.size * self.groups;
        let mut first = gpu::block_idx_x() / self.size * self.groups;
        while first < rows {
            let r = first + self.group;
            self.live.set(r < rows);
            f(r.min(rows - 1));
            first += step;
        }
        if self.size > 1 {
            micro::cluster_barrier();
        }
    }

    /// The slots this block holds of the row starting at `start`: none where this step
    /// gives the group no row ([`Row::each_row`]).
    #[inline(always)]
    pub fn span(&self, start: *const f32) -> Span {
        let shift = ((start as usize / 4) % 4) as u32;
        let len = if self.live.get() { self.part.len() } else { 0 };
        let clamp = |slot: u32| slot.saturating_sub(self.base).min(len);
        Span { lo: clamp(shift), hi: clamp(shift + self.cols), shift }
    }

    /// Vector `v` of the part, read from the row whose column 0 is at `col0`, lane by lane:
    /// lanes outside the span are `fill` (the span's edge vectors, and every vector of a
    /// row whose `col0` is not aligned as the span's).
    ///
    /// # Contract
    /// `col0` holds `cols` floats.
    #[inline(always)]
    pub fn gather(&self, col0: *const f32, s: Span, v: u32, fill: f32) -> [f32; 4] {
        let j = 4 * v;
        let p = col0.wrapping_add((self.base + j) as usize).wrapping_sub(s.shift as usize);
        // No array written lane by lane: it would live in local memory.
        let lane =
            |l: u32| if j + l >= s.lo && j + l < s.hi { unsafe { gpu::read_global(p.add(l as usize)) } } else { fill };
        [lane(0), lane(1), lane(2), lane(3)]
    }

    /// Whether `col0`'s whole vectors of span `s` are 16-byte aligned.
    #[inline(always)]
    pub fn aligned(&self, col0: *const f32, s: Span) -> bool {
        (col0 as usize).is_multiple_of(4) && ((col0 as usize / 4) % 4) as u32 == s.shift
    }

    /// Vector `v` of the row whose column 0 is at `col0` (lanes outside the span 0): one
    /// 16-byte read where `whole`, else lane by lane.
    ///
    /// # Contract
    /// `col0` holds `cols` floats; where `whole`, vector `v` is inside the span and `col0`
    /// is [`Row::aligned`].
    #[inline(always)]
    pub fn read(&self, col0: *const f32, s: Span, v: u32, whole: bool) -> [f32; 4] {
        if whole {
            let p = col0.wrapping_add((self.base + 4 * v) as usize).wrapping_sub(s.shift as usize);
            unsafe { gpu::read_global(p as *const Vec4<f32>) }.0
        } else {
            self.gather(col0, s, v, 0.0)
        }
    }

    /// This thread's edge vectors of the span (lanes outside it): the vector holding `lo`
    /// where `lo` is not on a vector boundary, and the one holding `hi` where `hi` is not
    /// and it is another vector, each where this thread owns it. Every other vector of the
    /// span is whole: `lo.div_ceil(4)..hi / 4`. (`lo` is the shift in rank 0's part, else
    /// 0: the first edge is vector 0.)
    #[inline(always)]
    fn edges(&self, s: Span) -> (Option<u32>, Option<u32>) {
        let (lo, hi) = (s.lo, s.hi);
        let first = (lo < hi && !lo.is_multiple_of(4)).then_some(lo / 4);
        let last = (lo < hi && !hi.is_multiple_of(4) && hi / 4 >= lo.div_ceil(4)).then_some(hi / 4);
        let mine = |v: Option<u32>| v.filter(|v| v % self.block == self.tid);
        (mine(first), mine(last))
    }

    /// This thread's first whole vector of the span (its vectors are `tid, tid + block, ...`;
    /// the whole ones start at `lo.div_ceil(4)`, 0 or 1).
    #[inline(always)]
    fn first_whole(&self, s: Span) -> u32 {
        if self.tid < s.lo.div_ceil(4) { self.tid + self.block } else { self.tid }
    }

    /// The end of the span's vectors, edges included (0 for an empty span).
    #[inline(always)]
    fn vectors(&self, s: Span) -> u32 {
        if s.lo < s.hi { s.hi.div_ceil(4) } else { 0 }
    }

    /// Copies this thread's vectors of the row at `src` into shared memory (lanes outside
    /// the row: `fill`) and folds them into `acc` with `fold4`; returns the fold and the
    /// span the other passes of this row take. The whole vectors are asynchronous copies,
    /// all started before any is waited for; the fold reads them back from shared memory
    /// (each thread its own, so no barrier).
    ///
    /// # Contract
    /// `src` holds `cols` floats.
    #[inline(always)]
    pub fn load(&self, src: *const f32, fill: f32, mut acc: f32, fold4: impl Fn(f32, [f32; 4]) -> f32) -> (f32, Span) {
        let s = self.span(src);
        let block = self.block;
        let whole_end = s.hi / 4;
        let p = src.wrapping_add(self.base as usize).wrapping_sub(s.shift as usize) as *const Vec4<f32>;
        let mut v = self.first_whole(s);
        while v < whole_end {
            unsafe { self.part4.copy_async(v, p.add(v as usize)) };
            v += block;
        }
        gpu::copy_async_commit();
        // Each edge apart: an array of them would live in local memory.
        let (first, last) = self.edges(s);
        let edge = |v: Option<u32>| {
            if let Some(v) = v {
                unsafe { self.part4.write(v, Vec4(self.gather(src, s, v, fill))) };
            }
        };
        edge(first);
        edge(last);
        gpu::copy_async_wait();
        let (end, mut v) = (self.vectors(s), self.tid);
        while v + block < end {
            let (x0, x1) = unsafe { (self.part4.read(v), self.part4.read(v + block)) };
            acc = fold4(fold4(acc, x0.0), x1.0);
            v += 2 * block;
        }
        if v < end {
            acc = fold4(acc, unsafe { self.part4.read(v) }.0);
        }
        (acc, s)
    }

    /// Replaces this thread's stored vectors of span `s` by `f4` of them, which also folds
    /// the new values into `acc` (the first of the pair). Lanes outside the row hold the
    /// load's fill, and `f4` must map them to values that leave `acc` as it is.
    #[inline(always)]
    pub fn map(&self, s: Span, mut acc: f32, f4: impl Fn(f32, [f32; 4]) -> (f32, [f32; 4])) -> f32 {
        let (end, mut v) = (self.vectors(s), self.tid);
        while v < end {
            let (a, e) = f4(acc, unsafe { self.part4.read(v) }.0);
            acc = a;
            unsafe { self.part4.write(v, Vec4(e)) };
            v += self.block;
        }
        acc
    }

    /// Writes `f4(v, vector v, whole)` of the stored vectors of span `s` to the row at `dst`
    /// (its lanes inside the row; whole vectors as 16-byte writes where `dst` is aligned as
    /// the span is). `whole`: every lane of the vector is inside the row.
    ///
    /// # Contract
    /// `dst` holds `cols` floats.
    #[inline(always)]
    pub fn store(&self, dst: *mut f32, s: Span, f4: impl Fn(u32, [f32; 4], bool) -> [f32; 4]) {
        let put = |v: u32, o: [f32; 4]| {
            let j = 4 * v;
            let p = dst.wrapping_add((self.base + j) as usize).wrapping_sub(s.shift as usize);
            let lane = |l: u32, x: f32| {
                if j + l >= s.lo && j + l < s.hi {
                    unsafe { gpu::write_global(p.add(l as usize), x) };
                }
            };
            lane(0, o[0]);
            lane(1, o[1]);
            lane(2, o[2]);
            lane(3, o[3]);
        };
        let (end, mut v) = (s.hi / 4, self.first_whole(s));
        if self.aligned(dst, s) {
            let p = dst.wrapping_add(self.base as usize).wrapping_sub(s.shift as usize) as *mut Vec4<f32>;
            let block = self.block;
            let out = |v: u32| f4(v, unsafe { self.part4.read(v) }.0, true);
            // Four vectors made before any is written, so reads `f4` makes (RMSNorm's
            // weights) are in flight together.
            while v + 3 * block < end {
                let o = [out(v), out(v + block), out(v + 2 * block), out(v + 3 * block)];
                unsafe {
                    gpu::write_global(p.add(v as usize), Vec4(o[0]));
                    gpu::write_global(p.add((v + block) as usize), Vec4(o[1]));
                    gpu::write_global(p.add((v + 2 * block) as usize), Vec4(o[2]));
                    gpu::write_global(p.add((v + 3 * block) as usize), Vec4(o[3]));
                }
                v += 4 * block;
            }
            while v < end {
                unsafe { gpu::write_global(p.add(v as usize), Vec4(out(v))) };
                v += block;
            }
        } else {
            while v < end {
                put(v, f4(v, unsafe { self.part4.read(v) }.0, true));
                v += self.block;
            }
        }
        let (first, last) = self.edges(s);
        let edge = |v: Option<u32>| {
            if let Some(v) = v {
                put(v, f4(v, unsafe { self.part4.read(v) }.0, false));
            }
        };
        edge(first);
        edge(last);
    }

    /// Folds every thread's `value` of the row group (of the whole cluster where a row is
    /// split over one) with `op`; every thread of the group gets the result. All groups of
    /// a block fold at once (the barriers are the block's).
    ///
    /// Within the group, in the scratch lane of this fold (see [`FOLD_LANES`]): each thread
    /// writes its value to its slot; where the group is wider than 32, thread `t < 32` folds
    /// its slots `t, t + 32, ...` into slot `t` (a warp's loads hit 32 banks); then every
    /// thread folds the first `min(32, group)` slots (16-byte reads where 32). One barrier
    /// after the writes, one more where the group is wider than 32. Across the cluster:
    /// each block publishes its result in a partials slot (the two alternate, so a slot is
    /// rewritten only after a cluster barrier that every reader of it has passed) and folds
    /// all of them in rank order, so every block gets the same value. Blocks are at most
    /// 1024 threads: 32 values per slot.
    #[inline(always)]
    pub fn fold(&self, value: f32, op: impl Fn(f32, f32) -> f32) -> f32 {
        let (tid, threads, scratch) = (self.tid, self.block, self.scratch);
        let lane = self.folds.get() % FOLD_LANES;
        self.folds.set(self.folds.get() + 1);
        // The group's slot 0 in this fold's lane.
        let slots = lane * self.pitch + self.slot0;
        let read = |j: u32| unsafe { scratch.read(slots + j) };
        unsafe { scratch.write(slots + tid, value) };
        gpu::barrier();
        if threads > 32 {
            if tid < 32 {
                // Four reads in flight per step. A loop of constant trip count here would have
                // its 31 addresses hoisted out of the row loop, live in registers throughout.
                let mut a = read(tid);
                let mut j = tid + 32;
                while j + 96 < threads {
                    let x = [read(j), read(j + 32), read(j + 64), read(j + 96)];
                    a = op(a, op(op(x[0], x[1]), op(x[2], x[3])));
                    j += 128;
                }
                while j < threads {
                    a = op(a, read(j));
                    j += 32;
                }
                unsafe { scratch.write(slots + tid, a) };
            }
            gpu::barrier();
        }
        let result = if threads >= 32 {
            // Slots 0..32 as eight 16-byte reads (`slots` is a multiple of 4: the lanes' pitch
            // and a group of 32 or more threads are); the registers are indexed by constants
            // (an array indexed by the loop's counter would be local memory).
            let quads: SharedArray<Vec4<f32>> = unsafe { scratch.cast() };
            let quad = |i: u32| unsafe { quads.read(slots / 4 + i) }.0;
            let q = quad(0);
            let mut result = op(op(q[0], q[1]), op(q[2], q[3]));
            for i in 1..8 {
                let q = quad(i);
                result = op(result, op(op(q[0], q[1]), op(q[2], q[3])));
            }
            result
        } else {
            let mut result = read(0);
            for t in 1..threads {
                result = op(result, read(t));
            }
            result
        };
        if self.size == 1 {
            return result;
        }
        if tid == 0 {
            unsafe { self.partials.write(lane, result) };
        }
        micro::cluster_barrier();
        let mine = unsafe { self.partials.range_ptr(lane, 1) } as *const u32;
        let remote = |rank: u32| f32::from_bits(unsafe { micro::cluster_load(micro::cluster_map(mine, rank)) });
        let mut all = remote(0);
        for rank in 1..self.size {
            all = op(all, remote(rank));
        }
        all
    }
}
