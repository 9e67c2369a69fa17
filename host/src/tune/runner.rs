//! What evaluates one config for a strategy: [`RealRunner`] on a device (answering from
//! the cache what is already there), [`ReplayRunner`] from a recorded cache with no device.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use super::cache::{CacheEntry, GroupKey, TuneCache, TuneFields};
use super::objective::Objective;
use super::space::SearchSpace;
use super::{Tunable, TuneBackend, canonical_json};
use crate::backend::Backend;
use crate::backend::Variant;
use crate::error::{Error, Result};
use crate::measure::TimingOptions;
use crate::report::{Provenance, Record};

/// The outcome of evaluating one config.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// Position of the config in [`SearchSpace::points`].
    pub index: usize,
    /// The objective's value ([`Objective::value`]: median ms, J per run, or J·s) of a
    /// verified config; `None` when it failed or has no such figure.
    pub score: Option<f64>,
    /// Why it failed (build, launch, verification), when it did.
    pub error: Option<String>,
    /// Answered from the cache (recorded earlier) instead of measured now.
    pub cached: bool,
    /// The cache entry (`None` only for a replay of a config the cache does not have).
    pub entry: Option<CacheEntry>,
    /// Milliseconds the strategy spent choosing this config (from the previous
    /// evaluation's end to this one's start): Kernel Tuner's `search_algorithm` time.
    pub search_ms: f64,
}

impl Evaluation {
    pub fn from_entry(index: usize, entry: &CacheEntry, cached: bool, objective: Objective) -> Evaluation {
        let (score, error) = match objective.value(&entry.record) {
            Ok(v) => (Some(v), None),
            Err(e) => (None, Some(e)),
        };
        Evaluation { index, score, error, cached, entry: Some(entry.clone()), search_ms: 0.0 }
    }
}

/// Evaluates configs of a space. A config that fails to build, launch or verify is an
/// `Ok` evaluation carrying its error (the search goes on); `Err` means the sweep cannot
/// go on at all (its results can no longer be recorded).
pub trait Runner {
    fn evaluate(&mut self, space: &SearchSpace, index: usize) -> Result<Evaluation>;
}

/// The group key a sweep on `backend` writes its entries under; `check` is
/// [`Tunable::check_id`] of its inputs seed.
pub fn group_key<B: Backend, T: Tunable>(
    backend: &B,
    tunable: &T,
    variant: Variant,
    image_hash: &str,
    check: String,
) -> GroupKey {
    let info = backend.info();
    GroupKey {
        device: info.name.clone(),
        driver: info.driver.clone(),
        backend: info.backend,
        image_hash: image_hash.into(),
        family: tunable.family().into(),
        variant: variant.name().into(),
        problem: canonical_json(&serde_json::to_value(tunable.problem()).expect("problems serialize")),
        check,
    }
}

/// Where a failure happened, for its T4 validity class.
#[derive(Clone, Copy)]
enum Stage {
    /// Validating and building (no launch yet).
    Prepare,
    /// The first run and its check against the reference.
    Verify,
    /// Warm-up and timed runs.
    Time,
}

/// Kernel Tuner's T4 `invalidity` for an error at `stage`.
fn invalidity(stage: Stage, e: &Error) -> &'static str {
    match (stage, e) {
        (_, Error::Mismatch(_)) => "correctness",
        (Stage::Prepare, Error::Driver { .. } | Error::MissingKernel { .. }) => "compile",
        (Stage::Prepare, Error::OutOfMemory { .. } | Error::Io { .. } | Error::KernelFault { .. }) => "runtime",
        (Stage::Prepare, _) => "constraints",
        (Stage::Verify | Stage::Time, _) => "runtime",
    }
}

/// Measures configs on a device: every config is built, run once and checked against
/// the CPU reference, and only then timed ([`crate::backend::time`]: warm-up, repeats, every
/// time kept); the entry (or the failure with its error) is appended to the cache before
/// the next config starts. Configs the cache already has are answered from it.
pub struct RealRunner<'a, B: TuneBackend, T: Tunable> {
    backend: &'a B,
    tunable: &'a T,
    cache: &'a mut TuneCache,
    group: GroupKey,
    variant: Variant,
    timing: TimingOptions,
    seed: u64,
    prov: Provenance,
    strategy: String,
    /// Recorded in every entry measured now, when a sharded sweep's worker runs this.
    pub worker: Option<super::shard::Worker>,
    /// A file whose exclusive lock every config's kernel launches hold (verification,
    /// warm-up, timed runs): the processes sharing one GPU (workers of a sharded sweep)
    /// launch one at a time, while their inputs, uploads and CPU references still overlap.
    pub timing_lock: Option<std::path::PathBuf>,
    /// Configs measured (or failed) now.
    pub measured: usize,
    /// Configs answered from the cache.
    pub from_cache: usize,
    /// What the evaluations' scores are.
    pub objective: Objective,
    /// Tell a supervising process ([`super::supervise`]) what runs: a
    /// [`super::supervise::LAUNCHING`] line with the config's entry (as a failure) before its
    /// first launch, [`super::supervise::RECORDED`] once its entry is in the cache, and
    /// [`super::supervise::CONTEXT_LOST`] when the device context is lost.
    pub announce: bool,
}

