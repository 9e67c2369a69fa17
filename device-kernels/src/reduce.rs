//! Reduce: sum / min / max of `n` elements (`f32` or `u32`) to one value.
//!
//! # Algorithm (one pass; the host chains passes until one value is left)
//! The input is cut into chunks of `block * items_per_thread` elements. Block `b` walks
//! chunks `b, b + grid, b + 2*grid, ...` and each of its threads folds its elements into
//! a register accumulator; the block then folds its `block` accumulators in the
//! launch-sized `scratch` array (a shared-memory tree, `ceil(log2(block))` barriers) and
//! thread 0 writes `partials[b]`. A launch with `n == 0` writes the identity, so every `n`
//! (0 and 1 included) has a defined result.
//!
//! # Thread mapping inside a full chunk (coalesced, 16-byte loads when aligned)
//! With `v = items_per_thread / 4`, thread `t` reads the 16-byte vectors `k*block + t`
//! for `k < v` (elements `[0, 4*v*block)` of the chunk), then elements
//! `4*v*block + k*block + t` for `k < items_per_thread % 4`. A partial (last) chunk, or an
//! input that is not 16-byte aligned, is read one element at a time, `k*block + t`.
//!
//! # Launch-sized memory ([`ReduceLayout`])
//! `tile`: `block * items_per_thread` elements, 16-byte aligned, used only by the *staged*
//! kernels, which copy each full chunk into shared memory before folding it (the way to
//! put more than 48 KB of staged items behind one block); `scratch`: `block` elements.
//!
//! # Entry points
//! `reduce_{sum,min,max}_{f32,u32}` and `reduce_staged_{sum,min,max}_{f32,u32}`, each
//! `(input: *const T, partials: *mut T, n: u64, items_per_thread: u32)`, launched with
//! `grid = ReduceConfig::grid(n)` blocks of `block` threads and
//! `ReduceConfig::shared_bytes(dtype)` bytes of launch-sized memory.

use crate::Dtype;
use crate::layout::{Carve, LayoutError, Slice};

/// The reduction operator.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(rename_all = "lowercase"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReduceOp {
    Sum,
    Min,
    Max,
}

impl ReduceOp {
    pub const ALL: [ReduceOp; 3] = [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max];

    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
        }
    }
}

/// The launch-time tunables of a reduce launch.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReduceConfig {
    /// Threads per block (any value from 1 to the device maximum).
    pub block: u32,
    /// Elements each thread folds per chunk (>= 1); a multiple of 4 gets 16-byte loads.
    pub items_per_thread: u32,
    /// Copy each chunk through the shared `tile` before folding it.
    pub staged: bool,
}

/// Most blocks one pass launches: the x-dimension limit of WGSL dispatches, so both
/// paths use the same grid; blocks loop over chunks beyond it.
pub const MAX_GRID: u32 = 65_535;

impl ReduceConfig {
    /// Elements one block folds per chunk, or `None` on overflow.
    pub fn chunk(&self) -> Option<u64> {
        (self.block as u64).checked_mul(self.items_per_thread as u64)
    }

    /// Blocks the pass over `n` elements launches (at least one, so `n == 0` gives the
    /// identity), and so the number of partials it writes.
    pub fn grid(&self, n: u64) -> u32 {
        let chunk = self.chunk().unwrap_or(u64::MAX).max(1);
        n.div_ceil(chunk).clamp(1, MAX_GRID as u64) as u32
    }

    /// The carve of the launch-sized region for elements of `dtype`.
    pub fn layout(&self, dtype: Dtype) -> Result<ReduceLayout, LayoutError> {
        let tile_len = if self.staged {
            self.block.checked_mul(self.items_per_thread).ok_or(LayoutError::Overflow {
                offset: 0,
                len: self.block,
                elem_bytes: self.items_per_thread.saturating_mul(dtype.bytes()),
            })?
        } else {
            0
        };
        match dtype {
            Dtype::F32 => ReduceLayout::new::<f32>(self.block, tile_len),
            Dtype::U32 => ReduceLayout::new::<u32>(self.block, tile_len),
        }
    }

    /// `shared_mem_bytes` for a launch of this config.
    pub fn shared_bytes(&self, dtype: Dtype) -> Result<u32, LayoutError> {
        Ok(self.layout(dtype)?.bytes)
    }

    /// The number of passes that take `n` inputs down to one value (pass `i` reads the
    /// partials of pass `i - 1` and writes `grid` of its own), or `None` when they never
    /// do: with a chunk of one element a pass writes as many partials as it reads.
    pub fn pass_count(&self, n: u64) -> Option<u32> {
        let mut passes = 1;
        let mut len = self.grid(n) as u64;
        while len > 1 {
            let next = self.grid(len) as u64;
            if next >= len {
                return None;
            }
            len = next;
            passes += 1;
        }
        Some(passes)
    }
}

