//! `dynsmem shapes`: each family's shape suite (`shapes.txt` in its folder, see
//! [`dynsmem_host::family::shapes`]) on every backend asked for, each shape beside its
//! anchor measured in the same run (a copy of the shape's own bytes; cuBLAS on the same
//! inputs for SGEMM), and per family, backend and variant the geometric mean and the
//! minimum of the ratios.

use dynsmem_host::backend::Variant;
use dynsmem_host::backend::{Backend, BackendKind, Probe};
use dynsmem_host::bench;
use dynsmem_host::contract::FamilyBackend;
use dynsmem_host::family::Sizes;
use dynsmem_host::family::shapes::{self, Section};
use dynsmem_host::measure::{TimingOptions, geometric_mean};
use dynsmem_host::report::{Record, Table};
use dynsmem_host::tune::db::TuningDb;

#[derive(Debug, Clone)]
pub struct ShapesOptions {
    /// Families to run (empty: every family with a suite).
    pub families: Vec<String>,
    /// Backends to run (empty: every one present, as `bench`: the CPU backend only where no
    /// GPU backend is).
    pub backends: Vec<BackendKind>,
    /// Variants to run (empty: every variant a backend has).
    pub variants: Vec<Variant>,
    /// The section to run (None: `small` on CPU backends and adapters, `gpu` elsewhere).
    pub section: Option<Section>,
    pub timing: TimingOptions,
    pub seed: u64,
    pub command: String,
    pub db: Option<TuningDb>,
    /// Only the suite's shapes of these labels (empty: every one, or none with `random`).
    pub labels: Vec<String>,
    /// `(count, seed)`: that many shapes drawn from each family's `[random]` template
    /// ([`shapes::Suite::random`]), after the suite's shapes `labels` names.
    pub random: Option<(usize, u64)>,
    /// Records of an earlier run of the same suite (its `--json` file): a shape measured
    /// there by this build on the same device, backend and variant is kept, not measured
    /// again.
    pub done: Vec<Record>,
}

/// What the run found and measured.
pub struct ShapesReport {
    /// One line per backend: what it is, or why it is not run.
    pub backends: Vec<String>,
    /// This run's records and the ones kept from `done`, anchors included.
    pub records: Vec<Record>,
    /// Shapes kept from `done`.
    pub resumed: usize,
}

/// Runs the suites. `progress` gets a line before each shape, `each` every new record.
pub fn run(opts: &ShapesOptions, progress: &mut dyn FnMut(&str), each: &mut dyn FnMut(&Record)) -> ShapesReport {
    let mut report = ShapesReport { backends: Vec::new(), records: Vec::new(), resumed: 0 };
    let mut vendor = Vec::new();
    // Each backend asked for (all where none is) and ready; a GPU backend of the Rust kernels
    // that ran keeps the CPU backend out unless it was asked for.
    let mut rust_gpu = false;
    for (row, probe) in crate::backends(&opts.backends) {
        if row.kind == BackendKind::Cpu && !crate::runs_cpu(&opts.backends, rust_gpu) {
            report.backends.push("cpu: not run (a GPU backend is present, or other backends were asked for)".into());
            continue;
        }
        match probe {
            Probe::Ready(b) => {
                rust_gpu |= row.rust_gpu;
                dynsmem_host::with_backend!(b.erase(), b => {
                    report.backends.push(crate::suite::describe(b));
                    backend(b, opts, &mut vendor, &mut report, progress, each);
                })
            }
            Probe::Unavailable(k, why) => report.backends.push(format!("{k}: unavailable: {why}")),
        }
    }
    report
}

/// Whether `r` is the record of `family`'s `shape` with `problem` on this device, backend
/// and variant, made by this build (same commit): a kept record stands for the
/// measurement. Records of another commit are measured again.
fn same_case(
    r: &Record,
    b: &impl Backend,
    family: &str,
    variant: Variant,
    shape: &str,
    problem: &serde_json::Value,
) -> bool {
    r.commit == crate::COMMIT
        && r.family == family
        && r.backend == b.kind()
        && r.device == b.info().name
        && r.variant == variant.name()
        && r.shape.as_deref() == Some(shape)
        && &r.problem == problem
}

