//! The tuning database: the best config of each tuned problem, per device, distilled from
//! tuner caches, and the lookup that answers "the best config for this problem on this
//! device", falling back to the nearest tuned problem. `run` and `bench` take their default
//! configs from it where it has an answer ([`crate::family::DynFamily::resolve`]).
//!
//! An entry is one line of JSON ([`DbEntry`]): the hardware fingerprint it was tuned on
//! ([`Fingerprint`]: device name, multiprocessors, driver, kernel-image hash, the SM clock
//! during the measurement), the family, backend, variant, problem and objective, and the
//! best config as parameter values. The database the binary carries is
//! `host/data/tuning-db.jsonl` (built with `dynsmem db build` from the committed H100
//! sweeps); `--tuning-db FILE` and `DYNSMEM_TUNING_DB` (paths separated by `:`) add more,
//! either database files or tuner caches, which are distilled as they are read.
//!
//! Lookup ([`TuningDb::lookup`]): entries of the same family, backend, variant and device
//! name (and multiprocessor count where both know it), objective `time`; among them the
//! problem nearest the asked one: problems must agree on every field that is not a number,
//! and the distance is the largest |ln(asked / tuned)| over the numeric fields. A problem
//! more than [`MAX_RATIO`] away on any field gets no answer (the heuristic default runs).
//! The found config is then checked against the asked problem and the device's limits
//! through the family's own search space ([`SearchSpace::build`], the tuner's validation);
//! a config that does not fit tries the next nearest. Ties go to the same kernel image,
//! then to the newest entry.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::TuneBackend;
use super::cache::TuneCache;
use super::objective::Objective;
use super::space::SearchSpace;
use super::{Target, Tunable};
use crate::backend::BackendKind;
use crate::backend::Variant;
use crate::error::{Error, Result};
use crate::report::parse_jsonl_as;

/// The database built into the binary (the committed per-device tables).
pub const BUILT_IN: &str = include_str!("../../data/tuning-db.jsonl");

/// How far (ratio on any numeric problem field) the nearest tuned problem may be. A tiled
/// kernel's best tile depends on how many tiles the problem gives each SM: a tile tuned
/// at twice the size can leave SMs idle. Before raising it, bench the families whose bench
/// problems then borrow another problem's config.
pub const MAX_RATIO: f64 = 1.5;

/// What a tuned result was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub device: String,
    pub backend: BackendKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiprocessors: Option<u32>,
    pub driver: String,
    pub image_hash: String,
    /// Median SM clock during the best config's measurement, where an observer read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<f64>,
}

/// One tuned problem's best config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbEntry {
    pub fingerprint: Fingerprint,
    pub family: String,
    pub variant: String,
    pub problem: serde_json::Value,
    pub objective: String,
    pub params: BTreeMap<String, u32>,
    /// The objective's value of the best config, in its unit.
    pub score: f64,
    pub median_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tflops: Option<f64>,
    /// Configs verified in the sweep the entry was distilled from.
    pub verified_configs: usize,
    pub commit: String,
    pub unix_time: u64,
}

/// A set of entries.
#[derive(Debug, Clone, Default)]
pub struct TuningDb {
    pub entries: Vec<DbEntry>,
    /// Where the entries came from, for messages.
    pub sources: Vec<String>,
    /// Tuning on first use, for a problem none of the entries answers: where it runs and
    /// its cache ([`super::autotune`]). `None`: such a problem runs the heuristic default.
    pub autotune: Option<std::sync::Arc<super::autotune::Autotune>>,
}

/// A lookup's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub entry: DbEntry,
    /// The config as the family's records carry it, for the asked problem.
    pub config: serde_json::Value,
    /// Largest |ln(asked / tuned)| over the problem's numeric fields (0: same problem).
    pub distance: f64,
}

impl Answer {
    /// One line saying where the config came from.
    pub fn why(&self) -> String {
        let e = &self.entry;
        let fp = &e.fingerprint;
        let nearest = if self.distance == 0.0 {
            "this problem".to_string()
        } else {
            format!("nearest tuned problem {} (within {:.2}x)", super::canonical_json(&e.problem), self.distance.exp())
        };
        let clock = fp.sm_clock_mhz.map(|c| format!(", SM {c:.0} MHz")).unwrap_or_default();
        format!(
            "tuning database: {nearest}, best of {} configs by {} on {} (driver {}, image {}{clock}, commit {})",
            e.verified_configs, e.objective, fp.device, fp.driver, fp.image_hash, e.commit
        )
    }
}

