//! What an AMDGPU code object says about each of its kernels: the resources the compiler
//! gave it, read from the object's `NT_AMDGPU_METADATA` note (msgpack, code object v4+;
//! the keys are those of LLVM's AMDGPUUsage, "Code Object V3 Metadata").
//!
//! No AMD GPU is needed: the images are the ones the build embeds, so what is read here is
//! what a HIP launch would run.

use crate::error::{Error, Result};

/// One kernel's entry of the metadata.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KernelResources {
    pub name: String,
    /// Architectural VGPRs a wavefront uses (`.vgpr_count`).
    pub vgprs: u32,
    /// Accumulation VGPRs (`.agpr_count`; 0 where the target has none).
    pub agprs: u32,
    /// SGPRs a wavefront uses (`.sgpr_count`).
    pub sgprs: u32,
    /// VGPRs and SGPRs spilled (`.vgpr_spill_count`, `.sgpr_spill_count`).
    pub vgpr_spills: u32,
    pub sgpr_spills: u32,
    /// Bytes of scratch (private) memory per work-item (`.private_segment_fixed_size`):
    /// spills, and stack arrays the compiler could not keep in registers.
    pub scratch_bytes: u32,
    /// Bytes of static LDS (`.group_segment_fixed_size`); launch-sized LDS comes on top.
    pub static_lds_bytes: u32,
    /// The largest workgroup the kernel was compiled for (`.max_flat_workgroup_size`):
    /// the register budget follows from it.
    pub max_workgroup_size: u32,
    /// `.wavefront_size`.
    pub wavefront_size: u32,
}

/// The msgpack metadata document of a code object.
pub fn metadata(elf: &[u8]) -> Result<rmpv::Value> {
    use object::read::elf::{ElfFile64, SectionHeader};
    let bad = |why: String| Error::InvalidImage { what: "AMDGPU code object".into(), why };
    let file = ElfFile64::<object::Endianness>::parse(elf).map_err(|e| bad(format!("not an ELF64 object: {e}")))?;
    let endian = file.endian();
    for section in file.elf_section_table().iter() {
        if let Ok(Some(mut notes)) = section.notes(endian, elf) {
            while let Ok(Some(note)) = notes.next() {
                // NT_AMDGPU_METADATA = 32, owner "AMDGPU".
                if note.name() == b"AMDGPU" && note.n_type(endian) == 32 {
                    let mut desc = note.desc();
                    return rmpv::decode::read_value(&mut desc).map_err(|e| bad(format!("its metadata note: {e}")));
                }
            }
        }
    }
    Err(bad("no NT_AMDGPU_METADATA note".into()))
}

/// The value of `key` in a msgpack map.
pub fn get<'a>(map: &'a rmpv::Value, key: &str) -> Option<&'a rmpv::Value> {
    map.as_map()?.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
}

/// Every kernel of a code object, in the metadata's order.
pub fn kernels(elf: &[u8]) -> Result<Vec<KernelResources>> {
    let meta = metadata(elf)?;
    let bad = |why: String| Error::InvalidImage { what: "AMDGPU code object metadata".into(), why };
    let list =
        get(&meta, "amdhsa.kernels").and_then(|v| v.as_array()).ok_or_else(|| bad("no amdhsa.kernels".into()))?;
    list.iter()
        .map(|k| {
            let name = get(k, ".name").and_then(|v| v.as_str()).ok_or_else(|| bad("a kernel without .name".into()))?;
            let u = |key: &str, default: Option<u32>| {
                get(k, key)
                    .and_then(|v| v.as_u64())
                    .and_then(|v| u32::try_from(v).ok())
                    .or(default)
                    .ok_or_else(|| bad(format!("{name}: no {key}")))
            };
            Ok(KernelResources {
                name: name.to_string(),
                vgprs: u(".vgpr_count", None)?,
                agprs: u(".agpr_count", Some(0))?,
                sgprs: u(".sgpr_count", None)?,
                vgpr_spills: u(".vgpr_spill_count", Some(0))?,
                sgpr_spills: u(".sgpr_spill_count", Some(0))?,
                scratch_bytes: u(".private_segment_fixed_size", None)?,
                static_lds_bytes: u(".group_segment_fixed_size", None)?,
                max_workgroup_size: u(".max_flat_workgroup_size", None)?,
                wavefront_size: u(".wavefront_size", None)?,
            })
        })
        .collect()
}
