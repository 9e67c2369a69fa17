//! Bad input, through the CLI and the library: each refused with a typed error (a nonzero
//! exit, no panic, nothing launched), or, for the empty problems that have a meaning,
//! accepted with that meaning. `results/bad-input.md` lists every case here with its
//! outcome; `the_table_lists_every_cli_case` keeps the two in step.
//!
//! "Nothing launched" is checked through the record file: every `run` case gets
//! `--json FILE`, which the CLI opens before anything runs and appends the measurement
//! and the copy anchor to after they ran; a refused case must leave it empty (a config
//! refused only at launch would have written a record with its error).

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use dynsmem::host::Error;
use dynsmem::host::backend::Variant;
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::backend::{Arg, Backend, LaunchDims, Probe};
use dynsmem::host::contract::FamilyBackend;
use dynsmem::host::device::Dtype;
use dynsmem::host::families::reduce::{ReduceConfig, ReduceElement, ReduceOp, ReducePlan, ReduceProblem};

/// One CLI case: the arguments after `dynsmem`, the exit code (1: refused by dynsmem,
/// 2: refused by the argument parser) and what the message must name.
struct Case {
    args: &'static str,
    code: i32,
    needles: &'static [&'static str],
}

const fn refused(args: &'static str, needles: &'static [&'static str]) -> Case {
    Case { args, code: 1, needles }
}

const fn unparsed(args: &'static str, needles: &'static [&'static str]) -> Case {
    Case { args, code: 2, needles }
}

const REDUCE_CPU: &[Case] = &[
    refused(
        "run reduce --backend cpu --n 18446744073709551615",
        &["reduce_sum_f32", "18446744073709551615 bytes of host memory", "over the"],
    ),
    refused("run reduce --backend cpu --block 0", &["reduce_sum_f32", "invalid config", "block must be at least 1"]),
    refused(
        "run reduce --backend cpu --block 1025",
        &["reduce_sum_f32", "block of 1025 threads", "cpu maximum of 1024"],
    ),
    refused("run reduce --backend cpu --ipt 0", &["reduce_sum_f32", "items_per_thread must be at least 1"]),
    refused("run reduce --backend cpu --block 1024 --ipt 4294967295", &["1024 * 4294967295", "u32 chunk index"]),
    refused(
        "run reduce --backend cpu --staged --block 1024 --ipt 100",
        &["reduce_staged_sum_f32", "413696 bytes of launch-sized", "limit of 232448 bytes"],
    ),
    refused("run reduce --backend cpu --variant wgsl-literal", &["wgsl-literal variant of reduce is not supported"]),
    refused(
        "run reduce --backend cpu --n 100 --block 1 --ipt 1",
        &["reduce_sum_f32", "1 * 1", "would leave 100 partials", "never reach one value"],
    ),
    unparsed("run reduce --backend cpu --op foo", &["invalid value 'foo'", "--op"]),
    unparsed("run reduce --backend cpu --dtype f64", &["invalid value 'f64'", "--dtype"]),
    unparsed("run reduce --backend foo", &["invalid value 'foo'", "--backend"]),
    unparsed("run reduce --backend cpu --n -1", &["unexpected argument '-1'"]),
    unparsed("run reduce --backend cpu --n abc", &["invalid value 'abc'", "--n"]),
    unparsed("run reduce --backend cpu --block 99999999999999", &["99999999999999 is not in 0..=4294967295"]),
];

const REDUCE_WGSL: &[Case] = &[
    refused(
        "run reduce --backend wgsl --n 4294967296",
        &["reduce_sum_f32", "n = 4294967296", "WGSL u32 indexing", "at most 4294967295"],
    ),
    refused(
        "run reduce --backend wgsl --n 4294967295 --block 1 --ipt 1",
        &["reduce_sum_f32", "chunks + grid", "WGSL u32"],
    ),
    refused(
        "run reduce --backend wgsl --n 4294967295",
        &["a buffer of 17179869180 bytes", "max_storage_buffer_binding_size"],
    ),
    refused("run reduce --backend wgsl --block 2048", &["block of 2048 threads", "wgsl maximum of"]),
    refused(
        "run reduce --backend wgsl --staged --block 1024 --ipt 100",
        &["413696 bytes of static workgroup memory", "max_compute_workgroup_storage_size"],
    ),
    refused("run reduce --backend wgsl --variant launch-sized", &["launch-sized variant of reduce is not supported"]),
    refused("run reduce --backend wgsl --n 100 --block 1 --ipt 1", &["reduce_sum_f32", "never reach one value"]),
];

const COMMON_CPU: &[Case] = &[
    refused("run reduce --backend cpu --repeats 0", &["timing", "repeats = 0", "from 1 to 100000"]),
    refused("run reduce --backend cpu --repeats 4294967295", &["repeats = 4294967295", "from 1 to 100000"]),
    refused("run reduce --backend cpu --warmup 4294967295", &["warmup = 4294967295", "at most 100000"]),
    refused("run reduce --backend cpu --warmup-ms NaN", &["warmup_ms = NaN"]),
    refused("run reduce --backend cpu --warmup-ms inf", &["warmup_ms = inf"]),
    refused("run reduce --backend cpu --json /proc/dynsmem-no-such-dir/r.jsonl", &["--json /proc/dynsmem-no-such-dir"]),
    refused("bench --n 18446744073709551615", &["bench n=18446744073709551615", "bytes of host memory"]),
    refused("bench --repeats 0", &["repeats = 0"]),
    unparsed("run nosuchfamily", &["unrecognized subcommand 'nosuchfamily'"]),
    unparsed("devices --bogus", &["unexpected argument '--bogus'"]),
];

const SCAN_CPU: &[Case] = &[
    refused("run scan --backend cpu --n 18446744073709551615", &["scan_exclusive_f32", "bytes of host memory"]),
    refused(
        "run scan --backend cpu --block 0",
        &["scan_exclusive_f32", "block and items_per_thread must be at least 1"],
    ),
    refused("run scan --backend cpu --ipt 0", &["scan_exclusive_f32", "block and items_per_thread must be at least 1"]),
    refused("run scan --backend cpu --block 2000", &["scan_exclusive_f32", "block of 2000 threads", "maximum of 1024"]),
    refused(
        "run scan --backend cpu --ipt 6",
        &["scan_exclusive_f32", "items_per_thread must be a multiple of 4", "got 6"],
    ),
    refused(
        "run scan --backend cpu --block 1024 --ipt 100",
        &["414096 bytes of launch-sized", "limit of 232448 bytes"],
    ),
];

const SCAN_WGSL: &[Case] = &[
    refused("run scan --backend wgsl --block 1024 --ipt 100", &["430596 bytes of static workgroup memory"]),
    refused("run scan --backend wgsl --n 100 --block 1 --ipt 1", &["scan_exclusive_f32", "tiles of one element"]),
];

const HISTOGRAM_CPU: &[Case] = &[
    refused("run histogram --backend cpu --bins 0", &["histogram_u32", "at least one bin"]),
    // Every bin held, none counted in device memory: 4 MB of counters.
    refused(
        "run histogram --backend cpu --bins 1000000 --held 0",
        &["histogram_u32", "4000000 bytes of launch-sized", "232448"],
    ),
    refused("run histogram --backend cpu --cluster 32 --grid 32", &["histogram_u32", "clusters of 32", "1 to 16"]),
    refused("run histogram --backend cpu --cluster 2 --grid 3", &["histogram_u32", "not whole clusters of 2"]),
    refused("run histogram --backend cpu --copies 0", &["histogram_u32", "block, grid and copies must be at least 1"]),
    refused("run histogram --backend cpu --grid 0", &["histogram_u32", "block, grid and copies must be at least 1"]),
    refused("run histogram --backend cpu --block 0", &["histogram_u32", "block, grid and copies must be at least 1"]),
    refused("run histogram --backend cpu --block 1025", &["histogram_u32", "block of 1025 threads"]),
    refused(
        "run histogram --backend cpu --grid 4294967295",
        &["histogram_u32", "grid of 4294967295 blocks", "maximum of"],
    ),
    refused(
        "run histogram --backend cpu --out-of-range 101",
        &["histogram_u32", "out_of_range_pct = 101", "at most 100"],
    ),
    refused("run histogram --backend cpu --n 18446744073709551615", &["histogram_u32", "bytes of host memory"]),
];

const HISTOGRAM_WGSL: &[Case] = &[
    refused("run histogram --backend wgsl --n 2147483649", &["histogram_u32", "n = 2147483649", "at most 2147483648"]),
    refused("run histogram --backend wgsl --bins 100000", &["400000 bytes of static workgroup memory"]),
];

const CONV1D_CPU: &[Case] = &[
    refused("run conv1d --backend cpu --taps 2", &["conv1d_f32", "taps = 2", "an odd number from 3 to 129"]),
    refused("run conv1d --backend cpu --taps 0", &["conv1d_f32", "taps = 0", "an odd number from 3 to 129"]),
    refused("run conv1d --backend cpu --taps 131", &["conv1d_f32", "taps = 131", "an odd number from 3 to 129"]),
    refused("run conv1d --backend cpu --taps 4294967295", &["taps = 4294967295"]),
    refused("run conv1d --backend cpu --outputs-per-thread 5", &["outputs_per_thread 5 is not in the image"]),
    refused("run conv1d --backend cpu --block 0", &["conv1d_f32", "block must be at least 1 thread"]),
    refused("run conv1d --backend cpu --block 1025", &["conv1d_f32", "block of 1025 threads"]),
    refused("run conv1d --backend cpu --n 18446744073709551615", &["conv1d_f32", "bytes of host memory"]),
];

const CONV1D_WGSL: &[Case] = &[refused("run conv1d --backend wgsl --taps 2", &["conv1d_f32", "taps = 2"])];

const STENCIL2D_CPU: &[Case] = &[
    refused("run stencil2d --backend cpu --radius 33", &["stencil2d_f32", "radius 33 is outside 1..=32"]),
    refused("run stencil2d --backend cpu --radius 0", &["stencil2d_f32", "radius 0 is outside 1..=32"]),
    refused(
        "run stencil2d --backend cpu --tile-w 0",
        &["stencil2d_f32", "tile_w must be a multiple of 4, block a multiple of tile_w / 4"],
    ),
    refused(
        "run stencil2d --backend cpu --tile-w 3",
        &["stencil2d_f32", "tile_w must be a multiple of 4, block a multiple of tile_w / 4"],
    ),
    refused(
        "run stencil2d --backend cpu --block 0",
        &["stencil2d_f32", "tile_w must be a multiple of 4, block a multiple of tile_w / 4"],
    ),
    refused(
        "run stencil2d --backend cpu --width 4294967295 --height 4294967295",
        &["stencil2d_f32", "bytes of host memory"],
    ),
];

const TRANSPOSE_CPU: &[Case] = &[
    refused("run transpose --backend cpu --tile 0", &["transpose_f32", "must be a positive multiple of tile (0)"]),
    refused(
        "run transpose --backend cpu --tile 3",
        &["transpose_f32", "block (16) must be a positive multiple of tile (3)"],
    ),
    refused(
        "run transpose --backend cpu --tile 32 --block 16",
        &["block (16) must be a positive multiple of tile (32)"],
    ),
    refused(
        "run transpose --backend cpu --pad 4294967295",
        &["transpose_f32", "shared-memory layout", "overflows u32"],
    ),
    refused("run transpose --backend cpu --tile 1024 --block 1024", &["4198400 bytes of launch-sized", "232448"]),
    refused(
        "run transpose --backend cpu --rows 4294967295 --cols 1",
        &["transpose_f32", "rows = 4294967295", "at most 4294967287"],
    ),
    refused("run transpose --backend cpu --block 2048 --tile 8", &["transpose_f32", "block of 2048 threads"]),
];

const TRANSPOSE_WGSL: &[Case] = &[
    refused("run transpose --backend wgsl --rows 65536 --cols 65536", &["transpose_f32", "rows * cols = 4294967296"]),
    refused("run transpose --backend wgsl --tile 128 --block 128", &["66048 bytes of static workgroup memory"]),
    // The transpose's twin has no subgroup form (lavapipe, CI's adapter, has subgroups).
    refused(
        "run transpose --backend wgsl --variant wgsl-subgroup",
        &["wgsl-subgroup variant of transpose_f32", "uses no subgroup operation"],
    ),
];

const SOFTMAX_CPU: &[Case] = &[
    refused("run softmax --backend cpu --cols 0", &["softmax_f32", "rows of 0 elements have no softmax"]),
    refused("run softmax --backend cpu --cols 100000", &["softmax_f32", "400152 bytes of launch-sized", "232448"]),
    refused("run softmax --backend cpu --cluster 3", &["softmax_f32", "cluster must be a power of two blocks, not 3"]),
    refused("run softmax --backend cpu --cluster 32", &["softmax_f32", "clusters of 32", "at most 16"]),
    refused(
        "run softmax --backend cpu --rows 4294967295 --cols 1",
        &["softmax_f32", "rows + grid x rows per block = 4296015855", "row counter"],
    ),
    // The config's own check (the row cannot be carved) comes before the machine's memory.
    refused("run softmax --backend cpu --cols 4294967295", &["softmax_f32", "4294967295 elements of 4 bytes"]),
    refused("run softmax --backend cpu --block 0", &["softmax_f32", "block must be at least 1 thread"]),
    refused("run softmax --backend cpu --block 2000", &["softmax_f32", "block of 2000 threads"]),
];

const SOFTMAX_WGSL: &[Case] = &[
    refused("run softmax --backend wgsl --cols 32768", &["132096 bytes of static workgroup memory"]),
    refused("run softmax --backend wgsl --rows 4294967295 --cols 1", &["softmax_f32", "rows + grid"]),
];

const NBODY_CPU: &[Case] = &[
    refused("run nbody --backend cpu --tile 0", &["nbody_step_f32", "block and tile must be at least 1"]),
    refused("run nbody --backend cpu --block 0", &["nbody_step_f32", "block and tile must be at least 1"]),
    refused("run nbody --backend cpu --tile 100000", &["nbody_step_f32", "1600000 bytes of launch-sized", "232448"]),
    refused("run nbody --backend cpu --tile 4294967295", &["nbody_step_f32", "n + tile = ", "tile start"]),
    refused("run nbody --backend cpu --n 4294967295", &["nbody_step_f32", "n + tile = 4294967359"]),
    refused(
        "run nbody --backend cpu --n 4294967200 --tile 1 --block 1000",
        &["nbody_step_f32", "grid * block = 4294968000", "body index"],
    ),
    refused("run nbody --backend cpu --block 1025", &["nbody_step_f32", "block of 1025 threads"]),
];

const NBODY_WGSL: &[Case] = &[
    refused("run nbody --backend wgsl --tile 100000", &["1600000 bytes of static workgroup memory"]),
    refused("run nbody --backend wgsl --n 4294967295", &["nbody_step_f32", "n + tile"]),
];

/// Empty problems that have a meaning: accepted, run and verified (an empty output, or
/// the identity for reduce, zero counts for histogram).
const EMPTY_CPU: &[&str] = &[
    "run reduce --backend cpu --n 0",
    "run reduce --backend cpu --n 0 --op min --dtype u32",
    "run scan --backend cpu --n 0",
    "run histogram --backend cpu --n 0",
    "run conv1d --backend cpu --n 0",
    "run stencil2d --backend cpu --width 0",
    "run transpose --backend cpu --rows 0",
    "run softmax --backend cpu --rows 0",
    "run nbody --backend cpu --n 0",
];

const EMPTY_WGSL: &[&str] = &["run reduce --backend wgsl --n 0", "run transpose --backend wgsl --cols 0"];

/// The error of a call that must be refused (the accepted value need not be `Debug`).
trait Refused {
    fn refused(self) -> Error;
}

impl<T> Refused for Result<T, Error> {
    fn refused(self) -> Error {
        match self {
            Ok(_) => panic!("accepted, where a refusal was expected"),
            Err(e) => e,
        }
    }
}

static FILES: AtomicUsize = AtomicUsize::new(0);

fn temp_json() -> PathBuf {
    let i = FILES.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("dynsmem-bad-input-{}-{i}.jsonl", std::process::id()))
}

/// Runs the CLI. `run` cases get a record file (unless they name one) and, unless they
/// set timing flags, the shortest timing, so an accepted case finishes quickly.
fn dynsmem(args: &str, env: &[(&str, &str)]) -> (Output, Option<PathBuf>) {
    let mut argv: Vec<String> = args.split_whitespace().map(str::to_string).collect();
    let mut json = None;
    if argv.first().is_some_and(|a| a == "run") && argv.len() > 2 {
        if !args.contains("--json") {
            let path = temp_json();
            argv.extend(["--json".into(), path.display().to_string()]);
            json = Some(path);
        }
        if !args.contains("--repeats") && !args.contains("--warmup") {
            argv.extend(["--warmup", "0", "--warmup-ms", "0", "--repeats", "1"].map(String::from));
        }
    }
    let mut cmd = common::cli::dynsmem(&common::cli::strs(&argv));
    for (k, v) in env {
        cmd.env(k, v);
    }
    (cmd.output().expect("running the dynsmem binary"), json)
}

/// Asserts a case: its exit code (so no panic, 101, and no abort, a signal), no
/// "panicked" anywhere, each needle in stderr, and for `run` an empty record file.
fn check(case: &Case, env: &[(&str, &str)]) {
    check_reason(case, &[], env);
}

/// [`check`], where stderr must also hold at least one of `reasons` (none: no such
/// demand): for a refusal with more than one honest cause, which one depends on the machine.
fn check_reason(case: &Case, reasons: &[&str], env: &[(&str, &str)]) {
    let (out, json) = dynsmem(case.args, env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let what = format!("`dynsmem {}`\n--- stdout\n{stdout}--- stderr\n{stderr}", case.args);
    assert_eq!(out.status.code(), Some(case.code), "exit status {:?} of {what}", out.status);
    assert!(!stderr.contains("panicked") && !stdout.contains("panicked"), "a panic in {what}");
    for needle in case.needles {
        assert!(stderr.contains(needle), "{needle:?} missing from {what}");
    }
    assert!(reasons.is_empty() || reasons.iter().any(|r| stderr.contains(r)), "none of {reasons:?} in {what}");
    if case.code == 1 && case.args.starts_with("run ") {
        assert!(!stdout.contains("time:") && !stdout.contains("anchor:"), "something ran in {what}");
    }
    if let Some(path) = json {
        let written = std::fs::read(&path).map(|b| b.len()).unwrap_or(0);
        let _ = std::fs::remove_file(&path);
        assert_eq!(written, 0, "a refused case wrote records: {what}");
    }
}

fn check_all(cases: &[Case]) {
    for case in cases {
        check(case, &[]);
    }
    common::note(&format!("{} CLI cases refused as stated", cases.len()));
}

/// The WGSL cases need an adapter: skipped (with a line) without one, unless
/// `DYNSMEM_REQUIRE_WGSL=1`.
fn check_all_wgsl(test: &str, cases: &[Case]) {
    if common::wgsl_or_skip(test).is_some() {
        check_all(cases);
    }
}

fn accepted(args: &str) {
    let (out, json) = dynsmem(args, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let what = format!("`dynsmem {args}`\n--- stdout\n{stdout}--- stderr\n{stderr}");
    assert_eq!(out.status.code(), Some(0), "{what}");
    assert!(stdout.contains("verified: yes"), "{what}");
    assert!(!stderr.contains("panicked"), "{what}");
    if let Some(path) = json {
        let records = dynsmem::host::report::read_jsonl(&path).unwrap_or_else(|e| panic!("{what}: {e}"));
        let _ = std::fs::remove_file(&path);
        assert!(records.records.iter().any(|r| r.verified && r.error.is_none()), "{what}");
    }
}

#[test]
fn reduce_cli() {
    check_all(REDUCE_CPU);
    check_all_wgsl("reduce_cli", REDUCE_WGSL);
}

#[test]
fn common_flags_cli() {
    check_all(COMMON_CPU);
}

#[test]
fn scan_cli() {
    check_all(SCAN_CPU);
    check_all_wgsl("scan_cli", SCAN_WGSL);
}

#[test]
fn histogram_cli() {
    check_all(HISTOGRAM_CPU);
    check_all_wgsl("histogram_cli", HISTOGRAM_WGSL);
}

#[test]
fn conv1d_cli() {
    check_all(CONV1D_CPU);
    check_all_wgsl("conv1d_cli", CONV1D_WGSL);
}

#[test]
fn stencil2d_cli() {
    check_all(STENCIL2D_CPU);
}

#[test]
fn transpose_cli() {
    check_all(TRANSPOSE_CPU);
    check_all_wgsl("transpose_cli", TRANSPOSE_WGSL);
}

#[test]
fn softmax_cli() {
    check_all(SOFTMAX_CPU);
    check_all_wgsl("softmax_cli", SOFTMAX_WGSL);
}

#[test]
fn nbody_cli() {
    check_all(NBODY_CPU);
    check_all_wgsl("nbody_cli", NBODY_WGSL);
}

/// Sharded sweeps: options that cannot go together, and shards that do not exist, refused
/// before anything runs or is written.
const TUNE_SHARDS: &[Case] = &[
    Case { args: "tune reduce --backend cpu --shard 3/2", code: 2, needles: &["3/2", "1 <= I <= N"] },
    Case { args: "tune reduce --backend cpu --shard 0/2", code: 2, needles: &["0/2", "1 <= I <= N"] },
    Case { args: "tune reduce --backend cpu --shards 2", code: 2, needles: &["--slurm <DIR>"] },
    refused("tune reduce --backend cpu --replay --shard 1/2", &["--replay reads a cache"]),
    refused("tune reduce --backend cpu --shard 1/2 --devices 0,0", &["--shard runs one shard"]),
    refused("tune reduce --backend cpu --devices 0 --slurm none-written", &["one or the other"]),
    refused("tune reduce --backend cpu --slurm none-written", &["--slurm needs --shards N"]),
    refused("tune reduce --backend cpu --slurm none-written --shards 0", &["--shards 0"]),
    refused("tune reduce --backend wgsl --devices 0,1", &["cannot be picked by ordinal"]),
    refused("merge --out none-written.jsonl /nonexistent/shard.jsonl", &["/nonexistent/shard.jsonl"]),
];

#[test]
fn tune_shards_cli() {
    check_all(TUNE_SHARDS);
    for written in ["none-written", "none-written.jsonl"] {
        assert!(!std::path::Path::new(written).exists(), "a refused case wrote {written}");
    }
}

#[test]
fn empty_problems_cli() {
    for args in EMPTY_CPU {
        accepted(args);
    }
    if common::wgsl_or_skip("empty_problems_cli").is_some() {
        for args in EMPTY_WGSL {
            accepted(args);
        }
    }
}

/// Every CLI case above is a row of the table, in backquotes.
#[test]
fn the_table_lists_every_cli_case() {
    let table = include_str!("../results/bad-input.md");
    let all = [
        REDUCE_CPU,
        REDUCE_WGSL,
        COMMON_CPU,
        SCAN_CPU,
        SCAN_WGSL,
        HISTOGRAM_CPU,
        HISTOGRAM_WGSL,
        CONV1D_CPU,
        CONV1D_WGSL,
        STENCIL2D_CPU,
        TRANSPOSE_CPU,
        TRANSPOSE_WGSL,
        SOFTMAX_CPU,
        SOFTMAX_WGSL,
        NBODY_CPU,
        NBODY_WGSL,
        TUNE_SHARDS,
    ];
    let args = all
        .iter()
        .flat_map(|c| c.iter().map(|c| c.args))
        .chain(EMPTY_CPU.iter().copied())
        .chain(EMPTY_WGSL.iter().copied());
    for a in args {
        assert!(table.contains(&format!("`{a}`")), "results/bad-input.md has no row for `{a}`");
    }
}

/// Output nobody reads: a reader that closed the pipe (`dynsmem ... | head -1`) leaves the
/// command to finish quietly; a full device is an error. Neither is a panic.
#[test]
fn closed_or_full_stdout_is_not_a_panic() {
    let base = ["run", "reduce", "--backend", "cpu", "--n", "1000", "--repeats", "1", "--warmup-ms", "0"];
    let mut child = Command::new(common::dynsmem_bin())
        .args(base)
        .env("RUST_BACKTRACE", "0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("dynsmem");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("dynsmem");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return common::note("SKIPPED: no /dev/full (closed_or_full_stdout_is_not_a_panic)");
    };
    let out = Command::new(common::dynsmem_bin())
        .args(["devices"])
        .env("RUST_BACKTRACE", "0")
        .stdout(full)
        .output()
        .expect("dynsmem");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("writing to stdout") && !stderr.contains("panicked"), "{stderr}");
}

// ---- Missing drivers and devices -------------------------------------------------------

#[test]
fn missing_libcuda_is_a_typed_error() {
    match dynsmem::cuda(0) {
        Probe::Ready(_) => common::note("SKIPPED: libcuda is present (missing_libcuda_is_a_typed_error)"),
        Probe::Unavailable(_, why) if !why.contains("libcuda") => {
            common::note(&format!("SKIPPED: libcuda is present, CUDA unavailable for another reason: {why}"))
        }
        Probe::Unavailable(_, _) => {
            check(&refused("run reduce --backend cuda", &["cuda unavailable", "libcuda.so not found"]), &[]);
            let e = dynsmem::host::backend::cuda::CudaBackend::new(0, dynsmem::images::PTX).refused();
            assert!(matches!(e, Error::Unavailable { .. }), "{e}");
        }
    }
}

#[test]
fn missing_hip_runtime_is_a_typed_error() {
    match dynsmem::hip(0) {
        Probe::Ready(_) => common::note("SKIPPED: a HIP device is present (missing_hip_runtime_is_a_typed_error)"),
        Probe::Unavailable(_, _) => check(&refused("run reduce --backend hip", &["hip unavailable"]), &[]),
    }
}

/// The two honest reasons a WGSL run is refused where Vulkan has no driver, as
/// `WgpuBackend::new` gives them: no loader (`libvulkan.so.1`) at all, or a loader that
/// finds no adapter (no ICD). Which one a machine gives depends on what is installed, and
/// the tests' own search for the loader ([`vulkan_loaders`]) is a guess (a loader outside
/// the folders it reads, one of its files hidden in a mount namespace), so a test that
/// takes the refusal away from the driver accepts either, and nothing else: a panic, an
/// untyped or generic error, or a run that went ahead fails it.
const NO_VULKAN: [&str; 2] = ["no Vulkan loader (libvulkan.so.1 not found", "Vulkan loader found but no adapter"];

/// The loader's variables pointed at nothing: a loader finds no driver (ICD) and hence no
/// adapter, whatever is installed.
const NO_ICD: [(&str, &str); 2] =
    [("VK_ICD_FILENAMES", "/nonexistent/dynsmem.json"), ("VK_DRIVER_FILES", "/nonexistent/dynsmem.json")];

/// A Vulkan loader with no driver (ICD): the loader reads these variables instead of its
/// search path, and finds nothing. With no loader on the machine at all (or one hidden),
/// "no Vulkan loader" is the honest reason given instead: either is accepted, whatever
/// [`vulkan_loaders`] guesses.
#[test]
fn no_vulkan_adapter_is_a_typed_error() {
    let why = &["wgsl unavailable"];
    check_reason(&refused("run reduce --backend wgsl", why), &NO_VULKAN, &NO_ICD);
    check_reason(&refused("run softmax --backend wgsl", why), &NO_VULKAN, &NO_ICD);
}

/// Whether `path` can be read as an ELF file: a loader hidden behind `/dev/null` (as in
/// [`no_vulkan_loader_is_a_typed_error`], or `ci/run`'s step without a loader) is not one.
fn is_elf(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && magic == *b"\x7fELF"
}

/// The Vulkan loaders (`libvulkan.so.1`, readable as ELF) on the library path, in the
/// dynamic linker's cache (`ldconfig -p`) and in the usual folders. A guess: the tests
/// that use it accept either honest reason ([`NO_VULKAN`]) where it could be wrong.
fn vulkan_loaders() -> Vec<String> {
    let mut paths: Vec<String> = std::env::var("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| format!("{d}/libvulkan.so.1"))
        .collect();
    let cache = ["ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .iter()
        .find_map(|l| Command::new(l).arg("-p").output().ok().filter(|o| o.status.success()));
    if let Some(out) = cache {
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        paths.extend(
            text.lines()
                .filter(|l| l.trim_start().starts_with("libvulkan.so.1 "))
                .filter_map(|l| l.split("=> ").nth(1))
                .map(|p| p.trim().to_string()),
        );
    }
    let multiarch = format!("{}-linux-gnu", std::env::consts::ARCH);
    for dir in
        [&format!("/usr/lib/{multiarch}"), "/usr/lib64", "/usr/lib", &format!("/lib/{multiarch}"), "/usr/local/lib"]
    {
        paths.push(format!("{dir}/libvulkan.so.1"));
    }
    let mut seen = std::collections::BTreeSet::new();
    paths.retain(|p| seen.insert(p.clone()) && is_elf(std::path::Path::new(p)));
    paths
}

/// `s` quoted for `sh`.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// No Vulkan loader at all: the loader files (each path and the file it links to) are
/// hidden behind `/dev/null` in a private mount namespace (`unshare -m`, which needs root
/// or user namespaces; skipped without), and the namespace checks that none of them reads
/// as ELF any more. Where no loader is found, the CLI runs as it is. The ICD variables are
/// pointed at nothing as well, so a loader the search missed cannot let the run go ahead:
/// it gives the other honest reason ([`NO_VULKAN`]), noted.
#[test]
fn no_vulkan_loader_is_a_typed_error() {
    let loaders = vulkan_loaders();
    let case = refused("run reduce --backend wgsl", &["wgsl unavailable"]);
    if loaders.is_empty() {
        check_reason(&case, &NO_VULKAN, &NO_ICD);
        return;
    }
    let mut hidden = std::collections::BTreeSet::new();
    for p in &loaders {
        if let Ok(target) = std::fs::canonicalize(p) {
            hidden.insert(target.display().to_string());
        }
        hidden.insert(p.clone());
    }
    let hide: String = hidden.iter().map(|p| format!("mount --bind /dev/null {}; ", sh_quote(p))).collect();
    // After the mounts, a loader file that still has bytes was not hidden: exit 3.
    let verify: String = hidden
        .iter()
        .map(|p| format!("if test -s {0}; then echo {0} not hidden >&2; exit 3; fi; ", sh_quote(p)))
        .collect();
    let probe = Command::new("unshare").args(["-m", "sh", "-c", &format!("set -e; {hide}")]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        common::note(
            "SKIPPED: cannot make a mount namespace to hide the Vulkan loader (no_vulkan_loader_is_a_typed_error)",
        );
        return;
    }
    let bin = common::dynsmem_bin();
    let script =
        format!("set -e; {hide}{verify}exec {} run reduce --backend wgsl", sh_quote(&bin.display().to_string()));
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .envs(NO_ICD)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("unshare");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let what = format!("`dynsmem {}` with {hidden:?} hidden\n--- stderr\n{stderr}", case.args);
    assert_ne!(out.status.code(), Some(3), "the loader files were not hidden: {what}");
    assert_eq!(out.status.code(), Some(1), "{what}");
    assert!(!stderr.contains("panicked"), "a panic in {what}");
    assert!(stderr.contains("wgsl unavailable"), "{what}");
    assert!(NO_VULKAN.iter().any(|r| stderr.contains(r)), "none of {NO_VULKAN:?} in {what}");
    if !stderr.contains(NO_VULKAN[0]) {
        common::note(&format!(
            "no_vulkan_loader_is_a_typed_error: a Vulkan loader outside {hidden:?} was found (refused as \"no adapter\")"
        ));
    }
}

// ---- The library ------------------------------------------------------------------------

fn small_timing() -> dynsmem::host::measure::TimingOptions {
    dynsmem::host::measure::TimingOptions { warmup: 0, warmup_ms: 0.0, repeats: 1, energy_ms: 0.0, back_to_back: true }
}

/// The same refusals as the CLI's, as the library returns them: the variant, not only
/// the message.
#[test]
fn library_refusals_are_typed() {
    use dynsmem::host::device::transpose::TransposeConfig;
    use dynsmem::host::device::{histogram::HistogramConfig, nbody::NbodyConfig, softmax::SoftmaxConfig};
    use dynsmem::host::families::{histogram, nbody, softmax, transpose};
    let cpu = CpuBackend::new();
    let v = Variant::LaunchSized;
    let reduce = |n: u64, block, ipt, staged| {
        let p = ReduceProblem { n, op: ReduceOp::Sum, dtype: Dtype::F32 };
        ReducePlan::new(&cpu, p, ReduceConfig { block, items_per_thread: ipt, staged }, v).refused()
    };
    assert!(matches!(reduce(100, 0, 4, false), Error::InvalidConfig { .. }));
    assert!(matches!(reduce(100, 1025, 4, false), Error::BlockTooLarge { requested: 1025, limit: 1024, .. }));
    assert!(matches!(
        reduce(100, 1024, 100, true),
        Error::SharedMemoryLimit { requested: 413_696, limit: 232_448, .. }
    ));
    assert!(matches!(reduce(u64::MAX, 64, 4, false), Error::ProblemTooLarge { memory: "host", .. }));
    let e = ReducePlan::new(
        &cpu,
        ReduceProblem { n: 10, op: ReduceOp::Sum, dtype: Dtype::F32 },
        ReduceConfig { block: 32, items_per_thread: 1, staged: false },
        Variant::WgslLiteral,
    )
    .refused();
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");

    let hist = |bins, pct, config| {
        let p = histogram::HistogramProblem { n: 100, bins, out_of_range_pct: pct };
        histogram::prepare(&cpu, p, config, v, 1).refused()
    };
    let ok = HistogramConfig { block: 32, grid: 2, copies: 1, cluster: 1, held: 0, bits: 32, merge: false };
    assert!(matches!(hist(0, 0, ok), Error::InvalidProblem { .. }));
    assert!(matches!(hist(16, 101, ok), Error::InvalidProblem { .. }));
    assert!(matches!(hist(100_000, 0, ok), Error::SharedMemoryLimit { .. }));
    assert!(matches!(hist(16, 0, HistogramConfig { copies: 0, ..ok }), Error::InvalidConfig { .. }));
    assert!(matches!(hist(16, 0, HistogramConfig { grid: u32::MAX, ..ok }), Error::GridTooLarge { .. }));

    let tr = |rows, cols, config| {
        transpose::prepare(&cpu, transpose::TransposeProblem { rows, cols }, config, v, 1).refused()
    };
    let ok = TransposeConfig { block: 16, tile: 8, pad: 1 };
    assert!(matches!(tr(4, 4, TransposeConfig { tile: 3, ..ok }), Error::InvalidConfig { .. }));
    assert!(matches!(tr(4, 4, TransposeConfig { pad: u32::MAX, ..ok }), Error::Layout { .. }));
    assert!(matches!(tr(u32::MAX, 1, ok), Error::IndexOverflow { index: "u32 (tile row)", .. }));
    assert!(matches!(tr(1, u32::MAX - 3, ok), Error::IndexOverflow { .. }));

    let sm = |rows, cols, block| {
        softmax::prepare(&cpu, softmax::SoftmaxProblem { rows, cols }, SoftmaxConfig::blocks(block), v, 1).refused()
    };
    assert!(matches!(sm(2, 0, 16), Error::InvalidProblem { .. }));
    assert!(matches!(sm(2, 100_000, 16), Error::SharedMemoryLimit { .. }));
    assert!(matches!(sm(u32::MAX, 1, 16), Error::IndexOverflow { .. }));
    assert!(matches!(sm(2, 4, 0), Error::InvalidConfig { .. }));

    let nb =
        |n, block, tile| nbody::prepare(&cpu, nbody::NbodyProblem::new(n), NbodyConfig { block, tile }, v, 1).refused();
    assert!(matches!(nb(10, 32, 0), Error::InvalidConfig { .. }));
    assert!(matches!(nb(u32::MAX, 32, 64), Error::IndexOverflow { .. }));
    assert!(matches!(nb(4_294_967_200, 1000, 1), Error::IndexOverflow { requested: 4_294_968_000, .. }));
    assert!(matches!(nb(10, 32, 100_000), Error::SharedMemoryLimit { .. }));
    let mut p = nbody::NbodyProblem::new(10);
    p.softening = f32::NAN;
    let e = nbody::prepare(&cpu, p, NbodyConfig { block: 32, tile: 32 }, v, 1).refused();
    assert!(matches!(e, Error::InvalidProblem { .. }), "{e}");

    let e = dynsmem::host::backend::time(
        &cpu,
        dynsmem::host::measure::TimingOptions { repeats: 0, ..small_timing() },
        &mut || Ok(()),
    )
    .refused();
    assert!(matches!(e, Error::InvalidConfig { .. }), "{e}");
}

/// Buffers whose lengths (or element types) do not match what they are used for.
#[test]
fn mismatched_buffers_are_refused() {
    fn on<B: FamilyBackend>(b: &B) {
        let src = b.htod(&[1u32; 10]).unwrap();
        let mut dst = b.alloc::<u32>(11).unwrap();
        let e = b.copy(&src, &mut dst).refused();
        assert!(
            matches!(e, Error::InvalidProblem { .. })
                && e.to_string().contains("source has 10 elements, destination 11"),
            "{e}"
        );

        let variant = b.variants()[0];
        let p = ReduceProblem { n: 100, op: ReduceOp::Sum, dtype: Dtype::F32 };
        let plan =
            ReducePlan::new(b, p, ReduceConfig { block: 32, items_per_thread: 1, staged: false }, variant).unwrap();
        let partials = plan.alloc_partials::<f32>().unwrap();
        let short = b.htod(&f32::inputs(99, 1)).unwrap();
        let e = plan.launch(&short, &partials).refused();
        assert!(e.to_string().contains("input buffer has 99 elements, the plan is for 100"), "{e}");
        let input = b.htod(&f32::inputs(100, 1)).unwrap();
        let tiny = [b.alloc::<f32>(1).unwrap(), b.alloc::<f32>(1).unwrap()];
        let e = plan.launch(&input, &tiny).refused();
        assert!(e.to_string().contains("partial buffers must hold"), "{e}");
        let e = plan.run(&b.htod(&[1u32; 100]).unwrap()).refused();
        assert!(e.to_string().contains("buffers of u32 for a plan over f32"), "{e}");

        let sp = dynsmem::host::families::softmax::SoftmaxProblem { rows: 3, cols: 5 };
        let cfg = dynsmem::host::device::softmax::SoftmaxConfig::blocks(8);
        let e = dynsmem::host::families::softmax::prepare_with(b, sp, cfg, b.variants()[0], vec![0.0; 14]).refused();
        assert!(e.to_string().contains("14 logits given for 3 x 5 = 15"), "{e}");
    }
    let cpu = CpuBackend::new();
    on(&cpu);
    // A launch whose arguments do not match the kernel's parameters.
    let k = cpu.kernel("reduce_sum_f32").unwrap();
    let buf = cpu.alloc::<f32>(4).unwrap();
    let e = cpu.launch(&k, LaunchDims::new(1, 4, 16), &[buf.arg(), Arg::U32(4)]).refused();
    assert!(matches!(e, Error::ArgumentMismatch { .. }), "{e}");
    if let Some(w) = common::wgsl_or_skip("mismatched_buffers_are_refused") {
        on(&w);
    }
}

/// Allocations past what the device has: typed errors, nothing allocated.
#[test]
fn allocations_past_memory_are_typed_errors() {
    let cpu = CpuBackend::new();
    let e = cpu.alloc::<f32>(usize::MAX / 2).refused();
    assert!(matches!(e, Error::OutOfMemory { requested: u64::MAX, .. }), "{e}");
    if let Some(total) = cpu.info().limits.memory_bytes {
        let len = (total / 4 + 1) as usize;
        let e = cpu.alloc::<u32>(len).refused();
        assert!(matches!(e, Error::OutOfMemory { total: Some(t), .. } if t == total), "{e}");
        assert!(e.to_string().contains(&format!("cannot allocate {} bytes", 4 * len)), "{e}");
    }
    if let Some(w) = common::wgsl_or_skip("allocations_past_memory_are_typed_errors") {
        let limit = w.info().limits.max_buffer_bytes;
        let len = (limit / 4 + 1) as usize;
        let e = w.alloc::<u32>(len).refused();
        assert!(matches!(e, Error::BufferTooLarge { requested, .. } if requested == 4 * len as u64), "{e}");
        // Past u64 once padded: refused, not wrapped to an empty buffer.
        let e = w.alloc::<u32>(usize::MAX / 2).refused();
        assert!(matches!(e, Error::BufferTooLarge { .. }), "{e}");
    }
    if let Some(cuda) = common::cuda_or_skip("allocations_past_memory_are_typed_errors") {
        let total = cuda.info().limits.memory_bytes.expect("CUDA reports its memory");
        let e = cuda.alloc::<u32>((total / 4 + 1) as usize).refused();
        assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
        // Within the total but not free twice: the driver's own out-of-memory.
        let sixty_percent = (total as f64 * 0.6 / 4.0) as usize;
        let first = cuda.alloc::<u32>(sixty_percent).expect("60% of the device");
        let e = cuda.alloc::<u32>(sixty_percent).refused();
        assert!(matches!(e, Error::OutOfMemory { free: Some(_), total: Some(_), .. }), "{e}");
        drop(first);
    }
}

/// Reduce past 2^32 elements on CUDA: the Rust kernel walks chunks with u64 indices, so
/// the size is supported, not refused (the WGSL form refuses it, above). Needs 17 GB on
/// the device and about 40 GB on the host; skipped without.
#[test]
fn reduce_past_u32_indexing_cuda() {
    let Some(cuda) = common::cuda_or_skip("reduce_past_u32_indexing_cuda") else { return };
    let n = (1u64 << 32) + 4099;
    let host_ok = dynsmem::host::backend::host_memory().is_some_and(|m| m.total > 48 << 30);
    if cuda.info().limits.memory_bytes.is_none_or(|t| t < 24 << 30) || !host_ok {
        common::note("SKIPPED: reduce_past_u32_indexing_cuda needs 24 GB of device and 48 GB of host memory");
        return;
    }
    // One input (17 GB) for the three operators: generating it is the slow part.
    let data = u32::inputs(n as usize, 5);
    let input = cuda.htod(&data).expect("upload");
    for op in ReduceOp::ALL {
        let p = ReduceProblem { n, op, dtype: Dtype::U32 };
        let plan =
            ReducePlan::new(&cuda, p, dynsmem::host::families::reduce::default_config(&cuda), Variant::LaunchSized)
                .unwrap_or_else(|e| panic!("{op:?} over {n} u32: {e}"));
        let got: u32 = plan.run(&input).unwrap_or_else(|e| panic!("{op:?} over {n} u32: {e}"));
        plan.verify(&data, got).unwrap_or_else(|e| panic!("{op:?} over {n} u32: {e}"));
        common::note(&format!("reduce {op:?} over {n} u32 elements on CUDA: {got}, verified"));
    }
}
