//! Memory probes: microbenchmarks of workgroup memory, distributed shared memory, device
//! memory, atomics and fences, each sized at launch (`dynsmem probe`).
//!
//! Every probe writes, per block, [`TIMING_WORDS`] words to its `timing` argument: the
//! block's [`micro::clock`] difference over its timed loop (low and high halves) and a
//! result that depends on every access (a chase's last index), so the loop cannot be
//! dropped and the CPU backend can check it. The host turns cycles into a latency (chases)
//! or a rate (the loops that many threads run), and device time into GB/s.
//!
//! # Entry points and what each times
//! - `probe_shared_chase(next, n, steps, timing)`: the block copies the ring `next` (`n`
//!   indices) into its launch-sized region; thread 0 follows it `steps` times
//!   (`j = ring[j]`, one dependent load each): workgroup-memory latency.
//! - `probe_shared_stride(sums, stride, width, iters, timing)`: every thread reads, `iters`
//!   times, [`STRIDE_UNROLL`] elements of `width` bytes at element `lane * stride + k * 32 *
//!   stride` (`lane = tid % 32`): one warp request touches the banks `stride` apart. The
//!   region holds [`StrideConfig::elements`] elements, word `i` holding [`word_value`]`(i)`;
//!   `sums[gid]` is the thread's sum of what it read. Cycles per warp request, against
//!   stride, show the 32-bank structure.
//! - `probe_global_chase(next, n, steps, hint, cursor, timing)`: block 0 first reads all `n`
//!   words of `next` (a multiple of 4) with the load of [`CacheHint`] `hint` (a working set
//!   that fits a cache is then in it), then its thread 0 follows the ring `next` `steps`
//!   times with that load from `cursor[0]`, and leaves where it stopped there: successive
//!   launches chase lines not chased recently, so a working set past the L2 misses it even
//!   where the L2 keeps a small hot set through a streaming read. Latency by working-set
//!   size (the host draws the ring over 128-byte lines).
//! - `probe_global_read(src, n, hint, width, sums, timing)`: a grid-stride read of `n` words
//!   (a multiple of 4, `src` 16-byte aligned) in loads of `width` bytes (4, 8, 16) with
//!   `hint`, four independent loads in flight per thread; `sums[gid]` is the thread's
//!   wrapping sum of the words it read: bandwidth by width and hint.
//! - `probe_atomics(target, op, space, mode, iters, tries, timing)`: every thread applies
//!   [`AtomicOp`] `op` `iters` times to a word chosen by [`Contention`] `mode`, in
//!   workgroup memory (`space` 0: by its index in the block, the block's words merged into
//!   `target` at the end) or in device memory (`space` 1: by its index in the grid, on
//!   `target` itself); `tries[gid]` counts compare-and-swap attempts.
//! - `probe_fence(slots, scope, iters, timing)`: every thread stores to its slot and fences
//!   with [`FenceScope`] `scope`, `iters` times.
//! - `probe_dsmem_chase_c{2,4}(next, n, steps, timing)` and `probe_dsmem_read_c{2,4}(sums,
//!   words, iters, timing)`: clusters of 2 or 4 blocks; each block fills its region, then
//!   reads the region of the next block of its cluster (rank + 1) through cluster
//!   addresses: a chase (latency) and a 16-byte read of every thread (bandwidth).

use crate::gpu::micro::{self, AtomicOp, CacheHint, FenceScope, HintedLoad};
use crate::gpu::{self, SharedArray};
use crate::layout::{Carve, LayoutError, Slice};
use crate::vector::{Vec2, Vec4};

/// Words each block writes to `timing`: cycles (low, high) and a result.
pub const TIMING_WORDS: u32 = 3;
/// Loads per iteration of the stride probe (independent, at constant offsets).
pub const STRIDE_UNROLL: u32 = 8;
/// The access widths in bytes the width sweeps take.
pub const WIDTHS: [u32; 5] = [1, 2, 4, 8, 16];

/// The value word `i` of the stride and cluster-read probes' regions holds: distinct,
/// with every byte varying, so a read of the wrong element changes the sum.
#[inline(always)]
pub const fn word_value(i: u32) -> u32 {
    i.wrapping_mul(0x9E37_79B9) ^ (i >> 3)
}

/// Which words the threads of the atomics probe hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Contention {
    /// Every thread on word 0.
    OneWord = 0,
    /// Lane `l` of every warp on word `32 * l`: one bank, a different word per lane.
    OneBank = 1,
    /// Thread `t` on word `t`: no two threads of a block on one word.
    Spread = 2,
}

