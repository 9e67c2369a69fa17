//! Tuning on first use (`host/src/tune/autotune.rs`) on the CPU backend, where it runs only
//! when asked (`--autotune all`): a problem no tuned config answers measures the cost
//! model's candidates once, later processes answer it from the cache and measure nothing,
//! and a process killed mid-autotune loses no finished candidate and leaves no winner.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::cli::{dynsmem, entries, run_ok, temp_dir};
use dynsmem::host::backend::Variant;
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::families::FAMILIES;
use dynsmem::host::family::{Erase, Sizes, find};
use dynsmem::host::report::Provenance;
use dynsmem::host::tune::autotune::{Autotune, AutotuneMode, MEASUREMENTS, WINNERS};
use dynsmem::host::tune::db::{DbEntry, TuningDb};

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map(|t| t.lines().count()).unwrap_or(0)
}

fn autotune(dir: &Path, image: &'static str) -> std::sync::Arc<Autotune> {
    let identify = Box::new(move |_| {
        let prov = Provenance {
            rustc: "test".into(),
            commit: "test".into(),
            command: "tests/autotune.rs".into(),
            image: image.into(),
        };
        (image.to_string(), prov)
    });
    std::sync::Arc::new(Autotune::new(AutotuneMode::All, dir, identify).unwrap())
}

/// The config origin `run` resolves for SGEMM at `args` on the CPU backend with `db`.
fn origin(db: &TuningDb, args: &[&str]) -> (serde_json::Value, String) {
    let family = find(FAMILIES, "sgemm").unwrap();
    let cpu = CpuBackend::new();
    let m = family.run_args(clap::Command::new("sgemm").no_binary_name(true)).try_get_matches_from(args).unwrap();
    let r = family.resolve(&m, cpu.erase(), Variant::LaunchSized, &Sizes::cpu_backend(), Some(db)).unwrap();
    (r.config, r.origin)
}

