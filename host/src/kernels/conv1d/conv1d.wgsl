// 1-D convolution on the static-WGSL path: the algorithm and mapping of
// device-kernels/src/conv1d.rs (read that first), with the padded input tile and the taps
// in `var<workgroup>` arrays sized when the pipeline is created: TILE_CAP floats (the
// tile of BLOCK * R outputs, its halo of TAPS - 1 and the padding) and TAPS floats.
// R is a `const` in both sizings: WGSL sizes function-scope arrays by const-expressions.
//
// Template slots (names in double braces), filled by host/src/kernels/conv1d/mod.rs:
//   SIZING   declarations of BLOCK, TAPS and TILE_CAP (u32)
//   R        outputs per thread

{{SIZING}}
const R: u32 = {{R}}u;

struct Params {
    n_lo: u32,
    n_hi: u32,
    taps: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

var<workgroup> tile: array<f32, TILE_CAP>;
var<workgroup> weights: array<f32, TAPS>;

fn padded(i: u32) -> u32 {
    return i + i / 32u;
}

@compute @workgroup_size(BLOCK)
fn conv1d(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let n = params.n_lo;
    let outputs = BLOCK * R;
    let inputs = outputs + TAPS - 1u;
    let half = TAPS / 2u;
    for (var k = tid; k < TAPS; k += BLOCK) {
        weights[k] = w[k];
    }
    let tiles = (n + outputs - 1u) / outputs;
    for (var t = wid.x; t < tiles; t += nwg.x) {
        let o = t * outputs;
        workgroupBarrier();
        for (var i = tid; i < inputs; i += BLOCK) {
            let g = o + i;
            var v = 0.0;
            if (g >= half && g - half < n) {
                v = x[g - half];
            }
            tile[padded(i)] = v;
        }
        workgroupBarrier();

        let base = tid * R;
        var acc: array<f32, R>;
        var win: array<f32, R>;
        for (var r = 0u; r < R; r++) {
            acc[r] = 0.0;
            win[r] = tile[padded(base + r)];
        }
        for (var k = 0u; k < TAPS; k++) {
            let wk = weights[k];
            for (var r = 0u; r < R; r++) {
                acc[r] = fma(wk, win[r], acc[r]);
            }
            if (k + 1u < TAPS) {
                for (var r = 0u; r + 1u < R; r++) {
                    win[r] = win[r + 1u];
                }
                win[R - 1u] = tile[padded(base + k + R)];
            }
        }
        workgroupBarrier();
        for (var r = 0u; r < R; r++) {
            tile[padded(base + r)] = acc[r];
        }
        workgroupBarrier();
        for (var i = tid; i < outputs && o + i < n; i += BLOCK) {
            y[o + i] = tile[padded(i)];
        }
    }
}
