//! `dynsmem`: list devices, run and verify one kernel config, benchmark every family.

use std::path::PathBuf;

use crate::cli::*;
use crate::host::backend::Variant;
use crate::host::backend::{Backend, BackendKind, OwnedBackend, Probe};
use crate::host::bench;
use crate::host::contract::FamilyBackend;
use crate::host::family::{DynFamily, Resolved, Sizes};
use crate::host::measure::TimingOptions;
use crate::host::report::{Comparison, JsonlWriter, Record, TableStyle, records_table};
use crate::host::with_backend;
use crate::{shapes, suite};
use anyhow::{Context, bail};

use super::{kt_cmd, probe_cmd, sass_cmd, spirv_cmd, tune_cmd};

pub(super) fn command_line() -> String {
    Invocation::current().map(|i| i.args.join(" ")).unwrap_or_default()
}

/// The current command line ([`Invocation::current`]), run over the registry
/// [`crate::families`]. A usage error is returned as its [`clap::Error`].
pub(super) fn main() -> anyhow::Result<()> {
    let parsed = try_parse_from(Invocation::current()?.args)?;
    match parsed {
        Parsed::Fixed(Command::Devices) => devices(),
        Parsed::Fixed(Command::Families { wgsl }) => {
            for f in crate::families().iter().filter(|f| !wgsl || !f.wgsl_template().is_empty()) {
                println!("{}", f.name());
            }
            Ok(())
        }
        Parsed::Fixed(Command::Bench {
            json,
            markdown,
            wide,
            plots,
            n,
            quick,
            families,
            backends,
            against,
            tolerance,
            budget_ms,
            timing,
            db,
        }) => {
            let style = if markdown { TableStyle::Markdown } else { TableStyle::Text };
            let gate = against.map(|f| (f, tolerance));
            run_bench(json, style, wide, plots, n, quick, (families, backends, gate), budget_ms, timing, &db)
        }
        Parsed::Fixed(Command::ReplayKt { file, objective, strategy, budget_evals, seed, repeats }) => {
            let budget = crate::host::tune::Budget { evaluations: budget_evals, seconds: None };
            kt_cmd::replay_kt(&file, &objective, tune_cmd::strategy_of(strategy), budget, seed, repeats)
        }
        Parsed::Fixed(Command::Db { action: DbAction::Build { inputs, out, objective } }) => {
            kt_cmd::db_build(&inputs, &out, objective.into())
        }
        Parsed::Fixed(Command::Db { action: DbAction::List { files, family } }) => {
            kt_cmd::db_list(&files, family.as_deref())
        }
        Parsed::Fixed(Command::Plot { records, out }) => plot(&records, &out),
        Parsed::Fixed(Command::Compare { records, baseline: Some(baseline), tolerance, all, .. }) => {
            compare_gate(&records, &baseline, tolerance, all)
        }
        Parsed::Fixed(Command::Compare { records, markdown, plots, decomposition, baseline: None, .. }) => {
            let style = if markdown { TableStyle::Markdown } else { TableStyle::Text };
            compare(&records, style, plots.as_deref(), decomposition)
        }
        Parsed::Fixed(Command::Shapes {
            families,
            backend,
            variant,
            small,
            label,
            random,
            random_seed,
            json,
            markdown,
            plots,
            timing,
            db,
        }) => {
            let seed = random_seed.unwrap_or_else(|| {
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
            });
            let opts = shapes::ShapesOptions {
                labels: label,
                random: random.map(|n| (n, seed)),
                families,
                backends: backend.into_iter().collect(),
                variants: variant.into_iter().map(Variant::from).collect(),
                section: small.then_some(crate::host::family::shapes::Section::Small),
                timing: timing_options(&timing)?,
                seed: timing.seed,
                command: command_line(),
                db: tuning_db(&db, true)?,
                done: Vec::new(),
            };
            run_shapes(opts, json, markdown, plots)
        }
        Parsed::Fixed(Command::CodeObjects { block, lds, markdown }) => code_objects(block, lds, markdown),
        Parsed::Fixed(Command::Sass { families, markdown, json, db }) => {
            sass_cmd::sass(&families, markdown, json.as_deref(), tuning_db(&db, false)?)
        }
        Parsed::Fixed(Command::Spirv { families, json, db }) => {
            spirv_cmd::spirv(&families, json.as_deref(), tuning_db(&db, false)?)
        }
        Parsed::Fixed(Command::Merge { out, inputs, top }) => tune_cmd::merge(&out, &inputs, top),
        Parsed::Fixed(Command::Probe { probes, backend, families, step, quick, json, markdown, plots, seed, db }) => {
            let args = probe_cmd::ProbeArgs {
                probes,
                backends: backend.into_iter().collect(),
                families,
                step,
                quick,
                json,
                style: if markdown { TableStyle::Markdown } else { TableStyle::Text },
                plots,
                seed,
                db: tuning_db(&db, true)?,
                command: command_line(),
            };
            probe_cmd::probe(args)
        }
        Parsed::Run { family, matches, common } => run(family, &matches, &common),
        Parsed::Tune { family, matches, tune } => tune_cmd::tune(family, &matches, &tune),
    }
}

