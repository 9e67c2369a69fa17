//! What the compiler makes of memory sized at launch against the same kernel with
//! compile-time arrays: the SASS of a launch-sized Rust entry (the embedded PTX through
//! ptxas) beside that of its CUDA C twin at the same config, as NVRTC builds it (what the
//! cuda-static variant runs) and as nvcc does, as instruction mixes. No GPU: the CUDA
//! toolkit's ptxas, nvcc and nvdisasm, and libnvrtc for the NVRTC column (the wheels
//! `ci/ptxas.sh` installs are enough).
//!
//! The counts are static (instructions in the code, not executed): a load in a loop body
//! counts once. They say which instructions each compiler chose (vector widths of shared
//! and global accesses, cp.async or TMA copies, barriers, local-memory spills), not how often
//! each runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::backend::cuda::nvrtc::{self, CudaSource, program_text, source_options};

/// The CUDA tools the comparison runs.
#[derive(Debug, Clone)]
pub struct Tools {
    pub ptxas: PathBuf,
    pub nvcc: PathBuf,
    pub nvdisasm: PathBuf,
}

impl Tools {
    /// ptxas, nvcc and nvdisasm from one folder: that of `DYNSMEM_PTXAS` or `NVCC`, else the
    /// first `PATH` entry or `$CUDA_HOME/bin` holding all three; the error says where it looked.
    pub fn find() -> Result<Tools, String> {
        let mut dirs: Vec<PathBuf> = ["DYNSMEM_PTXAS", "NVCC"]
            .iter()
            .filter_map(std::env::var_os)
            .filter_map(|p| PathBuf::from(p).parent().map(Path::to_path_buf))
            .collect();
        dirs.extend(
            std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect::<Vec<_>>()).unwrap_or_default(),
        );
        dirs.extend(std::env::var_os("CUDA_HOME").map(|h| PathBuf::from(h).join("bin")));
        dirs.iter()
            .find(|d| ["ptxas", "nvcc", "nvdisasm"].iter().all(|t| d.join(t).is_file()))
            .map(|d| Tools { ptxas: d.join("ptxas"), nvcc: d.join("nvcc"), nvdisasm: d.join("nvdisasm") })
            .ok_or_else(|| {
                "no folder holds ptxas, nvcc and nvdisasm (looked in the folders of DYNSMEM_PTXAS and NVCC, PATH, \
                 CUDA_HOME/bin): `source ci/ptxas.sh` installs them from the CUDA wheels, no GPU needed"
                    .into()
            })
    }

    /// The embedded PTX image compiled by ptxas for `arch` (the image's own target: its
    /// entries' register caps are directives in it) into `dir/rust-<arch>.cubin`.
    pub fn rust_cubin(&self, ptx: &str, arch: &str, dir: &Path) -> Result<PathBuf, String> {
        let src = dir.join("rust.ptx");
        let cubin = dir.join(format!("rust-{arch}.cubin"));
        std::fs::write(&src, ptx).map_err(|e| format!("writing {}: {e}", src.display()))?;
        run(Command::new(&self.ptxas).args(["--gpu-name", arch, "-o"]).arg(&cubin).arg(&src))?;
        Ok(cubin)
    }

    /// The twin compiled by nvcc for compute capability `cc` (`sm_XY`, NVRTC's architecture
    /// there) with the options NVRTC gets, into `dir/twin<n>-<arch>.cubin`.
    pub fn twin_cubin(&self, src: &CudaSource, cc: (i32, i32), dir: &Path, n: usize) -> Result<PathBuf, String> {
        let arch = nvrtc::arch(cc.0, cc.1);
        let cubin = dir.join(format!("twin{n}-{arch}.cubin"));
        dynsmem_build::twins::nvcc_cubin(&self.nvcc, &program_text(src), &arch, &source_options(src), &cubin)
            .map_err(|e| format!("{}: nvcc failed: {}", src.name, e.trim()))?;
        Ok(cubin)
    }

    /// The twin as the cuda-static variant builds it on compute capability `cc`: NVRTC's PTX
    /// through ptxas, as the driver would JIT it, into `dir/twin<n>-nvrtc-<arch>.cubin`.
    /// Needs libnvrtc on the loader path (the `nvidia-cuda-nvrtc` wheel's `lib` folder will do).
    pub fn nvrtc_cubin(&self, src: &CudaSource, cc: (i32, i32), dir: &Path, n: usize) -> Result<PathBuf, String> {
        let arch = nvrtc::arch(cc.0, cc.1);
        let ptx = nvrtc::compile(src, cc.0, cc.1).map_err(|e| e.to_string())?;
        let file = dir.join(format!("twin{n}-nvrtc.ptx"));
        let cubin = dir.join(format!("twin{n}-nvrtc-{arch}.cubin"));
        std::fs::write(&file, ptx.to_src()).map_err(|e| format!("writing {}: {e}", file.display()))?;
        run(Command::new(&self.ptxas).args(["--gpu-name", &arch, "-o"]).arg(&cubin).arg(&file))?;
        Ok(cubin)
    }

    /// Every function of `cubin` and its instructions (opcode with modifiers, operands
    /// dropped), in code order.
    pub fn disassemble(&self, cubin: &Path) -> Result<BTreeMap<String, Vec<Instr>>, String> {
        Ok(functions(&run(Command::new(&self.nvdisasm).arg("-c").arg(cubin))?))
    }
}