/// Where the reduce kernels find their tile and scratch. Offsets are in bytes; the tile
/// is 16-byte aligned so whole vectors can be stored into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReduceLayout {
    /// Staged items, `block * items_per_thread` elements (empty for unstaged kernels).
    pub tile_offset: u32,
    pub tile_len: u32,
    /// One element per thread for the block-level tree.
    pub scratch_offset: u32,
    pub scratch_len: u32,
    /// Total launch-sized bytes.
    pub bytes: u32,
}

impl ReduceLayout {
    pub fn new<T>(block: u32, tile_len: u32) -> Result<ReduceLayout, LayoutError> {
        let mut carve = Carve::new();
        let tile: Slice<T> = carve.array_aligned(tile_len, 16)?;
        let scratch: Slice<T> = carve.array(block)?;
        Ok(ReduceLayout {
            tile_offset: tile.offset(),
            tile_len,
            scratch_offset: scratch.offset(),
            scratch_len: block,
            bytes: carve.bytes(),
        })
    }
}

/// The kernel entry name for an operator, element type and staging choice.
pub fn entry_name(op: ReduceOp, dtype: Dtype, staged: bool) -> &'static str {
    use Dtype::*;
    use ReduceOp::*;
    match (staged, op, dtype) {
        (false, Sum, F32) => "reduce_sum_f32",
        (false, Min, F32) => "reduce_min_f32",
        (false, Max, F32) => "reduce_max_f32",
        (false, Sum, U32) => "reduce_sum_u32",
        (false, Min, U32) => "reduce_min_u32",
        (false, Max, U32) => "reduce_max_u32",
        (true, Sum, F32) => "reduce_staged_sum_f32",
        (true, Min, F32) => "reduce_staged_min_f32",
        (true, Max, F32) => "reduce_staged_max_f32",
        (true, Sum, U32) => "reduce_staged_sum_u32",
        (true, Min, U32) => "reduce_staged_min_u32",
        (true, Max, U32) => "reduce_staged_max_u32",
    }
}

/// Every reduce entry point in the image, as `(name, op, dtype, staged)`.
pub fn entries() -> impl Iterator<Item = (&'static str, ReduceOp, Dtype, bool)> {
    [false, true].into_iter().flat_map(|staged| {
        ReduceOp::ALL.into_iter().flat_map(move |op| {
            Dtype::ALL.into_iter().map(move |dtype| (entry_name(op, dtype, staged), op, dtype, staged))
        })
    })
}

/// An associative operator with an identity, over one element type. The host's CPU
/// reference uses the same definitions, so "min of f32" means the same on both sides
/// (`f32::min`: a NaN operand is ignored; a sum propagates NaN).
pub trait Combine<T: Copy> {
    fn identity() -> T;
    fn combine(a: T, b: T) -> T;
}

pub struct Sum;
pub struct Min;
pub struct Max;

impl Combine<f32> for Sum {
    #[inline(always)]
    fn identity() -> f32 {
        0.0
    }
    #[inline(always)]
    fn combine(a: f32, b: f32) -> f32 {
        a + b
    }
}
impl Combine<u32> for Sum {
    #[inline(always)]
    fn identity() -> u32 {
        0
    }
    /// Sums of `u32` wrap (modulo 2^32), on every backend.
    #[inline(always)]
    fn combine(a: u32, b: u32) -> u32 {
        a.wrapping_add(b)
    }
}
impl Combine<f32> for Min {
    #[inline(always)]
    fn identity() -> f32 {
        f32::INFINITY
    }
    #[inline(always)]
    fn combine(a: f32, b: f32) -> f32 {
        a.min(b)
    }
}
impl Combine<u32> for Min {
    #[inline(always)]
    fn identity() -> u32 {
        u32::MAX
    }
    #[inline(always)]
    fn combine(a: u32, b: u32) -> u32 {
        a.min(b)
    }
}
impl Combine<f32> for Max {
    #[inline(always)]
    fn identity() -> f32 {
        f32::NEG_INFINITY
    }
    #[inline(always)]
    fn combine(a: f32, b: f32) -> f32 {
        a.max(b)
    }
}
impl Combine<u32> for Max {
    #[inline(always)]
    fn identity() -> u32 {
        0
    }
    #[inline(always)]
    fn combine(a: u32, b: u32) -> u32 {
        a.max(b)
    }
}

