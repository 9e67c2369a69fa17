// Row-wise softmax on the static-WGSL path, the row held in registers (the wgsl-subgroup
// variant where a thread's part of the row is at most `rows::WGSL_MAX_REGISTER_FLOATS`
// floats): the algorithm and mapping of device-kernels/src/softmax.rs, with thread t keeping
// the units t, t + BLOCK, ... of its row (a unit is a vec4 where the row is whole vectors,
// else a float) in `x`, a private array indexed only by constants. The host writes each
// `@@` line once per unit the thread keeps (`contract::wgsl_unroll`), so every load of a row
// is issued before the first is used, with no loop, no loop counter and no index clamp; the
// last unit, where BLOCK does not divide the row, is guarded by `$u < UNITS`.
//
// Template slots, filled by host/src/family/rows.rs:
//   SIZING   BLOCK and UNITS (u32: units a row), PER_THREAD (units a thread keeps)
//   UNIT     vec4<f32> | f32
//   FOLDS    fold_max and fold_sum (subgroup_fold.wgsl) over `scratch`

{{SIZING}}
{{IDS}}
alias U = {{UNIT}};

struct Params {
    rows: u32,
    cols: u32,
}

@group(0) @binding(0) var<storage, read> input: array<U>;
@group(0) @binding(1) var<storage, read_write> output: array<U>;
@group(0) @binding(2) var<uniform> params: Params;

var<workgroup> scratch: array<f32, BLOCK>;

const LOG2_E: f32 = 1.4426950408889634;

{{FOLDS}}

// The largest and the sum of a unit's elements.
fn unit_max(v: U) -> f32 {
    {{UNIT_MAX}}
}
fn unit_sum(v: U) -> f32 {
    {{UNIT_SUM}}
}

@compute @workgroup_size(BLOCK)
fn softmax(ids: Ids) {
    for (var r = ids.wid.x; r < params.rows; r += ids.nwg.x) {
        let base = r * UNITS;
        var x: array<U, PER_THREAD>;
        var m = bitcast<f32>(0xff800000u);
        @@ x[$k] = input[base + $u];
        @@ m = max(m, unit_max(x[$k]));
        let row_max = fold_max(ids, m);
        var s = 0.0;
        @@ x[$k] = exp2((x[$k] - row_max) * LOG2_E);
        @@ s += unit_sum(x[$k]);
        let inv = 1.0 / fold_sum(ids, s);
        @@ output[base + $u] = x[$k] * inv;
    }
}
