//! Export in Kernel Tuner's T4 results format ("Open Autotuning Results Schema",
//! `kernel_tuner/schema/T4/1.0.0/results-schema.json`), written the way Kernel Tuner's
//! `file_utils.get_t4_results` writes it, so its tools (and autotuning_methodology's
//! `SearchspaceStatistics` with its default keys) read our sweeps:
//!
//! ```json
//! {"schema_version": "1.0.0", "metadata": {"timeunit": "milliseconds", "filtered": [..], ...},
//!  "results": [{"timestamp": "...", "configuration": {"block": 256, ...},
//!               "objectives": ["time"],
//!               "times": {"compilation": .., "runtimes": [..], "framework": ..,
//!                         "search_algorithm": .., "validation": ..},
//!               "invalidity": "correct", "correctness": 1,
//!               "measurements": [{"name": "time", "value": 0.12, "unit": "ms"}, ...]}]}
//! ```
//!
//! - Times are in milliseconds (`metadata.timeunit`, which autotuning_methodology reads
//!   from this file). Every result carries the five `times` numbers autotuning_methodology
//!   sums by default; `search_algorithm` is the strategy's own time before the config.
//! - `measurements.time` is the **mean** of the runtimes, as Kernel Tuner's observers
//!   report it; `time_median` is our tuner's objective, and both are there. A failed
//!   config's `time` is the Kernel Tuner error name (`RuntimeFailedConfig`, ...).
//! - Configs the space filtered before launch are not results (Kernel Tuner never
//!   evaluates what its restrictions exclude, and zero-cost entries would make
//!   autotuning_methodology's time budget 0): they are listed in `metadata.filtered` with
//!   their reasons.
//! - Device, driver and environment go in the metadata file ([`super::kt::metadata`]).

use serde_json::{Value, json};

use super::kt::{benchmark_ms, measures_energy};
use super::objective::Objective;
use super::runner::Evaluation;
use super::space::{SearchSpace, params_map};

/// The T4 schema version written (Kernel Tuner's current one).
pub const SCHEMA_VERSION: &str = "1.0.0";

/// Provenance for the T4 `metadata` object (free-form in the schema).
#[derive(Debug, Clone, Default)]
pub struct Metadata {
    pub family: String,
    pub problem: Value,
    pub device: String,
    pub driver: String,
    pub backend: String,
    pub variant: String,
    pub image_hash: String,
    pub strategy: String,
    pub commit: String,
}

impl Metadata {
    /// The metadata of a sweep of `tunable` on the device `info` describes, as `variant`,
    /// of the image `image_hash` built at `commit`, by `strategy`.
    pub fn of<T: super::Tunable + ?Sized>(
        tunable: &T,
        info: &crate::backend::DeviceInfo,
        variant: crate::backend::Variant,
        image_hash: String,
        strategy: &str,
        commit: String,
    ) -> Metadata {
        Metadata {
            family: tunable.family().into(),
            problem: serde_json::to_value(tunable.problem()).expect("problems serialize"),
            device: info.name.clone(),
            driver: info.driver.clone(),
            backend: info.backend.to_string(),
            variant: variant.name().into(),
            image_hash,
            strategy: strategy.into(),
            commit,
        }
    }
}

/// ISO 8601 UTC time of a Unix time (seconds), e.g. `2026-11-22T09:14:03Z`.
pub fn iso8601(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", secs / 3600, secs % 3600 / 60, secs % 60)
}

fn measurement(name: &str, value: Value, unit: &str) -> Value {
    json!({ "name": name, "value": value, "unit": unit })
}

