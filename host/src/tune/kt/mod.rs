//! Kernel Tuner interop, both ways.
//!
//! **Export** (`tune --kt DIR`): for one sweep, the four files Kernel Tuner's tools and
//! autotuning_methodology read (`ci/kt/SPEC.md` has the field-by-field contract, and
//! `ci/kt/check_exports.py` runs the real packages on them in CI):
//! - `NAME.t4.json`: the T4 results ([`super::t4::export`]);
//! - `NAME.t4-metadata.json`: the T4 metadata: device, driver, limits, toolchain
//!   ([`metadata`]);
//! - `NAME.kt-cache.json`: a Kernel Tuner cache file ([`cache_file`], written by
//!   [`KtCache::text`] in the layout Kernel Tuner's `store_cache` writes): every config the
//!   sweep ran, measured ones with `time` (the mean, Kernel Tuner's statistic), `times`,
//!   and our `time_median`, `energy` and `edp`; failures with Kernel Tuner's error name.
//!   Its simulation mode replays our sweep (with the filtered configs as restrictions);
//! - `NAME.best.json`: the best config our tuner named and its objective key, which the
//!   simulation must reproduce ([`best`]).
//!
//! **Import** (`replay-kt FILE`): [`Imported`].

mod import;
pub mod pyjson;

use std::collections::BTreeMap;

use serde_json::{Value, json};

pub use import::{Imported, ImportedRunner, higher_is_better};
use pyjson::Fields;

use super::Target;
use super::cache::{CacheEntry, GroupKey, TuneCache};
use super::objective::Objective;
use super::space::SearchSpace;
use super::t4::{iso8601, kt_error, mean};

/// Kernel Tuner's value for an objective a failed config has none of
/// (`kernel_tuner_error_value` in autotuning_methodology, the Kernel Tuner dashboard's
/// filter): a number, so `store_results` can still order the entries, that every tool
/// of Kernel Tuner's treats as no result.
pub const KT_ERROR_VALUE: f64 = 1e20;

/// A Kernel Tuner cache file: its header, then `cache`, last (Kernel Tuner appends
/// closing braces to a file that does not end in the `cache` object).
#[derive(Debug, Clone, PartialEq)]
pub struct KtCache {
    pub device_name: String,
    pub kernel_name: String,
    /// What the tuning call was given (a number or a list of them).
    pub problem_size: Value,
    /// The parameter names, in the order of `tune_params` and of each key's values.
    pub tune_params_keys: Vec<String>,
    pub tune_params: BTreeMap<String, Vec<Value>>,
    /// `"time"` in our exports (the dashboard reads a string; Kernel Tuner 1.5 writes
    /// a list, `["time"]`, that its dashboard cannot read).
    pub objective: Value,
    /// Every entry, in the order written: its key (the parameter values joined by `,`)
    /// and its fields in order.
    pub cache: Vec<(String, Fields)>,
}