impl Contention {
    pub const ALL: [Contention; 3] = [Contention::OneWord, Contention::OneBank, Contention::Spread];
    pub const fn from_u32(v: u32) -> Option<Contention> {
        match v {
            0 => Some(Contention::OneWord),
            1 => Some(Contention::OneBank),
            2 => Some(Contention::Spread),
            _ => None,
        }
    }
    /// Words the probe's array holds for `threads` threads (a block's in workgroup memory,
    /// the grid's in device memory).
    pub const fn words(self, threads: u32) -> u32 {
        match self {
            Contention::OneWord => 1,
            Contention::OneBank => 32 * 32,
            Contention::Spread => threads,
        }
    }
    /// The word the thread of index `t` (in the block, or in the grid) hits.
    #[inline(always)]
    pub const fn word(self, t: u32) -> u32 {
        match self {
            Contention::OneWord => 0,
            Contention::OneBank => (t % 32) * 32,
            Contention::Spread => t,
        }
    }
}

/// The launch-sized bytes of a chase over a ring of `n` words (shared and cluster chases).
pub fn chase_bytes(n: u32) -> Result<u32, LayoutError> {
    Ok(Carve::new().array::<u32>(n)?.bytes())
}

/// The stride probe's shape: `stride` elements between lanes, `width`-byte elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StrideConfig {
    pub stride: u32,
    pub width: u32,
}

impl StrideConfig {
    /// Elements the region holds: every offset `lane * stride + k * 32 * stride` with
    /// `lane < 32`, `k <` [`STRIDE_UNROLL`].
    pub const fn elements(&self) -> u32 {
        32 * STRIDE_UNROLL * self.stride
    }
    /// The region as 32-bit words (16-byte aligned, whole 16-byte vectors).
    pub fn layout(&self) -> Result<Slice<u32>, LayoutError> {
        let bytes = self.elements().checked_mul(self.width).ok_or(LayoutError::Overflow {
            offset: 0,
            len: self.elements(),
            elem_bytes: self.width,
        })?;
        Carve::new().array_aligned::<u32>(bytes.div_ceil(16) * 4, 16)
    }
    pub fn shared_bytes(&self) -> Result<u32, LayoutError> {
        Ok(self.layout()?.bytes())
    }
}

/// The atomics probe's workgroup-memory words (0 bytes for device memory, `space` 1).
pub fn atomics_bytes(block: u32, space: u32, mode: Contention) -> Result<u32, LayoutError> {
    if space == 1 { Ok(0) } else { Ok(Carve::new().array::<u32>(mode.words(block))?.bytes()) }
}

/// The cluster read probe's region: `words` 32-bit words, whole 16-byte vectors.
pub fn dsmem_read_layout(words: u32) -> Result<Slice<Vec4<u32>>, LayoutError> {
    Carve::new().array_aligned::<Vec4<u32>>(words.div_ceil(4), 16)
}

/// Writes block `b`'s timing record.
///
/// # Safety
/// `timing` holds [`TIMING_WORDS`] words per block.
#[inline(always)]
unsafe fn record(timing: *mut u32, cycles: u64, result: u32) {
    let at = gpu::block_idx_x() as usize * TIMING_WORDS as usize;
    unsafe {
        gpu::write_global(timing.add(at), cycles as u32);
        gpu::write_global(timing.add(at + 1), (cycles >> 32) as u32);
        gpu::write_global(timing.add(at + 2), result);
    }
}

/// The ring `next[0..n]` copied into this block's region (every thread copies a share),
/// followed by a barrier.
///
/// # Safety
/// `next` holds `n` words; the launch gave [`chase_bytes`]`(n)`.
#[inline(always)]
unsafe fn load_ring(next: *const u32, n: u32) -> SharedArray<u32> {
    let Ok(slice) = Carve::new().array::<u32>(n) else { gpu::trap() };
    let ring: SharedArray<u32> = gpu::launch_region(slice.bytes()).array(slice);
    let mut i = gpu::thread_idx_x();
    while i < n {
        unsafe { ring.write(i, gpu::read_global(next.add(i as usize))) };
        i += gpu::block_dim_x();
    }
    gpu::barrier();
    ring
}

