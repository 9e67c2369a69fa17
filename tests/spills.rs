//! Local memory per thread of every PTX entry, as the driver reports it once ptxas has
//! compiled the image (`CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`), against the `[spills]` marks.
//! Register spills are decided by ptxas, after the PTX, so only this check sees them (the
//! PTX check in `device_build.rs` sees stack arrays only). Prints every entry's registers
//! and local bytes, a table for the records. Needs a CUDA device.

mod common;

use common::{cuda_or_skip, note};

/// Entries allowed local memory are those whose `kernels!` line says why
/// (`[spills = "why"]`: the f32 GEMM entries capped at 128 registers); every other entry must
/// have none. `tests/ptxas.rs` checks the same marks against ptxas with no GPU; this test
/// sees what the driver's ptxas makes of the image on the device.
#[test]
fn local_memory_per_entry_is_as_expected() {
    let Some(cuda) = cuda_or_skip("spills::local_memory_per_entry_is_as_expected") else { return };
    let mut unexpected = Vec::new();
    let mut rows = Vec::new();
    for table in dynsmem::host::device::KERNELS {
        for k in table.iter() {
            let (regs, local) = cuda.kernel_resources(k.name).unwrap_or_else(|e| panic!("{}: {e}", k.name));
            let allowed = !k.spills.is_empty();
            rows.push(format!("| {} | {regs} | {local} | {} |", k.name, if allowed { "yes" } else { "no" }));
            if local > 0 && !allowed {
                unexpected.push(format!("{}: {local} B of local memory per thread, and no [spills] mark", k.name));
            }
        }
    }
    note(&format!("| entry | registers | local B/thread | allowed |\n| --- | --- | --- | --- |\n{}", rows.join("\n")));
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
}
