//! What a search minimises, computed from a measured entry: its median time, the energy of
//! one run (from the device's energy counter, [`crate::observe::energy`]), or their product
//! (the energy-delay product). Kernel Tuner's `objective` names the same choice.

use crate::report::Record;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Objective {
    /// Median time of one run, ms.
    #[default]
    Time,
    /// Energy of one run, J.
    Energy,
    /// Energy of one run times its median time, J·s.
    Edp,
}

impl Objective {
    pub fn name(self) -> &'static str {
        match self {
            Objective::Time => "time",
            Objective::Energy => "energy",
            Objective::Edp => "edp",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Objective::Time => "ms",
            Objective::Energy => "J",
            Objective::Edp => "J*s",
        }
    }

    /// The axis label of plots and tables.
    pub fn label(self) -> &'static str {
        match self {
            Objective::Time => "median time (ms)",
            Objective::Energy => "energy per run (J)",
            Objective::Edp => "energy-delay product (J*s)",
        }
    }

    /// Whether it needs the energy counter.
    pub fn needs_energy(self) -> bool {
        self != Objective::Time
    }

    /// The objective's value for a verified record; `Err` says why there is none (it
    /// failed, or it has no energy reading).
    pub fn value(self, rec: &Record) -> Result<f64, String> {
        if let Some(e) = &rec.error {
            return Err(e.clone());
        }
        let time = rec.median_ms.filter(|_| rec.verified).ok_or_else(|| "not measured".to_string())?;
        self.of(time, rec.observed.as_ref().and_then(|o| o.energy).map(|e| e.joules_per_run))
    }

    /// The objective's value from a median time (ms) and the energy of one run (J).
    pub fn of(self, time_ms: f64, energy_j: Option<f64>) -> Result<f64, String> {
        let energy = || {
            energy_j.ok_or_else(|| {
                "no energy reading (measured with --energy-ms 0, or the GPU has no energy counter)".to_string()
            })
        };
        match self {
            Objective::Time => Ok(time_ms),
            Objective::Energy => energy(),
            Objective::Edp => Ok(energy()? * time_ms * 1e-3),
        }
    }
}

impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::{Energy, Observation};

    fn record(energy: Option<f64>) -> Record {
        let mut r: Record = serde_json::from_value(serde_json::json!({
            "family": "f", "backend": "cuda", "variant": "launch-sized", "kernel": "k", "device": "d",
            "driver": "x", "api": "a", "rustc": "r", "commit": "c", "command": "", "image": "i",
            "unix_time": 0, "problem": {}, "config": {}, "shared_bytes": 0, "static_shared_bytes": 0,
            "timer": "t", "warmup": 0, "times_ms": [2.0], "median_ms": 2.0, "min_ms": 2.0, "max_ms": 2.0,
            "bytes": null, "gbps": null, "tflops": null, "anchor": null, "anchor_gbps": null,
            "anchor_tflops": null, "ratio": null, "verified": true, "error": null
        }))
        .unwrap();
        r.observed = energy.map(|j| Observation {
            energy: Some(Energy { joules_per_run: j, watts: 1.0, runs: 1, window_ms: 1.0 }),
            ..Observation::summarise("fake", &[], None)
        });
        r
    }

    #[test]
    fn each_objective_reads_its_figure() {
        let r = record(Some(0.5));
        assert_eq!(Objective::Time.value(&r), Ok(2.0));
        assert_eq!(Objective::Energy.value(&r), Ok(0.5));
        assert_eq!(Objective::Edp.value(&r), Ok(0.5 * 2.0e-3));
        let none = record(None);
        assert_eq!(Objective::Time.value(&none), Ok(2.0));
        assert!(Objective::Energy.value(&none).unwrap_err().contains("no energy reading"));
        let mut failed = record(Some(0.5));
        failed.error = Some("boom".into());
        assert_eq!(Objective::Energy.value(&failed), Err("boom".into()));
    }
}