fn limits_line<B: Backend>(b: &B) -> String {
    let l = &b.info().limits;
    let mut parts = vec![format!("max threads/block {}", l.max_threads_per_block)];
    if l.launch_shared_max > 0 {
        parts.push(format!(
            "launch-sized shared memory {} B default, {} B with opt-in",
            l.launch_shared_default, l.launch_shared_max
        ));
    } else {
        parts.push("no launch-sized workgroup memory".into());
    }
    parts.push(format!("static workgroup memory {} B", l.static_shared_max));
    if let Some(s) = l.shared_per_multiprocessor {
        parts.push(format!("{s} B per multiprocessor"));
    }
    if let Some(m) = l.multiprocessors {
        parts.push(format!("{m} multiprocessors"));
    }
    parts.join("; ")
}

fn devices() -> anyhow::Result<()> {
    for (_, probe) in crate::backends(&[]) {
        match probe {
            Probe::Ready(b) => with_backend!(b.erase(), b => say!("{}\n    {}", suite::describe(b), limits_line(b))),
            Probe::Unavailable(k, why) => say!("{k}: unavailable: {why}"),
        }
    }
    Ok(())
}

/// `dynsmem code-objects`: a table per embedded AMD code object.
fn code_objects(block: u32, lds: u32, markdown: bool) -> anyhow::Result<()> {
    use crate::host::backend::hip::{code_object, occupancy};
    use crate::host::report::Table;
    let style = if markdown { TableStyle::Markdown } else { TableStyle::Text };
    for (arch, elf) in crate::images::AMDGPU {
        let kernels = code_object::kernels(elf).with_context(|| format!("the {arch} code object"))?;
        let isa = occupancy::isa(arch);
        say!(
            "\n{arch}: {} kernels; occupancy with blocks of {block} and {lds} B of launch-sized LDS{}",
            kernels.len(),
            if isa.is_none() { " (no limits known for this target)" } else { "" }
        );
        let mut t = Table::new(&[
            "kernel",
            "VGPRs",
            "AGPRs",
            "SGPRs",
            "VGPR spills",
            "SGPR spills",
            "scratch B",
            "static LDS B",
            "max block",
            "waves/SIMD",
            "limited by",
        ]);
        for k in &kernels {
            let occ = isa.map(|i| occupancy::occupancy(k, i, block, lds));
            let (waves, limiter) = match occ {
                Some(Ok(o)) => {
                    (format!("{}/{}", o.waves_per_simd, isa.map_or(0, |i| i.max_waves_per_simd)), o.limiter.to_string())
                }
                Some(Err(why)) => ("-".into(), why),
                None => ("-".into(), String::new()),
            };
            t.push(vec![
                k.name.clone(),
                k.vgprs.to_string(),
                k.agprs.to_string(),
                k.sgprs.to_string(),
                k.vgpr_spills.to_string(),
                k.sgpr_spills.to_string(),
                k.scratch_bytes.to_string(),
                k.static_lds_bytes.to_string(),
                k.max_workgroup_size.to_string(),
                waves,
                limiter,
            ]);
        }
        say!("{}", t.render(style).trim_end());
    }
    Ok(())
}

