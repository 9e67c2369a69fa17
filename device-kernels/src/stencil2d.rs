//! 2-D stencil (3x3 or 5x5 weights, e.g. box or Gaussian blur) over a row-major
//! `height x width` f32 image, clamping to the edge, with a bordered tile in launch-sized
//! shared memory.
//!
//! # Algorithm and thread mapping
//! The image is cut into `tile_w x tile_h` output tiles (`tile_w` a multiple of 4); blocks
//! walk tiles `b, b + grid, ...`. For a tile, the block loads the input pixels it needs
//! into the shared `tile`: `tile_h + 2r` rows of `tile_w + 8` columns, from [`HALO`] = 4
//! columns left of the tile to 4 right of it (so every row is whole 16-byte vectors, loaded
//! and stored as such), rows and columns clamped to the image. Thread `t` owns the four
//! columns `4 * (t % G)` (`G = tile_w / 4` column groups) and a strip of `tile_h / (block
//! / G)` consecutive rows starting at row `(t / G) * strip`. It keeps the `K x K` weights
//! (`K = 2r + 1`) and a window of `K` tile rows of `4 + 2r` floats in registers and slides
//! the window down its strip: each row of four outputs costs three 16-byte shared loads,
//! `4 K^2` fused multiply-adds and one 16-byte store. The row loop is unrolled by `K` so
//! that sliding the window renames registers instead of copying them. The radius is a
//! const generic (the window must be registers); the tile shape is launch-time.
//!
//! # Launch-sized memory ([`Stencil2dConfig::layout`])
//! `tile`: `(tile_w / 4 + 2) * (tile_h + 2r)` 16-byte vectors; `weights`: `K * K` floats.
//!
//! # Entry points
//! `stencil2d_f32_r1` (3x3) and `stencil2d_f32_r2` (5x5), each
//! `(input, weights, output, width: u32, height: u32, tile_w: u32, tile_h: u32)`;
//! requires `tile_w % 4 == 0`, `block % (tile_w / 4) == 0` and
//! `tile_h % (block / (tile_w / 4)) == 0` ([`Stencil2dConfig::fits`]).

use crate::gpu::{self, SharedArray};
use crate::layout::{Carve, LayoutError, Slice};
use crate::vector::{self, Vec4};

