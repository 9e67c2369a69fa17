// Exclusive prefix sum (u32 sums wrap) in one pass with decoupled look-back, with static
// shared memory: the algorithm and thread mapping of device-kernels/src/scan.rs (see its
// module documentation), with the block and the items per thread compiled in. Status
// words (zeroed before the launch) hold a flag (1 aggregate, 2 inclusive prefix) in the
// high half and the value's bits in the low half; `counter` is zeroed too.
//
// Launch: ceil(n / (BLOCK * IPT)) blocks (at least 1) of BLOCK threads, no dynamic shared
// memory; arguments as the Rust entry points (items per thread is IPT here).

#ifndef ELEM
#error "ELEM (float or u32) must be defined"
#endif
#ifndef BLOCK
#error "BLOCK (threads per block) must be defined"
#endif
#ifndef IPT
#error "IPT (items per thread, a multiple of 4) must be defined"
#endif

typedef Elem<ELEM>::V VEC4;

#define PER_TILE (BLOCK * IPT)
// A whole group of 8 vectors, which tile_vec permutes within.
#define TILE_VECS ((PER_TILE / 4 + 7) / 8 * 8)
#define SCRATCH_VECS ((BLOCK + 3) / 4)
// Threads that rake the per-thread sums, and predecessors one look-back round reads.
#define RAKE 32
#define WINDOW 32
#define FLAG_AGGREGATE 1ull
#define FLAG_PREFIX 2ull
#define MAX_SPIN (1u << 26)

// Where tile vector v is stored: the low three bits of its index XOR the next three (no
// bank conflicts at strides of 2, 4 or 8 vectors, no padding).
__device__ __forceinline__ u32 tile_vec(u32 v) { return v ^ ((v >> 3) & 7); }

__device__ __forceinline__ ELEM from_bits(u32 b) { return Elem<ELEM>::from_bits(b); }
__device__ __forceinline__ u32 to_bits(ELEM x) { return Elem<ELEM>::to_bits(x); }
__device__ __forceinline__ u64 word(u64 flag, ELEM v) { return (flag << 32) | (u64)to_bits(v); }
__device__ __forceinline__ ELEM sum4(VEC4 v) { return (v.x + v.y) + (v.z + v.w); }

