//! The example's own kernel: a moving average, `y[i] = mean(x[i..i + window])` for
//! `i < n - window + 1`, each block staging the tile of input its outputs read in
//! launch-sized workgroup memory (CUDA "dynamic shared memory", HIP "dynamic LDS").
//!
//! # Algorithm and thread mapping
//! A block makes `span = block * per_thread` consecutive outputs at a time: it copies the
//! `span + window - 1` inputs they read into the shared `tile` (thread `t` copies elements
//! `t, t + block, ...`), waits at a barrier, then thread `t` makes outputs
//! `t, t + block, ..., t + (per_thread - 1) * block` of the span, each the sum of `window`
//! tile elements times `1 / window`. Each input is read from device memory about once per
//! block instead of `window` times. Blocks walk the spans `b, b + grid, ...`.
//!
//! # Launch-sized memory ([`WindowConfig::layout`])
//! `tile`: `block * per_thread + window - 1` f32. The size depends on the window (a
//! problem size) and on both config values: the host sizes each launch with the same
//! `layout` code the kernel carves with.
//!
//! # Entry point
//! `window_mean_f32(x, y, n: u32, window: u32, per_thread: u32)`, block `block`,
//! `grid = min(ceil((n - window + 1) / span), 65535)`.
//!
//! The crate is built three ways, like `dynsmem-kernels`: for nvptx64 and amdgpu as a
//! `cdylib` (the `kernels!` entry is then `extern "gpu-kernel"`), and for the host as a
//! library whose kernel function the CPU backend runs once per thread.
#![no_std]
#![cfg_attr(gpu, feature(abi_gpu_kernel), allow(internal_features))]
// No `#[panic_handler]` here: on a GPU target `dynsmem-kernels` (a dependency) already
// defines one that traps (a second one would be a duplicate lang item).

use dynsmem_kernels::gpu;
use dynsmem_kernels::layout::{Carve, LayoutError, Slice};

/// Most blocks a launch uses; blocks loop over the spans past it.
pub const MAX_GRID: u32 = 65_535;

/// The tunable launch-time parameters: threads per block and outputs per thread.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WindowConfig {
    pub block: u32,
    pub per_thread: u32,
}

/// Where the kernel finds its tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowLayout {
    pub tile: Slice<f32>,
    pub bytes: u32,
}

impl WindowConfig {
    /// Outputs a block makes per step.
    pub fn span(&self) -> Option<u32> {
        self.block.checked_mul(self.per_thread)
    }

    /// The carve of the launch-sized region for a window of `window` inputs.
    pub fn layout(&self, window: u32) -> Result<WindowLayout, LayoutError> {
        let len = self.span().and_then(|s| s.checked_add(window.saturating_sub(1)));
        let Some(len) = len else { return Err(LayoutError::Overflow { offset: 0, len: u32::MAX, elem_bytes: 4 }) };
        let mut carve = Carve::new();
        let tile = carve.array::<f32>(len)?;
        Ok(WindowLayout { tile, bytes: carve.bytes() })
    }

    /// Launch-sized bytes per block: what the host passes as the launch's shared memory.
    pub fn shared_bytes(&self, window: u32) -> Result<u32, LayoutError> {
        Ok(self.layout(window)?.bytes)
    }

    /// Blocks of the launch for `n` inputs (at least one).
    pub fn grid(&self, n: u32, window: u32) -> u32 {
        let outputs = n.saturating_sub(window.saturating_sub(1)).max(1);
        let span = self.span().unwrap_or(u32::MAX).max(1);
        outputs.div_ceil(span).clamp(1, MAX_GRID)
    }
}

/// # Safety
/// `x` holds `n` floats and `y` `n - window + 1`; `1 <= window <= n`; the launch gave
/// the layout's bytes.
#[inline(always)]
unsafe fn window_mean(x: *const f32, y: *mut f32, n: u32, window: u32, per_thread: u32) {
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let cfg = WindowConfig { block, per_thread };
    let Ok(l) = cfg.layout(window) else { gpu::trap() };
    let tile = gpu::launch_region(l.bytes).array(l.tile);
    let outputs = n - window + 1;
    let span = block * per_thread;
    let inv = 1.0 / window as f32;
    let mut start = gpu::block_idx_x() * span;
    while start < outputs {
        // The inputs this span reads, clipped at the end of `x`.
        let len = (span + window - 1).min(n - start);
        let mut i = tid;
        while i < len {
            unsafe { tile.write(i, gpu::read_global(x.add((start + i) as usize))) };
            i += block;
        }
        gpu::barrier();
        let mut k = 0;
        while k < per_thread {
            let o = k * block + tid;
            if o < outputs - start {
                let mut s = 0.0f32;
                let mut j = 0;
                while j < window {
                    s += unsafe { tile.read(o + j) };
                    j += 1;
                }
                unsafe { gpu::write_global(y.add((start + o) as usize), s * inv) };
            }
            k += 1;
        }
        // The next span overwrites the tile.
        gpu::barrier();
        match start.checked_add(gpu::grid_dim_x() * span) {
            Some(next) => start = next,
            None => break,
        }
    }
}

