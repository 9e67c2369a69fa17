//! Histogram: counts of `u32` keys in `num_bins` bins, with per-workgroup bins in
//! launch-sized shared memory, or bins split over a thread-block cluster's shared memory
//! (distributed shared memory, sm_90) where one block cannot hold them.
//!
//! # Algorithm
//! Each block zeroes `copies` private copies of the bins in shared memory, walks the keys
//! grid-stride (16-byte loads, four in flight: thread `g = block_idx * block + tid` reads
//! key vectors `g, g + grid * block, ...`), and counts each key with a shared-memory atomic
//! in the copy of its warp (`(tid / 32) % copies`: several copies spread the atomics of
//! popular bins over more banks), then merges: each bin's sum over the copies is added to
//! the global bins with one global atomic (skipped when zero). Keys `>= num_bins` are not
//! counted. The global bins must be zeroed before the launch.
//!
//! Counters are [`HistogramConfig::bits`] wide: 32, or 16 / 8 packed two / four to a word
//! (twice / four times the bins in the same bytes). A packed count is a `u32` atomic add of
//! `1 << shift` that returns the word before it; where the counter was at its maximum the
//! add wrapped it to 0 and carried 1 into the counters above it in the word. The thread
//! that sees this adds `2^bits` to the device bin of each counter that wrapped and takes 1
//! from the device bin of each counter the carry reached ([`carry`]), so every counter's
//! final field plus its device corrections is its exact count.
//!
//! Bins past what the launch's shared memory holds ([`HistogramConfig::held`]: the kernel
//! takes as many as the launch's bytes fit) are counted with device atomics on the global
//! bins directly: a histogram of any size runs, its first bins in shared memory.
//!
//! In clusters of `size` blocks, either (split) block rank `r` holds bins
//! `r * per .. (r + 1) * per` (`per` = [`HistogramConfig::per_block`]) in each copy: a key
//! goes to the block that holds its bin (a shared atomic there when that is this block, a
//! `red.shared::cluster` to a peer's otherwise), and each block merges only its own bins;
//! or ([`HistogramConfig::merge`]) every block holds all the held bins, counts its keys
//! locally, and block rank `r` merges the `r`-th share of the bins: it sums them over the
//! cluster's blocks through distributed shared memory, so the device atomics of the merge
//! are `size` times fewer. Cluster barriers keep every block's counters zeroed before any
//! peer adds to them, every add landed before the merge, and every block's counters alive
//! until its peers have read them.
//!
//! # Launch-sized memory ([`HistogramConfig::layout`])
//! `counters`: `copies` copies of [`HistogramConfig::stride`] counters (`per` rounded up to
//! whole words), `bits` each, as `u32` words. One copy of 49152 32-bit bins is 192 KB: past
//! the 48 KB a static array may hold, within an H100's 227 KB opt-in limit; 131072 bins
//! take 128 KB per block as 8-bit counters, or in split clusters of 4.
//!
//! # Entry point
//! `histogram_u32(keys: *const u32, n: u64, bins: *mut u32, num_bins: u32, copies: u32,
//! bits: u32, merge: u32)`, launched with `grid` blocks of `block` threads in clusters of
//! `cluster`.

use crate::gpu::{self, SharedArray, micro};
use crate::layout::{Carve, LayoutError, Slice};

/// The launch-time tunables of a histogram launch.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HistogramConfig {
    pub block: u32,
    /// Blocks in the grid (each walks the keys grid-stride).
    pub grid: u32,
    /// Private copies of the bins per block (1 for bin counts near the memory limit).
    pub copies: u32,
    /// Blocks of a thread-block cluster (1: no cluster).
    #[cfg_attr(feature = "serde", serde(default = "one"))]
    pub cluster: u32,
    /// Bins held in shared memory (the first `held`; 0: all of them). Keys of the bins past
    /// them are counted with device atomics on the global bins.
    #[cfg_attr(feature = "serde", serde(default))]
    pub held: u32,
    /// Bits of a shared-memory counter: 32, 16 or 8 (see the module documentation).
    #[cfg_attr(feature = "serde", serde(default = "thirty_two"))]
    pub bits: u32,
    /// In clusters: every block holds every held bin and the cluster sums them before the
    /// device atomics (true), or the cluster's blocks split the bins (false).
    #[cfg_attr(feature = "serde", serde(default))]
    pub merge: bool,
}

