//! Kernel Tuner interop, both ways.
//!
//! **Export** (`tune --kt DIR`): for one sweep, the four files Kernel Tuner's tools and
//! autotuning_methodology read (`ci/kt/SPEC.md` has the field-by-field contract, and
//! `ci/kt/check_exports.py` runs the real packages on them in CI):
//! - `NAME.t4.json`: the T4 results ([`super::t4::export`]);
//! - `NAME.t4-metadata.json`: the T4 metadata: device, driver, limits, toolchain
//!   ([`metadata`]);
//! - `NAME.kt-cache.json`: a Kernel Tuner cache file ([`cache_file`]): every point of the
//!   parameter product, measured ones with `time` (the mean, Kernel Tuner's statistic),
//!   `times`, and our `time_median`, `energy` and `edp`; failures and filtered points with
//!   Kernel Tuner's error names. Its simulation mode replays our sweep;
//! - `NAME.best.json`: the best config our tuner named and its objective key, which the
//!   simulation must reproduce ([`best`]).
//!
//! **Import** (`replay-kt FILE`): a Kernel Tuner cache or T4 results file as a search
//! space and a runner ([`Imported`]), so our strategies run against sweeps Kernel Tuner
//! (or anyone writing its formats) made.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::cache::{CacheEntry, GroupKey, TuneCache};
use super::objective::Objective;
use super::runner::{Evaluation, Runner};
use super::space::{Param, SearchSpace};
use super::t4::{KT_INVALID, framework_ms, iso8601, kt_error, mean};
use super::{Footprint, Target, Tunable};
use crate::backend::Variant;
use crate::backend::{BackendKind, Limits};
use crate::error::{Error, Result};

/// A Kernel Tuner cache file. Field order matters: Kernel Tuner appends closing braces to
/// a file that does not end in the `cache` object, so `cache` is written last (a struct,
/// since this build's JSON maps sort their keys).
#[derive(Debug, Serialize)]
pub struct KtCache {
    pub device_name: String,
    pub kernel_name: String,
    pub problem_size: Vec<u64>,
    /// The parameter names, in the order of `tune_params` and of each key's values.
    pub tune_params_keys: Vec<String>,
    pub tune_params: BTreeMap<String, Vec<u32>>,
    pub objective: String,
    pub cache: BTreeMap<String, Map<String, Value>>,
}

/// The problem's numeric fields in key order: Kernel Tuner's `problem_size`.
pub fn problem_size(problem: &Value) -> Vec<u64> {
    match problem {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            keys.into_iter().filter_map(|k| m[k].as_u64()).collect()
        }
        other => other.as_u64().into_iter().collect(),
    }
}

/// The Kernel Tuner cache of one sweep (a group of `cache`), over the space `values` spans:
/// measured points from the cache, filtered points (by `space`) as `InvalidConfig`.
/// Points neither measured nor filtered are left out: Kernel Tuner's simulation then
/// refuses to run, which is right for a sweep that did not cover its space.
pub fn cache_file(cache: &TuneCache, group: &GroupKey, space: &SearchSpace) -> KtCache {
    let tune_params: BTreeMap<String, Vec<u32>> =
        space.params.iter().map(|p| (p.name.to_string(), p.values.clone())).collect();
    let keys: Vec<String> = tune_params.keys().cloned().collect();
    let key_of = |params: &BTreeMap<String, u32>| {
        keys.iter().map(|k| params.get(k).map_or(String::new(), |v| v.to_string())).collect::<Vec<_>>().join(",")
    };
    let mut out = BTreeMap::new();
    for f in &space.filtered {
        let params = super::space::params_map(&space.params, &f.point);
        let mut m = error_entry(&params, KT_INVALID);
        for k in ["compile_time", "verification_time", "benchmark_time", "framework_time", "strategy_time"] {
            m.insert(k.into(), json!(0.0));
        }
        out.insert(key_of(&params), m);
    }
    let entries = cache.group_entries(group);
    let problem = entries.values().next().map(|e| e.record.problem.clone()).unwrap_or(Value::Null);
    for (params, entry) in entries {
        out.insert(key_of(&params), entry_json(&params, entry));
    }
    KtCache {
        device_name: group.device.clone(),
        kernel_name: group.family.clone(),
        problem_size: problem_size(&problem),
        tune_params_keys: keys,
        tune_params,
        objective: "time".into(),
        cache: out,
    }
}

