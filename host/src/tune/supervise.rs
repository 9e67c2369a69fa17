//! Sweeps that survive configs which fault or hang: the configs run in a worker process
//! that a supervisor watches, kills and restarts, recording the config that took the
//! worker down as failed, with why, before the sweep goes on in a new worker.
//!
//! Why a process: after a GPU fault (an illegal address, a trap) CUDA refuses every later
//! call of the context ("sticky" errors), and a kernel that never leaves a barrier cannot
//! be stopped from inside the process that launched it. The driver frees a killed
//! process's context, and a new process starts clean.
//!
//! The worker is any process that runs the sweep with [`super::RealRunner::announce`] on,
//! writing its cache as it goes (the CLI's `tune` runs itself as its own worker). Its
//! stderr carries machine lines, each alone on its line:
//! - [`LAUNCHING`] + the config's cache entry as JSON, already marked as a failure: sent
//!   after the config's inputs and reference are made, before its first launch. From here
//!   the config's run is timed ([`Timeouts`]).
//! - [`RECORDED`]: the config's entry is in the cache.
//! - [`CONTEXT_LOST`]: the last recorded config lost the device context; the worker stops.
//!
//! Every other line goes to the caller (progress lines, logs). When the worker ends:
//! - successfully: the sweep is done;
//! - after [`CONTEXT_LOST`]: a new worker resumes from the cache (the faulting config is
//!   in it, with the fault's message naming it);
//! - while a config ran (after [`LAUNCHING`], before [`RECORDED`]): the config's entry is
//!   appended with the reason (the timeout it ran past, the signal or status the worker
//!   died of, the worker's last lines), and a new worker resumes. A worker killed by
//!   SIGKILL, SIGTERM or SIGINT that the supervisor did not send (an operator, the
//!   out-of-memory killer) is not the config's doing: the config runs again in the new
//!   worker, and is recorded as failed only if it is running at a second such death;
//! - otherwise (it could not start, bad options): the supervisor gives up and says why.
//!
//! Nothing is measured twice: the worker's own appends and the supervisor's are the only
//! writes, never at once (the supervisor writes only while no worker runs), and a new
//! worker answers every recorded config from the cache. When nothing fails, what this
//! costs is one process start and the work a worker redoes at its start (backend,
//! inputs, reference): paid once per sweep, and again only at a restart.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::cache::{CacheEntry, TuneCache};
use crate::error::{Error, Result};

/// The start of the line a worker sends before a config's first launch.
pub const LAUNCHING: &str = "@launching ";
/// The line a worker sends once a config's entry is in the cache.
pub const RECORDED: &str = "@recorded";
/// The line a worker sends when the device context is lost; it stops after it.
pub const CONTEXT_LOST: &str = "@context-lost";
/// The variable a supervisor sets for its workers: with it, a worker ends when its stdin
/// closes (the supervisor died), instead of running on without anyone to watch it.
pub const SUPERVISED_ENV: &str = "DYNSMEM_SUPERVISED";

/// Sends a machine line to the supervisor.
pub fn announce(line: &str) {
    eprintln!("{line}");
}

/// Sends [`LAUNCHING`] with `pending`, the entry to record if the worker dies or hangs.
pub fn announce_launching(pending: &CacheEntry) {
    eprintln!("{LAUNCHING}{}", serde_json::to_string(pending).expect("entries serialize"));
}

/// In a worker a supervisor started ([`SUPERVISED_ENV`] set): a thread that ends this
/// process when its stdin closes, which happens when the supervisor dies (even by
/// `kill -9`), so no orphan goes on holding the GPU and the cache. Returns whether it
/// started one.
pub fn exit_with_supervisor() -> bool {
    if std::env::var_os(SUPERVISED_ENV).is_none() {
        return false;
    }
    std::thread::spawn(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
        std::process::exit(86);
    });
    true
}

