//! Measuring configs into [`Record`]s: the anchor (device-to-device copy) and one
//! function per family. A config that fails to build, launch or verify becomes a record
//! with its error: a sweep or a bench table never stops at one bad config.

use serde_json::json;

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::kernels::reduce::{ReduceConfig, ReduceElement, ReduceKernels, ReducePlan, ReduceProblem};
use crate::kernels::{Variant, Workload};
use crate::measure::{self, TimingOptions};
use crate::report::{Provenance, Record};

/// Device-to-device copy of `bytes` bytes: the bandwidth every bandwidth-bound family is
/// compared with. Its figure counts bytes read plus bytes written (`2 * bytes`).
pub fn copy_anchor<B: Backend>(backend: &B, bytes: u64, timing: TimingOptions, prov: &Provenance) -> Record {
    let mut rec = Record::new("copy", "anchor", "device-to-device copy", backend.info(), prov);
    rec.problem = json!({ "bytes": bytes });
    rec.timer = backend.timer_name().into();
    rec.warmup = timing.warmup;
    let result = (|| -> Result<_> {
        // Source and destination on the device; the source and the read-back on the host.
        crate::kernels::check_footprint(
            backend,
            "device-to-device copy",
            bytes.saturating_mul(2),
            bytes.saturating_mul(2),
        )?;
        let words = (bytes / 4) as usize;
        let src = backend.htod(&(0..words as u32).collect::<Vec<u32>>())?;
        let mut dst = backend.alloc::<u32>(words)?;
        let t = measure::time(backend, timing, &mut || backend.copy(&src, &mut dst))?;
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
            set_timing(&mut rec, t);
            rec.verified = ok;
            if !ok {
                rec.error = Some("copied data differs from the source".into());
            }
        }
        Err(e) => rec.error = Some(e.to_string()),
    }
    rec
}

