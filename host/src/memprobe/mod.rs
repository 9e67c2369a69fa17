//! Memory probes (`dynsmem probe`): what the shared-memory texts state as folklore —
//! workgroup-memory latency and bank structure, distributed shared memory, device-memory
//! latency by working set and bandwidth by width and cache hint, atomics by contention,
//! fences by scope — measured on the device at hand, with launch-sized memory; and the
//! occupancy explorer ([`occupancy`]), which pads a family's launch-sized bytes and times it
//! against the blocks that still fit on a multiprocessor.
//!
//! Each probe is a kernel of `dynsmem_kernels::memprobe` launched through the contract's
//! [`Launch`] and checked like every kernel (the chase's last index, the sums of what was
//! read, the atomics' final words against a host simulation). Its figure comes from the
//! device clock the kernel reads ([`ProbeRecord::cycles`]) and from device time (GB/s,
//! operations per second, nanoseconds per step). Workgroup-memory latency and stride have
//! WGSL twins (`shared_chase.wgsl`, `shared_stride.wgsl`), timed by timestamps only.

mod atomics;
mod cluster;
mod global;
pub mod occupancy;
pub mod plot;
pub mod published;
mod shared;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::backend::{Backend, Variant};
use crate::contract::{FamilyBackend, Launch, Workload};
use crate::error::{Error, Result};
use crate::measure::TimingOptions;
use crate::report::{Provenance, Record};
use dynsmem_kernels::memprobe::TIMING_WORDS;

/// One probe: a question and the sweep that answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeKind {
    /// Workgroup-memory latency: a pointer chase over rings up to the opt-in limit.
    SharedLatency,
    /// Workgroup-memory throughput against the stride between lanes (bank conflicts).
    SharedStride,
    /// Workgroup-memory throughput against the access width (1 to 16 bytes) and block size.
    SharedWidth,
    /// Latency to a peer block's shared memory in a cluster of 2 and of 4 (sm_90).
    DsmemLatency,
    /// Bandwidth from a peer block's shared memory in clusters of 2 and 4 (sm_90).
    DsmemBandwidth,
    /// Device-memory latency against working-set size (L1, L2, DRAM), by cache hint.
    GlobalLatency,
    /// Device-memory read bandwidth by load width and cache hint.
    GlobalBandwidth,
    /// Add, min and compare-and-swap in workgroup and device memory, by contention.
    Atomics,
    /// A store then a fence, by the fence's scope.
    Fences,
    /// The occupancy explorer ([`occupancy`]): families' launch-sized bytes padded to the
    /// opt-in limit, time against resident blocks per multiprocessor.
    Occupancy,
}

impl ProbeKind {
    pub const ALL: [ProbeKind; 9] = [
        ProbeKind::SharedLatency,
        ProbeKind::SharedStride,
        ProbeKind::SharedWidth,
        ProbeKind::DsmemLatency,
        ProbeKind::DsmemBandwidth,
        ProbeKind::GlobalLatency,
        ProbeKind::GlobalBandwidth,
        ProbeKind::Atomics,
        ProbeKind::Fences,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ProbeKind::SharedLatency => "shared-latency",
            ProbeKind::SharedStride => "shared-stride",
            ProbeKind::SharedWidth => "shared-width",
            ProbeKind::DsmemLatency => "dsmem-latency",
            ProbeKind::DsmemBandwidth => "dsmem-bandwidth",
            ProbeKind::GlobalLatency => "global-latency",
            ProbeKind::GlobalBandwidth => "global-bandwidth",
            ProbeKind::Atomics => "atomics",
            ProbeKind::Fences => "fences",
            ProbeKind::Occupancy => "occupancy",
        }
    }

    /// What [`ProbeRecord::cycles`] counts for this probe.
    pub fn cycles_unit(self) -> &'static str {
        match self {
            ProbeKind::SharedLatency | ProbeKind::DsmemLatency | ProbeKind::GlobalLatency => {
                "cycles per dependent load"
            }
            ProbeKind::SharedStride | ProbeKind::SharedWidth | ProbeKind::DsmemBandwidth => {
                "cycles per warp request (per multiprocessor)"
            }
            ProbeKind::GlobalBandwidth | ProbeKind::Occupancy => "-",
            ProbeKind::Atomics => "cycles per operation of a thread",
            ProbeKind::Fences => "cycles per store + fence of a thread",
        }
    }
}

