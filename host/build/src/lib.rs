//! `dynsmem-build`: compiles a `#![no_std]` kernel crate for the GPU targets from a build
//! script and embeds the images. dynsmem's own `build.rs` calls it for `device-kernels`,
//! and a researcher's crate calls it for a kernel crate of its own
//! (`examples/own-kernel/build.rs`):
//!
//! ```no_run
//! // The body of build.rs's `main`:
//! let images = dynsmem_build::Builder::new("kernels").build().unwrap_or_else(|e| panic!("{e}"));
//! let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
//! images.write_module(&out.join("kernels.rs")).expect("writing kernels.rs");
//! dynsmem_build::emit_provenance(std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
//! // src/main.rs: mod images { include!(concat!(env!("OUT_DIR"), "/kernels.rs")); }
//! ```
//!
//! For each target this runs a nested `cargo rustc --crate-type cdylib -Zbuild-std=core`
//! with its own target directory (sharing the outer one deadlocks on its lock) and a
//! scrubbed environment (the outer build's `CARGO_*`, `RUSTC*`, `RUSTFLAGS` and
//! `RUSTUP_TOOLCHAIN` would leak host flags and the wrong compiler into the GPU build),
//! copies each image into `$OUT_DIR`, and [`Images::write_module`] writes a module of
//! `pub const` images (`PTX`, `PTX_ARCH`, `PTX_VERSION`, `AMDGPU`, `CHECKED`) for the
//! crate to `include!`.
//!
//! Settings read by [`Builder::new`] (environment; the builder's methods override them):
//! - `DYNSMEM_CUDA_ARCH` (default `sm_90`) and `DYNSMEM_CUDA_PTX` (default `ptx80`): the
//!   PTX target, e.g. `sm_80` + `ptx75` for an image that also loads on an A100.
//! - `DYNSMEM_AMDGPU_ARCH` (default `gfx90a,gfx942`): one or more comma-separated `gfx`
//!   names (gfx1100 and other RDNA targets build too; each arch compiles `core` once).
//! - `DYNSMEM_KERNELS_CHECKED=1`: builds the kernel crate with its `checked` feature
//!   (dynsmem's kernels bounds-check every shared-memory access on the device with it).
//! - `DYNSMEM_DEVICE_IMAGES=none`: builds no GPU image (`PTX` is empty, `AMDGPU` is `&[]`,
//!   so the CUDA and HIP backends find no kernel): for loops that run only the CPU backend,
//!   such as mutation testing, where rebuilding the images is most of each build.
//!
//! The toolchain is the one `rust-toolchain.toml` pins for the kernel crate's directory
//! (rustup looks for it there and in its parents): a nightly with `rust-src`,
//! `llvm-tools` and `llvm-bitcode-linker`. A missing piece is an [`Error`] whose message
//! says what to install.

use std::env;
use std::fmt::{self, Write as _};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

pub mod twins;

/// What to do when the toolchain is missing or incomplete.
pub const TOOLCHAIN_FIX: &str = "run `rustup toolchain install` in the project root: it reads rust-toolchain.toml and \
installs the pinned nightly with rust-src, llvm-tools and llvm-bitcode-linker (the GPU targets build `core` from \
source; there is no prebuilt rust-std for nvptx64 or amdgcn)";

/// The environment variables [`Builder::new`] reads.
pub const ENV_VARS: [&str; 5] = [
    "DYNSMEM_CUDA_ARCH",
    "DYNSMEM_CUDA_PTX",
    "DYNSMEM_AMDGPU_ARCH",
    "DYNSMEM_KERNELS_CHECKED",
    "DYNSMEM_DEVICE_IMAGES",
];

