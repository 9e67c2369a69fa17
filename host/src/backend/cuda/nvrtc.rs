//! CUDA C compiled at run time through NVRTC, for the cuda-static variant: each family's
//! kernel written in CUDA C with static `__shared__` arrays (`host/src/families/<family>/
//! <family>.cu`), sized by `-D` defines, so that each config is its own compiled kernel
//! exactly as a CUDA programmer would write it. Beside the launch-sized Rust kernels on the
//! same backend it isolates what launch-time sizing costs.
//!
//! Layered like the rest of the backend: cudarc's `nvrtc` (libnvrtc loaded on first use)
//! -> [`compile`] with typed errors -> `CudaBackend::static_kernel`, which loads the PTX as
//! a module and caches it per (source, defines).

use cudarc::nvrtc::{CompileError, CompileOptions, Ptx};

use crate::error::{Error, Result};

/// The helpers every kernel source uses, prepended to it (see the file).
pub const PRELUDE: &str = include_str!("prelude.cuh");

/// One CUDA C kernel with static `__shared__` arrays, as a family asks for it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CudaSource {
    /// For errors and records: `<entry>[cuda-static,<the defines>]`.
    pub name: String,
    /// The family's `.cu` text; [`PRELUDE`] is prepended when compiling.
    pub source: &'static str,
    /// The file name NVRTC's log uses for `source` (`<family>.cu`).
    pub file: &'static str,
    /// The `extern "C" __global__` function.
    pub entry: &'static str,
    /// `-D NAME=VALUE` each: the tile sizes (and element type, operator) as compile-time
    /// constants, so the arrays are sized exactly for the config.
    pub defines: Vec<(&'static str, String)>,
    /// Bytes of the static `__shared__` arrays `defines` size, in declaration order with
    /// each array aligned to its type (what `CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES` reports).
    pub static_bytes: u32,
}

impl CudaSource {
    /// Refuses a twin whose static arrays pass `limit` (CUDA's 48 KB per block: static
    /// `__shared__` arrays cannot opt in to more, only launch-sized memory can), before it
    /// is compiled.
    pub fn check_static_limit(&self, limit: u32) -> Result<()> {
        if self.static_bytes > limit {
            return Err(Error::SharedMemoryLimit {
                kernel: self.name.clone(),
                backend: crate::backend::BackendKind::Cuda,
                kind: "static",
                requested: self.static_bytes as u64,
                limit: limit as u64,
                limit_name: "MAX_SHARED_MEMORY_PER_BLOCK: static __shared__ arrays cannot opt in past it",
            });
        }
        Ok(())
    }

    /// The value of define `name`, if given.
    pub fn define(&self, name: &str) -> Option<&str> {
        self.defines.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }
}

/// Whether libnvrtc can be loaded. cudarc panics on first use when it cannot (as for
/// libcuda), so this is asked first.
pub fn library_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// The NVRTC options for `src` on a device of compute capability `major.minor`: the
/// device's own architecture (so `__CUDA_ARCH__` selects cp.async where the Rust kernels
/// use it) and the defines. No fast-math flag: the kernels ask for the approximate
/// instructions the Rust kernels use by name (ex2.approx, rsqrt.approx) and nothing else.
///
/// A register cap from the block size the defines give (`BLOCK`, or `BM * BN / 64` for the
/// GEMM), as `__launch_bounds__(threads)` would set: unbounded, ptxas may give a static
/// kernel more registers than a block of its own size can have (reduce at 1024 threads got
/// 75, refused at launch). The GEMM gets 128 at most, the cap build.rs puts on the Rust
/// GEMM entries, so both run two 256-thread blocks per SM.
pub fn options(src: &CudaSource, major: i32, minor: i32) -> Vec<String> {
    let mut o = vec![dynsmem_build::twins::arch_option(&arch(major, minor))];
    o.extend(source_options(src));
    o
}

/// The architecture NVRTC compiles for on compute capability `major.minor` (`sm_90`).
pub fn arch(major: i32, minor: i32) -> String {
    format!("sm_{major}{minor}")
}

