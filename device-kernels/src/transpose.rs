//! Transpose of a row-major `rows x cols` f32 matrix into `cols x rows`, through padded
//! square tiles in launch-sized shared memory.
//!
//! # Algorithm and thread mapping
//! The matrix is cut into `tile x tile` tiles; block `b` walks tiles `b, b + grid, ...`
//! (row-major order of tiles). A block of `block` threads is `tile` columns by
//! `block / tile` rows of threads: thread `(tx, ty) = (tid % tile, tid / tile)` copies
//! input rows `ty, ty + block/tile, ...` of the tile (coalesced along `tx`) into the shared
//! tile, then writes output rows `ty, ...` of the transposed tile, reading the shared tile
//! down a column. Rows of the shared tile are `tile + pad` floats apart: with `pad = 1`
//! a column read hits 32 different banks, with `pad = 0` a 32-wide tile puts the whole
//! column in one bank; `pad` is chosen at launch, so its effect can be measured.
//!
//! # Thin matrices ([`TransposeConfig::slab`])
//! Where one side is at most [`SLAB_SIDE`] (a few rows or columns), square tiles would
//! leave most of a tile empty. The same launch-sized memory then holds a *slab*: all
//! `short` lines of `width = tile * (tile + pad) / short` consecutive positions along the
//! long side. Block `b` walks slabs `b, b + grid, ...`. The short-side-major form (element
//! `(s, l)` at `s * long + l`: the input of a wide matrix, the output of a tall one) is
//! `short` runs of `width` floats; the long-side-major form (`l * short + s`) is one run of
//! `short * width` floats. Threads copy both as consecutive elements, four loads in flight
//! each, so every global access is coalesced; the slab is `short` rows of `width` floats.
//! The slabs are an entry of their own, `transpose_thin_f32` (the host picks it where
//! [`TransposeConfig::slab`] cuts the matrix): ptxas gives an entry one register count for
//! all its paths, and the slab's 64-bit index arithmetic would set the tiles' count too, and
//! with it how many tile blocks a multiprocessor keeps.
//!
//! # Launch-sized memory ([`TransposeConfig::layout`]): `tile * (tile + pad)` f32.
//!
//! # Entry point
//! `transpose_f32(input, output, rows: u32, cols: u32, tile: u32, pad: u32)` (tiles) and
//! `transpose_thin_f32` (slabs, same arguments); both require `block % tile == 0` and
//! `block >= tile`.

use crate::gpu::{self, SharedArray};
use crate::layout::{Carve, LayoutError, Slice};

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TransposeConfig {
    pub block: u32,
    /// Side of the square tile.
    pub tile: u32,
    /// Floats of padding per shared-tile row.
    pub pad: u32,
}

/// Why a [`TransposeConfig`] cannot run ([`TransposeConfig::fits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransposeRefusal {
    /// `block` is not a positive multiple of `tile`.
    Block {
        block: u32,
        tile: u32,
    },
    Layout(LayoutError),
}

impl core::fmt::Display for TransposeRefusal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TransposeRefusal::Block { block, tile } => {
                write!(f, "block ({block}) must be a positive multiple of tile ({tile})")
            }
            TransposeRefusal::Layout(e) => write!(f, "shared-memory layout: {e}"),
        }
    }
}

/// Most blocks a launch uses; blocks loop over the tiles past it.
pub const MAX_GRID: u32 = 65_535;

/// Longest short side a matrix is transposed by slabs at ([`TransposeConfig::slab`]).
pub const SLAB_SIDE: u32 = 8;

/// How a thin matrix is cut: `short` lines of `width` positions along the long side per
/// slab; `wide`: the short side is the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slab {
    pub short: u32,
    pub long: u32,
    pub width: u32,
    pub wide: bool,
}

impl TransposeConfig {
    pub fn layout(&self) -> Result<Slice<f32>, LayoutError> {
        let row = self.tile.checked_add(self.pad);
        let len = row.and_then(|r| r.checked_mul(self.tile));
        // Reported as `tile` rows of `tile + pad` floats, so the message shows the size asked.
        let row_bytes = self.tile.saturating_add(self.pad).saturating_mul(4);
        let len = len.ok_or(LayoutError::Overflow { offset: 0, len: self.tile, elem_bytes: row_bytes })?;
        Carve::new().array::<f32>(len)
    }

    pub fn shared_bytes(&self) -> Result<u32, LayoutError> {
        Ok(self.layout()?.bytes())
    }