use crate::gpu::{self, SharedArray};
use crate::vector::Vec4;

#[inline(always)]
fn fold4<T: Copy, Op: Combine<T>>(v: Vec4<T>) -> T {
    Op::combine(Op::combine(v.0[0], v.0[1]), Op::combine(v.0[2], v.0[3]))
}

/// One pass; see the module documentation for the mapping.
///
/// # Contract
/// `input` holds `n` elements, `partials` holds `grid_dim_x()` elements, and the
/// launch gave at least the layout's bytes (checked: the kernel traps otherwise).
#[inline(always)]
pub fn reduce<T: Copy, Op: Combine<T>, const STAGED: bool>(
    input: *const T,
    partials: *mut T,
    n: u64,
    items_per_thread: u32,
) {
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let bid = gpu::block_idx_x();
    let grid = gpu::grid_dim_x();
    let ipt = items_per_thread;

    let Some(chunk_len) = block.checked_mul(ipt) else { gpu::trap() };
    let tile_len = if STAGED { chunk_len } else { 0 };
    let layout = match ReduceLayout::new::<T>(block, tile_len) {
        Ok(l) => l,
        Err(_) => gpu::trap(),
    };
    let region = gpu::launch_region(layout.bytes);
    let mut carve = Carve::new();
    let tile: SharedArray<T> = region.array(match carve.array_aligned(tile_len, 16) {
        Ok(s) => s,
        Err(_) => gpu::trap(),
    });
    let scratch: SharedArray<T> = region.array(match carve.array(block) {
        Ok(s) => s,
        Err(_) => gpu::trap(),
    });

    let chunk = chunk_len as u64;
    let n_chunks = n.div_ceil(chunk);
    let vectors = ipt / 4;
    let vec_ok = (input as usize).is_multiple_of(16);
    let mut acc = Op::identity();

    let mut c = bid as u64;
    while c < n_chunks {
        let start = c * chunk;
        let base = unsafe { input.add(start as usize) };
        if start + chunk <= n {
            if STAGED {
                stage_chunk(base, tile, block, tid, ipt, vec_ok);
                gpu::barrier();
                let mut k = 0;
                while k < ipt {
                    acc = Op::combine(acc, unsafe { tile.read(k * block + tid) });
                    k += 1;
                }
                // The next chunk overwrites the tile.
                gpu::barrier();
            } else if vec_ok {
                let v = base as *const Vec4<T>;
                let mut k = 0;
                // Four independent 16-byte loads in flight per thread.
                while k + 4 <= vectors {
                    let (a, b, c2, d) = unsafe {
                        (
                            gpu::read_global(v.add((k * block + tid) as usize)),
                            gpu::read_global(v.add(((k + 1) * block + tid) as usize)),
                            gpu::read_global(v.add(((k + 2) * block + tid) as usize)),
                            gpu::read_global(v.add(((k + 3) * block + tid) as usize)),
                        )
                    };
                    let ab = Op::combine(fold4::<T, Op>(a), fold4::<T, Op>(b));
                    let cd = Op::combine(fold4::<T, Op>(c2), fold4::<T, Op>(d));
                    acc = Op::combine(acc, Op::combine(ab, cd));
                    k += 4;
                }
                while k < vectors {
                    acc = Op::combine(
                        acc,
                        fold4::<T, Op>(unsafe { gpu::read_global(v.add((k * block + tid) as usize)) }),
                    );
                    k += 1;
                }
                let rest = unsafe { base.add((vectors * 4 * block) as usize) };
                let mut k = 0;
                while k < ipt % 4 {
                    acc = Op::combine(acc, unsafe { gpu::read_global(rest.add((k * block + tid) as usize)) });
                    k += 1;
                }
            } else {
                let mut k = 0;
                while k < ipt {
                    acc = Op::combine(acc, unsafe { gpu::read_global(base.add((k * block + tid) as usize)) });
                    k += 1;
                }
            }
        } else {
            // The last, partial chunk: element-wise with bounds checks. Staged kernels
            // read it directly too: it is at most one chunk of the whole input.
            let rem = n - start;
            let mut k = 0;
            while k < ipt {
                let i = k as u64 * block as u64 + tid as u64;
                if i < rem {
                    acc = Op::combine(acc, unsafe { gpu::read_global(base.add(i as usize)) });
                }
                k += 1;
            }
        }
        c += grid as u64;
    }

    unsafe {
        scratch.write(tid, acc);
        gpu::barrier();
        let mut active = block;
        while active > 1 {
            let half = active.div_ceil(2);
            if tid + half < active {
                scratch.write(tid, Op::combine(scratch.read(tid), scratch.read(tid + half)));
            }
            gpu::barrier();
            active = half;
        }
        if tid == 0 {
            gpu::write_global(partials.add(bid as usize), scratch.read(0));
        }
    }
}

