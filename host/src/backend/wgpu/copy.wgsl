// Device-to-device copy, 16 bytes per thread per step, grid-stride: the bandwidth anchor
// of the WGSL backend (wgpu times compute passes only, so the anchor is a kernel).
// Buffers are allocated in multiples of 16 bytes, so `n_vec4` vectors cover every byte.

struct Params {
    n_vec4: u32,
}

@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding(2) var<uniform> params: Params;

const BLOCK: u32 = 256u;

@compute @workgroup_size(BLOCK)
fn copy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let stride = nwg.x * BLOCK;
    for (var i = gid.x; i < params.n_vec4; i += stride) {
        dst[i] = src[i];
    }
}
