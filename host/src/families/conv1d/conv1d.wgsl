// 1-D convolution on the static-WGSL path: the algorithm and mapping of
// device-kernels/src/conv1d.rs (read that first), with the padded input tile and the taps
// in `var<workgroup>` arrays sized when the pipeline is created: TILE_CAP floats (the
// tile of BLOCK * R outputs, its halo of KP and the padding) and KP floats, where KP is
// TAPS rounded up to a multiple of R (zero weights fill it).
// R is a `const` in both sizings: WGSL sizes function-scope arrays by const-expressions.
//
// Template slots (names in double braces), filled by host/src/families/conv1d/mod.rs:
//   SIZING   declarations of BLOCK, TAPS, KP and TILE_CAP (u32)
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
var<workgroup> weights: array<f32, KP>;

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
    let inputs = outputs + KP;
    let half = TAPS / 2u;
    for (var k = tid; k < KP; k += BLOCK) {
        var wk = 0.0;
        if (k < TAPS) {
            wk = w[k];
        }
        weights[k] = wk;
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
        // buf[0..R] holds tile[base + k ..], buf[R..2R] the next R elements.
        var buf: array<f32, 2u * R>;
        for (var r = 0u; r < R; r++) {
            acc[r] = 0.0;
            buf[r] = tile[padded(base + r)];
        }
        for (var k = 0u; k < KP; k += R) {
            for (var r = 0u; r < R; r++) {
                buf[R + r] = tile[padded(base + k + R + r)];
            }
            for (var j = 0u; j < R; j++) {
                let wk = weights[k + j];
                for (var r = 0u; r < R; r++) {
                    acc[r] = fma(wk, buf[r + j], acc[r]);
                }
            }
            for (var r = 0u; r < R; r++) {
                buf[r] = buf[R + r];
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