/// Every asked family's suite on one backend.
fn backend<B: FamilyBackend>(
    b: &B,
    opts: &ShapesOptions,
    vendor: &mut Vec<Record>,
    report: &mut ShapesReport,
    progress: &mut dyn FnMut(&str),
    each: &mut dyn FnMut(&Record),
) {
    let kind = b.kind();
    let section = opts.section.unwrap_or(shapes::section_for(b.info().is_cpu));
    let sizes = Sizes::for_backend(b, None, false);
    let prov = crate::provenance(kind, &opts.command);
    let mut push = |report: &mut ShapesReport, rec: Record| {
        each(&rec);
        report.records.push(rec);
    };
    let mut said = std::collections::HashMap::new();
    for family in
        crate::families().iter().filter(|f| opts.families.is_empty() || opts.families.iter().any(|n| n == f.name()))
    {
        let suite = match shapes::parse(family.name(), family.shapes()) {
            Ok(s) => s,
            Err(e) => {
                report.backends.push(format!("{kind}: {}: suite not run: {e}", family.name()));
                continue;
            }
        };
        let named = |sh: &&shapes::Shape| opts.labels.contains(&sh.label);
        let mut list: Vec<shapes::Shape> = match (&opts.random, opts.labels.is_empty()) {
            (_, false) => suite.section(section).iter().filter(named).cloned().collect(),
            (None, true) => suite.section(section).to_vec(),
            (Some(_), true) => Vec::new(),
        };
        if let Some((count, seed)) = opts.random {
            let drawn = suite.random(section, count, seed);
            if drawn.is_empty() {
                report.backends.push(format!(
                    "{kind}: {}: no [random] `{}:` template in its suite",
                    family.name(),
                    section.name()
                ));
            }
            list.extend(drawn);
        }
        for (i, shape) in list.iter().enumerate() {
            // The shape's copy anchor, measured once for all its variants, before the first.
            let mut copy: Option<Record> = None;
            for &variant in FamilyBackend::variants(b) {
                if !opts.variants.is_empty() && !opts.variants.contains(&variant) {
                    continue;
                }
                let resolved = shapes::resolve(*family, shape, b.erase(), variant, &sizes, opts.db.as_ref());
                let case = match resolved {
                    Ok(c) => c,
                    Err(e) => {
                        let mut rec = Record::new(family.name(), variant.name(), family.name(), b.info(), &prov);
                        rec.shape = Some(shape.label.clone());
                        rec.error = Some(e.to_string());
                        push(report, rec);
                        continue;
                    }
                };
                // A variant the family has no form in is not a shape's failure (hgemm and
                // attention have no cuda-static or WGSL twin): as in the bench, it is not run.
                if !family.has_variant(&case.problem, variant).unwrap_or(true) {
                    continue;
                }
                if let Some(kept) =
                    opts.done.iter().find(|r| same_case(r, b, family.name(), variant, &shape.label, &case.problem))
                {
                    report.resumed += 1;
                    report.records.push(kept.clone());
                    continue;
                }
                progress(&format!(
                    "{kind} {} [{}/{}] {} {variant} {} (config: {})",
                    family.name(),
                    i + 1,
                    list.len(),
                    shape.label,
                    case.problem,
                    crate::suite::origin_once(&mut said, family.name(), &case.origin)
                ));
                let bytes = family.anchor_bytes(&case.problem).ok().flatten();
                if let (Some(bytes), None) = (bytes, &copy) {
                    let mut a = bench::copy_anchor(b, bytes, opts.timing, &prov);
                    a.shape = Some(shape.label.clone());
                    copy = Some(a.clone());
                    push(report, a);
                }
                let prepared = family.prepare(b.erase(), &case.problem, &case.config, variant, opts.seed);
                let (mut rec, own) = bench::family(
                    b,
                    *family,
                    &case,
                    variant,
                    prepared,
                    (opts.timing, None),
                    &prov,
                    opts.seed,
                    copy.as_ref(),
                    vendor,
                );
                rec.shape = Some(shape.label.clone());
                if let Some(mut a) = own {
                    a.shape = Some(shape.label.clone());
                    vendor.push(a.clone());
                    push(report, a);
                }
                push(report, rec);
            }
        }
    }
}

/// One family's figures on one backend and variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub family: String,
    pub backend: BackendKind,
    pub variant: String,
    /// Every shape's label, in suite order (measured, failed, or verified without an
    /// anchor to compare with).
    pub labels: Vec<String>,
    /// Shapes with a verified figure and a ratio to their anchor.
    pub ratios: Vec<(String, f64)>,
    /// Shapes that failed (refused, wrong or faulted), with the reason.
    pub failed: Vec<(String, String)>,
}

impl Summary {
    pub fn geomean(&self) -> Option<f64> {
        geometric_mean(self.ratios.iter().map(|(_, r)| *r))
    }
    pub fn min(&self) -> Option<&(String, f64)> {
        self.ratios.iter().min_by(|a, b| a.1.total_cmp(&b.1))
    }
    /// The geometric mean over shapes labelled `aligned-*`, and the lowest ratio of an
    /// `odd-*` shape over it: how far off the aligned path a family falls.
    pub fn odd_over_aligned(&self) -> Option<(f64, String, f64)> {
        let of = |p: &'static str| self.ratios.iter().filter(move |(l, _)| l.starts_with(p));
        let a = geometric_mean(of("aligned-").map(|(_, r)| *r))?;
        let (label, worst) = of("odd-").min_by(|x, y| x.1.total_cmp(&y.1))?;
        Some((a, label.clone(), worst / a))
    }
}