/// One reduce config over `data`: verify the result against the CPU reference, then time
/// the whole reduce (every pass). The figure is the bytes of input read over the time.
#[allow(clippy::too_many_arguments)]
pub fn reduce<B: ReduceKernels, T: ReduceElement>(
    backend: &B,
    data: &[T],
    problem: ReduceProblem,
    config: ReduceConfig,
    variant: Variant,
    timing: TimingOptions,
    prov: &Provenance,
    anchor: Option<&Record>,
) -> Record {
    let kernel = crate::kernels::reduce::entry_name(problem.op, problem.dtype, config.staged);
    let mut rec = Record::new("reduce", variant.name(), kernel, backend.info(), prov);
    rec.problem = serde_json::to_value(problem).expect("serializable");
    rec.config = serde_json::to_value(config).expect("serializable");
    rec.timer = backend.timer_name().into();
    rec.warmup = timing.warmup;
    if let Some(a) = anchor {
        set_anchor(&mut rec, a);
    }
    let result = (|| -> Result<_> {
        if data.len() as u64 != problem.n || T::DTYPE != problem.dtype {
            return Err(Error::InvalidProblem {
                kernel: kernel.into(),
                reason: format!("{} elements of {} for {problem:?}", data.len(), T::DTYPE.name()),
            });
        }
        let plan = ReducePlan::new(backend, problem, config, variant)?;
        let input = backend.htod(data)?;
        let partials = plan.alloc_partials::<T>()?;
        let out = plan.launch(&input, &partials)?;
        let got = backend.dtoh(out)?[0];
        plan.verify(data, got)?;
        let (t, warmups) = measure::time(backend, timing, &mut || plan.launch(&input, &partials).map(|_| ()))?;
        Ok((plan.kernel_name().to_string(), plan.shared_bytes, plan.static_shared_bytes, t, warmups))
    })();
    match result {
        Ok((name, shared, static_bytes, t, warmups)) => {
            rec.warmup = warmups;
            let bytes = problem.n * size_of::<T>() as u64;
            rec.kernel = name;
            rec.shared_bytes = shared;
            rec.static_shared_bytes = static_bytes;
            rec.verified = true;
            rec.bytes = Some(bytes);
            rec.gbps = (bytes > 0).then(|| measure::gbps(bytes, t.median_ms));
            rec.ratio = rec.gbps.zip(rec.anchor_gbps).map(|(g, a)| g / a);
            set_timing(&mut rec, t);
        }
        Err(e) => {
            if let Ok(b) = backend.reduce_launch_bytes(problem.dtype, &config, variant) {
                rec.shared_bytes = b;
            }
            if let Ok(b) = backend.reduce_static_bytes(problem.dtype, &config, variant) {
                rec.static_shared_bytes = b;
            }
            rec.error = Some(e.to_string());
        }
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
    rec.timer = backend.timer_name().into();
    let result = prepared.and_then(|w| {
        let k = w.kernel();
        rec.kernel = k.name;
        rec.shared_bytes = k.shared_bytes;
        rec.static_shared_bytes = k.static_shared_bytes;
        w.run()?;
        w.check()?;
        let (t, warmups) = measure::time(backend, timing, &mut || w.run())?;
        Ok((t, warmups, w.bytes(), w.flops()))
    });
    match result {
        Ok((t, warmups, bytes, flops)) => set_measured(&mut rec, t, warmups, bytes, flops, anchor),
        Err(e) => rec.error = Some(e.to_string()),
    }
    rec
}

/// Fills a verified record's measurement: its timing, GB/s where it moves `bytes`, TFLOP/s
/// where it does `flops`, and the ratio to `anchor` (by GB/s, or by TFLOP/s when the anchor
/// has those).
pub(crate) fn set_measured(
    rec: &mut Record,
    t: measure::Timing,
    warmups: u32,
    bytes: u64,
    flops: f64,
    anchor: Option<&Record>,
) {
    rec.verified = true;
    rec.warmup = warmups;
    if bytes > 0 {
        rec.bytes = Some(bytes);
        rec.gbps = Some(measure::gbps(bytes, t.median_ms));
        if let Some(a) = anchor {
            set_anchor(rec, a);
            rec.ratio = rec.gbps.zip(a.gbps).map(|(g, a)| g / a);
        }
    }
    if flops > 0.0 {
        rec.tflops = Some(flops / (t.median_ms * 1e-3) / 1e12);
        if let Some(a) = anchor.filter(|a| a.tflops.is_some()) {
            set_anchor(rec, a);
            rec.ratio = rec.tflops.zip(a.tflops).map(|(t, a)| t / a);
        }
    }
    set_timing(rec, t);
}

/// The median, spread and raw times of a measured record.
fn set_timing(rec: &mut Record, t: measure::Timing) {
    rec.median_ms = Some(t.median_ms);
    rec.min_ms = Some(t.min_ms);
    rec.max_ms = Some(t.max_ms);
    rec.times_ms = t.times_ms;
}

/// Names the anchor a record is compared with and carries its figure.
fn set_anchor(rec: &mut Record, anchor: &Record) {
    rec.anchor = Some(format!("{} {}", anchor.backend, anchor.kernel));
    rec.anchor_gbps = anchor.gbps;
    rec.anchor_tflops = anchor.tflops;
}

/// A GEMM on CUDA beside cuBLAS on the same inputs: cuBLAS's result is compared with ours
/// over all of `C` (the CPU reference checks a sample of it for large shapes), then both
/// are timed; the record's ratio is ours over cuBLAS's TFLOP/s. Returns our record and
/// cuBLAS's (none when ours could not be prepared).
#[allow(clippy::too_many_arguments)]
pub fn sgemm_cuda(
    backend: &crate::backend::cuda::CudaBackend,
    problem: crate::kernels::sgemm::SgemmProblem,
    config: dynsmem_kernels::sgemm::SgemmConfig,
    fixed: bool,
    timing: TimingOptions,
    prov: &Provenance,
    seed: u64,
) -> (Record, Option<Record>) {
    use crate::kernels::sgemm;
    let prepared = sgemm::prepare(backend, problem, config, fixed, Variant::LaunchSized, seed);
    let anchor = match &prepared {
        Ok(w) if !problem.f16_inputs => {
            let mut rec = Record::new("sgemm", "anchor", "cublasSgemm", backend.info(), prov);
            rec.problem = json(&problem);
            rec.timer = backend.timer_name().into();
            let flops = 2.0 * problem.m as f64 * problem.n as f64 * problem.k as f64;
            match w.result_from_initial().and_then(|ours| sgemm::cublas::anchor(backend, w, &ours, seed, timing)) {
                Ok(r) => set_measured(&mut rec, r.timing, r.warmup, 0, flops, None),
                Err(e) => rec.error = Some(e.to_string()),
            }
            Some(rec)
        }
        _ => None,
    };
    let rec = workload(
        backend,
        "sgemm",
        Variant::LaunchSized,
        json(&problem),
        json(&config),
        prepared,
        timing,
        prov,
        anchor.as_ref(),
    );
    (rec, anchor)
}

/// A problem or config as it goes into a record (they always serialize).
fn json<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}
