// The moving average on the static-WGSL path: the algorithm and mapping of
// kernels/src/lib.rs (read that first), with the tile in a `var<workgroup>` array of TILE
// floats fixed when the pipeline is created.
//
// Template slot (the name in double braces), filled by dynsmem's kernel contract:
//   SIZING   the parameters BLOCK and PER_THREAD and the define WINDOW (u32): `const` lines
//            (wgsl-literal) or `override` lines set at pipeline creation (wgsl-override)

{{SIZING}}
// The tile: the launch-sized layout of kernels/src/lib.rs, fixed per pipeline.
override TILE: u32 = BLOCK * PER_THREAD + WINDOW - 1u;

// The scalar arguments of the Rust entry point, in order (the backend packs them here).
struct Params {
    n: u32,
    window: u32,
    per_thread: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

var<workgroup> tile: array<f32, TILE>;

@compute @workgroup_size(BLOCK)
fn window_mean(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let n = params.n;
    let outputs = n - WINDOW + 1u;
    let span = BLOCK * PER_THREAD;
    let inv = 1.0 / f32(WINDOW);
    for (var start = wid.x * span; start < outputs; start += nwg.x * span) {
        let len = min(TILE, n - start);
        for (var i = tid; i < len; i += BLOCK) {
            tile[i] = x[start + i];
        }
        workgroupBarrier();
        for (var k = 0u; k < PER_THREAD; k++) {
            let o = k * BLOCK + tid;
            if (o < outputs - start) {
                var s = 0.0;
                for (var j = 0u; j < WINDOW; j++) {
                    s += tile[o + j];
                }
                y[start + o] = s * inv;
            }
        }
        // The next span overwrites the tile.
        workgroupBarrier();
    }
}
