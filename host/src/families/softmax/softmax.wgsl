// Row-wise softmax on the static-WGSL path: the algorithm and mapping of
// device-kernels/src/softmax.rs (read that first), with the row in a `var<workgroup>`
// array of COLS floats fixed when the pipeline is created (rows longer than COLS need
// another pipeline; past the workgroup-storage limit, none can hold them).
//
// Template slot (the name in double braces), filled by host/src/families/softmax/mod.rs:
//   SIZING   declarations of BLOCK and COLS (u32)

{{SIZING}}

struct Params {
    rows: u32,
    cols: u32,
}

@group(0) @binding(0) var<storage, read> input: array<f32>;
@group(0) @binding(1) var<storage, read_write> output: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

var<workgroup> row: array<f32, COLS>;
var<workgroup> scratch: array<f32, BLOCK>;

const LOG2_E: f32 = 1.4426950408889634;

@compute @workgroup_size(BLOCK)
fn softmax(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let rows = params.rows;
    let cols = params.cols;
    for (var r = wid.x; r < rows; r += nwg.x) {
        let base = r * cols;
        var m = bitcast<f32>(0xff800000u);
        for (var i = tid; i < cols; i += BLOCK) {
            let v = input[base + i];
            m = max(m, v);
            row[i] = v;
        }
        scratch[tid] = m;
        workgroupBarrier();
        var live = BLOCK;
        while (live > 1u) {
            let half = (live + 1u) / 2u;
            if (tid + half < live) {
                scratch[tid] = max(scratch[tid], scratch[tid + half]);
            }
            workgroupBarrier();
            live = half;
        }
        let row_max = scratch[0];
        workgroupBarrier();

        var s = 0.0;
        for (var i = tid; i < cols; i += BLOCK) {
            let e = exp2((row[i] - row_max) * LOG2_E);
            s += e;
            row[i] = e;
        }
        scratch[tid] = s;
        workgroupBarrier();
        live = BLOCK;
        while (live > 1u) {
            let half = (live + 1u) / 2u;
            if (tid + half < live) {
                scratch[tid] = scratch[tid] + scratch[tid + half];
            }
            workgroupBarrier();
            live = half;
        }
        let inv = 1.0 / scratch[0];
        workgroupBarrier();

        for (var i = tid; i < cols; i += BLOCK) {
            output[base + i] = row[i] * inv;
        }
        workgroupBarrier();
    }
}
