//! Tuning a [`Kernel`] of one's own in one call, Kernel Tuner's `tune_kernel`:
//! [`tune_kernel`] builds the search space (restrictions and the backend's limits filter
//! points before launch), runs a strategy with the real runner (every config checked
//! against the kernel's reference before it is timed; a failed config is an entry with
//! its error, the sweep goes on), keeps every result in a resumable tuning cache, and
//! returns a [`Sweep`] that exports T4 results and a Kernel Tuner cache file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::cache::{GroupKey, TuneCache};
use super::runner::RealRunner;
use super::space::{SearchSpace, describe_point};
use super::strategies::{Budget, SearchResult, Stop, Strategy};
use super::{Param, Tunable, TuneBackend, kt, t4};
use crate::backend::{DeviceInfo, Variant};
use crate::contract::{FamilyBackend, Footprint, Kernel, Target, Workload};
use crate::error::{Error, Result};
use crate::measure::TimingOptions;
use crate::report::Provenance;
use crate::rng::SplitMix64;

impl Tunable for Kernel {
    type Problem = serde_json::Value;
    type Config = BTreeMap<&'static str, u32>;

    fn family(&self) -> &'static str {
        self.entry()
    }
    fn problem(&self) -> &serde_json::Value {
        self.problem()
    }
    fn params(&self, target: &Target) -> Vec<Param> {
        self.params_on(target)
    }
    fn check(&self, point: &[u32], target: &Target) -> std::result::Result<Footprint, String> {
        self.footprint_on(point, target)
    }
    fn config(&self, point: &[u32]) -> Self::Config {
        self.params_at(point).0
    }
    fn config_json(&self, point: &[u32]) -> serde_json::Value {
        self.config_value(point)
    }
    fn check_id(&self, seed: u64) -> Result<String> {
        if self.has_own_workload() {
            return Ok(format!("the own check of {}, inputs seed {seed}", self.entry()));
        }
        self.check_identity()
    }
    fn prepare<'b, B: FamilyBackend>(
        &self,
        backend: &'b B,
        variant: Variant,
        point: &[u32],
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        self.prepare_seeded(backend, variant, point, seed)
    }
    fn candidates(&self, space: &SearchSpace, limit: usize) -> Option<Vec<usize>> {
        self.rank(&space.points, &space.footprints, &space.target.limits, limit)
    }
}

/// How [`tune_kernel_with`] sweeps. The defaults: the backend's own variant (launch-sized
/// on CUDA, HIP and the CPU backend; wgsl-override on WGSL), every config of the space,
/// Kernel Tuner-like timing (warm-up, 20 timed runs, median), a cache in the system's
/// temporary folder removed with the sweep.
#[derive(Debug, Clone)]
pub struct TuneOptions {
    pub variant: Option<Variant>,
    pub strategy: Strategy,
    pub budget: Budget,
    pub timing: TimingOptions,
    /// A tuning cache to keep (and resume from: configs it holds are not measured again).
    pub cache: Option<PathBuf>,
    /// Seeds the strategy's random choices.
    pub seed: u64,
    /// What records say about where they came from; an "unknown" toolchain or commit is
    /// taken from the kernel's [`Kernel::image`].
    pub provenance: Provenance,
    /// Print a line per finished config.
    pub verbose: bool,
}

impl TuneOptions {
    /// One warm-up run and five timed runs per config: a check that the path works and a
    /// rough ranking, not a measurement to report.
    pub fn quick() -> TuneOptions {
        let timing = TimingOptions { warmup: 1, warmup_ms: 0.0, repeats: 5, ..TimingOptions::default() };
        TuneOptions { timing, ..TuneOptions::default() }
    }
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            variant: None,
            strategy: Strategy::Exhaustive,
            budget: Budget::unlimited(),
            timing: TimingOptions::default(),
            cache: None,
            seed: 1,
            provenance: Provenance {
                rustc: "unknown".into(),
                commit: "unknown".into(),
                command: std::env::args().collect::<Vec<_>>().join(" "),
                image: String::new(),
            },
            verbose: false,
        }
    }
}

