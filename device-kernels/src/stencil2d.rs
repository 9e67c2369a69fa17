//! 2-D stencil (3x3 or 5x5 weights, e.g. box or Gaussian blur) over a row-major
//! `height x width` f32 image, clamping to the edge, with a bordered tile in launch-sized
//! shared memory.
//!
//! # Algorithm and thread mapping
//! The image is cut into `tile_w x tile_h` output tiles; blocks walk tiles `b, b + grid,
//! ...`. For a tile, the block loads the `(tile_w + 2r) x (tile_h + 2r)` input pixels it
//! needs (its border of `r` pixels clamped to the image) into the shared `tile`. Thread
//! `t` owns column `tx = t % tile_w` and a strip of `tile_h / (block / tile_w)`
//! consecutive rows starting at row `(t / tile_w) * strip`. It keeps the `K x K` weights
//! (`K = 2r + 1`) and a `K x K` window of the tile in registers and slides the window down
//! its strip: each output costs `K` shared loads (one new window row) and `K * K` fused
//! multiply-adds. The radius is a const generic (the window must be registers); the tile
//! shape is launch-time.
//!
//! # Launch-sized memory ([`Stencil2dConfig::layout`])
//! `tile`: `(tile_w + 2r) * (tile_h + 2r)` floats; `weights`: `K * K` floats.
//!
//! # Entry points
//! `stencil2d_f32_r1` (3x3) and `stencil2d_f32_r2` (5x5), each
//! `(input, weights, output, width: u32, height: u32, tile_w: u32, tile_h: u32)`;
//! requires `block % tile_w == 0` and `tile_h % (block / tile_w) == 0`.

use crate::gpu::{self, SharedArray};
use crate::layout::{Carve, LayoutError, Slice};

