//! `dynsmem probe`: the memory probes and the occupancy explorer on each backend asked for
//! (`dynsmem_host::memprobe`), their records appended as they are made (points already in
//! the file skipped), a table per probe, the comparison with published figures, the plots.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::host::backend::{BackendKind, Probe};
use crate::host::contract::FamilyBackend;
use crate::host::memprobe::{self, ProbeKind, ProbeOptions, ProbeRecord, occupancy, published};
use crate::host::report::{JsonlWriter, Table, TableStyle, parse_jsonl_as};
use crate::host::tune::db::TuningDb;
use anyhow::{Context, bail};

use super::emit;

pub struct ProbeArgs {
    pub probes: Vec<ProbeKind>,
    pub backends: Vec<BackendKind>,
    pub families: Vec<String>,
    pub step: u32,
    pub quick: bool,
    pub json: Option<PathBuf>,
    pub style: TableStyle,
    pub plots: Option<PathBuf>,
    pub seed: u64,
    pub db: Option<TuningDb>,
    pub command: String,
}

/// The probe records a file already holds (none when it does not exist). Lines of other
/// records (a bench's) are left alone.
fn earlier(path: Option<&Path>) -> anyhow::Result<Vec<ProbeRecord>> {
    let Some(path) = path.filter(|p| p.exists()) else { return Ok(Vec::new()) };
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let (lines, _torn) = parse_jsonl_as::<serde_json::Value>(&bytes, path)?;
    Ok(lines.into_iter().filter_map(|v| serde_json::from_value::<ProbeRecord>(v).ok()).collect())
}

/// One line of progress.
fn progress(r: &ProbeRecord) -> String {
    let fig = [
        r.cycles.map(|c| format!("{c:.1} cycles")),
        r.ns.map(|n| format!("{n:.1} ns")),
        r.record.gbps.map(|g| format!("{g:.1} GB/s")),
        r.gops.map(|g| format!("{g:.2} GOP/s")),
        r.resident_blocks.map(|b| format!("{b} blocks/SM")),
    ];
    let fig: Vec<String> = fig.into_iter().flatten().collect();
    let what = r.record.error.clone().unwrap_or_else(|| fig.join(", "));
    format!("{} {} {} {}: {what}", r.record.backend, r.record.variant, r.probe, r.point)
}

/// The explorer's families, checked against the registry.
fn families(names: &[String]) -> anyhow::Result<Vec<&'static dyn crate::host::family::DynFamily>> {
    let names: Vec<String> = if names.is_empty() {
        occupancy::DEFAULT_FAMILIES.iter().map(|s| s.to_string()).collect()
    } else {
        names.to_vec()
    };
    names
        .iter()
        .map(|n| {
            crate::families().iter().copied().find(|f| f.name() == n).with_context(|| {
                let all: Vec<&str> = crate::families().iter().map(|f| f.name()).collect();
                format!("--family: no family `{n}` (families: {})", all.join(", "))
            })
        })
        .collect()
}

/// Everything asked for on one backend.
fn on_backend<B: FamilyBackend>(
    b: &B,
    args: &ProbeArgs,
    done: &HashSet<String>,
    each: &mut dyn FnMut(&ProbeRecord),
) -> anyhow::Result<Vec<ProbeRecord>> {
    let kinds: Vec<ProbeKind> = if args.probes.is_empty() {
        ProbeKind::ALL.iter().copied().chain([ProbeKind::Occupancy]).collect()
    } else {
        args.probes.clone()
    };
    let opts = ProbeOptions {
        timing: ProbeOptions::timing(),
        quick: args.quick || b.info().is_cpu,
        seed: args.seed,
        provenance: crate::provenance(b.kind(), &args.command),
    };
    let mut records = memprobe::run(b, &kinds, &opts, done, each);
    // The explorer pads launch-sized memory: CUDA and the CPU backend (for its checks).
    if kinds.contains(&ProbeKind::Occupancy) && matches!(b.kind(), BackendKind::Cuda | BackendKind::Cpu) {
        for family in families(&args.families)? {
            match occupancy::explore(b, family, &opts, args.step, args.db.as_ref(), each) {
                Ok(r) => records.extend(r),
                Err(e) => eprintln!("occupancy {}: {e}", family.name()),
            }
        }
    }
    Ok(records)
}

