//! The regression gate: a run's records held against a baseline of the same card.
//!
//! A *row* is a verified measurement that is not an anchor, identified by device, backend,
//! family, variant, problem and config. Each row of the run is matched with the baseline's
//! row of the same identity; where the config moved (a new default), with the baseline's
//! best row of the same problem, so a default that got slower is caught too. A row is
//! *slower* where its figure (GB/s or TFLOP/s; higher is better) is under `1 - tolerance`
//! of the baseline's. A baseline row of a device and backend the run measured, that the run
//! has no verified row for, is *missing*: a row that now fails or is no longer made is a
//! regression as well. Rows of devices, backends or families the run did not measure are not
//! judged.
//!
//! Between processes a figure moves by about a percent on a quiet GPU, and two GPUs of one
//! model differ by a few (memory clocks): a row whose record has a ratio to an anchor of the
//! same run (the copy, cuBLAS) is slower only where that ratio fell past the tolerance too.
//! The bench also re-measures each slower row before it fails it ([`Remeasure`]),
//! interleaved with the baseline's config in one process where the config moved, and judges
//! the re-measured figure.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Record;
use crate::backend::BackendKind;

/// The slowdown the gate lets pass: 3%.
pub const DEFAULT_TOLERANCE: f64 = 0.03;

/// A row's figure: TFLOP/s where the family counts work, else GB/s (higher is better).
pub fn figure(r: &Record) -> Option<f64> {
    r.tflops.or(r.gbps).filter(|f| f.is_finite() && *f > 0.0)
}

/// Whether a record is a row the gate judges: verified, with a figure, not an anchor.
pub fn is_row(r: &Record) -> bool {
    r.verified && r.error.is_none() && r.variant != "anchor" && figure(r).is_some()
}

/// Where a row's figure came from once more, after the first comparison called it slower.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Remeasure {
    /// The row's figure measured again, interleaved with the baseline's config.
    pub figure: f64,
    /// The baseline's config measured in the same rounds, where the config moved.
    pub baseline_config_figure: Option<f64>,
    /// Interleaved rounds behind the two.
    pub rounds: u32,
}

/// How a row compares with the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// At or above `1 - tolerance` of the baseline.
    Pass,
    /// Under it (after the re-measurement, where one was made).
    Slower,
    /// The baseline has the row; the run, on the same device and backend, has no verified one.
    Missing,
    /// No baseline row for the problem: nothing to hold it to.
    New,
}

/// One row of the gate's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateRow {
    pub device: String,
    pub backend: BackendKind,
    pub family: String,
    pub variant: String,
    pub problem: serde_json::Value,
    /// The run's config (the baseline's for a missing row).
    pub config: serde_json::Value,
    /// The baseline row's config, where it differs from the run's.
    pub baseline_config: Option<serde_json::Value>,
    pub unit: &'static str,
    pub baseline: Option<f64>,
    /// The run's figure as first measured.
    pub now: Option<f64>,
    /// The run's ratio to its same-run anchor over the baseline's, where both have one.
    pub anchored: Option<f64>,
    pub remeasured: Option<Remeasure>,
    pub verdict: Verdict,
}

impl GateRow {
    /// The figure the verdict is taken on: the re-measured one where there is one.
    pub fn judged(&self) -> Option<f64> {
        self.remeasured.as_ref().map(|m| m.figure).or(self.now)
    }

    /// Judged figure over baseline figure.
    pub fn ratio(&self) -> Option<f64> {
        Some(self.judged()? / self.baseline?)
    }

    /// Re-judges the row with its re-measurement (the anchor ratio scaled by the same
    /// factor: the anchor was measured once, in the run).
    pub fn set_remeasured(&mut self, m: Remeasure, tolerance: f64) {
        if let (Some(now), Some(a)) = (self.now, self.anchored) {
            self.anchored = Some(a * m.figure / now);
        }
        self.remeasured = Some(m);
        if let Some(r) = self.ratio() {
            self.verdict = verdict(r, self.anchored, tolerance);
        }
    }
}