impl std::fmt::Display for ProbeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One measured (or refused) probe point: the common record (device, provenance, times,
/// GB/s, verified, error) and what the probe adds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeRecord {
    pub probe: ProbeKind,
    /// The swept values of this point (e.g. `{"stride": 4, "width": 4, "block": 1024}`).
    pub point: Value,
    /// Device-clock cycles per unit of [`ProbeKind::cycles_unit`] (SM cycles on NVIDIA;
    /// on the CPU backend nanoseconds; absent on WGSL, which has no clock).
    pub cycles: Option<f64>,
    /// Nanoseconds per dependent step from device time (chases: includes the launch and
    /// the ring's copy, a small share at the default steps).
    pub ns: Option<f64>,
    /// Billions of operations per second (atomics, fences), from device time.
    pub gops: Option<f64>,
    /// Blocks resident per multiprocessor at this point's launch (the driver's occupancy
    /// calculator; CUDA).
    pub resident_blocks: Option<u32>,
    /// Clusters active at once on the device, for a launch in clusters (CUDA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_clusters: Option<u32>,
    #[serde(flatten)]
    pub record: Record,
}

impl ProbeRecord {
    /// A record of `probe` at `point` with nothing measured yet.
    pub fn new(probe: ProbeKind, point: Value, record: Record) -> ProbeRecord {
        ProbeRecord {
            probe,
            point,
            cycles: None,
            ns: None,
            gops: None,
            resident_blocks: None,
            active_clusters: None,
            record,
        }
    }
}

/// What a sweep runs at: the timing, small sizes, the provenance of its records.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    pub timing: TimingOptions,
    /// Small sweeps and sizes (the CPU backend, CPU Vulkan adapters, quick checks): the
    /// figures are not the device's.
    pub quick: bool,
    /// Seed of the rings the chases follow.
    pub seed: u64,
    pub provenance: Provenance,
}

impl ProbeOptions {
    /// Timing for probes: a few warm-up runs, the median of seven.
    pub fn timing() -> TimingOptions {
        TimingOptions { warmup: 2, warmup_ms: 0.0, repeats: 7, ..TimingOptions::default() }
    }
}

/// How a point's per-block cycle counts become its figure.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cycles {
    /// No cycle figure (device time says it all).
    None,
    /// Block 0's count over `per` (a chase: one thread of one block).
    Block0 { per: f64 },
    /// The median over blocks over `per` (a loop every thread runs).
    Median { per: f64 },
}

/// One point of a probe, ready to measure.
pub(crate) struct Point<'b, B: Backend> {
    pub probe: ProbeKind,
    pub variant: Variant,
    pub point: Value,
    /// The launch; its timing buffer is the output at `timing_output`.
    pub launch: Result<Launch<'b, B>>,
    pub timing_output: usize,
    pub cycles: Cycles,
    /// Dependent steps of one run (chases): nanoseconds per step from device time.
    pub steps: Option<u64>,
    /// Bytes one run delivers to the threads (GB/s), operations one run makes (GOP/s).
    pub bytes: u64,
    pub ops: u64,
}

/// The per-block cycle counts of a timing buffer (`TIMING_WORDS` words per block).
pub(crate) fn block_cycles(timing: &[u32]) -> Vec<u64> {
    timing.as_chunks::<{ TIMING_WORDS as usize }>().0.iter().map(|w| w[0] as u64 | (w[1] as u64) << 32).collect()
}

/// Checks the result word of each of the first `blocks` blocks of a timing buffer against
/// `expected` (a chase's last index).
pub(crate) fn check_results(kernel: &str, timing: &[u32], expected: &[u32]) -> Result<()> {
    let got: Vec<u32> =
        timing.as_chunks::<{ TIMING_WORDS as usize }>().0.iter().take(expected.len()).map(|w| w[2]).collect();
    let expected: Vec<f64> = expected.iter().map(|&v| v as f64).collect();
    crate::verify::check_slice(kernel, &expected, &got, |_| 1.0, crate::verify::Tolerance::EXACT)?;
    Ok(())
}

