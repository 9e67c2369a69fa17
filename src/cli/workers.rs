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
//! A worker that dies (killed, out of memory, a driver fault) loses none of the configs it
//! finished: they are in its cache, the others' results are merged anyway, the command
//! fails naming it, and running the same command again measures only what is missing.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use crate::cli::{BackendKind, TuneCommon, worker_args};
use crate::host::family::DynFamily;
use crate::host::tune::Shard;
use crate::host::tune::progress::{bar_style, parse_worker_line};
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

/// One running worker.
struct Running {
    label: String,
    log: PathBuf,
    child: std::process::Child,
    readers: Vec<std::thread::JoinHandle<()>>,
    summary: Arc<Mutex<Option<String>>>,
}

/// Runs the sweep as one worker per entry of `--devices`, all at once, and waits for them.
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
    let exe = std::env::current_exe().context("the path of this binary")?;
    let args = worker_args(&std::env::args().skip(1).collect::<Vec<_>>());
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
        let file = create_log(&log)?;
        let mut cmd = Command::new(&exe);
        cmd.args(&args).args(["--shard", &shard.to_string(), "--worker"]);
        cmd.env(WORKER_DEVICE, device.to_string());
        if common.backend != Some(BackendKind::Cpu) {
            cmd.env("CUDA_VISIBLE_DEVICES", device.to_string()).env("HIP_VISIBLE_DEVICES", device.to_string());
            // Workers sharing a GPU would time each other's kernels: they take turns.
            if devices.iter().filter(|&&d| d == device).count() > 1 {
                let lock = common.cache.with_extension(format!("device-{device}.lock"));
                cmd.env(TIMING_LOCK, lock);
            }
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {label}: {}", exe.display()))?;
        // Its length comes with the worker's first progress line (the size of its shard).
        let bar = bars.add(ProgressBar::new(1));
        bar.set_style(bar_style());
        bar.set_prefix(format!("{label} | "));
        bar.set_message("starting");
        let summary = Arc::new(Mutex::new(None));
        let file = Arc::new(Mutex::new(file));
        let out = child.stdout.take().expect("piped");
        let err = child.stderr.take().expect("piped");
        let readers = vec![
            {
                let (file, summary) = (file.clone(), summary.clone());
                std::thread::spawn(move || {
                    for line in BufReader::new(out).lines().map_while(Result::ok) {
                        if line.contains(" evaluations (") {
                            *summary.lock().expect("not poisoned") = Some(line.clone());
                        }
                        let _ = writeln!(file.lock().expect("not poisoned"), "{line}");
                    }
                })
            },
            {
                let label = label.clone();
                std::thread::spawn(move || {
                    for line in BufReader::new(err).lines().map_while(Result::ok) {
                        match parse_worker_line(&line) {
                            Some((done, total, best)) => {
                                bar.set_length(total);
                                bar.set_position(done);
                                bar.set_message(best.to_string());
                                if lines && done > 0 {
                                    eprintln!("[{label}] {done}/{total} {best}");
                                }
                            }
                            None => {
                                let _ = writeln!(file.lock().expect("not poisoned"), "{line}");
                            }
                        }
                    }
                    bar.finish_and_clear();
                })
            },
        ];
        running.push(Running { label, log, child, readers, summary });
    }
    let mut failed = Vec::new();
    for mut w in running {
        let status = w.child.wait().with_context(|| format!("waiting for {}", w.label))?;
        for r in w.readers {
            let _ = r.join();
        }
        if status.success() {
            let summary = w.summary.lock().expect("not poisoned").clone().unwrap_or_default();
            say!("{}: {summary} (log {})", w.label, w.log.display());
        } else {
            say!("{} FAILED ({status}); the end of its log {}:", w.label, w.log.display());
            for line in tail(&w.log, 5) {
                say!("  | {line}");
            }
            failed.push(w.label);
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