/// One T4 result of an evaluation; `energy`: whether the sweep measured energy.
fn result(space: &SearchSpace, e: &Evaluation, energy: bool) -> Value {
    let configuration = json!(space.params_map(e.index));
    let Some(entry) = &e.entry else {
        // A replay of a config the cache lacks: nothing was measured.
        return json!({
            "configuration": configuration,
            "objectives": ["time"],
            "times": times(0.0, &[], 0.0, 0.0, e.search_ms, 0.0),
            "invalidity": "runtime",
            "correctness": 0,
            "measurements": [
                measurement("time", json!(KT_RUNTIME_FAILED), "ms"),
                measurement("error", json!(e.error.clone().unwrap_or_default()), ""),
            ],
        });
    };
    let r = &entry.record;
    let t = &entry.tune;
    let runtimes = &r.times_ms;
    let mut measurements = Vec::new();
    let correct = t.invalidity == "correct";
    match mean(runtimes).filter(|_| correct) {
        Some(m) => measurements.push(measurement("time", json!(m), "ms")),
        // A failed config names its error in every objective the sweep measured, so that
        // autotuning_methodology finds the key on every result and counts none of them.
        None => {
            let error = json!(kt_error(&t.invalidity));
            measurements.push(measurement("time", error.clone(), "ms"));
            measurements.push(measurement("time_median", error.clone(), "ms"));
            if energy {
                measurements.push(measurement("energy", error.clone(), "J"));
                measurements.push(measurement("edp", error, "J*s"));
            }
        }
    }
    if let Some(m) = r.median_ms.filter(|_| correct) {
        measurements.push(measurement("time_median", json!(m), "ms"));
    }
    if let Some(m) = r.min_ms.filter(|_| correct) {
        measurements.push(measurement("time_min", json!(m), "ms"));
    }
    if let Some(g) = r.gbps {
        measurements.push(measurement("GB/s", json!(g), "GB/s"));
    }
    if let Some(f) = r.tflops {
        measurements.push(measurement("TFLOP/s", json!(f), "TFLOP/s"));
    }
    if let Some(o) = &r.observed {
        if let Some(e) = o.energy.filter(|_| correct) {
            measurements.push(measurement("energy", json!(e.joules_per_run), "J"));
            if let Ok(edp) = Objective::Edp.value(r) {
                measurements.push(measurement("edp", json!(edp), "J*s"));
            }
            measurements.push(measurement("power", json!(e.watts), "W"));
        }
        if let Some(c) = o.sm_clock_mhz {
            measurements.push(measurement("core_freq", json!(c.median), "MHz"));
        }
        if let Some(c) = o.mem_clock_mhz {
            measurements.push(measurement("mem_freq", json!(c.median), "MHz"));
        }
        if let Some(c) = o.temperature_c {
            measurements.push(measurement("temperature", json!(c.max), "C"));
        }
    }
    measurements.push(measurement("shared_bytes", json!(r.shared_bytes), "B"));
    measurements.push(measurement("static_shared_bytes", json!(r.static_shared_bytes), "B"));
    measurements.push(measurement("kernel", json!(r.kernel), ""));
    if let Some(err) = &r.error {
        measurements.push(measurement("error", json!(err), ""));
    }
    json!({
        "timestamp": iso8601(r.unix_time),
        "configuration": configuration,
        "objectives": ["time"],
        "times": times(t.build_ms, runtimes, benchmark_ms(entry), framework_ms(entry), e.search_ms, t.verify_ms),
        "invalidity": t.invalidity,
        "correctness": i32::from(correct),
        "measurements": measurements,
    })
}

/// Kernel Tuner's error names, as its caches and T4 measurements carry them.
pub const KT_INVALID: &str = "InvalidConfig";
pub const KT_COMPILE_FAILED: &str = "CompilationFailedConfig";
pub const KT_RUNTIME_FAILED: &str = "RuntimeFailedConfig";

/// Kernel Tuner's error name for a T4 validity class (a wrong result is a runtime failure
/// to it: it has no class of its own).
pub fn kt_error(invalidity: &str) -> &'static str {
    match invalidity {
        "constraints" => KT_INVALID,
        "compile" => KT_COMPILE_FAILED,
        _ => KT_RUNTIME_FAILED,
    }
}

/// The mean of `v` (`None` if empty): Kernel Tuner's `time`.
pub fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Milliseconds of an entry's wall time that were neither building, verifying nor the
/// benchmark ([`benchmark_ms`]): the inputs, their upload and the reference, work Kernel
/// Tuner's user does once before tuning. Never below 0.
pub fn framework_ms(entry: &super::CacheEntry) -> f64 {
    let t = &entry.tune;
    (t.wall_ms - t.build_ms - t.verify_ms - benchmark_ms(entry)).max(0.0) + 0.0
}

/// The `times` object: autotuning_methodology's five default keys, numbers on every
/// result, and the schema's and Kernel Tuner's extra names (`benchmark`: the benchmark's
/// wall time, Kernel Tuner's `benchmark_time`).
fn times(build: f64, runtimes: &[f64], benchmark: f64, framework: f64, search: f64, validation: f64) -> Value {
    json!({
        "compilation": build,
        "compilation_time": build,
        "runtimes": runtimes,
        "benchmark": benchmark,
        "framework": framework,
        "search_algorithm": search,
        "validation": validation,
    })
}

/// The T4 document of a search: every evaluation in order, then every config the space
/// filtered before launch.
pub fn export(space: &SearchSpace, evaluations: &[Evaluation], meta: &Metadata) -> Value {
    let energy = measures_energy(evaluations.iter().filter_map(|e| e.entry.as_ref()));
    let results: Vec<Value> = evaluations.iter().map(|e| result(space, e, energy)).collect();
    let filtered: Vec<Value> = space
        .filtered
        .iter()
        .map(|f| json!({ "configuration": params_map(&space.params, &f.point), "reason": f.reason }))
        .collect();
    json!({
        "schema_version": SCHEMA_VERSION,
        "metadata": {
            "timeunit": "milliseconds",
            "tool": "dynsmem tune",
            "family": meta.family,
            "problem": meta.problem,
            "variant": meta.variant,
            "strategy": meta.strategy,
            "commit": meta.commit,
            "tune_params": space.params.iter().map(|p| (p.name.to_string(), json!(p.values))).collect::<serde_json::Map<_, _>>(),
            "filtered": filtered,
        },
        "results": results,
    })
}

#[cfg(test)]
mod tests {
    use super::iso8601;

    #[test]
    fn iso8601_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso8601(1_795_000_000), "2026-11-18T11:06:40Z");
    }
}