/// Chunk sums of `u32` (the second example: no static twins). Block `b` sums the
/// `span = block * chunk` inputs `x[b * span ..]` (clipped at `n`) with wrapping adds:
/// thread `t` adds `x[start + t], x[start + t + block], ...` into `scratch[t]` of the
/// launch-sized region (`block` u32), a barrier, then thread 0 adds the `block` partials
/// in order and writes `sums[b]`. Grid `ceil(n / span)`, so every block has one chunk.
///
/// # Safety
/// `x` holds `n` values and `sums` one per block; the launch gave `block * 4` bytes.
#[inline(always)]
unsafe fn chunk_sums(x: *const u32, sums: *mut u32, n: u32, chunk: u32) {
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let mut carve = Carve::new();
    let Ok(slice) = carve.array::<u32>(block) else { gpu::trap() };
    let scratch = gpu::launch_region(carve.bytes()).array(slice);
    let start = gpu::block_idx_x() * block * chunk;
    let end = start.saturating_add(block * chunk).min(n);
    let mut acc = 0u32;
    let mut i = start + tid;
    while i < end {
        acc = acc.wrapping_add(unsafe { gpu::read_global(x.add(i as usize)) });
        i += block;
    }
    unsafe { scratch.write(tid, acc) };
    gpu::barrier();
    if tid == 0 {
        let mut total = 0u32;
        let mut t = 0;
        while t < block {
            total = total.wrapping_add(unsafe { scratch.read(t) });
            t += 1;
        }
        unsafe { gpu::write_global(sums.add(gpu::block_idx_x() as usize), total) };
    }
}

/// The tile of a 2-D box filter of radius `radius`: `tile_w x tile_h` outputs and their halo,
/// `(tile_w + 2 radius) x (tile_h + 2 radius)` f32 row-major in the launch-sized region.
pub fn box_tile(tile_w: u32, tile_h: u32, radius: u32) -> Result<(Slice<f32>, u32), LayoutError> {
    let side = |t: u32| t.checked_add(radius.checked_mul(2)?);
    let len = side(tile_w).zip(side(tile_h)).and_then(|(w, h)| w.checked_mul(h));
    let Some(len) = len else { return Err(LayoutError::Overflow { offset: 0, len: u32::MAX, elem_bytes: 4 }) };
    let mut carve = Carve::new();
    let tile = carve.array::<f32>(len)?;
    Ok((tile, carve.bytes()))
}