    /// Every rule of the entry point for a config, in one place (the kernel, the host's
    /// validation and the tuner all ask it): the block's threads cover whole tile rows
    /// (`block` a positive multiple of `tile`), and the layout can be carved. The
    /// launch-sized bytes, or why not.
    pub fn fits(&self) -> Result<u32, TransposeRefusal> {
        if self.tile == 0 || self.block < self.tile || !self.block.is_multiple_of(self.tile) {
            return Err(TransposeRefusal::Block { block: self.block, tile: self.tile });
        }
        self.shared_bytes().map_err(TransposeRefusal::Layout)
    }

    /// The slab a `rows x cols` matrix is cut in, where one side is 1 to [`SLAB_SIDE`]
    /// and the tile's floats hold at least one position per line.
    pub fn slab(&self, rows: u32, cols: u32) -> Option<Slab> {
        let (short, long, wide) = if rows <= cols { (rows, cols, true) } else { (cols, rows, false) };
        let floats = self.tile.checked_add(self.pad)?.checked_mul(self.tile)?;
        let width = floats / short.max(1);
        ((1..=SLAB_SIDE).contains(&short) && width >= 1).then_some(Slab { short, long, width, wide })
    }

    /// Square tiles of a `rows x cols` matrix (what the twins walk).
    pub fn square_tiles(&self, rows: u32, cols: u32) -> u64 {
        let t = self.tile.max(1);
        rows.div_ceil(t) as u64 * cols.div_ceil(t) as u64
    }

    /// Tiles of a `rows x cols` matrix: slabs where [`TransposeConfig::slab`] cuts it so,
    /// square tiles otherwise.
    pub fn tiles(&self, rows: u32, cols: u32) -> u64 {
        match self.slab(rows, cols) {
            Some(s) => s.long.div_ceil(s.width) as u64,
            None => self.square_tiles(rows, cols),
        }
    }

    pub fn grid(&self, rows: u32, cols: u32) -> u32 {
        self.tiles(rows, cols).clamp(1, MAX_GRID as u64) as u32
    }
}

/// # Contract
/// `input` holds `rows * cols` floats, `output` as many; `block % tile == 0`; the launch
/// gave the layout's bytes (checked: traps otherwise).
#[inline(always)]
fn transpose(input: *const f32, output: *mut f32, rows: u32, cols: u32, tile: u32, pad: u32) {
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let cfg = TransposeConfig { block, tile, pad };
    if cfg.fits().is_err() {
        gpu::trap();
    }
    let Ok(slice) = cfg.layout() else { gpu::trap() };
    let shared: SharedArray<f32> = gpu::launch_region(slice.bytes()).array(slice);
    let (tx, ty, step) = (tid % tile, tid / tile, block / tile);
    let stride = tile + pad;
    // At least 1, so the division below needs no zero check (an empty matrix has no tiles).
    let tiles_x = cols.div_ceil(tile).max(1) as u64;
    let tiles = cfg.square_tiles(rows, cols);

    let mut t = gpu::block_idx_x() as u64;
    while t < tiles {
        let r0 = (t / tiles_x) as u32 * tile;
        let c0 = (t % tiles_x) as u32 * tile;
        // Four rows' loads in flight before their stores (see `crate::stage`).
        let c = c0 + tx;
        let load = |j: u32| {
            let r = r0 + j;
            if r < rows && c < cols {
                unsafe { gpu::read_global(input.add(r as usize * cols as usize + c as usize)) }
            } else {
                0.0
            }
        };
        let mut j = ty;
        while tile > j && tile - j > 3 * step {
            let (a, b, c2, d) = (load(j), load(j + step), load(j + 2 * step), load(j + 3 * step));
            unsafe {
                shared.write(j * stride + tx, a);
                shared.write((j + step) * stride + tx, b);
                shared.write((j + 2 * step) * stride + tx, c2);
                shared.write((j + 3 * step) * stride + tx, d);
            }
            j += 4 * step;
        }
        while j < tile {
            unsafe { shared.write(j * stride + tx, load(j)) };
            j += step;
        }
        gpu::barrier();
        // Output row `c0 + j` holds input column `c0 + j`; its element `r0 + tx` is
        // input row `r0 + tx`: a column of the shared tile.
        let mut j = ty;
        while j < tile {
            let (out_r, out_c) = (c0 + j, r0 + tx);
            if out_r < cols && out_c < rows {
                let v = unsafe { shared.read(tx * stride + j) };
                unsafe { gpu::write_global(output.add(out_r as usize * rows as usize + out_c as usize), v) };
            }
            j += step;
        }
        // The next tile overwrites the shared tile.
        gpu::barrier();
        t += gpu::grid_dim_x() as u64;
    }
}