/// Thread 0 follows `ring` `steps` times from 0 and records the cycles and the last index.
///
/// # Safety
/// `ring` holds indices below its length; `timing` as for [`record`].
#[inline(always)]
unsafe fn shared_chase(ring: SharedArray<u32>, steps: u32, timing: *mut u32) {
    if gpu::thread_idx_x() != 0 {
        return;
    }
    let mut j = 0;
    let t0 = micro::clock();
    let mut s = 0;
    while s < steps {
        j = unsafe { ring.read(j) };
        s += 1;
    }
    let t1 = micro::clock();
    unsafe { record(timing, t1.wrapping_sub(t0), j) };
}

/// An element type of the stride probe.
trait Element: Copy {
    /// The sum of its 32-bit words (its value for 1- and 2-byte elements).
    fn sum(self) -> u32;
}
impl Element for u8 {
    #[inline(always)]
    fn sum(self) -> u32 {
        self as u32
    }
}
impl Element for u16 {
    #[inline(always)]
    fn sum(self) -> u32 {
        self as u32
    }
}
impl Element for u32 {
    #[inline(always)]
    fn sum(self) -> u32 {
        self
    }
}
impl Element for Vec2<u32> {
    #[inline(always)]
    fn sum(self) -> u32 {
        self.0[0].wrapping_add(self.0[1])
    }
}
impl Element for Vec4<u32> {
    #[inline(always)]
    fn sum(self) -> u32 {
        (self.0[0].wrapping_add(self.0[1])).wrapping_add(self.0[2].wrapping_add(self.0[3]))
    }
}

/// The stride probe's loop over `T` elements of the region (see the module documentation);
/// returns the thread's sum.
#[inline(always)]
fn stride_loop<T: Element>(words: SharedArray<u32>, stride: u32, iters: u32) -> u32 {
    // SAFETY: the region was carved 16-byte aligned.
    let elems: SharedArray<T> = unsafe { words.cast() };
    let base = (gpu::thread_idx_x() % 32) * stride;
    let step = 32 * stride;
    // Checked once: the unrolled loads stay in `base ..= base + (STRIDE_UNROLL - 1) * step`.
    let p = unsafe { elems.range_ptr(base, (STRIDE_UNROLL - 1) * step + 1) };
    let mut acc = 0u32;
    let mut i = 0;
    while i < iters {
        let mut k = 0;
        while k < STRIDE_UNROLL {
            // SAFETY: inside the range checked above.
            let v = unsafe { micro::shared_load_volatile(p.wrapping_add((k * step) as usize)) };
            acc = acc.wrapping_add(v.sum());
            k += 1;
        }
        i += 1;
    }
    acc
}

/// Calls `$f::<H>(..)` with the [`CacheHint`] `$hint` as a constant.
macro_rules! for_hint {
    ($hint:expr, $f:ident ( $($arg:expr),* )) => {
        match CacheHint::from_u32($hint) {
            Some(CacheHint::Default) => $f::<{ CacheHint::Default as u32 }>($($arg),*),
            Some(CacheHint::Global) => $f::<{ CacheHint::Global as u32 }>($($arg),*),
            Some(CacheHint::Streaming) => $f::<{ CacheHint::Streaming as u32 }>($($arg),*),
            Some(CacheHint::Volatile) => $f::<{ CacheHint::Volatile as u32 }>($($arg),*),
            Some(CacheHint::NonCoherent) => $f::<{ CacheHint::NonCoherent as u32 }>($($arg),*),
            None => gpu::trap(),
        }
    };
}

/// `steps` dependent hinted loads from index `j`; the index reached.
///
/// # Safety
/// `next` holds a ring: every index it holds is inside it.
#[inline(always)]
unsafe fn global_chase_steps<const H: u32>(next: *const u32, mut j: u32, steps: u32) -> u32 {
    let mut s = 0;
    while s < steps {
        j = unsafe { u32::load::<H>(next.add(j as usize)) };
        s += 1;
    }
    j
}

/// The block's read of the whole ring, then thread 0's timed chase (`probe_global_chase`).
///
/// # Safety
/// As [`global_chase_steps`], `next` holding `n` words (a multiple of 4), 16-byte aligned;
/// `cursor` one word, an index of the ring; `timing` as for [`record`].
#[inline(always)]
unsafe fn global_chase<const H: u32>(next: *const u32, n: u32, steps: u32, cursor: *mut u32, timing: *mut u32) {
    let lines = next as *const Vec4<u32>;
    let mut v = gpu::thread_idx_x();
    while v < n / 4 {
        // Kept although unused: the load is an `asm!` block.
        let _ = unsafe { Vec4::<u32>::load::<H>(lines.add(v as usize)) };
        v += gpu::block_dim_x();
    }
    gpu::barrier();
    if gpu::thread_idx_x() != 0 {
        return;
    }
    let start = unsafe { gpu::read_global(cursor) };
    let t0 = micro::clock();
    let j = unsafe { global_chase_steps::<H>(next, start, steps) };
    let t1 = micro::clock();
    unsafe {
        gpu::write_global(cursor, j);
        record(timing, t1.wrapping_sub(t0), j);
    }
}

