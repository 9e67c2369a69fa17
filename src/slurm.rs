//! `tune ... --slurm DIR`: a sweep as a Slurm job array. One array task per shard runs
//! `dynsmem tune ... --shard I/N` (with a GPU each through `--gres`), and a merge job
//! that depends on the array joins the shards' caches (`dynsmem merge`). Slurm does the
//! scheduling; this module only writes the scripts.
//!
//! The folder gets:
//! - `tune.sbatch`: the array, `--array=1-N`, the task's shard from `SLURM_ARRAY_TASK_ID`;
//! - `merge.sbatch`: the merge and the merged report;
//! - `submit.sh`: submits both, the merge with `--dependency=afterok:<array>`, and prints
//!   `array <id> merge <id>`.
//!
//! Paths in the scripts are absolute (the binary, the caches, the logs), and the jobs run
//! in the folder `tune` was started from (`--chdir`), so the scripts can be submitted
//! from anywhere. A failed task leaves its finished configs in its shard cache: resubmit
//! the array (or `sbatch --array=I tune.sbatch` for task I alone), and only its unfinished
//! configs run; then submit `merge.sbatch`.

use std::path::{Path, PathBuf};

use dynsmem_host::tune::Shard;

/// What the scripts are made of.
#[derive(Debug, Clone)]
pub struct SlurmJob {
    /// Job names' suffix, e.g. the family.
    pub name: String,
    /// The `dynsmem` binary, absolute.
    pub binary: PathBuf,
    /// The `tune` arguments each task runs (without `--shard`; see
    /// [`crate::cli::worker_args`]).
    pub tune_args: Vec<String>,
    /// The merged cache, absolute; the shards write beside it ([`Shard::cache_path`]).
    pub cache: PathBuf,
    pub shards: u32,
    /// Generic resource per task (`gpu:1`), if any.
    pub gres: Option<String>,
    /// More `#SBATCH` options for every job, e.g. `--partition=gpu`.
    pub options: Vec<String>,
    /// The folder the jobs run in, absolute.
    pub workdir: PathBuf,
    /// The folder of the scripts and the jobs' logs, absolute.
    pub dir: PathBuf,
}

/// `s` quoted for a POSIX shell (single quotes, each `'` as `'\''`).
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c)) {
        return s.into();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn path(p: &Path) -> String {
    shell_quote(&p.to_string_lossy())
}

impl SlurmJob {
    fn header(&self, job: &str, output: &str) -> String {
        let mut h = format!(
            "#!/bin/bash\n#SBATCH --job-name={}\n#SBATCH --output={}\n#SBATCH --chdir={}\n",
            shell_quote(&format!("dynsmem-{job}-{}", self.name)),
            path(&self.dir.join(output)),
            path(&self.workdir),
        );
        for o in &self.options {
            h += &format!("#SBATCH {o}\n");
        }
        h
    }

    /// The array script: task `I` runs shard `I/N`.
    pub fn array_script(&self) -> String {
        let mut s = self.header("tune", "tune-%A_%a.out");
        s += &format!("#SBATCH --array=1-{}\n", self.shards);
        if let Some(g) = &self.gres {
            s += &format!("#SBATCH --gres={g}\n");
        }
        let args: Vec<String> = self.tune_args.iter().map(|a| shell_quote(a)).collect();
        s += &format!(
            "# Shard I of {n} of one sweep, I = the array task; its finished configs stay in its\n\
             # shard cache, so a resubmitted task runs only the configs it had not finished.\n\
             set -euo pipefail\n\
             exec {bin} {args} --shard \"${{SLURM_ARRAY_TASK_ID}}/{n}\"\n",
            n = self.shards,
            bin = path(&self.binary),
            args = args.join(" "),
        );
        s
    }

    /// The shard caches the array writes, in shard order.
    pub fn shard_caches(&self) -> Vec<PathBuf> {
        Shard::all(self.shards).map(|s| s.cache_path(&self.cache)).collect()
    }

    /// The merge script: joins the shard caches into the cache and reports the sweep.
    pub fn merge_script(&self) -> String {
        let mut s = self.header("merge", "merge-%j.out");
        let inputs: Vec<String> = self.shard_caches().iter().map(|p| path(p)).collect();
        s += &format!(
            "set -euo pipefail\nexec {} merge --out {} {}\n",
            path(&self.binary),
            path(&self.cache),
            inputs.join(" ")
        );
        s
    }

    /// Submits the array, then the merge, which Slurm holds until every task has ended
    /// without error (`afterok`).
    pub fn submit_script(&self) -> String {
        format!(
            "#!/bin/bash\n\
             # Submits the sweep's array and its merge; prints `array <id> merge <id>`.\n\
             set -euo pipefail\n\
             array=$(sbatch --parsable {tune})\n\
             array=${{array%%;*}}\n\
             merge=$(sbatch --parsable --dependency=afterok:\"$array\" {merge})\n\
             merge=${{merge%%;*}}\n\
             echo \"array $array merge $merge\"\n",
            tune = path(&self.dir.join("tune.sbatch")),
            merge = path(&self.dir.join("merge.sbatch")),
        )
    }

    /// Writes the three scripts into [`SlurmJob::dir`] (created if missing); returns the
    /// path of `submit.sh`.
    pub fn write(&self) -> std::io::Result<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(&self.dir)?;
        for (name, text) in [
            ("tune.sbatch", self.array_script()),
            ("merge.sbatch", self.merge_script()),
            ("submit.sh", self.submit_script()),
        ] {
            let p = self.dir.join(name);
            std::fs::write(&p, text)?;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))?;
        }
        Ok(self.dir.join("submit.sh"))
    }
}

