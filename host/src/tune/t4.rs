//! Export in Kernel Tuner's T4 results format ("Open Autotuning Results Schema",
//! `kernel_tuner/schema/T4/1.0.0/results-schema.json`), written the way Kernel Tuner's
//! `file_utils.get_t4_results` writes it, so its tools read our sweeps:
//!
//! ```json
//! {"schema_version": "1.0.0", "metadata": {"timeunit": "milliseconds", ...},
//!  "results": [{"timestamp": "...", "configuration": {"block": 256, ...},
//!               "objectives": ["time"],
//!               "times": {"compilation_time": .., "runtimes": [..], "framework": .., "validation": ..},
//!               "invalidity": "correct", "correctness": 1,
//!               "measurements": [{"name": "time", "value": 0.12, "unit": "ms"}, ...]}]}
//! ```
//!
//! Times are in milliseconds (the metadata says so, as Kernel Tuner's does). `times`
//! carries the schema's own names (`compilation_time`, `runtimes`, `framework`,
//! `validation`) and Kernel Tuner's (`compilation`, `benchmark`). Configs the space
//! filtered out before launch are included with `invalidity: "constraints"` and their
//! reason as a string measurement.

use serde_json::{Value, json};

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

/// One T4 result of an evaluation.
fn result(space: &SearchSpace, e: &Evaluation) -> Value {
    let configuration = json!(space.params_map(e.index));
    let Some(entry) = &e.entry else {
        // A replay of a config the cache lacks: nothing was measured.
        return json!({
            "configuration": configuration,
            "objectives": ["time"],
            "times": { "runtimes": [] },
            "invalidity": "runtime",
            "correctness": 0,
            "measurements": [measurement("error", json!(e.error.clone().unwrap_or_default()), "")],
        });
    };
    let r = &entry.record;
    let t = &entry.tune;
    let runtimes = &r.times_ms;
    let benchmark: f64 = runtimes.iter().sum();
    let framework = (t.wall_ms - t.build_ms - t.verify_ms - benchmark).max(0.0);
    let mut measurements = Vec::new();
    if let Some(m) = r.median_ms {
        measurements.push(measurement("time", json!(m), "ms"));
    }
    if let Some(m) = r.min_ms {
        measurements.push(measurement("time_min", json!(m), "ms"));
    }
    if let Some(g) = r.gbps {
        measurements.push(measurement("GB/s", json!(g), "GB/s"));
    }
    if let Some(f) = r.tflops {
        measurements.push(measurement("TFLOP/s", json!(f), "TFLOP/s"));
    }
    measurements.push(measurement("shared_bytes", json!(r.shared_bytes), "B"));
    measurements.push(measurement("static_shared_bytes", json!(r.static_shared_bytes), "B"));
    measurements.push(measurement("kernel", json!(r.kernel), ""));
    if let Some(err) = &r.error {
        measurements.push(measurement("error", json!(err), ""));
    }
    let correctness = match t.invalidity.as_str() {
        "correct" => 1,
        _ => 0,
    };
    json!({
        "timestamp": iso8601(r.unix_time),
        "configuration": configuration,
        "objectives": ["time"],
        "times": {
            "compilation_time": t.build_ms,
            "compilation": t.build_ms,
            "runtimes": runtimes,
            "benchmark": benchmark,
            "framework": framework,
            "validation": t.verify_ms,
        },
        "invalidity": t.invalidity,
        "correctness": correctness,
        "measurements": measurements,
    })
}

/// The T4 document of a search: every evaluation in order, then every config the space
/// filtered before launch.
pub fn export(space: &SearchSpace, evaluations: &[Evaluation], meta: &Metadata) -> Value {
    let mut results: Vec<Value> = evaluations.iter().map(|e| result(space, e)).collect();
    for f in &space.filtered {
        results.push(json!({
            "configuration": params_map(&space.params, &f.point),
            "objectives": ["time"],
            "times": { "runtimes": [] },
            "invalidity": "constraints",
            "correctness": 0,
            "measurements": [measurement("reason", json!(f.reason), "")],
        }));
    }
    json!({
        "schema_version": SCHEMA_VERSION,
        "metadata": {
            "timeunit": "milliseconds",
            "tool": "dynsmem tune",
            "family": meta.family,
            "problem": meta.problem,
            "device": meta.device,
            "driver": meta.driver,
            "backend": meta.backend,
            "variant": meta.variant,
            "image_hash": meta.image_hash,
            "strategy": meta.strategy,
            "commit": meta.commit,
            "tune_params": space.params.iter().map(|p| (p.name.to_string(), json!(p.values))).collect::<serde_json::Map<_, _>>(),
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