extern "C" __global__ void scan_static(const ELEM* __restrict__ input, ELEM* __restrict__ output, u64 n,
                                       u64* status, u32* counter, u32 items_per_thread_unused) {
    __shared__ VEC4 tile[TILE_VECS];
    __shared__ VEC4 scratch_v[SCRATCH_VECS];
    __shared__ VEC4 rake_v[RAKE / 4];
    __shared__ u64 window[WINDOW];
    __shared__ u32 misc[4];
    ELEM* scratch = (ELEM*)scratch_v;
    ELEM* rake = (ELEM*)rake_v;

    const u32 tid = threadIdx.x;
    const bool in_vec = aligned16(input);
    const bool out_vec = aligned16(output);

    // The next tile from the global counter: tile t - 1 belongs to a block already running.
    if (tid == 0) {
        misc[0] = atomicAdd(counter, 1u);
    }
    __syncthreads();
    const u64 t = misc[0];
    const u64 start = t * PER_TILE;
    // Tiles inside the input (all but the last) skip the per-vector bounds checks and are
    // copied with cp.async, all of a thread's vectors in flight at once.
    if (in_vec && start + PER_TILE <= n) {
        const VEC4* src = (const VEC4*)(input + start);
        for (u32 i = tid; i < PER_TILE / 4; i += BLOCK) {
            cp_async16(&tile[tile_vec(i)], &src[i]);
        }
        cp_async_wait_all();
    } else {
        for (u32 i = tid; i < PER_TILE / 4; i += BLOCK) {
            tile[tile_vec(i)] = load4(input, (long long)(start + 4 * (u64)i), n, in_vec);
        }
    }
    __syncthreads();

    // Thread tid sums its IPT consecutive elements.
    const u32 first = tid * (IPT / 4);
    ELEM local = 0;
    for (u32 j = 0; j < IPT / 4; ++j) {
        local = local + sum4(tile[tile_vec(first + j)]);
    }

    // Raking scan of the threads' sums: thread i < RAKE owns scratch[i*run .. (i+1)*run].
    scratch[tid] = local;
    __syncthreads();
    const u32 run = (BLOCK + RAKE - 1) / RAKE;
    const u32 lo = tid * run < BLOCK ? tid * run : BLOCK;
    const u32 hi = (tid + 1) * run < BLOCK ? (tid + 1) * run : BLOCK;
    // Runs of whole vectors are read and written as vectors.
    const bool run_vec = (run % 4 == 0) && (BLOCK % 4 == 0);
    if (tid < RAKE) {
        ELEM sum = 0;
        if (run_vec) {
            for (u32 i = lo / 4; i < hi / 4; ++i) {
                sum = sum + sum4(scratch_v[i]);
            }
        } else {
            for (u32 i = lo; i < hi; ++i) {
                sum = sum + scratch[i];
            }
        }
        rake[tid] = sum;
    }
    __syncthreads();
    if (tid == 0) {
        // Exclusive scan of the runs (blocks of fewer than RAKE threads have fewer; the
        // rest read as zero); the total is the tile's aggregate, published at once.
        ELEM aggregate = 0;
        for (u32 q = 0; q < RAKE / 4; ++q) {
            const VEC4 v = rake_v[q];
            const ELEM e[4] = {v.x, v.y, v.z, v.w};
            ELEM out[4];
#pragma unroll
            for (u32 k = 0; k < 4; ++k) {
                const ELEM x = (4 * q + k < BLOCK) ? e[k] : (ELEM)0;
                out[k] = aggregate;
                aggregate = aggregate + x;
            }
            rake_v[q] = vec4<VEC4, ELEM>(out[0], out[1], out[2], out[3]);
        }
        store_release_u64(status + t, word(t == 0 ? FLAG_PREFIX : FLAG_AGGREGATE, aggregate));
        // The look-back's state: misc[1] the prefix so far, misc[2] done, misc[3] the
        // nearest tile of the next window; misc[0] keeps the aggregate from here on.
        misc[0] = to_bits(aggregate);
        misc[1] = to_bits((ELEM)0);
        misc[2] = t == 0 ? 1u : 0u;
        misc[3] = t == 0 ? 0u : (u32)(t - 1);
    }
    __syncthreads();
    if (tid < RAKE) {
        ELEM running = rake[tid];
        if (run_vec) {
            for (u32 i = lo / 4; i < hi / 4; ++i) {
                const VEC4 v = scratch_v[i];
                const ELEM e[4] = {v.x, v.y, v.z, v.w};
                ELEM out[4];
#pragma unroll
                for (u32 k = 0; k < 4; ++k) {
                    out[k] = running;
                    running = running + e[k];
                }
                scratch_v[i] = vec4<VEC4, ELEM>(out[0], out[1], out[2], out[3]);
            }
        } else {
            for (u32 i = lo; i < hi; ++i) {
                const ELEM v = scratch[i];
                scratch[i] = running;
                running = running + v;
            }
        }
    }
    // Each thread's elements' exclusive prefixes within the tile.
    __syncthreads();
    ELEM running = scratch[tid];
    for (u32 j = 0; j < IPT / 4; ++j) {
        const u32 k = tile_vec(first + j);
        const VEC4 v = tile[k];
        const ELEM e[4] = {v.x, v.y, v.z, v.w};
        ELEM out[4];
#pragma unroll
        for (u32 l = 0; l < 4; ++l) {
            out[l] = running;
            running = running + e[l];
        }
        tile[k] = vec4<VEC4, ELEM>(out[0], out[1], out[2], out[3]);
    }

    // Decoupled look-back: the first WINDOW threads load the status words of the WINDOW
    // preceding tiles at once; thread 0 adds them up to the nearest inclusive prefix, or
    // has the window read again if one is not published yet; the window moves back until
    // it meets a prefix. Every thread runs the loop (it has barriers).
    u32 rounds = 0;
    for (;;) {
        if (misc[2] != 0) {
            break;
        }
        const u64 nearest = misc[3];
        // Strided, so blocks of fewer than WINDOW threads fill the whole window too; past
        // tile 0 the window reads as an inclusive prefix of zero.
        for (u32 i = tid; i < WINDOW; i += BLOCK) {
            window[i] = (u64)i <= nearest ? load_acquire_u64(status + (nearest - i)) : word(FLAG_PREFIX, (ELEM)0);
        }
        __syncthreads();
        if (tid == 0) {
            ELEM sum = 0;
            bool ready = true;
            bool found = false;
            for (u32 i = 0; i < WINDOW && ready && !found; ++i) {
                const u64 s = window[i];
                const u64 flag = s >> 32;
                if (flag == 0) {
                    ready = false;
                } else {
                    sum = sum + from_bits((u32)s);
                    found = flag == FLAG_PREFIX;
                }
            }
            if (ready) {
                misc[1] = to_bits(from_bits(misc[1]) + sum);
                if (found) {
                    misc[2] = 1;
                } else {
                    misc[3] = (u32)(nearest - WINDOW);
                }
            } else {
                rounds += 1;
                if (rounds >= MAX_SPIN) {
                    __trap();
                }
            }
        }
        __syncthreads();
    }
    if (tid == 0 && t > 0) {
        store_release_u64(status + t, word(FLAG_PREFIX, from_bits(misc[1]) + from_bits(misc[0])));
    }
    __syncthreads();

    // The tile written out, as vectors, with the prefix added.
    const ELEM prefix = from_bits(misc[1]);
    const bool full = out_vec && start + PER_TILE <= n;
    for (u32 v = tid; v < PER_TILE / 4 && start + 4 * (u64)v < n; v += BLOCK) {
        VEC4 x = tile[tile_vec(v)];
        x.x = prefix + x.x;
        x.y = prefix + x.y;
        x.z = prefix + x.z;
        x.w = prefix + x.w;
        const u64 g = start + 4 * (u64)v;
        if (full) {
            *(VEC4*)(output + g) = x;
        } else {
            store4(output, g, n, x, out_vec);
        }
    }
}