/// This thread's wrapping sum of its grid-stride share of the `count` `T`s at `src`, four
/// independent loads per iteration.
///
/// # Safety
/// `src` holds `count` `T`s, aligned for `T`.
#[inline(always)]
unsafe fn global_read<T: HintedLoad, const H: u32>(src: *const T, count: u64) -> u32 {
    let stride = gpu::grid_dim_x() as u64 * gpu::block_dim_x() as u64;
    let mut i = gpu::block_idx_x() as u64 * gpu::block_dim_x() as u64 + gpu::thread_idx_x() as u64;
    let (mut a, mut b, mut c, mut d) = (0u32, 0u32, 0u32, 0u32);
    while i + 3 * stride < count {
        unsafe {
            a = a.wrapping_add(T::load::<H>(src.add(i as usize)).word_sum());
            b = b.wrapping_add(T::load::<H>(src.add((i + stride) as usize)).word_sum());
            c = c.wrapping_add(T::load::<H>(src.add((i + 2 * stride) as usize)).word_sum());
            d = d.wrapping_add(T::load::<H>(src.add((i + 3 * stride) as usize)).word_sum());
        }
        i += 4 * stride;
    }
    while i < count {
        a = a.wrapping_add(unsafe { T::load::<H>(src.add(i as usize)) }.word_sum());
        i += stride;
    }
    (a.wrapping_add(b)).wrapping_add(c.wrapping_add(d))
}

/// [`global_read`] of `n` words in `width`-byte loads.
///
/// # Safety
/// `src` holds `n` words (a multiple of 4), 16-byte aligned.
#[inline(always)]
unsafe fn global_read_width<const H: u32>(src: *const u32, n: u64, width: u32) -> u32 {
    unsafe {
        match width {
            4 => global_read::<u32, H>(src, n),
            8 => global_read::<Vec2<u32>, H>(src.cast(), n / 2),
            16 => global_read::<Vec4<u32>, H>(src.cast(), n / 4),
            _ => gpu::trap(),
        }
    }
}

/// Block-wide timing of `f`: a barrier, the clock, `f`, a barrier, the clock; thread 0
/// records the difference.
///
/// # Safety
/// `timing` as for [`record`].
#[inline(always)]
unsafe fn timed_block<R>(timing: *mut u32, f: impl FnOnce() -> R) -> R {
    gpu::barrier();
    let t0 = micro::clock();
    let r = f();
    gpu::barrier();
    let t1 = micro::clock();
    if gpu::thread_idx_x() == 0 {
        unsafe { record(timing, t1.wrapping_sub(t0), 0) };
    }
    r
}

/// `probe_atomics` (see the module documentation).
///
/// # Safety
/// `target` holds `mode.words(block)` words in workgroup memory, `mode.words(grid * block)`
/// in device memory (zeros for add and CAS, `u32::MAX` for min);
/// `tries` one word per thread; `timing` as for [`record`].
#[inline(always)]
unsafe fn atomics(target: *mut u32, op: u32, space: u32, mode: u32, iters: u32, tries: *mut u32, timing: *mut u32) {
    let (Some(op), Some(mode)) = (AtomicOp::from_u32(op), Contention::from_u32(mode)) else { gpu::trap() };
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let gid = gpu::block_idx_x() * block + tid;
    let init = if op == AtomicOp::Min { u32::MAX } else { 0 };
    // The value a min applies at step `i`: the final minimum depends on every thread.
    let value = |i: u32| if op == AtomicOp::Min { (iters - i).wrapping_add(gid) } else { 1 };
    let mut attempts = 0u32;
    if space == 1 {
        let word = mode.word(gid);
        unsafe {
            timed_block(timing, || {
                let mut i = 0;
                while i < iters {
                    attempts += micro::global_atomic(op, target.add(word as usize), value(i));
                    i += 1;
                }
            })
        };
    } else {
        let (words, word) = (mode.words(block), mode.word(tid));
        let Ok(bytes) = atomics_bytes(block, 0, mode) else { gpu::trap() };
        let Ok(slice) = Carve::new().array::<u32>(words) else { gpu::trap() };
        let counters: SharedArray<u32> = gpu::launch_region(bytes).array(slice);
        let mut w = tid;
        while w < words {
            unsafe { counters.write(w, init) };
            w += block;
        }
        // SAFETY: `word < words` for every mode and thread.
        let p = unsafe { counters.range_ptr(word, 1) };
        unsafe {
            timed_block(timing, || {
                let mut i = 0;
                while i < iters {
                    attempts += micro::shared_atomic(op, p, value(i));
                    i += 1;
                }
            })
        };
        // Merge into device memory: a CAS increment counted like an add.
        let merge = if op == AtomicOp::Min { AtomicOp::Min } else { AtomicOp::Add };
        let mut w = tid;
        while w < words {
            let v = unsafe { counters.read(w) };
            if v != init {
                unsafe { micro::global_atomic(merge, target.add(w as usize), v) };
            }
            w += block;
        }
    }
    unsafe { gpu::write_global(tries.add(gid as usize), attempts) };
}