#[cfg(feature = "serde")]
fn one() -> u32 {
    1
}

#[cfg(feature = "serde")]
fn thirty_two() -> u32 {
    32
}

/// The counter widths a launch may ask for.
pub const BITS: [u32; 3] = [32, 16, 8];

impl HistogramConfig {
    /// Bins held in the cluster's shared memory: `held`, or all of them.
    pub fn held_bins(&self, num_bins: u32) -> u32 {
        if self.held == 0 { num_bins } else { self.held.min(num_bins) }
    }

    /// Blocks the held bins are split over: the cluster's, or 1 where each block holds them
    /// all (no cluster, or `merge`).
    pub fn split(&self) -> u32 {
        if self.merge { 1 } else { self.cluster.max(1) }
    }

    /// Bins each block holds (in each copy).
    pub fn per_block(&self, num_bins: u32) -> u32 {
        self.held_bins(num_bins).div_ceil(self.split())
    }

    /// Counters per word: 1, 2 or 4.
    pub fn per_word(&self) -> u32 {
        32 / self.bits.clamp(8, 32)
    }

    /// Counters of one copy: [`per_block`](Self::per_block) rounded up to whole words.
    pub fn stride(&self, num_bins: u32) -> u64 {
        (self.per_block(num_bins) as u64).next_multiple_of(self.per_word() as u64)
    }

    /// The carve for `num_bins` bins: `copies * stride / per_word` words. Counter widths
    /// other than [`BITS`], and packed counters split over a cluster (a peer's add cannot
    /// see the word it wraps), are refused as an empty carve's overflow.
    pub fn layout(&self, num_bins: u32) -> Result<Slice<u32>, LayoutError> {
        let stride = self.stride(num_bins);
        let overflow = LayoutError::Overflow {
            offset: 0,
            len: stride.min(u32::MAX as u64) as u32,
            elem_bytes: self.copies.saturating_mul(4),
        };
        if !BITS.contains(&self.bits) || (self.bits < 32 && self.split() > 1) {
            return Err(overflow);
        }
        let lanes = stride * self.copies as u64;
        if lanes > u32::MAX as u64 {
            return Err(overflow);
        }
        Carve::new().array::<u32>(lanes as u32 / self.per_word())
    }

    pub fn shared_bytes(&self, num_bins: u32) -> Result<u32, LayoutError> {
        Ok(self.layout(num_bins)?.bytes())
    }
}

/// Four keys as one 16-byte load.
type Keys4 = crate::vector::Vec4<u32>;

/// # Contract
/// `keys` holds `n` keys, `bins` holds `num_bins` zeroed counters, the launch gave the
/// layout's bytes (checked: traps otherwise).
#[inline(always)]
fn histogram(keys: *const u32, n: u64, bins: *mut u32, num_bins: u32, copies: u32, bits: u32, merge: u32) {
    match bits {
        32 => count::<32>(keys, n, bins, num_bins, copies, merge != 0),
        16 => count::<16>(keys, n, bins, num_bins, copies, merge != 0),
        8 => count::<8>(keys, n, bins, num_bins, copies, merge != 0),
        _ => gpu::trap(),
    }
}

