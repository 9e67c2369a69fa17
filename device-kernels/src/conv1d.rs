//! 1-D convolution ("same" size, zero padding): `y[i] = sum_k w[k] * x[i + k - K/2]` for
//! an odd number of taps `K` (3..=129), with the input tile and its halo in launch-sized
//! shared memory.
//!
//! # Algorithm and thread mapping
//! A block makes a tile of `T = block * R` consecutive outputs; blocks walk tiles `b, b +
//! grid, ...`. For a tile starting at `o`, the block loads its inputs and halo into the
//! shared `tile`, and the taps into `weights`. Thread `t` makes the `R` consecutive outputs
//! `o + t*R ..`: it walks the taps `R` at a time, holding `2R` tile elements in registers,
//! so `R` taps cost `R / 4` vector loads of the tile, `R / 4` broadcast vector loads of
//! weights and `R * R` fused multiply-adds (register tiling). The walk takes two steps per
//! iteration, so the window's halves trade places by register naming, not copies. `R` is a
//! const generic (the window must be registers); `K` and the tile are launch-time. Each
//! thread writes its `R` outputs as vectors straight from registers.
//!
//! Every shared and global access is a 16-byte vector ([`crate::vector`]). For that the
//! tile starts `H' = K/2` rounded up to a multiple of 4 elements before the outputs
//! (`tile[i] = x[o - H' + i]`, so its vectors are aligned in `x`), and the weights are
//! shifted right by `s = H' - K/2` zeros: `w'[j] = w[j - s]`, padded with zeros to `Kp`
//! taps, a multiple of `R` (see [`Conv1dConfig::padded_taps`]). Then `y[o + m] = sum_j
//! w'[j] * tile[m + j]`.
//!
//! With `R = 8` a quarter-warp's 16-byte tile reads (threads two vectors apart) hit each
//! bank twice. That costs shared-memory wavefronts, not issue slots, and the kernel is
//! bound by issue slots: padding the tile would cost address arithmetic on every load.
//!
//! # Launch-sized memory ([`Conv1dConfig::layout`])
//! `tile`: `T + Kp` floats as vectors; `weights`: `Kp` floats as vectors.
//!
//! # Entry points
//! `conv1d_f32_r4` and `conv1d_f32_r8` (`R` = 4, 8), each
//! `(x: *const f32, w: *const f32, y: *mut f32, n: u64, taps: u32)`.

use crate::gpu::{self, SharedArray};
use crate::layout::{Carve, LayoutError, Slice};
use crate::vector::{self, Vec4};

/// Outputs per thread the image is built for.
pub const OUTPUTS_PER_THREAD: [u32; 2] = [4, 8];
/// Most blocks a launch uses; blocks loop over the tiles past it.
pub const MAX_GRID: u32 = 65_535;
/// Largest filter.
pub const MAX_TAPS: u32 = 129;

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Conv1dConfig {
    pub block: u32,
    /// Consecutive outputs per thread, one of [`OUTPUTS_PER_THREAD`].
    pub outputs_per_thread: u32,
}

/// Where conv1d finds its tile and weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conv1dLayout {
    pub tile: Slice<Vec4<f32>>,
    pub weights: Slice<Vec4<f32>>,
    pub bytes: u32,
}

/// Elements the tile starts before the tile's first output: `K/2` rounded up to a
/// multiple of 4, so that the tile's vectors are aligned vectors of the input.
#[inline(always)]
pub fn halo_before(taps: u32) -> u32 {
    // taps / 2 < 2^31: no overflow.
    (taps / 2).next_multiple_of(4)
}

impl Conv1dConfig {
    /// Outputs per block.
    pub fn tile_outputs(&self) -> Option<u32> {
        self.block.checked_mul(self.outputs_per_thread)
    }

    /// The shifted taps `w'` (see the module documentation), rounded up to a multiple of
    /// the outputs per thread (zero weights fill it).
    pub fn padded_taps(&self, taps: u32) -> u32 {
        let shift = halo_before(taps) - taps / 2;
        taps.saturating_add(shift).checked_next_multiple_of(self.outputs_per_thread.max(4)).unwrap_or(u32::MAX)
    }

    /// Whether the outputs per thread is a size the vector mapping handles.
    pub fn fits(&self) -> bool {
        self.block > 0 && self.outputs_per_thread >= 4 && self.outputs_per_thread.is_multiple_of(4)
    }

    pub fn layout(&self, taps: u32) -> Result<Conv1dLayout, LayoutError> {
        let overflow = LayoutError::Overflow { offset: 0, len: self.block, elem_bytes: 4 };
        // Checked here: padded_taps saturates near u32::MAX.
        let shift = halo_before(taps) - taps / 2;
        let kp = taps
            .checked_add(shift)
            .and_then(|k| k.checked_next_multiple_of(self.outputs_per_thread.max(4)))
            .ok_or(overflow)?;
        let inputs = self.tile_outputs().and_then(|t| t.checked_add(kp)).ok_or(overflow)?;
        let mut carve = Carve::new();
        let tile = carve.array::<Vec4<f32>>(inputs.div_ceil(4))?;
        let weights = carve.array::<Vec4<f32>>(kp.div_ceil(4))?;
        Ok(Conv1dLayout { tile, weights, bytes: carve.bytes() })
    }

    pub fn shared_bytes(&self, taps: u32) -> Result<u32, LayoutError> {
        Ok(self.layout(taps)?.bytes)
    }