/// A failed or filtered point: its parameters, and the error name as `__error__` and as
/// every objective (autotuning_methodology reads `time` on every result).
fn error_entry(params: &BTreeMap<String, u32>, error: &str) -> Map<String, Value> {
    let mut m: Map<String, Value> = params.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    for k in ["__error__", "time", "time_median", "energy", "edp"] {
        m.insert(k.into(), json!(error));
    }
    m
}

fn entry_json(params: &BTreeMap<String, u32>, e: &CacheEntry) -> Map<String, Value> {
    let r = &e.record;
    let t = &e.tune;
    let correct = t.invalidity == "correct" && r.verified && r.error.is_none();
    let mut m = if correct {
        let mut m: Map<String, Value> = params.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        m.insert("time".into(), json!(mean(&r.times_ms).unwrap_or(f64::NAN)));
        m.insert("times".into(), json!(r.times_ms));
        m.insert("time_median".into(), json!(r.median_ms));
        for o in [Objective::Energy, Objective::Edp] {
            if let Ok(v) = o.value(r) {
                m.insert(o.name().into(), json!(v));
            }
        }
        if let Some(g) = r.gbps {
            m.insert("GB/s".into(), json!(g));
        }
        if let Some(f) = r.tflops {
            m.insert("TFLOP/s".into(), json!(f));
        }
        m
    } else {
        error_entry(params, kt_error(&t.invalidity))
    };
    m.insert("compile_time".into(), json!(t.build_ms));
    m.insert("verification_time".into(), json!(t.verify_ms));
    m.insert("benchmark_time".into(), json!(r.times_ms.iter().sum::<f64>()));
    m.insert("framework_time".into(), json!(framework_ms(e)));
    m.insert("strategy_time".into(), json!(0.0));
    m.insert("timestamp".into(), json!(iso8601(r.unix_time)));
    m
}

/// The T4 metadata document (Kernel Tuner's `metadata-schema.json`): the device, driver,
/// API and limits the sweep ran on, the image, and the toolchain.
pub fn metadata(meta: &super::t4::Metadata, target: &Target, api: &str, rustc: &str) -> Value {
    let os = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|r| format!("{} {}", std::env::consts::OS, r.trim()))
        .unwrap_or_else(|_| std::env::consts::OS.to_string());
    json!({
        "schema_version": super::t4::SCHEMA_VERSION,
        "metadata": {
            "operating_system": os,
            "hardware": {
                "operating_system": os,
                "hardware_description": [{
                    "class": "display",
                    "product": meta.device,
                    "backend": meta.backend,
                    "multiprocessors": target.limits.multiprocessors,
                    "shared_per_multiprocessor": target.limits.shared_per_multiprocessor,
                    "launch_shared_max": target.limits.launch_shared_max,
                    "static_shared_max": target.limits.static_shared_max,
                    "max_threads_per_block": target.limits.max_threads_per_block,
                }],
            },
            "environment": {
                "device_query": { "dynsmem": {
                    "device": meta.device,
                    "driver": meta.driver,
                    "api": api,
                    "backend": meta.backend,
                    "variant": meta.variant,
                    "image_hash": meta.image_hash,
                } },
                "requirements": [format!("dynsmem@{}", meta.commit), rustc.to_string()],
            },
        },
    })
}

/// `NAME.best.json`: the config with the least `objective` among the group's measured
/// entries, and the Kernel Tuner cache key holding that objective (`time_median` for our
/// time objective, the median; `energy`; `edp`).
pub fn best(cache: &TuneCache, group: &GroupKey, objective: Objective) -> Option<Value> {
    let (value, best) = cache.best(group, objective)?;
    let params = &best.tune.params;
    let key = match objective {
        Objective::Time => "time_median",
        o => o.name(),
    };
    Some(json!({ "objective": key, "params": params, "value": value }))
}

