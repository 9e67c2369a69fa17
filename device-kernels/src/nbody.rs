//! One time step of an all-pairs gravitational n-body system with softening, the bodies
//! staged through launch-sized shared-memory tiles.
//!
//! # Algorithm and thread mapping
//! Thread `i = block_idx * block + tid` owns body `i`. The block walks the bodies in tiles
//! of `tile`: its threads copy the tile's positions and masses (`x, y, z, m` as one 16-byte
//! vector per body) into shared memory, then each thread accumulates, over the tile,
//! `a_i += m_j (p_j - p_i) / (|p_j - p_i|^2 + eps^2)^(3/2)` (a body's pull on itself is
//! zero: its offset is zero). Then `v_i += a_i dt`, `p_i += v_i dt` (semi-implicit Euler).
//! 20 floating-point operations per interaction, by the usual convention.
//!
//! # Launch-sized memory ([`NbodyConfig::layout`]): `tile` bodies of 16 bytes.
//!
//! # Entry point
//! `nbody_step_f32(pos, vel, new_pos, new_vel, n: u32, dt: f32, softening2: f32, tile: u32)`
//! with `pos`/`new_pos` as `[x, y, z, m]` and `vel`/`new_vel` as `[vx, vy, vz, 0]` per body,
//! launched with `ceil(n / block)` blocks.

use crate::gpu::{self, SharedArray};
use crate::layout::{Carve, LayoutError, Slice};

/// One body: position and mass, or velocity and 0.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Body(pub [f32; 4]);

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NbodyConfig {
    pub block: u32,
    /// Bodies per shared-memory tile.
    pub tile: u32,
}

impl NbodyConfig {
    pub fn layout(&self) -> Result<Slice<Body>, LayoutError> {
        Carve::new().array_aligned::<Body>(self.tile, 16)
    }

    pub fn shared_bytes(&self) -> Result<u32, LayoutError> {
        Ok(self.layout()?.bytes())
    }

    pub fn grid(&self, n: u32) -> u32 {
        n.div_ceil(self.block.max(1)).max(1)
    }
}

/// Floating-point operations counted per interaction.
pub const FLOPS_PER_INTERACTION: u32 = 20;

/// # Contract
/// The four arrays hold `4 n` floats, 16-byte aligned; the launch gave the layout's bytes.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn step(
    pos: *const Body,
    vel: *const Body,
    new_pos: *mut Body,
    new_vel: *mut Body,
    n: u32,
    dt: f32,
    softening2: f32,
    tile: u32,
) {
    let tid = gpu::thread_idx_x();
    let block = gpu::block_dim_x();
    let Ok(slice) = (NbodyConfig { block, tile }).layout() else { gpu::trap() };
    if tile == 0 {
        gpu::trap();
    }
    let shared: SharedArray<Body> = gpu::launch_region(slice.bytes()).array(slice);
    let i = gpu::block_idx_x() * block + tid;
    let me = if i < n { unsafe { gpu::read_global(pos.add(i as usize)) }.0 } else { [0.0; 4] };
    let (mut ax, mut ay, mut az) = (0.0f32, 0.0f32, 0.0f32);

    let mut j0 = 0;
    while j0 < n {
        let mut k = tid;
        while k < tile {
            let j = j0 + k;
            let b = if j < n { unsafe { gpu::read_global(pos.add(j as usize)) }.0 } else { [0.0; 4] };
            unsafe { shared.write(k, Body([b[0], b[1], b[2], b[3]])) };
            k += block;
        }
        gpu::barrier();
        let count = if n - j0 < tile { n - j0 } else { tile };
        let mut k = 0;
        while k < count {
            let b = unsafe { shared.read(k) }.0;
            let (dx, dy, dz) = (b[0] - me[0], b[1] - me[1], b[2] - me[2]);
            let r2 = gpu::fma(dx, dx, gpu::fma(dy, dy, gpu::fma(dz, dz, softening2)));
            let inv = gpu::rsqrt(r2);
            let s = b[3] * inv * inv * inv;
            ax = gpu::fma(dx, s, ax);
            ay = gpu::fma(dy, s, ay);
            az = gpu::fma(dz, s, az);
            k += 1;
        }
        // The next tile overwrites the shared tile.
        gpu::barrier();
        j0 += tile;
    }
    if i < n {
        let v = unsafe { gpu::read_global(vel.add(i as usize)) }.0;
        let nv = [gpu::fma(ax, dt, v[0]), gpu::fma(ay, dt, v[1]), gpu::fma(az, dt, v[2]), 0.0];
        let np = [gpu::fma(nv[0], dt, me[0]), gpu::fma(nv[1], dt, me[1]), gpu::fma(nv[2], dt, me[2]), me[3]];
        unsafe { gpu::write_global(new_vel.add(i as usize), Body(nv)) };
        unsafe { gpu::write_global(new_pos.add(i as usize), Body(np)) };
    }
}

crate::kernels! { KERNELS;
    /// One n-body time step; see the module documentation.
    pub fn nbody_step_f32(pos: *const f32, vel: *const f32, new_pos: *mut f32, new_vel: *mut f32, n: u32, dt: f32, softening2: f32, tile: u32) {
        step(pos.cast(), vel.cast(), new_pos.cast(), new_vel.cast(), n, dt, softening2, tile)
    }
}
