// C = alpha * A * B + beta * C, row-major, any M x N x K, f32 inputs (F16 = 0) or f16
// inputs as bits with f32 accumulation (F16 = 1), with static shared memory: the algorithms
// and thread mappings of device-kernels/src/sgemm.rs (see its module documentation), with
// the block tile BM x BN x BK and the pipeline depth STAGES compiled in.
//
// Each thread keeps an 8 x 8 tile of C in registers: thread (tx, ty) (tx = t % (BN/8))
// owns rows {ty*4 + i, BM/2 + ty*4 + i} and columns {tx*4 + j, BN/2 + tx*4 + j}, i, j < 4.
// The k loop walks BK-deep tiles of A and B through a ring of STAGES shared buffers filled
// by cp.async (edge tiles element by element with zero fill); one barrier per k-tile.
// - f32: both tiles in k-groups: group g of A holds rows 4g..4g+3 as BK + 1 16-byte slots,
//   slot kk = their 4 values at k = kk (B likewise with 4 columns), so one k of a thread's
//   fragments is four 16-byte reads. A is gathered by 4-byte copies (lane 4*kk + r of warp
//   w: row 4g + r, column 8kb + kk), B copied by 16-byte chunks, one chunk per slot.
// - f16: A row-major (rows padded by one chunk), B row-major, 16-byte chunks.
//
// Launch: ceil(M / BM) * ceil(N / BN) blocks of BM * BN / 64 threads, no dynamic shared
// memory; arguments as the Rust entry points (bm, bn, bk, stages are the defines here).

#ifndef BM
#error "BM (block tile rows, a multiple of 8) must be defined"
#endif
#ifndef BN
#error "BN (block tile columns, a multiple of 8) must be defined"
#endif
#ifndef BK
#error "BK (k-tile depth, a multiple of 4 and of a 16-byte chunk) must be defined"
#endif
#ifndef STAGES
#error "STAGES (1 to 4) must be defined"
#endif
#ifndef F16
#error "F16 (0: f32 inputs, 1: f16 inputs) must be defined"
#endif

#if F16
#define EB 2
typedef u16 elem_t;
// Four f16 (8 bytes).
typedef uint2 quad4_t;
__device__ __forceinline__ float h2f(u32 bits) {
    float f;
    asm("{ .reg .b16 h; cvt.u16.u32 h, %1; cvt.f32.f16 %0, h; }" : "=f"(f) : "r"(bits));
    return f;
}
__device__ __forceinline__ void quad_to_f32(quad4_t q, float (&f)[4]) {
    f[0] = h2f(q.x & 0xffff);
    f[1] = h2f(q.x >> 16);
    f[2] = h2f(q.y & 0xffff);
    f[3] = h2f(q.y >> 16);
}
#else
#define EB 4
typedef float elem_t;
typedef float4 quad4_t;
__device__ __forceinline__ void quad_to_f32(quad4_t q, float (&f)[4]) {
    f[0] = q.x;
    f[1] = q.y;
    f[2] = q.z;
    f[3] = q.w;
}
#endif

// Elements per 16-byte chunk; row strides and stage sizes of the shared tiles in elements.
#define CE (16 / EB)
#define A_STRIDE (BK + CE)
#define A_STAGE (BM * A_STRIDE)
#define B_STAGE (BK * BN)
#define THREADS ((BM / 8) * (BN / 8))
#define THREADS_X (BN / 8)

// C = alpha * acc + beta * C for a thread's 8 x 8 tile; C is not read when beta is 0 (it
// may hold anything).
__device__ __forceinline__ void store_tile(const float (&acc)[8][8], float* __restrict__ c, u32 m, u32 n, u32 m0,
                                           u32 n0, u32 tx, u32 ty, float alpha, float beta) {
    const bool c_vec = aligned16(c) && n % 4 == 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const u32 gm = m0 + (i < 4 ? ty * 4 + i : BM / 2 + ty * 4 + (i - 4));
        if (gm < m) {
            float* c_row = c + (u64)gm * n;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const u32 gn = n0 + (h == 0 ? tx * 4 : BN / 2 + tx * 4);
                float4 out = make_float4(alpha * acc[i][4 * h], alpha * acc[i][4 * h + 1], alpha * acc[i][4 * h + 2],
                                         alpha * acc[i][4 * h + 3]);
                if (beta != 0.0f) {
                    const float4 old = load4(c_row, (long long)gn, (u64)n, c_vec);
                    out.x = fmaf(beta, old.x, out.x);
                    out.y = fmaf(beta, old.y, out.y);
                    out.z = fmaf(beta, old.z, out.z);
                    out.w = fmaf(beta, old.w, out.w);
                }
                store4(c_row, (u64)gn, (u64)n, out, c_vec);
            }
        }
    }
}