/// Runs, checks and times one point into its record. A refusal or a wrong result is the
/// record's error: a sweep goes on.
pub(crate) fn measure<B: Backend>(backend: &B, p: Point<'_, B>, opts: &ProbeOptions) -> ProbeRecord {
    let mut rec =
        Record::new(&format!("probe:{}", p.probe), p.variant.name(), p.probe.name(), backend.info(), &opts.provenance);
    rec.problem = p.point.clone();
    rec.timer = crate::backend::timer_label(backend, &opts.timing);
    let mut out = ProbeRecord::new(p.probe, p.point, rec);
    // The launch log gives the occupancy of the point's launch (padding 0: nothing added);
    // a backend without launch-sized memory (WGSL) keeps none.
    let logged = backend.set_launch_padding(Some(0)).is_ok();
    let result = p.launch.and_then(|launch| {
        let k = launch.kernel();
        out.record.kernel = k.name;
        out.record.shared_bytes = k.shared_bytes;
        out.record.static_shared_bytes = k.static_shared_bytes;
        launch.run()?;
        launch.check()?;
        let (t, warmups) = crate::backend::time(backend, opts.timing, &mut || launch.run())?;
        let timing = launch.output_values::<u32>(p.timing_output)?;
        Ok((t, warmups, block_cycles(&timing)))
    });
    if logged {
        let seen = backend.take_launches().into_iter().max_by_key(|l| l.dims.shared_bytes);
        out.resident_blocks = seen.as_ref().and_then(|l| l.resident_blocks);
        out.active_clusters = seen.and_then(|l| l.active_clusters);
        let _ = backend.set_launch_padding(None);
    }
    match result {
        Ok((t, warmups, blocks)) => {
            let ms = t.median_ms;
            out.record.set_measured(t, warmups, p.bytes, 0.0, None);
            // A WGSL twin has no clock: its blocks record 0 cycles.
            out.cycles = match p.cycles {
                Cycles::None => None,
                Cycles::Block0 { per } => blocks.first().filter(|&&c| c > 0).map(|&c| c as f64 / per),
                Cycles::Median { per } => {
                    let mut c: Vec<f64> = blocks.iter().filter(|&&c| c > 0).map(|&c| c as f64).collect();
                    c.sort_by(f64::total_cmp);
                    (!c.is_empty()).then(|| crate::stats::median_sorted(&c) / per)
                }
            };
            out.ns = p.steps.filter(|&s| s > 0).map(|s| ms * 1e6 / s as f64);
            out.gops = (p.ops > 0 && ms > 0.0).then(|| p.ops as f64 / (ms * 1e6));
        }
        Err(e) => out.record.set_error(&e),
    }
    out
}

/// What identifies a measured point across runs: device, probe, variant and point.
pub fn key(device: &str, probe: ProbeKind, variant: &str, point: &Value) -> String {
    format!("{device}|{probe}|{variant}|{point}")
}

impl ProbeRecord {
    /// This record's [`key`].
    pub fn key(&self) -> String {
        key(&self.record.device, self.probe, &self.record.variant, &self.point)
    }
}

/// Every point of `kinds` on `backend`, measured in order; `each` sees each record as it
/// is made (progress, appending to a file). A point whose [`key`] is in `done` (measured
/// by an earlier, interrupted run) is skipped. A probe the backend cannot run (clusters
/// off sm_90, WGSL without a twin) gives records with the reason.
pub fn run<B: FamilyBackend>(
    backend: &B,
    kinds: &[ProbeKind],
    opts: &ProbeOptions,
    done: &std::collections::HashSet<String>,
    each: &mut dyn FnMut(&ProbeRecord),
) -> Vec<ProbeRecord> {
    let mut records = Vec::new();
    for &kind in kinds {
        for variant in probe_variants(backend, kind) {
            let points: shared::Points<'_, B> = match kind {
                ProbeKind::SharedLatency => shared::latency(backend, variant, opts),
                ProbeKind::SharedStride => shared::stride(backend, variant, opts),
                ProbeKind::SharedWidth => shared::width(backend, variant, opts),
                ProbeKind::DsmemLatency => cluster::latency(backend, variant, opts),
                ProbeKind::DsmemBandwidth => cluster::bandwidth(backend, variant, opts),
                ProbeKind::GlobalLatency => global::latency(backend, variant, opts),
                ProbeKind::GlobalBandwidth => global::bandwidth(backend, variant, opts),
                ProbeKind::Atomics => atomics::atomics(backend, variant, opts),
                ProbeKind::Fences => atomics::fences(backend, variant, opts),
                // Not a sweep of probe kernels: `occupancy::explore` runs families.
                ProbeKind::Occupancy => Vec::new(),
            };
            for point in points {
                let point = point();
                if done.contains(&key(&backend.info().name, kind, variant.name(), &point.point)) {
                    continue;
                }
                let r = measure(backend, point, opts);
                each(&r);
                records.push(r);
            }
        }
    }
    records
}

