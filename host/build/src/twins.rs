//! CUDA C twins compiled ahead of time: the static-`__shared__` kernels the host otherwise
//! compiles with NVRTC at run time (one program per config, sized by `-D` defines), built
//! here with nvcc into cubins that the crate embeds beside its PTX.
//!
//! Which twins: a manifest, one line per twin, tab-separated:
//!
//! ```text
//! <name>\t<source path, from the manifest's directory>\t<file name for #line>\t<entry>\t<options, space-separated>
//! ```
//!
//! (`#` starts a comment line). dynsmem's manifest lists the twins its bench runs on an
//! H100 and is written by the host (`tests/twins.rs`), which knows the configs; this side
//! only compiles what it lists.
//!
//! How a cubin is found at run time: [`key`] over the program text ([`program_text`]), the
//! architecture and the options, the same function the host calls on the source it would
//! hand NVRTC. A cubin whose key the host does not compute (the `.cu` changed and the
//! manifest was not regenerated, another config) is never used: the host compiles with
//! NVRTC as before.
//!
//! nvcc is found through the `cc` crate (`NVCC`, else `nvcc` on `PATH`). Without it the
//! build embeds no cubin and says so with a cargo warning; `DYNSMEM_REQUIRE_NVCC=1` makes
//! that an error.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The environment variables [`compile`] reads.
pub const ENV_VARS: [&str; 3] = ["NVCC", "DYNSMEM_TWIN_ARCHS", "DYNSMEM_REQUIRE_NVCC"];

/// The architectures twins are compiled for when `DYNSMEM_TWIN_ARCHS` is not set: the
/// H100's (`sm_90`, what NVRTC targets on compute capability 9.0).
pub const DEFAULT_ARCHS: &str = "sm_90";

/// The text compiled for a twin: the prelude, then the source with its line numbers
/// restored, so that compiler messages point into the `.cu` file. NVRTC and nvcc compile
/// the same text.
pub fn program_text(prelude: &str, file: &str, source: &str) -> String {
    format!("{prelude}\n#line 1 \"{file}\"\n{source}")
}

/// The `--gpu-architecture` option for `arch` (e.g. `sm_90`).
pub fn arch_option(arch: &str) -> String {
    format!("--gpu-architecture={arch}")
}

/// The identity of one compiled twin: FNV-1a over its program text, architecture and
/// options (in order).
pub fn key(program: &str, arch: &str, options: &[String]) -> u64 {
    let parts = [program.as_bytes(), arch.as_bytes()].into_iter().chain(options.iter().map(|o| o.as_bytes()));
    crate::fnv1a(parts)
}

/// One line of a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TwinSpec {
    /// As records name the kernel (`<entry>[cuda-static,<defines>]`).
    pub name: String,
    /// The `.cu` file, relative to the manifest's directory.
    pub path: PathBuf,
    /// The file name `#line` gives (what NVRTC is told).
    pub file: String,
    pub entry: String,
    /// Every option but the architecture: register cap and defines.
    pub options: Vec<String>,
}

impl TwinSpec {
    /// The manifest line of this twin.
    pub fn line(&self) -> String {
        format!("{}\t{}\t{}\t{}\t{}", self.name, self.path.display(), self.file, self.entry, self.options.join(" "))
    }
}

/// The twins a manifest lists; a malformed line is an error naming it.
pub fn read_manifest(text: &str) -> Result<Vec<TwinSpec>, String> {
    let lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'));
    lines
        .map(|(i, l)| {
            let f: Vec<&str> = l.split('\t').collect();
            let [name, path, file, entry, options] = f[..] else {
                return Err(format!("line {}: {} tab-separated fields, not 5: {l:?}", i + 1, f.len()));
            };
            Ok(TwinSpec {
                name: name.into(),
                path: path.into(),
                file: file.into(),
                entry: entry.into(),
                options: options.split_whitespace().map(String::from).collect(),
            })
        })
        .collect()
}

/// The cubins of a manifest, compiled (or why none were).
#[derive(Debug, Default)]
pub struct Cubins {
    /// `(key, arch, name, path of the cubin)`.
    pub cubins: Vec<(u64, String, String, PathBuf)>,
    /// `nvcc --version`'s last line, where nvcc ran.
    pub nvcc: Option<String>,
    /// Why no cubin was built, where none was.
    pub skipped: Option<String>,
    /// nvcc's message for each twin it rejected (those compile with NVRTC at run time, which
    /// reports the error where the twin is asked for).
    pub rejected: Vec<String>,
}

