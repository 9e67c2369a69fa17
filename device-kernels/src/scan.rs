//! Exclusive prefix sum of `n` `f32` or `u32` (`u32` sums wrap), in one pass with
//! decoupled look-back.
//!
//! # Algorithm
//! Each block takes the next tile of `T = block * items_per_thread` elements from a global
//! counter (so tile `i - 1` always belongs to a block that already runs: no block waits on
//! one that has not started). It loads the tile into launch-sized shared memory as 16-byte
//! vectors; thread `t` sums its `items_per_thread` consecutive elements (read back as
//! vectors). The threads' sums are scanned by raking: the first [`RAKE`] threads each sum
//! a contiguous run of them, thread 0 scans those partial sums, and the raking threads
//! write the runs' exclusive prefixes back: four barriers for any block size (a
//! Hillis-Steele scan takes two per doubling). Thread 0 publishes the tile's aggregate in
//! its status word as soon as it has it, and every thread writes its elements' exclusive
//! prefixes within the tile back to the tile. Then the block looks back: the first
//! [`WINDOW`] threads load the status words of the [`WINDOW`] preceding tiles at once (one
//! round trip per window), thread 0 adds their values up to the nearest inclusive prefix
//! (or has the window read again if one is not published yet), and the window moves back
//! until it meets a prefix. Thread 0 publishes the tile's inclusive prefix, and the tile is
//! written out, as vectors, with the prefix added. Input and output each cross device
//! memory once; tiles inside the input are copied to shared memory asynchronously
//! (`cp.async`), all of a thread's vectors in flight at once.
//!
//! Status words (`u64`, zeroed before the launch) hold a flag (1 = aggregate, 2 =
//! inclusive prefix) in the high half and the value's bits in the low half. A look-back
//! that spins for 2^26 rounds traps rather than hang the GPU.
//!
//! `items_per_thread` is a multiple of 4 (whole vectors). Thread `t` reads vectors `t * ipt
//! / 4 ..`: at strides of 2, 4 or 8 vectors a quarter-warp's 16-byte reads would land on
//! the same banks, so the tile is stored swizzled ([`tile_vec`]), which costs no memory.
//!
//! # Launch-sized memory ([`ScanConfig::layout`])
//! `tile`: `T / 4` vectors; `scratch`: `block` elements; `rake`: [`RAKE`] elements;
//! `window`: [`WINDOW`] status words; `misc`: 4 `u32`.
//!
//! # Entry points
//! `scan_exclusive_f32`, `scan_exclusive_u32`, each `(input, output, n: u64,
//! status: *mut u64, counter: *mut u32, items_per_thread: u32)`, launched with
//! `grid = ceil(n / T)` (at least 1) blocks.

use crate::gpu::{self, SharedArray};
use crate::layout::{Carve, LayoutError, Slice};
use crate::vector::{self, Vec4};

