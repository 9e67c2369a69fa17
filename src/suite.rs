//! The benchmark suite `dynsmem bench` runs: every family present, on every backend this
//! machine has, at default sizes, each beside the anchor measured in the same run.

use dynsmem_host::backend::{Backend, BackendKind, Probe};
use dynsmem_host::bench;
use dynsmem_host::contract::FamilyBackend;
pub use dynsmem_host::family::Sizes;
use dynsmem_host::measure::TimingOptions;
use dynsmem_host::report::Record;

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
}

/// What the bench found and measured.
pub struct BenchReport {
    /// One line per backend: what it is, or why it cannot be used.
    pub backends: Vec<String>,
    pub records: Vec<Record>,
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
    for (row, probe) in crate::backends(&[]) {
        if row.kind == BackendKind::Cpu && !crate::runs_cpu(&[], rust_gpu) {
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
                })
            }
            Probe::Unavailable(kind, why) if kind == BackendKind::Cuda => {
                backends.push(format!("{kind}: unavailable: {why} (no launch-sized or cuda-static CUDA rows)"))
            }
            Probe::Unavailable(kind, why) => backends.push(format!("{kind}: unavailable: {why}")),
        }
    }
    BenchReport { backends, records: records.records }
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
    let mut said = std::collections::HashMap::new();
    for family in crate::families() {
        for &variant in FamilyBackend::variants(backend) {
            for case in family.bench_cases(backend.erase(), variant, &sizes, opts.db.as_ref()) {
                progress(&format!(
                    "{kind}: {} {} {variant} {} (config: {})",
                    family.name(),
                    case.problem,
                    case.config,
                    origin_once(&mut said, family.name(), &case.origin)
                ));
                let prepared = family.prepare(backend.erase(), &case.problem, &case.config, variant, opts.seed);
                let (rec, own) = bench::family(
                    backend,
                    *family,
                    &case,
                    variant,
                    prepared,
                    opts.timing,
                    &prov,
                    opts.seed,
                    Some(&copy),
                    vendor,
                );
                records.push(rec);
                if let Some(a) = own {
                    vendor.push(a.clone());
                    records.push(a);
                }
            }
        }
    }
    records.push(copy);
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
