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

/// One prepared config of any family (see [`Workload`]): checked against its CPU
/// reference, then timed. The figure is GB/s of the bytes the algorithm must move (ratio
/// to a bandwidth anchor), and TFLOP/s where it counts floating-point work.
#[allow(clippy::too_many_arguments)]
pub fn workload<B: Backend, W: Workload>(
    backend: &B,
    family: &str,
    variant: Variant,
    problem: serde_json::Value,
    config: serde_json::Value,
    prepared: Result<W>,
    timing: TimingOptions,
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
        w.run()?;
        w.check()?;
        let (t, warmups) = crate::backend::time(backend, timing, &mut || w.run())?;
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
    timing: TimingOptions,
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
    let mut rec =
        workload(backend, name, variant, case.problem.clone(), case.config.clone(), prepared, timing, prov, anchor);
    if let Some(p) = paired.flatten() {
        rec.set_paired(&p);
    }
    rec.note = case.note.clone();
    rec.config_origin = Some(case.origin.clone());
    (rec, own)
}
