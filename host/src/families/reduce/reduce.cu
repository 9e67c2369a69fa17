// Reduce, one pass, with static shared memory: the algorithm and thread mapping of
// device-kernels/src/reduce.rs (see its module documentation), with the block, the items
// per thread and staging compiled in. The host chains passes until one value is left.
//
// Launch: grid = ReduceConfig::grid(n) blocks of BLOCK threads, no dynamic shared memory;
// arguments as the Rust entry points (the last one, items per thread, is IPT here).

#ifndef ELEM
#error "ELEM (float or u32) must be defined"
#endif
#ifndef OP
#error "OP (0 sum, 1 min, 2 max) must be defined"
#endif
#ifndef BLOCK
#error "BLOCK (threads per block) must be defined"
#endif
#ifndef IPT
#error "IPT (items per thread) must be defined"
#endif
#ifndef STAGED
#error "STAGED (0 or 1) must be defined"
#endif

typedef Elem<ELEM>::V VEC4;

// The operator and its identity; float min/max ignore a NaN operand (fminf/fmaxf, as
// f32::min and PTX min.f32); u32 sums wrap.
__device__ __forceinline__ float combine(float a, float b) {
#if OP == 0
    return a + b;
#elif OP == 1
    return fminf(a, b);
#else
    return fmaxf(a, b);
#endif
}
__device__ __forceinline__ u32 combine(u32 a, u32 b) {
#if OP == 0
    return a + b;
#elif OP == 1
    return a < b ? a : b;
#else
    return a > b ? a : b;
#endif
}
__device__ __forceinline__ float identity_of(float) {
#if OP == 0
    return 0.0f;
#elif OP == 1
    return __int_as_float(0x7f800000);
#else
    return __int_as_float(0xff800000);
#endif
}
__device__ __forceinline__ u32 identity_of(u32) {
#if OP == 0
    return 0u;
#elif OP == 1
    return 0xffffffffu;
#else
    return 0u;
#endif
}

__device__ __forceinline__ ELEM fold4(VEC4 v) { return combine(combine(v.x, v.y), combine(v.z, v.w)); }

extern "C" __global__ void reduce_static(const ELEM* __restrict__ input, ELEM* __restrict__ partials, u64 n,
                                         u32 items_per_thread_unused) {
#if STAGED
    // Each full chunk, copied in before it is folded (the Rust kernel's `tile`).
    __shared__ __align__(16) ELEM tile[BLOCK * IPT];
#endif
    __shared__ ELEM scratch[BLOCK];

    const u32 tid = threadIdx.x;
    const u32 bid = blockIdx.x;
    const u32 grid = gridDim.x;
    const u64 chunk = (u64)BLOCK * IPT;
    const u64 n_chunks = (n + chunk - 1) / chunk;
    const u32 vectors = IPT / 4;
    const bool vec_ok = aligned16(input);
    ELEM acc = identity_of((ELEM)0);

    for (u64 c = bid; c < n_chunks; c += grid) {
        const u64 start = c * chunk;
        const ELEM* base = input + start;
        if (start + chunk <= n) {
#if STAGED
            // The same mapping as the direct path: vectors k*BLOCK + tid, then the rest.
            u32 first_scalar = 0;
            if (vec_ok) {
                const VEC4* src = (const VEC4*)base;
                VEC4* dst = (VEC4*)tile;
                for (u32 k = 0; k < vectors; ++k) {
                    const u32 i = k * BLOCK + tid;
                    dst[i] = src[i];
                }
                first_scalar = vectors * 4 * BLOCK;
            }
            for (u32 i = first_scalar + tid; i < BLOCK * IPT; i += BLOCK) {
                tile[i] = base[i];
            }
            __syncthreads();
            for (u32 k = 0; k < IPT; ++k) {
                acc = combine(acc, tile[k * BLOCK + tid]);
            }
            // The next chunk overwrites the tile.
            __syncthreads();
#else
            if (vec_ok) {
                const VEC4* v = (const VEC4*)base;
                u32 k = 0;
                // Four independent 16-byte loads in flight per thread.
                for (; k + 4 <= vectors; k += 4) {
                    const VEC4 a = v[k * BLOCK + tid];
                    const VEC4 b = v[(k + 1) * BLOCK + tid];
                    const VEC4 c2 = v[(k + 2) * BLOCK + tid];
                    const VEC4 d = v[(k + 3) * BLOCK + tid];
                    const ELEM ab = combine(fold4(a), fold4(b));
                    const ELEM cd = combine(fold4(c2), fold4(d));
                    acc = combine(acc, combine(ab, cd));
                }
                for (; k < vectors; ++k) {
                    acc = combine(acc, fold4(v[k * BLOCK + tid]));
                }
                const ELEM* rest = base + vectors * 4 * BLOCK;
                for (u32 k2 = 0; k2 < IPT % 4; ++k2) {
                    acc = combine(acc, rest[k2 * BLOCK + tid]);
                }
            } else {
                for (u32 k = 0; k < IPT; ++k) {
                    acc = combine(acc, base[k * BLOCK + tid]);
                }
            }
#endif
        } else {
            // The last, partial chunk: element-wise with bounds checks (staged too).
            const u64 rem = n - start;
            for (u32 k = 0; k < IPT; ++k) {
                const u64 i = (u64)k * BLOCK + tid;
                if (i < rem) {
                    acc = combine(acc, base[i]);
                }
            }
        }
    }

    scratch[tid] = acc;
    __syncthreads();
    for (u32 active = BLOCK; active > 1;) {
        const u32 half = (active + 1) / 2;
        if (tid + half < active) {
            scratch[tid] = combine(scratch[tid], scratch[tid + half]);
        }
        __syncthreads();
        active = half;
    }
    if (tid == 0) {
        partials[bid] = scratch[0];
    }
}