/// Slower where the figure's ratio to the baseline, and its anchor ratio's where there is one,
/// are both under `1 - tolerance`.
fn verdict(ratio: f64, anchored: Option<f64>, tolerance: f64) -> Verdict {
    let floor = 1.0 - tolerance;
    if ratio >= floor || anchored.is_some_and(|a| a >= floor) { Verdict::Pass } else { Verdict::Slower }
}

type Key = (String, BackendKind, String, String, String);

fn key(r: &Record) -> Key {
    (r.device.clone(), r.backend, r.family.clone(), r.variant.clone(), r.problem.to_string())
}

/// The last verified record of each (identity, config): a file's later measurement of the
/// same config replaces an earlier one (as in `dynsmem compare`).
fn rows(records: &[Record]) -> BTreeMap<Key, Vec<&Record>> {
    let mut by: BTreeMap<Key, Vec<&Record>> = BTreeMap::new();
    for r in records.iter().filter(|r| is_row(r)) {
        let same = by.entry(key(r)).or_default();
        same.retain(|o| o.config != r.config);
        same.push(r);
    }
    by
}

/// Judges every row of `now` against `baseline` (see the module documentation).
pub fn gate(now: &[Record], baseline: &[Record], tolerance: f64) -> Vec<GateRow> {
    let (now_rows, base_rows) = (rows(now), rows(baseline));
    // The (device, backend, family) the run measured: only their baseline rows can be
    // missing (a bench of some families judges those).
    let measured: std::collections::BTreeSet<(String, BackendKind, String)> =
        now.iter().map(|r| (r.device.clone(), r.backend, r.family.clone())).collect();
    let mut out = Vec::new();
    for (k, rs) in &now_rows {
        let base = base_rows.get(k);
        for r in rs {
            let unit = if r.tflops.is_some() { "TFLOP/s" } else { "GB/s" };
            let same = base.and_then(|b| b.iter().find(|b| b.config == r.config));
            let best = || base.and_then(|b| b.iter().max_by(|x, y| figure(x).partial_cmp(&figure(y)).unwrap()));
            let matched = same.or_else(best);
            let now_figure = figure(r);
            let anchored = matched.and_then(|b| Some(r.ratio? / b.ratio.filter(|x| *x > 0.0)?));
            let verdict = match matched.and_then(|b| figure(b)) {
                None => Verdict::New,
                Some(b) => verdict(now_figure.unwrap_or(0.0) / b, anchored, tolerance),
            };
            out.push(GateRow {
                device: r.device.clone(),
                backend: r.backend,
                family: r.family.clone(),
                variant: r.variant.clone(),
                problem: r.problem.clone(),
                config: r.config.clone(),
                baseline_config: matched.filter(|b| b.config != r.config).map(|b| b.config.clone()),
                unit,
                baseline: matched.and_then(|b| figure(b)),
                now: now_figure,
                anchored,
                remeasured: None,
                verdict,
            });
        }
    }
    for (k, bs) in &base_rows {
        if now_rows.contains_key(k) || !measured.contains(&(k.0.clone(), k.1, k.2.clone())) {
            continue;
        }
        for b in bs {
            out.push(GateRow {
                device: b.device.clone(),
                backend: b.backend,
                family: b.family.clone(),
                variant: b.variant.clone(),
                problem: b.problem.clone(),
                config: b.config.clone(),
                baseline_config: None,
                unit: if b.tflops.is_some() { "TFLOP/s" } else { "GB/s" },
                baseline: figure(b),
                now: None,
                anchored: None,
                remeasured: None,
                verdict: Verdict::Missing,
            });
        }
    }
    out
}