impl TuningDb {
    /// The built-in database.
    pub fn built_in() -> TuningDb {
        let mut db = TuningDb::default();
        db.add_text(BUILT_IN, "built-in").expect("the built-in tuning database parses");
        db
    }

    /// The built-in database and every file of `paths` and of `DYNSMEM_TUNING_DB`.
    pub fn load(paths: &[std::path::PathBuf]) -> Result<TuningDb> {
        let mut db = TuningDb::built_in();
        let env: Vec<std::path::PathBuf> =
            std::env::var_os("DYNSMEM_TUNING_DB").map(|v| std::env::split_paths(&v).collect()).unwrap_or_default();
        for p in paths.iter().chain(&env) {
            db.add_file(p)?;
        }
        Ok(db)
    }

    fn add_text(&mut self, text: &str, source: &str) -> Result<()> {
        let (entries, _torn) = parse_jsonl_as::<DbEntry>(text.as_bytes(), Path::new(source))?;
        self.entries.extend(entries);
        self.sources.push(source.into());
        Ok(())
    }

    /// Adds a database file, or distils a tuner cache (told apart by its lines: a cache
    /// line has a `tune` object).
    pub fn add_file(&mut self, path: &Path) -> Result<()> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.into(), source })?;
        let is_cache = text.lines().find(|l| !l.trim().is_empty()).is_some_and(|l| l.contains("\"tune\""));
        if is_cache {
            let cache = TuneCache::read(path)?;
            self.entries.extend(distil(&cache, Objective::Time));
            self.sources.push(path.display().to_string());
            Ok(())
        } else {
            self.add_text(&text, &path.display().to_string())
        }
    }

    /// The best config this database has for `tunable`'s problem on the device `target`
    /// and `device` describe (see the module docs), checked against the problem.
    pub fn lookup<T: Tunable + ?Sized>(&self, tunable: &T, target: &Target, device: &str) -> Option<Answer> {
        self.lookup_within(tunable, target, device, MAX_RATIO)
    }

    /// [`TuningDb::lookup`] with `max_ratio` in place of [`MAX_RATIO`] (1: the same problem
    /// only).
    pub fn lookup_within<T: Tunable + ?Sized>(
        &self,
        tunable: &T,
        target: &Target,
        device: &str,
        max_ratio: f64,
    ) -> Option<Answer> {
        let asked = serde_json::to_value(tunable.problem()).ok()?;
        let mut candidates: Vec<(f64, &DbEntry)> = self
            .entries
            .iter()
            .filter(|e| {
                let fp = &e.fingerprint;
                e.family == tunable.family()
                    && fp.backend == target.backend
                    && e.variant == target.variant.name()
                    && fp.device == device
                    && e.objective == Objective::Time.name()
                    && (fp.multiprocessors.is_none()
                        || target.limits.multiprocessors.is_none()
                        || fp.multiprocessors == target.limits.multiprocessors)
            })
            .filter_map(|e| problem_distance(&asked, &e.problem).map(|d| (d, e)))
            .filter(|(d, _)| *d <= max_ratio.ln() + 1e-12)
            .collect();
        let newest_image =
            candidates.iter().max_by_key(|(_, e)| e.unix_time).map(|(_, e)| e.fingerprint.image_hash.clone());
        candidates.sort_by(|(da, a), (db, b)| {
            da.total_cmp(db)
                .then_with(|| {
                    (Some(&b.fingerprint.image_hash) == newest_image.as_ref())
                        .cmp(&(Some(&a.fingerprint.image_hash) == newest_image.as_ref()))
                })
                .then_with(|| b.unix_time.cmp(&a.unix_time))
        });
        candidates.into_iter().find_map(|(distance, e)| {
            let point = fit_point(tunable, target, &e.params)?;
            Some(Answer { entry: e.clone(), config: tunable.config_json(&point), distance })
        })
    }
}

/// The point of `params` if it is a valid config of `tunable`'s problem on `target`: the
/// one-config search space of those values, built (and so checked) as the tuner does.
fn fit_point<T: Tunable + ?Sized>(tunable: &T, target: &Target, params: &BTreeMap<String, u32>) -> Option<Vec<u32>> {
    let space_params = tunable.params(target);
    // Every parameter of the space, from the entry (under its name or the one it had) or
    // (one added since) its `absent` value; none the space lacks.
    if params.keys().any(|k| !space_params.iter().any(|p| p.is_named(k))) {
        return None;
    }
    let recorded = |p: &crate::tune::Param| params.get(p.name).or_else(|| p.formerly.and_then(|f| params.get(f)));
    let overrides: Vec<(String, Vec<u32>)> = space_params
        .iter()
        .map(|p| Some((p.name.to_string(), vec![recorded(p).copied().or(p.absent)?])))
        .collect::<Option<_>>()?;
    let space = SearchSpace::build(tunable, target, &overrides).ok()?;
    space.points.first().cloned()
}

