//! `dynsmem tune <family>`: build the family's search space for the chosen backend, run a
//! strategy over it (on the device, or against a recorded cache with `--replay`), and
//! report the best config, the fastest ones, the filtered and failed ones, the WGSL
//! pipeline-creation time, and optional T4 / SVG files.

use std::path::{Path, PathBuf};

use crate::cli::*;
use crate::host::backend::Variant;
use crate::host::backend::{BackendKind, DeviceInfo};
use crate::host::family::DynFamily;
use crate::host::family::Sizes;
use crate::host::measure::TimingOptions;
use crate::host::rng::SplitMix64;
use crate::host::tune::cache::GroupKey;
use crate::host::tune::confirm;
use crate::host::tune::progress::{Progress, Report};
use crate::host::tune::strategies::Stop;
use crate::host::tune::{
    Budget, ErasedTunable, Objective, RealRunner, ReplayRunner, SearchResult, SearchSpace, Shard, Strategy, Target,
    Tunable, TuneBackend, TuneCache, Worker, plot, shard, t4,
};
use crate::suite;
use anyhow::{Context, bail};
use serde_json::Value;

use super::app::{command_line, pick, variant_of};
use super::emit;
use crate::cli::files::{TIMING_LOCK, with_suffix, write_file, write_json};

/// The tuner's options, checked.
struct Options<'a> {
    common: &'a TuneCommon,
    strategy: Strategy,
    budget: Budget,
    overrides: Vec<(String, Vec<u32>)>,
    timing: TimingOptions,
    objective: Objective,
    outputs: Outputs<'a>,
}

/// What a sweep's report writes besides its table.
pub struct Outputs<'a> {
    pub top: usize,
    pub objective: Objective,
    /// `--kt PREFIX`: the Kernel Tuner files of the sweep.
    pub kt: Option<&'a Path>,
    pub t4: Option<&'a Path>,
    pub plot: Option<&'a Path>,
    pub heatmap: &'a [String],
}

/// The kernel image a backend runs, hashed for cache keys (its row of the backend table).
pub fn image_hash(kind: BackendKind) -> String {
    crate::image(kind).1
}

fn parse_values(values: &[String]) -> anyhow::Result<Vec<(String, Vec<u32>)>> {
    values
        .iter()
        .map(|v| {
            let (name, list) = v.split_once('=').with_context(|| format!("--values {v}: expected NAME=V1,V2,..."))?;
            let list = list
                .split(',')
                .map(|x| x.trim().parse::<u32>().with_context(|| format!("--values {v}: {x:?} is not a u32")))
                .collect::<anyhow::Result<Vec<u32>>>()?;
            Ok((name.trim().to_string(), list))
        })
        .collect()
}

pub fn strategy_of(s: StrategyArg) -> Strategy {
    match s {
        StrategyArg::Exhaustive => Strategy::Exhaustive,
        StrategyArg::Random => Strategy::Random,
        StrategyArg::Anneal => Strategy::Anneal,
        StrategyArg::HillClimb => Strategy::HillClimb,
    }
}

fn options(common: &TuneCommon) -> anyhow::Result<Options<'_>> {
    let strategy = strategy_of(common.strategy);
    if common.budget_evals == Some(0) {
        bail!("--budget-evals 0: nothing would be evaluated");
    }
    if let Some(s) = common.budget_seconds
        && !(s > 0.0 && s.is_finite())
    {
        bail!("--budget-seconds {s}: a positive number of seconds");
    }
    let objective = Objective::from(common.objective);
    let energy_ms = common.energy_ms.unwrap_or(if objective.needs_energy() { 250.0 } else { 0.0 });
    if objective.needs_energy() && energy_ms <= 0.0 {
        bail!("--objective {objective} reads the energy of each config: --energy-ms must be above 0");
    }
    let timing = TimingOptions {
        warmup: common.warmup,
        warmup_ms: common.warmup_ms,
        repeats: common.repeats,
        energy_ms,
        back_to_back: !common.wait_each_run,
    };
    timing.validate()?;
    Ok(Options {
        common,
        strategy,
        budget: Budget { evaluations: common.budget_evals, seconds: common.budget_seconds },
        overrides: parse_values(&common.values)?,
        timing,
        objective,
        outputs: Outputs {
            top: common.top,
            objective,
            kt: common.kt.as_deref(),
            t4: common.t4.as_deref(),
            plot: common.plot.as_deref(),
            heatmap: &common.heatmap,
        },
    })
}

