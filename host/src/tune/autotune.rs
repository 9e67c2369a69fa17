//! Tuning on first use (CubeCL's autotune, Triton's `autotune`). Where the tuning database
//! has no entry for the problem itself and this user's autotune cache none within
//! [`WINNER_RATIO`] on every numeric problem field (the problem's shape class), the few
//! configs the family's cost model ranks first ([`Tunable::candidates`]) are built, verified
//! against the reference and timed, within [`Autotune::budget`], after the config of the
//! database's nearest tuned problem where it has one; the fastest verified one runs, and is
//! kept for the next process. A family without a cost model, or where autotune does not
//! run, takes the database's nearest tuned problem's config (within its
//! [`MAX_RATIO`](super::db::MAX_RATIO)) or its heuristic default.
//!
//! The cache is a directory of two append-only JSON-lines files, each line written whole
//! and synced ([`crate::report::JsonlWriter`]): a process killed at any point leaves at most
//! a torn last line, which readers skip.
//! - [`MEASUREMENTS`]: a tuner cache ([`TuneCache`]) of every candidate measured. An
//!   autotune killed half way answers its finished candidates from it when it runs again.
//! - [`WINNERS`]: one [`DbEntry`] per finished autotune, written after its last candidate:
//!   what later processes look up, measuring nothing.
//!
//! Entries count only on the device (name and multiprocessors), backend, variant and kernel
//! image they were measured on: an image built from other kernel source tunes again.
//!
//! Where the cache lives: [`AUTOTUNE_CACHE_ENV`], else `$XDG_CACHE_HOME/dynsmem/autotune`,
//! else `$HOME/.cache/dynsmem/autotune`. Whether it runs ([`AutotuneMode`], from
//! [`AUTOTUNE_ENV`] or the CLI): by default on GPUs only, since the CPU backend's timings
//! are of an emulation.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use super::db::{DbEntry, TuningDb, distil};
use super::objective::Objective;
use super::runner::RealRunner;
use super::space::SearchSpace;
use super::strategies::{Budget, Evaluator, Stop};
use super::{Tunable, TuneBackend, TuneCache};
use crate::backend::{BackendKind, Variant};
use crate::contract::Target;
use crate::error::{Error, Result};
use crate::measure::TimingOptions;
use crate::report::{JsonlWriter, Provenance};

/// The measured candidates' file in the cache directory (a tuner cache).
pub const MEASUREMENTS: &str = "measurements.jsonl";
/// The finished autotunes' file in the cache directory (tuning-database lines).
pub const WINNERS: &str = "winners.jsonl";
/// The cache directory, when set.
pub const AUTOTUNE_CACHE_ENV: &str = "DYNSMEM_AUTOTUNE_CACHE";
/// `off`, `gpu` or `all` ([`AutotuneMode`]), when set.
pub const AUTOTUNE_ENV: &str = "DYNSMEM_AUTOTUNE";
/// The strategy name candidates are recorded under in the measurements' cache.
pub const STRATEGY: &str = "autotune";
/// A winner answers problems within this ratio of its own on every numeric field (its shape
/// class): tighter than the database's borrowing, since a tile's waves change with the
/// shape and measuring a new problem costs about two seconds once.
pub const WINNER_RATIO: f64 = 1.1;

/// Where tuning on first use runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AutotuneMode {
    /// Never: a problem with no tuned config runs the heuristic default.
    Off,
    /// On GPU backends (CUDA, HIP, WGSL on a GPU adapter), not on CPU devices.
    Gpu,
    /// On every backend, the CPU backend and CPU adapters too (tests, CPU studies).
    All,
}

impl AutotuneMode {
    /// [`AUTOTUNE_ENV`]'s mode, or `None` when it is not set. A value that is not a mode
    /// is an error naming it.
    pub fn from_env() -> Result<Option<AutotuneMode>> {
        let Some(v) = std::env::var_os(AUTOTUNE_ENV) else { return Ok(None) };
        let v = v.to_string_lossy();
        <AutotuneMode as clap::ValueEnum>::from_str(&v, true).map(Some).map_err(|_| Error::InvalidConfig {
            kernel: "autotune".into(),
            reason: format!("{AUTOTUNE_ENV}={v}: expected off, gpu or all"),
        })
    }

    /// Whether it runs on a device that is (`is_cpu`) or is not a CPU.
    pub fn runs_on(self, is_cpu: bool) -> bool {
        match self {
            AutotuneMode::Off => false,
            AutotuneMode::Gpu => !is_cpu,
            AutotuneMode::All => true,
        }
    }
}

