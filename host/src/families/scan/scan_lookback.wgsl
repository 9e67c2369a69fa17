// Exclusive prefix sum on the static-WGSL path in one pass, with decoupled look-back through
// 32-bit atomics (the wgsl-subgroup variant: the look-back is a subgroup's ballot and sum).
//
// The Rust kernel (device-kernels/src/scan.rs) publishes a tile's value with its flag in one
// 64-bit word. WGSL has 32-bit atomics only and no acquire/release ordering, so a value and a
// flag in separate words could be seen out of order. Here every word carries its own flag:
// a tile publishes a 32-bit value as two words, each `(16 bits of the value) << 1 | 1`, and a
// reader that sees both words flagged holds both halves of that one value (each word is
// written once per run: the host zeroes `status` and `counter` before every dispatch). A
// tile's four words: its aggregate (lo, hi) as soon as its own tile is summed, and its
// inclusive prefix (lo, hi) once its look-back ends.
//
// Tiles are taken in order from `counter` (a workgroup loops, taking the next tile when its
// last is done), so every tile a look-back waits on was taken by a workgroup that is running
// or done: no wait depends on a workgroup that has not started.
//
// A tile is BLOCK * IPT elements, scanned in registers with no tile in workgroup memory:
// subgroup s takes the tile's units (vec4s) [f * K, (f + live) * K), f its first thread and
// live its active lanes, K = IPT / 4. Its lane r reads units f*K + k*live + r, k < K (each
// read coalesced over the subgroup; all K issued before the first is used), and the
// subgroup scans them round by round with `subgroupInclusiveAdd`, carrying its running
// total. The subgroups' totals meet in `scratch` (one barrier); subgroup 0 looks back over
// `lanes` predecessors at a time: lane i reads tile `top - 1 - i`; when every lane's tile has
// published something, the lanes up to the first with an inclusive prefix are summed
// (`subgroupBallot` finds it), else the window moves back by `lanes` tiles. This takes
// thread `tid` to be lane `tid % lanes` of subgroup `tid / lanes`: NVIDIA's, AMD's and
// lavapipe's drivers lay a one-dimensional workgroup out so, and the conformance tests would
// see one that does not. lavapipe (Mesa 22.3) reports `num_subgroups` rounded down where BLOCK
// is not whole subgroups: the partials are counted from BLOCK and `lanes` too.
//
// Template slots, filled by host/src/families/scan/mod.rs:
//   SIZING      BLOCK and IPT (u32; IPT a multiple of 4)
//   T           f32 | u32
//   LOAD4       load4, a vector of the input or its part before n (load4.wgsl)

{{SIZING}}
{{IDS}}
alias T = {{T}};

struct Params {
    n_lo: u32,
    n_hi: u32,
    ipt: u32,
}

@group(0) @binding(0) var<storage, read> input: array<vec4<T>>;
@group(0) @binding(1) var<storage, read_write> output: array<vec4<T>>;
@group(0) @binding(2) var<storage, read_write> status: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> counter: atomic<u32>;
@group(0) @binding(4) var<uniform> params: Params;

// The subgroups' totals (at most BLOCK subgroups).
var<workgroup> scratch: array<T, BLOCK>;
// The tile this workgroup scans next, and its exclusive prefix once looked back.
var<workgroup> next_tile: u32;
var<workgroup> prefix: T;

const AGGREGATE: u32 = 0u;
const INCLUSIVE: u32 = 2u;
// Units (vec4s) a thread reads a tile.
const K: u32 = IPT / 4u;

{{LOAD4}}

// Publishes `value` as tile t's aggregate or inclusive prefix (`which`).
fn publish(t: u32, which: u32, value: T) {
    let bits = bitcast<u32>(value);
    atomicStore(&status[4u * t + which], ((bits & 0xffffu) << 1u) | 1u);
    atomicStore(&status[4u * t + which + 1u], ((bits >> 16u) << 1u) | 1u);
}

// Tile t's published value of kind `which`, and whether both halves are there.
fn read_published(t: u32, which: u32) -> vec2<u32> {
    let lo = atomicLoad(&status[4u * t + which]);
    let hi = atomicLoad(&status[4u * t + which + 1u]);
    return vec2<u32>(((hi >> 1u) << 16u) | (lo >> 1u), lo & hi & 1u);
}

// The lowest lane whose bit is set in a ballot (up to 128 lanes), or 128 if none.
fn first_lane(b: vec4<u32>) -> u32 {
    for (var w = 0u; w < 4u; w++) {
        if (b[w] != 0u) {
            return 32u * w + firstTrailingBit(b[w]);
        }
    }
    return 128u;
}

