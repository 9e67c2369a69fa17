// Workgroup-memory throughput by stride on the static-WGSL path: the loop of
// device-kernels/src/memprobe.rs (`probe_shared_stride`) for 4-byte elements, the region a
// `var<workgroup>` array of WORDS words. Lane `tid % 32` reads, UNROLL times per iteration,
// word `lane * stride + k * 32 * stride`; word `i` holds `word_value(i)`; `sums[gid]` is
// what the thread read, summed. WGSL has no clock: the timing words get zeros.
//
// WGSL has no volatile load: every load's index adds `zero * i` (`zero` is
// `params.width - 4`, which is 0 because this twin runs 4-byte elements only, and which the
// compiler cannot fold), so no load is hoisted out of the loop.
//
// Template slot (the name in double braces), filled by host/src/memprobe/shared.rs:
//   SIZING   declarations of BLOCK, WORDS and UNROLL (u32)

{{SIZING}}
{{IDS}}

struct Params {
    stride: u32,
    width: u32,
    iters: u32,
}

@group(0) @binding(0) var<storage, read_write> sums: array<u32>;
@group(0) @binding(1) var<storage, read_write> timing: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;

var<workgroup> words: array<u32, WORDS>;

fn word_value(i: u32) -> u32 {
    return (i * 0x9E3779B9u) ^ (i >> 3u);
}

@compute @workgroup_size(BLOCK)
fn shared_stride(ids: Ids) {
    for (var i = ids.tid; i < WORDS; i += BLOCK) {
        words[i] = word_value(i);
    }
    workgroupBarrier();
    let base = (ids.tid % 32u) * params.stride;
    let step = 32u * params.stride;
    let zero = params.width - 4u;
    var acc = 0u;
    for (var i = 0u; i < params.iters; i++) {
        let o = base + zero * i;
        for (var k = 0u; k < UNROLL; k++) {
            acc += words[o + k * step];
        }
    }
    workgroupBarrier();
    sums[ids.wid.x * BLOCK + ids.tid] = acc;
    if (ids.tid == 0u) {
        let at = ids.wid.x * 3u;
        timing[at] = 0u;
        timing[at + 1u] = 0u;
        timing[at + 2u] = 0u;
    }
}
