//! Measuring configs into [`Record`]s: the anchor (device-to-device copy) and one
//! function per family. A config that fails to build, launch or verify becomes a record
//! with its error: a sweep or a bench table never stops at one bad config.

use serde_json::json;

use crate::backend::Backend;
use crate::backend::Variant;
use crate::contract::{FamilyBackend, Workload};
use crate::error::Result;
use crate::family::{DynFamily, Resolved};
use crate::measure::{self, TimingOptions};
use crate::report::{Provenance, Record};

/// Device-to-device copy of `bytes` bytes: the bandwidth every bandwidth-bound family is
/// compared with. Its figure counts bytes read plus bytes written (`2 * bytes`).
pub fn copy_anchor<B: Backend>(backend: &B, bytes: u64, timing: TimingOptions, prov: &Provenance) -> Record {
    let mut rec = Record::new("copy", "anchor", "device-to-device copy", backend.info(), prov);
    rec.problem = json!({ "bytes": bytes });
    rec.timer = crate::backend::timer_label(backend, &timing);
    rec.warmup = timing.warmup;
    let result = (|| -> Result<_> {
        // Source and destination on the device; the source and the read-back on the host.
        crate::contract::check_footprint(
            backend,
            "device-to-device copy",
            bytes.saturating_mul(2),
            bytes.saturating_mul(2),
        )?;
        let words = (bytes / 4) as usize;
        let src = backend.htod(&(0..words as u32).collect::<Vec<u32>>())?;
        let mut dst = backend.alloc::<u32>(words)?;
        let t = crate::backend::time(backend, timing, &mut || backend.copy(&src, &mut dst))?;
        // Spot-check the copy, so the anchor is a real copy and not an empty launch.
        let back = backend.dtoh(&dst)?;
        let ok = back.iter().enumerate().step_by((words / 4096).max(1)).all(|(i, &v)| v == i as u32);
        Ok((t, ok))
    })();
    match result {
        Ok(((t, warmups), ok)) => {
            rec.warmup = warmups;
            rec.bytes = Some(2 * bytes);
            rec.gbps = (bytes > 0).then(|| measure::gbps(2 * bytes, t.median_ms));
            rec.set_timing(t);
            rec.verified = ok;
            if !ok {
                rec.error = Some("copied data differs from the source".into());
                rec.wrong_result = true;
            }
        }
        Err(e) => rec.set_error(&e),
    }
    rec
}

/// The timing of one measurement within `budget_ms` of device time (`None`: `timing` as
/// given), from the wall time of one run (`run_ms`, the verifying run): where `timing`'s
/// warm-up and timed runs would take longer, no warm-up (the verifying run has just woken the
/// device, and a run of `warmup_ms` or more needs no other), as many timed runs as fit, at
/// least [`MIN_BUDGET_REPEATS`], and no energy window. The median of fewer runs of a long
/// kernel is as tight as that of 20 short ones: its runs average over more time each.
pub fn within_budget(timing: TimingOptions, budget_ms: Option<f64>, run_ms: f64) -> TimingOptions {
    let Some(budget) = budget_ms else { return timing };
    let runs = (timing.warmup + timing.repeats) as f64;
    let warm_up_ms = (timing.warmup as f64 * run_ms).max(timing.warmup_ms);
    if runs * run_ms + warm_up_ms + timing.energy_ms <= budget {
        return timing;
    }
    let repeats =
        ((budget / run_ms.max(1e-9)).floor() as u32).clamp(MIN_BUDGET_REPEATS.min(timing.repeats), timing.repeats);
    let warm = run_ms < timing.warmup_ms;
    TimingOptions {
        warmup: if warm { timing.warmup } else { 0 },
        warmup_ms: if warm { timing.warmup_ms } else { 0.0 },
        repeats,
        energy_ms: 0.0,
        ..timing
    }
}

/// Fewest timed runs a budget leaves a measurement ([`within_budget`]).
pub const MIN_BUDGET_REPEATS: u32 = 5;