impl<'a, B: TuneBackend, T: Tunable> RealRunner<'a, B, T> {
    /// `image_hash` names the kernel image `backend` runs (see [`super::image_hash`]);
    /// `seed` the inputs; `strategy` is recorded in each new entry.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        backend: &'a B,
        tunable: &'a T,
        cache: &'a mut TuneCache,
        variant: Variant,
        image_hash: &str,
        timing: TimingOptions,
        seed: u64,
        prov: Provenance,
        strategy: &str,
    ) -> Result<Self> {
        let group = group_key(backend, tunable, variant, image_hash, tunable.check_id(seed)?);
        Ok(RealRunner {
            backend,
            tunable,
            cache,
            group,
            variant,
            timing,
            seed,
            prov,
            strategy: strategy.into(),
            worker: None,
            timing_lock: None,
            measured: 0,
            from_cache: 0,
            objective: Objective::Time,
            announce: false,
        })
    }

    pub fn group(&self) -> &GroupKey {
        &self.group
    }

    /// Builds, verifies and times config `index`, returning its entry (never an error:
    /// a failure is an entry with its error) and whether the device context is lost.
    // The closures' `Err` is `(Stage, Error)`, one config's failure, made once per config.
    #[allow(clippy::result_large_err)]
    fn measure(&self, space: &SearchSpace, index: usize) -> (CacheEntry, bool) {
        let started = Instant::now();
        let point = &space.points[index];
        let footprint = space.footprints[index];
        let family = self.tunable.family();
        let mut rec = Record::new(family, self.variant.name(), family, self.backend.info(), &self.prov);
        rec.problem = serde_json::to_value(self.tunable.problem()).expect("problems serialize");
        rec.config = self.tunable.config_json(point);
        rec.timer = crate::backend::timer_label(self.backend, &self.timing);
        rec.shared_bytes = if self.variant == Variant::LaunchSized { footprint.launch_bytes } else { 0 };
        rec.static_shared_bytes = if self.variant == Variant::LaunchSized { 0 } else { footprint.static_bytes };
        let mut tune = TuneFields {
            image_hash: self.group.image_hash.clone(),
            params: space.params_map(index),
            target: space.target,
            values: space.params.iter().map(|p| (p.name.to_string(), p.values.clone())).collect(),
            footprint,
            invalidity: "correct".into(),
            build_ms: 0.0,
            verify_ms: 0.0,
            wall_ms: 0.0,
            bench_ms: None,
            strategy: self.strategy.clone(),
            check: self.group.check.clone(),
            worker: self.worker.clone(),
        };
        let config = space.describe(index);
        let built_before = self.backend.build_ms_total();
        let prepared = self.tunable.prepare(self.backend, self.variant, point, self.seed);
        tune.build_ms = self.backend.build_ms_total() - built_before;
        let outcome = prepared.map_err(|e| (Stage::Prepare, e)).and_then(|w| {
            let k = w.kernel();
            rec.kernel = k.name.clone();
            rec.shared_bytes = k.shared_bytes;
            rec.static_shared_bytes = k.static_shared_bytes;
            // Every kernel launch of the config (the verification run, the check's run,
            // warm-up and timed runs) holds the device's timing lock, when there is one, so
            // that workers sharing a GPU never time while another one runs kernels; their
            // inputs, uploads and CPU references are made outside it, at the same time.
            let lock = self.timing_lock.as_deref().map(timing_lock).transpose().map_err(|e| (Stage::Verify, e))?;
            if self.announce {
                // What the supervisor records if this process dies or hangs from here on.
                let mut pending = CacheEntry { record: rec.clone(), tune: tune.clone() };
                pending.record.error = Some(format!("{}: the worker process ended while running {config}", k.name));
                pending.tune.invalidity = "runtime".into();
                super::supervise::announce_launching(&pending);
            }
            // The synchronisation right after the launch finds a fault of this kernel (a
            // sticky error would otherwise surface at the next API call, naming that).
            let fault = |e: Error| e.as_fault_of(&k.name, &config);
            let verify_started = Instant::now();
            let verified = w.run().and_then(|()| self.backend.synchronize()).map_err(fault).and_then(|()| w.check());
            tune.verify_ms = verify_started.elapsed().as_secs_f64() * 1e3;
            verified.map_err(|e| (Stage::Verify, e))?;
            let bench_started = Instant::now();
            let timed =
                crate::backend::time(self.backend, self.timing, &mut || w.run()).map_err(|e| (Stage::Time, fault(e)));
            tune.bench_ms = Some(bench_started.elapsed().as_secs_f64() * 1e3);
            drop(lock);
            let (t, warmups) = timed?;
            Ok((t, warmups, w.bytes(), w.flops()))
        });
        let mut lost = false;
        match outcome {
            Ok((t, warmups, bytes, flops)) => rec.set_measured(t, warmups, bytes, flops, None),
            Err((stage, e)) => {
                tune.invalidity = invalidity(stage, &e).into();
                lost = e.context_lost();
                rec.error = Some(e.to_string());
            }
        }
        tune.wall_ms = started.elapsed().as_secs_f64() * 1e3;
        (CacheEntry { record: rec, tune }, lost)
    }
}