/// A finished sweep of a [`Kernel`]: every evaluated config, the space it came from, and
/// the exports.
pub struct Sweep {
    pub space: SearchSpace,
    pub result: SearchResult,
    pub device: DeviceInfo,
    pub variant: Variant,
    /// Where the expected outputs came from (the CPU run at which config, or the f64
    /// reference).
    pub checked_against: String,
    cache: TuneCache,
    group: GroupKey,
    meta: t4::Metadata,
    /// The cache file to remove with the sweep (the default, temporary one).
    _temporary: Temporary,
}

/// A cache file removed when dropped (the default cache of a sweep, its own per sweep).
struct Temporary(Option<PathBuf>);

impl Drop for Temporary {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Sweep {
    /// The fastest verified config and its median time in milliseconds.
    pub fn best(&self) -> Option<(BTreeMap<String, u32>, f64)> {
        let e = self.result.best()?;
        Some((super::space::params_map(&self.space.params, &self.space.points[e.index]), e.score?))
    }
    /// Configs that ran and failed (build, launch or check), with their errors.
    pub fn failures(&self) -> Vec<(String, String)> {
        self.result
            .failed()
            .map(|e| (self.space.describe(e.index), e.error.clone().unwrap_or_else(|| "no result".into())))
            .collect()
    }
    /// `Ok` when every config that ran was verified, else [`Error::SweepFailed`] naming the
    /// first failure.
    pub fn all_verified(&self) -> Result<()> {
        let failures = self.failures();
        match failures.first() {
            None => Ok(()),
            Some((config, error)) => Err(Error::SweepFailed {
                kernel: self.meta.family.clone(),
                failed: failures.len(),
                run: self.result.evaluations.len(),
                config: config.clone(),
                error: error.clone(),
            }),
        }
    }
    /// Both exports beside `stem`: `<stem>.t4.json` ([`Sweep::export_t4`]) and
    /// `<stem>.kt-cache.json` ([`Sweep::export_kt_cache`]); returns their paths.
    pub fn export(&self, stem: &Path) -> Result<(PathBuf, PathBuf)> {
        let with = |suffix: &str| PathBuf::from(format!("{}{suffix}", stem.display()));
        let (t4, kt) = (with(".t4.json"), with(".kt-cache.json"));
        self.export_t4(&t4)?;
        self.export_kt_cache(&kt)?;
        Ok((t4, kt))
    }
    /// One line: how many configs ran, verified, failed, were filtered, and the best.
    pub fn summary(&self) -> String {
        let best = match self.result.best() {
            Some(e) => format!(
                "best {} at {:.4} ms ({} B of workgroup memory)",
                self.space.describe(e.index),
                e.score.unwrap_or(f64::NAN),
                self.space.footprints[e.index].shared_bytes(self.variant)
            ),
            None => "no config verified".into(),
        };
        format!(
            "{} on {} ({}): {} configs run, {} failed, {} filtered before launch; {best}; checked against {}",
            self.meta.family,
            self.device.name,
            self.variant,
            self.result.evaluations.len(),
            self.result.failed().count(),
            self.space.filtered.len(),
            self.checked_against
        )
    }
    /// Kernel Tuner's T4 results (every config, filtered ones in the metadata).
    pub fn export_t4(&self, path: &Path) -> Result<()> {
        let doc = t4::export(&self.space, &self.result.evaluations, &self.meta);
        write(path, &serde_json::to_string_pretty(&doc).expect("JSON values print"))
    }
    /// A Kernel Tuner cache file: every config that ran, which Kernel Tuner's simulation
    /// mode replays (the filtered ones, listed in the T4 results, as its restrictions).
    pub fn export_kt_cache(&self, path: &Path) -> Result<()> {
        let file = kt::cache_file(&self.cache, &self.group, &self.space);
        write(path, &file.text())
    }
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|source| Error::Io { path: path.to_path_buf(), source })
}

