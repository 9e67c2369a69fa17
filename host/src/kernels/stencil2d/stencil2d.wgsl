// 2-D stencil on the static-WGSL path: the algorithm and mapping of
// device-kernels/src/stencil2d.rs (read that first), with the bordered tile and the
// weights in `var<workgroup>` arrays sized when the pipeline is created. The radius is a
// `const` in both sizings: WGSL sizes function-scope arrays (the register window) by
// const-expressions.
//
// Template slots (names in double braces), filled by host/src/kernels/stencil2d/mod.rs:
//   SIZING   declarations of BLOCK, TILE_W and TILE_H (u32)
//   RADIUS   1 or 2

{{SIZING}}
const RADIUS: u32 = {{RADIUS}}u;
const K: u32 = 2u * RADIUS + 1u;

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

var<workgroup> tile: array<f32, (TILE_W + 2u * RADIUS) * (TILE_H + 2u * RADIUS)>;
var<workgroup> wt: array<f32, K * K>;

@compute @workgroup_size(BLOCK)
fn stencil2d(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let width = params.width;
    let height = params.height;
    let pitch = TILE_W + 2u * RADIUS;
    let loads = pitch * (TILE_H + 2u * RADIUS);
    let tx = tid % TILE_W;
    let strip = TILE_H / (BLOCK / TILE_W);
    let y_first = (tid / TILE_W) * strip;
    for (var i = tid; i < K * K; i += BLOCK) {
        wt[i] = weights[i];
    }
    workgroupBarrier();
    var w: array<f32, 25>;
    for (var i = 0u; i < K * K; i++) {
        w[i] = wt[i];
    }
    let tiles_x = max((width + TILE_W - 1u) / TILE_W, 1u);
    let tiles = tiles_x * ((height + TILE_H - 1u) / TILE_H);
    for (var t = wid.x; t < tiles; t += nwg.x) {
        let x0 = (t % tiles_x) * TILE_W;
        let y0 = (t / tiles_x) * TILE_H;
        for (var i = tid; i < loads; i += BLOCK) {
            let gx = min(max(x0 + i % pitch, RADIUS) - RADIUS, width - 1u);
            let gy = min(max(y0 + i / pitch, RADIUS) - RADIUS, height - 1u);
            tile[i] = input[gy * width + gx];
        }
        workgroupBarrier();
        var win: array<f32, 25>;
        for (var dy = 0u; dy + 1u < K; dy++) {
            for (var dx = 0u; dx < K; dx++) {
                win[dy * K + dx] = tile[(y_first + dy) * pitch + tx + dx];
            }
        }
        for (var r = 0u; r < strip; r++) {
            for (var dx = 0u; dx < K; dx++) {
                win[(K - 1u) * K + dx] = tile[(y_first + r + K - 1u) * pitch + tx + dx];
            }
            // One accumulator per window row, as in the Rust kernel.
            var rows: array<f32, 5>;
            for (var dy = 0u; dy < K; dy++) {
                rows[dy] = 0.0;
                for (var dx = 0u; dx < K; dx++) {
                    rows[dy] = fma(w[dy * K + dx], win[dy * K + dx], rows[dy]);
                }
            }
            var acc = rows[0];
            for (var dy = 1u; dy < K; dy++) {
                acc += rows[dy];
            }
            let x = x0 + tx;
            let y = y0 + y_first + r;
            if (x < width && y < height) {
                output[y * width + x] = acc;
            }
            for (var i = 0u; i < (K - 1u) * K; i++) {
                win[i] = win[i + K];
            }
        }
        workgroupBarrier();
    }
}