/// Why the kernel images could not be built. Its `Display` says what happened and, for a
/// toolchain problem, what to install: a build script panics with it.
#[derive(Debug)]
pub enum Error {
    /// A variable cargo sets for build scripts is missing (not run from a build script?).
    Env { var: &'static str },
    /// The kernel crate's `Cargo.toml` could not be read or names no package.
    Manifest { path: PathBuf, reason: String },
    /// `rustc --print sysroot` failed: the pinned toolchain is not installed.
    Toolchain { stderr: String },
    /// `rustc` could not be started at all.
    NoRustc(io::Error),
    /// The `rust-src` component is missing.
    NoRustSrc { sysroot: PathBuf },
    /// The `llvm-bitcode-linker` component is missing.
    NoBitcodeLinker { sysroot: PathBuf },
    /// The nested cargo could not be started.
    CargoStart { triple: String, source: io::Error },
    /// The nested cargo failed: its stderr.
    Build { krate: String, triple: String, cpu: String, stderr: String },
    /// The nested cargo reported success but left no image at the path it builds to.
    ImageMissing { triple: String, path: PathBuf },
    /// A [`Builder::max_registers`] entry is not in the PTX.
    EntryMissing { entry: String },
    /// Copying an image into `OUT_DIR` failed.
    Copy { from: PathBuf, to: PathBuf, source: io::Error },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Env { var } => write!(f, "dynsmem-build: {var} is not set (run from a build script, by cargo)"),
            Error::Manifest { path, reason } => write!(f, "dynsmem-build: reading {}: {reason}", path.display()),
            Error::Toolchain { stderr } => write!(
                f,
                "\n\ndynsmem: the pinned nightly toolchain is not usable:\n{stderr}\nTo fix: {TOOLCHAIN_FIX}\n"
            ),
            Error::NoRustc(e) => {
                write!(f, "\n\ndynsmem: cannot run rustc ({e}).\nTo fix: install rustup, then {TOOLCHAIN_FIX}\n")
            }
            Error::NoRustSrc { sysroot } => write!(
                f,
                "\n\ndynsmem: the `rust-src` component is missing from {}.\nTo fix: {TOOLCHAIN_FIX}\n",
                sysroot.display()
            ),
            Error::NoBitcodeLinker { sysroot } => write!(
                f,
                "\n\ndynsmem: the `llvm-bitcode-linker` component (needed to link nvptx64 PTX) is missing from {}.\nTo fix: {TOOLCHAIN_FIX}\n",
                sysroot.display()
            ),
            Error::CargoStart { triple, source } => {
                write!(f, "\n\ndynsmem: cannot start cargo for {triple} ({source}).\nTo fix: {TOOLCHAIN_FIX}\n")
            }
            Error::Build { krate, triple, cpu, stderr } => write!(
                f,
                "\n\ndynsmem: building {krate} for {triple} ({cpu}) failed:\n{stderr}\nIf this is a toolchain problem: {TOOLCHAIN_FIX}\n"
            ),
            Error::ImageMissing { triple, path } => {
                write!(f, "dynsmem: the {triple} build succeeded but {} is missing", path.display())
            }
            Error::EntryMissing { entry } => write!(
                f,
                "dynsmem: PTX entry {entry} (named by an entry directive: a register cap or a cluster size) not found"
            ),
            Error::Copy { from, to, source } => write!(f, "copying {} to {}: {source}", from.display(), to.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::NoRustc(e) | Error::CargoStart { source: e, .. } | Error::Copy { source: e, .. } => Some(e),
            _ => None,
        }
    }
}

/// Compiles one kernel crate for `nvptx64-nvidia-cuda` and `amdgcn-amd-amdhsa`.
#[derive(Debug, Clone)]
pub struct Builder {
    crate_dir: PathBuf,
    cuda_arch: String,
    cuda_ptx: String,
    amdgpu: Vec<String>,
    features: Vec<String>,
    checked: bool,
    max_registers: Vec<(String, u32)>,
    clusters: Vec<(String, u32)>,
    target_dir: Option<PathBuf>,
    no_images: bool,
}

impl Builder {
    /// `crate_dir`: the kernel crate (the folder of its `Cargo.toml`), relative to
    /// `CARGO_MANIFEST_DIR` or absolute. Defaults come from `DYNSMEM_CUDA_ARCH` (`sm_90`),
    /// `DYNSMEM_CUDA_PTX` (`ptx80`), `DYNSMEM_AMDGPU_ARCH` (`gfx90a,gfx942`) and
    /// `DYNSMEM_KERNELS_CHECKED` (`1`: the crate's `checked` feature).
    pub fn new(crate_dir: impl AsRef<Path>) -> Builder {
        Builder {
            crate_dir: crate_dir.as_ref().to_path_buf(),
            cuda_arch: env::var("DYNSMEM_CUDA_ARCH").unwrap_or_else(|_| "sm_90".into()),
            cuda_ptx: env::var("DYNSMEM_CUDA_PTX").unwrap_or_else(|_| "ptx80".into()),
            amdgpu: env::var("DYNSMEM_AMDGPU_ARCH")
                .unwrap_or_else(|_| "gfx90a,gfx942".into())
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            features: Vec::new(),
            checked: env::var("DYNSMEM_KERNELS_CHECKED").is_ok_and(|v| v == "1"),
            max_registers: Vec::new(),
            clusters: Vec::new(),
            target_dir: None,
            no_images: false,
        }
    }

