// SGEMM on the static-WGSL path: C = alpha * A * B + beta * C, row-major f32, any M, N, K.
// The block and thread mapping of device-kernels/src/sgemm.rs (read that first), with its
// tiles in `var<workgroup>` arrays whose sizes are fixed when the pipeline is created.
//
// Template slots (names in double braces), filled by host/src/families/sgemm/mod.rs (wgsl_spec):
//   SIZING   declarations (u32) of BM, BN, BK (the block tile), STAGES (1 or 2), THREADS
//            (= BM/8 * BN/8), LOADS_A and LOADS_B (chunks of 4 elements of the A and B tiles
//            each thread copies per k-tile: ceil(BM*BK/4 / THREADS), ceil(BK*BN/4 / THREADS))
//   ENABLE   `enable f16;` for f16 inputs (wgpu's SHADER_F16 feature), else nothing
//   AB       the element type of A and B: f32, or f16 (the problem's f16 inputs). f16 chunks
//            are converted to f32 as they are read, so the tiles, the FMAs and C are f32 in
//            both: the tiles take twice the bytes of the Rust kernel's f16 tiles.
//
// Mapping. Workgroup t (a grid-stride loop over tiles, so a grid capped at the device's
// limit covers any matrix) computes the BM x BN tile of C at (m0, n0) = (BM * (t / tiles_n),
// BN * (t % tiles_n)). Invocation (tx, ty) = (tid % (BN/8), tid / (BN/8)) keeps an 8 x 8
// tile of C in 16 vec4 registers: rows {ty*4 + i, BM/2 + ty*4 + i} and columns
// {tx*4 + j, BN/2 + tx*4 + j} (i, j < 4). Splitting each direction into two 4-wide halves
// makes a subgroup's 16-byte reads of a B row consecutive (no bank conflicts) and its reads
// of A broadcasts.
//
// Shared tiles, as vec4 so that every inner-loop read is one 16-byte load:
//   a_s  STAGES x BK rows of the A tile TRANSPOSED (row kk holds A[m0 .. m0+BM][k0 + kk]),
//        each BM floats + one vec4 of padding. Transposed, an invocation's 8 rows of A for
//        one k are two vec4 reads (untransposed they would be 8 scalar reads).
//        The padding: the copy writes the tile transposed, a chunk of 4 consecutive k of
//        one row as 4 scalars in 4 rows; without it, the two chunks of a row pair (BK = 8)
//        land in the same bank (4 * BM is a multiple of 32 banks); with it 4 * (BM + 4) is
//        16 mod 32 and they do not (BK = 16 and 32 keep a 2- and 4-way conflict on the
//        copy, once per BK inner steps, instead of 4- and 8-way).
//   b_s  STAGES x BK rows of the B tile, BN floats each, copied as they are.
// Global reads are vec4 (A, B and C are bound as arrays of vec4: the backend pads every
// buffer to 16 bytes) when the row length keeps chunks aligned (K % 4 for A, N % 4 for B
// and C), else element by element; out-of-matrix elements read as zero and are not stored.
//
// STAGES = 1: copy tile kt, barrier, multiply, barrier. STAGES = 2 (double-buffered): tile
// kt + 1 is read from global memory into registers before tile kt is multiplied, and
// written to the other half of the ring after it, one barrier per k-tile; the global reads
// are in flight while the 8 x 8 x BK FMAs run.
//
// Indices are u32: the host refuses M * K, K * N, M * N past 2^32 - 1 and M, N, K within a
// tile of it.

{{ENABLE}}
{{SIZING}}
{{IDS}}

struct Params {
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
    // The config as the launch-sized kernel takes it (same arguments on every backend);
    // here it is compiled in through SIZING.
    bm: u32,
    bn: u32,
    bk: u32,
    stages: u32,
}

@group(0) @binding(0) var<storage, read> a: array<vec4<{{AB}}>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<{{AB}}>>;
@group(0) @binding(2) var<storage, read_write> c: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> params: Params;

// Registers of the double-buffered copy: at most this many chunks of each tile per
// invocation (the host refuses a two-stage config that needs more). A literal in both
// variants: function-scope arrays cannot be sized by `override` constants.
const MAX_LOADS: u32 = 8u;

// vec4 per transposed A row (BM floats and the padding vec4), and per B row.
const A_ROW_PAD: u32 = 1u;

var<workgroup> a_s: array<vec4<f32>, STAGES * BK * (BM / 4u + A_ROW_PAD)>;
var<workgroup> b_s: array<vec4<f32>, STAGES * BK * (BN / 4u)>;

