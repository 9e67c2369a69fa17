//! `tune ... --devices 0,1,..`: one worker process per listed GPU of this host, each a
//! `dynsmem tune ... --shard I/N` pinned to its GPU through the environment
//! (`CUDA_VISIBLE_DEVICES`, `HIP_VISIBLE_DEVICES`), all at once; then the caller merges
//! their shard caches into `--cache` as `dynsmem merge` does.
//!
//! Each worker writes its own cache and its own log (`<cache stem>.shard-I-of-N.log`,
//! its stdout and stderr but for the progress lines), and reports progress on stderr in
//! machine lines ([`crate::host::tune::progress::WORKER_PREFIX`]) that this process
//! draws as one bar per worker (one line per evaluation when stderr is not a terminal).
//! Workers listed on the same GPU take turns to launch (a lock file beside the cache,
//! [`crate::cli::files::TIMING_LOCK`], held from a config's verification run to its last
//! timed run): two processes timing at once on one GPU time each other's kernels too.
//! Their inputs, uploads and CPU references are still made at the same time.
//! Each worker is supervised ([`Supervisor`]): a config that faults (the device context is
//! lost) or hangs past its time is recorded as failed and a new worker goes on from the
//! cache. A worker that cannot go on loses none of the configs it finished: they are in
//! its cache, the others' results are merged anyway, the command fails naming it, and
//! running the same command again measures only what is missing.
//!
//! [`supervised`] is the same for a sweep on one device: the plain `tune` command.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use crate::cli::{BackendKind, Invocation, TuneCommon, worker_args};
use crate::host::family::DynFamily;
use crate::host::tune::Shard;
use crate::host::tune::progress::{bar_style, parse_worker_line};
use crate::host::tune::supervise::{SUPERVISED_ENV, Supervisor, Timeouts, WorkerEnd};
use anyhow::{Context, bail};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget};

use super::emit;
use crate::cli::files::TIMING_LOCK;

/// The variable a worker finds its device in, for its records.
const WORKER_DEVICE: &str = "DYNSMEM_WORKER_DEVICE";

/// This host's name, for the records of sharded sweeps.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