/// Runs `tune` for one family.
pub fn tune(family: &dyn DynFamily, matches: &clap::ArgMatches, common: &TuneCommon) -> anyhow::Result<()> {
    let opts = options(common)?;
    let sh = &common.shards;
    let starts_shards = !sh.devices.is_empty() || sh.slurm.is_some();
    if common.replay {
        if sh.shard.is_some() || starts_shards {
            bail!("--replay reads a cache; --shard, --devices and --slurm run a sweep");
        }
        return replay(&opts, family, matches);
    }
    if common.device.is_some() {
        bail!("--device picks a recorded device for --replay; a sweep runs on --backend");
    }
    if sh.shard.is_some() && starts_shards {
        bail!("--shard runs one shard; --devices and --slurm start every shard themselves");
    }
    if !sh.devices.is_empty() && sh.slurm.is_some() {
        bail!("--devices runs the shards here, --slurm writes them as Slurm jobs: one or the other");
    }
    if let Some(dir) = &sh.slurm {
        return slurm(family, common, dir);
    }
    if !sh.devices.is_empty() {
        let finished = crate::cli::workers::run(family, common)?;
        return merge_and_report(&common.cache, &finished.caches, &opts.outputs, finished.failed);
    }
    if sh.worker {
        // Started by a supervisor: end with it, if it dies.
        crate::host::tune::supervise::exit_with_supervisor();
    } else if !common.in_process {
        let cache = sh.shard.unwrap_or(Shard::WHOLE).cache_path(&common.cache);
        return crate::cli::workers::supervised(common, &cache);
    }
    let picked = pick(common.backend)?;
    crate::host::with_backend!(picked.erase(), b => sweep(b, &opts, family, matches))
}

/// The family's tuner for `problem` (its `tune` subcommand exists only when it has one).
fn tunable(family: &dyn DynFamily, problem: &Value) -> anyhow::Result<ErasedTunable> {
    let t = family.tunable(problem)?.with_context(|| format!("{} has no search space", family.name()))?;
    Ok(ErasedTunable::new(t))
}

fn describe_space(space: &SearchSpace) -> anyhow::Result<()> {
    let params: Vec<String> = space.params.iter().map(|p| format!("{} {:?}", p.name, p.values)).collect();
    say!(
        "space: {} configs to evaluate, {} filtered before launch ({})",
        space.len(),
        space.filtered.len(),
        params.join("; ")
    );
    const SHOWN: usize = 30;
    for f in space.filtered.iter().take(SHOWN) {
        say!("  filtered {}: {}", crate::host::tune::space::describe_point(&space.params, &f.point), f.reason);
    }
    if space.filtered.len() > SHOWN {
        say!(
            "  ... and {} more filtered (all are in the --t4 export, with their reasons)",
            space.filtered.len() - SHOWN
        );
    }
    if space.is_empty() {
        bail!("no config of the space can run on this target");
    }
    Ok(())
}

