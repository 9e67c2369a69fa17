// Prepended by the host (host/src/backend/cuda/nvrtc.rs) to every cuda-static kernel
// source (host/src/families/<family>/<family>.cu) before NVRTC compiles it: the few device
// helpers the Rust kernels get from device-kernels/src/gpu, written the same way (the same
// PTX instructions), so that the static and the launch-sized kernels differ only in how
// their shared memory is sized. No #include: NVRTC needs no headers for any of it.

typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned short u16;

// 2^x and e^x as the Rust kernels compute them (`ex2.approx.f32`, gpu::exp).
__device__ __forceinline__ float ex2_approx(float x) {
    float r;
    asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}
__device__ __forceinline__ float exp_approx(float x) { return ex2_approx(x * 1.44269504088896340736f); }

// 1/sqrt(x) as gpu::rsqrt (`rsqrt.approx.f32`).
__device__ __forceinline__ float rsqrt_approx(float x) {
    float r;
    asm("rsqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

// Starts copying 16 bytes from global memory to shared memory without registers
// (`cp.async.cg`, sm_80+); a plain 16-byte copy on older devices. Both pointers 16-byte
// aligned. The data is there after this thread's cp_async_wait_* and a barrier.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    u32 s;
    asm volatile("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(s) : "l"(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
#else
    *(uint4*)smem = *(const uint4*)gmem;
#endif
}

// cp_async16 for one 4-byte word (`cp.async.ca`: `.cg` takes only 16 bytes).
__device__ __forceinline__ void cp_async4(void* smem, const void* gmem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    u32 s;
    asm volatile("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(s) : "l"(smem));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(s), "l"(gmem) : "memory");
#else
    *(u32*)smem = *(const u32*)gmem;
#endif
}

// Closes this thread's current group of cp_async16 copies (`cp.async.commit_group`).
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

// Waits until at most N of this thread's committed groups are in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

// Waits for all of this thread's cp_async16 copies.
__device__ __forceinline__ void cp_async_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

// A u64 in global memory loaded with acquire / stored with release ordering at GPU scope
// (the scan's status words, published by other blocks).
__device__ __forceinline__ u64 load_acquire_u64(const u64* p) {
    u64 v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void store_release_u64(u64* p, u64 v) {
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// The element types of the 4-byte families: the 16-byte vector of four, and the bits a
// status word carries.
template <typename T>
struct Elem;
template <>
struct Elem<float> {
    typedef float4 V;
    static __device__ __forceinline__ u32 to_bits(float x) { return __float_as_uint(x); }
    static __device__ __forceinline__ float from_bits(u32 b) { return __uint_as_float(b); }
};
template <>
struct Elem<u32> {
    typedef uint4 V;
    static __device__ __forceinline__ u32 to_bits(u32 x) { return x; }
    static __device__ __forceinline__ u32 from_bits(u32 b) { return b; }
};

// Four elements as a vector and back.
template <typename V, typename T>
__device__ __forceinline__ V vec4(T a, T b, T c, T d) {
    V v;
    v.x = a;
    v.y = b;
    v.z = c;
    v.w = d;
    return v;
}

// Elements start .. start + 4 of the len elements at src, zero outside 0..len: one vector
// load when all four are inside, start is a multiple of 4 and src is 16-byte aligned
// (`aligned`), element by element otherwise (device-kernels/src/vector.rs `load4`).
template <typename T>
__device__ __forceinline__ typename Elem<T>::V load4(const T* src, long long start, u64 len, bool aligned) {
    typedef typename Elem<T>::V V;
    if (aligned && start >= 0 && (start & 3) == 0 && (u64)start + 4 <= len) {
        return *(const V*)(src + start);
    }
    T e[4];
#pragma unroll
    for (int lane = 0; lane < 4; ++lane) {
        const long long g = start + lane;
        e[lane] = (g >= 0 && (u64)g < len) ? src[g] : (T)0;
    }
    return vec4<V, T>(e[0], e[1], e[2], e[3]);
}

// Stores the lanes of v inside 0..len at dst + start: one vector store when all four are
// and the address is 16-byte aligned (`store4`).
template <typename T>
__device__ __forceinline__ void store4(T* dst, u64 start, u64 len, typename Elem<T>::V v, bool aligned) {
    typedef typename Elem<T>::V V;
    if (aligned && (start & 3) == 0 && start + 4 <= len) {
        *(V*)(dst + start) = v;
        return;
    }
    const T e[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int lane = 0; lane < 4; ++lane) {
        if (start + lane < len) {
            dst[start + lane] = e[lane];
        }
    }
}

// Whether p may be read and written as 16-byte vectors.
__device__ __forceinline__ bool aligned16(const void* p) { return ((unsigned long long)p & 15) == 0; }

// Folds every thread's value of a block of THREADS through scratch (THREADS floats) as a
// tree, the fold of the Rust row skeleton (device-kernels/src/rows.rs): the maximum when
// MAX, else the sum. Every thread gets the result.
template <u32 THREADS, bool MAX>
__device__ __forceinline__ float block_fold(float* scratch, u32 tid, float value) {
    scratch[tid] = value;
    __syncthreads();
    for (u32 live = THREADS; live > 1;) {
        const u32 half = (live + 1) / 2;
        if (tid + half < live) {
            const float a = scratch[tid];
            const float b = scratch[tid + half];
            scratch[tid] = MAX ? fmaxf(a, b) : a + b;
        }
        __syncthreads();
        live = half;
    }
    const float result = scratch[0];
    // Slot 0 is overwritten by the next fold.
    __syncthreads();
    return result;
}