/// Runs `cmd`; its stdout, or its stderr as the error.
fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("starting {:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        return Err(format!("{:?} failed: {}", cmd.get_program(), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One instruction of a listing: its opcode with modifiers (`LDS.128`; `@!P0 BRA` as `BRA`)
/// and, for a branch, whether it jumps back to code above it (a loop that stays a loop).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instr {
    pub op: String,
    pub back: bool,
}

/// nvdisasm's listing split by function (`.section .text.<name>`), each function's
/// instructions in code order.
pub fn functions(listing: &str) -> BTreeMap<String, Vec<Instr>> {
    let mut out: BTreeMap<String, Vec<Instr>> = BTreeMap::new();
    let mut current: Option<String> = None;
    // Labels (`.L_x_3:`) seen so far in this function: a branch to one of them goes back.
    let mut labels: Vec<String> = Vec::new();
    for line in listing.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix(".section") {
            let section = rest.trim().split(',').next().unwrap_or("").trim();
            current = section.strip_prefix(".text.").map(String::from);
            labels.clear();
            continue;
        }
        if let Some(label) = t.strip_suffix(':').filter(|l| l.starts_with(".L")) {
            labels.push(label.to_string());
            continue;
        }
        let (Some(f), Some(code)) = (&current, t.strip_prefix("/*")) else { continue };
        // `/*0f00*/  @!P0 LDS.128 R4, [R2] ;`: address, optional predicate, opcode, operands.
        let Some((addr, rest)) = code.split_once("*/") else { continue };
        if !addr.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        let mut words = rest.split_whitespace().skip_while(|w| w.starts_with('@') || *w == "{");
        let Some(op) = words.next().map(|w| w.trim_end_matches(';')).filter(|w| !w.is_empty()) else { continue };
        // `BRA `(.L_x_4) ;`
        let target = words.next().map(|w| w.trim_matches(|c| matches!(c, '`' | '(' | ')' | ';')));
        let back = op.starts_with("BRA") && target.is_some_and(|l| labels.iter().any(|s| s == l));
        out.entry(f.clone()).or_default().push(Instr { op: op.to_string(), back });
    }
    out
}

/// The instruction classes the comparison counts, in table order (`LDG.32` holds the narrower
/// global loads too; `IMAD/IADD/LEA` is integer arithmetic, mostly index and address
/// computation; `loops` are backward branches: loops the compiler did not unroll away).
#[rustfmt::skip]
pub const CLASSES: &[&str] = &[
    "LDS.8/16", "LDS.32", "LDS.64", "LDS.128", "LDSM",
    "STS.8/16", "STS.32", "STS.64", "STS.128", "ATOMS", "ATOM/RED",
    "LDG.32", "LDG.64", "LDG.128", "STG", "LDGSTS", "TMA", "LDL/STL",
    "BAR", "SYNCS", "DEPBAR",
    "FFMA", "FMUL/FADD", "HMMA/HGMMA", "MUFU.RCP", "MUFU", "SHFL", "IMAD/IADD/LEA",
    "loops", "total",
];