// The exclusive prefix of tile t, summed from its predecessors' published values by the
// calling subgroup (every lane gets it).
fn look_back(ids: Ids, t: u32) -> T {
    var sum = T(0);
    var top = t;
    loop {
        if (top == 0u) {
            break;
        }
        // Lane i reads tile top - 1 - i; lanes past tile 0 read as an inclusive 0.
        var state = INCLUSIVE;
        var value = T(0);
        if (ids.lane < top) {
            let p = top - 1u - ids.lane;
            let inclusive = read_published(p, INCLUSIVE);
            let aggregate = read_published(p, AGGREGATE);
            if (inclusive.y == 1u) {
                value = bitcast<T>(inclusive.x);
            } else if (aggregate.y == 1u) {
                state = AGGREGATE;
                value = bitcast<T>(aggregate.x);
            } else {
                state = 1u;
            }
        }
        // A tile that has published nothing yet: read the window again.
        if (subgroupAny(state == 1u)) {
            continue;
        }
        let first = first_lane(subgroupBallot(state == INCLUSIVE));
        sum += subgroupAdd(select(T(0), value, ids.lane <= first));
        if (first < 128u) {
            break;
        }
        top -= min(top, ids.lanes);
    }
    return sum;
}

// Writes unit u of the output: whole where it lies before n, its elements before n else.
fn store4(u: u32, y: vec4<T>, n: u32) {
    if (4u * u + 4u <= n) {
        output[u] = y;
        return;
    }
    for (var c = 0u; c < 4u; c++) {
        if (4u * u + c < n) {
            output[u][c] = y[c];
        }
    }
}

// `@@` lines are written once per unit a thread reads, `$k` its round (`contract::wgsl_unroll`):
// the private arrays are indexed by constants only.
@compute @workgroup_size(BLOCK)
fn scan_lookback(ids: Ids) {
    let n = params.n_lo;
    let per_tile = BLOCK * IPT;
    let tiles = (n + per_tile - 1u) / per_tile;
    // This subgroup's active lanes, the lane's rank among them, its first thread.
    let rank = subgroupExclusiveAdd(1u);
    let live = subgroupAdd(1u);
    let first_thread = ids.tid - rank;
    let partials = max(ids.sgs, (BLOCK + ids.lanes - 1u) / ids.lanes);
    if (ids.tid == 0u) {
        next_tile = atomicAdd(&counter, 1u);
    }
    var t = workgroupUniformLoad(&next_tile);
    while (t < tiles) {
        let base = t * (per_tile / 4u) + first_thread * K + rank;
        var x: array<vec4<T>, K>;
        if (n - t * per_tile >= per_tile) {
            @@ x[$k] = input[base + $ku * live];
        } else {
            @@ x[$k] = load4(base + $ku * live, n);
        }
        // Round k: each lane's unit summed, then scanned across the subgroup; `before` keeps
        // each unit's exclusive prefix within the subgroup's part, `carry` the rounds' total.
        var before: array<T, K>;
        var carry = T(0);
        @@ { let v = x[$k]; let sum = (v.x + v.y) + (v.z + v.w); let incl = subgroupInclusiveAdd(sum); before[$k] = carry + incl - sum; carry += subgroupShuffle(incl, live - 1u); }
        if (rank + 1u == live) {
            scratch[ids.sg] = carry;
        }
        workgroupBarrier();
        var offset = T(0);
        var total = T(0);
        for (var i = 0u; i < partials; i++) {
            let s = scratch[i];
            offset += select(T(0), s, i < ids.sg);
            total += s;
        }
        if (ids.tid == 0u) {
            // Tile 0's aggregate is its inclusive prefix.
            publish(t, select(AGGREGATE, INCLUSIVE, t == 0u), total);
        }
        if (ids.sg == 0u) {
            let prior = look_back(ids, t);
            if (ids.lane == 0u) {
                prefix = prior;
                if (t > 0u) {
                    publish(t, INCLUSIVE, prior + total);
                }
                next_tile = atomicAdd(&counter, 1u);
            }
        }
        workgroupBarrier();
        let start = prefix + offset;
        @@ { let v = x[$k]; let e = start + before[$k]; store4(base + $ku * live, vec4<T>(e, e + v.x, e + v.x + v.y, e + v.x + v.y + v.z), n); }
        // Every thread has read `scratch`, `prefix` and `next_tile` before they change.
        t = workgroupUniformLoad(&next_tile);
    }
}
