// Histogram of u32 keys with static shared memory: the algorithm and thread mapping of
// device-kernels/src/histogram.rs (see its module documentation), with the bins, the
// private copies and the block compiled in. The global bins are zeroed before the launch.
//
// Launch: `grid` blocks of BLOCK threads, no dynamic shared memory; arguments as the Rust
// entry point (num_bins and copies are BINS and COPIES here; bits and merge are 32 and 0:
// 32-bit counters, one block).

#ifndef BINS
#error "BINS (bins) must be defined"
#endif
#ifndef COPIES
#error "COPIES (private copies of the bins per block) must be defined"
#endif
#ifndef BLOCK
#error "BLOCK (threads per block) must be defined"
#endif

extern "C" __global__ void histogram_static(const u32* __restrict__ keys, u64 n, u32* __restrict__ bins,
                                            u32 num_bins_unused, u32 copies_unused, u32 bits_unused,
                                            u32 merge_unused) {
    __shared__ u32 counters[COPIES * BINS];

    const u32 tid = threadIdx.x;
    for (u32 i = tid; i < COPIES * BINS; i += BLOCK) {
        counters[i] = 0;
    }
    __syncthreads();

    // The copy of this thread's warp: several copies spread the atomics of popular bins.
    const u32 base = ((tid / 32) % COPIES) * BINS;
    const u64 stride = (u64)gridDim.x * BLOCK;
    const u64 first = (u64)blockIdx.x * BLOCK + tid;
    const bool vec_ok = aligned16(keys);
    const u64 n_vec = vec_ok ? n / 4 : 0;
    const uint4* v = (const uint4*)keys;
    auto count4 = [&](uint4 k) {
        if (k.x < BINS) atomicAdd(&counters[base + k.x], 1u);
        if (k.y < BINS) atomicAdd(&counters[base + k.y], 1u);
        if (k.z < BINS) atomicAdd(&counters[base + k.z], 1u);
        if (k.w < BINS) atomicAdd(&counters[base + k.w], 1u);
    };
    u64 g = first;
    // Four vectors read before any is counted: their loads are in flight together.
    for (; g + 3 * stride < n_vec; g += 4 * stride) {
        const uint4 k0 = v[g], k1 = v[g + stride], k2 = v[g + 2 * stride], k3 = v[g + 3 * stride];
        count4(k0);
        count4(k1);
        count4(k2);
        count4(k3);
    }
    for (; g < n_vec; g += stride) {
        count4(v[g]);
    }
    // The keys past the last whole vector (all of them if `keys` is not 16-byte aligned).
    for (u64 g = n_vec * 4 + first; g < n; g += stride) {
        const u32 key = keys[g];
        if (key < BINS) atomicAdd(&counters[base + key], 1u);
    }
    __syncthreads();

    for (u32 b = tid; b < BINS; b += BLOCK) {
        u32 sum = 0;
        for (u32 c = 0; c < COPIES; ++c) {
            sum += counters[c * BINS + b];
        }
        if (sum != 0) {
            atomicAdd(&bins[b], sum);
        }
    }
}
