// A block-wide fold, shared by the WGSL kernels that need one (WGSL has no generic
// functions): every thread's `value` folded with COMBINE (an expression of `a` and `b`)
// through the workgroup array SCRATCH (at least BLOCK elements) in a tree of
// ceil(log2(BLOCK)) barriers; every thread gets the result. The last barrier lets the next
// fold overwrite slot 0. Slots NAME, T, SCRATCH, COMBINE: filled by
// `contract::wgsl_fold` (`subgroup_fold.wgsl` is the wgsl-subgroup variant's form).
fn {{NAME}}(ids: Ids, value: {{T}}) -> {{T}} {
    let tid = ids.tid;
    {{SCRATCH}}[tid] = value;
    workgroupBarrier();
    var live = BLOCK;
    while (live > 1u) {
        let half = (live + 1u) / 2u;
        if (tid + half < live) {
            let a = {{SCRATCH}}[tid];
            let b = {{SCRATCH}}[tid + half];
            {{SCRATCH}}[tid] = {{COMBINE}};
        }
        workgroupBarrier();
        live = half;
    }
    let result = {{SCRATCH}}[0];
    workgroupBarrier();
    return result;
}