/// Status flags of a tile.
pub const FLAG_AGGREGATE: u64 = 1;
pub const FLAG_PREFIX: u64 = 2;
/// Look-back rounds before a block gives up and traps.
pub const MAX_SPIN: u32 = 1 << 26;
/// Predecessors whose status words one look-back round reads, one per thread of the
/// first warp, all in flight at once: the nearest published prefix is often tens of tiles
/// back (every tile in flight publishes its prefix only after its own look-back).
pub const WINDOW: u32 = 32;
/// Threads that rake the per-thread sums.
pub const RAKE: u32 = 32;

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScanConfig {
    pub block: u32,
    pub items_per_thread: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanLayout {
    pub tile: Slice<Vec4<u32>>,
    /// `block` elements as vectors, so that raking threads read their runs as vectors.
    pub scratch: Slice<Vec4<u32>>,
    pub rake: Slice<Vec4<u32>>,
    pub window: Slice<u64>,
    pub misc: Slice<u32>,
    pub bytes: u32,
}

/// Where tile vector `v` is stored: the low three bits of its index XOR the next three, so
/// that any 8 consecutive vectors, and 8 vectors 2, 4 or 8 apart, fall in 8 different bank
/// groups. A permutation within each aligned group of 8 vectors (the tile needs no padding).
#[inline(always)]
pub fn tile_vec(v: u32) -> u32 {
    v ^ ((v >> 3) & 7)
}

impl ScanConfig {
    /// Elements per tile.
    pub fn tile(&self) -> Option<u32> {
        self.block.checked_mul(self.items_per_thread)
    }

    /// Whether the kernel can run this config: items per thread a positive multiple of 4.
    pub fn fits(&self) -> bool {
        self.block > 0 && self.items_per_thread > 0 && self.items_per_thread.is_multiple_of(4)
    }

    /// The carve (the element type is 4 bytes, f32 or u32).
    pub fn layout(&self) -> Result<ScanLayout, LayoutError> {
        let overflow = LayoutError::Overflow { offset: 0, len: self.block, elem_bytes: 4 };
        let t = self.tile().ok_or(overflow)?;
        let mut carve = Carve::new();
        // A whole group of 8, which tile_vec permutes within.
        let tile = carve.array::<Vec4<u32>>(t.div_ceil(4).next_multiple_of(8))?;
        let scratch = carve.array::<Vec4<u32>>(self.block.div_ceil(4))?;
        let rake = carve.array::<Vec4<u32>>(RAKE / 4)?;
        let window = carve.array::<u64>(WINDOW)?;
        let misc = carve.array::<u32>(4)?;
        Ok(ScanLayout { tile, scratch, rake, window, misc, bytes: carve.bytes() })
    }

    pub fn shared_bytes(&self) -> Result<u32, LayoutError> {
        Ok(self.layout()?.bytes)
    }

    /// Tiles, and so blocks, for `n` elements.
    pub fn tiles(&self, n: u64) -> u64 {
        n.div_ceil(self.tile().unwrap_or(1).max(1) as u64).max(1)
    }
}

/// The element types scan runs on: addition and the bits a status word carries.
pub trait ScanElement: Copy {
    const ZERO: Self;
    fn add(self, other: Self) -> Self;
    fn to_bits(self) -> u32;
    fn from_bits(bits: u32) -> Self;
}

impl ScanElement for f32 {
    const ZERO: f32 = 0.0;
    #[inline(always)]
    fn add(self, other: f32) -> f32 {
        self + other
    }
    #[inline(always)]
    fn to_bits(self) -> u32 {
        f32::to_bits(self)
    }
    #[inline(always)]
    fn from_bits(bits: u32) -> f32 {
        f32::from_bits(bits)
    }
}

impl ScanElement for u32 {
    const ZERO: u32 = 0;
    #[inline(always)]
    fn add(self, other: u32) -> u32 {
        self.wrapping_add(other)
    }
    #[inline(always)]
    fn to_bits(self) -> u32 {
        self
    }
    #[inline(always)]
    fn from_bits(bits: u32) -> u32 {
        bits
    }
}

/// # Contract
/// `input`/`output` hold `n` elements, `status` holds `tiles(n)` zeroed words, `counter`
/// is zero; the launch has `tiles(n)` blocks and the layout's bytes.
#[inline(always)]
fn scan<T: ScanElement>(
    input: *const T,
    output: *mut T,
    n: u64,
    status: *mut u64,
    counter: *mut u32,
    items_per_thread: u32,
) {
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let ipt = items_per_thread;
    let cfg = ScanConfig { block, items_per_thread: ipt };
    if !cfg.fits() {
        gpu::trap();
    }
    let Ok(l) = cfg.layout() else { gpu::trap() };
    let region = gpu::launch_region(l.bytes);
    let tile: SharedArray<Vec4<T>> = unsafe { region.array(l.tile).cast() };
    let scratch_v: SharedArray<Vec4<T>> = unsafe { region.array(l.scratch).cast() };
    let scratch: SharedArray<T> = unsafe { scratch_v.cast() };
    let rake_v: SharedArray<Vec4<T>> = unsafe { region.array(l.rake).cast() };
    let rake: SharedArray<T> = unsafe { rake_v.cast() };
    let window: SharedArray<u64> = region.array(l.window);
    let misc: SharedArray<u32> = region.array(l.misc);
    let per_tile = block * ipt;
    let (in_vec, out_vec) = (vector::is_aligned16(input), vector::is_aligned16(output));

    if tid == 0 {
        unsafe { misc.write(0, gpu::atomic_add_global_u32(counter, 1)) };
    }
    gpu::barrier();
    let t = unsafe { misc.read(0) } as u64;
    let start = t * per_tile as u64;
    // Tiles inside the input (all but the last) skip the per-vector bounds checks.
    let inside = in_vec && start + per_tile as u64 <= n;
    if inside {
        let src = unsafe { input.add(start as usize).cast::<Vec4<T>>() };
        crate::stage::stage_async(tile, src, per_tile / 4, tid, block, tile_vec);
    } else {
        let load = |v: u32| vector::load4(input, (start + 4 * v as u64) as i64, n, T::ZERO, in_vec);
        crate::stage::stage(tile, per_tile / 4, tid, block, tile_vec, load);
    }
    gpu::barrier();

    let first = tid * (ipt / 4);
    let mut local = T::ZERO;
    let mut j = 0;
    while j < ipt / 4 {
        let v = unsafe { tile.read(tile_vec(first + j)) };
        local = local.add(v.0[0].add(v.0[1]).add(v.0[2].add(v.0[3])));
        j += 1;
    }

    // Raking scan of the threads' sums: thread i < RAKE owns scratch[i*run .. (i+1)*run].
    unsafe { scratch.write(tid, local) };
    gpu::barrier();
    let run = block.div_ceil(RAKE);
    let (lo, hi) = ((tid * run).min(block), ((tid + 1) * run).min(block));
    // Runs of whole vectors are read and written as vectors.
    let run_vec = run.is_multiple_of(4) && block.is_multiple_of(4);
    if tid < RAKE {
        let mut sum = T::ZERO;
        if run_vec {
            let mut i = lo / 4;
            while i < hi / 4 {
                let v = unsafe { scratch_v.read(i) };
                sum = sum.add(v.0[0].add(v.0[1]).add(v.0[2].add(v.0[3])));
                i += 1;
            }
        } else {
            let mut i = lo;
            while i < hi {
                sum = sum.add(unsafe { scratch.read(i) });
                i += 1;
            }
        }
        unsafe { rake.write(tid, sum) };
    }
    gpu::barrier();
    if tid == 0 {
        // Exclusive scan of the runs (blocks of fewer than RAKE threads have fewer, the
        // rest read as zero); the total is the tile's aggregate, published at once.
        let mut aggregate = T::ZERO;
        for q in 0..(RAKE / 4) as usize {
            let v = unsafe { rake_v.read(q as u32) };
            let mut out = v;
            for e in 0..4 {
                let i = (4 * q + e) as u32;
                let x = if i < block { v.0[e] } else { T::ZERO };
                out.0[e] = aggregate;
                aggregate = aggregate.add(x);
            }
            unsafe { rake_v.write(q as u32, out) };
        }
        publish(status, t, aggregate);
        // The look-back's state: misc[1] the prefix so far, misc[2] done, misc[3] the
        // nearest tile of the next window; misc[0] keeps the aggregate from here on.
        unsafe {
            misc.write(0, aggregate.to_bits());
            misc.write(1, T::ZERO.to_bits());
            misc.write(2, (t == 0) as u32);
            misc.write(3, t.saturating_sub(1) as u32);
        }
    }
    gpu::barrier();
    if tid < RAKE {
        let mut running = unsafe { rake.read(tid) };
        if run_vec {
            let mut i = lo / 4;
            while i < hi / 4 {
                let v = unsafe { scratch_v.read(i) };
                let mut out = v;
                for e in 0..4 {
                    out.0[e] = running;
                    running = running.add(v.0[e]);
                }
                unsafe { scratch_v.write(i, out) };
                i += 1;
            }
        } else {
            let mut i = lo;
            while i < hi {
                let v = unsafe { scratch.read(i) };
                unsafe { scratch.write(i, running) };
                running = running.add(v);
                i += 1;
            }
        }
    }
    // Each thread's elements' exclusive prefixes within the tile.
    gpu::barrier();
    let mut running = unsafe { scratch.read(tid) };
    let mut j = 0;
    while j < ipt / 4 {
        let k = tile_vec(first + j);
        let v = unsafe { tile.read(k) };
        let mut out = v;
        for e in 0..4 {
            out.0[e] = running;
            running = running.add(v.0[e]);
        }
        unsafe { tile.write(k, out) };
        j += 1;
    }
    look_back::<T>(status, t, window, misc, tid, block);
    gpu::barrier();
    let prefix = T::from_bits(unsafe { misc.read(1) });
    let full = out_vec && start + per_tile as u64 <= n;
    let mut v = tid;
    while v < per_tile / 4 && start + 4 * (v as u64) < n {
        let mut x = unsafe { tile.read(tile_vec(v)) };
        for e in &mut x.0 {
            *e = prefix.add(*e);
        }
        let g = start + 4 * v as u64;
        if full {
            unsafe { gpu::write_global(output.add(g as usize).cast::<Vec4<T>>(), x) };
        } else {
            vector::store4(output, g, n, x, out_vec);
        }
        v += block;
    }
}

/// Publishes tile `t`'s `aggregate` (tile 0's is its inclusive prefix). One thread.
///
/// # Contract
/// `status` holds at least `t + 1` words.
#[inline(always)]
fn publish<T: ScanElement>(status: *mut u64, t: u64, aggregate: T) {
    let flag = if t == 0 { FLAG_PREFIX } else { FLAG_AGGREGATE };
    unsafe { gpu::store_release_u64(status.add(t as usize), (flag << 32) | aggregate.to_bits() as u64) };
}

/// Finds the sum of every tile before `t` by decoupled look-back (after [`publish`] and the
/// state set up in `misc`), leaves it in `misc[1]` and publishes `t`'s inclusive prefix.
/// Every thread of the block calls it (it has barriers): the first [`WINDOW`] threads load
/// the window of status words, thread 0 folds it.
///
/// # Contract
/// `status` holds at least `t + 1` words, zeroed before the launch; `misc` as set up by
/// the kernel.
#[inline(always)]
fn look_back<T: ScanElement>(
    status: *mut u64,
    t: u64,
    window: SharedArray<u64>,
    misc: SharedArray<u32>,
    tid: u32,
    block: u32,
) {
    let word = |flag: u64, v: T| (flag << 32) | v.to_bits() as u64;
    let mut rounds = 0u32;
    while unsafe { misc.read(2) } == 0 {
        let nearest = unsafe { misc.read(3) } as u64;
        // Strided, so blocks of fewer than WINDOW threads fill the whole window too; past
        // tile 0 the window reads as an inclusive prefix of zero.
        let mut i = tid;
        while i < WINDOW {
            let w = if i as u64 <= nearest {
                unsafe { gpu::load_acquire_u64(status.add((nearest - i as u64) as usize)) }
            } else {
                word(FLAG_PREFIX, T::ZERO)
            };
            unsafe { window.write(i, w) };
            i += block;
        }
        gpu::barrier();
        if tid == 0 {
            let (mut sum, mut ready, mut found) = (T::ZERO, true, false);
            let mut i = 0;
            while i < WINDOW && ready && !found {
                let s = unsafe { window.read(i) };
                let flag = s >> 32;
                if flag == 0 {
                    ready = false;
                } else {
                    sum = sum.add(T::from_bits(s as u32));
                    found = flag == FLAG_PREFIX;
                }
                i += 1;
            }
            if ready {
                let so_far = T::from_bits(unsafe { misc.read(1) });
                unsafe { misc.write(1, so_far.add(sum).to_bits()) };
                if found {
                    unsafe { misc.write(2, 1) };
                } else {
                    unsafe { misc.write(3, (nearest - WINDOW as u64) as u32) };
                }
            } else {
                rounds += 1;
                if rounds >= MAX_SPIN {
                    gpu::trap();
                }
            }
        }
        gpu::barrier();
    }
    if tid == 0 && t > 0 {
        let prefix = T::from_bits(unsafe { misc.read(1) });
        let aggregate = T::from_bits(unsafe { misc.read(0) });
        unsafe { gpu::store_release_u64(status.add(t as usize), word(FLAG_PREFIX, prefix.add(aggregate))) };
    }
}

crate::kernels! { KERNELS;
    /// Exclusive prefix sum of f32; see the module documentation.
    pub fn scan_exclusive_f32(input: *const f32, output: *mut f32, n: u64, status: *mut u64, counter: *mut u32, items_per_thread: u32) {
        scan::<f32>(input, output, n, status, counter, items_per_thread)
    }
    /// Exclusive prefix sum of u32 (modulo 2^32); see the module documentation.
    pub fn scan_exclusive_u32(input: *const u32, output: *mut u32, n: u64, status: *mut u64, counter: *mut u32, items_per_thread: u32) {
        scan::<u32>(input, output, n, status, counter, items_per_thread)
    }
}
