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

/// Radii with an entry of their own (the radius a const generic: [`stencil2d_f32_r1`],
/// [`stencil2d_f32_r2`]); every radius up to [`MAX_RADIUS`] runs on [`stencil2d_f32`].
pub const RADII: [u32; 2] = [1, 2];
/// The largest radius [`stencil2d_f32`] takes.
pub const MAX_RADIUS: u32 = 32;
/// Most blocks a launch uses; blocks loop over the tiles past it.
pub const MAX_GRID: u32 = 65_535;
/// Tile columns kept on each side of a tile's outputs by the const-radius entries: a whole
/// vector, at least their radius ([`halo`] of it).
pub const HALO: u32 = 4;

/// Tile columns kept on each side of a tile's outputs for `radius`: the radius rounded up
/// to whole vectors (at least one), so every tile row is whole 16-byte vectors.
#[inline(always)]
pub fn halo(radius: u32) -> u32 {
    radius.max(1).next_multiple_of(4)
}

/// Vectors past the tile's rows: [`tap_row`]'s windows read up to two vectors past the
/// last one its taps use.
pub const TILE_SPARE: u32 = 2;

/// Floats of one row of the launch-sized weights: the `2r + 1` taps, rounded up to whole
/// vectors (zeros past the taps).
#[inline(always)]
pub fn weight_pitch(radius: u32) -> u32 {
    (2 * radius + 1).next_multiple_of(4)
}

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

    /// Vectors per tile row for `radius`.
    pub fn pitch_vecs(&self, radius: u32) -> u32 {
        self.tile_w / 4 + 2 * halo(radius) / 4
    }

    /// The tile (its rows, then [`TILE_SPARE`] vectors that a row's last window may read
    /// past the last row) and the weights (`2r + 1` rows of [`weight_pitch`] floats).
    pub fn layout(&self, radius: u32) -> Result<Stencil2dLayout, LayoutError> {
        let overflow = LayoutError::Overflow { offset: 0, len: self.tile_h, elem_bytes: 16 };
        if radius > MAX_RADIUS {
            return Err(overflow);
        }
        let k = 2 * radius + 1;
        let h = self.tile_h.checked_add(2 * radius).ok_or(overflow)?;
        let mut carve = Carve::new();
        let vectors = self.pitch_vecs(radius).checked_mul(h).and_then(|n| n.checked_add(TILE_SPARE)).ok_or(overflow)?;
        let tile = carve.array::<Vec4<f32>>(vectors)?;
        let weights = carve.array_aligned::<f32>(k * weight_pitch(radius), 16)?;
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

/// The image a tile is read from: `width x height` floats at `input`; `in_vec` where its
/// rows start 16-byte aligned (so whole rows are vectors of it).
#[derive(Clone, Copy)]
struct Source {
    input: *const f32,
    width: u32,
    height: u32,
    in_vec: bool,
}

/// Fills the shared `tile` for the tile at `(x0, y0)`: tile vector `(r, c)` (`r <
/// rows_total`, `c < pitch`) holds image row `y0 - radius + r` and the four columns from
/// `x0 - halo + 4c`, each clamped to the image. Thread `tid` loads tile vectors `tid, tid + block, ...`
/// in row-major order; the row and column advance incrementally (no division per vector),
/// four loads in flight. A tile whose border is inside the image (all but the edge tiles)
/// is copied with no clamping, every vector in flight at once. The caller's barrier makes
/// the tile visible.
///
/// # Contract
/// `src` holds the image; `tile` holds `rows_total * pitch` vectors; `halo` is a multiple
/// of 4.
#[inline(always)]
fn load_tile(
    tile: SharedArray<Vec4<f32>>,
    src: Source,
    (x0, y0): (u32, u32),
    (tile_w, rows_total, pitch): (u32, u32, u32),
    (halo, radius): (u32, u32),
) {
    let Source { input, width, height, in_vec } = src;
    let (tid, block) = (gpu::thread_idx_x(), gpu::block_dim_x());
    let load = |r: u32, c: u32| -> Vec4<f32> {
        let gy = (y0 + r).saturating_sub(radius).min(height - 1);
        let row = unsafe { input.add(gy as usize * width as usize) };
        let gx = (x0 + 4 * c) as i64 - halo as i64;
        if in_vec && gx >= 0 && gx + 4 <= width as i64 {
            unsafe { gpu::read_global(row.add(gx as usize).cast::<Vec4<f32>>()) }
        } else {
            let lane = |l: i64| unsafe { gpu::read_global(row.add((gx + l).clamp(0, width as i64 - 1) as usize)) };
            Vec4([lane(0), lane(1), lane(2), lane(3)])
        }
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
    let inside = in_vec
        && x0 >= halo
        && x0 as u64 + (tile_w + halo) as u64 <= width as u64
        && y0 >= radius
        && y0 as u64 + rows_total as u64 - radius as u64 <= height as u64;
    if inside {
        let origin = unsafe { input.add((y0 - radius) as usize * width as usize + (x0 - halo) as usize) };
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
}

/// # Contract
/// `input` and `output` hold `width * height` floats, `weights` `(2R+1)^2`; the launch
/// gave the layout's bytes; the config [`fits`](Stencil2dConfig::fits).
// Index loops over register arrays with constant bounds are what keeps them registers.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn stencil<const R: usize, const K: usize>(
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
    let pitch = cfg.pitch_vecs(R as u32);
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
        let src = Source { input, width, height, in_vec };
        load_tile(tile, src, (x0, y0), (tile_w, rows_total, pitch), (HALO, R as u32));
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
                        vector::store4(row, x as u64, width as u64, out, out_vec);
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

/// `acc[c] += sum_{i < N} w[i] * t[S + c + i]` for the four outputs `c`, `t` the twelve
/// floats of `v`: `N` taps of a weight row at window offset `S` (all constants, so `v` stays
/// registers).
// Index loops over register arrays with constant bounds are what keeps them registers.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn taps<const S: usize, const N: usize>(acc: &mut [f32; 4], v: [Vec4<f32>; 3], w: Vec4<f32>) {
    for (c, a) in acc.iter_mut().enumerate() {
        for i in 0..N {
            let e = S + c + i;
            *a = gpu::fma(w.0[i], v[e / 4].0[e % 4], *a);
        }
    }
}

/// One tile row's share of a thread's four outputs: the `4 * full + REM` taps of weight row
/// `wrow` (vector index in `wv`) over the tile row's floats from `4 * b + S` on (`b`: the
/// thread's first vector of that row). Chunk `j` of four taps reads vectors `b + j .. b + j +
/// 3`; each chunk loads one new vector, into the slot the chunk before it freed (the loop
/// is unrolled by three so the slots rotate by name, not by copies). The last window may
/// read up to two vectors past what its taps use (the layout's [`TILE_SPARE`] vectors cover
/// the tile's end).
#[inline(always)]
fn tap_row<const S: usize, const REM: usize>(
    acc: &mut [f32; 4],
    tile: SharedArray<Vec4<f32>>,
    wv: SharedArray<Vec4<f32>>,
    (b, wrow, full): (u32, u32, u32),
) {
    let (mut x, mut y, mut z) = unsafe { (tile.read(b), tile.read(b + 1), tile.read(b + 2)) };
    let mut j = 0;
    macro_rules! step {
        ($a:ident, $b:ident, $c:ident) => {
            let w = unsafe { wv.read(wrow + j) };
            if j == full {
                taps::<S, REM>(acc, [$a, $b, $c], w);
                return;
            }
            taps::<S, 4>(acc, [$a, $b, $c], w);
            $a = unsafe { tile.read(b + j + 3) };
            j += 1;
        };
    }
    loop {
        step!(x, y, z);
        step!(y, z, x);
        step!(z, x, y);
    }
}

/// Any radius up to [`MAX_RADIUS`], given at launch: the tile as for the const-radius entries
/// (rows of [`halo`]`(radius)` extra columns each side), the weights in launch-sized memory
/// as `2r + 1` rows of [`weight_pitch`] floats. Thread `t` owns the four columns `4g`
/// (`g = t % G`) of a strip of `tile_h / (block / G)` rows; each output row of four is
/// `2r + 1` calls of [`tap_row`], whose window starts `S = halo - r` floats into the
/// thread's first vector. `S` (0..=3) fixes the taps past whole chunks (`REM = (2r + 1) mod
/// 4`: 1 for even `S`, 3 for odd) and picks one of four copies of the loop, so every
/// register index is a constant.
///
/// # Contract
/// `input` and `output` hold `width * height` floats, `weights` `(2r+1)^2`; the launch gave
/// the layout's bytes for `radius`; the config [`fits`](Stencil2dConfig::fits).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn stencil_any(
    input: *const f32,
    weights: *const f32,
    output: *mut f32,
    width: u32,
    height: u32,
    tile_w: u32,
    tile_h: u32,
    radius: u32,
) {
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let cfg = Stencil2dConfig { block, tile_w, tile_h };
    if !cfg.fits() || radius == 0 {
        gpu::trap();
    }
    let Ok(l) = cfg.layout(radius) else { gpu::trap() };
    let region = gpu::launch_region(l.bytes);
    let (tile, wt): (SharedArray<Vec4<f32>>, SharedArray<f32>) = (region.array(l.tile), region.array(l.weights));
    let wv: SharedArray<Vec4<f32>> = unsafe { wt.cast() };
    let (k, h, wp) = (2 * radius + 1, halo(radius), weight_pitch(radius));
    let pitch = cfg.pitch_vecs(radius);
    let rows_total = tile_h + 2 * radius;
    let groups = cfg.groups();
    let g = tid % groups;
    let strip = tile_h / (block / groups);
    let y_first = (tid / groups) * strip;
    let src = Source { input, width, height, in_vec: width.is_multiple_of(4) && vector::is_aligned16(input) };
    let out_vec = width.is_multiple_of(4) && vector::is_aligned16(output);

    // Weight row dy: taps dx at dy * wp + dx, zeros to the row's end; and the spare vectors.
    let mut i = tid;
    while i < k * wp {
        let (dy, dx) = (i / wp, i % wp);
        let w = if dx < k { unsafe { gpu::read_global(weights.add((dy * k + dx) as usize)) } } else { 0.0 };
        unsafe { wt.write(i, w) };
        i += block;
    }
    if tid < TILE_SPARE {
        unsafe { tile.write(rows_total * pitch + tid, Vec4::splat(0.0)) };
    }
    let (s, full) = (h - radius, k / 4);
    let tiles_x = width.div_ceil(tile_w).max(1) as u64;
    let tiles = cfg.tiles(width, height);
    let mut t = gpu::block_idx_x() as u64;
    while t < tiles {
        let x0 = (t % tiles_x) as u32 * tile_w;
        let y0 = (t / tiles_x) as u32 * tile_h;
        load_tile(tile, src, (x0, y0), (tile_w, rows_total, pitch), (h, radius));
        gpu::barrier();
        let x = x0 + 4 * g;
        for yy in y_first..y_first + strip {
            let mut acc = [0.0f32; 4];
            for dy in 0..k {
                let at = ((yy + dy) * pitch + g, dy * (wp / 4), full);
                // s = halo - r fixes 2r + 1 mod 4 (halo is a multiple of 4): four copies.
                match s {
                    0 => tap_row::<0, 1>(&mut acc, tile, wv, at),
                    1 => tap_row::<1, 3>(&mut acc, tile, wv, at),
                    2 => tap_row::<2, 1>(&mut acc, tile, wv, at),
                    _ => tap_row::<3, 3>(&mut acc, tile, wv, at),
                }
            }
            let y = y0 + yy;
            if y < height && x < width {
                let row = unsafe { output.add(y as usize * width as usize) };
                vector::store4(row, x as u64, width as u64, Vec4(acc), out_vec);
            }
        }
        // The next tile overwrites the shared tile.
        gpu::barrier();
        t += gpu::grid_dim_x() as u64;
    }
}

crate::kernels! { KERNELS;
    /// 3x3 stencil; see the module documentation.
    pub fn stencil2d_f32_r1(input: *const f32, weights: *const f32, output: *mut f32, width: u32, height: u32, tile_w: u32, tile_h: u32) {
        stencil::<1, 3>(input, weights, output, width, height, tile_w, tile_h)
    }
    /// 5x5 stencil; see the module documentation.
    pub fn stencil2d_f32_r2(input: *const f32, weights: *const f32, output: *mut f32, width: u32, height: u32, tile_w: u32, tile_h: u32) {
        stencil::<2, 5>(input, weights, output, width, height, tile_w, tile_h)
    }
    /// A stencil of any radius up to `MAX_RADIUS`, given at launch; see `stencil_any`.
    pub fn stencil2d_f32(input: *const f32, weights: *const f32, output: *mut f32, width: u32, height: u32, tile_w: u32, tile_h: u32, radius: u32) {
        stencil_any(input, weights, output, width, height, tile_w, tile_h, radius)
    }
}

/// The entry point of the radius's own, where the image has one ([`RADII`]).
pub fn const_entry(radius: u32) -> Option<&'static str> {
    match radius {
        1 => Some("stencil2d_f32_r1"),
        2 => Some("stencil2d_f32_r2"),
        _ => None,
    }
}

/// The entry point for any radius ([`stencil2d_f32`]).
pub const ANY_RADIUS_ENTRY: &str = "stencil2d_f32";
