// Transpose on the static-WGSL path: the algorithm and mapping of
// device-kernels/src/transpose.rs (read that first), with the padded tile in a
// `var<workgroup>` array of TILE * (TILE + PAD) floats fixed when the pipeline is created.
//
// Template slot (the name in double braces), filled by host/src/families/transpose/mod.rs:
//   SIZING   declarations of BLOCK, TILE and PAD (u32)

{{SIZING}}
{{IDS}}

struct Params {
    rows: u32,
    cols: u32,
    tile: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> input: array<f32>;
@group(0) @binding(1) var<storage, read_write> output: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

var<workgroup> shared_tile: array<f32, TILE * (TILE + PAD)>;

// Element (r, c) of the input, zero outside it.
fn load(r: u32, c: u32, rows: u32, cols: u32) -> f32 {
    if (r < rows && c < cols) {
        return input[r * cols + c];
    }
    return 0.0;
}

@compute @workgroup_size(BLOCK)
fn transpose(ids: Ids) {
    let rows = params.rows;
    let cols = params.cols;
    let tx = ids.tid % TILE;
    let ty = ids.tid / TILE;
    let step = BLOCK / TILE;
    let stride = TILE + PAD;
    let tiles_x = (cols + TILE - 1u) / TILE;
    let tiles = tiles_x * ((rows + TILE - 1u) / TILE);
    for (var t = ids.wid.x; t < tiles; t += ids.nwg.x) {
        let r0 = (t / tiles_x) * TILE;
        let c0 = (t % tiles_x) * TILE;
        // Four rows' loads in flight before their stores, as in the Rust kernel.
        let c = c0 + tx;
        var j = ty;
        while (TILE > j && TILE - j > 3u * step) {
            let a = load(r0 + j, c, rows, cols);
            let b = load(r0 + j + step, c, rows, cols);
            let c2 = load(r0 + j + 2u * step, c, rows, cols);
            let d = load(r0 + j + 3u * step, c, rows, cols);
            shared_tile[j * stride + tx] = a;
            shared_tile[(j + step) * stride + tx] = b;
            shared_tile[(j + 2u * step) * stride + tx] = c2;
            shared_tile[(j + 3u * step) * stride + tx] = d;
            j += 4u * step;
        }
        for (; j < TILE; j += step) {
            shared_tile[j * stride + tx] = load(r0 + j, c, rows, cols);
        }
        workgroupBarrier();
        for (var j = ty; j < TILE; j += step) {
            let out_r = c0 + j;
            let out_c = r0 + tx;
            if (out_r < cols && out_c < rows) {
                output[out_r * rows + out_c] = shared_tile[tx * stride + j];
            }
        }
        workgroupBarrier();
    }
}