/// `probe_fence` (see the module documentation).
///
/// # Safety
/// `slots` holds one word per thread; `timing` as for [`record`].
#[inline(always)]
unsafe fn fences(slots: *mut u32, scope: u32, iters: u32, timing: *mut u32) {
    let Some(scope) = FenceScope::from_u32(scope) else { gpu::trap() };
    let gid = gpu::block_idx_x() * gpu::block_dim_x() + gpu::thread_idx_x();
    let slot = unsafe { slots.add(gid as usize) };
    unsafe {
        timed_block(timing, || {
            let mut i = 0;
            while i < iters {
                micro::global_store_volatile(slot, i);
                micro::fence(scope);
                i += 1;
            }
        })
    };
    unsafe { micro::global_store_volatile(slot, iters) };
}

/// The block of this cluster whose memory this block reads: the next rank.
#[inline(always)]
fn peer_rank() -> u32 {
    (micro::cluster_rank() + 1) % micro::cluster_size()
}

/// `probe_dsmem_chase_c*`: thread 0 follows the ring in the next block's region.
///
/// # Safety
/// As `probe_shared_chase`, launched in clusters.
#[inline(always)]
unsafe fn dsmem_chase(next: *const u32, n: u32, steps: u32, timing: *mut u32) {
    let ring = unsafe { load_ring(next, n) };
    micro::cluster_barrier();
    if gpu::thread_idx_x() == 0 {
        // SAFETY: the whole ring; the peer's holds the same indices.
        let base = micro::cluster_map(unsafe { ring.range_ptr(0, n) }, peer_rank());
        let mut j = 0;
        let t0 = micro::clock();
        let mut s = 0;
        while s < steps {
            j = unsafe { micro::cluster_load(base.offset(j)) };
            s += 1;
        }
        let t1 = micro::clock();
        unsafe { record(timing, t1.wrapping_sub(t0), j) };
    }
    // The peer reads this block's region until it passes here.
    micro::cluster_barrier();
}

/// `probe_dsmem_read_c*`: every thread reads 16-byte vectors `tid, tid + block, ...`
/// (wrapping in the region), [`STRIDE_UNROLL`] per iteration, of the next block's region.
///
/// # Safety
/// `sums` holds one word per thread; `timing` as for [`record`]; launched in clusters.
#[inline(always)]
unsafe fn dsmem_read(sums: *mut u32, words: u32, iters: u32, timing: *mut u32) {
    let Ok(slice) = dsmem_read_layout(words) else { gpu::trap() };
    let region: SharedArray<Vec4<u32>> = gpu::launch_region(slice.bytes()).array(slice);
    let (tid, block) = (gpu::thread_idx_x(), gpu::block_dim_x());
    let vectors = slice.len();
    let mut v = tid;
    while v < vectors {
        let w = v * 4;
        unsafe { region.write(v, Vec4([word_value(w), word_value(w + 1), word_value(w + 2), word_value(w + 3)])) };
        v += block;
    }
    micro::cluster_barrier();
    // SAFETY: the whole region, seen as words.
    let base = micro::cluster_map(unsafe { region.range_ptr(0, vectors) }.cast(), peer_rank());
    let mut acc = 0u32;
    unsafe {
        timed_block(timing, || {
            let mut i = 0;
            let mut v = tid % vectors;
            while i < iters {
                let mut k = 0;
                while k < STRIDE_UNROLL {
                    acc = acc.wrapping_add(micro::cluster_load4(base.offset(v * 4)).sum());
                    v += block;
                    if v >= vectors {
                        v -= vectors;
                    }
                    k += 1;
                }
                i += 1;
            }
        })
    };
    let gid = gpu::block_idx_x() * block + tid;
    unsafe { gpu::write_global(sums.add(gid as usize), acc) };
    micro::cluster_barrier();
}