    /// The PTX target: `-Ctarget-cpu=<arch>` (e.g. `sm_90`) and `+<ptx>` (e.g. `ptx80`).
    pub fn cuda(mut self, arch: &str, ptx: &str) -> Self {
        self.cuda_arch = arch.into();
        self.cuda_ptx = ptx.into();
        self
    }

    /// The AMD code objects, one per `gfx` name; empty: no AMD image (`AMDGPU` is `&[]`).
    pub fn amdgpu(mut self, archs: &[&str]) -> Self {
        self.amdgpu = archs.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Cargo features of the kernel crate to enable for the GPU builds.
    pub fn features(mut self, f: &[&str]) -> Self {
        self.features.extend(f.iter().map(|s| s.to_string()));
        self
    }

    /// Builds with the kernel crate's `checked` feature (default: `DYNSMEM_KERNELS_CHECKED=1`).
    pub fn checked(mut self, checked: bool) -> Self {
        self.checked = checked;
        self
    }

    /// PTX entries whose registers per thread ptxas must keep at or under a cap: a
    /// `.maxnreg` directive after each one's parameter list (Rust has no attribute for it).
    /// A listed entry missing from the PTX fails the build, so a rename cannot silently
    /// drop its cap.
    pub fn max_registers(mut self, caps: &[(&str, u32)]) -> Self {
        self.max_registers.extend(caps.iter().map(|&(e, r)| (e.to_string(), r)));
        self
    }

    /// PTX entries launched as clusters of `n` blocks (`.reqnctapercluster n, 1, 1` after
    /// each one's parameter list: sm_90 thread-block clusters, whose blocks share shared
    /// memory and barriers; a plain launch then forms the clusters, and its grid must be a
    /// multiple of `n`). A listed entry missing from the PTX fails the build.
    pub fn clusters(mut self, dims: &[(&str, u32)]) -> Self {
        self.clusters.extend(dims.iter().map(|&(e, n)| (e.to_string(), n)));
        self
    }

    /// The nested builds' target directory (one subfolder per GPU arch). Default:
    /// `<workspace>/target/kernels`, the workspace being the nearest folder at or above
    /// `CARGO_MANIFEST_DIR` whose `Cargo.toml` has a `[workspace]` table. A fixed folder
    /// (not one under `OUT_DIR`) builds `core` once for every outer profile.
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = Some(dir.into());
        self
    }

    /// Compiles the kernel crate for every target and copies the images into `OUT_DIR`
    /// (as `<lib>_<arch>.ptx` / `.elf`). Prints the `cargo:rerun-if-*` lines for the
    /// crate's folder and the settings.
    /// Builds no GPU image when `skip` (as `DYNSMEM_DEVICE_IMAGES=none` does): for a crate
    /// whose images are optional (`dynsmem`'s built-in kernels, off without its
    /// `builtin-images` feature).
    pub fn skip_images(mut self, skip: bool) -> Builder {
        self.no_images = skip;
        self
    }

    pub fn build(self) -> Result<Images, Error> {
        let manifest_dir =
            PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").ok_or(Error::Env { var: "CARGO_MANIFEST_DIR" })?);
        let out_dir = PathBuf::from(env::var_os("OUT_DIR").ok_or(Error::Env { var: "OUT_DIR" })?);
        let crate_dir = manifest_dir.join(&self.crate_dir);
        println!("cargo:rerun-if-changed={}", self.crate_dir.display());
        for var in ENV_VARS {
            println!("cargo:rerun-if-env-changed={var}");
        }
        let manifest = crate_dir.join("Cargo.toml");
        let (package, lib) = crate_names(&manifest)?;
        // Messages name the crate by its folder, as the folder is what the user edits.
        let label = crate_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| package.clone());
        let target_dir = match &self.target_dir {
            Some(d) => manifest_dir.join(d),
            None => workspace_root(&manifest_dir).join("target/kernels"),
        };

