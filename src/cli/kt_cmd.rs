//! Kernel Tuner files of a sweep (`tune --kt PREFIX`), a Kernel Tuner cache or T4 file
//! replayed by our strategies (`dynsmem replay-kt`), the top-k re-measurement's table, and
//! the tuning database's commands (`dynsmem db build | list`).

use std::path::{Path, PathBuf};

use crate::host::backend::DeviceInfo;
use crate::host::rng::SplitMix64;
use crate::host::tune::cache::GroupKey;
use crate::host::tune::confirm::Confirmation;
use crate::host::tune::db::{self, TuningDb};
use crate::host::tune::kt::{self, Imported, ImportedRunner};
use crate::host::tune::{Budget, Objective, SearchSpace, Strategy, Target, TuneCache, t4};
use anyhow::{Context, bail};

use super::emit;
use crate::cli::files::{with_suffix, write_file, write_json};

/// Writes the sweep's Kernel Tuner cache, T4 metadata and best config beside the T4
/// results (which the report wrote): `PREFIX.kt-cache.json`, `PREFIX.t4-metadata.json`,
/// `PREFIX.best.json`.
pub fn export(
    prefix: &Path,
    cache: &TuneCache,
    group: &GroupKey,
    space: &SearchSpace,
    meta: &t4::Metadata,
    info: &DeviceInfo,
    objective: Objective,
) -> anyhow::Result<()> {
    let file = kt::cache_file(cache, group, space);
    let missing = space.len().saturating_sub(file.cache.len());
    let path = with_suffix(prefix, ".kt-cache.json");
    write_file(&path, &file.text())?;
    say!(
        "Kernel Tuner cache: {}{}",
        path.display(),
        if missing > 0 {
            format!(" ({missing} configs of the space were not measured: Kernel Tuner's simulation needs them all)")
        } else {
            String::new()
        }
    );
    let target =
        Target { backend: info.backend, variant: space.target.variant, limits: info.limits, is_cpu: info.is_cpu };
    let path = with_suffix(prefix, ".t4-metadata.json");
    write_json(&path, &kt::metadata(meta, &target, &info.api, crate::RUSTC))?;
    say!("T4 metadata: {}", path.display());
    if let Some(best) = kt::best(cache, group, objective) {
        let path = with_suffix(prefix, ".best.json");
        write_json(&path, &best)?;
        say!("best config (for the simulation to reproduce): {}", path.display());
    }
    Ok(())
}

/// The top-k re-measurement's table and verdict.
pub fn report_confirmation(space: &SearchSpace, c: &Confirmation) -> anyhow::Result<()> {
    use crate::host::report::{Table, TableStyle};
    say!(
        "top {} re-measured in {} interleaved rounds ({} in {}):",
        c.configs.len(),
        c.configs.first().map_or(0, |x| x.rounds.len()),
        c.objective,
        c.unit
    );
    let mut t = Table::new(&["sweep rank", "config", "sweep", "rounds' median", "95% CI", "error"]);
    for x in &c.configs {
        t.push(vec![
            (x.sweep_rank + 1).to_string(),
            space.describe(x.index),
            format!("{:.5}", x.sweep_score),
            format!("{:.5}", x.median),
            x.ci95.map(|[a, b]| format!("{a:.5}-{b:.5}")).unwrap_or_default(),
            x.error.clone().unwrap_or_default(),
        ]);
    }
    say!("{}", t.render(TableStyle::Text).trim_end());
    let best = c.best();
    say!(
        "confirmed best: {} ({}; the sweep's ranking of the top {} {}; {})",
        space.describe(best.index),
        if c.best_held {
            "the sweep's best held".to_string()
        } else {
            format!("the sweep ranked it {}", best.sweep_rank + 1)
        },
        c.configs.len(),
        if c.ranking_held { "held" } else { "did not hold" },
        if c.separated {
            "its interval is clear of the runner-up's"
        } else {
            "its interval overlaps the runner-up's: the two are not told apart"
        }
    );
    Ok(())
}

