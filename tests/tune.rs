//! `dynsmem tune` end to end, through the real binary: a sweep killed with SIGKILL loses no
//! finished config and its rerun measures none again; every family's search space runs
//! and verifies on the CPU backend and replays from its cache; on WGSL each config that
//! needs a new pipeline reports its creation time.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::cli::{dynsmem, entries, number_before, outcomes, run_ok, small_sweep, strs, temp_dir};

/// Waits until no process is a `--worker` of the sweep writing `cache` (Linux: /proc).
fn wait_for_workers(cache: &str) {
    let started = Instant::now();
    loop {
        let alive = std::fs::read_dir("/proc").into_iter().flatten().flatten().any(|p| {
            let cmd = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd);
            cmd.contains(cache) && cmd.contains("--worker")
        });
        if !alive {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "a worker of {cache} outlived its supervisor by 60 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn killed_sweep_loses_no_finished_config_and_its_rerun_measures_none_again() {
    let dir = temp_dir("kill");
    let cache = dir.join("cache.jsonl");
    let cache_arg = cache.to_str().unwrap();
    let args = [
        "tune",
        "reduce",
        "--backend",
        "cpu",
        "--n",
        "16384",
        "--repeats",
        "3",
        "--warmup",
        "1",
        "--warmup-ms",
        "0",
        "--quiet",
        "--cache",
        cache_arg,
    ];
    // Start, wait for `at_least` finished configs in the cache, kill with SIGKILL.
    let kill_after = |at_least: usize| -> usize {
        let mut child = dynsmem(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("starting tune");
        let started = Instant::now();
        loop {
            let lines = std::fs::read(&cache).map(|b| b.iter().filter(|&&c| c == b'\n').count()).unwrap_or(0);
            if lines >= at_least {
                break;
            }
            assert!(
                child.try_wait().unwrap().is_none(),
                "the sweep finished before {at_least} configs: nothing to kill"
            );
            assert!(started.elapsed() < Duration::from_secs(300), "no progress in 300 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        child.kill().unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(9), "killed mid-sweep: {status:?}");
        // The supervised worker sees its supervisor's death at its next line and may record
        // the config it was measuring first: count the cache once no worker of it is left.
        wait_for_workers(cache_arg);
        let (e, torn) = entries(&cache);
        assert!(torn <= 1, "at most the line being written when killed is torn");
        e.len()
    };

    let after_first = kill_after(5);
    let first = entries(&cache).0;
    let after_second = kill_after(after_first + 5);
    assert!(after_second >= after_first + 5);
    let second = entries(&cache).0;
    assert_eq!(&second[..after_first], &first[..], "the first run's entries are untouched");

    // The rerun answers every finished config from the cache and measures only the rest.
    let out = run_ok(&args);
    let space = number_before(&out, " configs to evaluate");
    let measured = number_before(&out, " measured now");
    let cached = number_before(&out, " from the cache");
    common::note(&format!(
        "tune kill: {space} configs; killed after {after_first} and {after_second}; rerun measured {measured}, {cached} from the cache"
    ));
    assert!(after_second < space, "the second kill landed before the end");
    assert_eq!(cached, after_second, "every finished config is answered from the cache");
    assert_eq!(measured, space - after_second, "no finished config is measured again");
    let (all, _) = entries(&cache);
    assert_eq!(all.len(), space, "one entry per config, none twice");
    assert_eq!(&all[..after_second], &second[..]);
    let mut keys: Vec<_> = all.iter().map(|e| e.tune.params.clone()).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), space, "no config measured twice");
    assert!(
        all.iter().all(|e| e.record.verified && e.record.times_ms.len() == 3),
        "every config verified, 3 raw times each"
    );

    // A third run measures nothing and appends nothing.
    let size = std::fs::metadata(&cache).unwrap().len();
    let out = run_ok(&args);
    assert_eq!(number_before(&out, " measured now"), 0);
    assert_eq!(std::fs::metadata(&cache).unwrap().len(), size);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_family_tunes_on_the_cpu_backend_and_replays_from_its_cache() {
    let dir = temp_dir("families");
    let families: [&[&str]; 7] = [
        &["reduce", "--n", "4096"],
        &["scan", "--n", "4096"],
        &["histogram", "--n", "4096", "--bins", "64"],
        &["conv1d", "--n", "4096", "--taps", "9"],
        &["stencil2d", "--width", "64", "--height", "48"],
        &["transpose", "--rows", "64", "--cols", "48"],
        &["sgemm", "--m", "24", "--n", "40", "--k", "17"],
    ];
    for family in families {
        let name = family[0];
        let cache = dir.join(format!("{name}.jsonl"));
        let (t4, plot) = (dir.join(format!("{name}.t4.json")), dir.join(format!("{name}.svg")));
        let mut args = vec!["tune"];
        args.extend_from_slice(family);
        args.extend_from_slice(&[
            "--backend",
            "cpu",
            "--strategy",
            "random",
            "--seed",
            "7",
            "--budget-evals",
            "4",
            "--repeats",
            "1",
            "--warmup",
            "0",
            "--warmup-ms",
            "0",
            "--quiet",
        ]);
        args.extend_from_slice(&["--cache", cache.to_str().unwrap()]);
        let mut sweep = args.clone();
        sweep.extend_from_slice(&["--t4", t4.to_str().unwrap(), "--plot", plot.to_str().unwrap()]);
        let out = run_ok(&sweep);
        assert!(out.contains("4 evaluations (4 measured now, 0 from the cache"), "{name}:\n{out}");
        assert!(out.contains(", 0 failed;"), "{name}: every config the space admits runs and verifies:\n{out}");
        let (e, _) = entries(&cache);
        assert_eq!(e.len(), 4, "{name}");
        assert!(e.iter().all(|e| e.record.verified && e.tune.invalidity == "correct"), "{name}");
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&t4).unwrap()).unwrap();
        let filtered = number_before(&out, " filtered before launch");
        assert_eq!(doc["results"].as_array().unwrap().len(), 4, "{name}: the evaluated configs");
        assert_eq!(doc["metadata"]["filtered"].as_array().unwrap().len(), filtered, "{name}: the filtered configs");
        assert!(std::fs::read_to_string(&plot).unwrap().starts_with("<svg"), "{name}");
        let heatmap = dir.join(format!("{name}-heatmap.svg"));
        assert!(std::fs::read_to_string(&heatmap).unwrap().starts_with("<svg"), "{name}");
        let best = out.lines().find(|l| l.starts_with("best:")).unwrap().to_string();

        // The same search replayed from the cache: same configs, same best, no device.
        let mut replay = args.clone();
        replay.push("--replay");
        let out = run_ok(&replay);
        assert!(out.contains("4 evaluations (replayed), 0 failed"), "{name}:\n{out}");
        assert_eq!(out.lines().find(|l| l.starts_with("best:")).unwrap(), best, "{name}");
    }
    // A replay of a sweep the cache does not hold says what it holds.
    let out =
        dynsmem(&["tune", "reduce", "--n", "8192", "--replay", "--cache", dir.join("reduce.jsonl").to_str().unwrap()])
            .output()
            .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("holds no reduce sweep") && err.contains("\"n\":4096"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn wgsl_sweep_reports_each_new_pipelines_creation_time() {
    if common::wgsl_or_skip("wgsl_sweep_reports_each_new_pipelines_creation_time").is_none() {
        return;
    }
    let dir = temp_dir("wgsl");
    let cache = dir.join("cache.jsonl");
    let out = run_ok(&[
        "tune",
        "reduce",
        "--backend",
        "wgsl",
        "--n",
        "65536",
        "--values",
        "block=64,128",
        "--values",
        "ipt=4,8",
        "--repeats",
        "2",
        "--warmup",
        "0",
        "--warmup-ms",
        "0",
        "--quiet",
        "--cache",
        cache.to_str().unwrap(),
    ]);
    let (e, _) = entries(&cache);
    assert_eq!(e.len(), 8);
    // Unstaged pipelines depend on the block only (items per thread is an argument): 2 of
    // the 4 unstaged configs build one, the others reuse it. Staged ones size their tile
    // by block * ipt: all 4 build one.
    let built: Vec<String> =
        e.iter().filter(|e| e.tune.build_ms > 0.0).map(|e| format!("{:?}", e.tune.params)).collect();
    assert_eq!(built.len(), 6, "{built:?}");
    assert!(out.contains("6 of 8 configs needed a new pipeline"), "{out}");
    assert!(e.iter().all(|e| e.record.verified && e.record.static_shared_bytes > 0 && e.record.shared_bytes == 0));
    let _ = std::fs::remove_dir_all(&dir);
}

/// SGEMM's WGSL form in the tuner: the two-stage points that would hold more of the next
/// tile in registers than the form allows are filtered before launch with their reason,
/// every other point is a pipeline of its own, verified, with its static bytes recorded.
#[test]
fn wgsl_sgemm_sweep_filters_by_the_forms_rules_and_builds_a_pipeline_per_config() {
    if common::wgsl_or_skip("wgsl_sgemm_sweep").is_none() {
        return;
    }
    let dir = temp_dir("wgsl-sgemm");
    let cache = dir.join("cache.jsonl");
    let out = run_ok(&[
        "tune",
        "sgemm",
        "--backend",
        "wgsl",
        "--variant",
        "wgsl-override",
        "--m",
        "40",
        "--n",
        "36",
        "--k",
        "20",
        "--values",
        "bm=16,32",
        "--values",
        "bn=32",
        "--values",
        "bk=8,32",
        "--values",
        "stages=1,2",
        "--repeats",
        "2",
        "--warmup",
        "0",
        "--warmup-ms",
        "0",
        "--quiet",
        "--cache",
        cache.to_str().unwrap(),
    ]);
    // bk = 32 with two stages: 16 chunks of A per invocation held in registers, past 8.
    assert!(out.contains("6 configs to evaluate, 2 filtered before launch"), "{out}");
    assert!(
        out.contains(
            "filtered bm=16 bn=32 bk=32 stages=2: sgemm_f32: invalid config: two stages hold the next tile in registers"
        ),
        "{out}"
    );
    assert!(out.contains("6 evaluations (6 measured now") && out.contains(", 0 failed;"), "{out}");
    assert!(out.contains("6 of 6 configs needed a new pipeline"), "{out}");
    let (e, _) = entries(&cache);
    assert_eq!(e.len(), 6);
    for entry in &e {
        let r = &entry.record;
        let c = &r.config;
        let (bm, bn, bk, s) = (
            c["bm"].as_u64().unwrap(),
            c["bn"].as_u64().unwrap(),
            c["bk"].as_u64().unwrap(),
            c["stages"].as_u64().unwrap(),
        );
        assert!(r.verified && r.shared_bytes == 0 && r.variant == "wgsl-override", "{r:?}");
        assert_eq!(r.static_shared_bytes as u64, 4 * s * bk * (bm + 4 + bn), "{c}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sweep_on_two_workers_covers_the_space_once_and_merges_as_one_process_would() {
    let dir = temp_dir("shards");
    let (one, many) = (dir.join("one.jsonl"), dir.join("many.jsonl"));
    let mut single = small_sweep(&one, "4096");
    single.push("--quiet".into());
    run_ok(&strs(&single));
    let mut sharded = small_sweep(&many, "4096");
    sharded.extend(["--devices".into(), "0,0".into(), "--quiet".into()]);
    // Both workers time under one lock, as --devices makes workers sharing a GPU do.
    let lock = dir.join("timing.lock");
    let run = dynsmem(&strs(&sharded)).env("DYNSMEM_TIMING_LOCK", &lock).output().unwrap();
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{out}{}", String::from_utf8_lossy(&run.stderr));
    assert!(out.contains("18 of the space's 18 configs are in the cache"), "{out}");
    let log = std::fs::read_to_string(dir.join("many.shard-2-of-2.log")).unwrap();
    assert!(log.contains("timing holds the lock") && lock.exists(), "{log}");

    assert_eq!(entries(&one).0.len(), 18);
    assert_eq!(outcomes(&many), outcomes(&one), "the merged sweep holds the one process's configs and outcomes");
    // Each shard's cache holds its own part, disjoint from the other's, labelled with it.
    let mut parts = Vec::new();
    for s in ["1-of-2", "2-of-2"] {
        let (e, _) = entries(&dir.join(format!("many.shard-{s}.jsonl")));
        assert_eq!(e.len(), 9, "shard {s}");
        let label = s.replace("-of-", "/");
        assert!(
            e.iter().all(|x| x
                .tune
                .worker
                .as_ref()
                .is_some_and(|w| w.shard == label && w.device.as_deref() == Some("0")))
        );
        parts.extend(e.into_iter().map(|x| x.tune.params));
    }
    let mut unique = parts.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), parts.len(), "no config in two shards");

    // Merging again appends nothing; the merged cache replays like a one-process cache.
    let s1 = dir.join("many.shard-1-of-2.jsonl");
    let s2 = dir.join("many.shard-2-of-2.jsonl");
    let again = run_ok(&["merge", "--out", many.to_str().unwrap(), s1.to_str().unwrap(), s2.to_str().unwrap()]);
    assert!(again.contains("0 entries appended, 18 already there"), "{again}");
    let replay = run_ok(&["tune", "reduce", "--n", "4096", "--replay", "--cache", many.to_str().unwrap()]);
    assert!(replay.contains("18 evaluations (replayed), 0 failed"), "{replay}");
    // Random sampling shares its budget: 7 evaluations in all, 4 + 3, none twice.
    let sampled = dir.join("random.jsonl");
    let mut random = small_sweep(&sampled, "4096");
    random.extend(["--strategy", "random", "--budget-evals", "7", "--devices", "0,0", "--quiet"].map(String::from));
    let out = run_ok(&strs(&random));
    assert!(out.contains("worker 1/2 (device 0): random: 4 evaluations"), "{out}");
    assert!(out.contains("worker 2/2 (device 0): random: 3 evaluations"), "{out}");
    assert_eq!(outcomes(&sampled).len(), 7);
    let bad = dynsmem(&["tune", "reduce", "--backend", "cpu", "--shard", "3/2"]).output().unwrap();
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("1 <= I <= N"));
}

/// The pid of the running worker of `shard` whose command line names `cache`.
fn worker_pid(shard: &str, cache: &str) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|d| {
        let pid: u32 = d.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(d.path().join("cmdline")).ok()?;
        let args: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
        let has = |s: &str| args.contains(&s.as_bytes());
        (has("--worker") && has(shard) && has(cache)).then_some(pid)
    })
}

