//! Record files survive a writer killed at any point: a real `dynsmem bench --json FILE`
//! (which appends each record, one synced line, the moment it is made) is killed with
//! SIGKILL at points spread over its run, again and again on the same file, and after
//! every kill every record written before it must still read back.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Instant;

use dynsmem::host::report::read_jsonl;

/// A small bench (`--quick`: small sizes on a GPU too): the CPU backend or the GPU
/// backends, and WGSL when there is an adapter, every family, one timed run each; about 50
/// records in a few seconds.
fn bench(path: &Path) -> Child {
    common::cli::dynsmem(&["bench", "--quick", "--n", "4096", "--repeats", "1", "--warmup", "0", "--warmup-ms", "0"])
        .arg("--json")
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting dynsmem bench")
}

#[test]
fn killed_writer_leaves_every_earlier_record_readable() {
    let dir = std::env::temp_dir().join(format!("dynsmem-records-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("bench.jsonl");

    // One whole run: how long it takes and how many records it writes.
    let started = Instant::now();
    let status = bench(&path).wait().expect("bench");
    let full_time = started.elapsed();
    assert!(status.success(), "an unkilled bench fails: {status:?}");
    let full = read_jsonl(&path).expect("a complete run reads back");
    assert!(full.torn.is_empty(), "{:?}", full.torn);
    let per_run = full.records.len();
    assert!(per_run >= 10, "{per_run} records: too few for kills to land between them");

    // Kills at 5% .. 60% of a run (records come faster once caches are warm), each
    // appending to the same file.
    let mut before = per_run;
    let mut landed_mid_run = 0;
    for percent in [5u32, 15, 30, 45, 60] {
        let mut child = bench(&path);
        std::thread::sleep(full_time * percent / 100);
        let _ = child.kill();
        let status = child.wait().expect("waiting for the killed bench");
        let contents = read_jsonl(&path).unwrap_or_else(|e| panic!("after a kill at {percent}%: {e}"));
        let after = contents.records.len();
        assert!(after >= before, "after a kill at {percent}%: {after} records, {before} before it");
        assert_eq!(
            &contents.records[..per_run],
            &full.records[..],
            "after a kill at {percent}%: the first run's records changed"
        );
        // Every record read back is whole: the fields a table needs are there.
        for r in &contents.records {
            assert!(!r.family.is_empty() && !r.kernel.is_empty() && !r.commit.is_empty(), "{r:?}");
        }
        if status.signal() == Some(9) && after > before && after < before + per_run {
            landed_mid_run += 1;
        }
        common::note(&format!(
            "killed at {percent}% ({status:?}): {} new records, {} torn lines so far",
            after - before,
            contents.torn.len()
        ));
        before = after;
    }
    assert!(landed_mid_run >= 2, "only {landed_mid_run} kills landed between records: the test did not test");

    // A run after all the kills appends whole records after whatever a kill left.
    assert!(bench(&path).wait().expect("bench").success());
    let last = read_jsonl(&path).expect("reads back");
    assert_eq!(last.records.len(), before + per_run);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A wrong result fails the command, after the output is there to read: with a planted bug
/// (the CPU backend skips a workgroup of every `transpose_f32` launch), `run` prints its
/// error and `bench` its whole table, and both exit nonzero; `bench` names the record.
#[test]
fn a_record_that_fails_verification_fails_run_and_bench() {
    use dynsmem::host::backend::cpu::PLANT_SKIP_ENV;
    let cmd = |args: &[&str], plant: bool| {
        let mut c = common::cli::dynsmem(args);
        c.args(["--repeats", "1", "--warmup", "0", "--warmup-ms", "0"]);
        if plant {
            c.env(PLANT_SKIP_ENV, "transpose_f32");
        }
        c.output().expect("running dynsmem")
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();

    let run = ["run", "transpose", "--backend", "cpu", "--rows", "100", "--cols", "70"];
    assert!(cmd(&run, false).status.success(), "the unplanted run fails");
    let out = cmd(&run, true);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(!out.status.success(), "a wrong transpose exits 0:\n{stdout}");
    assert!(stdout.contains("error:") && stderr.contains("differs"), "{stdout}\n{stderr}");

    // The bench runs the CPU backend only where there is no GPU backend.
    if matches!(dynsmem::cuda(0), dynsmem::host::backend::Probe::Ready(_)) {
        common::note("bench part skipped: a CUDA device is present, so the bench does not run the CPU backend");
        return;
    }
    let out = cmd(&["bench", "--quick", "--n", "4096"], true);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(!out.status.success(), "a bench with a wrong transpose exits 0:\n{stdout}");
    assert!(stdout.contains("reduce") && stdout.contains("sgemm"), "the table is printed whole:\n{stdout}");
    assert!(stdout.contains("WRONG: "), "the wrong transpose is a footnote of the table:\n{stdout}");
    assert!(stderr.contains("failed verification") && stderr.contains("transpose"), "{stderr}");
}