/// Takes the exclusive lock of `path` (created if missing), waiting for it; released when
/// the returned file is dropped (or the process dies).
fn timing_lock(path: &std::path::Path) -> Result<std::fs::File> {
    let io = |source| Error::Io { path: path.into(), source };
    let file = std::fs::File::options().create(true).truncate(false).write(true).open(path).map_err(io)?;
    file.lock().map_err(io)?;
    Ok(file)
}

impl<B: TuneBackend, T: Tunable> Runner for RealRunner<'_, B, T> {
    fn evaluate(&mut self, space: &SearchSpace, index: usize) -> Result<Evaluation> {
        let key = super::CacheKey { group: self.group.clone(), params: space.params_map(index) };
        let before = space.params_map_before(index).map(|params| super::CacheKey { group: self.group.clone(), params });
        if let Some(e) = self.cache.get(&key).or_else(|| before.and_then(|k| self.cache.get(&k))) {
            self.from_cache += 1;
            return Ok(Evaluation::from_entry(index, e, true, self.objective));
        }
        let (entry, lost) = self.measure(space, index);
        self.cache.append(entry.clone())?;
        self.measured += 1;
        if self.announce {
            super::supervise::announce(super::supervise::RECORDED);
        }
        if lost {
            // Every later config would fail on the lost context: stop, with this config's
            // failure recorded; a supervisor goes on in a new process.
            if self.announce {
                super::supervise::announce(super::supervise::CONTEXT_LOST);
            }
            let error = entry.record.error.unwrap_or_default();
            return Err(Error::SweepStopped {
                kernel: self.group.family.clone(),
                reason: format!(
                    "{error}; it stops here (its results so far are in {}; a supervised sweep, `dynsmem tune`, goes on in a new process)",
                    self.cache.path().display()
                ),
            });
        }
        Ok(Evaluation::from_entry(index, &entry, false, self.objective))
    }
}

/// Answers every config from the entries one group of a recorded cache holds: a strategy
/// runs against a real sweep's results with no device (tests, comparing strategies). A
/// config the cache lacks is a failed evaluation saying so.
pub struct ReplayRunner {
    entries: HashMap<BTreeMap<String, u32>, CacheEntry>,
    /// Evaluations answered.
    pub answered: usize,
    pub objective: Objective,
}

impl ReplayRunner {
    pub fn new(cache: &TuneCache, group: &GroupKey) -> ReplayRunner {
        let entries = cache.group_entries(group).into_iter().map(|(k, v)| (k, v.clone())).collect();
        ReplayRunner { entries, answered: 0, objective: Objective::Time }
    }

    /// Configs the replayed group holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl Runner for ReplayRunner {
    fn evaluate(&mut self, space: &SearchSpace, index: usize) -> Result<Evaluation> {
        self.answered += 1;
        let recorded = self.entries.get(&space.params_map(index));
        let before = || space.params_map_before(index).and_then(|k| self.entries.get(&k));
        Ok(match recorded.or_else(before) {
            Some(e) => Evaluation::from_entry(index, e, true, self.objective),
            None => Evaluation {
                index,
                score: None,
                error: Some(format!("{} is not in the replayed cache", space.describe(index))),
                cached: true,
                entry: None,
                search_ms: 0.0,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    #[test]
    fn the_timing_lock_lets_one_holder_in_at_a_time() {
        let path = std::env::temp_dir().join(format!("dynsmem-timing-lock-{}", std::process::id()));
        let held = super::timing_lock(&path).unwrap();
        let started = Instant::now();
        let waiter = std::thread::spawn({
            let path = path.clone();
            move || {
                let _second = super::timing_lock(&path).unwrap();
                Instant::now()
            }
        });
        std::thread::sleep(Duration::from_millis(300));
        let released = Instant::now();
        drop(held);
        let got = waiter.join().unwrap();
        assert!(got >= released, "the second holder got in {:?} after the start, before the release", got - started);
        let _ = std::fs::remove_file(&path);
    }
}