/// How long a config may run, from its first launch to its recorded entry, before its
/// worker is killed: `fixed` when given, else `factor` times the longest any config of
/// this sweep has taken so far, at least `min_s`; `first_s` before any has finished.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    pub fixed: Option<f64>,
    pub factor: f64,
    pub min_s: f64,
    pub first_s: f64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts { fixed: None, factor: 10.0, min_s: 10.0, first_s: 60.0 }
    }
}

impl Timeouts {
    /// The limit, in seconds, with the longest run so far; and how it was chosen.
    pub fn limit(&self, longest_s: Option<f64>) -> (f64, String) {
        match (self.fixed, longest_s) {
            (Some(s), _) => (s, format!("{s:.1} s, as given")),
            (None, None) => (self.first_s, format!("{:.1} s, before any config had finished", self.first_s)),
            (None, Some(l)) => {
                let s = (self.factor * l).max(self.min_s);
                (
                    s,
                    format!(
                        "{s:.1} s: {} x the longest config so far ({l:.2} s), at least {:.0} s",
                        self.factor, self.min_s
                    ),
                )
            }
        }
    }
}

/// A line of a worker's stderr.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Launching(Box<CacheEntry>),
    Recorded,
    ContextLost,
    Other(String),
}

impl Line {
    pub fn parse(line: String) -> Line {
        if let Some(json) = line.strip_prefix(LAUNCHING)
            && let Ok(e) = serde_json::from_str::<CacheEntry>(json)
        {
            return Line::Launching(Box::new(e));
        }
        match line.as_str() {
            RECORDED => Line::Recorded,
            CONTEXT_LOST => Line::ContextLost,
            _ => Line::Other(line),
        }
    }
}

/// What happened to one worker.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkerEnd {
    /// It finished the sweep.
    Finished,
    /// It lost the device context and stopped; it recorded the config itself.
    ContextLost,
    /// It ran past its time on a config and was killed; the config was recorded.
    TimedOut { config: String, limit: String },
    /// It died while a config ran; the config was recorded unless `retried`.
    Died { config: String, status: String, retried: bool },
    /// It ended with no config running and no progress: not restarted.
    Failed { status: String, last_lines: Vec<String> },
}

/// The supervisor of one sweep's workers (see the module documentation).
pub struct Supervisor {
    cache: PathBuf,
    pub timeouts: Timeouts,
    /// The longest time a config of this sweep took, launch to record, in seconds.
    longest_s: Option<f64>,
    /// The config running at the last unexplained kill (SIGKILL/SIGTERM/SIGINT).
    killed_while: Option<String>,
    /// Every worker's end, in order.
    pub ends: Vec<WorkerEnd>,
    /// Workers ended in a row with no entry recorded: after [`Supervisor::MAX_IDLE_RESTARTS`], it gives up.
    idle_restarts: u32,
}

/// How many lines of a dead worker's stderr its recorded failure quotes.
const LAST_LINES: usize = 6;

impl Supervisor {
    pub const MAX_IDLE_RESTARTS: u32 = 3;

    /// A supervisor whose workers write the cache `cache`.
    pub fn new(cache: &Path, timeouts: Timeouts) -> Supervisor {
        Supervisor {
            cache: cache.into(),
            timeouts,
            longest_s: None,
            killed_while: None,
            ends: Vec::new(),
            idle_restarts: 0,
        }
    }

