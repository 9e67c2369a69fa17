//! The benchmark suite `dynsmem bench` runs: every family present, on every backend this
//! machine has, at default sizes, each beside the anchor measured in the same run.

use dynsmem_host::backend::Variant;
use dynsmem_host::backend::{Backend, BackendKind, Probe};
use dynsmem_host::bench;
use dynsmem_host::contract::FamilyBackend;
pub use dynsmem_host::family::Sizes;
use dynsmem_host::family::{DynFamily, Resolved};
use dynsmem_host::measure::TimingOptions;
use dynsmem_host::report::Record;
use dynsmem_host::report::gate::{self, GateRow, Remeasure, Verdict};

/// Host bytes per element the bench may hold at once for the 1-D families: the f32
/// inputs it shares between reduce configs, and the largest launcher's input, f64
/// reference and error scale, and read-back (scan, conv1d).
pub const HOST_BYTES_PER_ELEMENT: u64 = 32;

/// Refuses a `--n` whose inputs and references cannot fit the host's memory, before any
/// backend is opened: generating them would abort the process.
pub fn check_n(n: u64) -> dynsmem_host::Result<()> {
    let need = dynsmem_host::contract::bytes_of(n, HOST_BYTES_PER_ELEMENT);
    match dynsmem_host::backend::host_memory() {
        Some(m) if need > m.total => Err(dynsmem_host::Error::ProblemTooLarge {
            kernel: format!("bench n={n}"),
            memory: "host",
            requested: need,
            limit: m.total,
            limit_name: "MemTotal of /proc/meminfo or the cgroup limit",
        }),
        _ => Ok(()),
    }
}

#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub timing: TimingOptions,
    /// Overrides the default element count.
    pub n: Option<u64>,
    /// Small sizes on every backend ([`Sizes::cpu_adapter`] on GPUs): a smoke test.
    pub quick: bool,
    pub seed: u64,
    pub command: String,
    /// Where the cases' configs come from where it has an answer (None: the cases' own).
    pub db: Option<dynsmem_host::tune::db::TuningDb>,
    /// Lock each GPU's SM clock at this many MHz (NVML), where the driver permits it.
    pub lock_clocks: Option<u32>,
    /// Device time each measurement may take, in milliseconds (`None`: `timing` as given):
    /// a long kernel is timed fewer times ([`bench::within_budget`]).
    pub budget_ms: Option<f64>,
    /// The regression gate: baseline records each row is held to, and the slowdown
    /// let pass ([`gate`]); rows found slower are re-measured before they fail.
    pub against: Option<(Vec<Record>, f64)>,
    /// The families to run (empty: every one).
    pub families: Vec<String>,
    /// The backends to run (empty: every one present; the CPU backend only without a GPU).
    pub backends: Vec<BackendKind>,
}

/// Device time a bench measurement takes at most by default: 2 s.
pub const BUDGET_MS: f64 = 2000.0;

/// What the bench found and measured.
pub struct BenchReport {
    /// One line per backend: what it is, or why it cannot be used.
    pub backends: Vec<String>,
    pub records: Vec<Record>,
    /// The regression gate's rows, where the bench was run against a baseline.
    pub gate: Option<Vec<GateRow>>,
}

/// Where the suite puts each record the moment it is made: kept for the report, and
/// handed to `each` first (the CLI appends it to the record file then, so a bench killed
/// part-way keeps every record it finished).
struct Sink<'a> {
    records: Vec<Record>,
    each: &'a mut dyn FnMut(&Record),
}

impl Sink<'_> {
    fn push(&mut self, record: Record) {
        (self.each)(&record);
        self.records.push(record);
    }
}

/// Runs the suite. `progress` gets a line before each measurement, `each` every record as
/// soon as it is made.
pub fn bench(opts: &BenchOptions, progress: &mut dyn FnMut(&str), each: &mut dyn FnMut(&Record)) -> BenchReport {
    let mut backends = Vec::new();
    let mut records = Sink { records: Vec::new(), each };
    // Vendor anchors (cuBLAS), the anchors of the same problems on the WGSL rows.
    let mut vendor = Vec::new();
    // Without a CUDA or HIP device the Rust kernels still run, on the CPU backend (the
    // table's last row): the same source as the PTX, checked and timed (CPU timings,
    // labelled as such).
    let mut rust_gpu = false;
    let mut gated: Option<Vec<GateRow>> = opts.against.as_ref().map(|_| Vec::new());
    for (row, probe) in crate::backends(&opts.backends) {
        if row.kind == BackendKind::Cpu && !crate::runs_cpu(&opts.backends, rust_gpu) {
            backends
                .push("cpu: not run (a GPU backend is present; the CPU backend is for machines without one)".into());
            continue;
        }
        match probe {
            Probe::Ready(b) => {
                rust_gpu |= row.rust_gpu;
                dynsmem_host::with_backend!(b.erase(), b => {
                    backends.push(describe(b));
                    // Its rows are still made, each recording this reason as its error.
                    if row.kind == BackendKind::Cuda && !dynsmem_host::backend::cuda::nvrtc::library_present() {
                        backends.push("cuda cuda-static: skipped: libnvrtc not found (CUDA's run-time compiler)".into());
                    }
                    families(b, opts, &mut vendor, &mut records, progress);
                    if let (Some(rows), Some(against)) = (gated.as_mut(), opts.against.as_ref()) {
                        rows.extend(gate_backend(b, opts, against, &records.records, progress));
                    }
                })
            }
            Probe::Unavailable(kind, why) if kind == BackendKind::Cuda => {
                backends.push(format!("{kind}: unavailable: {why} (no launch-sized or cuda-static CUDA rows)"))
            }
            Probe::Unavailable(kind, why) => backends.push(format!("{kind}: unavailable: {why}")),
        }
    }
    BenchReport { backends, records: records.records, gate: gated }
}

