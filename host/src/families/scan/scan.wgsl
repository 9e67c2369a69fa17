// Exclusive prefix sum on the static-WGSL path, reduce-then-scan.
//
// WGSL has no 64-bit atomics and no acquire/release ordering, so a tile cannot publish
// a value with its flag the way the Rust kernel's decoupled look-back does
// (device-kernels/src/scan.rs): this path makes three passes instead, and its figure is
// compared as such. `tile_sums` writes the sum of each tile of TILE = BLOCK * IPT
// elements; the host scans those sums (recursively, with these same kernels); `scan_tiles`
// scans each tile in workgroup memory and adds its tile's offset. Tiles use the Rust
// kernel's per-thread mapping (thread t owns elements t*IPT ..) and padded layout.
//
// Template slots (names in double braces), filled by host/src/families/scan/mod.rs:
//   SIZING   declarations of BLOCK and IPT (u32)
//   T        f32 | u32

{{SIZING}}
alias T = {{T}};

struct Params {
    n_lo: u32,
    n_hi: u32,
    // 1 when `offsets` holds the exclusive prefix of each tile.
    use_offsets: u32,
}

@group(0) @binding(0) var<storage, read> input: array<T>;
@group(0) @binding(1) var<storage, read_write> sums: array<T>;
@group(0) @binding(2) var<uniform> sum_params: Params;

@group(0) @binding(1) var<storage, read_write> output: array<T>;
@group(0) @binding(2) var<storage, read> offsets: array<T>;
@group(0) @binding(3) var<uniform> scan_params: Params;

var<workgroup> tile: array<T, BLOCK * IPT + BLOCK * IPT / 32u + 1u>;
var<workgroup> scratch: array<T, BLOCK>;

fn padded(i: u32) -> u32 {
    return i + i / 32u;
}

// Inclusive scan of the workgroup's `scratch` (Hillis-Steele).
fn scan_scratch(tid: u32) {
    for (var d = 1u; d < BLOCK; d *= 2u) {
        var v = scratch[tid];
        if (tid >= d) {
            v = scratch[tid - d] + v;
        }
        workgroupBarrier();
        scratch[tid] = v;
        workgroupBarrier();
    }
}

@compute @workgroup_size(BLOCK)
fn tile_sums(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let n = sum_params.n_lo;
    let per_tile = BLOCK * IPT;
    let tiles = (n + per_tile - 1u) / per_tile;
    for (var t = wid.x; t < tiles; t += nwg.x) {
        let start = t * per_tile;
        var local = T(0);
        for (var i = tid; i < per_tile; i += BLOCK) {
            if (start + i < n) {
                local += input[start + i];
            }
        }
        scratch[tid] = local;
        workgroupBarrier();
        scan_scratch(tid);
        if (tid == 0u) {
            sums[t] = scratch[BLOCK - 1u];
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(BLOCK)
fn scan_tiles(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let n = scan_params.n_lo;
    let per_tile = BLOCK * IPT;
    let tiles = max((n + per_tile - 1u) / per_tile, 1u);
    for (var t = wid.x; t < tiles; t += nwg.x) {
        let start = t * per_tile;
        for (var i = tid; i < per_tile; i += BLOCK) {
            var v = T(0);
            if (start + i < n) {
                v = input[start + i];
            }
            tile[padded(i)] = v;
        }
        workgroupBarrier();
        let first = tid * IPT;
        var local = T(0);
        for (var j = 0u; j < IPT; j++) {
            local += tile[padded(first + j)];
        }
        scratch[tid] = local;
        workgroupBarrier();
        scan_scratch(tid);
        var running = T(0);
        if (scan_params.use_offsets == 1u) {
            running = offsets[t];
        }
        if (tid > 0u) {
            running += scratch[tid - 1u];
        }
        for (var j = 0u; j < IPT; j++) {
            let k = padded(first + j);
            let v = tile[k];
            tile[k] = running;
            running += v;
        }
        workgroupBarrier();
        for (var i = tid; i < per_tile; i += BLOCK) {
            if (start + i < n) {
                output[start + i] = tile[padded(i)];
            }
        }
        workgroupBarrier();
    }
}