        if self.no_images || env::var("DYNSMEM_DEVICE_IMAGES").is_ok_and(|v| v == "none") {
            let ptx = out_dir.join(format!("{lib}_none.ptx"));
            fs::write(&ptx, "").map_err(|source| Error::Copy { from: ptx.clone(), to: ptx.clone(), source })?;
            return Ok(Images {
                package,
                ptx,
                ptx_arch: "none".into(),
                ptx_version: "none".into(),
                amdgpu: Vec::new(),
                checked: self.checked,
            });
        }
        let sysroot = check_toolchain(&crate_dir)?;
        let mut targets = vec![Target {
            triple: "nvptx64-nvidia-cuda",
            cpu: self.cuda_arch.clone(),
            features: Some(format!("+{}", self.cuda_ptx)),
            ext: "ptx",
        }];
        for arch in &self.amdgpu {
            targets.push(Target { triple: "amdgcn-amd-amdhsa", cpu: arch.clone(), features: None, ext: "elf" });
        }
        let mut features = self.features.clone();
        if self.checked {
            features.push("checked".into());
        }
        let caps: Vec<(&str, u32)> = self.max_registers.iter().map(|(e, r)| (e.as_str(), *r)).collect();
        // Clusters exist from sm_90 (and PTX 7.8) on: below, ptxas refuses the directive, and
        // the cluster entries are sm_90a kernels that trap there anyway, launched by no one.
        let cluster_arch = sm_number(&self.cuda_arch).is_some_and(|n| n >= 90);
        let clusters: Vec<(&str, String)> = self
            .clusters
            .iter()
            .filter(|_| cluster_arch)
            .map(|(e, n)| (e.as_str(), format!(".reqnctapercluster {n}, 1, 1")))
            .collect();

        let spec =
            Nested { crate_dir: &crate_dir, label: &label, lib: &lib, target_dir: &target_dir, features: &features };
        let mut images = Vec::new();
        for (target, image) in targets.iter().zip(build_targets(&sysroot, &targets, &spec)?) {
            let dest = out_dir.join(format!("{lib}_{}.{}", target.cpu, target.ext));
            let copy_err = |source| Error::Copy { from: image.clone(), to: dest.clone(), source };
            if target.ext == "ptx" {
                let ptx = fs::read_to_string(&image).map_err(copy_err)?;
                let capped = entry_directives(&cap_registers(&ptx, &caps)?, &clusters)?;
                replace_with(&dest, |tmp| fs::write(tmp, &capped)).map_err(copy_err)?;
            } else {
                replace_with(&dest, |tmp| fs::copy(&image, tmp).map(drop)).map_err(copy_err)?;
            }
            images.push(dest);
        }
        let amdgpu = self.amdgpu.iter().cloned().zip(images[1..].iter().cloned()).collect();
        Ok(Images {
            package,
            ptx: images[0].clone(),
            ptx_arch: self.cuda_arch,
            ptx_version: self.cuda_ptx,
            amdgpu,
            checked: self.checked,
        })
    }
}

/// The images a [`Builder`] made, in `OUT_DIR`.
#[derive(Debug, Clone)]
pub struct Images {
    /// The kernel crate's package name.
    pub package: String,
    /// The PTX, `.maxnreg` caps applied.
    pub ptx: PathBuf,
    pub ptx_arch: String,
    pub ptx_version: String,
    /// `(gfx arch, code object)`.
    pub amdgpu: Vec<(String, PathBuf)>,
    pub checked: bool,
}

