//! The tuning database end to end on the CPU backend: a sweep's cache distilled into a
//! database file, and `run` taking its default config from it for the tuned problem and
//! for a problem near it, and the heuristic for a problem too far from any tuned one.

mod common;

use common::cli::{run_ok, small_sweep, strs, temp_dir};

/// The config JSON on `run`'s "config: ... (from the ...)" line, and where it came from.
fn chosen(stdout: &str) -> (serde_json::Value, String) {
    let line =
        stdout.lines().find(|l| l.starts_with("config: ")).unwrap_or_else(|| panic!("no config line:\n{stdout}"));
    let rest = &line["config: ".len()..];
    let at = rest.find(" (from the ").unwrap_or_else(|| panic!("no origin on {line:?}"));
    (serde_json::from_str(&rest[..at]).unwrap(), rest[at + " (from the ".len()..rest.len() - 1].to_string())
}

#[test]
fn run_takes_its_default_from_the_database_for_the_tuned_problem_and_its_neighbours() {
    let dir = temp_dir("db");
    let cache = dir.join("cache.jsonl");
    run_ok(&strs(&small_sweep(&cache, "8192")));
    let db = dir.join("db.jsonl");
    let built = run_ok(&["db", "build", cache.to_str().unwrap(), "--out", db.to_str().unwrap()]);
    assert!(built.contains("1 entries"), "{built}");
    let entry: serde_json::Value = serde_json::from_str(std::fs::read_to_string(&db).unwrap().trim()).unwrap();
    let best = &entry["params"];
    // The entry is the sweep's fastest verified config.
    let (entries, _) = common::cli::entries(&cache);
    let fastest = entries
        .iter()
        .filter(|e| e.record.verified)
        .min_by(|a, b| a.record.median_ms.unwrap().total_cmp(&b.record.median_ms.unwrap()))
        .unwrap();
    assert_eq!(best, &serde_json::to_value(&fastest.tune.params).unwrap());

    let run = |n: &str, extra: &[&str]| {
        let mut args = vec!["run", "reduce", "--backend", "cpu", "--n", n, "--tuning-db", db.to_str().unwrap()];
        args.extend(extra);
        run_ok(&args)
    };
    let matches_best = |config: &serde_json::Value| config == &fastest.record.config;
    // The tuned problem: this entry.
    let (config, origin) = chosen(&run("8192", &["--config-only"]));
    assert!(origin.starts_with("tuning database: this problem"), "{origin}");
    assert!(matches_best(&config), "{config} is not the database's {best}");
    // A problem within 1.5x on n: the nearest tuned problem.
    let (config, origin) = chosen(&run("11000", &["--config-only"]));
    assert!(origin.contains("nearest tuned problem"), "{origin}");
    assert!(matches_best(&config), "{config} is not the database's {best}");
    // Past 1.5x: the heuristic, saying why.
    let (_, origin) = chosen(&run("13000", &["--config-only"]));
    assert!(origin.starts_with("heuristic default: no tuned reduce problem"), "{origin}");
    // Without the database: the heuristic.
    let (_, origin) = chosen(&run("8192", &["--config-only", "--no-tuning-db"]));
    assert!(origin.contains("not consulted"), "{origin}");
    // A run from the database records where its config came from.
    let json = dir.join("run.jsonl");
    run("8192", &["--repeats", "2", "--warmup-ms", "0", "--json", json.to_str().unwrap()]);
    let recs: Vec<serde_json::Value> =
        std::fs::read_to_string(&json).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let rec = recs.iter().find(|r| r["family"] == "reduce").unwrap();
    assert!(rec["config_origin"].as_str().unwrap().starts_with("tuning database"), "{rec}");
    assert!(matches_best(&rec["config"]), "{} is not the database's {best}", rec["config"]);
    assert!(rec["median_ci95_ms"].as_array().is_some_and(|a| a.len() == 2), "{rec}");
    // An entry's kernel choice stands without the flag that picks it: staged both ways.
    for staged in [0, 1] {
        let mut e = entry.clone();
        e["params"]["staged"] = staged.into();
        let path = dir.join(format!("db-staged-{staged}.jsonl"));
        std::fs::write(&path, format!("{e}\n")).unwrap();
        let out = run_ok(&[
            "run",
            "reduce",
            "--backend",
            "cpu",
            "--n",
            "8192",
            "--tuning-db",
            path.to_str().unwrap(),
            "--config-only",
        ]);
        let (config, origin) = chosen(&out);
        assert!(origin.starts_with("tuning database: this problem"), "{origin}");
        assert_eq!(config["staged"], staged == 1, "{config} from a database entry with staged {staged}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// In the bench, the case that runs the family's default config takes the database's config
/// for its problem; a case that picks its own kernel on purpose (reduce's staged case) keeps
/// its config.
#[test]
fn the_bench_takes_the_database_config_only_for_its_default_cases() {
    use dynsmem::host::backend::Variant;
    use dynsmem::host::backend::cpu::CpuBackend;
    use dynsmem::host::families::FAMILIES;
    use dynsmem::host::family::{Erase, Sizes, find};
    use dynsmem::host::tune::db::TuningDb;

    let cpu = CpuBackend::new();
    let sizes = Sizes::cpu_backend();
    let reduce = find(FAMILIES, "reduce").unwrap();
    let own = reduce.bench_cases(cpu.erase(), Variant::LaunchSized, &sizes, None);
    let problem = own[0].problem.clone();
    let entry = common::cpu_db_entry("reduce", problem.clone(), &[("block", 8), ("ipt", 4), ("staged", 0)], "test");
    let db = TuningDb { entries: vec![entry], sources: vec!["test".into()], autotune: None };
    let with_db = reduce.bench_cases(cpu.erase(), Variant::LaunchSized, &sizes, Some(&db));
    assert_eq!(with_db.len(), own.len());
    let db_config = serde_json::json!({"block": 8, "items_per_thread": 4, "staged": false});
    assert_eq!(with_db[0].config, db_config, "the default case takes the database's config");
    assert!(with_db[0].origin.starts_with("tuning database: this problem"), "{}", with_db[0].origin);
    for (a, b) in own.iter().zip(&with_db).skip(1) {
        assert_eq!(a.config, b.config, "a case with its own config keeps it");
        assert!(b.origin.contains("own config"), "{}", b.origin);
    }
    assert!(own[1..].iter().any(|c| c.config["staged"] == true), "reduce's bench has its staged case");
}
