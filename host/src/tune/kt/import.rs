//! **Import** (`replay-kt FILE`): a Kernel Tuner cache or T4 results file as a search
//! space and a runner ([`Imported`]), so our strategies run against sweeps Kernel Tuner
//! (or anyone writing its formats) made.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::super::runner::{Evaluation, Runner};
use super::super::space::{Param, SearchSpace};
use super::super::t4::KT_INVALID;
use super::super::{Footprint, Target, Tunable};
use crate::backend::{BackendKind, Limits, Variant};
use crate::error::{Error, Result};

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
            named: params.iter().map(|(n, v)| Param::new(Box::leak(n.clone().into_boxed_str()), v)).collect(),
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
            max_cluster: 8,
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
    use serde_json::json;

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
}