/// Compiles every twin of the manifest at `manifest` for each architecture of
/// `DYNSMEM_TWIN_ARCHS` (comma-separated, default [`DEFAULT_ARCHS`]) into `out_dir`, with
/// `prelude` prepended (see [`program_text`]); prints the `rerun-if` lines. A cubin whose
/// key is already in `out_dir` for this nvcc's version is kept. Without nvcc this returns no cubins and the reason,
/// and a twin nvcc rejects is listed in [`Cubins::rejected`]; both are errors under
/// `DYNSMEM_REQUIRE_NVCC=1`. An unreadable manifest or source is an error.
pub fn compile(manifest: &Path, prelude: &Path, out_dir: &Path) -> Result<Cubins, String> {
    for var in ENV_VARS {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed={}", manifest.display());
    println!("cargo:rerun-if-changed={}", prelude.display());
    let read = |p: &Path| fs::read_to_string(p).map_err(|e| format!("reading {}: {e}", p.display()));
    let specs = read_manifest(&read(manifest)?).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let prelude = read(prelude)?;
    let dir = manifest.parent().unwrap_or(Path::new("."));
    let require = std::env::var("DYNSMEM_REQUIRE_NVCC").is_ok_and(|v| v == "1");
    let Some(nvcc) = find_nvcc() else {
        let why =
            "no nvcc (set NVCC, or put nvcc on PATH): the CUDA C twins compile with NVRTC at run time".to_string();
        if require {
            return Err(format!("DYNSMEM_REQUIRE_NVCC=1 and {why}"));
        }
        return Ok(Cubins { skipped: Some(why), ..Cubins::default() });
    };
    let version = Command::new(&nvcc).arg("--version").output().ok();
    let version = version.and_then(|o| String::from_utf8_lossy(&o.stdout).lines().last().map(String::from));
    let archs = std::env::var("DYNSMEM_TWIN_ARCHS").unwrap_or_else(|_| DEFAULT_ARCHS.into());
    // A new nvcc (its file, its version) rebuilds every cubin: they are kept per version.
    println!("cargo:rerun-if-changed={}", nvcc.display());
    let stamp = crate::fnv1a([version.as_deref().unwrap_or("").as_bytes()]);
    let twins_dir = out_dir.join("twins").join(format!("{stamp:016x}"));
    fs::create_dir_all(&twins_dir).map_err(|e| format!("creating {}: {e}", twins_dir.display()))?;
    let mut jobs = Vec::new();
    for spec in &specs {
        let path = dir.join(&spec.path);
        println!("cargo:rerun-if-changed={}", path.display());
        let program = program_text(&prelude, &spec.file, &read(&path)?);
        for arch in archs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            let key = key(&program, arch, &spec.options);
            let cubin = twins_dir.join(format!("{key:016x}.cubin"));
            jobs.push((spec, arch.to_string(), key, program.clone(), cubin));
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = jobs.len().div_ceil(threads).max(1);
    let results: Vec<Result<(), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .chunks(chunk)
            .map(|part| {
                let nvcc = &nvcc;
                s.spawn(move || {
                    part.iter()
                        .map(|(spec, arch, _, program, cubin)| build_cubin(nvcc, spec, arch, program, cubin))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|_| vec![Err("an nvcc thread panicked".into())]))
            .collect()
    });
    let mut built = Cubins { nvcc: version, ..Cubins::default() };
    for ((spec, arch, key, _, cubin), result) in jobs.into_iter().zip(results) {
        match result {
            Ok(()) => built.cubins.push((key, arch, spec.name.clone(), cubin)),
            Err(e) => built.rejected.push(e),
        }
    }
    if require && !built.rejected.is_empty() {
        return Err(format!("DYNSMEM_REQUIRE_NVCC=1 and nvcc rejected twins:\n{}", built.rejected.join("\n")));
    }
    Ok(built)
}

/// nvcc, as the `cc` crate finds it (`NVCC`, else `nvcc`), if it runs.
fn find_nvcc() -> Option<PathBuf> {
    let tool = cc::Build::new().cuda(true).cargo_metadata(false).cargo_warnings(false).try_get_compiler().ok()?;
    let path = tool.path().to_path_buf();
    Command::new(&path).arg("--version").output().ok().filter(|o| o.status.success()).map(|_| path)
}

/// One cubin of `spec`, unless it is there already (see [`nvcc_cubin`]).
fn build_cubin(nvcc: &Path, spec: &TwinSpec, arch: &str, program: &str, cubin: &Path) -> Result<(), String> {
    if cubin.exists() {
        return Ok(());
    }
    nvcc_cubin(nvcc, program, arch, &spec.options, cubin).map_err(|e| {
        format!(
            "nvcc rejected the twin {} ({arch}, {} {}):\n{e}",
            spec.name,
            spec.path.display(),
            spec.options.join(" ")
        )
    })
}

/// `program` compiled by `nvcc` into `cubin` for `arch` with `options` (every option but the
/// architecture, as NVRTC gets them), `-cubin` in place of NVRTC's PTX output. The program is
/// written beside the cubin (`.cu`), and the cubin appears only once nvcc succeeded. The
/// error is nvcc's message.
pub fn nvcc_cubin(nvcc: &Path, program: &str, arch: &str, options: &[String], cubin: &Path) -> Result<(), String> {
    let source = cubin.with_extension("cu");
    fs::write(&source, program).map_err(|e| format!("writing {}: {e}", source.display()))?;
    let tmp = cubin.with_extension("cubin.tmp");
    let out = Command::new(nvcc)
        .arg("-cubin")
        .arg(arch_option(arch))
        .args(options)
        .arg("-o")
        .arg(&tmp)
        .arg(&source)
        .output()
        .map_err(|e| format!("starting {}: {e}", nvcc.display()))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    fs::rename(&tmp, cubin).map_err(|e| format!("moving {}: {e}", tmp.display()))
}

impl Cubins {
    /// A module of `pub const TWIN_CUBINS: &[(u64, &str, &str, &[u8])]` (key, arch, name,
    /// cubin) and `TWIN_NVCC` (nvcc's version line, or why there are no cubins), for the
    /// crate to `include!` beside [`crate::Images::module`].
    pub fn module(&self) -> String {
        let mut src = String::new();
        let _ = writeln!(src, "/// CUDA C twins compiled by nvcc at build time: `(key, arch, name, cubin)`.");
        let _ = writeln!(src, "#[allow(dead_code)]");
        let _ = writeln!(src, "pub const TWIN_CUBINS: &[(u64, &str, &str, &[u8])] = &[");
        for (key, arch, name, path) in &self.cubins {
            let _ = writeln!(
                src,
                "    (0x{key:016x}, {arch:?}, {name:?}, include_bytes!({:?})),",
                path.display().to_string()
            );
        }
        let _ = writeln!(src, "];");
        let about = match (&self.nvcc, &self.skipped) {
            (Some(v), _) => format!("nvcc: {v}"),
            (None, Some(why)) => why.clone(),
            (None, None) => "nvcc (version unknown)".into(),
        };
        let _ = writeln!(src, "/// Which nvcc built [`TWIN_CUBINS`], or why none did.");
        let _ = writeln!(src, "#[allow(dead_code)]");
        let _ = writeln!(src, "pub const TWIN_NVCC: &str = {about:?};");
        src
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_lines_read_back() {
        let spec = TwinSpec {
            name: "reduce_f32[cuda-static,block=256,ipt=16]".into(),
            path: "reduce/reduce.cu".into(),
            file: "reduce.cu".into(),
            entry: "reduce_static".into(),
            options: vec!["--maxrregcount=255".into(), "-DBLOCK=256".into()],
        };
        let text = format!("# comment\n\n{}\n", spec.line());
        assert_eq!(read_manifest(&text).unwrap(), vec![spec]);
        let err = read_manifest("a\tb\tc\n").unwrap_err();
        assert!(err.contains("line 1") && err.contains("3 tab-separated fields"), "{err}");
    }

    #[test]
    fn the_key_changes_with_every_input() {
        let base = key("text", "sm_90", &["-DA=1".into()]);
        assert_ne!(base, key("text ", "sm_90", &["-DA=1".into()]));
        assert_ne!(base, key("text", "sm_80", &["-DA=1".into()]));
        assert_ne!(base, key("text", "sm_90", &["-DA=2".into()]));
        assert_ne!(base, key("text", "sm_90", &["-DA=1".into(), String::new()]));
        assert_eq!(base, key("text", "sm_90", &["-DA=1".into()]));
    }
}
