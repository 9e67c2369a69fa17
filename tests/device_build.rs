//! GPU-free checks of the device images build.rs embedded: every reduce entry point is in
//! the PTX and the amdgpu code object, launch-sized memory is an `.extern .shared` symbol,
//! nothing spills to local memory, and the code object asks for no static LDS. On the AMD
//! code objects: registers, spills and scratch per entry from their metadata (spills only
//! where expected), and the histogram's LDS atomics in the disassembly.

mod common;

use dynsmem::host::backend::hip::code_object::{self, get};
use dynsmem::images;
use dynsmem_kernels::reduce;
use object::{Object, ObjectSymbol};

/// The PTX text of one `.entry`, from its header to the closing brace.
fn ptx_entry<'a>(ptx: &'a str, name: &str) -> Option<&'a str> {
    let start = ptx.find(&format!(".entry {name}("))?;
    let body = &ptx[start..];
    let end = body.find("\n}\n").map(|e| e + 2).unwrap_or(body.len());
    Some(&body[..end])
}

#[test]
fn ptx_has_every_reduce_entry() {
    assert!(images::PTX.contains(&format!(".target {}", images::PTX_ARCH)), "built for {}", images::PTX_ARCH);
    let entries: Vec<_> = reduce::entries().collect();
    assert_eq!(entries.len(), 12);
    for (name, ..) in entries {
        let entry = ptx_entry(images::PTX, name).unwrap_or_else(|| panic!("`{name}` missing from the PTX"));
        assert!(images::PTX.contains(&format!(".visible .entry {name}(")), "{name} is not visible");
        // (input, partials, n, items_per_thread)
        for (i, ty) in ["u64", "u64", "u64", "u32"].iter().enumerate() {
            assert!(
                entry.contains(&format!(".param .{ty}")) && entry.contains(&format!("{name}_param_{i}")),
                "{name} param {i}"
            );
        }
        assert!(entry.contains("%dynamic_smem_size"), "{name} checks its carve against the launch size");
        assert!(entry.contains("bar.sync") || entry.contains("barrier.sync"), "{name} has a barrier");
        assert!(!entry.contains(".local"), "{name} uses local memory (a spill or a stack array)");
    }
}

/// The launch-sized region's symbols (`.extern .shared .align A .b8 NAME[]`) in `ptx`.
fn region_symbols(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter_map(|l| l.trim().strip_prefix(".extern .shared "))
        .filter_map(|rest| rest.split_whitespace().last())
        .filter_map(|decl| decl.strip_suffix("[];"))
        .collect()
}

/// What the PTX can tell: no entry declares local (stack) memory, i.e. no register array
/// that rustc/LLVM already had to put on the stack, and every entry that addresses the
/// launch-sized region checks its carve against the launch size first (`%dynamic_smem_size`;
/// a probe of device memory alone has no carve). Register spills are decided later, by
/// ptxas when the driver loads the PTX, so this cannot see them: `tests/spills.rs` reads
/// every entry's local bytes per thread from the driver on a GPU.
#[test]
fn no_entry_declares_local_memory_in_the_ptx() {
    let symbols = region_symbols(images::PTX);
    assert!(!symbols.is_empty(), "the PTX declares no launch-sized region");
    let mut carving = 0;
    for table in dynsmem_kernels::KERNELS {
        for k in table.iter() {
            let entry = ptx_entry(images::PTX, k.name).unwrap_or_else(|| panic!("`{}` missing from the PTX", k.name));
            assert!(
                !entry.contains(".local"),
                "{} declares local memory in its PTX (a register array indexed at run time, or a stack frame)",
                k.name
            );
            if symbols.iter().any(|s| entry.contains(s)) {
                carving += 1;
                assert!(entry.contains("%dynamic_smem_size"), "{} checks its carve against the launch size", k.name);
            }
        }
    }
    let all: usize = dynsmem_kernels::KERNELS.iter().map(|t| t.len()).sum();
    // Every entry but the probes of device memory, atomics included, and of fences, and the
    // tensor-map GEMMs' row padding (a copy between device buffers), and attention backward's
    // two Delta pre-passes (a row sum per thread).
    assert!(carving >= all - 6, "only {carving} of {all} entries address the launch-sized region");
}