// Chunk v (< BM * BK / 4) of the A tile at (m0, k0): 4 consecutive k of one row.
fn load_a(m0: u32, k0: u32, v: u32) -> vec4<f32> {
    let gm = m0 + v / (BK / 4u);
    let gk = k0 + (v % (BK / 4u)) * 4u;
    let m = params.m;
    let k = params.k;
    var out = vec4<f32>(0.0);
    if (gm < m) {
        if ((k & 3u) == 0u) {
            // K % 4 == 0 and k0 % 4 == 0: the chunk is aligned and wholly in or out.
            if (gk < k) {
                out = vec4<f32>(a[(gm * k + gk) >> 2u]);
            }
        } else {
            for (var e = 0u; e < 4u; e++) {
                if (gk + e < k) {
                    let i = gm * k + gk + e;
                    out[e] = f32(a[i >> 2u][i & 3u]);
                }
            }
        }
    }
    return out;
}

// Chunk v (< BK * BN / 4) of the B tile at (k0, n0): 4 consecutive columns of one row.
fn load_b(k0: u32, n0: u32, v: u32) -> vec4<f32> {
    let gk = k0 + v / (BN / 4u);
    let gn = n0 + (v % (BN / 4u)) * 4u;
    let n = params.n;
    let k = params.k;
    var out = vec4<f32>(0.0);
    if (gk < k) {
        if ((n & 3u) == 0u) {
            if (gn < n) {
                out = vec4<f32>(b[(gk * n + gn) >> 2u]);
            }
        } else {
            for (var e = 0u; e < 4u; e++) {
                if (gn + e < n) {
                    let i = gk * n + gn + e;
                    out[e] = f32(b[i >> 2u][i & 3u]);
                }
            }
        }
    }
    return out;
}

// Writes chunk v of the A tile into ring slot `slot`, transposed: its 4 k go to 4 rows.
fn store_a(slot: u32, v: u32, val: vec4<f32>) {
    let row_vec4 = BM / 4u + A_ROW_PAD;
    let r = v / (BK / 4u);
    let kk = (v % (BK / 4u)) * 4u;
    let base = (slot * BK + kk) * row_vec4 + r / 4u;
    let comp = r & 3u;
    a_s[base][comp] = val.x;
    a_s[base + row_vec4][comp] = val.y;
    a_s[base + 2u * row_vec4][comp] = val.z;
    a_s[base + 3u * row_vec4][comp] = val.w;
}

fn store_b(slot: u32, v: u32, val: vec4<f32>) {
    b_s[slot * BK * (BN / 4u) + v] = val;
}

// C[r][col .. col + 4] = alpha * acc + beta * C (C not read when beta is 0), the columns
// past N dropped.
fn store_c(r: u32, col: u32, acc: vec4<f32>) {
    let m = params.m;
    let n = params.n;
    let beta = params.beta;
    if (r >= m) {
        return;
    }
    let out = params.alpha * acc;
    if ((n & 3u) == 0u) {
        if (col < n) {
            let i = (r * n + col) >> 2u;
            if (beta != 0.0) {
                c[i] = fma(vec4<f32>(beta), c[i], out);
            } else {
                c[i] = out;
            }
        }
        return;
    }
    for (var e = 0u; e < 4u; e++) {
        if (col + e < n) {
            let i = r * n + col + e;
            if (beta != 0.0) {
                c[i >> 2u][i & 3u] = fma(beta, c[i >> 2u][i & 3u], out[e]);
            } else {
                c[i >> 2u][i & 3u] = out[e];
            }
        }
    }
}