/// `dynsmem replay-kt FILE`: our strategy over a Kernel Tuner cache or T4 file.
pub fn replay_kt(
    file: &Path,
    objective: &str,
    strategy: Strategy,
    budget: Budget,
    seed: u64,
    repeats: usize,
) -> anyhow::Result<()> {
    let imported = Imported::read(file, objective)?;
    let space = imported.space()?;
    let (opt_point, optimum) = imported.optimum().with_context(|| {
        format!("no config in the file has a valid `{objective}` (pick the key with --objective, e.g. time)")
    })?;
    say!(
        "{}: {} on {}: {} configs ({} filtered), objective {} ({} is better); optimum {} at {:?}",
        file.display(),
        imported.kernel,
        imported.device,
        space.len(),
        space.filtered.len(),
        imported.objective,
        if imported.higher_is_better { "higher" } else { "lower" },
        optimum,
        opt_point
    );
    if space.is_empty() {
        bail!("no valid config to search");
    }
    let mut found_optimum = 0;
    let mut fractions = Vec::new();
    for r in 0..repeats.max(1) {
        let mut runner = ImportedRunner { imported: &imported, answered: 0 };
        let mut rng = SplitMix64::new(seed + r as u64);
        let result = strategy.search(&space, &mut runner, budget, &mut rng);
        // A score is the value, negated where higher is better.
        let best = result.best().and_then(|b| b.score.map(|score| (b.index, score)));
        if let Some((i, score)) = best {
            let s = imported.score(score);
            found_optimum += usize::from(score <= imported.score(optimum));
            // The fraction of the optimum's performance: a time over the least, a rate over the greatest.
            let fraction = if imported.higher_is_better { s / optimum } else { optimum / s };
            fractions.push(fraction);
            say!(
                "  run {}: {} evaluations, best {} at {} ({:.1}% of the optimum's performance)",
                r + 1,
                result.evaluations.len(),
                s,
                space.describe(i),
                100.0 * fraction
            );
        } else {
            say!("  run {}: {} evaluations, nothing valid found", r + 1, result.evaluations.len());
        }
    }
    say!(
        "{}: found the optimum in {found_optimum} of {} runs; mean fraction of the optimum {:.3}",
        strategy.name(),
        repeats.max(1),
        fractions.iter().sum::<f64>() / fractions.len().max(1) as f64
    );
    Ok(())
}

/// `dynsmem db build`: distils caches into a database file (one entry per sweep).
pub fn db_build(inputs: &[PathBuf], out: &Path, objective: Objective) -> anyhow::Result<()> {
    let mut entries = Vec::new();
    for p in inputs {
        let cache = TuneCache::read(p).with_context(|| format!("reading {}", p.display()))?;
        let got = db::distil(&cache, objective);
        say!("{}: {} sweeps", p.display(), got.len());
        entries.extend(got);
    }
    let text: String = entries.iter().map(|e| serde_json::to_string(e).map(|l| l + "\n")).collect::<Result<_, _>>()?;
    write_file(out, &text)?;
    say!("{}: {} entries", out.display(), entries.len());
    Ok(())
}

/// `dynsmem db list`: the entries of the database `run` and `bench` would read.
pub fn db_list(files: &[PathBuf], family: Option<&str>) -> anyhow::Result<()> {
    use crate::host::report::{Table, TableStyle};
    let db = TuningDb::load(files)?;
    say!("tuning database: {}", db.sources.join(", "));
    let mut t =
        Table::new(&["family", "device", "backend", "variant", "problem", "objective", "config", "median ms", "image"]);
    for e in db.entries.iter().filter(|e| family.is_none_or(|f| f == e.family)) {
        t.push(vec![
            e.family.clone(),
            e.fingerprint.device.clone(),
            e.fingerprint.backend.to_string(),
            e.variant.clone(),
            crate::host::tune::canonical_json(&e.problem),
            e.objective.clone(),
            e.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "),
            format!("{:.4}", e.median_ms),
            e.fingerprint.image_hash.clone(),
        ]);
    }
    say!("{}", t.render(TableStyle::Text).trim_end());
    Ok(())
}
