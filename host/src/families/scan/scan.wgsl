// Exclusive prefix sum on the static-WGSL path, reduce-then-scan (the literal and override
// variants; wgsl-subgroup runs the one pass of scan_lookback.wgsl).
//
// This plain form makes three passes (the input is read twice), the way a WGSL scan is
// written without subgroups or atomics. `tile_sums` writes the sum of each tile of
// TILE = BLOCK * IPT elements; the host scans those sums (recursively, with these same
// kernels); `scan_tiles` scans each tile in workgroup memory and adds its tile's offset.
// Device memory is read and written as vec4 (IPT is a multiple of 4, so every tile starts
// on a vector): thread t moves the tile's vectors t, t + BLOCK, ... (coalesced), while the
// scan gives thread t the IPT consecutive elements t*IPT .., as in the Rust kernel; the
// tile between them is scalar with one padding element per 32, so that neither walk
// meets itself on a bank.
//
// Template slots (names in double braces), filled by host/src/families/scan/mod.rs:
//   SIZING   declarations of BLOCK and IPT (u32; IPT a multiple of 4)
//   T        f32 | u32
//   LOAD4      load4, a vector of the input or its part before n (load4.wgsl)
//   BLOCK_SUM  block_sum over `scratch` (host/src/contract/block_fold.wgsl)
//   BLOCK_SCAN block_scan over `scratch`: block_scan.wgsl (a Hillis-Steele tree)

{{SIZING}}
{{IDS}}
alias T = {{T}};

struct Params {
    n_lo: u32,
    n_hi: u32,
    // 1 when `offsets` holds the exclusive prefix of each tile.
    use_offsets: u32,
}

@group(0) @binding(0) var<storage, read> input: array<vec4<T>>;
@group(0) @binding(1) var<storage, read_write> sums: array<T>;
@group(0) @binding(2) var<uniform> sum_params: Params;

@group(0) @binding(1) var<storage, read_write> output: array<vec4<T>>;
@group(0) @binding(2) var<storage, read> offsets: array<T>;
@group(0) @binding(3) var<uniform> scan_params: Params;

var<workgroup> tile: array<T, BLOCK * IPT + BLOCK * IPT / 32u + 1u>;
// Two buffers: each step of the block scan reads one and writes the other (one barrier
// per step).
var<workgroup> scratch: array<T, 2u * BLOCK>;

fn padded(i: u32) -> u32 {
    return i + i / 32u;
}

{{LOAD4}}

// The inclusive scan of every thread's `value`, and the block's total: `block_scan(ids,
// value)` (BLOCK_SCAN).
{{BLOCK_SCAN}}

// The sum of every thread's `value` over the first scratch buffer (BLOCK_SUM).
{{BLOCK_SUM}}

@compute @workgroup_size(BLOCK)
fn tile_sums(ids: Ids) {
    let n = sum_params.n_lo;
    let per_tile = BLOCK * IPT;
    let tiles = (n + per_tile - 1u) / per_tile;
    for (var t = ids.wid.x; t < tiles; t += ids.nwg.x) {
        let first = t * (per_tile / 4u);
        var local = T(0);
        if (n - t * per_tile >= per_tile) {
            for (var k = 0u; k < IPT / 4u; k++) {
                let x = input[first + k * BLOCK + ids.tid];
                local += (x.x + x.y) + (x.z + x.w);
            }
        } else {
            for (var k = 0u; k < IPT / 4u; k++) {
                let x = load4(first + k * BLOCK + ids.tid, n);
                local += (x.x + x.y) + (x.z + x.w);
            }
        }
        let total = block_sum(ids, local);
        if (ids.tid == 0u) {
            sums[t] = total;
        }
    }
}

@compute @workgroup_size(BLOCK)
fn scan_tiles(ids: Ids) {
    let n = scan_params.n_lo;
    let per_tile = BLOCK * IPT;
    let tiles = max((n + per_tile - 1u) / per_tile, 1u);
    for (var t = ids.wid.x; t < tiles; t += ids.nwg.x) {
        let first = t * (per_tile / 4u);
        let whole = n - min(t * per_tile, n) >= per_tile;
        for (var k = 0u; k < IPT / 4u; k++) {
            let v = k * BLOCK + ids.tid;
            var x: vec4<T>;
            if (whole) {
                x = input[first + v];
            } else {
                x = load4(first + v, n);
            }
            tile[padded(4u * v)] = x.x;
            tile[padded(4u * v + 1u)] = x.y;
            tile[padded(4u * v + 2u)] = x.z;
            tile[padded(4u * v + 3u)] = x.w;
        }
        workgroupBarrier();
        let mine = ids.tid * IPT;
        var local = T(0);
        for (var j = 0u; j < IPT; j++) {
            local += tile[padded(mine + j)];
        }
        let scanned = block_scan(ids, local);
        var running = scanned.x - local;
        if (scan_params.use_offsets == 1u) {
            running += offsets[t];
        }
        for (var j = 0u; j < IPT; j++) {
            let k = padded(mine + j);
            let v = tile[k];
            tile[k] = running;
            running += v;
        }
        workgroupBarrier();
        for (var k = 0u; k < IPT / 4u; k++) {
            let v = k * BLOCK + ids.tid;
            let x = vec4<T>(tile[padded(4u * v)], tile[padded(4u * v + 1u)], tile[padded(4u * v + 2u)], tile[padded(4u * v + 3u)]);
            let e = 4u * (first + v);
            if (e + 4u <= n) {
                output[first + v] = x;
            } else {
                for (var c = 0u; c < 4u; c++) {
                    if (e + c < n) {
                        output[first + v][c] = x[c];
                    }
                }
            }
        }
        workgroupBarrier();
    }
}