/// Every entry's `[max_registers = N]` and `[cluster = N]` of its `kernels!` table is the
/// `.maxnreg` and `.reqnctapercluster` of its PTX header, and no other entry has either.
#[test]
fn ptx_entry_directives_come_from_the_kernels_table() {
    let (mut capped, mut clustered) = (0, 0);
    for e in dynsmem_kernels::KERNELS.iter().flat_map(|t| t.iter()) {
        let entry = ptx_entry(images::PTX, e.name).unwrap_or_else(|| panic!("`{}` missing from the PTX", e.name));
        let header = &entry[..entry.find('{').unwrap()];
        let regs = (e.max_registers > 0).then(|| format!(".maxnreg {}", e.max_registers));
        assert_eq!(header.contains(".maxnreg"), regs.is_some(), "{}: {header}", e.name);
        assert!(regs.as_ref().is_none_or(|r| header.contains(r.as_str())), "{}: {regs:?} in {header}", e.name);
        let cluster = format!(".reqnctapercluster {}, 1, 1", e.cluster);
        assert_eq!(header.contains(".reqnctapercluster"), e.cluster > 1, "{}: {header}", e.name);
        assert!(e.cluster == 1 || header.contains(&cluster), "{}: {cluster} in {header}", e.name);
        capped += (e.max_registers > 0) as usize;
        clustered += (e.cluster > 1) as usize;
    }
    assert_eq!(
        (capped, clustered),
        (51, 13),
        "the GEMM entries' caps, RMSNorm's and the transpose tiles', the attention and attention backward wgmma entries' caps, the hgemm _c2 clusters, the cluster probes"
    );
}

#[test]
fn gemm_entries_are_capped_at_128_registers_and_read_shared_memory_by_immediate_offsets() {
    for name in [
        "sgemm_f32",
        "sgemm_f32_bk8",
        "sgemm_f32_bk16",
        "sgemm_f32_bk32",
        "sgemm_f32_unroll4",
        "sgemm_f32_128x128x16s2",
        "hgemm_f16_f32",
    ] {
        let entry = ptx_entry(images::PTX, name).unwrap_or_else(|| panic!("`{name}` missing from the PTX"));
        let header = &entry[..entry.find('{').unwrap()];
        assert!(header.contains(".maxnreg 128"), "{name}: two 256-thread blocks per SM need <= 128 registers");
    }
    // The f32 kernel's k loop reads four k of one 16-byte slot column by immediate offsets
    // of one address (the k-group layout), not by an index computed per read.
    let entry = ptx_entry(images::PTX, "sgemm_f32").unwrap();
    for off in ["+16]", "+32]"] {
        assert!(
            entry.lines().any(|l| l.contains("ld.shared.v4") && l.contains(off)),
            "no 16-byte shared read at {off} in sgemm_f32"
        );
    }
    assert!(entry.contains("cp.async.ca.shared.global") && entry.contains("cp.async.cg.shared.global"));
}

/// The tensor-map entries move both tiles by `cp.async.bulk.tensor` into slots whose
/// transaction barriers they wait on, issue no per-thread copy, and read shared memory by
/// 16-byte loads at immediate offsets (B's row stride, 512 bytes, compiled in).
#[test]
fn tma_entries_copy_by_tensor_map_and_wait_on_transaction_barriers() {
    for name in ["sgemm_f32_tma_bk32", "sgemm_f32_tma_bk64"] {
        let entry = ptx_entry(images::PTX, name).unwrap_or_else(|| panic!("`{name}` missing from the PTX"));
        // A's and B's box, in the prologue and in the k loop.
        assert_eq!(entry.matches("cp.async.bulk.tensor.2d.shared::cluster.global").count(), 4, "{name}: A and B boxes");
        for op in ["mbarrier.init", "mbarrier.arrive.expect_tx", "mbarrier.try_wait.parity", "fence.mbarrier_init"] {
            assert!(entry.contains(op), "{name}: no {op}");
        }
        assert!(!entry.contains("cp.async.ca") && !entry.contains("cp.async.cg"), "{name}: a per-thread copy");
        assert!(entry.lines().any(|l| l.contains("ld.shared.v4") && l.contains("+512]")), "{name}: B's next row");
    }
}

/// The region is aligned to `gpu::REGION_ALIGN` (1024 bytes: the 128-byte TMA swizzle repeats
/// every 1024 bytes, and wgmma descriptors assume a swizzle atom starts there).
#[test]
fn launch_sized_memory_is_extern_shared_and_region_aligned() {
    let externs: Vec<&str> = images::PTX.lines().filter(|l| l.starts_with(".extern .shared")).collect();
    assert!(!externs.is_empty(), "no .extern .shared symbol: the kernels would have no launch-sized memory");
    let align = format!(".align {} ", dynsmem_kernels::gpu::REGION_ALIGN);
    for l in &externs {
        assert!(l.contains(&align) && l.trim_end().ends_with("[];"), "{l}");
    }
    // No kernel declares static shared memory: every byte is sized at launch.
    assert!(!images::PTX.lines().any(|l| l.trim_start().starts_with(".shared") || l.contains(".global .shared")));
}