#[test]
fn a_problem_is_measured_once_then_answered_from_the_cache() {
    let dir = temp_dir("autotune-lib");
    let shape = ["--m", "40", "--n", "37", "--k", "29"];
    let db = TuningDb { autotune: Some(autotune(&dir, "image-a")), ..TuningDb::default() };
    let (config, why) = origin(&db, &shape);
    assert!(why.starts_with("autotune, measured now"), "{why}");
    let runs = db.autotune.as_ref().unwrap().runs();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert!(run.verified >= 1 && run.measured == run.evaluated && run.from_cache == 0, "{run:?}");
    assert_eq!(run.config.as_ref(), Some(&config), "the winner runs");
    assert!(run.evaluated <= 12, "the budget's dozen: {run:?}");
    assert_eq!(lines(&dir.join(MEASUREMENTS)), run.evaluated, "every candidate in the measurements");
    assert_eq!(lines(&dir.join(WINNERS)), 1);

    // The same process: answered from memory.
    let (again, why) = origin(&db, &shape);
    assert_eq!((again, why.starts_with("autotune cache")), (config.clone(), true), "{why}");

    // A new process (a new Autotune reading the folder), after torn last lines in both files
    // (a writer killed mid-line): the winner answers, nothing is measured.
    for f in [MEASUREMENTS, WINNERS] {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join(f))
            .unwrap()
            .write_all(b"{\"fingerprint\":{\"dev")
            .unwrap();
    }
    let measured_before = lines(&dir.join(MEASUREMENTS));
    let db2 = TuningDb { autotune: Some(autotune(&dir, "image-a")), ..TuningDb::default() };
    let (answer, why) = origin(&db2, &shape);
    assert_eq!(answer, config);
    assert!(why.starts_with("autotune cache: this problem"), "{why}");
    assert!(db2.autotune.as_ref().unwrap().runs().is_empty(), "nothing measured");
    assert_eq!(lines(&dir.join(MEASUREMENTS)), measured_before);

    // Within the shape class (10% on every side) the winner answers too; past it, a new
    // autotune runs.
    let (_, why) = origin(&db2, &["--m", "43", "--n", "35", "--k", "30"]);
    assert!(why.starts_with("autotune cache: nearest tuned problem"), "{why}");
    let (_, why) = origin(&db2, &["--m", "46", "--n", "37", "--k", "29"]);
    assert!(why.starts_with("autotune, measured now"), "{why}");

    // Another kernel image: its own autotune (the measurements of image-a do not count).
    let db3 = TuningDb { autotune: Some(autotune(&dir, "image-b")), ..TuningDb::default() };
    let (_, why) = origin(&db3, &shape);
    assert!(why.starts_with("autotune, measured now"), "{why}");
    assert_eq!(db3.autotune.as_ref().unwrap().runs()[0].from_cache, 0);
    let winners: Vec<DbEntry> = db3.autotune.as_ref().unwrap().winners();
    assert_eq!(winners.iter().filter(|w| w.fingerprint.image_hash == "image-b").count(), 1);

    // A config given on the command line is run as given: no autotune.
    let db4 = TuningDb { autotune: Some(autotune(&dir, "image-c")), ..TuningDb::default() };
    let (config, why) = origin(&db4, &["--m", "40", "--n", "37", "--k", "29", "--bm", "8"]);
    assert_eq!(config["bm"], 8);
    assert!(why.starts_with("command line"), "{why}");
    assert!(db4.autotune.as_ref().unwrap().runs().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

fn db_entry(m: u32, n: u32, k: u32, params: &[(&str, u32)]) -> DbEntry {
    let problem = serde_json::json!({"m": m, "n": n, "k": k, "f16_inputs": false});
    common::cpu_db_entry("sgemm", problem, params, "an older image")
}

/// With autotune, the database answers its own problems only; a problem it would lend a
/// nearby problem's config to is measured, that config first among the candidates. Without
/// autotune the nearby config is taken as before.
#[test]
fn autotune_measures_the_database_nearest_config_first_and_keeps_its_exact_entries() {
    let dir = temp_dir("autotune-db");
    let params = [("bm", 8), ("bn", 16), ("bk", 8), ("stages", 1)];
    let tuned = vec![db_entry(48, 40, 30, &params), db_entry(64, 64, 64, &params)];
    let db = TuningDb { entries: tuned.clone(), autotune: Some(autotune(&dir, "image-a")), ..TuningDb::default() };
    let (config, why) = origin(&db, &["--m", "64", "--n", "64", "--k", "64"]);
    assert!(why.starts_with("tuning database: this problem"), "{why}");
    assert_eq!((config["bm"].as_u64(), config["bn"].as_u64()), (Some(8), Some(16)));
    assert!(db.autotune.as_ref().unwrap().runs().is_empty());

    let (_, why) = origin(&db, &["--m", "40", "--n", "37", "--k", "29"]);
    assert!(why.starts_with("autotune, measured now"), "{why}");
    let (measured, _) = entries(&dir.join(MEASUREMENTS));
    let first = &measured[0].tune.params;
    for (k, v) in params {
        assert_eq!(first.get(k), Some(&v), "the database's nearest config is measured first: {first:?}");
    }
    // The heuristic default second.
    let problem = dynsmem::host::families::sgemm::SgemmProblem { m: 40, n: 37, k: 29, f16_inputs: false };
    let heuristic = dynsmem::host::families::sgemm::default_config(&CpuBackend::new(), &problem);
    assert_eq!(measured[1].record.config, serde_json::to_value(heuristic).unwrap(), "the heuristic default second");

    let off = TuningDb { entries: tuned, ..TuningDb::default() };
    let (config, why) = origin(&off, &["--m", "40", "--n", "37", "--k", "29"]);
    assert!(why.starts_with("tuning database: nearest tuned problem"), "{why}");
    assert_eq!(config["bn"].as_u64(), Some(16));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `dynsmem run` with `--autotune all`: killed with SIGKILL mid-autotune, then run to the
/// end (its finished candidates answered from the cache), then run again measuring nothing.
#[test]
fn the_cli_survives_a_kill_mid_autotune_and_a_second_process_measures_nothing() {
    let dir = temp_dir("autotune-cli");
    let cache = dir.join("cache");
    let cache_arg = cache.to_str().unwrap();
    let args = [
        "run",
        "sgemm",
        "--backend",
        "cpu",
        "--m",
        "96",
        "--n",
        "90",
        "--k",
        "160",
        "--repeats",
        "1",
        "--warmup",
        "0",
        "--warmup-ms",
        "0",
        "--autotune",
        "all",
        "--autotune-cache",
        cache_arg,
    ];
    let mut child = dynsmem(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let started = Instant::now();
    while lines(&cache.join(MEASUREMENTS)) == 0 && started.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let (killed, _) = entries(&cache.join(MEASUREMENTS));
    assert!(!killed.is_empty(), "no candidate finished before the kill");
    let winners_after_kill = lines(&cache.join(WINNERS));

    assert_eq!(winners_after_kill, 0, "killed after its first candidate, before its winner");

    let out = run_ok(&args);
    let config_line = out.lines().find(|l| l.starts_with("config:")).unwrap_or_else(|| panic!("{out}"));
    assert!(config_line.contains("autotune, measured now"), "{config_line}");
    let from_cache = common::cli::number_before(config_line, " from the cache");
    assert!(from_cache >= 1, "the killed run's candidates answered from the cache: {config_line}");
    assert_eq!(lines(&cache.join(WINNERS)), 1, "one winner");

    let measured = lines(&cache.join(MEASUREMENTS));
    let out = run_ok(&args);
    let config_line = out.lines().find(|l| l.starts_with("config:")).unwrap();
    assert!(config_line.contains("from the autotune cache: this problem"), "{config_line}");
    assert_eq!(lines(&cache.join(MEASUREMENTS)), measured, "the second process measured a candidate");

    // `--no-autotune` (and the default on the CPU backend): the heuristic, saying why.
    let no = ["run", "sgemm", "--backend", "cpu", "--m", "95", "--n", "90", "--k", "160", "--repeats", "1"];
    let out = run_ok(&[&no[..], &["--no-autotune", "--autotune-cache", cache_arg]].concat());
    assert!(out.contains("autotune off"), "{out}");
    let out = run_ok(&[&no[..], &["--autotune", "gpu", "--autotune-cache", cache_arg]].concat());
    assert!(out.contains("autotune runs on GPUs only"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
