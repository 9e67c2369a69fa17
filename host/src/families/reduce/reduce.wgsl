// One pass of the block reduce on the static-WGSL path.
//
// The algorithm and thread mapping are those of device-kernels/src/reduce.rs (read that
// first): block `wid.x` walks chunks of BLOCK * items_per_thread elements with stride
// `num_workgroups.x`, each thread folds its elements in a register (16-byte loads of
// `vec4<T>` in full, aligned chunks), the workgroup folds its BLOCK values in `scratch`
// and thread 0 writes `partials[wid.x]`. Staged pipelines first copy each full chunk into
// `tile`. Only the sizing differs from the Rust kernel: BLOCK and TILE are fixed when the
// pipeline is created, as literals in this text (wgsl-literal) or as pipeline `override`
// constants (wgsl-override), so every config is a pipeline of its own.
//
// Template slots, written as the name in double braces and filled by
// host/src/families/reduce/mod.rs:
//   T         f32 | u32
//   IDENTITY  the operator's identity
//   COMBINE   the operator as an expression of `a` and `b`
//   SIZING    declarations of BLOCK: u32, TILE: u32 and STAGED: bool
//
// Semantics: those of the Rust kernels (README, "NaN and infinity"). u32 sums wrap (WGSL
// integer arithmetic is modulo 2^32); f32 min/max ignore a NaN operand: COMBINE tests NaN
// on the bits, since WGSL's min/max leave NaN to the driver and a compiler may assume none.

alias T = {{T}};
{{SIZING}}
{{IDS}}

struct Params {
    // Element count. The WGSL path indexes with u32: the host refuses n >= 2^32.
    n_lo: u32,
    n_hi: u32,
    items_per_thread: u32,
}

@group(0) @binding(0) var<storage, read> input: array<vec4<T>>;
@group(0) @binding(1) var<storage, read_write> partials: array<T>;
@group(0) @binding(2) var<uniform> params: Params;

var<workgroup> tile: array<T, TILE>;
var<workgroup> scratch: array<T, BLOCK>;

fn combine(a: T, b: T) -> T {
    return {{COMBINE}};
}

fn fold4(v: vec4<T>) -> T {
    return combine(combine(v.x, v.y), combine(v.z, v.w));
}

// Element i of the input (buffers are padded to 16 bytes, so the vec4 view covers it).
fn load(i: u32) -> T {
    return input[i >> 2u][i & 3u];
}

@compute @workgroup_size(BLOCK)
fn reduce(ids: Ids) {
    let n = params.n_lo;
    let ipt = params.items_per_thread;
    let chunk = BLOCK * ipt;
    let n_chunks = n / chunk + select(0u, 1u, n % chunk != 0u);
    let vectors = ipt / 4u;
    var acc: T = {{IDENTITY}};

    for (var c = ids.wid.x; c < n_chunks; c += ids.nwg.x) {
        let start = c * chunk;
        if (n - start >= chunk) {
            if (STAGED) {
                var first = 0u;
                if ((start & 3u) == 0u) {
                    let v = start >> 2u;
                    for (var k = 0u; k < vectors; k++) {
                        let i = k * BLOCK + ids.tid;
                        let x = input[v + i];
                        tile[4u * i] = x.x;
                        tile[4u * i + 1u] = x.y;
                        tile[4u * i + 2u] = x.z;
                        tile[4u * i + 3u] = x.w;
                    }
                    first = vectors * 4u * BLOCK;
                }
                for (var i = first + ids.tid; i < chunk; i += BLOCK) {
                    tile[i] = load(start + i);
                }
                workgroupBarrier();
                for (var k = 0u; k < ipt; k++) {
                    acc = combine(acc, tile[k * BLOCK + ids.tid]);
                }
                // The next chunk overwrites the tile.
                workgroupBarrier();
            } else if ((start & 3u) == 0u) {
                let v = start >> 2u;
                var k = 0u;
                // Four independent 16-byte loads in flight per thread, as on CUDA.
                for (; k + 4u <= vectors; k += 4u) {
                    let a = input[v + k * BLOCK + ids.tid];
                    let b = input[v + (k + 1u) * BLOCK + ids.tid];
                    let c2 = input[v + (k + 2u) * BLOCK + ids.tid];
                    let d = input[v + (k + 3u) * BLOCK + ids.tid];
                    acc = combine(acc, combine(combine(fold4(a), fold4(b)), combine(fold4(c2), fold4(d))));
                }
                for (; k < vectors; k++) {
                    acc = combine(acc, fold4(input[v + k * BLOCK + ids.tid]));
                }
                let rest = start + vectors * 4u * BLOCK;
                for (var r = 0u; r < ipt % 4u; r++) {
                    acc = combine(acc, load(rest + r * BLOCK + ids.tid));
                }
            } else {
                for (var k = 0u; k < ipt; k++) {
                    acc = combine(acc, load(start + k * BLOCK + ids.tid));
                }
            }
        } else {
            // The last, partial chunk.
            let rem = n - start;
            for (var k = 0u; k < ipt; k++) {
                let i = k * BLOCK + ids.tid;
                if (i < rem) {
                    acc = combine(acc, load(start + i));
                }
            }
        }
    }

    scratch[ids.tid] = acc;
    workgroupBarrier();
    var live = BLOCK;
    while (live > 1u) {
        let half = (live + 1u) / 2u;
        if (ids.tid + half < live) {
            scratch[ids.tid] = combine(scratch[ids.tid], scratch[ids.tid + half]);
        }
        workgroupBarrier();
        live = half;
    }
    if (ids.tid == 0u) {
        partials[ids.wid.x] = scratch[0];
    }
}