/// One prepared config of any family (see [`Workload`]): checked against its CPU
/// reference, then timed (within `budget_ms` of device time where given: [`within_budget`]).
/// The figure is GB/s of the bytes the algorithm must move (ratio to a bandwidth anchor),
/// and TFLOP/s where it counts floating-point work.
#[allow(clippy::too_many_arguments)]
pub fn workload<B: Backend, W: Workload>(
    backend: &B,
    family: &str,
    variant: Variant,
    problem: serde_json::Value,
    config: serde_json::Value,
    prepared: Result<W>,
    (timing, budget_ms): (TimingOptions, Option<f64>),
    prov: &Provenance,
    anchor: Option<&Record>,
) -> Record {
    let mut rec = Record::new(family, variant.name(), family, backend.info(), prov);
    rec.problem = problem;
    rec.config = config;
    rec.timer = crate::backend::timer_label(backend, &timing);
    let result = prepared.and_then(|w| {
        let k = w.kernel();
        rec.kernel = k.name;
        rec.shared_bytes = k.shared_bytes;
        rec.static_shared_bytes = k.static_shared_bytes;
        let started = std::time::Instant::now();
        w.run()?;
        backend.synchronize()?;
        let run_ms = started.elapsed().as_secs_f64() * 1e3;
        w.check()?;
        let (t, warmups) = crate::backend::time(backend, within_budget(timing, budget_ms, run_ms), &mut || w.run())?;
        Ok((t, warmups, w.bytes(), w.flops()))
    });
    match result {
        Ok((t, warmups, bytes, flops)) => rec.set_measured(t, warmups, bytes, flops, anchor),
        Err(e) => rec.set_error(&e),
    }
    rec
}

/// One config of a registry family measured into a record: `prepared` (by
/// [`DynFamily::prepare`]; a refusal becomes the record's error) verified, then timed. Its anchor, in order: the
/// workload's own vendor anchor (cuBLAS beside SGEMM on CUDA; returned too, as a record of
/// its own) unless `vendor` already holds a verified one for the same family and problem
/// (measured earlier in the run: cuBLAS beside the launch-sized row anchors the
/// cuda-static and WGSL rows of the same problem), else `copy` (the backend's
/// device-to-device copy) for families with copy bytes. Where its own vendor anchor also
/// timed the two interleaved (HGEMM), the row's ratio is that median
/// ([`Record::set_paired`]).
#[allow(clippy::too_many_arguments)]
pub fn family<'b, B: FamilyBackend>(
    backend: &'b B,
    family: &dyn DynFamily,
    case: &Resolved,
    variant: Variant,
    prepared: Result<Box<dyn Workload + 'b>>,
    (timing, budget_ms): (TimingOptions, Option<f64>),
    prov: &Provenance,
    seed: u64,
    copy: Option<&Record>,
    vendor: &[Record],
) -> (Record, Option<Record>) {
    let name = family.name();
    let measured =
        |a: &&Record| a.family == name && a.error.is_none() && a.tflops.is_some() && a.problem == case.problem;
    let earlier = vendor.iter().find(measured);
    // A vendor anchor measured earlier in the run for the same problem (the launch-sized
    // row's cuBLAS, for the cuda-static row after it) anchors this row too.
    let (own, paired) = prepared
        .as_ref()
        .ok()
        .filter(|_| earlier.is_none())
        .and_then(|w| {
            let a = w.vendor_anchor(timing, seed)?;
            let mut rec = Record::new(name, "anchor", a.name, backend.info(), prov);
            rec.problem = case.problem.clone();
            rec.timer = crate::backend::timer_label(backend, &timing);
            match a.result {
                Ok((t, warmups)) => rec.set_measured(t, warmups, 0, w.flops(), None),
                Err(e) => rec.set_error(&e),
            }
            Some((rec, a.paired))
        })
        .unzip();
    let anchor = match (&own, family.anchor_bytes(&case.problem)) {
        (Some(a), _) => Some(a),
        (None, Ok(Some(_))) => copy,
        _ => earlier,
    };
    let mut rec = workload(
        backend,
        name,
        variant,
        case.problem.clone(),
        case.config.clone(),
        prepared,
        (timing, budget_ms),
        prov,
        anchor,
    );
    if let Some(p) = paired.flatten() {
        rec.set_paired(&p);
    }
    rec.note = case.note.clone();
    rec.config_origin = Some(case.origin.clone());
    (rec, own)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A short run keeps the options as given; a run past the budget gets no warm-up, as many
    /// timed runs as fit (at least five) and no energy window.
    #[test]
    fn a_long_run_is_timed_fewer_times() {
        let t = TimingOptions { warmup: 3, warmup_ms: 200.0, repeats: 20, energy_ms: 250.0, back_to_back: true };
        assert_eq!(within_budget(t, None, 5000.0), t);
        assert_eq!(within_budget(t, Some(2000.0), 0.5), t, "0.5 ms runs fit");
        let long = within_budget(t, Some(2000.0), 250.0);
        assert_eq!((long.warmup, long.warmup_ms, long.repeats, long.energy_ms), (0, 0.0, 8, 0.0));
        let longer = within_budget(t, Some(2000.0), 3000.0);
        assert_eq!(longer.repeats, MIN_BUDGET_REPEATS);
        let mid = within_budget(t, Some(2000.0), 80.0);
        assert_eq!((mid.warmup, mid.warmup_ms, mid.repeats), (3, 200.0, 20), "shorter than the warm-up time: warmed");
        assert_eq!(mid.energy_ms, 0.0);
    }
}
