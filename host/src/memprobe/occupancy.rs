//! The occupancy explorer: a registry family's bench case at its default config, its
//! launch-sized bytes padded from its own up to the device's opt-in limit, timed at each
//! padding beside the blocks that fit on one multiprocessor. Only launch-time sizing makes
//! this a sweep: the padding is one launch argument, the image is the same.
//!
//! A cliff is a padding where the resident blocks drop; [`ProbeRecord::record`]'s `note`
//! marks it, and the plot draws time and resident blocks against the padded bytes.

use serde_json::json;

use super::{ProbeKind, ProbeOptions, ProbeRecord};
use crate::backend::{Backend, Variant};
use crate::contract::{FamilyBackend, Workload};
use crate::error::{Error, Result};
use crate::family::{DynFamily, Sizes};
use crate::tune::db::TuningDb;

/// The families the explorer takes by default: a reduction (small tiles, many blocks), a
/// row-wise kernel (rows in shared memory) and a GEMM (large tiles).
pub const DEFAULT_FAMILIES: [&str; 3] = ["reduce", "softmax", "sgemm"];

/// Paddings from 0 in steps of `step` bytes while the padded bytes stay within `limit`,
/// and the last padding that reaches the limit exactly.
pub fn paddings(base: u32, limit: u32, step: u32) -> Vec<u32> {
    if base > limit || step == 0 {
        return Vec::new();
    }
    let room = limit - base;
    let mut pads: Vec<u32> = (0..=room / step).map(|i| i * step).collect();
    if pads.last() != Some(&room) {
        pads.push(room);
    }
    pads
}

/// Explores `family`'s first bench case on `backend` (launch-sized variant): a record per
/// padding, `each` seeing each as it is made.
pub fn explore<B: FamilyBackend>(
    backend: &B,
    family: &dyn DynFamily,
    opts: &ProbeOptions,
    step: u32,
    db: Option<&TuningDb>,
    each: &mut dyn FnMut(&ProbeRecord),
) -> Result<Vec<ProbeRecord>> {
    let sizes = Sizes::for_backend(backend, None, opts.quick);
    let case =
        family.bench_cases(backend.erase(), Variant::LaunchSized, &sizes, db).into_iter().next().ok_or_else(|| {
            Error::Unsupported { backend: backend.kind(), what: format!("{}: no bench case", family.name()) }
        })?;
    let work = family.prepare(backend.erase(), &case.problem, &case.config, Variant::LaunchSized, opts.seed)?;
    let base = work.kernel().shared_bytes;
    let limit = backend.info().limits.launch_shared_max;
    let mut records = Vec::new();
    let mut previous: Option<u32> = None;
    for pad in paddings(base, limit, step) {
        backend.set_launch_padding(Some(pad))?;
        let mut rec = measure_padded(backend, family.name(), &*work, opts);
        let main = backend.take_launches().into_iter().max_by_key(|l| l.dims.shared_bytes);
        rec.resident_blocks = main.as_ref().and_then(|l| l.resident_blocks);
        rec.point = json!({
            "family": family.name(),
            "problem": case.problem,
            "config": case.config,
            "kernel": main.as_ref().map(|l| l.kernel.clone()),
            "block": main.as_ref().map(|l| l.dims.block),
            "padding": pad,
            "shared_bytes": base + pad,
        });
        rec.record.problem = rec.point.clone();
        rec.record.shared_bytes = base + pad;
        if let (Some(before), Some(now)) = (previous, rec.resident_blocks)
            && now < before
        {
            rec.record.note = Some(format!("cliff: resident blocks per multiprocessor {before} -> {now}"));
        }
        previous = rec.resident_blocks.or(previous);
        each(&rec);
        records.push(rec);
    }
    backend.set_launch_padding(None)?;
    Ok(records)
}

/// One padded run: checked, then timed (GB/s or TFLOP/s as the family counts them), as the
/// bench measures a config.
fn measure_padded<B: Backend>(backend: &B, family: &str, work: &dyn Workload, opts: &ProbeOptions) -> ProbeRecord {
    let name = format!("probe:occupancy:{family}");
    let (null, prov) = (serde_json::Value::Null, &opts.provenance);
    let rec = crate::bench::workload(
        backend,
        &name,
        Variant::LaunchSized,
        null.clone(),
        null,
        Ok(work),
        (opts.timing, None),
        prov,
        None,
    );
    ProbeRecord::new(ProbeKind::Occupancy, serde_json::Value::Null, rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paddings_end_at_the_limit() {
        assert_eq!(paddings(1000, 10_000, 4096), vec![0, 4096, 8192, 9000]);
        assert_eq!(paddings(0, 8192, 4096), vec![0, 4096, 8192]);
        assert!(paddings(10_001, 10_000, 4096).is_empty());
    }
}