/// `--backend`, or without it the first row of the backend table that is ready on a GPU
/// (CUDA, else HIP, else a Vulkan GPU), else the CPU backend, saying why on stderr.
pub(super) fn pick(choice: Option<BackendKind>) -> anyhow::Result<OwnedBackend> {
    if let Some(kind) = choice {
        return match crate::probe(kind, 0) {
            Probe::Ready(b) => Ok(b),
            Probe::Unavailable(k, why) => Err(anyhow::anyhow!("{k} unavailable: {why}")),
        };
    }
    for (row, probe) in crate::backends(&[]) {
        match probe {
            Probe::Ready(b) if row.kind == BackendKind::Cpu => {
                eprintln!(
                    "no GPU: using the CPU backend (--backend wgsl runs the WGSL kernels on the CPU Vulkan adapter)"
                );
                return Ok(b);
            }
            Probe::Ready(b) if !b.erase().info().is_cpu => return Ok(b),
            Probe::Ready(b) => eprintln!("{} adapter {} is a CPU adapter", row.kind, b.erase().info().name),
            Probe::Unavailable(k, why) => eprintln!("{k} unavailable ({why})"),
        }
    }
    unreachable!("the table's last row, the CPU backend, is always ready")
}

fn run(family: &dyn DynFamily, matches: &clap::ArgMatches, common: &Common) -> anyhow::Result<()> {
    // The record file is opened first: a path that cannot be written is refused before
    // anything runs, not after the measurement it would have held.
    let mut out = match &common.json {
        Some(path) => Some(JsonlWriter::append(path).with_context(|| format!("--json {}", path.display()))?),
        None => None,
    };
    let picked = pick(common.backend)?;
    let kernel = with_backend!(picked.erase(), b => run_on(b, family, matches, common, out.as_mut()))?;
    // CUDA's own report of the kernel it ran.
    if let OwnedBackend::Cuda(b) = &picked
        && let Ok((regs, local)) = b.kernel_resources(&kernel)
    {
        say!("registers: {regs} per thread, {local} B of local memory per thread");
    }
    Ok(())
}

pub(super) fn variant_of<B: FamilyBackend>(backend: &B, v: Option<VariantArg>) -> Variant {
    v.map_or(FamilyBackend::variants(backend)[0], Variant::from)
}

/// Runs one family's config on `backend`: validate and prepare, then anchor, verify, time,
/// print, record. A problem or config the family refuses stops before anything is
/// launched (the anchor copy included) and writes no record. Returns the kernel's name.
fn run_on<B: FamilyBackend>(
    backend: &B,
    family: &dyn DynFamily,
    matches: &clap::ArgMatches,
    common: &Common,
    out: Option<&mut JsonlWriter>,
) -> anyhow::Result<String> {
    let sizes = Sizes::for_backend(backend, None, false);
    let timing = timing_options(&common.timing)?;
    let prov = crate::provenance(backend.kind(), &command_line());
    let variant = variant_of(backend, common.variant);
    let seed = common.timing.seed;
    say!("{}", suite::describe(backend));
    let refused = || format!("{} on {}: refused, nothing launched", family.name(), backend.kind());
    let db = tuning_db(&common.db, true)?;
    let case = family.resolve(matches, backend.erase(), variant, &sizes, db.as_ref()).with_context(refused)?;
    say!("config: {} (from the {})", case.config, case.origin);
    if common.config_only {
        return Ok(String::new());
    }
    if let Some(mhz) = common.timing.lock_clocks {
        say!("{}", suite::lock_clocks(backend, mhz));
    }
    let w = family.prepare(backend.erase(), &case.problem, &case.config, variant, seed).with_context(refused)?;
    let copy = family.anchor_bytes(&case.problem)?.map(|bytes| bench::copy_anchor(backend, bytes, timing, &prov));
    let (rec, own) =
        bench::family(backend, family, &case, variant, Ok(w), (timing, None), &prov, seed, copy.as_ref(), &[]);
    let anchor = own.or(copy);
    finish(&rec, anchor.as_ref(), out)?;
    Ok(rec.kernel)
}