crate::kernels! { KERNELS;
    /// Workgroup-memory latency; see the module documentation.
    pub fn probe_shared_chase(next: *const u32, n: u32, steps: u32, timing: *mut u32) {
        unsafe {
            let ring = load_ring(next, n);
            shared_chase(ring, steps, timing)
        }
    }

    /// Workgroup-memory throughput by stride and width; see the module documentation.
    pub fn probe_shared_stride(sums: *mut u32, stride: u32, width: u32, iters: u32, timing: *mut u32) {
        let cfg = StrideConfig { stride, width };
        let Ok(slice) = cfg.layout() else { gpu::trap() };
        let words: SharedArray<u32> = gpu::launch_region(slice.bytes()).array(slice);
        let (tid, block) = (gpu::thread_idx_x(), gpu::block_dim_x());
        let mut i = tid;
        while i < words.len() {
            unsafe { words.write(i, word_value(i)) };
            i += block;
        }
        let acc = unsafe {
            timed_block(timing, || match width {
                1 => stride_loop::<u8>(words, stride, iters),
                2 => stride_loop::<u16>(words, stride, iters),
                4 => stride_loop::<u32>(words, stride, iters),
                8 => stride_loop::<Vec2<u32>>(words, stride, iters),
                16 => stride_loop::<Vec4<u32>>(words, stride, iters),
                _ => gpu::trap(),
            })
        };
        let gid = gpu::block_idx_x() * block + tid;
        unsafe { gpu::write_global(sums.add(gid as usize), acc) };
    }

    /// Device-memory latency by working set and hint; see the module documentation.
    pub fn probe_global_chase(next: *const u32, n: u32, steps: u32, hint: u32, cursor: *mut u32, timing: *mut u32) {
        if gpu::block_idx_x() == 0 {
            unsafe { for_hint!(hint, global_chase(next, n, steps, cursor, timing)) }
        }
    }

    /// Device-memory bandwidth by width and hint; see the module documentation.
    pub fn probe_global_read(src: *const u32, n: u64, hint: u32, width: u32, sums: *mut u32, timing: *mut u32) {
        let acc = unsafe { timed_block(timing, || for_hint!(hint, global_read_width(src, n, width))) };
        let gid = gpu::block_idx_x() * gpu::block_dim_x() + gpu::thread_idx_x();
        unsafe { gpu::write_global(sums.add(gid as usize), acc) };
    }

    /// Atomics by operation, memory and contention; see the module documentation.
    pub fn probe_atomics(target: *mut u32, op: u32, space: u32, mode: u32, iters: u32, tries: *mut u32, timing: *mut u32) {
        unsafe { atomics(target, op, space, mode, iters, tries, timing) }
    }

    /// Fence cost by scope; see the module documentation.
    pub fn probe_fence(slots: *mut u32, scope: u32, iters: u32, timing: *mut u32) {
        unsafe { fences(slots, scope, iters, timing) }
    }

    /// Distributed-shared-memory latency, clusters of 2.
    pub fn probe_dsmem_chase_c2(next: *const u32, n: u32, steps: u32, timing: *mut u32) [cluster = 2] {
        unsafe { dsmem_chase(next, n, steps, timing) }
    }

    /// Distributed-shared-memory latency, clusters of 4.
    pub fn probe_dsmem_chase_c4(next: *const u32, n: u32, steps: u32, timing: *mut u32) [cluster = 4] {
        unsafe { dsmem_chase(next, n, steps, timing) }
    }

    /// Distributed-shared-memory bandwidth, clusters of 2.
    pub fn probe_dsmem_read_c2(sums: *mut u32, words: u32, iters: u32, timing: *mut u32) [cluster = 2] {
        unsafe { dsmem_read(sums, words, iters, timing) }
    }

    /// Distributed-shared-memory bandwidth, clusters of 4.
    pub fn probe_dsmem_read_c4(sums: *mut u32, words: u32, iters: u32, timing: *mut u32) [cluster = 4] {
        unsafe { dsmem_read(sums, words, iters, timing) }
    }
}