/// [`tune_kernel_with`] with the default [`TuneOptions`].
pub fn tune_kernel<B: TuneBackend>(backend: &B, kernel: &Kernel) -> Result<Sweep> {
    tune_kernel_with(backend, kernel, &TuneOptions::default())
}

/// Sweeps `kernel` on `backend`: see the module documentation. Refused before anything
/// runs: a contract that does not match the kernel's entry, a variant the backend or the
/// kernel does not have (no WGSL twin on a WGSL backend), a space with no point that fits.
pub fn tune_kernel_with<B: TuneBackend>(backend: &B, kernel: &Kernel, opts: &TuneOptions) -> Result<Sweep> {
    kernel.validate()?;
    let variant = opts.variant.unwrap_or(backend.variants()[0]);
    let refuse = |why: &str| Error::Unsupported {
        backend: backend.kind(),
        what: format!("the {variant} variant of {}{why}", kernel.entry()),
    };
    if !backend.variants().contains(&variant) {
        return Err(refuse(""));
    }
    if variant.is_wgsl() && !kernel.has_wgsl() {
        return Err(refuse(" (it has no WGSL twin)"));
    }
    let target = Target::of(backend, variant);
    let space = SearchSpace::build(kernel, &target, &[])?;
    if space.is_empty() {
        let first = space
            .filtered
            .first()
            .map(|f| format!(": e.g. {} ({})", describe_point(&space.params, &f.point), f.reason));
        return Err(Error::InvalidConfig {
            kernel: kernel.entry().into(),
            reason: format!("no config of the space fits {}{}", backend.info().name, first.unwrap_or_default()),
        });
    }
    let (_, checked_against) = kernel.expected()?;
    // One file per sweep, never shared: two sweeps of a process (at once or one after the
    // other) do not see each other's entries.
    static SWEEPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let temporary = Temporary(opts.cache.is_none().then(|| {
        let n = SWEEPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let stem = format!("dynsmem-{}-{}-{}-{n}.jsonl", kernel.entry(), backend.kind(), std::process::id());
        std::env::temp_dir().join(stem)
    }));
    let path = opts.cache.clone().or(temporary.0.clone()).expect("one of the two");
    let mut cache = TuneCache::open(&path)?;
    let [image, rustc, commit] = kernel.image_info().clone();
    let mut prov = opts.provenance.clone();
    for (field, from_image) in [(&mut prov.rustc, rustc), (&mut prov.commit, commit)] {
        if field == "unknown" {
            *field = from_image;
        }
    }
    prov.image = format!("{} image {image}", kernel.entry());
    let commit = prov.commit.clone();
    let strategy = opts.strategy;
    let mut runner =
        RealRunner::new(backend, kernel, &mut cache, variant, &image, opts.timing, 1, prov, strategy.name())?;
    let group = runner.group().clone();
    let result = strategy.search(&space, &mut runner, opts.budget, &mut SplitMix64::new(opts.seed));
    drop(runner);
    if let Stop::RunnerFailed(e) = &result.stop {
        let said = format!("{}: the sweep stopped: ", kernel.entry());
        let reason = e.strip_prefix(&said).unwrap_or(e).to_string();
        return Err(Error::SweepStopped { kernel: kernel.entry().into(), reason });
    }
    if opts.verbose {
        for e in &result.evaluations {
            let score = e.score.map_or_else(|| e.error.clone().unwrap_or_default(), |s| format!("{s:.4} ms"));
            println!("  {}: {score}", describe_point(&space.params, &space.points[e.index]));
        }
    }
    let info = backend.info().clone();
    let meta = t4::Metadata::of(kernel, &info, variant, image, result.strategy, commit);
    let cache = TuneCache::read(&path)?;
    Ok(Sweep { space, result, device: info, variant, checked_against, cache, group, meta, _temporary: temporary })
}
