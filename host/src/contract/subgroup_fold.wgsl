// The block-wide fold of `block_fold.wgsl` with subgroup operations (the wgsl-subgroup
// variant), as the Rust kernels fold with warp shuffles: SUBGROUP_OP folds each subgroup,
// lane 0 of each puts its partial in SCRATCH[subgroup] (SCRATCH holds at least as many
// elements as subgroups), and after one barrier every subgroup folds all the partials
// itself, so every thread gets the result with no second barrier before it. The active
// lanes of a subgroup stride over the partials by their rank among the active ones: a
// block that is not a multiple of the subgroup size has a last subgroup with fewer active
// lanes than `subgroup_size`, and lavapipe's 8-lane subgroups have fewer lanes than a
// large block has partials. The last barrier lets the next fold overwrite the partials.
// Called in workgroup-uniform control flow (every thread of the block). Slots NAME, T,
// SCRATCH, COMBINE, IDENTITY (COMBINE's identity), SUBGROUP_OP: filled by
// `contract::wgsl_fold`.
fn {{NAME}}(ids: Ids, value: {{T}}) -> {{T}} {
    let part = {{SUBGROUP_OP}}(value);
    if (ids.lane == 0u) {
        {{SCRATCH}}[ids.sg] = part;
    }
    let rank = subgroupExclusiveAdd(1u);
    let live = subgroupAdd(1u);
    workgroupBarrier();
    // lavapipe (Mesa 22.3) reports `num_subgroups` as BLOCK / lanes rounded down, leaving
    // out a last, partial subgroup: its partial is counted here all the same. (Every
    // subgroup has at most `lanes` threads, so there are at least this many partials.)
    let partials = max(ids.sgs, (BLOCK + ids.lanes - 1u) / ids.lanes);
    var folded = {{IDENTITY}};
    for (var i = rank; i < partials; i += live) {
        let a = folded;
        let b = {{SCRATCH}}[i];
        folded = {{COMBINE}};
    }
    let result = {{SUBGROUP_OP}}(folded);
    workgroupBarrier();
    return result;
}