/// Largest |ln(a / b)| over the numeric fields of two problems; `None` when they differ
/// in a field that is not a number, in their fields, or where one number is 0 and the
/// other is not.
pub fn problem_distance(a: &serde_json::Value, b: &serde_json::Value) -> Option<f64> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            if x.len() != y.len() {
                return None;
            }
            x.iter().try_fold(0.0f64, |d, (k, v)| Some(d.max(problem_distance(v, y.get(k)?)?)))
        }
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64()?, y.as_f64()?);
            if x == y {
                Some(0.0)
            } else if x > 0.0 && y > 0.0 {
                Some((x / y).ln().abs())
            } else {
                None
            }
        }
        (x, y) => (x == y).then_some(0.0),
    }
}

/// The database entries of a cache: for each sweep (group key) the config with the least
/// `objective`, with its fingerprint.
pub fn distil(cache: &TuneCache, objective: Objective) -> Vec<DbEntry> {
    let mut out = Vec::new();
    for (group, target, _) in cache.groups() {
        let verified = cache.group_entries(&group).values().filter(|e| e.time_ms().is_some()).count();
        let Some((score, best)) = cache.best(&group, objective) else { continue };
        let r = &best.record;
        out.push(DbEntry {
            fingerprint: Fingerprint {
                device: group.device.clone(),
                backend: group.backend,
                multiprocessors: target.limits.multiprocessors,
                driver: group.driver.clone(),
                image_hash: group.image_hash.clone(),
                sm_clock_mhz: r.observed.as_ref().and_then(|o| o.sm_clock_mhz).map(|s| s.median),
            },
            family: group.family.clone(),
            variant: group.variant.clone(),
            problem: r.problem.clone(),
            objective: objective.name().into(),
            params: best.tune.params.clone(),
            score,
            median_ms: r.median_ms.unwrap_or(f64::NAN),
            gbps: r.gbps,
            tflops: r.tflops,
            verified_configs: verified,
            commit: r.commit.clone(),
            unix_time: r.unix_time,
        });
    }
    out.sort_by(|a, b| {
        (&a.fingerprint.device, &a.family, &a.variant, super::canonical_json(&a.problem)).cmp(&(
            &b.fingerprint.device,
            &b.family,
            &b.variant,
            super::canonical_json(&b.problem),
        ))
    });
    out
}

/// The tuned config (as JSON) of `tunable`'s problem on `b` and the line saying where it
/// came from (`(None, why)`: the heuristic default runs, and why), in this order:
/// - the tuning database's entry for this problem (see [`TuningDb::lookup`]);
/// - where `autotune` and `db` carries it, tuning on first use ([`crate::tune::autotune`]),
///   which measures the database's nearest problem's config and `default()` first;
/// - the database's nearest tuned problem's config, where autotune does not run.
///
/// Built-in families and kernels described on the contract (`family::kernel::KernelFamily`) both
/// take their tuned configs here.
pub fn tuned_json<B: TuneBackend, T: Tunable>(
    db: Option<&TuningDb>,
    b: &B,
    variant: Variant,
    name: &str,
    tunable: &T,
    default: impl FnOnce() -> Value,
    autotune: bool,
) -> (Option<Value>, String) {
    let Some(db) = db else { return (None, heuristic(name, None, b)) };
    let nearest = db.lookup(tunable, &Target::of(b, variant), &b.info().name);
    if let Some(a) = nearest.as_ref().filter(|a| a.distance == 0.0) {
        return (Some(a.config.clone()), a.why());
    }
    let mut autotune_why = None;
    if let Some(at) = db.autotune.as_ref().filter(|_| autotune) {
        let first: Vec<Value> = nearest.iter().map(|a| a.config.clone()).chain([default()]).collect();
        match at.config_for(b, tunable, variant, &first) {
            Ok((config, origin)) => return (Some(config), origin),
            Err(reason) => autotune_why = Some(reason),
        }
    }
    let with = |why: String| match &autotune_why {
        Some(a) => format!("{why}; {a}"),
        None => why,
    };
    match nearest {
        Some(a) => (Some(a.config.clone()), with(a.why())),
        None => (None, with(heuristic(name, Some(db), b))),
    }
}