impl Images {
    /// The text of the module that embeds the images: `PTX`, `PTX_ARCH`, `PTX_VERSION`,
    /// `AMDGPU` (each code object 16-byte aligned), `CHECKED` and `IMAGE_INFO`. Each item carries
    /// `#[allow(dead_code)]`: a crate that uses some of them (only `PTX`, say) gets no
    /// "never used" warning for the others. The attribute is per item, not an inner
    /// `#![allow]`, because the text is `include!`d inside the crate's `mod images { .. }`,
    /// where an inner attribute is not accepted.
    pub fn module(&self) -> String {
        const ALLOW: &str = "#[allow(dead_code)]";
        let mut src = String::new();
        let _ = writeln!(src, "// Generated by build.rs: the device images of `{}`.", self.package);
        let _ = writeln!(src, "/// PTX for `nvptx64-nvidia-cuda`, built for [`PTX_ARCH`] with [`PTX_VERSION`].");
        let _ = writeln!(src, "{ALLOW}");
        let _ = writeln!(src, "pub const PTX: &str = include_str!({:?});", self.ptx.display().to_string());
        let _ = writeln!(src, "/// The `-Ctarget-cpu` of [`PTX`].");
        let _ = writeln!(src, "{ALLOW}");
        let _ = writeln!(src, "pub const PTX_ARCH: &str = {:?};", self.ptx_arch);
        let _ = writeln!(src, "/// The PTX ISA version feature of [`PTX`].");
        let _ = writeln!(src, "{ALLOW}");
        let _ = writeln!(src, "pub const PTX_VERSION: &str = {:?};", self.ptx_version);
        let _ = writeln!(src, "/// Keeps an embedded ELF 16-byte aligned, as ELF readers and loaders expect.");
        let _ = writeln!(src, "{ALLOW}");
        let _ = writeln!(src, "#[repr(C, align(16))]");
        let _ = writeln!(src, "struct Aligned<T: ?Sized>(T);");
        let _ =
            writeln!(src, "/// HSA code objects (ELF) for `amdgcn-amd-amdhsa`, one per `gfx` target: `(arch, image)`.");
        let _ = writeln!(src, "{ALLOW}");
        let _ = writeln!(src, "pub const AMDGPU: &[(&str, &[u8])] = &[");
        for (arch, path) in &self.amdgpu {
            let len = fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            let _ = writeln!(
                src,
                "    ({arch:?}, {{ const IMAGE: &Aligned<[u8; {len}]> = &Aligned(*include_bytes!({:?})); &IMAGE.0 }}),",
                path.display().to_string()
            );
        }
        let _ = writeln!(src, "];");
        let _ = writeln!(
            src,
            "/// Whether the images bounds-check every shared-memory access (`DYNSMEM_KERNELS_CHECKED=1`)."
        );
        let _ = writeln!(src, "{ALLOW}");
        let _ = writeln!(src, "pub const CHECKED: bool = {};", self.checked);
        let _ = writeln!(
            src,
            "/// The images' identity for tuning caches and records: `[hash, rustc, commit]` (the hash is \
             FNV-1a over the PTX and the code objects; rustc and commit from `emit_provenance`, else \"unknown\")."
        );
        let _ = writeln!(src, "{ALLOW}");
        let _ = writeln!(
            src,
            "pub const IMAGE_INFO: [&str; 3] = [{:?}, match option_env!(\"DYNSMEM_RUSTC\") {{ Some(v) => v, None => \"unknown\" }}, \
             match option_env!(\"DYNSMEM_GIT_COMMIT\") {{ Some(v) => v, None => \"unknown\" }}];",
            self.hash()
        );
        src
    }

    /// FNV-1a (64-bit) over the PTX and every code object, each prefixed by its length: 16
    /// hex digits naming this build of the images (an unreadable file hashes as empty).
    pub fn hash(&self) -> String {
        let files = std::iter::once(&self.ptx).chain(self.amdgpu.iter().map(|(_, p)| p));
        let contents: Vec<Vec<u8>> = files.map(|f| fs::read(f).unwrap_or_default()).collect();
        format!("{:016x}", fnv1a(contents.iter().map(Vec::as_slice)))
    }

    /// Writes [`Images::module`] to `path` (through a temporary and a rename).
    pub fn write_module(&self, path: &Path) -> io::Result<()> {
        let src = self.module();
        replace_with(path, |tmp| fs::write(tmp, &src))
    }
}

/// FNV-1a (64-bit) over `parts`, each prefixed by its length (so that moving bytes from
/// one part to the next changes the hash).
pub fn fnv1a<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in (part.len() as u64).to_le_bytes().iter().chain(part) {
            h ^= *b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

struct Target {
    triple: &'static str,
    cpu: String,
    features: Option<String>,
    /// Extension of the linked image in the target directory.
    ext: &'static str,
}

/// What the nested cargo builds, and where.
struct Nested<'a> {
    crate_dir: &'a Path,
    label: &'a str,
    lib: &'a str,
    target_dir: &'a Path,
    features: &'a [String],
}

/// The package name and library name (`[lib] name`, else the package name with `-` as
/// `_`) of a `Cargo.toml`, by a line-based read of its `[package]` and `[lib]` tables.
pub fn crate_names(manifest: &Path) -> Result<(String, String), Error> {
    let text = fs::read_to_string(manifest)
        .map_err(|e| Error::Manifest { path: manifest.to_path_buf(), reason: e.to_string() })?;
    let (mut section, mut package, mut lib) = (String::new(), None, None);
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            section = line.trim_matches(|c| c == '[' || c == ']').trim().to_string();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if key.trim() != "name" {
            continue;
        }
        let value = value.trim().trim_matches('"').to_string();
        match section.as_str() {
            "package" => package = Some(value),
            "lib" => lib = Some(value),
            _ => {}
        }
    }
    let package = package.ok_or_else(|| Error::Manifest {
        path: manifest.to_path_buf(),
        reason: "no `name = \"...\"` in its [package] table".into(),
    })?;
    let lib = lib.unwrap_or_else(|| package.replace('-', "_"));
    Ok((package, lib))
}