/// The kernel for counters of `BITS` bits (one copy of the hot loop per width).
///
/// # Contract
/// As [`histogram`].
#[inline(always)]
fn count<const BITS: u32>(keys: *const u32, n: u64, bins: *mut u32, num_bins: u32, copies: u32, merge: bool) {
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let (size, rank) = (micro::cluster_size(), micro::cluster_rank());
    if copies == 0 {
        gpu::trap();
    }
    let k = 32 / BITS;
    let mut cfg = HistogramConfig { block, grid: gpu::grid_dim_x(), copies, cluster: size, held: 0, bits: BITS, merge };
    // The launch's bytes say how many bins the cluster holds: as many as fit, all at most.
    let fit = gpu::dynamic_smem_size() / 4 * k / copies * cfg.split();
    cfg.held = if fit >= num_bins { 0 } else { fit };
    let held_bins = cfg.held_bins(num_bins);
    let Ok(slice) = cfg.layout(num_bins) else { gpu::trap() };
    let counters: SharedArray<u32> = gpu::launch_region(slice.bytes()).array(slice);
    // The layout holds `copies * stride` counters: `stride` fits a u32.
    let (per, stride) = (cfg.per_block(num_bins), cfg.stride(num_bins) as u32);
    let split = cfg.split() > 1;
    // The owner of a bin is `bin / per`, as a multiply: exact for bins below 2^20 and `per`
    // below 2^16 (the shared memory of 8 blocks holds fewer).
    let magic = (1u64 << 40).div_ceil(per as u64);
    let cluster_sync = || if size > 1 { micro::cluster_barrier() } else { gpu::barrier() };

    let mut i = tid;
    while i < counters.len() {
        unsafe { counters.write(i, 0) };
        i += block;
    }
    cluster_sync();

    let base = ((tid / 32) % copies) * stride;
    let count = |key: u32| {
        if key >= num_bins {
            return;
        }
        if key >= held_bins {
            unsafe { add_in_device_memory(bins.add(key as usize), 1) };
            return;
        }
        if BITS < 32 {
            let lane = base + key;
            let shift = (lane % k) * BITS;
            let word = unsafe { counters.range_ptr(lane / k, 1) };
            let old = unsafe { micro::shared_fetch_add(word, 1 << shift) };
            if (old >> shift) & field_mask::<BITS>() == field_mask::<BITS>() {
                carry::<BITS>(old, lane, stride, per, bins);
            }
            return;
        }
        if !split {
            unsafe { counters.atomic_add(base + key, 1) };
            return;
        }
        let owner = ((key as u64 * magic) >> 40) as u32;
        let slot = base + (key - owner * per);
        if owner == rank {
            unsafe { counters.atomic_add(slot, 1) };
        } else {
            let p = unsafe { counters.range_ptr(slot, 1) } as *const u32;
            unsafe { micro::cluster_red_add(micro::cluster_map(p, owner), 1) };
        }
    };
    let grid_stride = cfg.grid as u64 * block as u64;
    let first = gpu::block_idx_x() as u64 * block as u64 + tid as u64;
    let vec_ok = (keys as usize).is_multiple_of(16);
    let n_vec = if vec_ok { n / 4 } else { 0 };
    let v = keys as *const Keys4;
    let mut g = first;
    let count4 = |k: Keys4| {
        count(k.0[0]);
        count(k.0[1]);
        count(k.0[2]);
        count(k.0[3]);
    };
    // Four vectors read before any is counted: their loads are in flight together. (No
    // array of them: it would live in local memory.)
    while g + 3 * grid_stride < n_vec {
        let x0 = unsafe { gpu::read_global(v.add(g as usize)) };
        let x1 = unsafe { gpu::read_global(v.add((g + grid_stride) as usize)) };
        let x2 = unsafe { gpu::read_global(v.add((g + 2 * grid_stride) as usize)) };
        let x3 = unsafe { gpu::read_global(v.add((g + 3 * grid_stride) as usize)) };
        count4(x0);
        count4(x1);
        count4(x2);
        count4(x3);
        g += 4 * grid_stride;
    }
    while g < n_vec {
        count4(unsafe { gpu::read_global(v.add(g as usize)) });
        g += grid_stride;
    }
    // The keys past the last whole vector (all of them if `keys` is not 16-byte aligned).
    let mut g = n_vec * 4 + first;
    while g < n {
        count(unsafe { gpu::read_global(keys.add(g as usize)) });
        g += grid_stride;
    }
    cluster_sync();

    // The merge, a word of each copy at a time (thread `t`: words `lo + t, lo + t + block,
    // ...`). Split: this block's bins `rank * per ..`, from its own counters. Merge: the
    // `rank`-th share of the words, summed over every block of the cluster. Otherwise all
    // the words, from this block's counters.
    let words = stride / k;
    let (lo, hi, first_bin) = if merge && size > 1 {
        (rank * words / size, (rank + 1) * words / size, 0)
    } else {
        (0, words, if split { rank * per } else { 0 })
    };
    let peers = if merge { size } else { 1 };
    let mut w = lo + tid;
    while w < hi {
        let mut sums = [0u32; 4];
        let mut c = 0;
        while c < copies {
            let at = c * words + w;
            let mut peer = 0;
            while peer < peers {
                let x = if peers == 1 {
                    unsafe { counters.read(at) }
                } else {
                    let p = unsafe { counters.range_ptr(at, 1) } as *const u32;
                    unsafe { micro::cluster_load(micro::cluster_map(p, peer)) }
                };
                let mut f = 0;
                while f < k {
                    sums[f as usize] = sums[f as usize].wrapping_add((x >> (f * BITS)) & field_mask::<BITS>());
                    f += 1;
                }
                peer += 1;
            }
            c += 1;
        }
        let mut f = 0;
        while f < k {
            let b = w * k + f;
            let sum = sums[f as usize];
            if b < per && first_bin + b < held_bins && sum != 0 {
                unsafe { gpu::atomic_add_global_u32(bins.add((first_bin + b) as usize), sum) };
            }
            f += 1;
        }
        w += block;
    }
    if merge && size > 1 {
        // Peers read these counters until here.
        micro::cluster_barrier();
    }
}

