//! Running the `dynsmem` binary from a test: a fresh folder, the command, its output,
//! and the tuner caches it writes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dynsmem::host::report::parse_jsonl_as;
use dynsmem::host::tune::CacheEntry;

/// An empty folder for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dynsmem-tune-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The binary with `args`, without backtraces, with a runtime folder for Vulkan loaders,
/// and without tuning on first use (which keeps its cache in the user's home): a test of it
/// turns it on with its own cache folder.
pub fn dynsmem(args: &[&str]) -> Command {
    let mut cmd = Command::new(super::dynsmem_bin());
    cmd.args(args).env("RUST_BACKTRACE", "0").env("DYNSMEM_AUTOTUNE", "off");
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        cmd.env("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
    cmd
}

/// Runs the binary and returns its stdout; fails the test (with both outputs) if it failed.
pub fn run_ok(args: &[&str]) -> String {
    let out: Output = dynsmem(args).output().expect("running dynsmem");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "dynsmem {} failed: {:?}\n{stdout}\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The entries of a cache file (every complete line must parse) and its torn lines.
pub fn entries(path: &Path) -> (Vec<CacheEntry>, usize) {
    let bytes = std::fs::read(path).unwrap_or_default();
    let (e, torn) = parse_jsonl_as::<CacheEntry>(&bytes, path).unwrap_or_else(|e| panic!("{e}"));
    (e, torn.len())
}

/// The number just before `word` in `text`, e.g. `number_before(s, " measured now")`.
pub fn number_before(text: &str, word: &str) -> usize {
    let at = text.find(word).unwrap_or_else(|| panic!("no {word:?} in:\n{text}"));
    let digits: String =
        text[..at].chars().rev().take_while(|c| c.is_ascii_digit()).collect::<Vec<_>>().into_iter().rev().collect();
    digits.parse().unwrap_or_else(|_| panic!("no number before {word:?} in:\n{text}"))
}

/// A small CPU sweep: reduce with 3 x 3 x 2 = 18 configs.
pub fn small_sweep(cache: &Path, n: &str) -> Vec<String> {
    let args =
        "tune reduce --backend cpu --repeats 3 --warmup 1 --warmup-ms 0 --values block=4,8,16 --values ipt=8,16,32";
    let mut v: Vec<String> = args.split(' ').map(String::from).collect();
    v.extend(["--n".into(), n.into(), "--cache".into(), cache.to_str().unwrap().into()]);
    v
}

/// `&str`s of `v`.
pub fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Each config of a cache with its outcome (T4 validity class, verified), sorted: what two
/// sweeps of one space must agree on (their times are measurements and differ).
pub fn outcomes(cache: &Path) -> Vec<(std::collections::BTreeMap<String, u32>, String, bool)> {
    let mut v: Vec<_> =
        entries(cache).0.into_iter().map(|e| (e.tune.params, e.tune.invalidity, e.record.verified)).collect();
    v.sort();
    v
}