/// The nearest folder at or above `dir` whose `Cargo.toml` has a `[workspace]` table
/// (`dir` itself when none does).
fn workspace_root(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|d| fs::read_to_string(d.join("Cargo.toml")).is_ok_and(|t| t.lines().any(|l| l.trim() == "[workspace]")))
        .unwrap_or(dir)
        .to_path_buf()
}

/// `ptx` with a `.maxnreg` directive after the parameter list of each `caps` entry. A
/// listed entry missing from the PTX is an error, so a rename cannot silently drop its cap.
pub fn cap_registers(ptx: &str, caps: &[(&str, u32)]) -> Result<String, Error> {
    let directives: Vec<(&str, String)> = caps.iter().map(|&(e, r)| (e, format!(".maxnreg {r}"))).collect();
    entry_directives(ptx, &directives)
}

/// The number of an `sm_NN` / `sm_NNa` arch (`sm_90a` -> 90).
fn sm_number(arch: &str) -> Option<u32> {
    arch.strip_prefix("sm_")?.trim_end_matches(|c: char| c.is_ascii_alphabetic()).parse().ok()
}

/// `ptx` with each `(entry, directive)`'s directive (`.maxnreg 128`, `.reqnctapercluster 2,
/// 1, 1`) after that entry's parameter list. A missing entry is an error.
pub fn entry_directives(ptx: &str, directives: &[(&str, String)]) -> Result<String, Error> {
    let mut out = ptx.to_string();
    for (entry, directive) in directives {
        let head = format!(".entry {entry}(");
        let start = out.find(&head).ok_or_else(|| Error::EntryMissing { entry: entry.to_string() })?;
        let body = out[start..]
            .find("\n{")
            .map(|i| start + i)
            .ok_or_else(|| Error::EntryMissing { entry: entry.to_string() })?;
        out.insert_str(body, &format!("\n{directive}"));
    }
    Ok(out)
}

/// Writes `dest` through a temporary beside it and a rename, so a build killed mid-write
/// never leaves a truncated image or module that a later build would embed.
pub fn replace_with(dest: &Path, write: impl FnOnce(&Path) -> io::Result<()>) -> io::Result<()> {
    let mut tmp = dest.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    write(&tmp)?;
    fs::File::open(&tmp)?.sync_all()?;
    fs::rename(&tmp, dest)
}

/// The environment for child cargo/rustc processes: everything the outer build set for
/// itself removed, user network settings kept.
pub fn scrubbed(cmd: &mut Command) -> &mut Command {
    for (key, _) in env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let keep = key == "CARGO_HOME"
            || key.starts_with("CARGO_NET_")
            || key.starts_with("CARGO_HTTP_")
            || key.starts_with("CARGO_REGISTRIES_")
            || key.starts_with("CARGO_REGISTRY_");
        let drop = (key.starts_with("CARGO") && !keep)
            || key.starts_with("RUSTC")
            || key.starts_with("RUSTDOC")
            || key == "RUSTFLAGS"
            || key == "RUSTUP_TOOLCHAIN"
            || key == "RUST_RECURSION_COUNT"
            || key == "MAKEFLAGS"
            || key == "MFLAGS"
            || key == "TARGET"
            || key == "HOST"
            || key == "OUT_DIR"
            || key == "OPT_LEVEL"
            || key == "PROFILE"
            || key == "DEBUG"
            || key == "NUM_JOBS";
        if drop {
            cmd.env_remove(key);
        }
    }
    cmd
}

/// The sysroot of the toolchain `rust-toolchain.toml` selects for `dir`. Fails early,
/// with the command to run, when the pinned nightly or a component is missing.
pub fn check_toolchain(dir: &Path) -> Result<PathBuf, Error> {
    let out = scrubbed(Command::new("rustc").args(["--print", "sysroot"]).current_dir(dir)).output();
    let sysroot = match out {
        Ok(o) if o.status.success() => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
        Ok(o) => return Err(Error::Toolchain { stderr: String::from_utf8_lossy(&o.stderr).into_owned() }),
        Err(e) => return Err(Error::NoRustc(e)),
    };
    let rustlib = sysroot.join("lib/rustlib");
    if !rustlib.join("src/rust/library/core/Cargo.toml").exists() {
        return Err(Error::NoRustSrc { sysroot });
    }
    let has_linker = fs::read_dir(&rustlib).into_iter().flatten().flatten().any(|host| {
        let bin = host.path().join("bin");
        bin.join("llvm-bitcode-linker").exists() || bin.join("self-contained/llvm-bitcode-linker").exists()
    });
    if !has_linker {
        return Err(Error::NoBitcodeLinker { sysroot });
    }
    Ok(sysroot)
}