/// A Kernel Tuner cache or T4 results file, read as a space our strategies can search.
#[derive(Debug, Clone)]
pub struct Imported {
    pub kernel: String,
    pub device: String,
    pub params: Vec<(String, Vec<u32>)>,
    /// The same as [`Param`]s, whose names are `'static`: leaked once per import (a
    /// command reads one file).
    named: Vec<Param>,
    /// Each point's measurement: the objective's value, or the error name.
    pub points: BTreeMap<Vec<u32>, std::result::Result<f64, String>>,
    /// The objective key read.
    pub objective: String,
    /// Whether a larger value is better ([`higher_is_better`]): the search then minimises
    /// the value's negation.
    pub higher_is_better: bool,
}

/// Whether an objective key is a rate, better when larger (`GFLOP/s`, `GB/s`, `GFLOPS/W`,
/// `GFLOPS`): a key with a `/` or ending in `flops`; anything else (time, energy, EDP) is
/// better when smaller. Kernel Tuner asks for it (`objective_higher_is_better`); neither its
/// caches nor T4 files record it.
pub fn higher_is_better(objective: &str) -> bool {
    objective.contains('/') || objective.to_ascii_lowercase().ends_with("flops")
}

impl Imported {
    /// Reads `path` (a Kernel Tuner cache, told by its `cache` object, or T4 results),
    /// with `objective` the entry key (cache) or measurement name (T4) to minimise.
    pub fn read(path: &Path, objective: &str) -> Result<Imported> {
        let bad = |reason: String| Error::InvalidProblem { kernel: format!("import {}", path.display()), reason };
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.into(), source })?;
        // Kernel Tuner leaves a cache being written without its closing braces.
        let doc: Value = serde_json::from_str(&text)
            .or_else(|_| serde_json::from_str(&format!("{}\n}}\n}}", text.trim_end().trim_end_matches(','))))
            .map_err(|e| bad(format!("not JSON: {e}")))?;
        let int = |v: &Value, name: &str| -> Result<u32> {
            v.as_u64().and_then(|x| u32::try_from(x).ok()).ok_or_else(|| {
                bad(format!("parameter {name} has the value {v}: only non-negative integer parameters can be imported"))
            })
        };
        let mut params: Vec<(String, Vec<u32>)> = Vec::new();
        let mut points = BTreeMap::new();
        if let Some(cache) = doc.get("cache").and_then(Value::as_object) {
            let keys: Vec<String> = doc["tune_params_keys"]
                .as_array()
                .ok_or_else(|| bad("no tune_params_keys".into()))?
                .iter()
                .filter_map(|k| k.as_str().map(String::from))
                .collect();
            for k in &keys {
                let values = doc["tune_params"][k].as_array().ok_or_else(|| bad(format!("no values of {k}")))?;
                params.push((k.clone(), values.iter().map(|v| int(v, k)).collect::<Result<_>>()?));
            }
            for entry in cache.values() {
                let point = keys.iter().map(|k| int(&entry[k], k)).collect::<Result<Vec<u32>>>()?;
                let m = match (&entry.get("__error__"), entry.get(objective)) {
                    (Some(Value::String(e)), _) => Err(e.clone()),
                    (_, Some(v)) if v.is_f64() || v.is_u64() => Ok(v.as_f64().unwrap_or(f64::NAN)),
                    (_, Some(v)) => Err(v.as_str().unwrap_or("no value").to_string()),
                    (_, None) => Err(format!("no {objective}")),
                };
                points.insert(point, m);
            }
        } else if let Some(results) = doc.get("results").and_then(Value::as_array) {
            for r in results {
                let conf =
                    r["configuration"].as_object().ok_or_else(|| bad("a result without configuration".into()))?;
                let mut point = Vec::new();
                for (k, v) in conf {
                    let v = int(v, k)?;
                    match params.iter_mut().find(|(n, _)| n == k) {
                        Some((_, vs)) => vs.push(v),
                        None => params.push((k.clone(), vec![v])),
                    }
                    point.push((k.clone(), v));
                }
                point.sort();
                let value = r["measurements"]
                    .as_array()
                    .and_then(|ms| ms.iter().find(|m| m["name"] == objective))
                    .map(|m| &m["value"]);
                let m = match (r["invalidity"].as_str(), value) {
                    (Some("correct"), Some(v)) if v.is_number() => Ok(v.as_f64().unwrap_or(f64::NAN)),
                    (inv, _) => Err(inv.unwrap_or("no invalidity").to_string()),
                };
                points.insert(point.into_iter().map(|(_, v)| v).collect(), m);
            }
            params.sort_by(|a, b| a.0.cmp(&b.0));
            for (_, vs) in params.iter_mut() {
                vs.sort_unstable();
                vs.dedup();
            }
        } else {
            return Err(bad("neither a Kernel Tuner cache (no `cache`) nor T4 results (no `results`)".into()));
        }
        if params.is_empty() || points.is_empty() {
            return Err(bad("no parameters or no results".into()));
        }
        Ok(Imported {
            kernel: doc["kernel_name"].as_str().unwrap_or("imported").into(),
            device: doc["device_name"].as_str().unwrap_or("unknown device").into(),
            named: params
                .iter()
                .map(|(n, v)| Param { name: Box::leak(n.clone().into_boxed_str()), values: v.clone(), absent: None })
                .collect(),
            params,
            points,
            objective: objective.into(),
            higher_is_better: higher_is_better(objective),
        })
    }

    /// The search space: every point of the parameter product the file has a measurement
    /// for (its error included) is a config; the rest, and Kernel Tuner's `InvalidConfig`
    /// points, are filtered.
    pub fn space(&self) -> Result<SearchSpace> {
        SearchSpace::build(self, &import_target(), &[])
    }

    /// The best value in the file (the least, or the greatest where higher is better), and
    /// its point: what a strategy is measured against.
    pub fn optimum(&self) -> Option<(&Vec<u32>, f64)> {
        let valid = self.points.iter().filter_map(|(p, m)| m.as_ref().ok().map(|v| (p, *v)));
        if self.higher_is_better {
            valid.max_by(|a, b| a.1.total_cmp(&b.1))
        } else {
            valid.min_by(|a, b| a.1.total_cmp(&b.1))
        }
    }

    /// The score a strategy minimises for a measured value.
    pub fn score(&self, value: f64) -> f64 {
        if self.higher_is_better { -value } else { value }
    }
}