#if !F16
extern "C" __global__ void sgemm_static(const float* __restrict__ a, const float* __restrict__ b,
                                        float* __restrict__ c, u32 m, u32 n, u32 k, float alpha, float beta,
                                        u32 bm_unused, u32 bn_unused, u32 bk_unused, u32 stages_unused) {
    // STAGES tiles of A (BM / 4 groups of BK + 1 slots) and of B (BN / 4 groups).
    __shared__ float4 a_slots[STAGES * (BM / 4) * (BK + 1)];
    __shared__ float4 b_slots[STAGES * (BN / 4) * (BK + 1)];
    float* a_words = (float*)a_slots;
    float* b_words = (float*)b_slots;
    const u32 GS = BK + 1;
    const u32 A_SLOTS = BM / 4 * GS;
    const u32 B_SLOTS = BN / 4 * GS;

    const u32 tid = threadIdx.x;
    if (blockDim.x != THREADS) {
        __trap();
    }
    const u32 tiles_n_raw = n / BN + (n % BN != 0 ? 1 : 0);
    const u32 tiles_n = tiles_n_raw > 0 ? tiles_n_raw : 1;
    const u32 m0 = (blockIdx.x / tiles_n) * BM;
    const u32 n0 = (blockIdx.x % tiles_n) * BN;
    const u32 tx = tid % THREADS_X;
    const u32 ty = tid / THREADS_X;

    const u32 warps = THREADS / 32;
    const bool a_fast = THREADS % 32 == 0 && BK % 8 == 0;
    const u32 lane = tid % 32;
    const u32 w = tid / 32;
    const u64 a_src0 = (u64)(m0 + w * 4 + lane % 4) * k + lane / 4;
    const u32 a_dst0 = (w * GS + lane / 4) * 4 + lane % 4;
    const u32 qn = BN / 4;
    const bool b_fast = aligned16(b) && n % 4 == 0 && THREADS % qn == 0;
    const u32 b_q = tid % qn;
    const u32 b_r0 = tid / qn;
    const u32 b_rstep = THREADS / qn;

    auto load_tile = [&](u32 kt, u32 slot) {
        const u32 k0 = kt * BK;
        if (a_fast && m0 + BM <= m && k0 + BK <= k) {
            for (u32 g = w, i = 0; g < BM / 4; g += warps, ++i) {
                const float* src = a + a_src0 + k0 + (u64)i * warps * 4 * k;
                const u32 dst = slot * A_SLOTS * 4 + a_dst0 + i * warps * GS * 4;
#pragma unroll
                for (u32 kb = 0; kb < BK; kb += 8) {
                    cp_async4(&a_words[dst + kb * 4], src + kb);
                }
            }
        } else {
            for (u32 e = tid; e < BM * BK; e += THREADS) {
                const u32 r = e / BK;
                const u32 q = e % BK;
                const u32 gm = m0 + r;
                const u32 gk = k0 + q;
                a_words[slot * A_SLOTS * 4 + (r / 4 * GS + q) * 4 + r % 4] = (gm < m && gk < k) ? a[(u64)gm * k + gk] : 0.0f;
            }
        }
        if (b_fast && n0 + BN <= n && k0 + BK <= k) {
            for (u32 r = b_r0; r < BK; r += b_rstep) {
                cp_async16(&b_slots[slot * B_SLOTS + b_q * GS + r], b + ((u64)(k0 + r) * n + n0 + b_q * 4));
            }
        } else {
            for (u32 e = tid; e < BK * BN; e += THREADS) {
                const u32 r = e / BN;
                const u32 q = e % BN;
                const u32 gk = k0 + r;
                const u32 gn = n0 + q;
                b_words[slot * B_SLOTS * 4 + (q / 4 * GS + r) * 4 + q % 4] = (gk < k && gn < n) ? b[(u64)gk * n + gn] : 0.0f;
            }
        }
        cp_async_commit();
    };

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            acc[i][j] = 0.0f;
        }
    }
    const u32 k_tiles = k / BK + (k % BK != 0 ? 1 : 0);
    for (u32 s = 0; s + 1 < STAGES; ++s) {
        if (s < k_tiles) {
            load_tile(s, s);
        } else {
            cp_async_commit();
        }
    }
    for (u32 kt = 0; kt < k_tiles; ++kt) {
        cp_async_wait_group<(STAGES >= 2 ? STAGES - 2 : 0)>();
        __syncthreads();
#if STAGES > 1
        const u32 next = kt + STAGES - 1;
        if (next < k_tiles) {
            load_tile(next, next % STAGES);
        } else {
            cp_async_commit();
        }
#else
        load_tile(kt, 0);
        cp_async_wait_group<0>();
        __syncthreads();
#endif
        const u32 slot = kt % STAGES;
        const float4* pa_lo = a_slots + slot * A_SLOTS + ty * GS;
        const float4* pa_hi = a_slots + slot * A_SLOTS + (BM / 8 + ty) * GS;
        const float4* pb_lo = b_slots + slot * B_SLOTS + tx * GS;
        const float4* pb_hi = b_slots + slot * B_SLOTS + (BN / 8 + tx) * GS;
#pragma unroll
        for (u32 kk = 0; kk < BK; ++kk) {
            const float4 al = pa_lo[kk];
            const float4 ah = pa_hi[kk];
            const float4 bl = pb_lo[kk];
            const float4 bh = pb_hi[kk];
            const float af[8] = {al.x, al.y, al.z, al.w, ah.x, ah.y, ah.z, ah.w};
            const float bf[8] = {bl.x, bl.y, bl.z, bl.w, bh.x, bh.y, bh.z, bh.w};
#pragma unroll
            for (int i = 0; i < 8; ++i) {
#pragma unroll
                for (int j = 0; j < 8; ++j) {
                    acc[i][j] = fmaf(af[i], bf[j], acc[i][j]);
                }
            }
        }
    }
    store_tile(acc, c, m, n, m0, n0, tx, ty, alpha, beta);
}
#else
extern "C" __global__ void sgemm_static(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                                        float* __restrict__ c, u32 m, u32 n, u32 k, float alpha, float beta,
                                        u32 bm_unused, u32 bn_unused, u32 bk_unused, u32 stages_unused) {
    // STAGES tiles of A (BM rows of BK + CE elements) and of B (BK rows of BN elements), as
    // 16-byte chunks.
    __shared__ uint4 a_chunks[STAGES * BM * (BK * EB / 16 + 1)];
    __shared__ uint4 b_chunks[STAGES * BK * (BN * EB / 16)];
    elem_t* a_elems = (elem_t*)a_chunks;
    elem_t* b_elems = (elem_t*)b_chunks;
    const quad4_t* a_quads = (const quad4_t*)a_chunks;
    const quad4_t* b_quads = (const quad4_t*)b_chunks;

    const u32 tid = threadIdx.x;
    if (blockDim.x != THREADS) {
        __trap();
    }
    const u32 tiles_n_raw = n / BN + (n % BN != 0 ? 1 : 0);
    const u32 tiles_n = tiles_n_raw > 0 ? tiles_n_raw : 1;
    const u32 m0 = (blockIdx.x / tiles_n) * BM;
    const u32 n0 = (blockIdx.x % tiles_n) * BN;
    const u32 tx = tid % THREADS_X;
    const u32 ty = tid / THREADS_X;

    const bool a_vec = aligned16(a) && k % CE == 0;
    const bool b_vec = aligned16(b) && n % CE == 0;
    // Copies k-tile kt into ring slot `slot`: 16-byte cp.async chunks when the tile is
    // inside the matrix and rows are chunk-aligned, element by element with zero fill else.
    auto load_tile = [&](u32 kt, u32 slot) {
        const u32 k0 = kt * BK;
        const u32 a_row_chunks = BK / CE;
        const bool inside_a = a_vec && m0 + BM <= m && k0 + BK <= k;
        for (u32 i = tid; i < BM * a_row_chunks; i += THREADS) {
            const u32 r = i / a_row_chunks;
            const u32 q = i % a_row_chunks;
            const u32 dst = slot * A_STAGE + r * A_STRIDE + q * CE;
            if (inside_a) {
                cp_async16(&a_chunks[dst / CE], a + ((u64)(m0 + r) * k + (k0 + q * CE)));
            } else {
                for (u32 e = 0; e < CE; ++e) {
                    const u32 gm = m0 + r;
                    const u32 gk = k0 + q * CE + e;
                    a_elems[dst + e] = (gm < m && gk < k) ? a[(u64)gm * k + gk] : (elem_t)0;
                }
            }
        }
        const u32 b_row_chunks = BN / CE;
        const bool inside_b = b_vec && n0 + BN <= n && k0 + BK <= k;
        for (u32 i = tid; i < BK * b_row_chunks; i += THREADS) {
            const u32 r = i / b_row_chunks;
            const u32 q = i % b_row_chunks;
            const u32 dst = slot * B_STAGE + r * BN + q * CE;
            if (inside_b) {
                cp_async16(&b_chunks[dst / CE], b + ((u64)(k0 + r) * n + (n0 + q * CE)));
            } else {
                for (u32 e = 0; e < CE; ++e) {
                    const u32 gk = k0 + r;
                    const u32 gn = n0 + q * CE + e;
                    b_elems[dst + e] = (gk < k && gn < n) ? b[(u64)gk * n + gn] : (elem_t)0;
                }
            }
        }
        cp_async_commit();
    };

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            acc[i][j] = 0.0f;
        }
    }
    const u32 k_tiles = k / BK + (k % BK != 0 ? 1 : 0);
    for (u32 s = 0; s + 1 < STAGES; ++s) {
        if (s < k_tiles) {
            load_tile(s, s);
        } else {
            cp_async_commit();
        }
    }
    for (u32 kt = 0; kt < k_tiles; ++kt) {
        // Tile kt's copies (this thread's) have landed once at most STAGES - 2 newer groups
        // are pending; the barrier publishes every thread's, and tells that slot (kt - 1)
        // is free to refill.
        cp_async_wait_group<(STAGES >= 2 ? STAGES - 2 : 0)>();
        __syncthreads();
#if STAGES > 1
        const u32 next = kt + STAGES - 1;
        if (next < k_tiles) {
            load_tile(next, next % STAGES);
        } else {
            cp_async_commit();
        }
#else
        load_tile(kt, 0);
        cp_async_wait_group<0>();
        __syncthreads();
#endif
        const u32 slot = kt % STAGES;
        // Indices (in quads of 4 elements) of this thread's 8 rows of the A tile and its two
        // column groups of the B tile, walked by increments.
        u32 ia[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const u32 row = i < 4 ? ty * 4 + i : BM / 2 + ty * 4 + (i - 4);
            ia[i] = slot * (A_STAGE / 4) + row * (A_STRIDE / 4);
        }
        u32 ib_lo = slot * (B_STAGE / 4) + tx;
        u32 ib_hi = slot * (B_STAGE / 4) + BN / 8 + tx;
        for (u32 kk = 0; kk < BK; kk += 4) {
            float af[8][4];
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                quad_to_f32(a_quads[ia[i]], af[i]);
                ia[i] += 1;
            }
#pragma unroll
            for (int j4 = 0; j4 < 4; ++j4) {
                float lo[4];
                float hi[4];
                quad_to_f32(b_quads[ib_lo], lo);
                quad_to_f32(b_quads[ib_hi], hi);
                ib_lo += BN / 4;
                ib_hi += BN / 4;
                const float bf[8] = {lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]};
#pragma unroll
                for (int i = 0; i < 8; ++i) {
#pragma unroll
                    for (int j = 0; j < 8; ++j) {
                        acc[i][j] = fmaf(af[i][j4], bf[j], acc[i][j]);
                    }
                }
            }
        }
    }

    store_tile(acc, c, m, n, m0, n0, tx, ty, alpha, beta);
}
#endif