/// Builds the kernel crate for every target, several at once: each target has a target
/// folder of its own (no cargo lock between them), and each nested build is mostly one rustc
/// with one codegen unit, so built one after another they leave all cores but one idle. As
/// many at a time as cargo's jobs for this build script (`NUM_JOBS`), else the cores. The
/// images in the targets' order; the first target's error if several fail.
fn build_targets(sysroot: &Path, targets: &[Target], spec: &Nested<'_>) -> Result<Vec<PathBuf>, Error> {
    let jobs = env::var("NUM_JOBS")
        .ok()
        .and_then(|j| j.parse::<usize>().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let built: Vec<std::sync::Mutex<Option<Result<PathBuf, Error>>>> =
        targets.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, targets.len().max(1)) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(target) = targets.get(i) else { break };
                    let image = build_target(sysroot, target, spec);
                    *built[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(image);
                }
            });
        }
    });
    built
        .into_iter()
        .map(|slot| slot.into_inner().unwrap_or_else(|e| e.into_inner()).expect("every target is taken by a worker"))
        .collect()
}

/// Builds the kernel crate for one target (a nested `cargo rustc --crate-type cdylib
/// -Zbuild-std=core`); returns the linked image.
fn build_target(sysroot: &Path, target: &Target, spec: &Nested<'_>) -> Result<PathBuf, Error> {
    // One target dir per GPU arch: `core` is built once per arch and flags never flip-flop.
    let target_dir = spec.target_dir.join(&target.cpu);
    // No merging of identical functions: LLVM makes a merged kernel an alias, which has no
    // kernel descriptor on amdgpu (the link then fails on its `.kd` symbol). Entries whose
    // every path traps on an architecture (sm_90a-only ones on amdgpu) are identical there.
    let mut flags = vec![format!("-Ctarget-cpu={}", target.cpu), "-Zmerge-functions=disabled".to_string()];
    if let Some(f) = &target.features {
        flags.push(format!("-Ctarget-feature={f}"));
    }
    // The toolchain's own binaries, by path: cargo runs rustc for `core` inside the
    // sysroot's source tree, where a rustup proxy would not see rust-toolchain.toml and
    // would pick the default (stable) compiler.
    let bin = sysroot.join("bin");
    let cargo = if bin.join("cargo").exists() {
        bin.join("cargo").into_os_string()
    } else {
        env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
    };
    let mut cmd = Command::new(cargo);
    scrubbed(&mut cmd)
        .current_dir(spec.crate_dir)
        .env("RUSTC", bin.join("rustc"))
        .args(["rustc", "--release", "--manifest-path"])
        .arg(spec.crate_dir.join("Cargo.toml"))
        .args(["--lib", "--crate-type", "cdylib", "--target", target.triple, "-Zbuild-std=core", "--target-dir"])
        .arg(&target_dir)
        .env("CARGO_ENCODED_RUSTFLAGS", flags.join("\x1f"))
        .env("CARGO_PROFILE_RELEASE_PANIC", "abort")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS", "false")
        .env("CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS", "false");
    if !spec.features.is_empty() {
        cmd.args(["--features", &spec.features.join(",")]);
    }
    let out = cmd.output().map_err(|source| Error::CargoStart { triple: target.triple.into(), source })?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(Error::Build {
            krate: spec.label.into(),
            triple: target.triple.into(),
            cpu: target.cpu.clone(),
            stderr: stderr.into_owned(),
        });
    }
    for line in stderr.lines().filter(|l| l.starts_with("warning")) {
        println!("cargo:warning={} ({}): {line}", spec.label, target.triple);
    }
    let image = target_dir.join(target.triple).join("release").join(format!("{}.{}", spec.lib, target.ext));
    if !image.exists() {
        return Err(Error::ImageMissing { triple: target.triple.into(), path: image });
    }
    Ok(image)
}

