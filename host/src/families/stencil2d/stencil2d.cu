// 2-D stencil (K x K weights, K = 2 RADIUS + 1) over a row-major height x width f32
// image, clamping to the edge, with static shared memory: the algorithm and thread
// mapping of device-kernels/src/stencil2d.rs (see its module documentation), with the
// radius, the tile and the block compiled in. The tile holds TILE_H + 2 RADIUS rows of
// TILE_W + 8 columns (HALO = 4 columns each side: whole 16-byte vectors), clamped to the
// image. Thread t owns the four columns 4 (t % GROUPS) and a strip of STRIP rows, and
// slides a window of K tile rows of 4 + 2 RADIUS floats down it in registers.
//
// Launch: min(tiles, 65535) blocks of BLOCK threads, no dynamic shared memory; arguments
// as the Rust entry points (tile_w and tile_h are TILE_W and TILE_H here). Requires
// TILE_W % 4 == 0, BLOCK % (TILE_W / 4) == 0, TILE_H % (BLOCK / (TILE_W / 4)) == 0.

#ifndef RADIUS
#error "RADIUS (1 or 2) must be defined"
#endif
#ifndef TILE_W
#error "TILE_W (tile width, a multiple of 4) must be defined"
#endif
#ifndef TILE_H
#error "TILE_H (tile height) must be defined"
#endif
#ifndef BLOCK
#error "BLOCK (threads per block) must be defined"
#endif

#define K (2 * RADIUS + 1)
#define HALO 4
// Window row: tile columns 4g + 4 - RADIUS .. 4g + 8 + RADIUS of the thread's group g.
#define WW (4 + 2 * RADIUS)
#define GROUPS (TILE_W / 4)
#define PITCH (TILE_W / 4 + 2 * HALO / 4)
#define ROWS_TOTAL (TILE_H + 2 * RADIUS)
#define STRIP (TILE_H / (BLOCK / GROUPS))

// Tile row tr of the thread's group g into window slot `slot` (a constant once unrolled).
__device__ __forceinline__ void read_row(float (&win)[K * WW], int slot, const float4* tile, u32 tr, u32 g) {
    const u32 b = tr * PITCH + g;
    const float4 v0 = tile[b];
    const float4 v1 = tile[b + 1];
    const float4 v2 = tile[b + 2];
    const float e[12] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w, v2.x, v2.y, v2.z, v2.w};
#pragma unroll
    for (int i = 0; i < WW; ++i) {
        win[slot * WW + i] = e[HALO - RADIUS + i];
    }
}