impl KtCache {
    /// The file, byte for byte as Kernel Tuner writes it: the header as
    /// `json.dumps(header, indent="")` up to `"cache": {`, then each entry as
    /// `store_cache` appends it (`"\n" + json.dumps({key: entry})[1:-1] + ","`), then
    /// `close_cache`'s ending (the last comma replaced by `}\n}`).
    pub fn text(&self) -> String {
        let tune_params: Fields = self
            .tune_params_keys
            .iter()
            .map(|k| (k.clone(), Value::Array(self.tune_params.get(k).cloned().unwrap_or_default())))
            .collect();
        let mut header = String::new();
        pyjson::object(
            &[
                ("device_name".into(), json!(self.device_name)),
                ("kernel_name".into(), json!(self.kernel_name)),
                ("problem_size".into(), self.problem_size.clone()),
                ("tune_params_keys".into(), json!(self.tune_params_keys)),
                ("tune_params".into(), Value::Null),
                ("objective".into(), self.objective.clone()),
                ("cache".into(), json!({})),
            ],
            Some(""),
            0,
            &mut header,
        );
        // `tune_params` keeps the keys' order, which a JSON value (sorted) would not.
        let mut params = String::new();
        pyjson::object(&tune_params, Some(""), 1, &mut params);
        let mut out = header.replacen("\"tune_params\": null", &format!("\"tune_params\": {params}"), 1);
        out.truncate(out.len() - "}\n}".len());
        for (key, fields) in &self.cache {
            out.push('\n');
            pyjson::string(key, &mut out);
            out.push_str(": ");
            pyjson::object(fields, None, 0, &mut out);
            out.push(',');
        }
        if out.ends_with(',') {
            out.pop();
        }
        out.push_str("}\n}");
        out
    }
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

/// Python's `str(datetime)` of a Unix time in UTC, as Kernel Tuner stamps its entries:
/// `2026-11-22 09:14:03+00:00`.
pub fn kt_timestamp(unix: u64) -> String {
    iso8601(unix).replace('T', " ").replace('Z', "+00:00")
}

/// The Kernel Tuner cache of one sweep (a group of `cache`) over the space `space`
/// spans: every config the sweep ran, in the order of the parameter product. Configs the
/// space filtered before launch are not entries (Kernel Tuner never stores what its
/// restrictions exclude); the T4 results list them (`metadata.filtered`), and Kernel
/// Tuner's simulation takes them as restrictions. Points neither ran nor filtered are
/// left out too: the simulation then refuses to run, which is right for a sweep that did
/// not cover its space.
pub fn cache_file(cache: &TuneCache, group: &GroupKey, space: &SearchSpace) -> KtCache {
    let keys: Vec<String> = space.params.iter().map(|p| p.name.to_string()).collect();
    let tune_params: BTreeMap<String, Vec<Value>> =
        space.params.iter().map(|p| (p.name.to_string(), p.values.iter().map(|v| json!(v)).collect())).collect();
    let entries = cache.group_entries(group);
    let problem = entries.values().next().map(|e| e.record.problem.clone()).unwrap_or(Value::Null);
    // A failed config carries the error value in every objective the sweep measured.
    let energy = measures_energy(entries.values().copied());
    let objectives: &[&str] = if energy { &["time", "time_median", "energy", "edp"] } else { &["time", "time_median"] };
    // In product order: each parameter's values as the space lists them.
    let position = |params: &BTreeMap<String, u32>| -> Vec<usize> {
        space
            .params
            .iter()
            .map(|p| params.get(p.name).and_then(|v| p.values.iter().position(|x| x == v)).unwrap_or(usize::MAX))
            .collect()
    };
    let mut ordered: Vec<(Vec<usize>, String, Fields)> = entries
        .iter()
        .map(|(params, e)| {
            let key = keys.iter().map(|k| params.get(k).map_or(String::new(), |v| v.to_string())).collect::<Vec<_>>();
            (position(params), key.join(","), entry_fields(&keys, params, e, objectives))
        })
        .collect();
    ordered.sort_by(|a, b| a.0.cmp(&b.0));
    KtCache {
        device_name: group.device.clone(),
        kernel_name: group.family.clone(),
        problem_size: json!(problem_size(&problem)),
        tune_params_keys: keys,
        tune_params,
        objective: json!("time"),
        cache: ordered.into_iter().map(|(_, k, f)| (k, f)).collect(),
    }
}

/// One entry, its fields in Kernel Tuner's order: the parameters; the measurement
/// (`time`, `times` and ours) or `__error__` with [`KT_ERROR_VALUE`] in each of
/// `objectives`; `compile_time`, `verification_time`, `benchmark_time`; the metrics
/// (`GB/s`, `TFLOP/s`); `timestamp`. Kernel Tuner's meaning of the three times (ms):
/// building the kernel, the verification run and its check, and the benchmark's wall
/// time (warm-up, timed runs and observers). What else the config cost (inputs, the
/// reference) is framework time, which Kernel Tuner's sequential runner does not store
/// in its cache and our T4 results carry.
fn entry_fields(keys: &[String], params: &BTreeMap<String, u32>, e: &CacheEntry, objectives: &[&str]) -> Fields {
    let r = &e.record;
    let t = &e.tune;
    let mut f: Fields = keys.iter().filter_map(|k| params.get(k).map(|v| (k.clone(), json!(v)))).collect();
    let correct = t.invalidity == "correct" && r.verified && r.error.is_none();
    let mut metrics = Vec::new();
    if correct {
        f.push(("time".into(), json!(mean(&r.times_ms).unwrap_or(f64::NAN))));
        f.push(("times".into(), json!(r.times_ms)));
        f.push(("time_median".into(), json!(r.median_ms)));
        for o in [Objective::Energy, Objective::Edp] {
            if let Ok(v) = o.value(r) {
                f.push((o.name().into(), json!(v)));
            }
        }
        if let Some(g) = r.gbps {
            metrics.push(("GB/s".into(), json!(g)));
        }
        if let Some(x) = r.tflops {
            metrics.push(("TFLOP/s".into(), json!(x)));
        }
    } else {
        f.push(("__error__".into(), json!(kt_error(&t.invalidity))));
        f.extend(objectives.iter().map(|o| (o.to_string(), json!(KT_ERROR_VALUE))));
    }
    f.push(("compile_time".into(), json!(t.build_ms)));
    f.push(("verification_time".into(), json!(t.verify_ms)));
    f.push(("benchmark_time".into(), json!(benchmark_ms(e))));
    f.extend(metrics);
    f.push(("timestamp".into(), json!(kt_timestamp(r.unix_time))));
    f
}

/// Whether a sweep measured energy: some correct entry of it has an energy figure. Its
/// failed entries then carry the error in `energy` and `edp` too, in the cache and the T4
/// results alike.
pub fn measures_energy<'a>(entries: impl IntoIterator<Item = &'a CacheEntry>) -> bool {
    entries.into_iter().any(|e| e.tune.invalidity == "correct" && Objective::Energy.value(&e.record).is_ok())
}

