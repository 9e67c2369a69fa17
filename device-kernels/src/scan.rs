//! Exclusive prefix sum of `n` `f32` or `u32` (`u32` sums wrap), in one pass with
//! decoupled look-back.
//!
//! # Algorithm
//! Each block takes the next tile of `T = block * items_per_thread` elements from a global
//! counter (so tile `i - 1` always belongs to a block that already runs: no block waits on
//! one that has not started). It loads the tile into launch-sized shared memory; thread
//! `t` sums its `items_per_thread` consecutive elements; a shared-memory scan over the
//! threads gives each its offset and the tile's aggregate. Thread 0 publishes the
//! aggregate in the tile's status word; then the first 32 threads read the status words
//! of the 32 preceding tiles at once (one round trip per 32 predecessors, instead of one
//! per predecessor), thread 0 adds their values up to the nearest inclusive prefix (or
//! reads the window again if one is not published yet), and the walk moves 32 tiles back
//! until it meets a prefix. The tile publishes its own inclusive prefix and is written
//! back with the prefix added. Input and output each cross device memory once.
//!
//! Status words (`u64`, zeroed before the launch) hold a flag (1 = aggregate, 2 =
//! inclusive prefix) in the high half and the value's bits in the low half. A look-back
//! that spins for 2^26 rounds traps rather than hang the GPU.
//!
//! The shared tile is padded (one float per 32) so the strided per-thread accesses spread
//! over the banks.
//!
//! # Launch-sized memory ([`ScanConfig::layout`])
//! `tile`: `T` elements plus padding; `scratch`: `block` elements; `window`: 32 status
//! words; `misc`: 4 `u32`.
//!
//! # Entry points
//! `scan_exclusive_f32`, `scan_exclusive_u32`, each `(input, output, n: u64,
//! status: *mut u64, counter: *mut u32, items_per_thread: u32)`, launched with
//! `grid = ceil(n / T)` (at least 1) blocks.

use crate::gpu::{self, SharedArray};
use crate::layout::{Carve, LayoutError, Slice};

