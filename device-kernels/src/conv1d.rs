//! 1-D convolution ("same" size, zero padding): `y[i] = sum_k w[k] * x[i + k - K/2]` for
//! an odd number of taps `K` (3..=129), with the input tile and its halo in launch-sized
//! shared memory.
//!
//! # Algorithm and thread mapping
//! A block makes a tile of `T = block * R` consecutive outputs; blocks walk tiles `b, b +
//! grid, ...`. For a tile starting at `o`, the block loads `x[o - K/2 .. o + T + K/2)`
//! (zeros outside `[0, n)`) into the shared `tile`, and the taps into `weights`. Thread
//! `t` makes the `R` consecutive outputs `o + t*R ..`: it walks the taps `R` at a time,
//! holding `2R` tile elements in registers, so `R` taps cost `R` shared loads of the tile,
//! `R` broadcast loads of weights and `R * R` fused multiply-adds (register tiling). The
//! taps are padded with zero weights to a multiple of `R` (`Kp`). `R` is a const generic
//! (the window must be registers); `K` and the tile are launch-time. Outputs are staged
//! back through the tile and written coalesced.
//!
//! The tile is stored with one padding float after every 32 (`i -> i + i / 32`): thread
//! `t` reads element `t*R + c`, and the padding spreads a warp's 32 reads over 32 banks.
//!
//! # Launch-sized memory ([`Conv1dConfig::layout`])
//! `tile`: `T + Kp` floats plus padding; `weights`: `Kp` floats (`Kp` = `K` rounded up to
//! a multiple of `R`).
//!
//! # Entry points
//! `conv1d_f32_r4` and `conv1d_f32_r8` (`R` = 4, 8), each
//! `(x: *const f32, w: *const f32, y: *mut f32, n: u64, taps: u32)`.

use crate::gpu::{self, SharedArray};
use crate::layout::{Carve, LayoutError, Slice};

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
    pub tile: Slice<f32>,
    pub weights: Slice<f32>,
    pub bytes: u32,
}

/// Index of tile element `i` in the padded shared tile.
#[inline(always)]
pub fn padded(i: u32) -> u32 {
    i + i / 32
}

impl Conv1dConfig {
    /// Outputs per block.
    pub fn tile_outputs(&self) -> Option<u32> {
        self.block.checked_mul(self.outputs_per_thread)
    }

    /// Taps rounded up to a multiple of the outputs per thread (zero weights fill it).
    pub fn padded_taps(&self, taps: u32) -> u32 {
        taps.next_multiple_of(self.outputs_per_thread.max(1))
    }

    pub fn layout(&self, taps: u32) -> Result<Conv1dLayout, LayoutError> {
        let overflow = LayoutError::Overflow { offset: 0, len: self.block, elem_bytes: 4 };
        // Checked here: padded_taps and padded wrap (or panic) near u32::MAX.
        let kp = taps.checked_next_multiple_of(self.outputs_per_thread.max(1)).ok_or(overflow)?;
        let inputs = self.tile_outputs().and_then(|t| t.checked_add(kp)).ok_or(overflow)?;
        let tile_len = inputs.checked_add(inputs / 32).and_then(|p| p.checked_add(1)).ok_or(overflow)?;
        let mut carve = Carve::new();
        let tile = carve.array::<f32>(tile_len)?;
        let weights = carve.array::<f32>(kp)?;
        Ok(Conv1dLayout { tile, weights, bytes: carve.bytes() })
    }

    pub fn shared_bytes(&self, taps: u32) -> Result<u32, LayoutError> {
        Ok(self.layout(taps)?.bytes)
    }

    pub fn grid(&self, n: u64) -> u32 {
        n.div_ceil(self.tile_outputs().unwrap_or(1).max(1) as u64).clamp(1, MAX_GRID as u64) as u32
    }
}

/// # Safety
/// `x` and `y` hold `n` floats, `w` holds `taps`; the launch gave the layout's bytes.
// Index loops over register arrays with constant bounds are what keeps them registers.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
unsafe fn conv1d<const R: usize>(x: *const f32, w: *const f32, y: *mut f32, n: u64, taps: u32) {
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let cfg = Conv1dConfig { block, outputs_per_thread: R as u32 };
    if taps.is_multiple_of(2) {
        gpu::trap();
    }
    let Ok(l) = cfg.layout(taps) else { gpu::trap() };
    let region = gpu::launch_region(l.bytes);
    let (tile, wt): (SharedArray<f32>, SharedArray<f32>) = (region.array(l.tile), region.array(l.weights));
    let outputs = block * R as u32;
    let kp = cfg.padded_taps(taps);
    let inputs = outputs + kp;
    let half = (taps / 2) as u64;

    let mut k = tid;
    while k < kp {
        let wk = if k < taps { unsafe { w.add(k as usize).read() } } else { 0.0 };
        unsafe { wt.write(k, wk) };
        k += block;
    }

    let tiles = n.div_ceil(outputs as u64);
    let mut t = gpu::block_idx_x() as u64;
    while t < tiles {
        let o = t * outputs as u64;
        // Also orders the weights' stores before their first use.
        gpu::barrier();
        // Input index o + i - half, zero outside [0, n).
        let load = |i: u32| {
            let g = o + i as u64;
            if g >= half && g - half < n { unsafe { x.add((g - half) as usize).read() } } else { 0.0 }
        };
        unsafe { crate::stage::stage(tile, inputs, tid, block, padded, load) };
        gpu::barrier();

        let base = tid * R as u32;
        let mut acc = [0.0f32; R];
        // buf[0..R] holds tile[base + k ..], buf[R..2R] the next R elements.
        let mut buf = [[0.0f32; R]; 2];
        for r in 0..R {
            buf[0][r] = unsafe { tile.read(padded(base + r as u32)) };
        }
        let mut k = 0;
        while k < kp {
            for r in 0..R {
                buf[1][r] = unsafe { tile.read(padded(base + k + (R + r) as u32)) };
            }
            for j in 0..R {
                let wk = unsafe { wt.read(k + j as u32) };
                for r in 0..R {
                    let v = if r + j < R { buf[0][r + j] } else { buf[1][r + j - R] };
                    acc[r] = gpu::fma(wk, v, acc[r]);
                }
            }
            for r in 0..R {
                buf[0][r] = buf[1][r];
            }
            k += R as u32;
        }
        gpu::barrier();
        for (r, a) in acc.iter().enumerate() {
            unsafe { tile.write(padded(base + r as u32), *a) };
        }
        gpu::barrier();
        let mut i = tid;
        while i < outputs && o + (i as u64) < n {
            unsafe { y.add((o + i as u64) as usize).write(tile.read(padded(i))) };
            i += block;
        }
        t += gpu::grid_dim_x() as u64;
    }
}

crate::kernels! { KERNELS;
    /// 1-D convolution, 4 outputs per thread; see the module documentation.
    pub fn conv1d_f32_r4(x: *const f32, w: *const f32, y: *mut f32, n: u64, taps: u32) {
        unsafe { conv1d::<4>(x, w, y, n, taps) }
    }
    /// 1-D convolution, 8 outputs per thread; see the module documentation.
    pub fn conv1d_f32_r8(x: *const f32, w: *const f32, y: *mut f32, n: u64, taps: u32) {
        unsafe { conv1d::<8>(x, w, y, n, taps) }
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