/// A 2-D box filter (the third example: a researcher's stencil): `y[r][c]` is the mean of
/// the `(2 radius + 1)^2` inputs around `x[r][c]`, zeros outside the `height x width` image.
///
/// Thread mapping: the image is cut into `tile_w x tile_h` output tiles, numbered row by
/// row; block `b` takes tiles `b, b + grid, ...` (a 1-D grid over 2-D tiles: the ids are
/// flattened by hand). For each tile the block's threads copy the tile and its halo into the
/// launch-sized region (element `i` by thread `i mod block`; zeros outside the image), wait
/// at a barrier, then each makes outputs `t, t + block, ...` of the tile, and wait again
/// before the next tile overwrites the region.
///
/// # Safety
/// `x` and `y` hold `width * height` floats; the launch gave [`box_tile`]'s bytes.
#[inline(always)]
unsafe fn box_filter(x: *const f32, y: *mut f32, width: u32, height: u32, radius: u32, tile_w: u32, tile_h: u32) {
    let (tid, block) = (gpu::thread_idx_x(), gpu::block_dim_x());
    let Ok((slice, bytes)) = box_tile(tile_w, tile_h, radius) else { gpu::trap() };
    let tile = gpu::launch_region(bytes).array(slice);
    let (side_w, side_h) = (tile_w + 2 * radius, tile_h + 2 * radius);
    let (tiles_x, tiles_y) = (width.div_ceil(tile_w), height.div_ceil(tile_h));
    let inv = 1.0 / ((2 * radius + 1) * (2 * radius + 1)) as f32;
    let mut t = gpu::block_idx_x();
    while t < tiles_x * tiles_y {
        let (x0, y0) = ((t % tiles_x) * tile_w, (t / tiles_x) * tile_h);
        let mut i = tid;
        while i < side_w * side_h {
            // Image coordinates of tile element i (the halo starts `radius` before the tile).
            let (c, r) = ((x0 + i % side_w) as i64 - radius as i64, (y0 + i / side_w) as i64 - radius as i64);
            let inside = c >= 0 && r >= 0 && c < width as i64 && r < height as i64;
            let v =
                if inside { unsafe { gpu::read_global(x.add((r as u32 * width + c as u32) as usize)) } } else { 0.0 };
            unsafe { tile.write(i, v) };
            i += block;
        }
        gpu::barrier();
        let mut o = tid;
        while o < tile_w * tile_h {
            let (c, r) = (x0 + o % tile_w, y0 + o / tile_w);
            if c < width && r < height {
                let mut s = 0.0f32;
                let mut dy = 0;
                while dy <= 2 * radius {
                    let row = (o / tile_w + dy) * side_w + o % tile_w;
                    let mut dx = 0;
                    while dx <= 2 * radius {
                        s += unsafe { tile.read(row + dx) };
                        dx += 1;
                    }
                    dy += 1;
                }
                unsafe { gpu::write_global(y.add((r * width + c) as usize), s * inv) };
            }
            o += block;
        }
        gpu::barrier();
        t += gpu::grid_dim_x();
    }
}

/// `(block, per_thread)` as one number, as [`window_mean_planted`] compares configs.
pub const fn planted_code(block: u32, per_thread: u32) -> u32 {
    block * 16 + per_thread
}

/// A value the spin of [`window_mean_planted`] waits for and nothing writes.
const NEVER: u32 = 0x0123_4567;

/// The moving average with two planted faults, for sweeps that must go on past them (the
/// supervisor's test; never use it for anything else). At a config whose
/// [`planted_code`] is `far_at`, thread 0 of block 0 first writes 16 GiB past `y`; at one
/// whose code is `hang_at`, thread 0 of every block spins on `y[0]` (as bits) until it
/// reads a value nothing writes, while the block's other threads wait at the tile's
/// barrier: the workgroup never leaves it. A code of 0 plants nothing.
///
/// # Safety
/// As [`window_mean`], at every other config.
#[inline(always)]
unsafe fn window_mean_planted(
    x: *const f32,
    y: *mut f32,
    n: u32,
    window: u32,
    per_thread: u32,
    far_at: u32,
    hang_at: u32,
) {
    let code = planted_code(gpu::block_dim_x(), per_thread);
    if gpu::thread_idx_x() == 0 {
        if code == far_at && gpu::block_idx_x() == 0 {
            unsafe { gpu::write_global(y.add(1 << 32), 0.0) };
        }
        if code == hang_at {
            while unsafe { gpu::atomic_add_global_u32(y.cast::<u32>(), 0) } != NEVER {}
        }
    }
    unsafe { window_mean(x, y, n, window, per_thread) }
}

dynsmem_kernels::kernels! { KERNELS;
    /// `y[i] = mean(x[i..i + window])` for `i < n - window + 1`; see the crate docs.
    pub fn window_mean_f32(x: *const f32, y: *mut f32, n: u32, window: u32, per_thread: u32) {
        unsafe { window_mean(x, y, n, window, per_thread) }
    }
    /// [`window_mean_f32`] with two planted faults; see [`window_mean_planted`].
    pub fn window_mean_planted_f32(
        x: *const f32,
        y: *mut f32,
        n: u32,
        window: u32,
        per_thread: u32,
        far_at: u32,
        hang_at: u32,
    ) {
        unsafe { window_mean_planted(x, y, n, window, per_thread, far_at, hang_at) }
    }
    /// A 2-D box filter over `tile_w x tile_h` tiles with their halo; see [`box_filter`].
    pub fn box_filter_f32(x: *const f32, y: *mut f32, width: u32, height: u32, radius: u32, tile_w: u32, tile_h: u32) {
        unsafe { box_filter(x, y, width, height, radius, tile_w, tile_h) }
    }
    /// Wrapping sums of `block * chunk` consecutive inputs per block; see [`chunk_sums`].
    pub fn chunk_sums_u32(x: *const u32, sums: *mut u32, n: u32, chunk: u32) {
        unsafe { chunk_sums(x, sums, n, chunk) }
    }
}