/// The job ids `submit.sh` printed: (array, merge).
pub fn parse_submitted(out: &str) -> Option<(String, String)> {
    let line = out.lines().rev().find(|l| l.starts_with("array "))?;
    let mut w = line.split_whitespace();
    match (w.next(), w.next(), w.next(), w.next()) {
        (Some("array"), Some(a), Some("merge"), Some(m)) => Some((a.into(), m.into())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> SlurmJob {
        SlurmJob {
            name: "reduce".into(),
            binary: "/opt/dyn smem/dynsmem".into(),
            tune_args: ["tune", "reduce", "--n", "4096", "--values", "block=32,64"].map(String::from).to_vec(),
            cache: "/w/r/c.jsonl".into(),
            shards: 3,
            gres: Some("gpu:1".into()),
            options: vec!["--partition=gpu".into()],
            workdir: "/w".into(),
            dir: "/w/slurm".into(),
        }
    }

    #[test]
    fn quoting_survives_a_shell() {
        for s in ["plain", "two words", "it's", "", "$HOME", "a\"b", "block=32,64"] {
            let out = std::process::Command::new("sh").arg("-c").arg(format!("printf %s {}", shell_quote(s))).output();
            let Ok(out) = out else { return };
            assert_eq!(String::from_utf8_lossy(&out.stdout), s);
        }
    }

    #[test]
    fn the_array_runs_every_shard_with_a_gpu_and_the_merge_reads_every_shard_cache() {
        let j = job();
        let a = j.array_script();
        assert!(a.starts_with("#!/bin/bash\n"));
        for line in [
            "#SBATCH --array=1-3",
            "#SBATCH --gres=gpu:1",
            "#SBATCH --partition=gpu",
            "#SBATCH --chdir=/w",
            "#SBATCH --output=/w/slurm/tune-%A_%a.out",
            "exec '/opt/dyn smem/dynsmem' tune reduce --n 4096 --values block=32,64 --shard \"${SLURM_ARRAY_TASK_ID}/3\"",
        ] {
            assert!(a.lines().any(|l| l == line), "{line:?} not in\n{a}");
        }
        let m = j.merge_script();
        assert!(!m.contains("--gres"), "the merge needs no GPU");
        assert!(m.contains(
            "merge --out /w/r/c.jsonl /w/r/c.shard-1-of-3.jsonl /w/r/c.shard-2-of-3.jsonl /w/r/c.shard-3-of-3.jsonl"
        ));
        let s = j.submit_script();
        assert!(s.contains("--dependency=afterok:\"$array\" /w/slurm/merge.sbatch"));
        assert_eq!(parse_submitted("Submitted\narray 12 merge 13\n"), Some(("12".into(), "13".into())));
        assert_eq!(parse_submitted("nothing"), None);
    }
}
