// 2-D stencil on the static-WGSL path: the algorithm and mapping of
// device-kernels/src/stencil2d.rs (read that first): a bordered tile of vec4 (4 columns of
// halo on each side), threads owning four columns and a strip of rows, a register window
// of K rows slid down the strip in steps unrolled by K. The tile and the weights are
// `var<workgroup>` arrays sized when the pipeline is created. The radius is a `const` in
// both sizings: WGSL sizes function-scope arrays (the register window) by
// const-expressions. Device memory is read and written as f32 (a storage array of vec4
// would need every row to start 16-byte aligned).
//
// Template slots (names in double braces), filled by host/src/families/stencil2d/mod.rs:
//   SIZING   declarations of BLOCK, TILE_W and TILE_H (u32)
//   RADIUS   1 or 2

{{SIZING}}
const RADIUS: u32 = {{RADIUS}}u;
const K: u32 = 2u * RADIUS + 1u;
const HALO: u32 = 4u;
const WW: u32 = 4u + 2u * RADIUS;

struct Params {
    width: u32,
    height: u32,
    tile_w: u32,
    tile_h: u32,
}

@group(0) @binding(0) var<storage, read> input: array<f32>;
@group(0) @binding(1) var<storage, read> weights: array<f32>;
@group(0) @binding(2) var<storage, read_write> output: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

var<workgroup> tile: array<vec4<f32>, (TILE_W / 4u + 2u) * (TILE_H + 2u * RADIUS)>;
var<workgroup> wt: array<f32, K * K>;

@compute @workgroup_size(BLOCK)
fn stencil2d(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let width = params.width;
    let height = params.height;
    let pitch = TILE_W / 4u + 2u;
    let rows_total = TILE_H + 2u * RADIUS;
    let loads = pitch * rows_total;
    let groups = TILE_W / 4u;
    let g = tid % groups;
    let strip = TILE_H / (BLOCK / groups);
    let y_first = (tid / groups) * strip;
    for (var i = tid; i < K * K; i += BLOCK) {
        wt[i] = weights[i];
    }
    workgroupBarrier();
    var w: array<f32, K * K>;
    for (var i = 0u; i < K * K; i++) {
        w[i] = wt[i];
    }
    let tiles_x = max((width + TILE_W - 1u) / TILE_W, 1u);
    let tiles = tiles_x * ((height + TILE_H - 1u) / TILE_H);
    for (var t = wid.x; t < tiles; t += nwg.x) {
        let x0 = (t % tiles_x) * TILE_W;
        let y0 = (t / tiles_x) * TILE_H;
        for (var i = tid; i < loads; i += BLOCK) {
            let r = i / pitch;
            let c = i % pitch;
            let gy = min(max(y0 + r, RADIUS) - RADIUS, height - 1u);
            var v: vec4<f32>;
            for (var lane = 0u; lane < 4u; lane++) {
                let gx = min(max(x0 + 4u * c + lane, HALO) - HALO, width - 1u);
                v[lane] = input[gy * width + gx];
            }
            tile[i] = v;
        }
        workgroupBarrier();
        var win: array<f32, K * WW>;
        for (var j = 0u; j + 1u < K; j++) {
            let b = (y_first + j) * pitch + g;
            let v = array<vec4<f32>, 3>(tile[b], tile[b + 1u], tile[b + 2u]);
            for (var i = 0u; i < WW; i++) {
                let e = HALO - RADIUS + i;
                win[j * WW + i] = v[e / 4u][e % 4u];
            }
        }
        let x = x0 + 4u * g;
        var r = 0u;
        while (r < strip) {
            for (var u = 0u; u < K; u++) {
                if (r < strip) {
                    let slot_new = (u + K - 1u) % K;
                    let b = (y_first + r + K - 1u) * pitch + g;
                    let v = array<vec4<f32>, 3>(tile[b], tile[b + 1u], tile[b + 2u]);
                    for (var i = 0u; i < WW; i++) {
                        let e = HALO - RADIUS + i;
                        win[slot_new * WW + i] = v[e / 4u][e % 4u];
                    }
                    let y = y0 + y_first + r;
                    for (var c = 0u; c < 4u; c++) {
                        // One accumulator per window row, as in the Rust kernel.
                        var acc = 0.0;
                        for (var dy = 0u; dy < K; dy++) {
                            let slot = (u + dy) % K;
                            var row = 0.0;
                            for (var dx = 0u; dx < K; dx++) {
                                row = fma(w[dy * K + dx], win[slot * WW + c + dx], row);
                            }
                            acc += row;
                        }
                        if (y < height && x + c < width) {
                            output[y * width + x + c] = acc;
                        }
                    }
                    r++;
                }
            }
        }
        workgroupBarrier();
    }
}
