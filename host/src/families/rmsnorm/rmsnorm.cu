// Row-wise RMSNorm forward of a row-major rows x COLS f32 matrix with a weight of COLS
// floats, one row per block, the row held in static shared memory: the algorithm and
// thread mapping of device-kernels/src/rmsnorm.rs (see its module documentation), with the
// row length and the block compiled in. Thread t copies elements t, t + BLOCK, ...
// (16-byte vectors when x, g and y are aligned) into the shared row summing their squares;
// a shared tree gives the row's sum of squares s; with inv = 1 / sqrt(s / COLS + eps),
// each thread writes x * inv * g for the elements it stored.
//
// Launch: min(rows, 65535) blocks of BLOCK threads, no dynamic shared memory; arguments as
// the Rust entry point (cols is COLS here).

#ifndef COLS
#error "COLS (row length) must be defined"
#endif
#ifndef BLOCK
#error "BLOCK (threads per block) must be defined"
#endif

extern "C" __global__ void rmsnorm_static(const float* __restrict__ x, const float* __restrict__ g,
                                          float* __restrict__ y, u32 rows, u32 cols_unused, float eps) {
    __shared__ __align__(16) float row[COLS];
    __shared__ float scratch[BLOCK];

    const u32 tid = threadIdx.x;
    const u32 vectors = (aligned16(x) && aligned16(g) && aligned16(y) && COLS % 4 == 0) ? COLS / 4 : 0;
    float4* row4 = (float4*)row;
    const float4* g4 = (const float4*)g;
    const float inv_cols = 1.0f / (float)COLS;

    for (u32 r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* src = x + (u64)r * COLS;
        float* dst = y + (u64)r * COLS;
        float s = 0.0f;
        for (u32 i = tid; i < vectors; i += BLOCK) {
            const float4 v = ((const float4*)src)[i];
            s += (v.x * v.x + v.y * v.y) + (v.z * v.z + v.w * v.w);
            row4[i] = v;
        }
        for (u32 i = vectors * 4 + tid; i < COLS; i += BLOCK) {
            const float v = src[i];
            s += v * v;
            row[i] = v;
        }
        s = block_fold<BLOCK, false>(scratch, tid, s);
        const float inv = 1.0f / sqrtf(s * inv_cols + eps);

        // Each thread revisits the elements it stored: no barrier needed before this.
        for (u32 i = tid; i < vectors; i += BLOCK) {
            const float4 v = row4[i];
            const float4 w = g4[i];
            ((float4*)dst)[i] = make_float4(v.x * inv * w.x, v.y * inv * w.y, v.z * inv * w.z, v.w * inv * w.w);
        }
        for (u32 i = vectors * 4 + tid; i < COLS; i += BLOCK) {
            dst[i] = row[i] * inv * g[i];
        }
        // The next row overwrites the shared row.
        __syncthreads();
    }
}
