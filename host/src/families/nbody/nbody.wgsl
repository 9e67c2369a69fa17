// One n-body time step on the static-WGSL path: the algorithm and mapping of
// device-kernels/src/nbody.rs (read that first), the tile of TILE bodies in a
// `var<workgroup>` array fixed when the pipeline is created.
//
// Template slot (the name in double braces), filled by host/src/families/nbody/mod.rs:
//   SIZING   declarations of BLOCK and TILE (u32)

{{SIZING}}

struct Params {
    n: u32,
    dt: f32,
    softening2: f32,
    tile: u32,
}

@group(0) @binding(0) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> vel: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> new_pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> new_vel: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> params: Params;

var<workgroup> bodies: array<vec4<f32>, TILE>;

@compute @workgroup_size(BLOCK)
fn nbody_step(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let n = params.n;
    let i = wid.x * BLOCK + tid;
    var me = vec4<f32>(0.0);
    if (i < n) {
        me = pos[i];
    }
    var a = vec3<f32>(0.0);
    for (var j0 = 0u; j0 < n; j0 += TILE) {
        for (var k = tid; k < TILE; k += BLOCK) {
            var b = vec4<f32>(0.0);
            if (j0 + k < n) {
                b = pos[j0 + k];
            }
            bodies[k] = b;
        }
        workgroupBarrier();
        let count = min(TILE, n - j0);
        for (var k = 0u; k < count; k++) {
            let b = bodies[k];
            let d = b.xyz - me.xyz;
            let r2 = fma(d.x, d.x, fma(d.y, d.y, fma(d.z, d.z, params.softening2)));
            let inv = inverseSqrt(r2);
            let s = b.w * inv * inv * inv;
            a = fma(d, vec3<f32>(s), a);
        }
        workgroupBarrier();
    }
    if (i < n) {
        let v = vel[i];
        let nv = fma(a, vec3<f32>(params.dt), v.xyz);
        new_vel[i] = vec4<f32>(nv, 0.0);
        new_pos[i] = vec4<f32>(fma(nv, vec3<f32>(params.dt), me.xyz), me.w);
    }
}
