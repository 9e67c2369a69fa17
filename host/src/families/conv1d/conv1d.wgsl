// 1-D convolution on the static-WGSL path: the algorithm, register tiling and thread
// mapping of device-kernels/src/conv1d.rs (read that first) and of conv1d.cu. The tile
// starts BEFORE = TAPS/2 rounded up to a multiple of 4 elements before the tile's outputs,
// so its vectors are aligned vectors of x, and the weights are shifted right by
// SHIFT = BEFORE - TAPS/2 zeros and padded with zeros to KP taps (a multiple of R):
// y[o + m] = sum_j w'[j] tile[m + j]. Tile, weights and every device access are vec4.
//
// What WGSL lacks: no asynchronous copy (cp.async), so interior tiles are staged through
// registers. No const generics either: the register window (R accumulators, 2R tile
// elements and R taps) must be scalars named in the text, not a function-scope array
// indexed in a loop (a driver may put such an array in local memory), so the host writes
// the unrolled steps into WINDOW_DECLS, STEP_LO_HI, STEP_HI_LO and the loads (see
// host/src/families/conv1d/mod.rs, `window_code`).
//
// Template slots (names in double braces), filled by host/src/families/conv1d/mod.rs:
//   SIZING        declarations of BLOCK, TAPS, KP (u32)
//   R             outputs per thread (4 or 8)
//   DERIVED       `const`, or `override` where SIZING declares overrides (a const cannot
//                 depend on an override)
//   WINDOW_DECLS  `var` declarations of the window's scalars a0.., lo0.., hi0.., w0..
//   ZERO_ACC      a0.. = 0
//   LOAD_LO0      lo0.. from tile vectors base ..
//   LOAD_HI       hi0.. from tile vectors base + k + RV ..
//   LOAD_LO       lo0.. from tile vectors base + k + 2 RV ..
//   LOAD_W0 / LOAD_W1          w0.. from weight vectors k .. / k + RV ..
//   STEP_LO_HI / STEP_HI_LO    R*R fused multiply-adds over the window (lo, hi) / (hi, lo)
//   STORE         the R outputs as RV vec4 stores

{{SIZING}}
{{IDS}}
const R: u32 = {{R}}u;
const RV: u32 = R / 4u;
{{DERIVED}} HALF: u32 = TAPS / 2u;
{{DERIVED}} BEFORE: u32 = (HALF + 3u) / 4u * 4u;
{{DERIVED}} SHIFT: u32 = BEFORE - HALF;
{{DERIVED}} OUTPUTS: u32 = BLOCK * R;
{{DERIVED}} INPUTS: u32 = OUTPUTS + KP;

struct Params {
    n_lo: u32,
    n_hi: u32,
    taps: u32,
}

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> params: Params;

var<workgroup> tile: array<vec4<f32>, INPUTS / 4u>;
var<workgroup> wt: array<vec4<f32>, KP / 4u>;

// Element e - BEFORE of x as a float, zero outside [0, n) (unsigned: e is the index
// shifted right by BEFORE).
fn x_at(e: u32, n: u32) -> f32 {
    if (e < BEFORE || e - BEFORE >= n) {
        return 0.0;
    }
    let u = e - BEFORE;
    return x[u >> 2u][u & 3u];
}

// Outputs start .. start + 4 (start < n): one vec4 store, or element stores at the end.
fn store4(start: u32, n: u32, v: vec4<f32>) {
    if (start + 4u <= n) {
        y[start >> 2u] = v;
    } else {
        for (var c = 0u; c < 4u && start + c < n; c++) {
            y[start >> 2u][c] = v[c];
        }
    }
}

@compute @workgroup_size(BLOCK)
fn conv1d(ids: Ids) {
    let n = params.n_lo;
    // w'[j] = w[j - SHIFT], zero outside the taps; stored as floats into the vec4 array.
    for (var j = ids.tid; j < KP; j += BLOCK) {
        var wk = 0.0;
        if (j >= SHIFT && j - SHIFT < TAPS) {
            wk = w[j - SHIFT];
        }
        wt[j >> 2u][j & 3u] = wk;
    }
    let tiles = (n + OUTPUTS - 1u) / OUTPUTS;
    {{WINDOW_DECLS}}
    for (var t = ids.wid.x; t < tiles; t += ids.nwg.x) {
        let o = t * OUTPUTS;
        // Also orders the weights' stores before their first use.
        workgroupBarrier();
        // Tile vector v is x[o - BEFORE + 4v ..]; a tile inside the input (all but the
        // first and last) copies whole vectors without bounds checks.
        if (o >= BEFORE && INPUTS <= n - min(o - BEFORE, n)) {
            let src = (o - BEFORE) >> 2u;
            for (var v = ids.tid; v < INPUTS / 4u; v += BLOCK) {
                tile[v] = x[src + v];
            }
        } else {
            for (var v = ids.tid; v < INPUTS / 4u; v += BLOCK) {
                let e = o + 4u * v;
                tile[v] = vec4<f32>(x_at(e, n), x_at(e + 1u, n), x_at(e + 2u, n), x_at(e + 3u, n));
            }
        }
        workgroupBarrier();

        // Thread tid makes outputs o + tid*R .. + R, walking the taps R at a time with a
        // window of 2R tile elements in registers; two steps per iteration, so the
        // window's halves trade places by naming, not copies.
        let base = ids.tid * RV;
        {{ZERO_ACC}}
        {{LOAD_LO0}}
        var k = 0u;
        for (; k + 2u * RV <= KP / 4u; k += 2u * RV) {
            {{LOAD_HI}}
            {{LOAD_W0}}
            {{STEP_LO_HI}}
            {{LOAD_LO}}
            {{LOAD_W1}}
            {{STEP_HI_LO}}
        }
        if (k < KP / 4u) {
            {{LOAD_HI}}
            {{LOAD_W0}}
            {{STEP_LO_HI}}
        }
        {{STORE}}
    }
}