/// `kill -9` of a worker of `--devices` mid-sweep: its supervisor starts a new worker,
/// which answers the finished configs from the shard cache and measures the rest; the
/// command succeeds, every config is in the merged cache once, and a rerun measures nothing.
#[test]
fn a_killed_worker_is_restarted_and_nothing_is_measured_twice() {
    let dir = temp_dir("shard-kill");
    let cache = dir.join("c.jsonl");
    let shard1 = dir.join("c.shard-1-of-2.jsonl");
    let mut args = small_sweep(&cache, "16384");
    args.extend(["--devices".into(), "0,0".into(), "--quiet".into()]);
    let parent = dynsmem(&strs(&args)).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let started = Instant::now();
    let lines = || std::fs::read(&shard1).map(|b| b.iter().filter(|&&c| c == b'\n').count()).unwrap_or(0);
    while lines() < 2 {
        assert!(started.elapsed() < Duration::from_secs(300), "worker 1 made no progress in 300 s");
        std::thread::sleep(Duration::from_millis(5));
    }
    let pid = worker_pid("1/2", cache.to_str().unwrap()).expect("worker 1's process");
    let status = Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    assert!(status.success());
    let before = entries(&shard1).0;
    let out = parent.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the supervisor restarts the killed worker:\n{stdout}");
    assert!(
        stdout.contains("worker 1/2 (device 0): supervisor: the worker was killed by signal 9 (SIGKILL)"),
        "{stdout}"
    );
    let (after, torn) = entries(&shard1);
    assert!(torn <= 1);
    let mut configs: Vec<String> = after.iter().map(|e| format!("{:?}", e.tune.params)).collect();
    configs.sort();
    configs.dedup();
    assert_eq!((after.len(), configs.len()), (9, 9), "each of worker 1's configs once");
    assert_eq!(&after[..before.len()], &before[..], "the entries finished before the kill are untouched");
    assert_eq!(entries(&cache).0.len(), 18, "the merged cache holds every config once");
    common::note(&format!("shard kill: worker 1 killed after {} of 9 configs, restarted, finished", before.len()));

    let rerun = run_ok(&strs(&args));
    let line = |w: &str| rerun.lines().find(|l| l.starts_with(w)).unwrap_or_else(|| panic!("no {w} in\n{rerun}"));
    for w in ["worker 1/2", "worker 2/2"] {
        assert_eq!(number_before(line(w), " measured now"), 0, "{w}: nothing runs again");
    }
    assert!(rerun.contains("18 of the space's 18 configs are in the cache"), "{rerun}");
}
