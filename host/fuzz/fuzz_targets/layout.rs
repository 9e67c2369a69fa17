//! Layout carving with arbitrary sequences of arrays, alignments and lengths, and every
//! family's layout, grid and pass arithmetic with arbitrary u32/u64 fields: no panic, no
//! overflow (each answer equals a 64-bit model of it), results in bounds and aligned.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[derive(Debug, arbitrary::Arbitrary)]
enum Input {
    Carve(Vec<dynsmem_fuzz::Ask>),
    Family(dynsmem_fuzz::Family),
}

fuzz_target!(|input: Input| match input {
    Input::Carve(asks) => dynsmem_fuzz::carve_sequence(&asks),
    Input::Family(f) => {
        dynsmem_fuzz::family(f);
        if let dynsmem_fuzz::Family::Reduce { block, ipt, staged, n } = f {
            dynsmem_fuzz::reduce_plan(block, ipt, staged, n);
        }
    }
});