/// The class an instruction counts in (besides `total`), if any.
fn class(op: &str) -> Option<&'static str> {
    let mut parts = op.split('.');
    let base = parts.next().unwrap_or("");
    let mods: Vec<&str> = parts.collect();
    let width = |prefix: &'static [&'static str; 4]| {
        if mods.iter().any(|m| matches!(*m, "U8" | "S8" | "U16" | "S16")) {
            prefix[0]
        } else if mods.contains(&"128") {
            prefix[3]
        } else if mods.contains(&"64") {
            prefix[2]
        } else {
            prefix[1]
        }
    };
    Some(match base {
        "LDS" => width(&["LDS.8/16", "LDS.32", "LDS.64", "LDS.128"]),
        "STS" => width(&["STS.8/16", "STS.32", "STS.64", "STS.128"]),
        "LDG" => width(&["LDG.32", "LDG.32", "LDG.64", "LDG.128"]),
        "LDSM" => "LDSM",
        "ATOMS" => "ATOMS",
        // Global or generic-address atomics (a generic one may also get an ATOMS path).
        "ATOM" | "ATOMG" | "RED" => "ATOM/RED",
        "STG" => "STG",
        "LDGSTS" => "LDGSTS",
        "UTMALDG" | "UTMASTG" | "UTMAPF" | "UBLKCP" | "UTMACCTL" => "TMA",
        "LDL" | "STL" => "LDL/STL",
        "BAR" => "BAR",
        "SYNCS" => "SYNCS",
        "DEPBAR" | "LDGDEPBAR" => "DEPBAR",
        "FFMA" => "FFMA",
        "FMUL" | "FADD" => "FMUL/FADD",
        "HMMA" | "HGMMA" => "HMMA/HGMMA",
        // RCP is also how an integer division by a value known only at run time is done.
        "MUFU" if mods.first() == Some(&"RCP") => "MUFU.RCP",
        "MUFU" => "MUFU",
        "SHFL" => "SHFL",
        // Integer arithmetic, mostly indices and addresses.
        "IMAD" | "IADD3" | "IADD" | "VIADD" | "LEA" => "IMAD/IADD/LEA",
        _ => return None,
    })
}

/// Instructions per class ([`CLASSES`]) of one function; `loops` counts backward branches.
pub fn mix(instructions: &[Instr]) -> BTreeMap<&'static str, u32> {
    let mut m = BTreeMap::new();
    for i in instructions {
        for c in class(&i.op).into_iter().chain(i.back.then_some("loops")) {
            *m.entry(c).or_insert(0) += 1;
        }
    }
    m.insert("total", instructions.len() as u32);
    m
}

/// One class where the two mixes differ: `(class, Rust count, CUDA C count)`.
pub type Difference = (&'static str, u32, u32);

/// The classes where `rust` and `cuda` differ, in table order (`total` left out).
pub fn differences(rust: &BTreeMap<&'static str, u32>, cuda: &BTreeMap<&'static str, u32>) -> Vec<Difference> {
    let get = |m: &BTreeMap<&'static str, u32>, c| m.get(c).copied().unwrap_or(0);
    CLASSES
        .iter()
        .filter(|c| **c != "total")
        .map(|c| (*c, get(rust, c), get(cuda, c)))
        .filter(|(_, r, c)| r != c)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = "\t.section\t.text.k,\"ax\",@progbits\n\
        k:\n\
        .text.k:\n\
        /*0000*/                   LDC R1, c[0x0][0x28] ;\n\
        /*0010*/              @!P0 LDS.128 R4, [R2] ;\n\
        /*0020*/                   LDS R5, [R2+0x4] ;\n\
        /*0030*/                   LDS.U16 R6, [R2] ;\n\
        /*0040*/                   STS.64 [R3], R4 ;\n\
        /*0050*/                   LDG.E.128.CONSTANT R8, desc[UR4][R6.64] ;\n\
        /*0060*/                   LDGSTS.E.BYPASS.128 [R1], desc[UR4][R6.64] ;\n\
        /*0070*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;\n\
        .L_x_0:\n\
        /*0080*/                   FFMA R1, R2, R3, R4 ;\n\
        /*0090*/                   STL [R1], R2 ;\n\
        /*00a0*/              @P0 BRA `(.L_x_0) ;\n\
        /*00b0*/                   MUFU.RCP R3, R2 ;\n\
        /*00c0*/                   BRA `(.L_x_1) ;\n\
        .L_x_1:\n\
        /*00d0*/                   IADD3 R1, R2, R3, RZ ;\n\
        \t.section\t.text.other,\"ax\",@progbits\n\
        /*0000*/                   EXIT ;\n";

    #[test]
    fn the_listing_splits_by_function_and_counts_by_class() {
        let f = functions(LISTING);
        assert_eq!(f.keys().collect::<Vec<_>>(), ["k", "other"]);
        assert_eq!(f["k"][1], Instr { op: "LDS.128".into(), back: false });
        assert!(f["k"][10].back && !f["k"][12].back, "{:?}", f["k"]);
        let m = mix(&f["k"]);
        let want = [
            ("LDS.128", 1),
            ("LDS.32", 1),
            ("LDS.8/16", 1),
            ("STS.64", 1),
            ("LDG.128", 1),
            ("LDGSTS", 1),
            ("BAR", 1),
            ("FFMA", 1),
            ("LDL/STL", 1),
            ("MUFU.RCP", 1),
            ("loops", 1),
            ("IMAD/IADD/LEA", 1),
            ("total", 14),
        ];
        assert_eq!(m, want.into_iter().collect());
        let other = mix(&f["other"]);
        assert_eq!(differences(&m, &other).len(), 12);
        assert_eq!(differences(&m, &m), vec![]);
        assert_eq!(differences(&other, &m)[0], ("LDS.8/16", 0, 1));
    }
}