/// Status flags of a tile.
pub const FLAG_AGGREGATE: u64 = 1;
pub const FLAG_PREFIX: u64 = 2;
/// Look-back rounds before a block gives up and traps.
pub const MAX_SPIN: u32 = 1 << 26;
/// Predecessors whose status words one look-back round reads.
pub const WINDOW: u32 = 32;

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScanConfig {
    pub block: u32,
    pub items_per_thread: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanLayout {
    pub tile: Slice<u32>,
    pub scratch: Slice<u32>,
    pub window: Slice<u64>,
    pub misc: Slice<u32>,
    pub bytes: u32,
}

/// Index of tile element `i` in the padded shared tile.
#[inline(always)]
pub fn padded(i: u32) -> u32 {
    i + i / 32
}

impl ScanConfig {
    /// Elements per tile.
    pub fn tile(&self) -> Option<u32> {
        self.block.checked_mul(self.items_per_thread)
    }

    /// The carve (the element type is 4 bytes, f32 or u32).
    pub fn layout(&self) -> Result<ScanLayout, LayoutError> {
        let overflow = LayoutError::Overflow { offset: 0, len: self.block, elem_bytes: 4 };
        let t = self.tile().ok_or(overflow)?;
        // Checked here: padded wraps (or panics) near u32::MAX.
        let tile_len = t.checked_add(t / 32).and_then(|p| p.checked_add(1)).ok_or(overflow)?;
        let mut carve = Carve::new();
        let tile = carve.array::<u32>(tile_len)?;
        let scratch = carve.array::<u32>(self.block)?;
        let window = carve.array::<u64>(WINDOW)?;
        let misc = carve.array::<u32>(4)?;
        Ok(ScanLayout { tile, scratch, window, misc, bytes: carve.bytes() })
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

/// # Safety
/// `input`/`output` hold `n` elements, `status` holds `tiles(n)` zeroed words, `counter`
/// is zero; the launch has `tiles(n)` blocks and the layout's bytes.
#[inline(always)]
unsafe fn scan<T: ScanElement>(
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
    let Ok(l) = cfg.layout() else { gpu::trap() };
    let region = gpu::launch_region(l.bytes);
    let tile: SharedArray<T> = unsafe { region.array(l.tile).cast() };
    let scratch: SharedArray<T> = unsafe { region.array(l.scratch).cast() };
    let window: SharedArray<u64> = region.array(l.window);
    let misc: SharedArray<u32> = region.array(l.misc);
    let per_tile = block * ipt;

    if tid == 0 {
        unsafe { misc.write(0, gpu::atomic_add_global_u32(counter, 1)) };
    }
    gpu::barrier();
    let t = unsafe { misc.read(0) } as u64;
    let start = t * per_tile as u64;

    let load = |i: u32| {
        let g = start + i as u64;
        if g < n { unsafe { input.add(g as usize).read() } } else { T::ZERO }
    };
    unsafe { crate::stage::stage(tile, per_tile, tid, block, padded, load) };
    gpu::barrier();

    let first = tid * ipt;
    let mut local = T::ZERO;
    let mut j = 0;
    while j < ipt {
        local = local.add(unsafe { tile.read(padded(first + j)) });
        j += 1;
    }
    // Inclusive scan of the threads' sums (Hillis-Steele).
    unsafe { scratch.write(tid, local) };
    gpu::barrier();
    let mut d = 1;
    while d < block {
        let v = if tid >= d {
            unsafe { scratch.read(tid - d).add(scratch.read(tid)) }
        } else {
            unsafe { scratch.read(tid) }
        };
        gpu::barrier();
        unsafe { scratch.write(tid, v) };
        gpu::barrier();
        d *= 2;
    }
    let before_me = if tid > 0 { unsafe { scratch.read(tid - 1) } } else { T::ZERO };

    let aggregate = unsafe { scratch.read(block - 1) };
    let word = |flag: u64, v: T| (flag << 32) | v.to_bits() as u64;
    if tid == 0 {
        let first = if t == 0 { FLAG_PREFIX } else { FLAG_AGGREGATE };
        unsafe { gpu::store_release_u64(status.add(t as usize), word(first, aggregate)) };
        // misc[1]: the exclusive prefix so far; misc[2]: done; misc[3]: nearest tile of the window.
        unsafe {
            misc.write(1, T::ZERO.to_bits());
            misc.write(2, (t == 0) as u32);
            misc.write(3, t.saturating_sub(1) as u32);
        }
    }
    gpu::barrier();
    let mut rounds = 0u32;
    while unsafe { misc.read(2) } == 0 {
        let nearest = unsafe { misc.read(3) };
        // Strided, so blocks of fewer than WINDOW threads fill the whole window too.
        let mut i = tid;
        while i < WINDOW {
            // Past tile 0 the window reads as an inclusive prefix of zero.
            let w = if i <= nearest {
                unsafe { gpu::load_acquire_u64(status.add((nearest - i) as usize)) }
            } else {
                word(FLAG_PREFIX, T::ZERO)
            };
            unsafe { window.write(i, w) };
            i += block;
        }
        gpu::barrier();
        if tid == 0 {
            let mut sum = T::ZERO;
            let mut ready = true;
            let mut found = false;
            let mut i = 0;
            while i < WINDOW {
                let s = unsafe { window.read(i) };
                let flag = s >> 32;
                if flag == 0 {
                    ready = false;
                    break;
                }
                sum = sum.add(T::from_bits(s as u32));
                if flag == FLAG_PREFIX {
                    found = true;
                    break;
                }
                i += 1;
            }
            if ready {
                let so_far = T::from_bits(unsafe { misc.read(1) });
                unsafe { misc.write(1, so_far.add(sum).to_bits()) };
                if found {
                    unsafe { misc.write(2, 1) };
                } else {
                    unsafe { misc.write(3, nearest - WINDOW) };
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
        unsafe { gpu::store_release_u64(status.add(t as usize), word(FLAG_PREFIX, prefix.add(aggregate))) };
    }
    let prefix = T::from_bits(unsafe { misc.read(1) });

    let mut running = prefix.add(before_me);
    let mut j = 0;
    while j < ipt {
        let k = padded(first + j);
        let v = unsafe { tile.read(k) };
        unsafe { tile.write(k, running) };
        running = running.add(v);
        j += 1;
    }
    gpu::barrier();
    let mut i = tid;
    while i < per_tile {
        let g = start + i as u64;
        if g < n {
            unsafe { output.add(g as usize).write(tile.read(padded(i))) };
        }
        i += block;
    }
}

crate::kernels! { KERNELS;
    /// Exclusive prefix sum of f32; see the module documentation.
    pub fn scan_exclusive_f32(input: *const f32, output: *mut f32, n: u64, status: *mut u64, counter: *mut u32, items_per_thread: u32) {
        unsafe { scan::<f32>(input, output, n, status, counter, items_per_thread) }
    }
    /// Exclusive prefix sum of u32 (modulo 2^32); see the module documentation.
    pub fn scan_exclusive_u32(input: *const u32, output: *mut u32, n: u64, status: *mut u64, counter: *mut u32, items_per_thread: u32) {
        unsafe { scan::<u32>(input, output, n, status, counter, items_per_thread) }
    }
}