/// The baseline record a slower row is to be re-measured against: the row of the same
/// config, else the best of the same problem (as [`gate`] matched it).
pub fn baseline_of<'a>(row: &GateRow, baseline: &'a [Record]) -> Option<&'a Record> {
    let config = row.baseline_config.as_ref().unwrap_or(&row.config);
    baseline.iter().rev().filter(|r| is_row(r)).find(|b| {
        b.device == row.device
            && b.backend == row.backend
            && b.family == row.family
            && b.variant == row.variant
            && b.problem == row.problem
            && &b.config == config
    })
}

/// Whether the gate fails: any row slower or missing.
pub fn fails(rows: &[GateRow]) -> bool {
    rows.iter().any(|r| matches!(r.verdict, Verdict::Slower | Verdict::Missing))
}

/// The report: the rows that fail, then a count of each verdict; `all`: every row.
pub fn render(rows: &[GateRow], tolerance: f64, all: bool) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let compact = |v: &serde_json::Value| {
        v.as_object().map_or(v.to_string(), |o| {
            o.iter().map(|(k, v)| format!("{k}={}", v.to_string().trim_matches('"'))).collect::<Vec<_>>().join(",")
        })
    };
    let fig = |f: Option<f64>| f.map_or("-".to_string(), |f| format!("{f:.4}"));
    for r in rows.iter().filter(|r| all || matches!(r.verdict, Verdict::Slower | Verdict::Missing)) {
        let verdict = match r.verdict {
            Verdict::Pass => "pass",
            Verdict::Slower => "SLOWER",
            Verdict::Missing => "MISSING",
            Verdict::New => "new",
        };
        let _ = write!(
            s,
            "{verdict:7} {} {} {} {} [{}] {}: baseline {} now {}",
            r.backend,
            r.family,
            r.variant,
            compact(&r.problem),
            compact(&r.config),
            r.unit,
            fig(r.baseline),
            fig(r.now)
        );
        if let Some(m) = &r.remeasured {
            let _ = write!(s, ", re-measured {} ({} interleaved rounds", fig(Some(m.figure)), m.rounds);
            if let Some(b) = m.baseline_config_figure {
                let _ = write!(s, "; the baseline's config now {}", fig(Some(b)));
            }
            s.push(')');
        }
        if let Some(ratio) = r.ratio() {
            let _ = write!(s, " = {ratio:.3}x");
        }
        if let Some(a) = r.anchored {
            let _ = write!(s, ", {a:.3}x by the ratio to the anchor");
        }
        if let Some(c) = &r.baseline_config {
            let _ = write!(s, " (baseline config {})", compact(c));
        }
        s.push('\n');
    }
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
    let _ = writeln!(
        s,
        "gate at {:.0}%: {} rows pass, {} slower, {} missing, {} new (no baseline row)",
        tolerance * 100.0,
        count(Verdict::Pass),
        count(Verdict::Slower),
        count(Verdict::Missing),
        count(Verdict::New)
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(family: &str, variant: &str, config: u32, gbps: Option<f64>) -> Record {
        let prov = super::super::Provenance {
            rustc: String::new(),
            commit: String::new(),
            command: String::new(),
            image: String::new(),
        };
        use crate::backend::Backend;
        let cpu = crate::backend::cpu::CpuBackend::new();
        let mut r = Record::new(family, variant, family, cpu.info(), &prov);
        r.problem = serde_json::json!({ "n": 1 });
        r.config = serde_json::json!({ "block": config });
        r.gbps = gbps;
        r.verified = gbps.is_some();
        if gbps.is_none() {
            r.error = Some("failed".into());
        }
        r
    }

    /// 3% passes, 3.1% fails, on the same config; a moved config is held to the baseline's
    /// best of the problem; a row that now fails is missing; a problem the baseline lacks is new.
    #[test]
    fn rows_are_judged_against_their_baseline() {
        let base = [
            rec("softmax", "launch-sized", 256, Some(100.0)),
            rec("rmsnorm", "launch-sized", 256, Some(100.0)),
            rec("histogram", "launch-sized", 256, Some(100.0)),
            rec("histogram", "launch-sized", 512, Some(90.0)),
            rec("transpose", "launch-sized", 256, Some(100.0)),
            rec("nbody", "launch-sized", 256, Some(100.0)),
        ];
        let now = [
            rec("softmax", "launch-sized", 256, Some(97.0)),
            rec("rmsnorm", "launch-sized", 256, Some(96.9)),
            rec("histogram", "launch-sized", 128, Some(96.0)),
            rec("transpose", "launch-sized", 256, None),
            rec("scan", "launch-sized", 256, Some(1.0)),
        ];
        let g = gate(&now, &base, DEFAULT_TOLERANCE);
        let verdict = |f: &str| g.iter().find(|r| r.family == f).unwrap().verdict;
        assert_eq!(verdict("softmax"), Verdict::Pass);
        assert_eq!(verdict("rmsnorm"), Verdict::Slower);
        let h = g.iter().find(|r| r.family == "histogram").unwrap();
        assert_eq!((h.verdict, h.baseline), (Verdict::Slower, Some(100.0)), "held to the best config of the problem");
        assert_eq!(h.baseline_config, Some(serde_json::json!({ "block": 256 })));
        assert_eq!(verdict("transpose"), Verdict::Missing);
        assert_eq!(verdict("scan"), Verdict::New);
        assert!(fails(&g));
        let text = render(&g, DEFAULT_TOLERANCE, false);
        assert!(text.contains("SLOWER") && text.contains("MISSING") && !text.contains("pass "), "{text}");
        assert!(text.contains("1 rows pass, 2 slower, 1 missing, 1 new"), "{text}");
    }

    /// A re-measurement at the baseline turns a slower row into a pass; one still under it
    /// keeps it slower.
    #[test]
    fn a_remeasurement_is_judged_instead_of_the_first_figure() {
        let base = [rec("softmax", "launch-sized", 256, Some(100.0))];
        let now = [rec("softmax", "launch-sized", 256, Some(90.0))];
        let mut g = gate(&now, &base, DEFAULT_TOLERANCE);
        assert_eq!(g[0].verdict, Verdict::Slower);
        let again = |figure| Remeasure { figure, baseline_config_figure: None, rounds: 5 };
        g[0].set_remeasured(again(99.0), DEFAULT_TOLERANCE);
        assert_eq!(g[0].verdict, Verdict::Pass);
        assert!(!fails(&g));
        g[0].set_remeasured(again(96.0), DEFAULT_TOLERANCE);
        assert_eq!(g[0].verdict, Verdict::Slower);
        assert!(baseline_of(&g[0], &base).is_some());
    }

    /// A row whose anchor ratio held is not slower: the device, not the code, moved.
    #[test]
    fn a_row_whose_anchor_ratio_held_passes() {
        let mut b = rec("softmax", "launch-sized", 256, Some(100.0));
        b.ratio = Some(0.9);
        let mut n = rec("softmax", "launch-sized", 256, Some(95.0));
        n.ratio = Some(0.89);
        assert_eq!(gate(&[n.clone()], &[b.clone()], DEFAULT_TOLERANCE)[0].verdict, Verdict::Pass);
        n.ratio = Some(0.85);
        let g = gate(&[n], &[b], DEFAULT_TOLERANCE);
        assert_eq!(g[0].verdict, Verdict::Slower, "both the figure and the ratio fell: {g:?}");
    }

    /// Rows of a device the run did not measure are not missing.
    #[test]
    fn another_devices_rows_are_not_judged() {
        let mut other = rec("softmax", "launch-sized", 256, Some(100.0));
        other.device = "another GPU".into();
        let now = [rec("rmsnorm", "launch-sized", 256, Some(100.0))];
        let g = gate(&now, &[other], DEFAULT_TOLERANCE);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].verdict, Verdict::New);
        assert!(!fails(&g));
    }
}
