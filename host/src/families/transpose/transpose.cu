// Transpose of a row-major rows x cols f32 matrix into cols x rows through padded square
// tiles, with static shared memory: the algorithm and thread mapping of
// device-kernels/src/transpose.rs (see its module documentation), with the tile, the
// padding and the block compiled in. Thread (tx, ty) = (tid % TILE, tid / TILE) copies
// input rows ty, ty + STEP, ... of the tile into shared memory, then writes output rows
// ty, ... of the transposed tile, reading the shared tile down a column; shared rows are
// TILE + PAD floats apart.
//
// Launch: min(tiles, 65535) blocks of BLOCK threads (BLOCK a multiple of TILE), no
// dynamic shared memory; arguments as the Rust entry point (tile and pad are TILE, PAD).

#ifndef TILE
#error "TILE (side of the square tile) must be defined"
#endif
#ifndef PAD
#error "PAD (floats of padding per shared row) must be defined"
#endif
#ifndef BLOCK
#error "BLOCK (threads per block, a multiple of TILE) must be defined"
#endif

#define STRIDE (TILE + PAD)
#define STEP (BLOCK / TILE)

extern "C" __global__ void transpose_static(const float* __restrict__ input, float* __restrict__ output, u32 rows,
                                            u32 cols, u32 tile_unused, u32 pad_unused) {
    __shared__ float shared[TILE * STRIDE];

    const u32 tid = threadIdx.x;
    const u32 tx = tid % TILE;
    const u32 ty = tid / TILE;
    const u64 tiles_across = ((u64)cols + TILE - 1) / TILE;
    // At least 1, so the division below needs no zero check (an empty matrix has no tiles).
    const u64 tiles_x = tiles_across > 0 ? tiles_across : 1;
    const u64 tiles = (((u64)rows + TILE - 1) / TILE) * tiles_across;

    for (u64 t = blockIdx.x; t < tiles; t += gridDim.x) {
        const u32 r0 = (u32)(t / tiles_x) * TILE;
        const u32 c0 = (u32)(t % tiles_x) * TILE;
        const u32 c = c0 + tx;
        // Four rows' loads in flight before their stores.
        u32 j = ty;
        for (; TILE > j && TILE - j > 3 * STEP; j += 4 * STEP) {
            float v[4];
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const u32 r = r0 + j + q * STEP;
                v[q] = (r < rows && c < cols) ? input[(u64)r * cols + c] : 0.0f;
            }
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                shared[(j + q * STEP) * STRIDE + tx] = v[q];
            }
        }
        for (; j < TILE; j += STEP) {
            const u32 r = r0 + j;
            shared[j * STRIDE + tx] = (r < rows && c < cols) ? input[(u64)r * cols + c] : 0.0f;
        }
        __syncthreads();
        // Output row c0 + j holds input column c0 + j; its element r0 + tx is input row
        // r0 + tx: a column of the shared tile.
        for (u32 j2 = ty; j2 < TILE; j2 += STEP) {
            const u32 out_r = c0 + j2;
            const u32 out_c = r0 + tx;
            if (out_r < cols && out_c < rows) {
                output[(u64)out_r * rows + out_c] = shared[tx * STRIDE + j2];
            }
        }
        // The next tile overwrites the shared tile.
        __syncthreads();
    }
}