    /// Runs workers from `spawn` (each with its stderr piped; stdin piped too, held open
    /// while it runs) until one finishes the sweep, handing every line that is not a
    /// machine line to `on_line` (with whether the worker is a restart). `Err` when a
    /// worker fails without running any config ([`WorkerEnd::Failed`]), or
    /// [`Supervisor::MAX_IDLE_RESTARTS`] workers in a row recorded nothing.
    pub fn run(
        &mut self,
        spawn: &mut dyn FnMut() -> std::io::Result<Child>,
        on_line: &mut dyn FnMut(&str),
    ) -> Result<()> {
        loop {
            let mut child = spawn().map_err(|source| Error::Io { path: "the worker process".into(), source })?;
            let end = self.watch(&mut child, on_line)?;
            self.ends.push(end.clone());
            match end {
                WorkerEnd::Finished => return Ok(()),
                WorkerEnd::Failed { status, last_lines } => {
                    return Err(Error::SweepStopped {
                        kernel: "supervised sweep".into(),
                        reason: format!(
                            "a worker ended ({status}) with no config running; its last lines:\n  {}",
                            last_lines.join("\n  ")
                        ),
                    });
                }
                _ if self.idle_restarts >= Self::MAX_IDLE_RESTARTS => {
                    return Err(Error::SweepStopped {
                        kernel: "supervised sweep".into(),
                        reason: format!(
                            "{} workers in a row ended without recording a config; the last: {end:?}",
                            self.idle_restarts
                        ),
                    });
                }
                _ => {}
            }
        }
    }

    /// Watches one worker to its end.
    fn watch(&mut self, child: &mut Child, on_line: &mut dyn FnMut(&str)) -> Result<WorkerEnd> {
        let stderr = child.stderr.take().expect("the worker's stderr is piped");
        let (tx, rx) = mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(std::io::Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut pending: Option<(Box<CacheEntry>, Instant, f64, String)> = None;
        let mut lost = false;
        let mut recorded = 0usize;
        let mut last: VecDeque<String> = VecDeque::new();
        let mut timed_out: Option<(Box<CacheEntry>, String)> = None;
        loop {
            let wait = pending.as_ref().map(|(_, t0, limit, _)| {
                Duration::from_secs_f64(*limit).saturating_sub(t0.elapsed()).max(Duration::from_millis(1))
            });
            let got = match wait {
                Some(w) => rx.recv_timeout(w),
                None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            };
            match got {
                Ok(line) => match Line::parse(line) {
                    Line::Launching(e) => {
                        let (limit, why) = self.timeouts.limit(self.longest_s);
                        pending = Some((e, Instant::now(), limit, why));
                    }
                    Line::Recorded => {
                        if let Some((_, t0, _, _)) = pending.take() {
                            let s = t0.elapsed().as_secs_f64();
                            self.longest_s = Some(self.longest_s.map_or(s, |l| l.max(s)));
                        }
                        recorded += 1;
                        self.idle_restarts = 0;
                        self.killed_while = None;
                    }
                    Line::ContextLost => lost = true,
                    Line::Other(text) => {
                        on_line(&text);
                        last.push_back(text);
                        if last.len() > LAST_LINES {
                            last.pop_front();
                        }
                    }
                },
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let (entry, _, _, why) = pending.take().expect("a timeout only while a config runs");
                    let _ = child.kill();
                    timed_out = Some((entry, why));
                    break;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        let status = child.wait().map_err(|source| Error::Io { path: "the worker process".into(), source })?;
        if timed_out.is_none() {
            // Its stderr is closed: the reader is done. After a kill it is not joined: a
            // process the worker started may hold the pipe open.
            let _ = reader.join();
        }
        let last: Vec<String> = last.into();
        if let Some((mut entry, limit)) = timed_out {
            let config = config_of(&entry);
            let what = entry.record.kernel.clone();
            entry.record.error =
                Some(format!("{what} at {config} did not finish within {limit}; its worker was killed"));
            self.record(*entry)?;
            return Ok(WorkerEnd::TimedOut { config, limit });
        }
        if status.success() && pending.is_none() {
            return Ok(WorkerEnd::Finished);
        }
        if recorded == 0 && pending.is_none() {
            self.idle_restarts += 1;
        }
        let status_text = describe_status(status);
        if let Some((mut entry, ..)) = pending {
            let config = config_of(&entry);
            let external = killed_from_outside(status);
            if external && self.killed_while.as_deref() != Some(config.as_str()) {
                // Not the config's doing, most likely: it runs again in the next worker.
                self.killed_while = Some(config.clone());
                return Ok(WorkerEnd::Died { config, status: status_text, retried: true });
            }
            let what = entry.record.kernel.clone();
            let again = if external { " (the second time running it)" } else { "" };
            entry.record.error = Some(format!(
                "{what} at {config}: its worker process {status_text}{again} while it ran; the worker's last lines: {}",
                if last.is_empty() { "none".to_string() } else { last.join(" | ") }
            ));
            self.record(*entry)?;
            self.killed_while = None;
            return Ok(WorkerEnd::Died { config, status: status_text, retried: false });
        }
        if lost {
            return Ok(WorkerEnd::ContextLost);
        }
        if recorded > 0 {
            // It stopped for a reason of its own after progress: try again from the cache.
            return Ok(WorkerEnd::Died { config: "no config".into(), status: status_text, retried: true });
        }
        Ok(WorkerEnd::Failed { status: status_text, last_lines: last })
    }

    /// Appends a failed config to the cache (no worker runs meanwhile). A config the cache
    /// already holds is not progress: a worker that runs it again (it should have answered
    /// it from the cache) counts towards giving up.
    fn record(&mut self, entry: CacheEntry) -> Result<()> {
        let mut cache = TuneCache::open(&self.cache)?;
        if cache.get(&entry.key()).is_none() {
            cache.append(entry)?;
            self.idle_restarts = 0;
        } else {
            self.idle_restarts += 1;
        }
        Ok(())
    }
}

/// The config of an entry as `name=value` pairs.
fn config_of(e: &CacheEntry) -> String {
    let parts: Vec<String> = e.tune.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    parts.join(" ")
}

fn describe_status(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                4 => " (SIGILL)",
                6 => " (SIGABRT)",
                7 => " (SIGBUS)",
                9 => " (SIGKILL)",
                11 => " (SIGSEGV)",
                15 => " (SIGTERM)",
                2 => " (SIGINT)",
                _ => "",
            };
            return format!("was killed by signal {sig}{name}");
        }
    }
    match status.code() {
        Some(c) => format!("exited with status {c}"),
        None => "ended".into(),
    }
}

