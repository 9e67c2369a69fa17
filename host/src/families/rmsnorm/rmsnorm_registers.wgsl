// Row-wise RMSNorm forward on the static-WGSL path, the row held in registers (the
// wgsl-subgroup variant where a thread's part of the row is at most
// `rows::WGSL_MAX_REGISTER_FLOATS` floats): the algorithm and mapping of
// device-kernels/src/rmsnorm.rs, thread t keeping the units t, t + BLOCK, ... of its row (a
// unit is a vec4 where the row is whole vectors, else a float) in `v`, a private array
// indexed only by constants. The host writes each `@@` line once per unit the thread keeps
// (`contract::wgsl_unroll`): every load of a row is issued before the first is used, with no
// loop, loop counter or index clamp; the last unit, where BLOCK does not divide the row, is
// guarded by `$u < UNITS`. The weight is read where it is used (it stays in cache).
//
// Template slots, filled by host/src/family/rows.rs:
//   SIZING   BLOCK and UNITS (u32: units a row), PER_THREAD (units a thread keeps)
//   UNIT     vec4<f32> | f32
//   FOLDS    fold_sum (subgroup_fold.wgsl) over `scratch`

{{SIZING}}
{{IDS}}
alias U = {{UNIT}};

struct Params {
    rows: u32,
    cols: u32,
    eps: f32,
}

@group(0) @binding(0) var<storage, read> x: array<U>;
@group(0) @binding(1) var<storage, read> g: array<U>;
@group(0) @binding(2) var<storage, read_write> y: array<U>;
@group(0) @binding(3) var<uniform> params: Params;

var<workgroup> scratch: array<f32, BLOCK>;

{{FOLDS}}

// The sum of a unit's elements.
fn unit_sum(v: U) -> f32 {
    {{UNIT_SUM}}
}

@compute @workgroup_size(BLOCK)
fn rmsnorm(ids: Ids) {
    let inv_cols = 1.0 / f32(params.cols);
    for (var r = ids.wid.x; r < params.rows; r += ids.nwg.x) {
        let base = r * UNITS;
        var v: array<U, PER_THREAD>;
        var s = 0.0;
        @@ v[$k] = x[base + $u];
        @@ s += unit_sum(v[$k] * v[$k]);
        let inv = 1.0 / sqrt(fold_sum(ids, s) * inv_cols + params.eps);
        @@ y[base + $u] = v[$k] * inv * g[$u];
    }
}