/// One line about a ready backend.
pub fn describe<B: Backend>(b: &B) -> String {
    let i = b.info();
    format!(
        "{}: {} ({}; driver {}){}",
        i.backend,
        i.name,
        i.api,
        i.driver,
        if i.is_cpu { " [runs on the CPU: its timings are CPU timings, not GPU figures]" } else { "" }
    )
}

/// Locks `backend`'s SM clock at `mhz` through its observer, and says whether it took
/// (records then say so too).
pub fn lock_clocks<B: dynsmem_host::backend::Backend>(backend: &B, mhz: u32) -> String {
    match backend.observer() {
        None => format!("clocks not locked at {mhz} MHz: no management library (NVML, AMD SMI) for this device"),
        Some(o) => match o.lock_clocks(mhz) {
            Ok(()) => format!("SM clock locked at {mhz} MHz"),
            Err(e) => format!("clocks not locked: {e}"),
        },
    }
}

/// Every family of the registry on one backend, each bench case in every variant the
/// backend runs, beside the backend's copy anchor (measured first) or the workload's own
/// anchor. `vendor` collects the vendor anchors measured (cuBLAS on CUDA), and anchors the
/// same problems on the backends measured after.
fn families<B: FamilyBackend>(
    backend: &B,
    opts: &BenchOptions,
    vendor: &mut Vec<Record>,
    records: &mut Sink<'_>,
    progress: &mut dyn FnMut(&str),
) {
    let sizes = Sizes::for_backend(backend, opts.n, opts.quick);
    let prov = crate::provenance(backend.kind(), &opts.command);
    let kind = backend.kind();
    progress(&format!("{kind}: copy anchor, {} MB", sizes.n * 4 / 1_000_000));
    if let Some(mhz) = opts.lock_clocks {
        progress(&format!("{kind}: {}", lock_clocks(backend, mhz)));
    }
    let copy = bench::copy_anchor(backend, sizes.n * 4, opts.timing, &prov);
    // Every case's config first (tuning on first use where a family does): the count gives
    // the progress its total.
    progress(&format!("{kind}: the configs of every case"));
    let mut cases: Vec<(&'static dyn DynFamily, Variant, Resolved)> = Vec::new();
    let asked = |f: &&&dyn DynFamily| opts.families.is_empty() || opts.families.iter().any(|n| n == f.name());
    for family in crate::families().iter().filter(asked) {
        for &variant in FamilyBackend::variants(backend) {
            for case in family.bench_cases(backend.erase(), variant, &sizes, opts.db.as_ref()) {
                cases.push((*family, variant, case));
            }
        }
    }
    let mut said = std::collections::HashMap::new();
    let started = std::time::Instant::now();
    let total = cases.len();
    for (i, (family, variant, case)) in cases.into_iter().enumerate() {
        let elapsed = started.elapsed().as_secs_f64();
        let left = if i == 0 {
            String::new()
        } else {
            format!(", about {:.0} s left", elapsed / i as f64 * (total - i) as f64)
        };
        progress(&format!(
            "{kind} [{}/{total}, {elapsed:.0} s{left}]: {} {} {variant} {} (config: {})",
            i + 1,
            family.name(),
            case.problem,
            case.config,
            origin_once(&mut said, family.name(), &case.origin)
        ));
        let case_started = std::time::Instant::now();
        let prepared = family.prepare(backend.erase(), &case.problem, &case.config, variant, opts.seed);
        let prepare_s = case_started.elapsed().as_secs_f64();
        let (rec, own) = bench::family(
            backend,
            family,
            &case,
            variant,
            prepared,
            (opts.timing, opts.budget_ms),
            &prov,
            opts.seed,
            Some(&copy),
            vendor,
        );
        let figure = match (&rec.error, gate::figure(&rec)) {
            (Some(e), _) => format!("failed: {}", e.lines().next().unwrap_or_default()),
            (None, Some(f)) => format!("{f:.4} {}", if rec.tflops.is_some() { "TFLOP/s" } else { "GB/s" }),
            (None, None) => "no figure".into(),
        };
        progress(&format!(
            "    {figure} ({:.1} s: inputs and reference {prepare_s:.1} s)",
            case_started.elapsed().as_secs_f64()
        ));
        records.push(rec);
        if let Some(a) = own {
            vendor.push(a.clone());
            records.push(a);
        }
    }
    records.push(copy);
}

/// The regression gate for one backend: this run's rows of it against `against`'s
/// ([`gate::gate`]); each slower row measured again ([`remeasure`]) and judged on that.
fn gate_backend<B: FamilyBackend>(
    backend: &B,
    opts: &BenchOptions,
    (baseline, tolerance): &(Vec<Record>, f64),
    run: &[Record],
    progress: &mut dyn FnMut(&str),
) -> Vec<GateRow> {
    let mine: Vec<Record> = run.iter().filter(|r| r.backend == backend.kind()).cloned().collect();
    let mut rows = gate::gate(&mine, baseline, *tolerance);
    for row in rows.iter_mut().filter(|r| r.verdict == Verdict::Slower) {
        progress(&format!(
            "{}: gate: {} {} {} {:.3}x the baseline: measuring it again",
            backend.kind(),
            row.family,
            row.variant,
            row.problem,
            row.ratio().unwrap_or(f64::NAN)
        ));
        match remeasure(backend, row, baseline, &mine, opts) {
            Ok(m) => row.set_remeasured(m, *tolerance),
            Err(e) => progress(&format!("    not measured again: {e}")),
        }
    }
    rows
}

/// A slower row measured again in this process: its config and, where the baseline's config
/// differs, that config too, interleaved ([`dynsmem_host::backend::time_paired`]); else the
/// row's config alone, twice the bench's timed runs. Each verified before it is timed. The
/// figures are the row's, scaled by its recorded median over the new one.
fn remeasure<B: FamilyBackend>(
    backend: &B,
    row: &GateRow,
    baseline: &[Record],
    run: &[Record],
    opts: &BenchOptions,
) -> dynsmem_host::Result<Remeasure> {
    let fail = |reason: String| dynsmem_host::Error::InvalidConfig { kernel: format!("gate: {}", row.family), reason };
    let family = dynsmem_host::family::find(crate::families(), &row.family)
        .ok_or_else(|| fail("no family of that name in this binary".into()))?;
    let variant: Variant = serde_json::from_value(serde_json::Value::String(row.variant.clone()))
        .map_err(|e| fail(format!("variant {}: {e}", row.variant)))?;
    let rec = run
        .iter()
        .rev()
        .find(|r| {
            gate::is_row(r)
                && r.family == row.family
                && r.variant == row.variant
                && r.problem == row.problem
                && r.config == row.config
        })
        .ok_or_else(|| fail("the run's record is gone".into()))?;
    let (figure, median) = (gate::figure(rec).unwrap_or(0.0), rec.median_ms.unwrap_or(f64::NAN));
    let prepare = |config: &serde_json::Value| -> dynsmem_host::Result<_> {
        let w = family.prepare(backend.erase(), &row.problem, config, variant, opts.seed)?;
        w.run()?;
        w.check()?;
        Ok(w)
    };
    let ours = prepare(&row.config)?;
    let timing = TimingOptions { repeats: 2 * opts.timing.repeats.max(10), energy_ms: 0.0, ..opts.timing };
    let other = gate::baseline_of(row, baseline).filter(|b| b.config != row.config);
    let (ours_ms, theirs_ms, rounds) = match other {
        Some(b) => {
            let theirs = prepare(&b.config)?;
            let p = dynsmem_host::backend::time_paired(backend, timing, &mut || ours.run(), &mut || theirs.run())?;
            let per = |k: usize| {
                let mut v: Vec<f64> = p.rounds_ms.iter().map(|r| r[k] / p.batch as f64).collect();
                v.sort_by(f64::total_cmp);
                dynsmem_host::measure::median_sorted(&v)
            };
            (per(0), Some(per(1)), p.rounds_ms.len() as u32)
        }
        None => {
            let (t, _) = dynsmem_host::backend::time(backend, timing, &mut || ours.run())?;
            (t.median_ms, None, timing.repeats)
        }
    };
    Ok(Remeasure {
        figure: figure * median / ours_ms,
        baseline_config_figure: theirs_ms.map(|t| figure * median / t),
        rounds,
    })
}

/// A case's config origin for a progress line: in full the first time a family gives it,
/// then "as above" (a bench on a device with no tuning entries would repeat the same long
/// reason on every line).
pub(crate) fn origin_once(said: &mut std::collections::HashMap<String, String>, family: &str, origin: &str) -> String {
    if said.get(family).is_some_and(|o| o == origin) {
        return "as above".into();
    }
    said.insert(family.to_string(), origin.to_string());
    origin.to_string()
}