/// Copies one full chunk into the tile with the same mapping as the direct path.
#[inline(always)]
fn stage_chunk<T: Copy>(base: *const T, tile: SharedArray<T>, block: u32, tid: u32, ipt: u32, vec_ok: bool) {
    let mut first_scalar = 0;
    if vec_ok {
        let vectors = ipt / 4;
        let src = base as *const Vec4<T>;
        // SAFETY: the tile is carved 16-byte aligned.
        let dst: SharedArray<Vec4<T>> = unsafe { tile.cast() };
        let mut k = 0;
        while k < vectors {
            let i = k * block + tid;
            // Rebuilt element-wise: a plain struct copy is lowered as two 8-byte moves;
            // four scalars with the 16-byte-aligned store become one `st.shared.v4`.
            let v = unsafe { gpu::read_global(src.add(i as usize)) }.0;
            unsafe { dst.write(i, Vec4([v[0], v[1], v[2], v[3]])) };
            k += 1;
        }
        first_scalar = vectors * 4 * block;
    }
    let mut i = first_scalar + tid;
    let end = block * ipt;
    while i < end {
        unsafe { tile.write(i, gpu::read_global(base.add(i as usize))) };
        i += block;
    }
}

crate::kernels! { KERNELS;
    /// Sum of `n` f32; see the module documentation.
    pub fn reduce_sum_f32(input: *const f32, partials: *mut f32, n: u64, items_per_thread: u32) {
        reduce::<f32, Sum, false>(input, partials, n, items_per_thread)
    }
    /// Minimum of `n` f32 (NaN operands ignored).
    pub fn reduce_min_f32(input: *const f32, partials: *mut f32, n: u64, items_per_thread: u32) {
        reduce::<f32, Min, false>(input, partials, n, items_per_thread)
    }
    /// Maximum of `n` f32 (NaN operands ignored).
    pub fn reduce_max_f32(input: *const f32, partials: *mut f32, n: u64, items_per_thread: u32) {
        reduce::<f32, Max, false>(input, partials, n, items_per_thread)
    }
    /// Sum of `n` u32, modulo 2^32.
    pub fn reduce_sum_u32(input: *const u32, partials: *mut u32, n: u64, items_per_thread: u32) {
        reduce::<u32, Sum, false>(input, partials, n, items_per_thread)
    }
    /// Minimum of `n` u32.
    pub fn reduce_min_u32(input: *const u32, partials: *mut u32, n: u64, items_per_thread: u32) {
        reduce::<u32, Min, false>(input, partials, n, items_per_thread)
    }
    /// Maximum of `n` u32.
    pub fn reduce_max_u32(input: *const u32, partials: *mut u32, n: u64, items_per_thread: u32) {
        reduce::<u32, Max, false>(input, partials, n, items_per_thread)
    }
    /// Sum of `n` f32, each chunk staged through the launch-sized tile.
    pub fn reduce_staged_sum_f32(input: *const f32, partials: *mut f32, n: u64, items_per_thread: u32) {
        reduce::<f32, Sum, true>(input, partials, n, items_per_thread)
    }
    /// Minimum of `n` f32, staged.
    pub fn reduce_staged_min_f32(input: *const f32, partials: *mut f32, n: u64, items_per_thread: u32) {
        reduce::<f32, Min, true>(input, partials, n, items_per_thread)
    }
    /// Maximum of `n` f32, staged.
    pub fn reduce_staged_max_f32(input: *const f32, partials: *mut f32, n: u64, items_per_thread: u32) {
        reduce::<f32, Max, true>(input, partials, n, items_per_thread)
    }
    /// Sum of `n` u32 modulo 2^32, staged.
    pub fn reduce_staged_sum_u32(input: *const u32, partials: *mut u32, n: u64, items_per_thread: u32) {
        reduce::<u32, Sum, true>(input, partials, n, items_per_thread)
    }
    /// Minimum of `n` u32, staged.
    pub fn reduce_staged_min_u32(input: *const u32, partials: *mut u32, n: u64, items_per_thread: u32) {
        reduce::<u32, Min, true>(input, partials, n, items_per_thread)
    }
    /// Maximum of `n` u32, staged.
    pub fn reduce_staged_max_u32(input: *const u32, partials: *mut u32, n: u64, items_per_thread: u32) {
        reduce::<u32, Max, true>(input, partials, n, items_per_thread)
    }
}