/// Radii the image is built for.
pub const RADII: [u32; 2] = [1, 2];
/// Most blocks a launch uses; blocks loop over the tiles past it.
pub const MAX_GRID: u32 = 65_535;
/// Tile columns kept on each side of a tile's outputs: a whole vector, at least any radius.
pub const HALO: u32 = 4;

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stencil2dConfig {
    pub block: u32,
    pub tile_w: u32,
    pub tile_h: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stencil2dLayout {
    pub tile: Slice<Vec4<f32>>,
    pub weights: Slice<f32>,
    pub bytes: u32,
}

impl Stencil2dConfig {
    /// Column groups of four: the threads across a tile.
    pub fn groups(&self) -> u32 {
        self.tile_w / 4
    }

    /// Whether the thread arrangement divides the tile (see the entry-point contract).
    pub fn fits(&self) -> bool {
        let g = self.groups();
        self.tile_w.is_multiple_of(4)
            && g > 0
            && self.block >= g
            && self.block.is_multiple_of(g)
            && self.tile_h > 0
            && self.tile_h.is_multiple_of(self.block / g)
    }

    /// Vectors per tile row.
    pub fn pitch_vecs(&self) -> u32 {
        self.tile_w / 4 + 2 * HALO / 4
    }

    pub fn layout(&self, radius: u32) -> Result<Stencil2dLayout, LayoutError> {
        let overflow = LayoutError::Overflow { offset: 0, len: self.tile_h, elem_bytes: 16 };
        // Checked: a radius near 2^31 wraps 2r + 1 and (2r + 1)^2.
        let r2 = radius.checked_mul(2).ok_or(overflow)?;
        let k = r2.checked_add(1).ok_or(overflow)?;
        let h = self.tile_h.checked_add(r2).ok_or(overflow)?;
        let mut carve = Carve::new();
        let tile = carve.array::<Vec4<f32>>(self.pitch_vecs().checked_mul(h).ok_or(overflow)?)?;
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
    const { assert!(K == 2 * R + 1 && R <= HALO as usize && K <= 5) };
    // Window row: tile columns 4g + 4 - R .. 4g + 8 + R of the thread's group g.
    let ww = 4 + 2 * R;
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let cfg = Stencil2dConfig { block, tile_w, tile_h };
    if !cfg.fits() {
        gpu::trap();
    }
    let Ok(l) = cfg.layout(R as u32) else { gpu::trap() };
    let region = gpu::launch_region(l.bytes);
    let (tile, wt): (SharedArray<Vec4<f32>>, SharedArray<f32>) = (region.array(l.tile), region.array(l.weights));
    let pitch = cfg.pitch_vecs();
    let rows_total = tile_h + 2 * R as u32;
    let groups = cfg.groups();
    let g = tid % groups;
    let strip = tile_h / (block / groups);
    let y_first = (tid / groups) * strip;
    // Whole rows are vectors of the image only when rows start 16-byte aligned.
    let in_vec = width.is_multiple_of(4) && vector::is_aligned16(input);
    let out_vec = width.is_multiple_of(4) && vector::is_aligned16(output);

    let mut i = tid;
    while i < (K * K) as u32 {
        unsafe { wt.write(i, gpu::read_global(weights.add(i as usize))) };
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
        // Tile vector (r, c) holds image row y0 - R + r and columns x0 - 4 + 4c .. + 4,
        // each clamped to the image.
        let load = |r: u32, c: u32| -> Vec4<f32> {
            let gy = (y0 + r).saturating_sub(R as u32).min(height - 1);
            let row = unsafe { input.add(gy as usize * width as usize) };
            let gx = (x0 + 4 * c) as i64 - HALO as i64;
            if in_vec && gx >= 0 && gx + 4 <= width as i64 {
                unsafe { gpu::read_global(row.add(gx as usize).cast::<Vec4<f32>>()) }
            } else {
                let mut v = Vec4::splat(0.0);
                for lane in 0..4 {
                    let x = (gx + lane as i64).clamp(0, width as i64 - 1);
                    v.0[lane] = unsafe { gpu::read_global(row.add(x as usize)) };
                }
                v
            }
        };
        // Thread tid loads tile vectors tid, tid + block, ... in row-major order; the row
        // and column advance incrementally (no division per vector), four loads in flight.
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
        // A tile whose border is inside the image (all but the edge tiles) is copied with
        // no clamping, every vector in flight at once.
        let inside = in_vec
            && x0 >= HALO
            && x0 as u64 + (tile_w + HALO) as u64 <= width as u64
            && y0 >= R as u32
            && y0 as u64 + rows_total as u64 - R as u64 <= height as u64;
        if inside {
            let origin = unsafe { input.add((y0 - R as u32) as usize * width as usize + (x0 - HALO) as usize) };
            while r < rows_total {
                let src = unsafe { origin.add(r as usize * width as usize + 4 * c as usize) };
                unsafe { tile.copy_async(r * pitch + c, src.cast()) };
                advance(&mut r, &mut c);
            }
            gpu::copy_async_wait();
        }
        while r < rows_total {
            let p0 = (r, c);
            advance(&mut r, &mut c);
            let p1 = (r, c);
            advance(&mut r, &mut c);
            let p2 = (r, c);
            advance(&mut r, &mut c);
            let p3 = (r, c);
            advance(&mut r, &mut c);
            let zero = Vec4::splat(0.0);
            let v0 = load(p0.0, p0.1);
            let v1 = if p1.0 < rows_total { load(p1.0, p1.1) } else { zero };
            let v2 = if p2.0 < rows_total { load(p2.0, p2.1) } else { zero };
            let v3 = if p3.0 < rows_total { load(p3.0, p3.1) } else { zero };
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

        // The window of tile row y_first + j lives in slot j % K: win[slot * ww ..][..ww].
        let mut win = [0.0f32; 5 * 12];
        let read_row = |win: &mut [f32; 60], slot: usize, tr: u32| {
            let b = tr * pitch + g;
            let v = unsafe { [tile.read(b), tile.read(b + 1), tile.read(b + 2)] };
            for i in 0..ww {
                let e = HALO as usize - R + i;
                win[slot * ww + i] = v[e / 4].0[e % 4];
            }
        };
        for j in 0..K - 1 {
            read_row(&mut win, j, y_first + j as u32);
        }
        let x = x0 + 4 * g;
        let mut r = 0;
        // In step u, r = u (mod K), so every slot index below is a constant: one copy of
        // the step per u (a macro, because a loop over u is too large for LLVM to unroll,
        // and a rolled one indexes the window at run time, which puts it in local memory).
        macro_rules! step {
            ($u:literal) => {
                if $u < K && r < strip {
                    read_row(&mut win, ($u + K - 1) % K, y_first + r + K as u32 - 1);
                    let mut out = Vec4::splat(0.0f32);
                    for c in 0..4 {
                        // One accumulator per window row: K short chains of dependent FMAs
                        // instead of one chain of K * K.
                        let mut rows = [0.0f32; 5];
                        for dy in 0..K {
                            let slot = ($u + dy) % K;
                            for dx in 0..K {
                                rows[dy] = gpu::fma(w[dy * K + dx], win[slot * ww + c + dx], rows[dy]);
                            }
                        }
                        let mut acc = rows[0];
                        for dy in 1..K {
                            acc += rows[dy];
                        }
                        out.0[c] = acc;
                    }
                    let y = y0 + y_first + r;
                    if y < height && x < width {
                        let row = unsafe { output.add(y as usize * width as usize) };
                        unsafe { vector::store4(row, x as u64, width as u64, out, out_vec) };
                    }
                    r += 1;
                }
            };
        }
        while r < strip {
            step!(0);
            step!(1);
            step!(2);
            step!(3);
            step!(4);
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