/// The target of an imported space: no device limits to check (the file's own device
/// checked them).
fn import_target() -> Target {
    Target {
        backend: BackendKind::Cpu,
        variant: Variant::LaunchSized,
        limits: Limits {
            max_threads_per_block: u32::MAX,
            max_grid_x: u64::MAX,
            launch_shared_default: u32::MAX,
            launch_shared_max: u32::MAX,
            static_shared_max: u32::MAX,
            shared_per_multiprocessor: None,
            multiprocessors: None,
            max_buffer_bytes: u64::MAX,
            memory_bytes: None,
        },
        is_cpu: false,
    }
}

impl Tunable for Imported {
    type Problem = Value;
    type Config = BTreeMap<String, u32>;
    fn family(&self) -> &'static str {
        "imported"
    }
    fn problem(&self) -> &Value {
        &Value::Null
    }
    fn params(&self, _target: &Target) -> Vec<Param> {
        self.named.clone()
    }
    fn check(&self, point: &[u32], _target: &Target) -> std::result::Result<Footprint, String> {
        match self.points.get(point) {
            None => Err("not in the imported file".into()),
            Some(Err(e)) if e == KT_INVALID || e == "constraints" => Err(e.clone()),
            Some(_) => Ok(Footprint { threads: 1, grid: 1, launch_bytes: 0, static_bytes: 0 }),
        }
    }
    fn config(&self, point: &[u32]) -> BTreeMap<String, u32> {
        self.params.iter().zip(point).map(|((n, _), v)| (n.clone(), *v)).collect()
    }
    fn prepare<'b, B: crate::contract::FamilyBackend>(
        &self,
        _backend: &'b B,
        _variant: Variant,
        _point: &[u32],
        _seed: u64,
    ) -> Result<Box<dyn crate::contract::Workload + 'b>> {
        Err(Error::InvalidConfig {
            kernel: self.kernel.clone(),
            reason: "an imported sweep has no kernel to run".into(),
        })
    }
}