#[test]
fn staged_kernels_use_16_byte_vector_copies() {
    let entry = ptx_entry(images::PTX, "reduce_staged_sum_f32").unwrap();
    assert!(entry.contains("ld.global.v4"), "16-byte global loads");
    assert!(entry.contains("st.shared.v4"), "16-byte shared stores");
    let direct = ptx_entry(images::PTX, "reduce_sum_f32").unwrap();
    assert!(direct.contains("ld.global.v4"), "16-byte global loads");
}

fn amdgpu_metadata(elf: &[u8]) -> rmpv::Value {
    code_object::metadata(elf).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn amdgpu_code_objects_match_the_host_argument_packing() {
    let archs: Vec<&str> = images::AMDGPU.iter().map(|(a, _)| *a).collect();
    for required in ["gfx90a", "gfx942"] {
        assert!(archs.contains(&required), "default build embeds {required}: {archs:?}");
    }
    let entries: Vec<&dynsmem_kernels::KernelEntry> = dynsmem_kernels::KERNELS.iter().flat_map(|t| t.iter()).collect();
    for (arch, elf) in images::AMDGPU {
        let file = object::File::parse(*elf).expect("ELF");
        let symbols: Vec<String> = file.symbols().filter_map(|s| s.name().ok().map(str::to_string)).collect();
        let meta = amdgpu_metadata(elf);
        let kernels_meta = get(&meta, "amdhsa.kernels").and_then(|v| v.as_array()).expect("amdhsa.kernels");
        assert_eq!(kernels_meta.len(), entries.len(), "{arch}: one metadata record per kernels! entry");
        // CDNA (gfx9) runs 64-wide wavefronts, RDNA (gfx10+) 32-wide by default.
        let wave = if arch.starts_with("gfx9") { 64 } else { 32 };
        for entry in &entries {
            let name = entry.name;
            assert!(symbols.iter().any(|s| s == name), "{arch}: symbol {name}");
            assert!(symbols.iter().any(|s| *s == format!("{name}.kd")), "{arch}: kernel descriptor {name}.kd");
            let k = kernels_meta
                .iter()
                .find(|k| get(k, ".name").and_then(|v| v.as_str()) == Some(name))
                .unwrap_or_else(|| panic!("{arch}: {name} not in the metadata"));
            let u = |key: &str| get(k, key).and_then(|v| v.as_u64());
            assert_eq!(u(".group_segment_fixed_size"), Some(0), "{arch} {name}: static LDS");
            assert_eq!(u(".wavefront_size"), Some(wave), "{arch} {name}: wavefront size");
            assert_eq!(
                u(".kernarg_segment_size"),
                Some(dynsmem_kernels::kernarg_size(entry.params) as u64),
                "{arch} {name}"
            );
            // Every explicit argument where the HIP backend packs it, and of the right kind.
            let args = get(k, ".args").and_then(|v| v.as_array()).expect(".args");
            let layout: Vec<(u64, u64, String)> = args
                .iter()
                .map(|a| {
                    let n = |key: &str| get(a, key).and_then(|v| v.as_u64()).unwrap();
                    (n(".offset"), n(".size"), get(a, ".value_kind").and_then(|v| v.as_str()).unwrap().to_string())
                })
                .collect();
            let expected: Vec<(u64, u64, String)> = dynsmem_kernels::kernarg_layout(entry.params)
                .zip(entry.params)
                .map(|((o, s), p)| {
                    let kind = if *p == dynsmem_kernels::ParamKind::Ptr { "global_buffer" } else { "by_value" };
                    (o as u64, s as u64, kind.to_string())
                })
                .collect();
            assert_eq!(layout, expected, "{arch} {name}: kernarg layout");
        }
    }
}

/// Entries allowed to spill or use scratch on the AMD targets, and why. Nothing in the code
/// objects bounds a kernel's workgroup size, so the AMDGPU backend budgets registers for
/// groups of 1024 work-items (128 VGPRs per wave on CDNA) and spills what does not fit.
/// Every other entry must have no spills and no scratch; every entry listed must spill on
/// at least one target (else it comes off the list).
const AMD_SPILLS_EXPECTED: &[(&str, &str)] = &[
    ("sgemm_f32", "register-blocked GEMM tiles: 64 to 256 accumulators per thread, over 128 VGPRs"),
    ("hgemm_f16_f32", "the f16 GEMM's accumulators, just over the 128-VGPR budget on gfx90a"),
    ("stencil2d_f32_r1", "SGPR spills of the 3x3 weights held in scalar registers"),
    ("stencil2d_f32_r2", "the 5x5 weights and the register tile, over 128 VGPRs"),
    ("stencil2d_f32", "SGPR spills into VGPR lanes (no scratch) on gfx90a: the any-radius entry's four loop copies"),
    ("histogram_u32", "SGPR spills (into VGPR lanes, no scratch) of its three counter widths' loops on gfx90a"),
    (
        "rmsnorm_f32",
        "SGPR spills (into VGPR lanes, no scratch) on gfx90a: its two row loops, one per source of the weights",
    ),
];

#[test]
fn amd_entries_spill_only_where_expected() {
    // The entry of the list that covers kernel `name` (itself, or an entry of its prefix).
    let listed =
        |name: &str| AMD_SPILLS_EXPECTED.iter().find(|(p, _)| name == *p || name.starts_with(&format!("{p}_")));
    let mut spilled = std::collections::BTreeSet::new();
    let mut table = String::new();
    for (arch, elf) in images::AMDGPU {
        for k in code_object::kernels(elf).unwrap() {
            let spills = k.vgpr_spills > 0 || k.sgpr_spills > 0 || k.scratch_bytes > 0;
            table += &format!(
                "{arch} {}: {} VGPRs, {} AGPRs, {} SGPRs, spills {}/{}, scratch {} B\n",
                k.name, k.vgprs, k.agprs, k.sgprs, k.vgpr_spills, k.sgpr_spills, k.scratch_bytes
            );
            if spills {
                let (name, _) = listed(&k.name)
                    .unwrap_or_else(|| panic!("{arch} {}: spills or scratch not on the expected list: {k:?}", k.name));
                spilled.insert(*name);
            }
        }
    }
    for (name, why) in AMD_SPILLS_EXPECTED {
        assert!(spilled.contains(name), "{name} ({why}) spills on no target any more: take it off the list");
    }
    common::note(&format!("AMD registers per entry:\n{table}"));
}

/// The toolchain's own LLVM tool `name` (rustup's llvm-tools component), or `None` where no
/// `rustc` runs at all (a GPU machine that got only the built test executables). Where
/// `rustc` runs, a missing tool fails: the component is pinned in rust-toolchain.toml.
fn llvm_tool(name: &str) -> Option<std::path::PathBuf> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = std::process::Command::new(&rustc).args(["--print", "sysroot"]).output() else {
        println!("SKIPPED: no Rust toolchain here ({rustc} does not run), so no {name}");
        return None;
    };
    let sysroot = String::from_utf8(out.stdout).unwrap();
    let tool = std::path::Path::new(sysroot.trim()).join("lib/rustlib/x86_64-unknown-linux-gnu/bin").join(name);
    assert!(tool.exists(), "{} missing: the llvm-tools component of rust-toolchain.toml", tool.display());
    Some(tool)
}