/// What one autotune did.
#[derive(Debug, Clone, PartialEq)]
pub struct AutotuneRun {
    pub family: String,
    pub problem: serde_json::Value,
    /// Candidates the cost model chose.
    pub candidates: usize,
    /// Candidates evaluated within the budget, measured now or answered from the cache.
    pub evaluated: usize,
    pub measured: usize,
    pub from_cache: usize,
    pub verified: usize,
    pub seconds: f64,
    /// The winner's config, as records carry it; `None` when no candidate verified.
    pub config: Option<serde_json::Value>,
}

/// The kernel image hash and provenance a backend's measurements are recorded with.
pub type Identify = dyn Fn(BackendKind) -> (String, Provenance) + Send + Sync;

/// Tuning on first use: see the module documentation.
pub struct Autotune {
    pub mode: AutotuneMode,
    /// The cache directory.
    pub dir: PathBuf,
    /// Per problem: at most this many candidates, and no new candidate after this many
    /// seconds from the end of the first (the one running then finishes).
    pub budget: Budget,
    pub timing: TimingOptions,
    /// The inputs' seed.
    pub seed: u64,
    identify: Box<Identify>,
    /// The winners read at start and those found since.
    winners: Mutex<Vec<DbEntry>>,
    /// The autotunes this process ran, in order.
    runs: Mutex<Vec<AutotuneRun>>,
}

impl std::fmt::Debug for Autotune {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Autotune")
            .field("mode", &self.mode)
            .field("dir", &self.dir)
            .field("budget", &self.budget)
            .finish()
    }
}

/// The default cache directory ([`AUTOTUNE_CACHE_ENV`], XDG's cache, `~/.cache`), or `None`
/// where none of them is set.
pub fn default_dir() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    env(AUTOTUNE_CACHE_ENV)
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("dynsmem").join("autotune")))
        .or_else(|| env("HOME").map(|d| d.join(".cache").join("dynsmem").join("autotune")))
}

impl Autotune {
    /// Budget per problem: a dozen candidates, none started two seconds after the first.
    pub const BUDGET: Budget = Budget { evaluations: Some(12), seconds: Some(2.0) };
    /// Timing of a candidate: short (a few runs after a brief warm-up): the candidates differ
    /// by far more than the noise this leaves, and a later `tune` sweep can refine.
    pub const TIMING: TimingOptions =
        TimingOptions { warmup: 1, warmup_ms: 20.0, repeats: 5, energy_ms: 0.0, back_to_back: true };

    /// Autotune in `mode` with its cache in `dir` (read now: its winners). `identify` gives
    /// a backend's kernel-image hash and the provenance its measurements carry.
    pub fn new(mode: AutotuneMode, dir: &Path, identify: Box<Identify>) -> Result<Autotune> {
        let path = dir.join(WINNERS);
        let mut read = TuningDb::default();
        if mode != AutotuneMode::Off && path.exists() {
            read.add_file(&path)?;
        }
        Ok(Autotune {
            mode,
            dir: dir.into(),
            budget: Autotune::BUDGET,
            timing: Autotune::TIMING,
            seed: 1,
            identify,
            winners: Mutex::new(read.entries),
            runs: Mutex::new(Vec::new()),
        })
    }

    /// The autotunes this process ran.
    pub fn runs(&self) -> Vec<AutotuneRun> {
        self.runs.lock().expect("autotune log").clone()
    }

    /// The winners this cache holds (read at start, found since).
    pub fn winners(&self) -> Vec<DbEntry> {
        self.winners.lock().expect("autotune winners").clone()
    }

