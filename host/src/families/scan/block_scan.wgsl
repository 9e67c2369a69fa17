// The block scan of `scan.wgsl` (its BLOCK_SCAN slot) in the literal and override variants.
// The inclusive scan of every thread's `value` (Hillis-Steele over the two scratch
// buffers); every thread gets its own prefix and the total.
fn block_scan(ids: Ids, value: T) -> vec2<T> {
    let tid = ids.tid;
    var v = value;
    var cur = 0u;
    scratch[tid] = v;
    workgroupBarrier();
    for (var d = 1u; d < BLOCK; d *= 2u) {
        if (tid >= d) {
            v = scratch[cur + tid - d] + v;
        }
        cur = BLOCK - cur;
        scratch[cur + tid] = v;
        workgroupBarrier();
    }
    let total = scratch[cur + BLOCK - 1u];
    // The next scan writes both buffers.
    workgroupBarrier();
    return vec2<T>(v, total);
}