/// Kernel Tuner's `benchmark_time` of an entry (ms): the benchmark's wall time, or for a
/// cache written before it was recorded, the sum of the timed runs (0.0 for none).
pub fn benchmark_ms(e: &CacheEntry) -> f64 {
    e.tune.bench_ms.unwrap_or_else(|| e.record.times_ms.iter().sum::<f64>()) + 0.0
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde::de::{Deserializer, MapAccess, Visitor};

    /// A JSON object read in its order (this build's JSON maps sort their keys).
    struct Ordered<T>(Vec<(String, T)>);

    impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
            struct V<T>(std::marker::PhantomData<T>);
            impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
                type Value = Ordered<T>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> std::result::Result<Ordered<T>, A::Error> {
                    let mut out = Vec::new();
                    while let Some(kv) = m.next_entry()? {
                        out.push(kv);
                    }
                    Ok(Ordered(out))
                }
            }
            d.deserialize_map(V(std::marker::PhantomData))
        }
    }

    #[derive(Deserialize)]
    struct Raw {
        device_name: String,
        kernel_name: String,
        problem_size: Value,
        tune_params_keys: Vec<String>,
        tune_params: BTreeMap<String, Vec<Value>>,
        objective: Value,
        cache: Ordered<Ordered<Value>>,
    }

    /// A cache Kernel Tuner 1.5.0 wrote (`ci/kt/kt_written.py`: its C backend, a
    /// restriction, a config that fails to compile, a metric), read and written again by
    /// [`KtCache::text`]: the same bytes.
    #[test]
    fn kt_cache_text_is_kernel_tuners_layout() {
        let written = include_str!("testdata/kt-1.5.0-cache.json");
        let raw: Raw = serde_json::from_str(written).unwrap();
        let kt = KtCache {
            device_name: raw.device_name,
            kernel_name: raw.kernel_name,
            problem_size: raw.problem_size,
            tune_params_keys: raw.tune_params_keys,
            tune_params: raw.tune_params,
            objective: raw.objective,
            cache: raw.cache.0.into_iter().map(|(k, e)| (k, e.0)).collect(),
        };
        assert!(kt.cache.iter().any(|(_, e)| e.iter().any(|(k, _)| k == "__error__")), "a failed entry is in the file");
        assert_eq!(kt.text(), written);
        let empty = KtCache { cache: Vec::new(), ..kt };
        assert!(empty.text().ends_with("\"cache\": {}\n}"), "{}", empty.text());
        serde_json::from_str::<Value>(&empty.text()).unwrap();
    }

    /// Our export of a sweep with a correct, a failed and (by the space) filtered configs.
    #[test]
    fn an_export_stores_what_ran_and_failures_with_kernel_tuners_error_value() {
        use crate::tune::cache::tests::entry;
        let space = crate::tune::strategies::tests::bowl_space();
        let entries = vec![
            entry(&[("x", 3), ("y", 3)], None),
            entry(&[("x", 0), ("y", 2)], Some(2.0)),
            entry(&[("x", 0), ("y", 0)], Some(1.0)),
        ];
        let group = entries[0].group();
        let cache = TuneCache::from_entries(std::path::Path::new("unused.jsonl"), entries);
        let file = cache_file(&cache, &group, &space);
        let keys: Vec<&str> = file.cache.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["0,0", "0,2", "3,3"], "what ran, in the product's order; nothing filtered");
        let doc: Value = serde_json::from_str(&file.text()).unwrap();
        let ok = &doc["cache"]["0,0"];
        assert_eq!((ok["time"].as_f64(), ok["time_median"].as_f64()), (Some(1.005), Some(1.0)));
        assert_eq!(ok["benchmark_time"].as_f64(), Some(1.5), "the benchmark's wall time, not the runs' sum");
        let failed = doc["cache"]["3,3"].as_object().unwrap();
        assert_eq!(failed["__error__"], "RuntimeFailedConfig");
        assert_eq!(
            (failed["time"].as_f64(), failed["time_median"].as_f64()),
            (Some(KT_ERROR_VALUE), Some(KT_ERROR_VALUE))
        );
        assert!(!failed.contains_key("times") && !failed.contains_key("energy"), "{failed:?}");
        assert_eq!(doc["objective"], "time");
    }

    #[test]
    fn kt_timestamps_are_pythons_str_of_a_utc_datetime() {
        assert_eq!(kt_timestamp(1_795_000_000), "2026-11-18 11:06:40+00:00");
    }

    #[test]
    fn problem_size_is_the_numeric_fields_in_key_order() {
        assert_eq!(problem_size(&json!({"n": 5, "m": 3, "kind": "x", "k": 7})), vec![7, 3, 5]);
    }
}
