// One time step of an all-pairs gravitational n-body system with softening, the bodies
// staged through a static shared-memory tile: the algorithm and thread mapping of
// device-kernels/src/nbody.rs (see its module documentation), with the tile and the block
// compiled in. Thread i = blockIdx.x * BLOCK + tid owns body i; per tile of TILE bodies
// (x, y, z, m as one 16-byte vector each) it accumulates a_i += m_j (p_j - p_i) /
// (|p_j - p_i|^2 + eps^2)^(3/2), then v_i += a_i dt, p_i += v_i dt.
//
// Launch: ceil(n / BLOCK) blocks of BLOCK threads, no dynamic shared memory; arguments as
// the Rust entry point (tile is TILE here).

#ifndef TILE
#error "TILE (bodies per shared tile) must be defined"
#endif
#ifndef BLOCK
#error "BLOCK (threads per block) must be defined"
#endif

extern "C" __global__ void nbody_static(const float4* __restrict__ pos, const float4* __restrict__ vel,
                                        float4* __restrict__ new_pos, float4* __restrict__ new_vel, u32 n, float dt,
                                        float softening2, u32 tile_unused) {
    __shared__ float4 bodies[TILE];

    const u32 tid = threadIdx.x;
    const u32 i = blockIdx.x * BLOCK + tid;
    const float4 me = i < n ? pos[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float ax = 0.0f;
    float ay = 0.0f;
    float az = 0.0f;

    for (u32 j0 = 0; j0 < n; j0 += TILE) {
        for (u32 k = tid; k < TILE; k += BLOCK) {
            const u32 j = j0 + k;
            bodies[k] = j < n ? pos[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
        __syncthreads();
        const u32 count = n - j0 < TILE ? n - j0 : TILE;
        for (u32 k = 0; k < count; ++k) {
            const float4 b = bodies[k];
            const float dx = b.x - me.x;
            const float dy = b.y - me.y;
            const float dz = b.z - me.z;
            const float r2 = fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, softening2)));
            const float inv = rsqrt_approx(r2);
            const float s = b.w * inv * inv * inv;
            ax = fmaf(dx, s, ax);
            ay = fmaf(dy, s, ay);
            az = fmaf(dz, s, az);
        }
        // The next tile overwrites the shared tile.
        __syncthreads();
    }
    if (i < n) {
        const float4 v = vel[i];
        const float4 nv = make_float4(fmaf(ax, dt, v.x), fmaf(ay, dt, v.y), fmaf(az, dt, v.z), 0.0f);
        new_vel[i] = nv;
        new_pos[i] = make_float4(fmaf(nv.x, dt, me.x), fmaf(nv.y, dt, me.y), fmaf(nv.z, dt, me.z), me.w);
    }
}