/// The variants `kind` runs on `backend`: the launch-sized Rust kernel where the backend
/// runs Rust kernels, the WGSL twins where the probe has them (none has a subgroup form).
fn probe_variants<B: FamilyBackend>(backend: &B, kind: ProbeKind) -> Vec<Variant> {
    let has_wgsl = matches!(kind, ProbeKind::SharedLatency | ProbeKind::SharedStride);
    backend
        .variants()
        .iter()
        .copied()
        .filter(|v| match v {
            Variant::LaunchSized => true,
            Variant::WgslLiteral | Variant::WgslOverride => has_wgsl,
            Variant::WgslSubgroup | Variant::CudaStatic => false,
        })
        .collect()
}

/// Multiprocessors of the device (1 where the backend does not say, and on CPUs).
pub(crate) fn multiprocessors<B: Backend>(backend: &B) -> u32 {
    if backend.info().is_cpu { 1 } else { backend.info().limits.multiprocessors.unwrap_or(1).max(1) }
}

/// A random cycle through `0..n` (Sattolo's algorithm): `next[i]` is the index after `i`,
/// every index is reached from 0 in `n` steps, none before.
pub(crate) fn ring(n: usize, seed: u64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    let mut rng = crate::rng::SplitMix64::new(seed);
    for i in (1..n).rev() {
        let j = rng.below(i as u64) as usize;
        order.swap(i, j);
    }
    let mut next = vec![0u32; n];
    for i in 0..n {
        next[order[i] as usize] = order[(i + 1) % n];
    }
    next
}

/// Where a chase of `steps` steps from 0 over `next` ends (the CPU reference of every
/// chase).
pub(crate) fn chase_end(next: &[u32], steps: u64) -> u32 {
    let mut j = 0u32;
    for _ in 0..steps {
        j = next[j as usize];
    }
    j
}

/// A launch of the probe `entry` over `grid` blocks of `block` threads with `bytes` of
/// launch-sized memory, built for `variant` (checked against the backend's limits first).
pub(crate) fn launch<'b, B: FamilyBackend>(
    backend: &'b B,
    entry: &'static str,
    bytes: std::result::Result<u32, dynsmem_kernels::layout::LayoutError>,
    (grid, block): (u32, u32),
    variant: Variant,
    wgsl: Option<&dyn Fn(Variant) -> crate::contract::WgslSpec>,
) -> Result<Launch<'b, B>> {
    let kernel = crate::contract::Prepared::new(backend, entry, bytes, grid, block, variant, wgsl, None)?;
    Ok(Launch::new(backend, kernel, grid, block))
}

/// An unsupported probe on this backend, as the point's launch.
pub(crate) fn unsupported<T>(backend: &impl Backend, what: String) -> Result<T> {
    Err(Error::Unsupported { backend: backend.kind(), what })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_is_one_cycle_through_every_index() {
        for n in [1, 2, 3, 17, 1024] {
            let next = ring(n, 7);
            let mut seen = vec![false; n];
            let mut j = 0u32;
            for _ in 0..n {
                assert!(!seen[j as usize], "index {j} reached twice in a ring of {n}");
                seen[j as usize] = true;
                j = next[j as usize];
            }
            assert_eq!(j, 0, "a ring of {n} returns to 0 after {n} steps");
            assert_eq!(chase_end(&next, n as u64), 0);
        }
    }
}
