//! Local memory per thread of every PTX entry, as the driver reports it once ptxas has
//! compiled the image (`CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`), against [`EXPECTED_LOCAL`].
//! Register spills are decided by ptxas, after the PTX, so only this check sees them (the
//! PTX check in `device_build.rs` sees stack arrays only). Prints every entry's registers
//! and local bytes, a table for the records. Needs a CUDA device.

mod common;

use common::{cuda_or_skip, note};

/// Entries allowed local memory, with the bytes per thread allowed; every other entry
/// must have none. A new spill fails the test; a spill taken on purpose goes here with
/// the reason.
///
/// The two f32 GEMM entries with the depth `bk` given at launch, capped at 128 registers
/// (`[max_registers = 128]` in its `kernels!` entry, for two 256-thread blocks per SM): with `bk` unknown the
/// k loop keeps its bounds and addresses live, and ptxas spills (the bytes are the
/// driver's for sm_90). A `bk` of 8, 16 or 32 takes the compiled-in entries instead,
/// which do not spill.
///
/// The 8-row f32 entries (capped at 128 registers) since the predicated edge copies and
/// split-K: their extra addresses and bounds spill (driver figures for sm_90; the 16-row
/// and tensor-map entries, capped at 255, spill none). Taken on purpose: the shape suites
/// measured these entries faster with the edge copies than with the element-by-element
/// gather they replace (figures in `host/src/families/sgemm/NOTES.md`).
const EXPECTED_LOCAL: &[(&str, u32)] = &[
    ("sgemm_f32", 40),
    ("sgemm_f32_unroll4", 80),
    ("sgemm_f32_bk16", 72),
    ("sgemm_f32_bk32", 64),
    ("sgemm_f32_128x128x16s2", 16),
];

#[test]
fn local_memory_per_entry_is_as_expected() {
    let Some(cuda) = cuda_or_skip("spills::local_memory_per_entry_is_as_expected") else { return };
    let mut unexpected = Vec::new();
    let mut rows = Vec::new();
    for table in dynsmem::host::device::KERNELS {
        for k in table.iter() {
            let (regs, local) = cuda.kernel_resources(k.name).unwrap_or_else(|e| panic!("{}: {e}", k.name));
            let allowed = EXPECTED_LOCAL.iter().find(|(n, _)| *n == k.name).map_or(0, |&(_, b)| b);
            rows.push(format!("| {} | {regs} | {local} | {allowed} |", k.name));
            if local > allowed {
                unexpected.push(format!("{}: {local} B of local memory per thread ({allowed} allowed)", k.name));
            }
        }
    }
    note(&format!("| entry | registers | local B/thread | allowed |\n| --- | --- | --- | --- |\n{}", rows.join("\n")));
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
}