/// A `run` command line's kernel on `backend`, prepared but not launched: its problem and
/// config resolved as `run` resolves them (the options, the tuning database, the family's
/// heuristic), validated, its inputs uploaded. What the Python package launches on a
/// framework's tensors ([`crate::host::contract::Workload::run_on`]).
pub fn prepare_on<'b>(
    backend: crate::host::backend::AnyBackend<'b>,
    args: &[String],
) -> anyhow::Result<(Resolved, Variant, Box<dyn crate::host::contract::Workload + 'b>)> {
    let Parsed::Run { family, matches, common } = try_parse_from(args)? else {
        bail!("not a `run` command line: {}", args.join(" "))
    };
    let _current = super::invocation::Current::set(Invocation { args: args.to_vec(), worker: Vec::new() });
    with_backend!(backend, b => {
        let sizes = Sizes::for_backend(b, None, false);
        let variant = variant_of(b, common.variant);
        let refused = || format!("{} on {}: refused, nothing launched", family.name(), b.kind());
        let db = tuning_db(&common.db, true)?;
        let case = family.resolve(&matches, backend, variant, &sizes, db.as_ref()).with_context(refused)?;
        let w = family.prepare(backend, &case.problem, &case.config, variant, common.timing.seed).with_context(refused)?;
        Ok((case, variant, w))
    })
}

/// The timing flags, checked: a repeat count or warm-up that could not finish (or whose
/// times would not fit memory) is refused before anything runs.
fn timing_options(t: &TimingArgs) -> anyhow::Result<TimingOptions> {
    let opts = TimingOptions {
        warmup: t.warmup,
        warmup_ms: t.warmup_ms,
        repeats: t.repeats,
        energy_ms: t.energy_ms,
        back_to_back: !t.wait_each_run,
    };
    opts.validate()?;
    Ok(opts)
}

/// One line of what the observer read during a measurement.
fn describe_observation(o: &crate::host::observe::Observation) -> String {
    let spread = |s: Option<crate::host::observe::Spread>, unit: &str| {
        s.map(|s| format!("{:.0} {unit} (min {:.0}, max {:.0})", s.median, s.min, s.max)).unwrap_or("-".into())
    };
    let mut parts = vec![
        format!("SM clock {}", spread(o.sm_clock_mhz, "MHz")),
        format!("memory clock {}", spread(o.mem_clock_mhz, "MHz")),
        format!("power {}", spread(o.power_w, "W")),
        format!("temperature {}", spread(o.temperature_c, "C")),
        format!(
            "throttle reasons {}",
            if o.throttle_reasons.is_empty() { "none".to_string() } else { o.throttle_reasons.join("+") }
        ),
    ];
    if let Some(e) = o.energy {
        parts.push(format!(
            "energy {:.4e} J per run ({:.0} W over {:.0} ms, {} runs)",
            e.joules_per_run, e.watts, e.window_ms, e.runs
        ));
    }
    if let Some(l) = &o.clock_lock {
        parts.push(l.clone());
    }
    format!("{} ({} samples): {}", o.source, o.samples, parts.join("; "))
}

