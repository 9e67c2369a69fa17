//! `tune --slurm` against a real Slurm: a single-node cluster started by this test
//! (`ci/slurm/cluster.sh`: munged, slurmctld and slurmd, everything under a temporary
//! folder), a CPU-backend sweep submitted as a 3-task job array plus its merge job, waited
//! for with a deadline, and the merged cache compared with the same sweep run in one
//! process. Where Slurm cannot start it prints `SKIPPED` with the reason, unless
//! `DYNSMEM_REQUIRE_SLURM=1` (set by CI, which installs Slurm), where that fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::cli::{dynsmem, entries, outcomes, run_ok, small_sweep, strs, temp_dir};

/// A running cluster, stopped when dropped (also when the test fails).
struct Cluster {
    script: PathBuf,
    dir: PathBuf,
    conf: PathBuf,
}

impl Cluster {
    /// Starts one, or `None` after printing why it cannot start here.
    fn start(dir: &Path) -> Option<Cluster> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/slurm/cluster.sh");
        let out = Command::new("bash").arg(&script).arg("start").arg(dir).output().expect("running bash");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        if out.status.success() {
            common::note(text.trim());
            return Some(Cluster { script, dir: dir.into(), conf: dir.join("slurm.conf") });
        }
        let why = text.lines().find(|l| l.starts_with("SKIPPED")).map(String::from);
        match why {
            Some(why) if !std::env::var("DYNSMEM_REQUIRE_SLURM").is_ok_and(|v| v == "1") => {
                common::note(&why);
                None
            }
            _ => panic!(
                "the Slurm cluster did not start ({}; DYNSMEM_REQUIRE_SLURM=1 fails on a skip too):\n{text}",
                out.status
            ),
        }
    }

    /// A Slurm client command against this cluster.
    fn client(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    /// `JobState` of every task of job `id` (an array has one per task).
    fn states(&self, id: &str) -> Vec<String> {
        let out = self.client("scontrol").args(["show", "job", id]).output().expect("running scontrol");
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|w| w.strip_prefix("JobState=").map(String::from))
            .collect()
    }

    /// Waits until every task of job `id` has ended; returns their states.
    fn wait(&self, id: &str, deadline: Instant) -> Vec<String> {
        let ended = |s: &String| !matches!(s.as_str(), "PENDING" | "CONFIGURING" | "RUNNING" | "COMPLETING");
        loop {
            let states = self.states(id);
            if !states.is_empty() && states.iter().all(ended) {
                return states;
            }
            if Instant::now() > deadline {
                let q = self.client("squeue").output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
                panic!("job {id} still {states:?} at the deadline; squeue:\n{}", q.unwrap_or_default());
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(&self.script).arg("stop").arg(&self.dir).status();
    }
}

#[test]
fn a_sweep_submitted_as_a_slurm_job_array_merges_to_the_one_process_sweep() {
    let started = Instant::now();
    let dir = temp_dir("slurm");
    let Some(cluster) = Cluster::start(&dir.join("cluster")) else { return };
    let up = started.elapsed();
    let (one, merged, jobs) = (dir.join("one.jsonl"), dir.join("merged.jsonl"), dir.join("jobs"));
    let mut single = small_sweep(&one, "4096");
    single.push("--quiet".into());
    run_ok(&strs(&single));

    let mut args = small_sweep(&merged, "4096");
    args.extend(["--slurm", jobs.to_str().unwrap(), "--shards", "3", "--submit"].map(String::from));
    let out = dynsmem(&strs(&args)).env("SLURM_CONF", &cluster.conf).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let submitted = stdout.lines().find(|l| l.starts_with("submitted:")).unwrap_or_else(|| panic!("{stdout}"));
    let ids: Vec<&str> = submitted.split_whitespace().filter(|w| w.chars().all(|c| c.is_ascii_digit())).collect();
    let [array, merge] = ids[..] else { panic!("job ids in {submitted:?}") };

    let deadline = Instant::now() + Duration::from_secs(300);
    let tasks = cluster.wait(array, deadline);
    let merge_state = cluster.wait(merge, deadline);
    let logs = || {
        let mut all = String::new();
        for e in std::fs::read_dir(&jobs).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "out") {
                all += &format!("== {}\n{}", e.path().display(), std::fs::read_to_string(e.path()).unwrap_or_default());
            }
        }
        all
    };
    assert_eq!(tasks, ["COMPLETED"; 3], "the array's tasks; their logs:\n{}", logs());
    assert_eq!(merge_state, ["COMPLETED"], "the merge job; logs:\n{}", logs());

    // Each task ran its shard; the merge joined them into what one process records.
    for i in 1..=3 {
        let (e, _) = entries(&dir.join(format!("merged.shard-{i}-of-3.jsonl")));
        assert_eq!(e.len(), 6, "shard {i} of 3: 18 configs / 3");
        assert!(e.iter().all(|x| x.tune.worker.as_ref().is_some_and(|w| w.shard == format!("{i}/3"))));
    }
    assert_eq!(outcomes(&merged), outcomes(&one), "the merged sweep holds the one process's configs and outcomes");
    let merge_log = std::fs::read_to_string(jobs.join(format!("merge-{merge}.out"))).unwrap_or_else(|_| logs());
    assert!(merge_log.contains("18 of the space's 18 configs are in the cache"), "{merge_log}");
    common::note(&format!(
        "slurm: cluster up in {:.1} s; 3-task array {array} and merge {merge} completed; {:.1} s in all",
        up.as_secs_f64(),
        started.elapsed().as_secs_f64()
    ));
}