/// [`options`] but the architecture: the register cap and the defines, what an ahead-of-time
/// build of the twin (nvcc, `dynsmem_build::twins`) passes too.
pub fn source_options(src: &CudaSource) -> Vec<String> {
    let mut o = Vec::new();
    let num = |name: &str| src.define(name).and_then(|v| v.parse::<u32>().ok());
    let threads = num("BLOCK").or_else(|| Some(num("BM")? * num("BN")? / 64));
    if let Some(t) = threads.filter(|&t| t > 0) {
        let gemm_cap = if src.define("BM").is_some() { 128 } else { 255 };
        let regs = (65536 / t / 8 * 8).clamp(16, 255).min(gemm_cap);
        o.push(format!("--maxrregcount={regs}"));
    }
    o.extend(src.defines.iter().map(|(k, v)| format!("-D{k}={v}")));
    o
}

/// The text NVRTC compiles: the prelude, then the family's source with its line numbers
/// restored (`#line`), so the log points into the `.cu` file.
pub fn program_text(src: &CudaSource) -> String {
    dynsmem_build::twins::program_text(PRELUDE, src.file, src.source)
}

/// The key under which an ahead-of-time build embeds the cubin of `src` for `arch`
/// (`dynsmem_build::twins::key`).
pub fn twin_key(src: &CudaSource, arch: &str) -> u64 {
    dynsmem_build::twins::key(&program_text(src), arch, &source_options(src))
}

/// Compiles `src` to PTX for compute capability `major.minor`. A missing libnvrtc is
/// [`Error::NvrtcUnavailable`]; a rejected source [`Error::NvrtcCompile`] with NVRTC's log.
pub fn compile(src: &CudaSource, major: i32, minor: i32) -> Result<Ptx> {
    if !library_present() {
        return Err(Error::NvrtcUnavailable {
            reason: "libnvrtc.so could not be loaded (CUDA's run-time compiler: install the toolkit's NVRTC, \
                     e.g. libnvrtc.so.13, or put it on the loader path); the cuda-static variant needs it"
                .into(),
        });
    }
    let options = options(src, major, minor);
    let opts = CompileOptions { options: options.clone(), name: Some(src.file.into()), ..Default::default() };
    let text = program_text(src);
    // cudarc panics when a symbol it expects is missing from the library it loaded.
    match std::panic::catch_unwind(move || cudarc::nvrtc::compile_ptx_with_opts(text, opts)) {
        Ok(Ok(ptx)) => Ok(ptx),
        Ok(Err(CompileError::CompileError { log, .. })) => Err(Error::NvrtcCompile {
            kernel: src.name.clone(),
            options: options.join(" "),
            log: log.to_string_lossy().into_owned(),
        }),
        Ok(Err(other)) => Err(Error::NvrtcCompile {
            kernel: src.name.clone(),
            options: options.join(" "),
            log: format!("(no program log) {other}"),
        }),
        Err(_) => Err(Error::NvrtcUnavailable {
            reason: "libnvrtc was loaded but lacks a function cudarc calls (an NVRTC older than the CUDA 13 \
                     this build expects)"
                .into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_name_the_architecture_and_every_define() {
        let src = CudaSource {
            name: "k".into(),
            source: "",
            file: "k.cu",
            entry: "k",
            defines: vec![("BLOCK", "256".into()), ("ELEM", "float".into())],
            static_bytes: 0,
        };
        assert_eq!(
            options(&src, 9, 0),
            ["--gpu-architecture=sm_90", "--maxrregcount=255", "-DBLOCK=256", "-DELEM=float"]
        );
        let big = CudaSource { defines: vec![("BLOCK", "1024".into())], ..src.clone() };
        assert_eq!(options(&big, 9, 0)[1], "--maxrregcount=64");
        let gemm = CudaSource { defines: vec![("BM", "128".into()), ("BN", "64".into())], ..src.clone() };
        assert_eq!(options(&gemm, 9, 0)[1], "--maxrregcount=128");
        assert_eq!(src.define("ELEM"), Some("float"));
        assert!(program_text(&src).contains("#line 1 \"k.cu\""));
    }

    #[test]
    fn a_missing_libnvrtc_is_a_typed_error() {
        if library_present() {
            eprintln!("SKIPPED: libnvrtc is present (a_missing_libnvrtc_is_a_typed_error)");
            return;
        }
        let src = CudaSource {
            name: "k[cuda-static]".into(),
            source: "extern \"C\" __global__ void k() {}",
            file: "k.cu",
            entry: "k",
            defines: vec![],
            static_bytes: 0,
        };
        match compile(&src, 9, 0) {
            Err(e @ Error::NvrtcUnavailable { .. }) => assert!(e.to_string().starts_with("libnvrtc not found:")),
            other => panic!("expected NvrtcUnavailable, got {:?}", other.map(|_| ())),
        }
    }
}
