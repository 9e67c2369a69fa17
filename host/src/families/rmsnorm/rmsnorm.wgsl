// Row-wise RMSNorm forward on the static-WGSL path: the algorithm and mapping of
// device-kernels/src/rmsnorm.rs (read that first), with the row in a `var<workgroup>`
// array of COLS floats fixed when the pipeline is created (rows longer than COLS need
// another pipeline; past the workgroup-storage limit, none can hold them).
//
// Template slots (names in double braces), filled by host/src/families/rmsnorm/mod.rs:
//   SIZING     declarations of BLOCK and COLS (u32)
//   FOLDS      fold_sum over `scratch` (host/src/contract/block_fold.wgsl)

{{SIZING}}
{{IDS}}

struct Params {
    rows: u32,
    cols: u32,
    eps: f32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> g: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

var<workgroup> row: array<f32, COLS>;
var<workgroup> scratch: array<f32, BLOCK>;

{{FOLDS}}

@compute @workgroup_size(BLOCK)
fn rmsnorm(ids: Ids) {
    let rows = params.rows;
    let cols = params.cols;
    let inv_cols = 1.0 / f32(cols);
    for (var r = ids.wid.x; r < rows; r += ids.nwg.x) {
        let base = r * cols;
        var s = 0.0;
        for (var i = ids.tid; i < cols; i += BLOCK) {
            let v = x[base + i];
            s += v * v;
            row[i] = v;
        }
        let inv = 1.0 / sqrt(fold_sum(ids.tid, s) * inv_cols + params.eps);

        // Each thread revisits the elements it stored: no barrier needed before this.
        for (var i = ids.tid; i < cols; i += BLOCK) {
            y[base + i] = row[i] * inv * g[i];
        }
        workgroupBarrier();
    }
}