/// The table of `records` of one probe.
fn table(kind: ProbeKind, records: &[&ProbeRecord], style: TableStyle) -> String {
    let mut t = Table::new(&["point", "backend", "variant", "cycles", "ns", "GB/s", "GOP/s", "blocks/SM", "result"]);
    let f = |v: Option<f64>, digits: usize| v.map(|x| format!("{x:.digits$}")).unwrap_or_else(|| "-".into());
    for r in records {
        let point = match &r.point {
            serde_json::Value::Object(m) => m
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "problem" | "config"))
                .map(|(k, v)| format!("{k}={}", v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())))
                .collect::<Vec<_>>()
                .join(" "),
            other => other.to_string(),
        };
        t.push(vec![
            point,
            r.record.backend.to_string(),
            r.record.variant.clone(),
            f(r.cycles, 1),
            f(r.ns, 1),
            f(r.record.gbps, 1),
            f(r.gops, 2),
            match (r.resident_blocks, r.active_clusters) {
                // Clusters matter only to the entries launched in clusters.
                (Some(b), Some(c)) if matches!(kind, ProbeKind::DsmemLatency | ProbeKind::DsmemBandwidth) => {
                    format!("{b} ({c} clusters at once)")
                }
                (Some(b), _) => b.to_string(),
                (None, _) => "-".into(),
            },
            match (&r.record.error, &r.record.note) {
                (Some(e), _) => format!("ERROR: {e}"),
                (None, Some(n)) => format!("ok; {n}"),
                (None, None) => "ok".into(),
            },
        ]);
    }
    format!("{kind} ({})\n{}", kind.cycles_unit(), t.render(style))
}

pub fn probe(args: ProbeArgs) -> anyhow::Result<()> {
    if args.step == 0 {
        bail!("--step 0: the occupancy explorer's padding step must be at least 1 byte");
    }
    families(&args.families)?;
    let kept = earlier(args.json.as_deref())?;
    let done: HashSet<String> = kept.iter().filter(|r| r.record.error.is_none()).map(ProbeRecord::key).collect();
    let mut out = match &args.json {
        Some(path) => Some(JsonlWriter::append(path).with_context(|| format!("--json {}", path.display()))?),
        None => None,
    };
    let mut write_error: Option<anyhow::Error> = None;
    let mut each = |r: &ProbeRecord| {
        eprintln!("... {}", progress(r));
        if let (Some(w), None) = (out.as_mut(), &write_error)
            && let Err(e) = w.write(r)
        {
            write_error = Some(e.into());
        }
    };
    let mut records = Vec::new();
    let mut rust_gpu = false;
    for (row, probe) in crate::backends(&args.backends) {
        if row.kind == BackendKind::Cpu && !crate::runs_cpu(&args.backends, rust_gpu) {
            continue;
        }
        match probe {
            Probe::Ready(b) => {
                rust_gpu |= row.rust_gpu;
                crate::host::with_backend!(b.erase(), b => {
                    emit(format_args!("{}", crate::suite::describe(b)))?;
                    records.extend(on_backend(b, &args, &done, &mut each)?);
                })
            }
            Probe::Unavailable(k, why) => emit(format_args!("{k}: unavailable: {why}"))?,
        }
    }
    if let Some(e) = write_error {
        return Err(e.context("appending probe records"));
    }
    // The tables and plots show the file's earlier points too (a resumed run is whole).
    // Of records of one point (a refused point is tried again on resume) the last counts.
    let mut all: Vec<ProbeRecord> = Vec::new();
    for r in kept.into_iter().chain(records.iter().cloned()) {
        all.retain(|a| a.key() != r.key());
        all.push(r);
    }
    let mut kinds: Vec<ProbeKind> = all.iter().map(|r| r.probe).collect();
    kinds.sort();
    kinds.dedup();
    for kind in kinds {
        let of: Vec<&ProbeRecord> = all.iter().filter(|r| r.probe == kind).collect();
        emit(format_args!("\n{}", table(kind, &of, args.style).trim_end()))?;
    }
    emit(format_args!("\nBeside published figures:\n{}", published::comparison(&all, args.style).trim_end()))?;
    if let Some(dir) = &args.plots {
        let paths = memprobe::plot::write(&all, dir).with_context(|| format!("--plots {}", dir.display()))?;
        emit(format_args!("\n{} plots written to {}", paths.len(), dir.display()))?;
    }
    if records.is_empty() && all.is_empty() {
        bail!("nothing was measured");
    }
    let wrong: Vec<String> =
        records.iter().filter(|r| r.record.wrong_result).map(|r| format!("{} {}", r.probe, r.point)).collect();
    if !wrong.is_empty() {
        bail!("{} probe record(s) failed verification: {}", wrong.len(), wrong.join("; "));
    }
    Ok(())
}