/// The device this process was pinned to: by `--devices`, else by the usual variables
/// (Slurm's `--gres=gpu` sets `CUDA_VISIBLE_DEVICES`).
pub fn pinned_device() -> Option<String> {
    [WORKER_DEVICE, "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
}

/// What the workers left: their shard caches, and the workers that failed.
pub struct Finished {
    pub caches: Vec<PathBuf>,
    pub failed: Vec<String>,
}

/// The supervisor's limits from the command line.
pub fn timeouts(common: &TuneCommon) -> Timeouts {
    Timeouts { fixed: common.config_timeout, ..Timeouts::default() }
}

/// What a supervisor says of a worker that ended without finishing.
fn describe_end(end: &WorkerEnd) -> Option<String> {
    match end {
        WorkerEnd::Finished | WorkerEnd::Failed { .. } => None,
        WorkerEnd::ContextLost => Some("a config faulted and lost the device context (recorded)".into()),
        WorkerEnd::TimedOut { config, limit } => Some(format!("{config} ran past {limit}: killed, recorded as failed")),
        WorkerEnd::Died { config, status, retried: true } => {
            Some(format!("the worker {status} while {config} ran; it runs again in the next worker"))
        }
        WorkerEnd::Died { config, status, retried: false } => {
            Some(format!("the worker {status} while {config} ran: recorded as failed"))
        }
    }
}

/// Draws a worker's progress line on `bar`, and with `lines` (stderr is not a terminal) also
/// prints it, after the worker's `label` where there are several; `false` when `line` is
/// not a progress line.
fn show_progress(bar: &ProgressBar, line: &str, lines: bool, label: Option<&str>) -> bool {
    let Some((done, total, best)) = parse_worker_line(line) else { return false };
    bar.set_length(total);
    bar.set_position(done);
    bar.set_message(best.to_string());
    if lines && done > 0 {
        match label {
            Some(label) => eprintln!("[{label}] {done}/{total} {best}"),
            None => eprintln!("[{done}/{total}] {best}"),
        }
    }
    true
}

/// `tune` on one device, supervised: this process starts the sweep as a worker (this
/// binary, the same command line with `--worker`), passes its report through, draws its
/// progress, and restarts it past configs that fault or hang ([`Supervisor`]).
pub fn supervised(common: &TuneCommon, cache: &Path) -> anyhow::Result<()> {
    let invocation = Invocation::current()?;
    let args = invocation.rest();
    let bar = ProgressBar::with_draw_target(
        None,
        if common.quiet { ProgressDrawTarget::hidden() } else { ProgressDrawTarget::stderr() },
    );
    bar.set_style(bar_style());
    let lines = !common.quiet && bar.is_hidden();
    let mut supervisor = Supervisor::new(cache, timeouts(common));
    let mut started = 0u32;
    let result = supervisor.run(
        &mut || {
            started += 1;
            let mut cmd = invocation.worker_command(&args);
            cmd.arg("--worker").env(SUPERVISED_ENV, "1");
            cmd.stdin(Stdio::piped()).stdout(Stdio::inherit()).stderr(Stdio::piped()).spawn()
        },
        &mut |line| {
            if !show_progress(&bar, line, lines, None) {
                bar.suspend(|| eprintln!("{line}"));
            }
        },
    );
    bar.finish_and_clear();
    for end in &supervisor.ends {
        if let Some(what) = describe_end(end) {
            say!("supervisor: {what}");
        }
    }
    if started > 1 {
        say!(
            "supervisor: {started} worker processes ran this sweep (the configs they finished are in {})",
            cache.display()
        );
    }
    result.map_err(anyhow::Error::from)
}

/// One running worker.
struct Running {
    label: String,
    log: PathBuf,
    thread: std::thread::JoinHandle<(anyhow::Result<()>, Vec<WorkerEnd>)>,
    summary: Arc<Mutex<Option<String>>>,
}

/// Runs the sweep as one worker per entry of `--devices`, all at once, each supervised
/// ([`Supervisor`]: restarted past configs that fault or hang), and waits for them.
pub fn run(family: &dyn DynFamily, common: &TuneCommon) -> anyhow::Result<Finished> {
    let devices = &common.shards.devices;
    let distinct: BTreeSet<u32> = devices.iter().copied().collect();
    if common.backend == Some(BackendKind::Wgsl) && distinct.len() > 1 {
        bail!(
            "--devices {devices:?} with --backend wgsl: a Vulkan adapter cannot be picked by ordinal here \
             (DYNSMEM_WGPU_ADAPTER picks one by name); list one device, repeated for several workers"
        );
    }
    let n = u32::try_from(devices.len()).context("--devices: too many workers")?;
    let invocation = Invocation::current()?;
    let args = worker_args(&invocation.rest());
    let bars = MultiProgress::with_draw_target(if common.quiet {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    });
    let lines = !common.quiet && bars.is_hidden();
    say!("{} workers for tune {}: devices {devices:?}", n, family.name());
    let mut running = Vec::new();
    for (k, &device) in devices.iter().enumerate() {
        let shard = Shard::new(k as u32 + 1, n).expect("1 <= k + 1 <= n");
        let label = format!("worker {shard} (device {device})");
        let log = shard.cache_path(&common.cache).with_extension("log");
        let file = Arc::new(Mutex::new(create_log(&log)?));
        let mut cmd = invocation.worker_command(&args);
        cmd.args(["--shard", &shard.to_string(), "--worker"]);
        cmd.env(WORKER_DEVICE, device.to_string()).env(SUPERVISED_ENV, "1");
        if common.backend != Some(BackendKind::Cpu) {
            cmd.env("CUDA_VISIBLE_DEVICES", device.to_string()).env("HIP_VISIBLE_DEVICES", device.to_string());
            // Workers sharing a GPU would time each other's kernels: they take turns.
            if devices.iter().filter(|&&d| d == device).count() > 1 {
                let lock = common.cache.with_extension(format!("device-{device}.lock"));
                cmd.env(TIMING_LOCK, lock);
            }
        }
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        // Its length comes with the worker's first progress line (the size of its shard).
        let bar = bars.add(ProgressBar::new(1));
        bar.set_style(bar_style());
        bar.set_prefix(format!("{label} | "));
        bar.set_message("starting");
        let summary = Arc::new(Mutex::new(None));
        let mut supervisor = Supervisor::new(&shard.cache_path(&common.cache), timeouts(common));
        let thread = std::thread::spawn({
            let (label, summary) = (label.clone(), summary.clone());
            move || {
                let mut stdout_readers = Vec::new();
                let result = supervisor.run(
                    &mut || {
                        let mut child = cmd.spawn()?;
                        let out = child.stdout.take().expect("piped");
                        let (file, summary) = (file.clone(), summary.clone());
                        stdout_readers.push(std::thread::spawn(move || {
                            for line in BufReader::new(out).lines().map_while(Result::ok) {
                                if line.contains(" evaluations (") {
                                    *summary.lock().expect("not poisoned") = Some(line.clone());
                                }
                                let _ = writeln!(file.lock().expect("not poisoned"), "{line}");
                            }
                        }));
                        Ok(child)
                    },
                    &mut |line| {
                        if !show_progress(&bar, line, lines, Some(&label)) {
                            let _ = writeln!(file.lock().expect("not poisoned"), "{line}");
                        }
                    },
                );
                for r in stdout_readers {
                    let _ = r.join();
                }
                bar.finish_and_clear();
                (result.map_err(anyhow::Error::from), supervisor.ends)
            }
        });
        running.push(Running { label, log, thread, summary });
    }
    let mut failed = Vec::new();
    for w in running {
        let (result, ends) = w.thread.join().map_err(|_| anyhow::anyhow!("the supervisor of {} panicked", w.label))?;
        for end in &ends {
            if let Some(what) = describe_end(end) {
                say!("{}: supervisor: {what}", w.label);
            }
        }
        match result {
            Ok(()) => {
                let summary = w.summary.lock().expect("not poisoned").clone().unwrap_or_default();
                say!("{}: {summary} (log {})", w.label, w.log.display());
            }
            Err(e) => {
                say!("{} FAILED ({e}); the end of its log {}:", w.label, w.log.display());
                for line in tail(&w.log, 5) {
                    say!("  | {line}");
                }
                failed.push(w.label);
            }
        }
    }
    // A worker that died before its first config left no cache.
    let caches = Shard::all(n).map(|s| s.cache_path(&common.cache)).filter(|p| p.exists()).collect();
    Ok(Finished { caches, failed })
}

fn create_log(path: &Path) -> anyhow::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    File::create(path).with_context(|| format!("creating the worker log {}", path.display()))
}

/// The last `n` lines of a file (none if it cannot be read).
fn tail(path: &Path, n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].iter().map(|s| s.to_string()).collect()
}