@compute @workgroup_size(THREADS)
fn sgemm(ids: Ids) {
    let m = params.m;
    let n = params.n;
    let k = params.k;
    let tiles_n = max((n + BN - 1u) / BN, 1u);
    let tiles = max((m + BM - 1u) / BM, 1u) * tiles_n;
    let k_tiles = (k + BK - 1u) / BK;
    let tx = ids.tid % (BN / 8u);
    let ty = ids.tid / (BN / 8u);
    let a_chunks = BM * BK / 4u;
    let b_chunks = BK * BN / 4u;
    let a_row = BM / 4u + A_ROW_PAD;
    let b_row = BN / 4u;

    for (var t = ids.wid.x; t < tiles; t += ids.nwg.x) {
        let m0 = (t / tiles_n) * BM;
        let n0 = (t % tiles_n) * BN;
        // c<row><half>: row i < 8 of the thread tile, columns tx*4.. (l) and BN/2 + tx*4.. (h).
        var c0l = vec4<f32>(0.0); var c0h = vec4<f32>(0.0);
        var c1l = vec4<f32>(0.0); var c1h = vec4<f32>(0.0);
        var c2l = vec4<f32>(0.0); var c2h = vec4<f32>(0.0);
        var c3l = vec4<f32>(0.0); var c3h = vec4<f32>(0.0);
        var c4l = vec4<f32>(0.0); var c4h = vec4<f32>(0.0);
        var c5l = vec4<f32>(0.0); var c5h = vec4<f32>(0.0);
        var c6l = vec4<f32>(0.0); var c6h = vec4<f32>(0.0);
        var c7l = vec4<f32>(0.0); var c7h = vec4<f32>(0.0);
        // The next tile's chunks, held in registers while this one is multiplied (STAGES 2).
        var ra: array<vec4<f32>, MAX_LOADS>;
        var rb: array<vec4<f32>, MAX_LOADS>;

        if (STAGES == 2u) {
            for (var l = 0u; l < LOADS_A; l++) {
                let v = ids.tid + l * THREADS;
                if (v < a_chunks) {
                    store_a(0u, v, load_a(m0, 0u, v));
                }
            }
            for (var l = 0u; l < LOADS_B; l++) {
                let v = ids.tid + l * THREADS;
                if (v < b_chunks) {
                    store_b(0u, v, load_b(0u, n0, v));
                }
            }
            workgroupBarrier();
        }

        for (var kt = 0u; kt < k_tiles; kt++) {
            var slot = 0u;
            let more = kt + 1u < k_tiles;
            if (STAGES == 1u) {
                let k0 = kt * BK;
                for (var l = 0u; l < LOADS_A; l++) {
                    let v = ids.tid + l * THREADS;
                    if (v < a_chunks) {
                        store_a(0u, v, load_a(m0, k0, v));
                    }
                }
                for (var l = 0u; l < LOADS_B; l++) {
                    let v = ids.tid + l * THREADS;
                    if (v < b_chunks) {
                        store_b(0u, v, load_b(k0, n0, v));
                    }
                }
                workgroupBarrier();
            } else {
                slot = kt & 1u;
                if (more) {
                    let k0 = (kt + 1u) * BK;
                    for (var l = 0u; l < LOADS_A; l++) {
                        let v = ids.tid + l * THREADS;
                        if (v < a_chunks) {
                            ra[l] = load_a(m0, k0, v);
                        }
                    }
                    for (var l = 0u; l < LOADS_B; l++) {
                        let v = ids.tid + l * THREADS;
                        if (v < b_chunks) {
                            rb[l] = load_b(k0, n0, v);
                        }
                    }
                }
            }

            var ia = slot * BK * a_row + ty;
            var ib = slot * BK * b_row + tx;
            for (var kk = 0u; kk < BK; kk++) {
                let a0 = a_s[ia];
                let a1 = a_s[ia + BM / 8u];
                let b0 = b_s[ib];
                let b1 = b_s[ib + BN / 8u];
                ia += a_row;
                ib += b_row;
                c0l = fma(vec4<f32>(a0.x), b0, c0l); c0h = fma(vec4<f32>(a0.x), b1, c0h);
                c1l = fma(vec4<f32>(a0.y), b0, c1l); c1h = fma(vec4<f32>(a0.y), b1, c1h);
                c2l = fma(vec4<f32>(a0.z), b0, c2l); c2h = fma(vec4<f32>(a0.z), b1, c2h);
                c3l = fma(vec4<f32>(a0.w), b0, c3l); c3h = fma(vec4<f32>(a0.w), b1, c3h);
                c4l = fma(vec4<f32>(a1.x), b0, c4l); c4h = fma(vec4<f32>(a1.x), b1, c4h);
                c5l = fma(vec4<f32>(a1.y), b0, c5l); c5h = fma(vec4<f32>(a1.y), b1, c5h);
                c6l = fma(vec4<f32>(a1.z), b0, c6l); c6h = fma(vec4<f32>(a1.z), b1, c6h);
                c7l = fma(vec4<f32>(a1.w), b0, c7l); c7h = fma(vec4<f32>(a1.w), b1, c7h);
            }

            if (STAGES == 2u && more) {
                let next = slot ^ 1u;
                for (var l = 0u; l < LOADS_A; l++) {
                    let v = ids.tid + l * THREADS;
                    if (v < a_chunks) {
                        store_a(next, v, ra[l]);
                    }
                }
                for (var l = 0u; l < LOADS_B; l++) {
                    let v = ids.tid + l * THREADS;
                    if (v < b_chunks) {
                        store_b(next, v, rb[l]);
                    }
                }
            }
            // STAGES 1: the tile may be overwritten. STAGES 2: the next tile is published
            // and this slot is free to be refilled by the iteration after.
            workgroupBarrier();
        }

        let r0 = m0 + ty * 4u;
        let r1 = m0 + BM / 2u + ty * 4u;
        let cl = n0 + tx * 4u;
        let ch = n0 + BN / 2u + tx * 4u;
        store_c(r0, cl, c0l); store_c(r0, ch, c0h);
        store_c(r0 + 1u, cl, c1l); store_c(r0 + 1u, ch, c1h);
        store_c(r0 + 2u, cl, c2l); store_c(r0 + 2u, ch, c2h);
        store_c(r0 + 3u, cl, c3l); store_c(r0 + 3u, ch, c3h);
        store_c(r1, cl, c4l); store_c(r1, ch, c4h);
        store_c(r1 + 1u, cl, c5l); store_c(r1 + 1u, ch, c5h);
        store_c(r1 + 2u, cl, c6l); store_c(r1 + 2u, ch, c6h);
        store_c(r1 + 3u, cl, c7l); store_c(r1 + 3u, ch, c7h);
    }
}