/// A sweep on a device.
fn sweep<B: TuneBackend>(
    backend: &B,
    opts: &Options<'_>,
    family: &dyn DynFamily,
    matches: &clap::ArgMatches,
) -> anyhow::Result<()> {
    let info = backend.info();
    let (problem, _) = family.problem(matches, &Sizes::for_backend(backend, None, false))?;
    let tunable = tunable(family, &problem)?;
    let variant = variant_of(backend, opts.common.variant);
    let target = Target { backend: info.backend, variant, limits: info.limits, is_cpu: info.is_cpu };
    say!("{}", suite::describe(backend));
    if let Some(mhz) = opts.common.lock_clocks {
        say!("{}", suite::lock_clocks(backend, mhz));
    }
    say!(
        "tune {} {} ({variant})",
        tunable.family(),
        serde_json::to_string(tunable.problem()).expect("problems serialize")
    );
    let whole = SearchSpace::build(&tunable, &target, &opts.overrides)?;
    let shard = opts.common.shards.shard.unwrap_or(Shard::WHOLE);
    let space = shard.space(&whole, opts.strategy);
    describe_space(&space)?;
    if shard != Shard::WHOLE {
        if Shard::partitions(opts.strategy) {
            say!(
                "shard {shard}: {} of the {} configs (every {}th from the {}th)",
                space.len(),
                whole.len(),
                shard.count,
                shard.index
            );
        } else {
            say!(
                "shard {shard}: an independent {} walk over the whole space, seed {}",
                opts.strategy.name(),
                shard.seed(opts.common.seed)
            );
        }
    }
    // The cache is opened before anything runs: a path that cannot be written is refused
    // before the measurements it would have held.
    let path = &shard.cache_path(&opts.common.cache);
    let mut cache = TuneCache::open(path).with_context(|| format!("--cache {}", path.display()))?;
    if !cache.torn.is_empty() {
        say!("cache {}: {} unfinished line(s) of a killed sweep skipped", path.display(), cache.torn.len());
    }
    let image = image_hash(info.backend);
    let prov = crate::provenance(info.backend, &command_line());
    let commit = prov.commit.clone();
    let mut runner = RealRunner::new(
        backend,
        &tunable,
        &mut cache,
        variant,
        &image,
        opts.timing,
        opts.common.input_seed,
        prov,
        opts.strategy.name(),
    )?;
    runner.objective = opts.objective;
    runner.announce = opts.common.shards.worker;
    runner.timing_lock = std::env::var_os(TIMING_LOCK).map(PathBuf::from);
    if let Some(lock) = &runner.timing_lock {
        say!("timing holds the lock {} (one process times on this device at a time)", lock.display());
    }
    if shard != Shard::WHOLE {
        runner.worker = Some(Worker {
            shard: shard.to_string(),
            host: crate::cli::workers::host_name(),
            device: crate::cli::workers::pinned_device(),
            gpu: backend.device_id(),
        });
    }
    let result = search(&space, &mut runner, opts, shard);
    let (measured, from_cache, group) = (runner.measured, runner.from_cache, runner.group().clone());
    say!(
        "{}: {} evaluations ({measured} measured now, {from_cache} from the cache {}), {} failed; {} in {:.1} s",
        result.strategy,
        result.evaluations.len(),
        path.display(),
        result.failed().count(),
        result.stop,
        result.seconds
    );
    let meta = t4::Metadata::of(&tunable, info, variant, image, result.strategy, commit);
    report(&space, &result, &opts.outputs, &meta)?;
    // A shard's best is not the sweep's: the merged report names that (unconfirmed).
    if opts.common.confirm_top > 1 && shard == Shard::WHOLE && !matches!(result.stop, Stop::RunnerFailed(_)) {
        let ranked: Vec<(usize, f64)> = result
            .ranked()
            .into_iter()
            .take(opts.common.confirm_top)
            .filter_map(|e| e.score.map(|s| (e.index, s)))
            .collect();
        if ranked.len() > 1 {
            let c = confirm::confirm(
                backend,
                &tunable,
                variant,
                &space,
                &ranked,
                opts.timing,
                opts.common.input_seed,
                opts.objective,
                opts.common.confirm_rounds,
            )?;
            crate::cli::kt_cmd::report_confirmation(&space, &c)?;
            if let Some(prefix) = opts.outputs.kt {
                write_json(&with_suffix(prefix, ".confirm.json"), &serde_json::to_value(&c)?)?;
            }
        }
    }
    if let Some(prefix) = opts.outputs.kt {
        crate::cli::kt_cmd::export(prefix, &cache, &group, &whole, &meta, info, opts.objective)?;
    }
    if let Stop::RunnerFailed(e) = &result.stop {
        bail!("the sweep stopped: {e}");
    }
    Ok(())
}

