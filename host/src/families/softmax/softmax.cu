// Row-wise softmax of a row-major rows x COLS f32 matrix, one row per block, the row held
// in static shared memory: the algorithm and thread mapping of
// device-kernels/src/softmax.rs (see its module documentation), with the row length and
// the block compiled in. Thread t copies elements t, t + BLOCK, ... (16-byte vectors when
// rows are aligned) into the shared row keeping their maximum; a shared tree gives the
// row maximum m; each thread replaces its elements by exp(x - m) and sums them; a second
// tree gives the sum s; each thread writes e / s.
//
// Launch: min(rows, 65535) blocks of BLOCK threads, no dynamic shared memory; arguments as
// the Rust entry point (cols is COLS here).

#ifndef COLS
#error "COLS (row length) must be defined"
#endif
#ifndef BLOCK
#error "BLOCK (threads per block) must be defined"
#endif

extern "C" __global__ void softmax_static(const float* __restrict__ input, float* __restrict__ output, u32 rows,
                                          u32 cols_unused) {
    __shared__ __align__(16) float row[COLS];
    __shared__ float scratch[BLOCK];

    const u32 tid = threadIdx.x;
    const u32 vectors = (aligned16(input) && aligned16(output) && COLS % 4 == 0) ? COLS / 4 : 0;
    float4* row4 = (float4*)row;

    for (u32 r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* src = input + (u64)r * COLS;
        float* dst = output + (u64)r * COLS;
        float m = __int_as_float(0xff800000);
        for (u32 i = tid; i < vectors; i += BLOCK) {
            const float4 v = ((const float4*)src)[i];
            m = fmaxf(fmaxf(fmaxf(fmaxf(m, v.x), v.y), v.z), v.w);
            row4[i] = v;
        }
        for (u32 i = vectors * 4 + tid; i < COLS; i += BLOCK) {
            const float v = src[i];
            m = fmaxf(m, v);
            row[i] = v;
        }
        m = block_fold<BLOCK, true>(scratch, tid, m);

        // Each thread revisits the elements it stored: no barrier needed before this.
        float s = 0.0f;
        for (u32 i = tid; i < vectors; i += BLOCK) {
            const float4 v = row4[i];
            const float4 e = make_float4(exp_approx(v.x - m), exp_approx(v.y - m), exp_approx(v.z - m),
                                         exp_approx(v.w - m));
            s += (e.x + e.y) + (e.z + e.w);
            row4[i] = e;
        }
        for (u32 i = vectors * 4 + tid; i < COLS; i += BLOCK) {
            const float e = exp_approx(row[i] - m);
            s += e;
            row[i] = e;
        }
        s = block_fold<BLOCK, false>(scratch, tid, s);
        const float inv = 1.0f / s;

        for (u32 i = tid; i < vectors; i += BLOCK) {
            const float4 e = row4[i];
            ((float4*)dst)[i] = make_float4(e.x * inv, e.y * inv, e.z * inv, e.w * inv);
        }
        for (u32 i = vectors * 4 + tid; i < COLS; i += BLOCK) {
            dst[i] = row[i] * inv;
        }
        // The next row overwrites the shared row.
        __syncthreads();
    }
}
