// The moving average with a static shared tile (the cuda-static form): the algorithm and
// thread mapping of kernels/src/lib.rs, with the block, outputs per thread and window
// compiled in. Launch: the Rust kernel's grid of BLOCK threads, no dynamic shared memory;
// arguments as the Rust entry point.

#ifndef BLOCK
#error "BLOCK (threads per block) must be defined"
#endif
#ifndef PER_THREAD
#error "PER_THREAD (outputs per thread) must be defined"
#endif
#ifndef WINDOW
#error "WINDOW (inputs per output) must be defined"
#endif

#define TILE (BLOCK * PER_THREAD + WINDOW - 1)

extern "C" __global__ void window_mean_static(const float* __restrict__ x, float* __restrict__ y, u32 n, u32 window,
                                              u32 per_thread) {
    __shared__ float tile[TILE];
    const u32 tid = threadIdx.x;
    const u32 outputs = n - WINDOW + 1;
    const u32 span = BLOCK * PER_THREAD;
    const float inv = 1.0f / (float)WINDOW;
    for (u32 start = blockIdx.x * span; start < outputs; start += gridDim.x * span) {
        const u32 len = min((u32)TILE, n - start);
        for (u32 i = tid; i < len; i += BLOCK) {
            tile[i] = x[start + i];
        }
        __syncthreads();
        for (u32 k = 0; k < PER_THREAD; ++k) {
            const u32 o = k * BLOCK + tid;
            if (o < outputs - start) {
                float s = 0.0f;
                for (u32 j = 0; j < WINDOW; ++j) {
                    s += tile[o + j];
                }
                y[start + o] = s * inv;
            }
        }
        // The next span overwrites the tile.
        __syncthreads();
    }
}