/// A strategy against the results one sweep recorded in the cache: no device.
fn replay(opts: &Options<'_>, family: &dyn DynFamily, matches: &clap::ArgMatches) -> anyhow::Result<()> {
    let path = &opts.common.cache;
    let cache = TuneCache::read(path).with_context(|| format!("--replay --cache {}", path.display()))?;
    // The given problem fields, as the family serializes them (sizes of any backend: only
    // the given fields are compared).
    let (wanted, given) = family.problem(matches, &Sizes::cpu_backend())?;
    let family_name = family.name();
    let variant = opts.common.variant.map(Variant::from);
    let backend = opts.common.backend;
    let groups = cache.groups();
    let matching: Vec<_> = groups
        .iter()
        .filter(|(g, t, _)| {
            let recorded: Value = serde_json::from_str(&g.problem).unwrap_or(Value::Null);
            g.family == family_name
                && backend.is_none_or(|b| b == g.backend)
                && variant.is_none_or(|v| v == t.variant)
                && opts.common.device.as_ref().is_none_or(|d| g.device.contains(d.as_str()))
                && given.iter().all(|f| recorded.get(f) == wanted.get(f))
        })
        .collect();
    let list = |gs: &mut dyn Iterator<Item = &(crate::host::tune::cache::GroupKey, Target, usize)>| {
        gs.map(|(g, _, n)| format!("\n  {n} configs: {g}")).collect::<String>()
    };
    let (group, target, count) = match matching.as_slice() {
        [one] => *one,
        [] => bail!(
            "--replay: {} holds no {family_name} sweep matching the options; it holds:{}",
            path.display(),
            list(&mut groups.iter())
        ),
        _ => bail!(
            "--replay: {} holds several matching {family_name} sweeps; pick one with --backend, --variant, --device or the problem options:{}",
            path.display(),
            list(&mut matching.iter().copied())
        ),
    };
    say!("replay of {} ({count} configs recorded), no device", path.display());
    say!("recorded: {group}");
    let space = recorded_space(family, &cache, group, target, &opts.overrides)?;
    describe_space(&space)?;
    let mut runner = ReplayRunner::new(&cache, group);
    runner.objective = opts.objective;
    let result = search(&space, &mut runner, opts, Shard::WHOLE);
    say!(
        "{}: {} evaluations (replayed), {} failed; {} in {:.3} s",
        result.strategy,
        result.evaluations.len(),
        result.failed().count(),
        result.stop,
        result.seconds
    );
    let meta = recorded_meta(&cache, group, &format!("{} (replay)", result.strategy));
    report(&space, &result, &opts.outputs, &meta)?;
    if let Some(prefix) = opts.outputs.kt {
        // The device as the sweep recorded it: the Kernel Tuner files of a recorded sweep
        // are written again with no device.
        let api = cache.entries().iter().find(|e| e.group() == *group).map(|e| e.record.api.clone());
        let info = DeviceInfo {
            backend: group.backend,
            name: group.device.clone(),
            driver: group.driver.clone(),
            api: api.unwrap_or_default(),
            is_cpu: target.is_cpu,
            limits: target.limits,
        };
        crate::cli::kt_cmd::export(prefix, &cache, group, &space, &meta, &info, opts.objective)?;
    }
    Ok(())
}

/// The space a recorded sweep ran over: its family's tuner for the recorded problem, the
/// recorded target and candidate values, then `overrides`.
fn recorded_space(
    family: &dyn DynFamily,
    cache: &TuneCache,
    group: &GroupKey,
    target: &Target,
    overrides: &[(String, Vec<u32>)],
) -> anyhow::Result<SearchSpace> {
    let recorded: Value =
        serde_json::from_str(&group.problem).with_context(|| format!("the recorded problem {}", group.problem))?;
    let tunable = tunable(family, &recorded)?;
    let mut values = cache.group_values(group);
    values.extend(overrides.iter().cloned());
    Ok(SearchSpace::build(&tunable, target, &values)?)
}

/// T4 metadata of a recorded sweep.
fn recorded_meta(cache: &TuneCache, group: &GroupKey, strategy: &str) -> t4::Metadata {
    let commit = cache.entries().iter().find(|e| e.group() == *group).map(|e| e.record.commit.clone());
    t4::Metadata {
        family: group.family.clone(),
        problem: serde_json::from_str(&group.problem).unwrap_or(Value::Null),
        device: group.device.clone(),
        driver: group.driver.clone(),
        backend: group.backend.to_string(),
        variant: group.variant.clone(),
        image_hash: group.image_hash.clone(),
        strategy: strategy.into(),
        commit: commit.unwrap_or_default(),
    }
}

/// `dynsmem merge`: joins caches, then reports every sweep they hold.
pub fn merge(out: &Path, inputs: &[PathBuf], top: usize) -> anyhow::Result<()> {
    merge_and_report(
        out,
        inputs,
        &Outputs { top, objective: Objective::Time, kt: None, t4: None, plot: None, heatmap: &[] },
        Vec::new(),
    )
}

