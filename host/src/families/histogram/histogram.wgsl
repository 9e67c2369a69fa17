// Histogram on the static-WGSL path: the algorithm and mapping of
// device-kernels/src/histogram.rs (read that first), with the per-workgroup bins in a
// `var<workgroup>` array whose size, BINS * COPIES, is fixed when the pipeline is created.
// Keys >= BINS are not counted; the global bins are zeroed before the dispatch.
//
// Template slot (the name in double braces), filled by host/src/families/histogram/mod.rs:
//   SIZING   declarations of BLOCK, BINS and COPIES (u32)

{{SIZING}}
{{IDS}}

struct Params {
    // Number of keys; the WGSL path takes n < 2^31 (the host refuses more).
    n_lo: u32,
    n_hi: u32,
    num_bins: u32,
    copies: u32,
    // The Rust kernel's counter width and cluster merge: the twin counts in 32 bits in one
    // workgroup (the host runs it only with 32 and 0).
    bits: u32,
    merge: u32,
}

@group(0) @binding(0) var<storage, read> keys: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> bins: array<atomic<u32>>;
@group(0) @binding(2) var<uniform> params: Params;

var<workgroup> counters: array<atomic<u32>, BINS * COPIES>;

@compute @workgroup_size(BLOCK)
fn histogram(ids: Ids) {
    for (var i = ids.tid; i < BINS * COPIES; i += BLOCK) {
        atomicStore(&counters[i], 0u);
    }
    workgroupBarrier();

    let n = params.n_lo;
    let base = ((ids.tid / 32u) % COPIES) * BINS;
    let stride = ids.nwg.x * BLOCK;
    let first = ids.wid.x * BLOCK + ids.tid;
    let n_vec = n / 4u;
    var g = first;
    // Four vectors read before any is counted: their loads are in flight together.
    for (; g + 3u * stride < n_vec; g += 4u * stride) {
        var k = array<vec4<u32>, 4>(keys[g], keys[g + stride], keys[g + 2u * stride], keys[g + 3u * stride]);
        for (var j = 0u; j < 4u; j++) {
            if (k[j].x < BINS) { atomicAdd(&counters[base + k[j].x], 1u); }
            if (k[j].y < BINS) { atomicAdd(&counters[base + k[j].y], 1u); }
            if (k[j].z < BINS) { atomicAdd(&counters[base + k[j].z], 1u); }
            if (k[j].w < BINS) { atomicAdd(&counters[base + k[j].w], 1u); }
        }
    }
    for (; g < n_vec; g += stride) {
        let k = keys[g];
        if (k.x < BINS) { atomicAdd(&counters[base + k.x], 1u); }
        if (k.y < BINS) { atomicAdd(&counters[base + k.y], 1u); }
        if (k.z < BINS) { atomicAdd(&counters[base + k.z], 1u); }
        if (k.w < BINS) { atomicAdd(&counters[base + k.w], 1u); }
    }
    for (var g = n_vec * 4u + first; g < n; g += stride) {
        let k = keys[g >> 2u][g & 3u];
        if (k < BINS) { atomicAdd(&counters[base + k], 1u); }
    }
    workgroupBarrier();

    for (var b = ids.tid; b < BINS; b += BLOCK) {
        var sum = 0u;
        for (var c = 0u; c < COPIES; c++) {
            sum += atomicLoad(&counters[c * BINS + b]);
        }
        if (sum != 0u) {
            atomicAdd(&bins[b], sum);
        }
    }
}
