// Row-wise softmax on the static-WGSL path: the algorithm and mapping of
// device-kernels/src/softmax.rs (read that first), with the row in a `var<workgroup>`
// array of COLS floats (as COLS / 4 vectors) fixed when the pipeline is created (rows
// longer than COLS need another pipeline; past the workgroup-storage limit, none can hold
// them). Where a row is whole vectors (cols a multiple of 4; buffers start 16-byte
// aligned), thread t reads, keeps and writes the vectors t, t + BLOCK, ...; otherwise the
// elements t, t + BLOCK, ..., as the Rust kernel does.
//
// Template slots (names in double braces), filled by host/src/families/softmax/mod.rs:
//   SIZING   declarations of BLOCK and COLS (u32; COLS a multiple of 4)
//   FOLDS    fold_max and fold_sum over `scratch` (host/src/contract/block_fold.wgsl)

{{SIZING}}
{{IDS}}

struct Params {
    rows: u32,
    cols: u32,
}

@group(0) @binding(0) var<storage, read> input: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> output: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> params: Params;

var<workgroup> row: array<vec4<f32>, COLS / 4u>;
var<workgroup> scratch: array<f32, BLOCK>;

const LOG2_E: f32 = 1.4426950408889634;

{{FOLDS}}

fn ex(v: f32, m: f32) -> f32 {
    return exp2((v - m) * LOG2_E);
}

@compute @workgroup_size(BLOCK)
fn softmax(ids: Ids) {
    let rows = params.rows;
    let cols = params.cols;
    // Whole vectors per row, or 0: the row is then read element by element.
    let vectors = select(0u, cols / 4u, (cols & 3u) == 0u);
    for (var r = ids.wid.x; r < rows; r += ids.nwg.x) {
        let base = r * cols;
        let base4 = base >> 2u;
        var m = bitcast<f32>(0xff800000u);
        for (var i = ids.tid; i < vectors; i += BLOCK) {
            let v = input[base4 + i];
            m = max(m, max(max(v.x, v.y), max(v.z, v.w)));
            row[i] = v;
        }
        for (var i = vectors * 4u + ids.tid; i < cols; i += BLOCK) {
            let g = base + i;
            let v = input[g >> 2u][g & 3u];
            m = max(m, v);
            row[i >> 2u][i & 3u] = v;
        }
        let row_max = fold_max(ids, m);

        // Each thread revisits the elements it stored: no barrier needed before this.
        var s = 0.0;
        for (var i = ids.tid; i < vectors; i += BLOCK) {
            let v = row[i];
            let e = vec4<f32>(ex(v.x, row_max), ex(v.y, row_max), ex(v.z, row_max), ex(v.w, row_max));
            s += (e.x + e.y) + (e.z + e.w);
            row[i] = e;
        }
        for (var i = vectors * 4u + ids.tid; i < cols; i += BLOCK) {
            let e = ex(row[i >> 2u][i & 3u], row_max);
            s += e;
            row[i >> 2u][i & 3u] = e;
        }
        let inv = 1.0 / fold_sum(ids, s);

        for (var i = ids.tid; i < vectors; i += BLOCK) {
            output[base4 + i] = row[i] * inv;
        }
        for (var i = vectors * 4u + ids.tid; i < cols; i += BLOCK) {
            let g = base + i;
            output[g >> 2u][g & 3u] = row[i >> 2u][i & 3u] * inv;
        }
        // The next row overwrites the shared row.
        workgroupBarrier();
    }
}