/// Radii the image is built for.
pub const RADII: [u32; 2] = [1, 2];
/// Most blocks a launch uses; blocks loop over the tiles past it.
pub const MAX_GRID: u32 = 65_535;

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stencil2dConfig {
    pub block: u32,
    pub tile_w: u32,
    pub tile_h: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stencil2dLayout {
    pub tile: Slice<f32>,
    pub weights: Slice<f32>,
    pub bytes: u32,
}

impl Stencil2dConfig {
    /// Whether the thread arrangement divides the tile (see the entry-point contract).
    pub fn fits(&self) -> bool {
        self.tile_w > 0
            && self.block >= self.tile_w
            && self.block.is_multiple_of(self.tile_w)
            && self.tile_h > 0
            && self.tile_h.is_multiple_of(self.block / self.tile_w)
    }

    pub fn layout(&self, radius: u32) -> Result<Stencil2dLayout, LayoutError> {
        let overflow = LayoutError::Overflow { offset: 0, len: self.tile_w, elem_bytes: 4 };
        // Checked: a radius near 2^31 wraps 2r + 1 and (2r + 1)^2.
        let r2 = radius.checked_mul(2).ok_or(overflow)?;
        let k = r2.checked_add(1).ok_or(overflow)?;
        let w = self.tile_w.checked_add(r2).ok_or(overflow)?;
        let h = self.tile_h.checked_add(r2).ok_or(overflow)?;
        let mut carve = Carve::new();
        let tile = carve.array::<f32>(w.checked_mul(h).ok_or(overflow)?)?;
        let weights = carve.array::<f32>(k.checked_mul(k).ok_or(overflow)?)?;
        Ok(Stencil2dLayout { tile, weights, bytes: carve.bytes() })
    }

    pub fn shared_bytes(&self, radius: u32) -> Result<u32, LayoutError> {
        Ok(self.layout(radius)?.bytes)
    }

    pub fn tiles(&self, width: u32, height: u32) -> u64 {
        width.div_ceil(self.tile_w.max(1)) as u64 * height.div_ceil(self.tile_h.max(1)) as u64
    }

    pub fn grid(&self, width: u32, height: u32) -> u32 {
        self.tiles(width, height).clamp(1, MAX_GRID as u64) as u32
    }
}

/// # Safety
/// `input` and `output` hold `width * height` floats, `weights` `(2R+1)^2`; the launch
/// gave the layout's bytes; the config [`fits`](Stencil2dConfig::fits).
// Index loops over register arrays with constant bounds are what keeps them registers.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn stencil<const R: usize, const K: usize>(
    input: *const f32,
    weights: *const f32,
    output: *mut f32,
    width: u32,
    height: u32,
    tile_w: u32,
    tile_h: u32,
) {
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let cfg = Stencil2dConfig { block, tile_w, tile_h };
    if !cfg.fits() {
        gpu::trap();
    }
    let Ok(l) = cfg.layout(R as u32) else { gpu::trap() };
    let region = gpu::launch_region(l.bytes);
    let (tile, wt): (SharedArray<f32>, SharedArray<f32>) = (region.array(l.tile), region.array(l.weights));
    let pitch = tile_w + 2 * R as u32;
    let rows_total = tile_h + 2 * R as u32;
    let (tx, strips) = (tid % tile_w, block / tile_w);
    let strip = tile_h / strips;
    let y_first = (tid / tile_w) * strip;

    let mut i = tid;
    while i < (K * K) as u32 {
        unsafe { wt.write(i, weights.add(i as usize).read()) };
        i += block;
    }
    gpu::barrier();
    // Flat K*K arrays indexed by constants in fully unrolled loops stay in registers
    // (arrays of rows copied whole went to local memory).
    let mut w = [0.0f32; 25];
    for i in 0..K * K {
        w[i] = unsafe { wt.read(i as u32) };
    }

    let tiles_x = width.div_ceil(tile_w).max(1) as u64;
    let tiles = cfg.tiles(width, height);
    let mut t = gpu::block_idx_x() as u64;
    while t < tiles {
        let x0 = (t % tiles_x) as u32 * tile_w;
        let y0 = (t / tiles_x) as u32 * tile_h;
        // Tile pixel (c, r) is image pixel (x0 - R + c, y0 - R + r), clamped to the edge.
        // Thread tid loads tile pixels tid, tid + block, ... in row-major order; the row
        // and column advance incrementally (no division per pixel), four loads in flight.
        let load = |r: u32, c: u32| {
            let gx = (x0 + c).saturating_sub(R as u32).min(width - 1);
            let gy = (y0 + r).saturating_sub(R as u32).min(height - 1);
            unsafe { input.add(gy as usize * width as usize + gx as usize).read() }
        };
        let (dr, dc) = (block / pitch, block % pitch);
        let advance = |r: &mut u32, c: &mut u32| {
            *c += dc;
            *r += dr;
            if *c >= pitch {
                *c -= pitch;
                *r += 1;
            }
        };
        let (mut r, mut c) = (tid / pitch, tid % pitch);
        while r < rows_total {
            let p0 = (r, c);
            advance(&mut r, &mut c);
            let p1 = (r, c);
            advance(&mut r, &mut c);
            let p2 = (r, c);
            advance(&mut r, &mut c);
            let p3 = (r, c);
            advance(&mut r, &mut c);
            let v0 = load(p0.0, p0.1);
            let v1 = if p1.0 < rows_total { load(p1.0, p1.1) } else { 0.0 };
            let v2 = if p2.0 < rows_total { load(p2.0, p2.1) } else { 0.0 };
            let v3 = if p3.0 < rows_total { load(p3.0, p3.1) } else { 0.0 };
            // p0 is in the tile (the loop's condition); the others may be past its end.
            unsafe { tile.write(p0.0 * pitch + p0.1, v0) };
            if p1.0 < rows_total {
                unsafe { tile.write(p1.0 * pitch + p1.1, v1) };
            }
            if p2.0 < rows_total {
                unsafe { tile.write(p2.0 * pitch + p2.1, v2) };
            }
            if p3.0 < rows_total {
                unsafe { tile.write(p3.0 * pitch + p3.1, v3) };
            }
        }
        gpu::barrier();

        let mut win = [0.0f32; 25];
        for dy in 0..K - 1 {
            for dx in 0..K {
                win[dy * K + dx] = unsafe { tile.read((y_first + dy as u32) * pitch + tx + dx as u32) };
            }
        }
        let mut r = 0;
        while r < strip {
            // The window's last row is tile row y_first + r + K - 1.
            for dx in 0..K {
                win[(K - 1) * K + dx] = unsafe { tile.read((y_first + r + K as u32 - 1) * pitch + tx + dx as u32) };
            }
            // One accumulator per window row: K short chains of dependent FMAs instead of
            // one chain of K * K (each FMA waits for the previous result).
            let mut rows = [0.0f32; 5];
            for dy in 0..K {
                for dx in 0..K {
                    rows[dy] = gpu::fma(w[dy * K + dx], win[dy * K + dx], rows[dy]);
                }
            }
            let mut acc = rows[0];
            for dy in 1..K {
                acc += rows[dy];
            }
            let (x, y) = (x0 + tx, y0 + y_first + r);
            if x < width && y < height {
                unsafe { output.add(y as usize * width as usize + x as usize).write(acc) };
            }
            for i in 0..(K - 1) * K {
                win[i] = win[i + K];
            }
            r += 1;
        }
        // The next tile overwrites the shared tile.
        gpu::barrier();
        t += gpu::grid_dim_x() as u64;
    }
}

crate::kernels! { KERNELS;
    /// 3x3 stencil; see the module documentation.
    pub fn stencil2d_f32_r1(input: *const f32, weights: *const f32, output: *mut f32, width: u32, height: u32, tile_w: u32, tile_h: u32) {
        unsafe { stencil::<1, 3>(input, weights, output, width, height, tile_w, tile_h) }
    }
    /// 5x5 stencil; see the module documentation.
    pub fn stencil2d_f32_r2(input: *const f32, weights: *const f32, output: *mut f32, width: u32, height: u32, tile_w: u32, tile_h: u32) {
        unsafe { stencil::<2, 5>(input, weights, output, width, height, tile_w, tile_h) }
    }
}

/// The entry point for `radius`, if the image has one.
pub fn entry_name(radius: u32) -> Option<&'static str> {
    match radius {
        1 => Some("stencil2d_f32_r1"),
        2 => Some("stencil2d_f32_r2"),
        _ => None,
    }
}