/// Whether the worker was ended by a signal someone sends to stop a process (not one a
/// fault raises).
fn killed_from_outside(status: ExitStatus) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        matches!(status.signal(), Some(2 | 9 | 15))
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_scale_with_the_longest_config() {
        let t = Timeouts::default();
        assert_eq!(t.limit(None).0, 60.0);
        assert_eq!(t.limit(Some(0.2)).0, 10.0, "at least min_s");
        assert_eq!(t.limit(Some(3.0)).0, 30.0, "factor x longest");
        assert_eq!(Timeouts { fixed: Some(2.5), ..t }.limit(Some(100.0)).0, 2.5);
    }

    /// Runs a supervisor over workers that are shell scripts, one per start, in order.
    fn supervise(name: &str, scripts: &[&str], timeouts: Timeouts) -> (Result<()>, Vec<WorkerEnd>, TuneCache, usize) {
        let dir = std::env::temp_dir().join(format!("dynsmem-supervise-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let pending = crate::tune::cache::tests::entry(&[("block", 64)], None);
        let launching = dir.join("launching");
        std::fs::write(&launching, format!("{LAUNCHING}{}\n", serde_json::to_string(&pending).unwrap())).unwrap();
        let cache = dir.join("cache.jsonl");
        let mut sup = Supervisor::new(&cache, timeouts);
        let mut started = 0;
        let result = sup.run(
            &mut || {
                let script = scripts[started.min(scripts.len() - 1)];
                started += 1;
                std::process::Command::new("sh")
                    .arg("-c")
                    .arg(script.replace("LAUNCH", &format!("cat {} >&2", launching.display())))
                    .stdin(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
            },
            &mut |_| {},
        );
        let read = TuneCache::read(&cache).unwrap_or_else(|_| TuneCache::from_entries(&cache, Vec::new()));
        let _ = std::fs::remove_dir_all(&dir);
        (result, sup.ends, read, started)
    }

    #[test]
    fn a_hang_is_killed_at_its_limit_and_recorded_once() {
        let fast = Timeouts { fixed: Some(0.5), ..Timeouts::default() };
        let started = Instant::now();
        let (r, ends, cache, n) = supervise("hang", &["echo a line >&2; LAUNCH; sleep 30", "exit 0"], fast);
        r.unwrap();
        assert!(started.elapsed() < Duration::from_secs(10), "killed at its limit, not after the sleep");
        assert_eq!(n, 2);
        assert!(matches!(&ends[0], WorkerEnd::TimedOut { config, .. } if config == "block=64"), "{ends:?}");
        assert_eq!(cache.len(), 1);
        let error = cache.entries()[0].record.error.clone().unwrap();
        assert!(error.contains("block=64") && error.contains("did not finish within 0.5 s"), "{error}");
    }

    #[test]
    fn a_crash_is_recorded_with_its_signal_and_last_lines() {
        let (r, ends, cache, _) =
            supervise("crash", &["echo about to fault >&2; LAUNCH; kill -SEGV $$", "exit 0"], Timeouts::default());
        r.unwrap();
        assert!(matches!(&ends[0], WorkerEnd::Died { retried: false, .. }), "{ends:?}");
        let error = cache.entries()[0].record.error.clone().unwrap();
        assert!(error.contains("signal 11") && error.contains("about to fault"), "{error}");
    }

    #[test]
    fn an_outside_kill_reruns_the_config_and_a_second_records_it() {
        let kill = "LAUNCH; kill -KILL $$";
        let (r, ends, cache, n) = supervise("outside", &[kill, "exit 0"], Timeouts::default());
        r.unwrap();
        assert_eq!((n, cache.len()), (2, 0), "the config runs again, not recorded: {ends:?}");
        let (r, ends, cache, n) = supervise("outside-twice", &[kill, kill, "exit 0"], Timeouts::default());
        r.unwrap();
        assert_eq!((n, cache.len()), (3, 1), "{ends:?}");
        assert!(cache.entries()[0].record.error.as_deref().unwrap().contains("the second time"));
    }

    #[test]
    fn a_lost_context_restarts_and_a_worker_that_cannot_start_is_an_error() {
        let lost = format!("echo {RECORDED} >&2; echo {CONTEXT_LOST} >&2; exit 1");
        let (r, ends, _, n) = supervise("lost", &[&lost, "exit 0"], Timeouts::default());
        r.unwrap();
        assert_eq!((n, &ends[0]), (2, &WorkerEnd::ContextLost));
        let (r, _, _, n) = supervise("broken", &["echo no such device >&2; exit 2"], Timeouts::default());
        let e = r.unwrap_err().to_string();
        assert!(n == 1 && e.contains("no such device") && e.contains("status 2"), "{e}");
        // Restarts that record nothing end too, instead of looping.
        let (r, ends, _, n) = supervise("idle", &["LAUNCH; kill -KILL $$"], Timeouts::default());
        assert!(r.is_err() && n <= 2 * (Supervisor::MAX_IDLE_RESTARTS as usize + 1), "{n} starts: {ends:?}");
    }

    #[test]
    fn machine_lines_parse_and_others_pass_through() {
        let e = crate::tune::cache::tests::entry(&[("block", 32)], None);
        let line = format!("{LAUNCHING}{}", serde_json::to_string(&e).unwrap());
        assert_eq!(Line::parse(line), Line::Launching(Box::new(e)));
        assert_eq!(Line::parse(RECORDED.into()), Line::Recorded);
        assert_eq!(Line::parse(CONTEXT_LOST.into()), Line::ContextLost);
        assert_eq!(Line::parse("@launching {broken".into()), Line::Other("@launching {broken".into()));
        assert_eq!(Line::parse("@progress 1 2 x".into()), Line::Other("@progress 1 2 x".into()));
    }
}