/// Answers a strategy's evaluations from an imported file.
pub struct ImportedRunner<'a> {
    pub imported: &'a Imported,
    pub answered: usize,
}

impl Runner for ImportedRunner<'_> {
    fn evaluate(&mut self, space: &SearchSpace, index: usize) -> Result<Evaluation> {
        self.answered += 1;
        let (score, error) = match self.imported.points.get(&space.points[index]) {
            Some(Ok(v)) => (Some(self.imported.score(*v)), None),
            Some(Err(e)) => (None, Some(e.clone())),
            None => (None, Some("not in the imported file".into())),
        };
        Ok(Evaluation { index, score, error, cached: true, entry: None, search_ms: 0.0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_tuner_cache_imports_as_a_space_with_its_optimum() {
        let dir = std::env::temp_dir().join(format!("dynsmem-kt-import-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.json");
        let e = |b: u32, t: Value| json!({"block": b, "tile": 2, "time": t, "times": [1.0], "GFLOPS/W": t});
        let head = json!({
            "device_name": "A100", "kernel_name": "k", "problem_size": [1024],
            "tune_params_keys": ["block", "tile"], "tune_params": {"block": [32, 64, 128], "tile": [2]},
            "objective": "time",
        });
        let cache = json!({
            "32,2": e(32, json!(3.0)),
            "64,2": e(64, json!(1.5)),
            "128,2": {"block": 128, "tile": 2, "time": "InvalidConfig", "__error__": "InvalidConfig"},
        });
        // As Kernel Tuner writes it: `cache` last.
        let head = head.to_string();
        let doc = format!("{},\"cache\":{cache}}}", &head[..head.len() - 1]);
        std::fs::write(&path, &doc).unwrap();
        let imp = Imported::read(&path, "time").unwrap();
        assert_eq!(imp.device, "A100");
        let space = imp.space().unwrap();
        assert_eq!((space.len(), space.filtered.len()), (2, 1));
        assert_eq!(imp.optimum(), Some((&vec![64, 2], 1.5)));
        let mut runner = ImportedRunner { imported: &imp, answered: 0 };
        let found = crate::tune::Strategy::Exhaustive.search(
            &space,
            &mut runner,
            crate::tune::Budget::unlimited(),
            &mut crate::rng::SplitMix64::new(1),
        );
        assert_eq!(found.best().map(|b| space.points[b.index].clone()), Some(vec![64, 2]));
        // A rate is better when larger: the optimum is the greatest, and the search finds it.
        let rate = Imported::read(&path, "GFLOPS/W").unwrap();
        assert!(rate.higher_is_better && !imp.higher_is_better);
        assert_eq!(rate.optimum(), Some((&vec![32, 2], 3.0)));
        let mut runner = ImportedRunner { imported: &rate, answered: 0 };
        let found = crate::tune::Strategy::Exhaustive.search(
            &rate.space().unwrap(),
            &mut runner,
            crate::tune::Budget::unlimited(),
            &mut crate::rng::SplitMix64::new(1),
        );
        assert_eq!(found.best().map(|b| space.points[b.index].clone()), Some(vec![32, 2]));
        assert!(["GFLOP/s", "GB/s", "GFLOPS"].iter().all(|k| higher_is_better(k)));
        assert!(["time", "time_median", "energy", "edp"].iter().all(|k| !higher_is_better(k)));
        // A cache Kernel Tuner left open (no closing braces) still reads.
        std::fs::write(&path, &doc[..doc.len() - 2]).unwrap();
        assert_eq!(Imported::read(&path, "time").unwrap().points.len(), 3);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn problem_size_is_the_numeric_fields_in_key_order() {
        assert_eq!(problem_size(&json!({"n": 5, "m": 3, "kind": "x", "k": 7})), vec![7, 3, 5]);
    }
}
