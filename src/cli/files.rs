//! What the commands share below them: writing and appending to their output files, and the variable
//! that names the timing lock file. `tune_cmd` uses `kt_cmd` and `workers`; this module
//! uses none of them, so the three need not name each other back.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// A file whose lock every config's launches hold (see
/// [`crate::host::tune::RealRunner::timing_lock`]): `--devices` sets it for the workers
/// that share a GPU; set it by hand for shards started by hand on one GPU.
pub const TIMING_LOCK: &str = "DYNSMEM_TIMING_LOCK";

/// Writes `text` to `path`, creating its folder first.
pub fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// The file at `path` opened for appending (created if missing), where a path is given: the
/// `--json` record files.
pub fn append_to(path: Option<&Path>) -> anyhow::Result<Option<std::fs::File>> {
    path.map(|p| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .with_context(|| format!("opening {}", p.display()))
    })
    .transpose()
}

/// Writes `v` to `path` as pretty-printed JSON.
pub fn write_json(path: &Path, v: &serde_json::Value) -> anyhow::Result<()> {
    write_file(path, &serde_json::to_string_pretty(v)?)
}

/// `prefix` with `suffix` appended to its file name (`a/tune-x` -> `a/tune-x.t4.json`).
pub fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}