/// The tuning database default configs come from (`None` with `--no-tuning-db`), with
/// tuning on first use where `runs_kernels` (a command that measures) and not turned off.
fn tuning_db(args: &DbArgs, runs_kernels: bool) -> anyhow::Result<Option<crate::host::tune::db::TuningDb>> {
    use crate::host::tune::autotune::{self, Autotune, AutotuneMode};
    if args.no_tuning_db {
        return Ok(None);
    }
    let mut db = crate::host::tune::db::TuningDb::load(&args.tuning_db).context("reading the tuning database")?;
    let mode = match (args.no_autotune, args.autotune) {
        (true, _) => AutotuneMode::Off,
        (false, Some(m)) => m,
        (false, None) => AutotuneMode::from_env()?.unwrap_or(AutotuneMode::Gpu),
    };
    let dir = args.autotune_cache.clone().or_else(autotune::default_dir);
    // Off, it is still there to say so in the records of the heuristic defaults.
    if let (true, Some(dir)) = (runs_kernels, dir) {
        let command = command_line();
        let identify = Box::new(move |kind| (tune_cmd::image_hash(kind), crate::provenance(kind, &command)));
        let at = Autotune::new(mode, &dir, identify)
            .with_context(|| format!("reading the autotune cache {}", dir.display()))?;
        db.autotune = Some(std::sync::Arc::new(at));
    }
    Ok(Some(db))
}

/// Appends the records (each one whole line, synced), then prints them (so a failure to
/// print cannot lose them), and turns a failed config into a nonzero exit.
fn finish(rec: &Record, anchor: Option<&Record>, out: Option<&mut JsonlWriter>) -> anyhow::Result<()> {
    if let Some(w) = out {
        w.write(rec)?;
        if let Some(a) = anchor {
            w.write(a)?;
        }
    }
    print_record(rec, anchor)?;
    if let Some(e) = &rec.error {
        bail!("{e}");
    }
    Ok(())
}