/// Joins `inputs` into the cache `out` ([`shard::merge`]), then reports each sweep the
/// inputs hold over the configs `out` has: for an exhaustive sweep whose shards all
/// finished, the same report as one process's. `failed` names workers that did not
/// finish; the command fails after the report.
fn merge_and_report(out: &Path, inputs: &[PathBuf], outputs: &Outputs<'_>, failed: Vec<String>) -> anyhow::Result<()> {
    let r = shard::merge(out, inputs).with_context(|| format!("merging into {}", out.display()))?;
    for i in &r.inputs {
        let torn = if i.torn > 0 {
            format!(", {} unfinished line(s) of a killed writer skipped", i.torn)
        } else {
            String::new()
        };
        say!("{}: {} entries, {} appended{torn}", i.path.display(), i.entries, i.appended);
    }
    say!("merged into {}: {} entries appended, {} already there", out.display(), r.appended(), r.already);
    let cache = TuneCache::read(out).with_context(|| format!("reading the merged cache {}", out.display()))?;
    let targets: std::collections::HashMap<GroupKey, Target> =
        cache.groups().into_iter().map(|(g, t, _)| (g, t)).collect();
    for group in &r.groups {
        let Some(family) = crate::host::family::find(crate::families(), &group.family) else {
            say!("{group}: no family of this build is named {:?}; not reported", group.family);
            continue;
        };
        let target = targets.get(group).with_context(|| format!("{group} is not in {}", cache.path().display()))?;
        let whole = recorded_space(family, &cache, group, target, &[])?;
        let held = cache.group_entries(group);
        let space = whole.subset(|i| held.contains_key(&whole.params_map(i)));
        say!("merged sweep: {group}");
        say!(
            "  {} of the space's {} configs are in the cache ({} filtered before launch{})",
            space.len(),
            whole.len(),
            whole.filtered.len(),
            if held.len() > space.len() {
                format!("; {} entries of other candidate values", held.len() - space.len())
            } else {
                String::new()
            }
        );
        if space.is_empty() {
            continue;
        }
        let mut runner = ReplayRunner::new(&cache, group);
        let mut rng = SplitMix64::new(1);
        let result = Strategy::Exhaustive.search(&space, &mut runner, Budget::unlimited(), &mut rng);
        let meta = recorded_meta(&cache, group, "merged shards");
        report(&space, &result, outputs, &meta)?;
    }
    if !failed.is_empty() {
        bail!(
            "{} did not finish; run the same command again: every finished config is answered from its shard cache, and only the rest run",
            failed.join(", ")
        );
    }
    Ok(())
}