/// The largest value of a `BITS`-bit counter.
#[inline(always)]
const fn field_mask<const BITS: u32>() -> u32 {
    u32::MAX >> (32 - BITS)
}

/// Corrects the device bins after a packed add that wrapped counter `lane` (`old`: its word
/// before the add): every counter from `lane` up that the carry wrapped gets `2^BITS` in
/// its device bin, every one above `lane` the carry reached loses the 1 it gained. Lanes
/// past a copy's bins (its last word's padding) have no device bin.
///
/// # Contract
/// `bins` holds the held bins; a copy is `stride` counters, its first `per` the bins
/// `0..per` (packed counters are never split over a cluster).
#[cold]
#[inline(never)]
fn carry<const BITS: u32>(old: u32, lane: u32, stride: u32, per: u32, bins: *mut u32) {
    let k = 32 / BITS;
    let first = lane - lane % k;
    let mut f = lane % k;
    let mut wrapped = true;
    while wrapped && f < k {
        let l = first + f;
        let field = (old >> (f * BITS)) & field_mask::<BITS>();
        // The add reaches counter `f` (its own, or the carry of the one below).
        wrapped = field == field_mask::<BITS>();
        let own = l == lane;
        let delta = if wrapped { 1u32 << BITS } else { 0 }.wrapping_sub(if own { 0 } else { 1 });
        let bin = l % stride;
        // Padding past the last bin of the copy: its counts are never merged.
        if bin < per {
            unsafe { add_in_device_memory(bins.add(bin as usize), delta) };
        }
        f += 1;
    }
}

/// Adds `v` to a global bin: a key of a bin past the held ones, or a carry's correction. On
/// AMD it is a subtraction of `-v` (the same add, modulo 2^32; LLVM makes it a
/// compare-and-swap loop): an identical add would be merged by LLVM with the LDS add of the
/// held bins into one flat (generic) atomic on a pointer of either space, and every held key
/// would pay for it.
///
/// # Contract
/// `p` is a global bin.
#[inline(always)]
fn add_in_device_memory(p: *mut u32, v: u32) {
    #[cfg(target_arch = "amdgpu")]
    unsafe {
        core::sync::atomic::AtomicU32::from_ptr(p).fetch_sub(v.wrapping_neg(), core::sync::atomic::Ordering::Relaxed);
    }
    #[cfg(not(target_arch = "amdgpu"))]
    unsafe {
        gpu::atomic_add_global_u32(p, v)
    };
}

crate::kernels! { KERNELS;
    /// Counts `n` keys into `num_bins` bins; see the module documentation.
    pub fn histogram_u32(keys: *const u32, n: u64, bins: *mut u32, num_bins: u32, copies: u32, bits: u32, merge: u32) {
        histogram(keys, n, bins, num_bins, copies, bits, merge)
    }
}