    pub fn grid(&self, n: u64) -> u32 {
        n.div_ceil(self.tile_outputs().unwrap_or(1).max(1) as u64).clamp(1, MAX_GRID as u64) as u32
    }
}

/// # Contract
/// `x` and `y` hold `n` floats, `w` holds `taps`; the launch gave the layout's bytes.
// Index loops over register arrays with constant bounds are what keeps them registers.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn conv1d<const R: usize>(x: *const f32, w: *const f32, y: *mut f32, n: u64, taps: u32) {
    const { assert!(R % 4 == 0) };
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let cfg = Conv1dConfig { block, outputs_per_thread: R as u32 };
    if taps.is_multiple_of(2) {
        gpu::trap();
    }
    let Ok(l) = cfg.layout(taps) else { gpu::trap() };
    let region = gpu::launch_region(l.bytes);
    let (tile, wt): (SharedArray<Vec4<f32>>, SharedArray<Vec4<f32>>) = (region.array(l.tile), region.array(l.weights));
    let outputs = block * R as u32;
    let kp = cfg.padded_taps(taps);
    let before = halo_before(taps) as i64;
    let shift = halo_before(taps) - taps / 2;
    let (x_vec, y_vec) = (vector::is_aligned16(x), vector::is_aligned16(y));

    // w'[j] = w[j - shift], zero outside the taps.
    let wt_f32: SharedArray<f32> = unsafe { wt.cast() };
    let mut j = tid;
    while j < kp {
        let k = j.wrapping_sub(shift);
        let wk = if j >= shift && k < taps { unsafe { gpu::read_global(w.add(k as usize)) } } else { 0.0 };
        unsafe { wt_f32.write(j, wk) };
        j += block;
    }

    let tiles = n.div_ceil(outputs as u64);
    let inputs = outputs + kp;
    let mut t = gpu::block_idx_x() as u64;
    while t < tiles {
        let o = t * outputs as u64;
        // Also orders the weights' stores before their first use.
        gpu::barrier();
        // Tile vector v is x[o - before + 4v ..], zeros outside [0, n); a tile inside the
        // input (all but the first and last) skips the per-vector bounds checks.
        let first = o as i64 - before;
        let inside = x_vec && first >= 0 && first as u64 + inputs as u64 <= n;
        if inside {
            let src = unsafe { x.add(first as usize).cast::<Vec4<f32>>() };
            crate::stage::stage_async(tile, src, inputs / 4, tid, block, |v| v);
        } else {
            let load = |v: u32| vector::load4(x, first + 4 * v as i64, n, 0.0, x_vec);
            crate::stage::stage(tile, inputs / 4, tid, block, |v| v, load);
        }
        gpu::barrier();

        let base = tid * (R / 4) as u32;
        let mut acc = [0.0f32; R];
        // Tile elements base*4 + k .. + R: the low half of the window.
        let read = |v: u32| {
            let mut e = [0.0f32; R];
            for q in 0..R / 4 {
                let x = unsafe { tile.read(v + q as u32) };
                e[4 * q..4 * q + 4].copy_from_slice(&x.0);
            }
            e
        };
        let taps_at = |v: u32| {
            let mut e = [0.0f32; R];
            for q in 0..R / 4 {
                let x = unsafe { wt.read(v + q as u32) };
                e[4 * q..4 * q + 4].copy_from_slice(&x.0);
            }
            e
        };
        // R taps at once: acc[r] += w[k + j] * tile[base + k + r + j], j < R.
        let step = |acc: &mut [f32; R], lo: &[f32; R], hi: &[f32; R], wk: &[f32; R]| {
            for j in 0..R {
                for r in 0..R {
                    let v = if r + j < R { lo[r + j] } else { hi[r + j - R] };
                    acc[r] = gpu::fma(wk[j], v, acc[r]);
                }
            }
        };
        let rv = (R / 4) as u32;
        let mut lo = read(base);
        let mut k = 0;
        while k + 2 * rv <= kp / 4 {
            let hi = read(base + k + rv);
            step(&mut acc, &lo, &hi, &taps_at(k));
            lo = read(base + k + 2 * rv);
            step(&mut acc, &hi, &lo, &taps_at(k + rv));
            k += 2 * rv;
        }
        if k < kp / 4 {
            let hi = read(base + k + rv);
            step(&mut acc, &lo, &hi, &taps_at(k));
        }
        for q in 0..R / 4 {
            let out = Vec4([acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]]);
            let start = o + 4 * (base + q as u32) as u64;
            if start < n {
                vector::store4(y, start, n, out, y_vec);
            }
        }
        t += gpu::grid_dim_x() as u64;
    }
}

crate::kernels! { KERNELS;
    /// 1-D convolution, 4 outputs per thread; see the module documentation.
    pub fn conv1d_f32_r4(x: *const f32, w: *const f32, y: *mut f32, n: u64, taps: u32) {
        conv1d::<4>(x, w, y, n, taps)
    }
    /// 1-D convolution, 8 outputs per thread; see the module documentation.
    pub fn conv1d_f32_r8(x: *const f32, w: *const f32, y: *mut f32, n: u64, taps: u32) {
        conv1d::<8>(x, w, y, n, taps)
    }
}

/// The entry point for `outputs_per_thread`, if the image has one.
pub fn entry_name(outputs_per_thread: u32) -> Option<&'static str> {
    match outputs_per_thread {
        4 => Some("conv1d_f32_r4"),
        8 => Some("conv1d_f32_r8"),
        _ => None,
    }
}