/// The summaries of `records` (a suite's, anchors left out), per family, backend and
/// variant in the order they first appear. Of repeated records of one shape the last
/// counts.
pub fn summarize(records: &[Record]) -> Vec<Summary> {
    let mut out: Vec<Summary> = Vec::new();
    for r in records.iter().filter(|r| r.variant != "anchor" && r.shape.is_some()) {
        let label = r.shape.clone().unwrap_or_default();
        let i = match out.iter().position(|s| s.family == r.family && s.backend == r.backend && s.variant == r.variant)
        {
            Some(i) => i,
            None => {
                out.push(Summary {
                    family: r.family.clone(),
                    backend: r.backend,
                    variant: r.variant.clone(),
                    labels: Vec::new(),
                    ratios: Vec::new(),
                    failed: Vec::new(),
                });
                out.len() - 1
            }
        };
        let s = &mut out[i];
        s.ratios.retain(|(l, _)| *l != label);
        s.failed.retain(|(l, _)| *l != label);
        if !s.labels.contains(&label) {
            s.labels.push(label.clone());
        }
        match (&r.error, r.ratio) {
            (Some(e), _) => s.failed.push((label, e.clone())),
            (None, Some(ratio)) if r.verified => s.ratios.push((label, ratio)),
            _ => {}
        }
    }
    out
}

/// The summary table: per family, backend and variant the shapes, the geometric mean and
/// the minimum of the ratios (and which shape), and the worst odd shape against the
/// aligned ones.
pub fn summary_table(summaries: &[Summary]) -> Table {
    let mut t = Table::new(&[
        "family",
        "backend",
        "variant",
        "shapes",
        "failed",
        "geomean",
        "min",
        "at",
        "aligned",
        "worst odd / aligned",
    ]);
    let f3 = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into());
    for s in summaries {
        let min = s.min();
        let odd = s.odd_over_aligned();
        t.push(vec![
            s.family.clone(),
            s.backend.to_string(),
            s.variant.clone(),
            s.labels.len().to_string(),
            s.failed.len().to_string(),
            f3(s.geomean()),
            f3(min.map(|m| m.1)),
            min.map(|m| m.0.clone()).unwrap_or_else(|| "-".into()),
            f3(odd.as_ref().map(|o| o.0)),
            odd.map(|(_, l, r)| format!("{r:.3} ({l})")).unwrap_or_else(|| "-".into()),
        ]);
    }
    t
}

/// The per-shape table: each shape's figure, its anchor's and the ratio, or why it failed.
pub fn shapes_table(records: &[Record]) -> Table {
    let mut t = Table::new(&[
        "family", "backend", "variant", "shape", "problem", "config", "figure", "anchor", "ratio", "error",
    ]);
    for r in records.iter().filter(|r| r.variant != "anchor") {
        let (fig, anchor) = match (r.tflops, r.gbps) {
            (Some(t), _) => (format!("{t:.2} TFLOP/s"), r.anchor_tflops.map(|a| format!("{a:.2}"))),
            (None, Some(g)) => (format!("{g:.0} GB/s"), r.anchor_gbps.map(|a| format!("{a:.0}"))),
            _ => ("-".into(), None),
        };
        t.push(vec![
            r.family.clone(),
            r.backend.to_string(),
            r.variant.clone(),
            r.shape.clone().unwrap_or_default(),
            compact(&r.problem),
            compact(&r.config),
            fig,
            anchor.unwrap_or_else(|| "-".into()),
            r.ratio.map(|v| format!("{v:.3}{}", r.ratio_mark())).unwrap_or_else(|| "-".into()),
            r.error.as_deref().map(|e| e.chars().take(80).collect()).unwrap_or_default(),
        ]);
    }
    t
}

/// A JSON object as `key=value` pairs.
fn compact(v: &serde_json::Value) -> String {
    match v.as_object() {
        Some(o) => o.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "),
        None => v.to_string(),
    }
}

/// Checks `families` against the registry: each must exist and have a suite.
pub fn check_families(families: &[String]) -> anyhow::Result<()> {
    for name in families {
        let Some(f) = dynsmem_host::family::find(crate::families(), name) else {
            let all: Vec<&str> = crate::families().iter().map(|f| f.name()).collect();
            anyhow::bail!("no family `{name}` (families: {})", all.join(", "));
        };
        if f.shapes().trim().is_empty() {
            anyhow::bail!("family `{name}` has no shape suite (add shapes.txt to its folder)");
        }
    }
    Ok(())
}