/// Why the heuristic default of family `name` runs.
pub fn heuristic<B: crate::backend::Backend>(name: &str, db: Option<&TuningDb>, b: &B) -> String {
    let device = &b.info().name;
    match db {
        None => "heuristic default (tuning database not consulted)".into(),
        Some(db) if !db.entries.iter().any(|e| e.family == name && &e.fingerprint.device == device) => {
            format!("heuristic default: the tuning database has no {name} entry for {device}")
        }
        Some(_) => format!(
            "heuristic default: no tuned {name} problem on {device} within {}x of this one takes a config that fits it",
            crate::tune::db::MAX_RATIO
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn distance_is_the_largest_log_ratio_and_non_numbers_must_agree() {
        let a = json!({"m": 4096, "n": 4096, "k": 1000, "kind": "f32"});
        assert_eq!(problem_distance(&a, &a), Some(0.0));
        let b = json!({"m": 2048, "n": 4096, "k": 1500, "kind": "f32"});
        assert!((problem_distance(&a, &b).unwrap() - 2f64.ln()).abs() < 1e-12);
        assert_eq!(problem_distance(&a, &json!({"m": 4096, "n": 4096, "k": 1000, "kind": "f16"})), None);
        assert_eq!(problem_distance(&a, &json!({"m": 4096, "n": 4096, "k": 1000})), None);
        assert_eq!(problem_distance(&json!({"r": 0}), &json!({"r": 1})), None);
        assert_eq!(problem_distance(&json!({"r": 0}), &json!({"r": 0})), Some(0.0));
    }

    /// An SGEMM entry recorded before the space had `splits` still answers where the space
    /// now has it (as one split), and one the space cannot name does not.
    #[test]
    fn an_entry_without_a_parameter_added_since_fits_as_its_absent_value() {
        use crate::families::sgemm::{SgemmProblem, SgemmTunable};
        let target = Target {
            backend: crate::backend::BackendKind::Cuda,
            variant: crate::backend::Variant::LaunchSized,
            limits: crate::tune::cache::tests::limits(),
            is_cpu: false,
        };
        let t = SgemmTunable::new(SgemmProblem { m: 2048, n: 2048, k: 2048, f16_inputs: false });
        assert!(t.params(&target).iter().any(|p| p.name == "splits"), "2048^3 has split-K in its space");
        let old: BTreeMap<String, u32> = [("bm", 256), ("bn", 128), ("bk", 32), ("stages", 2), ("tm", 8), ("tma", 1)]
            .map(|(k, v)| (k.to_string(), v))
            .into();
        let point = fit_point(&t, &target, &old).expect("fits with one split");
        assert_eq!(t.config(&point), dynsmem_kernels::sgemm::SgemmConfig::tma(256, 32, 2));
        let mut unknown = old.clone();
        unknown.insert("warps".into(), 4);
        assert_eq!(fit_point(&t, &target, &unknown), None);
    }

    /// The built-in reduce entry, recorded when items per thread was the parameter `ipt`,
    /// answers under its new name (`Param::formerly`), with the config records carry.
    #[test]
    fn an_entry_recorded_under_a_former_name_still_answers() {
        use crate::family::DynFamily;
        let target = Target {
            backend: crate::backend::BackendKind::Cuda,
            variant: crate::backend::Variant::LaunchSized,
            limits: crate::tune::cache::tests::limits(),
            is_cpu: false,
        };
        let problem = json!({"n": 1u64 << 28, "op": "sum", "dtype": "f32"});
        let t = crate::tune::ErasedTunable::new(crate::families::reduce::REDUCE.tunable(&problem).unwrap().unwrap());
        let old: BTreeMap<String, u32> =
            [("block", 512), ("ipt", 32), ("staged", 0)].map(|(k, v)| (k.to_string(), v)).into();
        let point = fit_point(&t, &target, &old).expect("`ipt` is items_per_thread");
        assert_eq!(t.config_json(&point), json!({"block": 512, "items_per_thread": 32, "staged": false}));
        let answer = TuningDb::built_in().lookup(&t, &target, "NVIDIA H100 80GB HBM3").expect("the built-in entry");
        assert_eq!(answer.config, json!({"block": 512, "items_per_thread": 32, "staged": false}));
    }

    #[test]
    fn the_built_in_database_parses() {
        let db = TuningDb::built_in();
        for e in &db.entries {
            assert!(e.score.is_finite() && !e.params.is_empty(), "{e:?}");
        }
    }
}
