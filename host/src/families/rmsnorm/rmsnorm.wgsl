// Row-wise RMSNorm forward on the static-WGSL path: the algorithm and mapping of
// device-kernels/src/rmsnorm.rs (read that first), with the row in a `var<workgroup>`
// array of COLS floats (as COLS / 4 vectors) fixed when the pipeline is created (rows
// longer than COLS need another pipeline; past the workgroup-storage limit, none can hold
// them). Where a row is whole vectors (cols a multiple of 4; buffers start 16-byte
// aligned), thread t reads, keeps and writes the vectors t, t + BLOCK, ... (and reads the
// weight's vectors t, t + BLOCK, ...); otherwise the elements t, t + BLOCK, ..., as the
// Rust kernel does.
//
// Template slots (names in double braces), filled by host/src/family/rows.rs:
//   SIZING     declarations of BLOCK and COLS (u32; COLS a multiple of 4)
//   FOLDS      fold_sum (host/src/contract/block_fold.wgsl, or subgroup_fold.wgsl in the
//              wgsl-subgroup variant) over `scratch`

{{SIZING}}
{{IDS}}

struct Params {
    rows: u32,
    cols: u32,
    eps: f32,
}

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> g: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> params: Params;

var<workgroup> row: array<vec4<f32>, COLS / 4u>;
var<workgroup> scratch: array<f32, BLOCK>;

{{FOLDS}}

@compute @workgroup_size(BLOCK)
fn rmsnorm(ids: Ids) {
    let rows = params.rows;
    let cols = params.cols;
    let inv_cols = 1.0 / f32(cols);
    // Whole vectors per row, or 0: the row is then read element by element.
    let vectors = select(0u, cols / 4u, (cols & 3u) == 0u);
    for (var r = ids.wid.x; r < rows; r += ids.nwg.x) {
        let base = r * cols;
        let base4 = base >> 2u;
        var s = 0.0;
        for (var i = ids.tid; i < vectors; i += BLOCK) {
            let v = x[base4 + i];
            s += dot(v, v);
            row[i] = v;
        }
        for (var i = vectors * 4u + ids.tid; i < cols; i += BLOCK) {
            let e = base + i;
            let v = x[e >> 2u][e & 3u];
            s += v * v;
            row[i >> 2u][i & 3u] = v;
        }
        let inv = 1.0 / sqrt(fold_sum(ids, s) * inv_cols + params.eps);

        // Each thread revisits the elements it stored: no barrier needed before this.
        for (var i = ids.tid; i < vectors; i += BLOCK) {
            y[base4 + i] = row[i] * inv * g[i];
        }
        for (var i = vectors * 4u + ids.tid; i < cols; i += BLOCK) {
            let e = base + i;
            y[e >> 2u][e & 3u] = row[i >> 2u][i & 3u] * inv * g[i >> 2u][i & 3u];
        }
        workgroupBarrier();
    }
}
