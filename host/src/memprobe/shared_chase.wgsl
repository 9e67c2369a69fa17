// Workgroup-memory latency on the static-WGSL path: the chase of
// device-kernels/src/memprobe.rs (`probe_shared_chase`) with the ring in a `var<workgroup>`
// array of N words fixed when the pipeline is created. WGSL has no clock: the host times
// the dispatch, and the timing words get 0 cycles and the chase's last index.
//
// Template slot (the name in double braces), filled by host/src/memprobe/shared.rs:
//   SIZING   declarations of BLOCK and N (u32)

{{SIZING}}
{{IDS}}

struct Params {
    n: u32,
    steps: u32,
}

@group(0) @binding(0) var<storage, read> next: array<u32>;
@group(0) @binding(1) var<storage, read_write> timing: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;

var<workgroup> ring: array<u32, N>;

@compute @workgroup_size(BLOCK)
fn shared_chase(ids: Ids) {
    for (var i = ids.tid; i < params.n; i += BLOCK) {
        ring[i] = next[i];
    }
    workgroupBarrier();
    if (ids.tid == 0u) {
        // Each step's index comes from memory, so the compiler keeps its bounds check.
        var j = 0u;
        for (var s = 0u; s < params.steps; s++) {
            j = ring[j];
        }
        let at = ids.wid.x * 3u;
        timing[at] = 0u;
        timing[at + 1u] = 0u;
        timing[at + 2u] = j;
    }
}