/// `i / d` and `i % d` as a multiply: exact for `i * d < 2^40` (a slab's floats times its
/// width, both under 2^20).
#[derive(Clone, Copy)]
struct FastDiv {
    d: u32,
    m: u64,
}

impl FastDiv {
    #[inline(always)]
    fn new(d: u32) -> FastDiv {
        FastDiv { d, m: (1u64 << 40).div_ceil(d.max(1) as u64) }
    }
    #[inline(always)]
    fn div_rem(self, i: u32) -> (u32, u32) {
        let q = ((i as u64 * self.m) >> 40) as u32;
        (q, i - q * self.d)
    }
}

/// The thin-matrix form (see the module documentation): slab `t` holds long-side positions
/// `t * width ..`, line `s` of it at `s * width` of the launch-sized memory. Traps where the
/// config does not cut the matrix in slabs ([`TransposeConfig::slab`]).
///
/// # Contract
/// As [`transpose`].
#[inline(always)]
fn transpose_thin(input: *const f32, output: *mut f32, rows: u32, cols: u32, tile: u32, pad: u32) {
    let (tid, block) = (gpu::thread_idx_x(), gpu::block_dim_x());
    let cfg = TransposeConfig { block, tile, pad };
    let (Ok(slice), Some(slab)) = (cfg.layout(), cfg.slab(rows, cols)) else { gpu::trap() };
    let shared: SharedArray<f32> = gpu::launch_region(slice.bytes()).array(slice);
    let Slab { short, long, width, wide } = slab;
    let by_short = FastDiv::new(short);
    let mut t = gpu::block_idx_x();
    let slabs = long.div_ceil(width);
    while t < slabs {
        let l0 = t * width;
        let w = width.min(long - l0);
        let n = w * short;
        let by_w = FastDiv::new(w);
        // Element `i` of the slab in short-side-major order: line `i / w`, position `i % w`;
        // in long-side-major order: position `i / short`, line `i % short`.
        let strided = |i: u32| {
            let (s, l) = by_w.div_rem(i);
            (s * width + l, s as usize * long as usize + (l0 + l) as usize)
        };
        let packed = |i: u32| {
            let (l, s) = by_short.div_rem(i);
            (s * width + l, l0 as usize * short as usize + i as usize)
        };
        let at = |i: u32, input_side: bool| if wide == input_side { strided(i) } else { packed(i) };
        // Copy in: four loads in flight before their stores.
        let mut i = tid;
        while i + 3 * block < n {
            let (k0, k1, k2, k3) = (at(i, true), at(i + block, true), at(i + 2 * block, true), at(i + 3 * block, true));
            let x = unsafe {
                [
                    gpu::read_global(input.add(k0.1)),
                    gpu::read_global(input.add(k1.1)),
                    gpu::read_global(input.add(k2.1)),
                    gpu::read_global(input.add(k3.1)),
                ]
            };
            unsafe {
                shared.write(k0.0, x[0]);
                shared.write(k1.0, x[1]);
                shared.write(k2.0, x[2]);
                shared.write(k3.0, x[3]);
            }
            i += 4 * block;
        }
        while i < n {
            let (k, g) = at(i, true);
            unsafe { shared.write(k, gpu::read_global(input.add(g))) };
            i += block;
        }
        gpu::barrier();
        let mut i = tid;
        while i < n {
            let (k, g) = at(i, false);
            unsafe { gpu::write_global(output.add(g), shared.read(k)) };
            i += block;
        }
        // The next slab overwrites this one.
        gpu::barrier();
        t += gpu::grid_dim_x();
    }
}

crate::kernels! { KERNELS;
    /// `output = input^T` by square tiles (any shape); see the module documentation. 32
    /// registers (no spill): eight blocks of 256 threads a multiprocessor, as the CUDA C
    /// twin; the tiles' loads need threads in flight, not registers.
    pub fn transpose_f32(input: *const f32, output: *mut f32, rows: u32, cols: u32, tile: u32, pad: u32) [max_registers = 32] {
        transpose(input, output, rows, cols, tile, pad)
    }
    /// `output = input^T` by slabs, for the matrices [`TransposeConfig::slab`] cuts so (an
    /// entry of its own: the slab's index arithmetic would raise the tiles' registers).
    pub fn transpose_thin_f32(input: *const f32, output: *mut f32, rows: u32, cols: u32, tile: u32, pad: u32) {
        transpose_thin(input, output, rows, cols, tile, pad)
    }
}