/// `tune ... --slurm DIR`: writes the job array and its merge job, and submits them when asked.
fn slurm(family: &dyn DynFamily, common: &TuneCommon, dir: &Path) -> anyhow::Result<()> {
    let sh = &common.shards;
    let shards = sh.shards.context("--slurm needs --shards N: the number of array tasks")?;
    if shards == 0 {
        bail!("--shards 0: a sweep needs at least one shard");
    }
    let cwd = std::env::current_dir().context("the current folder")?;
    let abs = |p: &Path| if p.is_absolute() { p.to_path_buf() } else { cwd.join(p) };
    let gres = match (sh.slurm_gres.as_deref(), common.backend) {
        (Some("none"), _) => None,
        (Some(g), _) => Some(g.to_string()),
        (None, Some(BackendKind::Cpu)) => None,
        (None, _) => Some("gpu:1".to_string()),
    };
    let invocation = crate::cli::Invocation::current()?;
    // The worker program's leading arguments (`-m dynsmem` under Python) go before the sweep's.
    let mut tune_args: Vec<String> = invocation.worker[1..].iter().map(|a| a.to_string_lossy().into_owned()).collect();
    tune_args.extend(worker_args(&invocation.rest()));
    let job = crate::slurm::SlurmJob {
        name: family.name().into(),
        binary: std::path::PathBuf::from(&invocation.worker[0]),
        tune_args,
        cache: abs(&common.cache),
        shards,
        gres,
        options: sh.slurm_option.clone(),
        workdir: cwd.clone(),
        dir: abs(dir),
    };
    let submit = job.write().with_context(|| format!("writing the Slurm scripts into {}", dir.display()))?;
    say!(
        "Slurm: {} shards of tune {} as a job array, then a merge into {}",
        shards,
        family.name(),
        job.cache.display()
    );
    say!(
        "  {}
  {}
  {}",
        job.dir.join("tune.sbatch").display(),
        job.dir.join("merge.sbatch").display(),
        submit.display()
    );
    if !sh.submit {
        say!("submit with: {}", submit.display());
        return Ok(());
    }
    let out = std::process::Command::new("bash")
        .arg(&submit)
        .output()
        .with_context(|| format!("running {}", submit.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!("{} failed ({}): {}{}", submit.display(), out.status, stdout, String::from_utf8_lossy(&out.stderr));
    }
    let (array, merge) =
        crate::slurm::parse_submitted(&stdout).with_context(|| format!("{} printed {stdout:?}", submit.display()))?;
    say!("submitted: array job {array} ({shards} tasks), merge job {merge} (after the array succeeds)");
    Ok(())
}

/// Runs the strategy (with `shard`'s budget and seed) with the progress bar.
fn search(
    space: &SearchSpace,
    runner: &mut dyn crate::host::tune::Runner,
    opts: &Options<'_>,
    shard: Shard,
) -> SearchResult {
    let budget = shard.budget(opts.budget);
    let total = budget.max_evaluations(space.len());
    let report = match (opts.common.shards.worker, opts.common.quiet) {
        (true, _) => Report::Worker,
        (false, true) => Report::Quiet,
        (false, false) => Report::Human,
    };
    let mut progress = Progress::new(runner, total, report);
    progress.unit = opts.objective.unit();
    let mut rng = SplitMix64::new(shard.seed(opts.common.seed));
    let result = opts.strategy.search(space, &mut progress, budget, &mut rng);
    progress.finish();
    result
}

/// GB/s with 4 significant digits, so that CPU figures do not print as 0.0.
fn fmt_gbps(g: f64) -> String {
    if g >= 10.0 { format!("{g:.1}") } else { format!("{g:.4}") }
}

fn fmt_ms(v: Option<f64>) -> String {
    v.map(|t| format!("{t:.4}")).unwrap_or_default()
}

/// Best config, top-k table, failures, WGSL pipeline time, and the requested files.
fn report(space: &SearchSpace, result: &SearchResult, opts: &Outputs<'_>, meta: &t4::Metadata) -> anyhow::Result<()> {
    use crate::host::report::{Table, TableStyle};
    let variant = space.target.variant;
    match result.best() {
        Some(b) => {
            let e = b.entry.as_ref().map(|e| &e.record);
            let gbps = e.and_then(|r| r.gbps).map(|g| format!(", {} GB/s", fmt_gbps(g))).unwrap_or_default();
            say!(
                "best: {} -> {} {}{gbps}, {} B of {} workgroup memory",
                space.describe(b.index),
                fmt_ms(b.score),
                opts.objective.unit(),
                space.footprints[b.index].shared_bytes(variant),
                if variant == Variant::LaunchSized { "launch-sized" } else { "static" }
            );
        }
        None => say!("best: none (no config verified)"),
    }
    let mut header: Vec<&str> = vec!["rank"];
    header.extend(space.params.iter().map(|p| p.name));
    let objective = format!("{} ({})", opts.objective.name(), opts.objective.unit());
    if opts.objective != Objective::Time {
        header.push(&objective);
    }
    header.extend(["median ms", "95% CI ms", "GB/s", "J/run", "SM MHz", "shared B", "build ms", "source"]);
    let mut table = Table::new(&header);
    for (rank, e) in result.ranked().into_iter().take(opts.top).enumerate() {
        let rec = e.entry.as_ref().map(|x| &x.record);
        let mut row = vec![(rank + 1).to_string()];
        row.extend(space.points[e.index].iter().map(|v| v.to_string()));
        if opts.objective != Objective::Time {
            row.push(e.score.map(|v| format!("{v:.4e}")).unwrap_or_default());
        }
        row.push(fmt_ms(rec.and_then(|r| r.median_ms)));
        row.push(rec.and_then(|r| r.median_ci95_ms).map(|[a, b]| format!("{a:.4}-{b:.4}")).unwrap_or_default());
        row.push(rec.and_then(|r| r.gbps).map(fmt_gbps).unwrap_or_default());
        let observed = rec.and_then(|r| r.observed.as_ref());
        row.push(observed.and_then(|o| o.energy).map(|e| format!("{:.3e}", e.joules_per_run)).unwrap_or_default());
        row.push(observed.and_then(|o| o.sm_clock_mhz).map(|c| format!("{:.0}", c.median)).unwrap_or_default());
        row.push(space.footprints[e.index].shared_bytes(variant).to_string());
        row.push(e.entry.as_ref().map(|x| format!("{:.2}", x.tune.build_ms)).unwrap_or_default());
        row.push(if e.cached { "cache" } else { "measured" }.into());
        table.push(row);
    }
    let text = table.render(TableStyle::Text);
    say!("{}", text.trim_end());
    let failed: Vec<_> = result.failed().collect();
    for e in failed.iter().take(20) {
        say!("  failed {}: {}", space.describe(e.index), e.error.as_deref().unwrap_or("no result"));
    }
    if failed.len() > 20 {
        say!("  ... and {} more failed", failed.len() - 20);
    }
    if variant != Variant::LaunchSized {
        // Configs whose source and constants equal an earlier config's reuse its pipeline
        // (e.g. reduce's items per thread is an argument, not a size): they built nothing.
        let entries: Vec<_> = result.evaluations.iter().filter_map(|e| e.entry.as_ref()).collect();
        let mut builds: Vec<f64> = entries.iter().map(|e| e.tune.build_ms).filter(|&b| b > 0.0).collect();
        builds.sort_by(f64::total_cmp);
        let mut firsts: Vec<f64> = entries.iter().map(|e| e.tune.verify_ms).collect();
        firsts.sort_by(f64::total_cmp);
        let mut kernels: Vec<f64> = entries.iter().filter_map(|e| e.time_ms()).collect();
        kernels.sort_by(f64::total_cmp);
        let median = crate::host::measure::median_sorted;
        say!(
            "pipeline creation (what launch-time sizing removes): {} of {} configs needed a new pipeline, {:.1} ms in all, \
             median {:.2} ms each; first run + check median {:.2} ms against a median kernel time of {:.3} ms (a driver \
             that compiles at first dispatch, as lavapipe does, pays there); the launch-sized path loads one image once",
            builds.len(),
            entries.len(),
            builds.iter().sum::<f64>(),
            median(&builds),
            median(&firsts),
            median(&kernels)
        );
    }
    let kt_t4 = opts.kt.map(|prefix| with_suffix(prefix, ".t4.json"));
    for path in opts.t4.into_iter().chain(kt_t4.as_deref()) {
        let doc = t4::export(space, &result.evaluations, meta);
        write_file(path, &serde_json::to_string_pretty(&doc)?)?;
        say!("T4 results: {}", path.display());
    }
    if let Some(path) = opts.plot {
        let problem = match &meta.problem {
            Value::Object(m) => {
                m.iter().map(|(k, v)| format!("{k}={}", v.to_string().trim_matches('"'))).collect::<Vec<_>>().join(" ")
            }
            other => other.to_string(),
        };
        let title = format!("{} {problem}: {} {}, {}", meta.family, meta.backend, meta.variant, result.strategy);
        match plot::time_vs_shared_bytes(space, &result.evaluations, &title, opts.objective.label()) {
            Ok(svg) => {
                write_file(path, &svg)?;
                say!("plot: {}", path.display());
            }
            Err(e) => say!("plot: not written: {e}"),
        }
        let axes = match opts.heatmap {
            [] => plot::default_axes(space),
            [x, y] => {
                let find = |n: &str| space.params.iter().position(|p| p.name == n);
                match (find(x), find(y)) {
                    (Some(a), Some(b)) => Some((a, b)),
                    _ => bail!("--heatmap {x},{y}: not two parameters of the space"),
                }
            }
            other => bail!("--heatmap takes two parameter names, got {other:?}"),
        };
        if let Some((px, py)) = axes {
            let hpath = heatmap_path(path);
            match plot::heatmap(space, &result.evaluations, px, py, &title) {
                Ok(svg) => {
                    write_file(&hpath, &svg)?;
                    say!("heatmap: {}", hpath.display());
                }
                Err(e) => say!("heatmap: not written: {e}"),
            }
        }
    }
    Ok(())
}

/// `dir/name.svg` -> `dir/name-heatmap.svg`.
fn heatmap_path(plot: &Path) -> PathBuf {
    let stem = plot.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "tune".into());
    plot.with_file_name(format!("{stem}-heatmap.svg"))
}
