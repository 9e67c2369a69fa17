//! Histogram: counts of `u32` keys in `num_bins` bins, with per-workgroup bins in
//! launch-sized shared memory, or bins split over a thread-block cluster's shared memory
//! (distributed shared memory, sm_90) where one block cannot hold them.
//!
//! # Algorithm
//! Each block zeroes `copies` private copies of the bins in shared memory, walks the keys
//! grid-stride (16-byte loads: thread `g = block_idx * block + tid` reads key vectors
//! `g, g + grid * block, ...`), and counts each key with a shared-memory atomic in the
//! copy of its warp (`(tid / 32) % copies`: several copies spread the atomics of popular
//! bins over more banks), then merges: thread `t` sums bin `b = t, t + block, ...` over the
//! copies and adds it to the global bins with one global atomic (skipped when zero).
//! Keys `>= num_bins` are not counted. The global bins must be zeroed before the launch.
//!
//! Bins past what the launch's shared memory holds ([`HistogramConfig::held`]: the kernel
//! takes as many as the launch's bytes fit) are counted with device atomics on the global
//! bins directly: a histogram of any size runs, its first bins in shared memory.
//!
//! In clusters of `size` blocks, block rank `r` holds bins `r * per .. (r + 1) * per`
//! (`per` = [`HistogramConfig::per_block`]) in each copy: a key goes to the block that holds
//! its bin (a shared atomic there when that is this block, a `red.shared::cluster` to a
//! peer's otherwise), and each block merges only its own bins. Cluster barriers keep every
//! block's counters zeroed before any peer adds to them, and every add landed before the
//! merge.
//!
//! # Launch-sized memory ([`HistogramConfig::layout`])
//! `counters`: `copies * per` `u32` (`per = ceil(num_bins / size)`). One copy of 49152
//! bins is 192 KB: past the 48 KB a static array may hold, within an H100's 227 KB opt-in
//! limit; 131072 bins take 128 KB per block in clusters of 4.
//!
//! # Entry point
//! `histogram_u32(keys: *const u32, n: u64, bins: *mut u32, num_bins: u32, copies: u32)`,
//! launched with `grid` blocks of `block` threads in clusters of `cluster`.

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
    /// Blocks of the thread-block cluster whose shared memory holds the bins (1: every
    /// block holds them all).
    #[cfg_attr(feature = "serde", serde(default = "one"))]
    pub cluster: u32,
    /// Bins held in shared memory (the first `held`; 0: all of them). Keys of the bins past
    /// them are counted with device atomics on the global bins.
    #[cfg_attr(feature = "serde", serde(default))]
    pub held: u32,
}

#[cfg(feature = "serde")]
fn one() -> u32 {
    1
}

impl HistogramConfig {
    /// Bins held in the cluster's shared memory: `held`, or all of them.
    pub fn held_bins(&self, num_bins: u32) -> u32 {
        if self.held == 0 { num_bins } else { self.held.min(num_bins) }
    }

    /// Bins each block of a cluster holds (in each copy).
    pub fn per_block(&self, num_bins: u32) -> u32 {
        self.held_bins(num_bins).div_ceil(self.cluster.max(1))
    }

    /// The carve for `num_bins` bins.
    pub fn layout(&self, num_bins: u32) -> Result<Slice<u32>, LayoutError> {
        let per = self.per_block(num_bins);
        let len = per.checked_mul(self.copies).ok_or(LayoutError::Overflow {
            offset: 0,
            len: per,
            elem_bytes: self.copies.saturating_mul(4),
        })?;
        Carve::new().array::<u32>(len)
    }

    pub fn shared_bytes(&self, num_bins: u32) -> Result<u32, LayoutError> {
        Ok(self.layout(num_bins)?.bytes())
    }
}

/// Four keys as one 16-byte load.
type Keys4 = crate::vector::Vec4<u32>;

/// # Safety
/// `keys` holds `n` keys, `bins` holds `num_bins` zeroed counters, the launch gave the
/// layout's bytes (checked: traps otherwise).
#[inline(always)]
unsafe fn histogram(keys: *const u32, n: u64, bins: *mut u32, num_bins: u32, copies: u32) {
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let (size, rank) = (micro::cluster_size(), micro::cluster_rank());
    if copies == 0 {
        gpu::trap();
    }
    // The launch's bytes say how many bins the cluster holds: as many as fit, all at most.
    let fit = gpu::dynamic_smem_size() / 4 / copies * size;
    let held = if fit >= num_bins { 0 } else { fit };
    let cfg = HistogramConfig { block, grid: gpu::grid_dim_x(), copies, cluster: size, held };
    let held_bins = if held == 0 { num_bins } else { held };
    let Ok(slice) = cfg.layout(num_bins) else { gpu::trap() };
    let counters: SharedArray<u32> = gpu::launch_region(slice.bytes()).array(slice);
    let per = cfg.per_block(num_bins);
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

    let base = ((tid / 32) % copies) * per;
    let count = |key: u32| {
        if key >= num_bins {
            return;
        }
        if key >= held_bins {
            unsafe { count_in_device_memory(bins.add(key as usize)) };
            return;
        }
        if size == 1 {
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
    let stride = cfg.grid as u64 * block as u64;
    let first = gpu::block_idx_x() as u64 * block as u64 + tid as u64;
    let vec_ok = (keys as usize).is_multiple_of(16);
    let n_vec = if vec_ok { n / 4 } else { 0 };
    let v = keys as *const Keys4;
    let mut g = first;
    while g < n_vec {
        let k = unsafe { v.add(g as usize).read() }.0;
        count(k[0]);
        count(k[1]);
        count(k[2]);
        count(k[3]);
        g += stride;
    }
    // The keys past the last whole vector (all of them if `keys` is not 16-byte aligned).
    let mut g = n_vec * 4 + first;
    while g < n {
        count(unsafe { keys.add(g as usize).read() });
        g += stride;
    }
    cluster_sync();

    // This block's bins: `rank * per ..`, the last block's cut at `num_bins`.
    let first_bin = rank * per;
    let mut b = tid;
    while b < per && first_bin + b < held_bins {
        let mut sum = 0u32;
        let mut c = 0;
        while c < copies {
            sum = sum.wrapping_add(unsafe { counters.read(c * per + b) });
            c += 1;
        }
        if sum != 0 {
            unsafe { gpu::atomic_add_global_u32(bins.add((first_bin + b) as usize), sum) };
        }
        b += block;
    }
}

/// One key of a bin past the held ones: a device atomic on its global bin. On AMD it is a
/// subtraction of `u32::MAX` (the same add, modulo 2^32; LLVM makes it a compare-and-swap
/// loop): an identical add would be merged by LLVM with the LDS add of the held bins into one
/// flat (generic) atomic on a pointer of either space, and every held key would pay for it.
///
/// # Safety
/// `p` is a global bin.
#[inline(always)]
unsafe fn count_in_device_memory(p: *mut u32) {
    #[cfg(target_arch = "amdgpu")]
    unsafe {
        core::sync::atomic::AtomicU32::from_ptr(p).fetch_sub(u32::MAX, core::sync::atomic::Ordering::Relaxed);
    }
    #[cfg(not(target_arch = "amdgpu"))]
    unsafe {
        gpu::atomic_add_global_u32(p, 1)
    };
}

crate::kernels! { KERNELS;
    /// Counts `n` keys into `num_bins` bins; see the module documentation.
    pub fn histogram_u32(keys: *const u32, n: u64, bins: *mut u32, num_bins: u32, copies: u32) {
        unsafe { histogram(keys, n, bins, num_bins, copies) }
    }
}