/// Records the rustc and git commit the binary was built from, for result provenance:
/// `cargo:rustc-env=DYNSMEM_RUSTC` and `DYNSMEM_GIT_COMMIT` (the variable of that name
/// when set, else `git rev-parse` in `root`, `-dirty` with uncommitted changes), and
/// reruns when either changes.
pub fn emit_provenance(root: &Path) {
    println!("cargo:rerun-if-env-changed=DYNSMEM_GIT_COMMIT");
    let rustc = scrubbed(Command::new("rustc").arg("-V").current_dir(root))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=DYNSMEM_RUSTC={rustc}");

    // `--no-optional-locks`: `git status` would otherwise refresh and rewrite `.git/index`,
    // which this script watches, so every cargo command in a dirty tree would rerun it.
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("--no-optional-locks")
            .args(args)
            .current_dir(root)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = env::var("DYNSMEM_GIT_COMMIT").ok().or_else(|| {
        let head = git(&["rev-parse", "--short=12", "HEAD"])?;
        let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        Some(if dirty { format!("{head}-dirty") } else { head })
    });
    println!("cargo:rustc-env=DYNSMEM_GIT_COMMIT={}", commit.unwrap_or_else(|| "unknown".into()));
    // A commit rewrites the index and the branch's ref; a checkout rewrites HEAD. (Only
    // where `root` is the repository's top: a crate deeper in a repository reruns on its
    // own files.)
    let mut watch = vec![".git/HEAD".to_string(), ".git/index".to_string(), ".git/packed-refs".to_string()];
    if let Ok(head) = fs::read_to_string(root.join(".git/HEAD"))
        && let Some(r) = head.strip_prefix("ref: ")
    {
        watch.push(format!(".git/{}", r.trim()));
    }
    for f in watch.iter().filter(|f| root.join(f).exists()) {
        println!("cargo:rerun-if-changed={f}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_registers_after_the_parameter_list() {
        let ptx = ".visible .entry k(\n.param .u64 a\n)\n{\nret;\n}\n";
        let out = cap_registers(ptx, &[("k", 128)]).unwrap();
        assert_eq!(out, ".visible .entry k(\n.param .u64 a\n)\n.maxnreg 128\n{\nret;\n}\n");
        assert!(matches!(cap_registers(ptx, &[("gone", 64)]), Err(Error::EntryMissing { .. })));
    }

    #[test]
    fn sm_numbers_of_archs() {
        assert_eq!([sm_number("sm_80"), sm_number("sm_90a"), sm_number("sm_100f")], [Some(80), Some(90), Some(100)]);
        assert_eq!(sm_number("gfx942"), None);
    }

    /// Every item of the generated module allows `dead_code`, so a crate that uses only
    /// some of the images gets no warning for the rest.
    #[test]
    fn generated_items_allow_dead_code() {
        let images = Images {
            package: "k".into(),
            ptx: "k.ptx".into(),
            ptx_arch: "sm_90".into(),
            ptx_version: "ptx80".into(),
            amdgpu: vec![("gfx942".into(), "k.hsaco".into())],
            checked: false,
        };
        let src = images.module();
        let lines: Vec<&str> = src.lines().collect();
        let items: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].starts_with("pub const ") || lines[i].starts_with("struct "))
            .collect();
        assert_eq!(items.len(), 7, "{src}");
        for i in items {
            let mut attrs = lines[..i].iter().rev().take_while(|l| l.starts_with("#["));
            assert!(attrs.any(|l| *l == "#[allow(dead_code)]"), "no allow before {:?}:\n{src}", lines[i]);
        }
        assert!(!src.contains("#!["), "an inner attribute is not valid in the crate's `mod images {{ .. }}`");
    }

    #[test]
    fn reads_package_and_lib_names() {
        let dir = env::temp_dir().join(format!("dynsmem-build-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let m = dir.join("Cargo.toml");
        fs::write(
            &m,
            "[package]\nname = \"my-kernels\" # the name\nversion = \"0.1.0\"\n[dependencies]\nname = \"x\"\n",
        )
        .unwrap();
        assert_eq!(crate_names(&m).unwrap(), ("my-kernels".to_string(), "my_kernels".to_string()));
        fs::write(&m, "[lib]\nname = \"k\"\n[package]\nname = \"my-kernels\"\n").unwrap();
        assert_eq!(crate_names(&m).unwrap(), ("my-kernels".to_string(), "k".to_string()));
        fs::remove_dir_all(&dir).unwrap();
    }
}