extern "C" __global__ void stencil2d_static(const float* __restrict__ input, const float* __restrict__ weights,
                                            float* __restrict__ output, u32 width, u32 height, u32 tile_w_unused,
                                            u32 tile_h_unused) {
    __shared__ float4 tile[PITCH * ROWS_TOTAL];
    __shared__ float wt[K * K];

    const u32 tid = threadIdx.x;
    const u32 g = tid % GROUPS;
    const u32 y_first = (tid / GROUPS) * STRIP;
    // Whole rows are vectors of the image only when rows start 16-byte aligned.
    const bool in_vec = width % 4 == 0 && aligned16(input);
    const bool out_vec = width % 4 == 0 && aligned16(output);

    for (u32 i = tid; i < K * K; i += BLOCK) {
        wt[i] = weights[i];
    }
    __syncthreads();
    float w[K * K];
#pragma unroll
    for (int i = 0; i < K * K; ++i) {
        w[i] = wt[i];
    }

    const u64 tiles_across = ((u64)width + TILE_W - 1) / TILE_W;
    const u64 tiles_x = tiles_across > 0 ? tiles_across : 1;
    const u64 tiles = tiles_across * (((u64)height + TILE_H - 1) / TILE_H);
    for (u64 t = blockIdx.x; t < tiles; t += gridDim.x) {
        const u32 x0 = (u32)(t % tiles_x) * TILE_W;
        const u32 y0 = (u32)(t / tiles_x) * TILE_H;
        // Tile vector (r, c) holds image row y0 - RADIUS + r and columns x0 - 4 + 4c .. + 4,
        // each clamped to the image; thread tid loads vectors tid, tid + BLOCK, ... in
        // row-major order. A tile whose border is inside the image (all but the edge
        // tiles) is copied with no clamping, every vector in flight at once (cp.async).
        const bool inside = in_vec && x0 >= HALO && (u64)x0 + TILE_W + HALO <= width && y0 >= RADIUS &&
                            (u64)y0 + ROWS_TOTAL - RADIUS <= height;
        if (inside) {
            const float* origin = input + (u64)(y0 - RADIUS) * width + (x0 - HALO);
            for (u32 i = tid; i < PITCH * ROWS_TOTAL; i += BLOCK) {
                const u32 r = i / PITCH;
                const u32 c = i % PITCH;
                cp_async16(&tile[i], origin + (u64)r * width + 4 * c);
            }
            cp_async_wait_all();
        } else {
            for (u32 i = tid; i < PITCH * ROWS_TOTAL; i += BLOCK) {
                const u32 r = i / PITCH;
                const u32 c = i % PITCH;
                const u32 yy = y0 + r;
                u32 gy = yy >= RADIUS ? yy - RADIUS : 0;
                gy = gy < height - 1 ? gy : height - 1;
                const float* row = input + (u64)gy * width;
                const long long gx = (long long)(x0 + 4 * c) - HALO;
                if (in_vec && gx >= 0 && gx + 4 <= (long long)width) {
                    tile[i] = *(const float4*)(row + gx);
                } else {
                    float e[4];
#pragma unroll
                    for (int lane = 0; lane < 4; ++lane) {
                        long long xx = gx + lane;
                        xx = xx < 0 ? 0 : xx;
                        xx = xx > (long long)width - 1 ? (long long)width - 1 : xx;
                        e[lane] = row[xx];
                    }
                    tile[i] = make_float4(e[0], e[1], e[2], e[3]);
                }
            }
        }
        __syncthreads();

        // The window of tile row y_first + j lives in slot j % K.
        float win[K * WW];
#pragma unroll
        for (int j = 0; j < K - 1; ++j) {
            read_row(win, j, tile, y_first + j, g);
        }
        const u32 x = x0 + 4 * g;
        u32 r = 0;
        while (r < STRIP) {
            // In step u, r = u (mod K), so every slot index is a constant: the loop over u is
            // unrolled, sliding the window by renaming registers.
#pragma unroll
            for (int u = 0; u < K; ++u) {
                if (r < STRIP) {
                    read_row(win, (u + K - 1) % K, tile, y_first + r + K - 1, g);
                    float out[4];
#pragma unroll
                    for (int c = 0; c < 4; ++c) {
                        // One accumulator per window row: K short chains of dependent FMAs.
                        float rows[K];
#pragma unroll
                        for (int dy = 0; dy < K; ++dy) {
                            const int slot = (u + dy) % K;
                            rows[dy] = 0.0f;
#pragma unroll
                            for (int dx = 0; dx < K; ++dx) {
                                rows[dy] = fmaf(w[dy * K + dx], win[slot * WW + c + dx], rows[dy]);
                            }
                        }
                        float acc = rows[0];
#pragma unroll
                        for (int dy = 1; dy < K; ++dy) {
                            acc += rows[dy];
                        }
                        out[c] = acc;
                    }
                    const u32 yy = y0 + y_first + r;
                    if (yy < height && x < width) {
                        store4(output + (u64)yy * width, x, width, make_float4(out[0], out[1], out[2], out[3]),
                               out_vec);
                    }
                    r += 1;
                }
            }
        }
        // The next tile overwrites the shared tile.
        __syncthreads();
    }
}