fn print_record(rec: &Record, anchor: Option<&Record>) -> anyhow::Result<()> {
    say!(
        "kernel {} ({}); launch-sized shared memory {} B, static {} B",
        rec.kernel,
        rec.variant,
        rec.shared_bytes,
        rec.static_shared_bytes
    );
    if let (Some(med), Some(min), Some(max)) = (rec.median_ms, rec.min_ms, rec.max_ms) {
        let mut figures = Vec::new();
        if let Some(g) = rec.gbps {
            figures.push(format!("{g:.1} GB/s"));
        }
        if let Some(t) = rec.tflops {
            figures.push(format!("{t:.2} TFLOP/s"));
        }
        let ci = rec.median_ci95_ms.map(|[a, b]| format!(", 95% CI of the median {a:.4}-{b:.4}")).unwrap_or_default();
        say!(
            "time: median {med:.4} ms (min {min:.4}, max {max:.4}{ci}) over {} runs [{}]; {}",
            rec.times_ms.len(),
            rec.timer,
            figures.join(", ")
        );
    }
    if let Some(o) = &rec.observed {
        say!("observed: {}", describe_observation(o));
    }
    let ratio = rec.ratio.map(|r| format!("; ratio {r:.3}{}", rec.ratio_mark())).unwrap_or_default();
    match anchor {
        Some(a) if a.gbps.is_some() => {
            say!("anchor: device-to-device copy {:.1} GB/s (read + write){ratio}", a.gbps.unwrap_or_default())
        }
        Some(a) if a.tflops.is_some() => say!(
            "anchor: {} on the same inputs {:.2} TFLOP/s, its result matching ours entry by entry{ratio}",
            a.kernel,
            a.tflops.unwrap_or_default()
        ),
        Some(a) => say!("anchor: {}: {}", a.kernel, a.error.as_deref().unwrap_or("not measured")),
        None => {}
    }
    if let Some(n) = &rec.note {
        say!("note: {n}");
    }
    match &rec.error {
        Some(e) => say!("error: {e}"),
        None => say!("verified: {}", if rec.verified { "yes, against the CPU reference" } else { "NO" }),
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn run_bench(
    json: Option<PathBuf>,
    style: TableStyle,
    wide: bool,
    plots: Option<PathBuf>,
    n: Option<u64>,
    quick: bool,
    (families, backends, gate): (Vec<String>, Vec<BackendKind>, Option<(PathBuf, f64)>),
    budget_ms: f64,
    timing: TimingArgs,
    db: &DbArgs,
) -> anyhow::Result<()> {
    let against = match gate {
        Some((path, tolerance)) => {
            check_tolerance(tolerance)?;
            Some((read_records(&path)?, tolerance))
        }
        None => None,
    };
    if !(budget_ms.is_finite() && budget_ms >= 0.0) {
        bail!("--budget-ms {budget_ms}: a number of milliseconds, 0 or more");
    }
    let opts = suite::BenchOptions {
        timing: timing_options(&timing)?,
        n,
        quick,
        seed: timing.seed,
        command: command_line(),
        db: tuning_db(db, true)?,
        lock_clocks: timing.lock_clocks,
        budget_ms: (budget_ms > 0.0).then_some(budget_ms),
        against,
        families,
        backends,
    };
    for f in &opts.families {
        if crate::host::family::find(crate::families(), f).is_none() {
            let names: Vec<&str> = crate::families().iter().map(|f| f.name()).collect();
            bail!("--family {f}: no such family (one of {})", names.join(", "));
        }
    }
    if let Some(n) = n {
        suite::check_n(n).context("bench: refused, nothing launched")?;
    }
    let mut out = match &json {
        Some(path) => Some(JsonlWriter::append(path).with_context(|| format!("--json {}", path.display()))?),
        None => None,
    };
    // Each record is appended (one whole line, synced) as soon as it is made; the first
    // write error stops further writes and fails the command at the end.
    let mut write_error: Option<anyhow::Error> = None;
    let mut written = 0usize;
    let heartbeat = Heartbeat::start();
    let report = suite::bench(&opts, &mut |line| heartbeat.say(line), &mut |record| {
        if let (Some(w), None) = (out.as_mut(), &write_error) {
            match w.write(record) {
                Ok(()) => written += 1,
                Err(e) => write_error = Some(e.into()),
            }
        }
    });
    for line in &report.backends {
        say!("{line}");
    }
    say!("");
    let table = if wide {
        records_table(&report.records).render(style)
    } else {
        Comparison::new(&report.records).render(style)
    };
    say!("{}", table.strip_suffix('\n').unwrap_or(&table));
    if let Some(e) = write_error {
        return Err(e.context(format!("{written} of {} records appended", report.records.len())));
    }
    if let Some(path) = &json {
        say!("\n{written} records appended to {}", path.display());
    }
    drop(heartbeat);
    if report.records.is_empty() {
        bail!("no backend available: nothing was measured");
    }
    // After the records are safe in their file: a plot that cannot be written loses none.
    if let Some(dir) = &plots {
        let paths = write_plots(&report.records, dir).with_context(|| format!("--plots {}", dir.display()))?;
        say!("\n{} plots written to {}", paths.len(), dir.display());
    }
    if let (Some(rows), Some((_, tolerance))) = (&report.gate, &opts.against) {
        say!("\n{}", crate::host::report::gate::render(rows, *tolerance, false).trim_end());
    }
    // Last, so the table, the records and the plots are all there to read the failure in.
    fail_on_wrong(&report.records, |r| format!("{} {} {} ({})", r.family, r.variant, r.kernel, r.backend))?;
    if report.gate.as_deref().is_some_and(crate::host::report::gate::fails) {
        bail!("the regression gate failed: rows slower than the baseline, or missing (above)");
    }
    Ok(())
}

/// An error naming every record (by `name`) whose kernel ran and was wrong, else `Ok`.
fn fail_on_wrong(records: &[Record], name: impl Fn(&Record) -> String) -> anyhow::Result<()> {
    let wrong: Vec<String> = records.iter().filter(|r| r.wrong_result).map(name).collect();
    if !wrong.is_empty() {
        bail!("{} record(s) failed verification: {}", wrong.len(), wrong.join("; "));
    }
    Ok(())
}

/// `dynsmem shapes`: the suites, their records appended to `json` as they are made (and
/// the shapes it already holds kept), the summary and per-shape tables, the plots.
fn run_shapes(
    mut opts: shapes::ShapesOptions,
    json: Option<PathBuf>,
    markdown: bool,
    plots: Option<PathBuf>,
) -> anyhow::Result<()> {
    shapes::check_families(&opts.families)?;
    let mut out = None;
    if let Some(path) = &json {
        if path.exists() {
            let earlier =
                crate::host::report::read_jsonl(path).with_context(|| format!("--json {}", path.display()))?;
            opts.done = earlier.records;
        }
        out = Some(JsonlWriter::append(path).with_context(|| format!("--json {}", path.display()))?);
    }
    let mut write_error: Option<anyhow::Error> = None;
    let report = shapes::run(&opts, &mut |line| eprintln!("... {line}"), &mut |record| {
        if let (Some(w), None) = (out.as_mut(), &write_error)
            && let Err(e) = w.write(record)
        {
            write_error = Some(e.into());
        }
    });
    for line in &report.backends {
        say!("{line}");
    }
    if report.resumed > 0 {
        say!(
            "{} shapes kept from {} (measured before on this device)",
            report.resumed,
            json.as_deref().map(|p| p.display().to_string()).unwrap_or_default()
        );
    }
    let style = if markdown { TableStyle::Markdown } else { TableStyle::Text };
    let per_shape = shapes::shapes_table(&report.records).render(style);
    say!("\n{}", per_shape.trim_end());
    let summaries = shapes::summarize(&report.records);
    let summary = shapes::summary_table(&summaries).render(style);
    say!("\n{}", summary.trim_end());
    if let Some(e) = write_error {
        return Err(e.context("appending the records"));
    }
    if report.records.is_empty() {
        bail!("no backend available: nothing was measured");
    }
    if let Some(dir) = &plots {
        let paths = crate::host::report::ratio_plot::write(&report.records, dir)
            .with_context(|| format!("--plots {}", dir.display()))?;
        say!("\n{} plots written to {}", paths.len(), dir.display());
    }
    fail_on_wrong(&report.records, |r| {
        format!("{} {} {} ({})", r.family, r.shape.as_deref().unwrap_or("-"), r.kernel, r.backend)
    })
}

/// `dynsmem plot`: the plots of a record file (torn lines, left by a killed writer, are
/// skipped and counted on stderr).
fn plot(records: &std::path::Path, out: &std::path::Path) -> anyhow::Result<()> {
    let contents = crate::host::report::read_jsonl(records)?;
    if !contents.torn.is_empty() {
        eprintln!("{}: {} torn line(s) skipped", records.display(), contents.torn.len());
    }
    if contents.records.is_empty() {
        bail!("{}: no records", records.display());
    }
    let paths = write_plots(&contents.records, out).with_context(|| format!("--out {}", out.display()))?;
    for p in &paths {
        say!("{}", p.display());
    }
    say!("{} plots of {} records", paths.len(), contents.records.len());
    Ok(())
}

/// The bench's plots of `records` in `dir`: a bar chart per family, GEMM against size, and
/// `decomposition.svg` where CUDA records have a static twin to split by.
fn write_plots(records: &[Record], dir: &std::path::Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut paths = crate::host::report::plot::write(records, dir)?;
    paths.extend(crate::host::report::decompose_plot::write(records, dir)?);
    Ok(paths)
}

/// `dynsmem compare`: the comparison table of a record file and, with `plots`, its
/// decomposition plot (torn lines, left by a killed writer, are skipped and counted on
/// stderr).
fn compare(
    records: &std::path::Path,
    style: TableStyle,
    plots: Option<&std::path::Path>,
    decomposition: bool,
) -> anyhow::Result<()> {
    let contents = crate::host::report::read_jsonl(records)?;
    if !contents.torn.is_empty() {
        eprintln!("{}: {} torn line(s) skipped", records.display(), contents.torn.len());
    }
    if contents.records.is_empty() {
        bail!("{}: no records", records.display());
    }
    let table = if decomposition {
        crate::host::report::decompose_plot::decompose(&contents.records).table().render(style)
    } else {
        Comparison::new(&contents.records).render(style)
    };
    say!("{}", table.trim_end());
    if let Some(dir) = plots {
        match crate::host::report::decompose_plot::write(&contents.records, dir)
            .with_context(|| format!("--plots {}", dir.display()))?
        {
            Some(path) => say!("\n{}", path.display()),
            None => {
                say!("\nno decomposition plot: no problem has two of CUDA launch-sized, cuda-static and WGSL verified")
            }
        }
    }
    Ok(())
}

/// Records of a JSON-lines file, its torn lines reported; none is an error.
fn read_records(path: &std::path::Path) -> anyhow::Result<Vec<crate::host::report::Record>> {
    let contents = crate::host::report::read_jsonl(path).with_context(|| format!("{}", path.display()))?;
    if !contents.torn.is_empty() {
        eprintln!("{}: {} torn line(s) skipped", path.display(), contents.torn.len());
    }
    if contents.records.is_empty() {
        bail!("{}: no records", path.display());
    }
    Ok(contents.records)
}

fn check_tolerance(tolerance: f64) -> anyhow::Result<()> {
    if !(0.0..1.0).contains(&tolerance) {
        bail!("--tolerance {tolerance}: a fraction from 0 (no slowdown) to under 1");
    }
    Ok(())
}

/// `compare --baseline`: the regression gate on two record files, without re-measuring.
fn compare_gate(
    records: &std::path::Path,
    baseline: &std::path::Path,
    tolerance: f64,
    all: bool,
) -> anyhow::Result<()> {
    use crate::host::report::gate;
    check_tolerance(tolerance)?;
    let (now, base) = (read_records(records)?, read_records(baseline)?);
    let rows = gate::gate(&now, &base, tolerance);
    say!("{}", gate::render(&rows, tolerance, all).trim_end());
    if gate::fails(&rows) {
        bail!("the regression gate failed: rows slower than {}, or missing (above)", baseline.display());
    }
    Ok(())
}

/// The bench's progress lines on stderr, and a line of its own wherever it would otherwise
/// be silent for [`Heartbeat::EVERY`]: which step is still running, and for how long (a long
/// kernel's timing, a family's tuning on first use, a large reference).
struct Heartbeat {
    state: std::sync::Arc<(std::sync::Mutex<Beat>, std::sync::Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What the heartbeat knows: the last step's line and when it started, when anything was
/// last printed, and whether the run is over.
struct Beat {
    step: String,
    step_started: std::time::Instant,
    printed: std::time::Instant,
    done: bool,
}

impl Heartbeat {
    const EVERY: std::time::Duration = std::time::Duration::from_secs(15);

    fn start() -> Heartbeat {
        let now = std::time::Instant::now();
        let beat = Beat { step: String::new(), step_started: now, printed: now, done: false };
        let state = std::sync::Arc::new((std::sync::Mutex::new(beat), std::sync::Condvar::new()));
        let shared = state.clone();
        let thread = std::thread::spawn(move || {
            let (lock, wake) = &*shared;
            let mut b = lock.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                let wait = Self::EVERY.saturating_sub(b.printed.elapsed()).max(std::time::Duration::from_millis(100));
                b = wake.wait_timeout(b, wait).unwrap_or_else(|e| e.into_inner()).0;
                if b.done {
                    return;
                }
                if b.printed.elapsed() >= Self::EVERY && !b.step.is_empty() {
                    eprintln!("... still at: {} ({:.0} s)", b.step, b.step_started.elapsed().as_secs_f64());
                    b.printed = std::time::Instant::now();
                }
            }
        });
        Heartbeat { state, thread: Some(thread) }
    }

    /// Prints a progress line; one that does not start with a space is a new step.
    fn say(&self, line: &str) {
        eprintln!("... {line}");
        let mut b = self.state.0.lock().unwrap_or_else(|e| e.into_inner());
        b.printed = std::time::Instant::now();
        if !line.starts_with(' ') {
            b.step = line.to_string();
            b.step_started = b.printed;
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.state.0.lock().unwrap_or_else(|e| e.into_inner()).done = true;
        self.state.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
