// 1-D convolution ("same" size, zero padding), y[i] = sum_k w[k] x[i + k - TAPS/2], with
// static shared memory: the algorithm, register tiling and thread mapping of
// device-kernels/src/conv1d.rs (see its module documentation), with the outputs per
// thread OUTS, the taps and the block compiled in. The tile starts BEFORE = TAPS/2 rounded up
// to a multiple of 4 elements before the tile's outputs (so its vectors are aligned vectors
// of x), and the weights are shifted right by SHIFT = BEFORE - TAPS/2 zeros and padded
// with zeros to KP taps (a multiple of OUTS): y[o + m] = sum_j w'[j] tile[m + j].
//
// Launch: min(ceil(n / (BLOCK * OUTS)), 65535) blocks of BLOCK threads, no dynamic shared
// memory; arguments as the Rust entry points (taps is TAPS here).

#ifndef OUTS
#error "OUTS (outputs per thread, 4 or 8) must be defined"
#endif
#ifndef TAPS
#error "TAPS (odd number of taps) must be defined"
#endif
#ifndef KP
#error "KP (shifted taps padded to a multiple of OUTS) must be defined"
#endif
#ifndef BLOCK
#error "BLOCK (threads per block) must be defined"
#endif

#define HALF (TAPS / 2)
#define BEFORE ((HALF + 3) / 4 * 4)
#define SHIFT (BEFORE - HALF)
#define OUTPUTS (BLOCK * OUTS)
#define INPUTS (OUTPUTS + KP)
#define RV (OUTS / 4)

// Tile elements 4v .. 4v + OUTS into e (OUTS / 4 vector loads).
__device__ __forceinline__ void read_vecs(float (&e)[OUTS], const float4* a, u32 v) {
#pragma unroll
    for (int q = 0; q < RV; ++q) {
        const float4 x = a[v + q];
        e[4 * q] = x.x;
        e[4 * q + 1] = x.y;
        e[4 * q + 2] = x.z;
        e[4 * q + 3] = x.w;
    }
}

// OUTS taps at once: acc[r] += wk[j] * window[r + j], the window being lo then hi.
__device__ __forceinline__ void step(float (&acc)[OUTS], const float (&lo)[OUTS], const float (&hi)[OUTS],
                                     const float (&wk)[OUTS]) {
#pragma unroll
    for (int j = 0; j < OUTS; ++j) {
#pragma unroll
        for (int r = 0; r < OUTS; ++r) {
            const float v = (r + j < OUTS) ? lo[r + j] : hi[r + j - OUTS];
            acc[r] = fmaf(wk[j], v, acc[r]);
        }
    }
}

extern "C" __global__ void conv1d_static(const float* __restrict__ x, const float* __restrict__ w,
                                         float* __restrict__ y, u64 n, u32 taps_unused) {
    __shared__ float4 tile[INPUTS / 4];
    __shared__ float4 wt[KP / 4];

    const u32 tid = threadIdx.x;
    const bool x_vec = aligned16(x);
    const bool y_vec = aligned16(y);

    // w'[j] = w[j - SHIFT], zero outside the taps.
    float* wt_f = (float*)wt;
    for (u32 j = tid; j < KP; j += BLOCK) {
        const u32 k = j - SHIFT;
        wt_f[j] = (j >= SHIFT && k < TAPS) ? w[k] : 0.0f;
    }

    const u64 tiles = (n + OUTPUTS - 1) / OUTPUTS;
    for (u64 t = blockIdx.x; t < tiles; t += gridDim.x) {
        const u64 o = t * OUTPUTS;
        // Also orders the weights' stores before their first use.
        __syncthreads();
        // Tile vector v is x[o - BEFORE + 4v ..], zeros outside [0, n); a tile inside the
        // input (all but the first and last) skips the bounds checks and uses cp.async.
        const long long first = (long long)o - BEFORE;
        if (x_vec && first >= 0 && (u64)first + INPUTS <= n) {
            const float4* src = (const float4*)(x + first);
            for (u32 v = tid; v < INPUTS / 4; v += BLOCK) {
                cp_async16(&tile[v], &src[v]);
            }
            cp_async_wait_all();
        } else {
            for (u32 v = tid; v < INPUTS / 4; v += BLOCK) {
                tile[v] = load4(x, first + 4 * (long long)v, n, x_vec);
            }
        }
        __syncthreads();

        // Thread tid makes outputs o + tid*OUTS .. + OUTS, walking the taps OUTS at a time with a
        // window of 2R tile elements in registers; two steps per iteration, so the
        // window's halves trade places by naming, not copies.
        const u32 base = tid * RV;
        float acc[OUTS];
#pragma unroll
        for (int r = 0; r < OUTS; ++r) {
            acc[r] = 0.0f;
        }
        float lo[OUTS];
        float hi[OUTS];
        float wk[OUTS];
        read_vecs(lo, tile, base);
        u32 k = 0;
        for (; k + 2 * RV <= KP / 4; k += 2 * RV) {
            read_vecs(hi, tile, base + k + RV);
            read_vecs(wk, wt, k);
            step(acc, lo, hi, wk);
            read_vecs(lo, tile, base + k + 2 * RV);
            read_vecs(wk, wt, k + RV);
            step(acc, hi, lo, wk);
        }
        if (k < KP / 4) {
            read_vecs(hi, tile, base + k + RV);
            read_vecs(wk, wt, k);
            step(acc, lo, hi, wk);
        }
#pragma unroll
        for (int q = 0; q < RV; ++q) {
            const float4 out = make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
            const u64 start = o + 4 * (u64)(base + q);
            if (start < n) {
                store4(y, start, n, out, y_vec);
            }
        }
    }
}