    /// The config for `tunable`'s problem on `backend`: a winner of this cache within range,
    /// or the best candidate measured now. `Ok((config, where it came from))`; `Err(why
    /// not)` where autotune does not run (mode, no cost model, no candidate verified), for
    /// the heuristic default's record.
    ///
    /// `first`: configs (as records carry them) to measure before the cost model's, those of
    /// the space among them: the heuristic default and the tuning database's nearest tuned
    /// problem's, so that the winner is never slower than either, within the timing's noise.
    pub fn config_for<B: TuneBackend, T: Tunable>(
        &self,
        backend: &B,
        tunable: &T,
        variant: Variant,
        first: &[serde_json::Value],
    ) -> std::result::Result<(serde_json::Value, String), String> {
        let info = backend.info();
        if !self.mode.runs_on(info.is_cpu) {
            return Err(match self.mode {
                AutotuneMode::Off => "autotune off".into(),
                _ => "autotune runs on GPUs only (--autotune all for CPU devices)".into(),
            });
        }
        let target = Target::of(backend, variant);
        let (image, prov) = (self.identify)(info.backend);
        let cached = {
            let winners = self.winners.lock().expect("autotune winners");
            let same_image = winners.iter().filter(|e| e.fingerprint.image_hash == image).cloned().collect();
            TuningDb { entries: same_image, ..TuningDb::default() }.lookup_within(
                tunable,
                &target,
                &info.name,
                WINNER_RATIO,
            )
        };
        if let Some(answer) = cached {
            let why = answer.why().replacen("tuning database", "autotune cache", 1);
            return Ok((answer.config, format!("{why}; {}", self.dir.display())));
        }
        let space = SearchSpace::build(tunable, &target, &[]).map_err(|e| format!("autotune: {e}"))?;
        let limit = self.budget.max_evaluations(space.len());
        let Some(ranked) = tunable.candidates(&space, limit) else {
            return Err(format!("autotune: {} has no cost model", tunable.family()));
        };
        let firsts = first
            .iter()
            .filter_map(|config| (0..space.len()).find(|&i| tunable.config_json(&space.points[i]) == *config));
        let mut candidates: Vec<usize> = Vec::new();
        for i in firsts.chain(ranked) {
            if !candidates.contains(&i) && candidates.len() < limit {
                candidates.push(i);
            }
        }
        if candidates.is_empty() {
            return Err("autotune: no config of the space fits".into());
        }
        let (run, entry) = self
            .measure(backend, tunable, variant, &space, &candidates, &image, prov)
            .map_err(|e| format!("autotune failed: {e}"))?;
        self.runs.lock().expect("autotune log").push(run.clone());
        let (Some(config), Some(entry)) = (run.config.clone(), entry) else {
            return Err(format!("autotune: none of {} candidates verified", run.evaluated));
        };
        self.winners.lock().expect("autotune winners").push(entry);
        Ok((
            config,
            format!(
                "autotune, measured now: fastest of {} verified candidates (of {} the cost model ranked first; \
                 {} measured, {} from the cache) in {:.2} s; kept in {}",
                run.verified,
                run.candidates,
                run.measured,
                run.from_cache,
                run.seconds,
                self.dir.display()
            ),
        ))
    }

    /// Evaluates `candidates` in order within the budget (measurements appended to the
    /// cache), then appends the winner. Errors: the cache could not be written.
    #[allow(clippy::too_many_arguments)]
    fn measure<B: TuneBackend, T: Tunable>(
        &self,
        backend: &B,
        tunable: &T,
        variant: Variant,
        space: &SearchSpace,
        candidates: &[usize],
        image: &str,
        prov: Provenance,
    ) -> Result<(AutotuneRun, Option<DbEntry>)> {
        let path = self.dir.join(MEASUREMENTS);
        let mut cache = TuneCache::open(&path)?;
        let mut runner =
            RealRunner::new(backend, tunable, &mut cache, variant, image, self.timing, self.seed, prov, STRATEGY)?;
        // The seconds count from the end of the first candidate, which also made the
        // problem's inputs and reference (seconds of their own at large shapes).
        let mut ev = Evaluator::new(space, &mut runner, Budget { seconds: None, ..self.budget });
        let mut clock: Option<Instant> = None;
        let seconds = self.budget.seconds.unwrap_or(f64::INFINITY);
        for &i in candidates {
            if clock.is_some_and(|c| c.elapsed().as_secs_f64() >= seconds) || ev.cost(i).is_none() {
                break;
            }
            clock.get_or_insert_with(Instant::now);
        }
        let result = ev.finish(STRATEGY, Stop::Finished);
        let (measured, from_cache) = (runner.measured, runner.from_cache);
        drop(runner);
        if let Stop::RunnerFailed(e) = &result.stop {
            return Err(Error::Io { path, source: std::io::Error::other(e.clone()) });
        }
        let best = result.best();
        let run = AutotuneRun {
            family: tunable.family().into(),
            problem: serde_json::to_value(tunable.problem()).expect("problems serialize"),
            candidates: candidates.len(),
            evaluated: result.evaluations.len(),
            measured,
            from_cache,
            verified: result.evaluations.iter().filter(|e| e.score.is_some()).count(),
            seconds: result.seconds,
            config: best.map(|b| tunable.config_json(&space.points[b.index])),
        };
        if best.is_none() {
            return Ok((run, None));
        }
        // The winner among this autotune's candidates only: the measurements' file may hold
        // the same problem's configs from a `tune` sweep pointed at it, or an older run.
        let evaluated: Vec<_> = result.evaluations.iter().filter_map(|e| e.entry.clone()).collect();
        let ours = TuneCache::from_entries(&path, evaluated);
        let mut entry = distil(&ours, Objective::Time).into_iter().next();
        if let Some(e) = entry.as_mut() {
            e.verified_configs = run.verified;
            JsonlWriter::append(&self.dir.join(WINNERS))?.write(e)?;
        }
        Ok((run, entry))
    }
}
