// The block scan of `scan.wgsl` (its BLOCK_SCAN slot) in the wgsl-subgroup variant, as the
// Rust kernel scans with warp shuffles: `subgroupInclusiveAdd` scans each subgroup, the last
// live lane of each puts its subgroup's total in scratch[subgroup], and after one barrier
// every thread adds the totals of the subgroups before its own (at most BLOCK / lanes of
// them, read by every thread: broadcasts) and of all of them. Two barriers a scan, where the
// tree takes one a step.
//
// The scan is in `tid` order, so this takes thread `tid` to be lane `tid % lanes` of
// subgroup `tid / lanes`: NVIDIA's, AMD's and lavapipe's drivers lay a one-dimensional
// workgroup out so, and the conformance tests would see one that does not (Vulkan does not
// promise it without full subgroups). The partials are counted as in subgroup_fold.wgsl
// (lavapipe's `num_subgroups` is rounded down where BLOCK is not whole subgroups).
fn block_scan(ids: Ids, value: T) -> vec2<T> {
    let incl = subgroupInclusiveAdd(value);
    let live = subgroupAdd(1u);
    let rank = subgroupExclusiveAdd(1u);
    if (rank + 1u == live) {
        scratch[ids.sg] = incl;
    }
    workgroupBarrier();
    let partials = max(ids.sgs, (BLOCK + ids.lanes - 1u) / ids.lanes);
    var before = T(0);
    var total = T(0);
    for (var i = 0u; i < partials; i++) {
        let s = scratch[i];
        before += select(T(0), s, i < ids.sg);
        total += s;
    }
    // The next scan writes the totals again.
    workgroupBarrier();
    return vec2<T>(before + incl, total);
}