/// The histogram's privatised bins are updated by LDS atomics (`ds_add_u32`, or its returning
/// form), not by flat (generic-address) atomics, which would go through the memory pipeline
/// whatever the address: a `core` atomic on launch-sized memory lowers as the hardware's own.
#[test]
fn histogram_bins_are_updated_by_lds_atomics() {
    let Some(objdump) = llvm_tool("llvm-objdump") else { return };
    let dir = std::env::temp_dir().join(format!("dynsmem-objdump-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (arch, elf) in images::AMDGPU {
        let path = dir.join(format!("{arch}.elf"));
        std::fs::write(&path, elf).unwrap();
        let out = std::process::Command::new(&objdump)
            .args(["-d", "--disassemble-symbols=histogram_u32"])
            .arg(&path)
            .output()
            .expect("running llvm-objdump");
        let text = String::from_utf8_lossy(&out.stdout);
        let count = |op: &str| text.split_whitespace().filter(|w| *w == op).count();
        let lds = count("ds_add_u32") + count("ds_add_rtn_u32");
        assert!(lds > 0, "{arch}: no ds_add_u32 in histogram_u32:\n{text}");
        assert!(!text.contains("flat_atomic"), "{arch}: a flat atomic in histogram_u32:\n{text}");
        common::note(&format!("{arch} histogram_u32: {lds} LDS atomic adds, {} global", count("global_atomic_add")));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
