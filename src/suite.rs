//! The benchmark suite `dynsmem bench` runs: every family present, on every backend this
//! machine has, at default sizes, each beside the anchor measured in the same run.

use dynsmem_host::backend::cpu::CpuBackend;
use dynsmem_host::backend::{Backend, Probe};
use dynsmem_host::bench;
use dynsmem_host::kernels::Kernels;
use dynsmem_host::kernels::reduce::{ReduceConfig, ReduceElement, ReduceKernels, ReduceOp, ReduceProblem};
use dynsmem_host::measure::TimingOptions;
use dynsmem_host::report::Record;
use dynsmem_kernels::Dtype;

/// Default problem size of bandwidth-bound families on a GPU: 2^28 4-byte elements
/// (1 GiB), far past the H100's 50 MB L2.
pub const GPU_ELEMENTS: u64 = 1 << 28;
/// On a CPU adapter (lavapipe) the same kernels at 2^22 elements: a check, not a figure.
pub const CPU_ELEMENTS: u64 = 1 << 22;
/// On the CPU backend (one OS thread per kernel thread, a context switch per barrier)
/// 2^16 elements.
pub const CPU_BACKEND_ELEMENTS: u64 = 1 << 16;

/// A staged reduce config with 200 KB of launch-sized tile per block: past the 48 KB a
/// kernel gets without opt-in, and past what static WGSL arrays may hold.
pub const STAGED_200K: ReduceConfig = ReduceConfig { block: 256, items_per_thread: 200, staged: true };

/// Host bytes per element the bench may hold at once for the 1-D families: the f32
/// inputs it shares between reduce configs, and the largest launcher's input, f64
/// reference and error scale, and read-back (scan, conv1d).
pub const HOST_BYTES_PER_ELEMENT: u64 = 32;

/// Refuses a `--n` whose inputs and references cannot fit the host's memory, before any
/// backend is opened: generating them would abort the process.
pub fn check_n(n: u64) -> dynsmem_host::Result<()> {
    let need = dynsmem_host::kernels::bytes_of(n, HOST_BYTES_PER_ELEMENT);
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
    let mut inputs: Option<(u64, Vec<f32>)> = None;

    let mut have_cuda = false;
    // cuBLAS's records, the anchor of the WGSL GEMM rows of the same problem.
    let mut cublas = Vec::new();
    match crate::cuda(0) {
        Probe::Ready(cuda) => {
            have_cuda = true;
            backends.push(describe(&cuda));
            // Its rows are still made, each recording this reason as its error.
            if !dynsmem_host::backend::cuda::nvrtc::library_present() {
                backends.push("cuda cuda-static: skipped: libnvrtc not found (CUDA's run-time compiler)".into());
            }
            families(&cuda, opts, &mut inputs, &mut records, progress);
            cublas = gemm_cuda(&cuda, opts, &mut records, progress);
        }
        Probe::Unavailable(kind, why) => {
            backends.push(format!("{kind}: unavailable: {why} (no launch-sized or cuda-static CUDA rows)"))
        }
    }
    let mut have_hip = false;
    match crate::hip(0) {
        Probe::Ready(hip) => {
            have_hip = true;
            backends.push(describe(&hip));
            families(&hip, opts, &mut inputs, &mut records, progress);
            gemm(&hip, opts, &[], &mut records, progress);
        }
        Probe::Unavailable(kind, why) => backends.push(format!("{kind}: unavailable: {why}")),
    }
    match crate::wgsl() {
        Probe::Ready(wgsl) => {
            backends.push(describe(&wgsl));
            families(&wgsl, opts, &mut inputs, &mut records, progress);
            gemm(&wgsl, opts, &cublas, &mut records, progress);
        }
        Probe::Unavailable(kind, why) => backends.push(format!("{kind}: unavailable: {why}")),
    }
    // Without a CUDA or HIP device the Rust kernels still run, on the CPU backend: the same
    // source as the PTX, checked and timed (CPU timings, labelled as such).
    if have_cuda || have_hip {
        backends.push("cpu: not run (a GPU backend is present; the CPU backend is for machines without one)".into());
    } else {
        let cpu = CpuBackend::new();
        backends.push(describe(&cpu));
        families(&cpu, opts, &mut inputs, &mut records, progress);
        gemm(&cpu, opts, &[], &mut records, progress);
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

/// Problem sizes of one backend: GPU sizes move at least 1 GiB (far past an H100's 50 MB
/// L2); CPU sizes (lavapipe, the CPU backend) only show that the path runs and verifies.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// Elements of the 1-D families (reduce, scan, histogram, conv1d).
    pub n: u64,
    /// Side of the square 2-D problems (stencil2d, transpose).
    pub side: u32,
    /// Softmax rows of 4096.
    pub softmax_rows: u32,
    pub nbody: u32,
}

impl Sizes {
    pub fn gpu() -> Sizes {
        Sizes { n: GPU_ELEMENTS, side: 16_384, softmax_rows: 65_536, nbody: 65_536 }
    }
    pub fn cpu_adapter() -> Sizes {
        Sizes { n: CPU_ELEMENTS, side: 1024, softmax_rows: 256, nbody: 2048 }
    }
    pub fn cpu_backend() -> Sizes {
        Sizes { n: CPU_BACKEND_ELEMENTS, side: 256, softmax_rows: 16, nbody: 256 }
    }
    /// The sizes for `b` (small ones everywhere when `quick`), with `n` overriding the 1-D
    /// size.
    pub fn for_backend<B: Backend>(b: &B, n: Option<u64>, quick: bool) -> Sizes {
        let mut s = match (b.kind(), b.info().is_cpu || quick) {
            (dynsmem_host::backend::BackendKind::Cpu, _) => Sizes::cpu_backend(),
            (_, true) => Sizes::cpu_adapter(),
            _ => Sizes::gpu(),
        };
        if let Some(n) = n {
            s.n = n;
        }
        s
    }
}

/// Every family on one backend, each config in every variant the backend runs, beside
/// the backend's copy anchor measured first.
fn families<B: ReduceKernels + Kernels>(
    backend: &B,
    opts: &BenchOptions,
    inputs: &mut Option<(u64, Vec<f32>)>,
    records: &mut Sink<'_>,
    progress: &mut dyn FnMut(&str),
) {
    use dynsmem_host::kernels::{conv1d, histogram, nbody, reduce, scan, softmax, stencil2d, transpose};
    let sizes = Sizes::for_backend(backend, opts.n, opts.quick);
    let prov = crate::provenance(backend.kind(), &opts.command);
    let kind = backend.kind();
    let n = sizes.n;
    progress(&format!("{kind}: copy anchor, {} MB", n * 4 / 1_000_000));
    let anchor = bench::copy_anchor(backend, n * 4, opts.timing, &prov);
    let a = Some(&anchor);
    let t = opts.timing;
    let seed = opts.seed;

    // reduce
    if inputs.as_ref().is_none_or(|(m, _)| *m != n) {
        progress(&format!("generating {n} f32 inputs"));
        *inputs = Some((n, f32::inputs(n as usize, seed)));
    }
    let data = &inputs.as_ref().expect("set above").1;
    let problem = ReduceProblem { n, op: ReduceOp::Sum, dtype: Dtype::F32 };
    for asked in [backend.reduce_default_config(), STAGED_200K] {
        for &variant in backend.reduce_variants() {
            let (config, note) = reduce::fit_config(backend, variant, problem.dtype, asked);
            progress(&format!("{kind}: reduce {variant} {config:?}"));
            records.push(noted(bench::reduce(backend, data, problem, config, variant, t, &prov, a), note));
        }
    }

    for &variant in Kernels::variants(backend) {
        let p = scan::ScanProblem { n, dtype: Dtype::F32 };
        let (c, note) = scan::fit_config(backend, variant, scan::default_config(backend));
        progress(&format!("{kind}: scan {variant}"));
        records.push(noted(
            bench::workload(
                backend,
                "scan",
                variant,
                json(&p),
                json(&c),
                scan::prepare::<B, f32>(backend, p, c, variant, seed),
                t,
                &prov,
                a,
            ),
            note,
        ));

        for bins in [256, 4096, 49_152] {
            let p = histogram::HistogramProblem { n, bins, out_of_range_pct: 0 };
            let (c, note) = histogram::fit_config(backend, variant, &p, histogram::default_config(backend, &p));
            progress(&format!("{kind}: histogram {bins} bins {variant}"));
            records.push(noted(
                bench::workload(
                    backend,
                    "histogram",
                    variant,
                    json(&p),
                    json(&c),
                    histogram::prepare(backend, p, c, variant, seed),
                    t,
                    &prov,
                    a,
                ),
                note,
            ));
        }

        for taps in [3, 33] {
            let p = conv1d::Conv1dProblem { n, taps };
            let (c, note) = conv1d::fit_config(backend, variant, &p, conv1d::default_config(backend, taps));
            progress(&format!("{kind}: conv1d K={taps} {variant}"));
            records.push(noted(
                bench::workload(
                    backend,
                    "conv1d",
                    variant,
                    json(&p),
                    json(&c),
                    conv1d::prepare(backend, p, c, variant, seed),
                    t,
                    &prov,
                    a,
                ),
                note,
            ));
        }

        for radius in [1, 2] {
            let p = stencil2d::Stencil2dProblem {
                width: sizes.side,
                height: sizes.side,
                radius,
                blur: stencil2d::Blur::Gaussian,
            };
            let (c, note) = stencil2d::fit_config(backend, variant, &p, stencil2d::default_config(backend));
            progress(&format!("{kind}: stencil2d r={radius} {variant}"));
            records.push(noted(
                bench::workload(
                    backend,
                    "stencil2d",
                    variant,
                    json(&p),
                    json(&c),
                    stencil2d::prepare(backend, p, c, variant, seed),
                    t,
                    &prov,
                    a,
                ),
                note,
            ));
        }

        let p = transpose::TransposeProblem { rows: sizes.side, cols: sizes.side };
        for c in [
            transpose::default_config(backend),
            dynsmem_kernels::transpose::TransposeConfig { pad: 0, ..transpose::default_config(backend) },
        ] {
            let (c, note) = transpose::fit_config(backend, variant, c);
            progress(&format!("{kind}: transpose pad={} {variant}", c.pad));
            records.push(noted(
                bench::workload(
                    backend,
                    "transpose",
                    variant,
                    json(&p),
                    json(&c),
                    transpose::prepare(backend, p, c, variant, seed),
                    t,
                    &prov,
                    a,
                ),
                note,
            ));
        }

        // Rows of 4096, and rows of 32768 floats (128 KB: past any static limit).
        for (rows, cols) in [(sizes.softmax_rows, 4096), ((sizes.softmax_rows / 8).max(1), 32_768)] {
            let p = softmax::SoftmaxProblem { rows, cols };
            let (c, note) = softmax::fit_config(backend, variant, &p, softmax::default_config(backend));
            progress(&format!("{kind}: softmax {rows}x{cols} {variant}"));
            records.push(noted(
                bench::workload(
                    backend,
                    "softmax",
                    variant,
                    json(&p),
                    json(&c),
                    softmax::prepare(backend, p, c, variant, seed),
                    t,
                    &prov,
                    a,
                ),
                note,
            ));
        }

        let p = nbody::NbodyProblem::new(sizes.nbody);
        let (c, note) = nbody::fit_config(backend, variant, nbody::default_config(backend));
        progress(&format!("{kind}: nbody {} {variant}", sizes.nbody));
        records.push(noted(
            bench::workload(
                backend,
                "nbody",
                variant,
                json(&p),
                json(&c),
                nbody::prepare(backend, p, c, variant, seed),
                t,
                &prov,
                a,
            ),
            note,
        ));
    }
    records.push(anchor);
}

/// GEMM sizes of a backend: 1024, 4096 and 8192 cubed (f32) and 4096 (f16) on a GPU;
/// small ones elsewhere and with `--quick`.
fn gemm_sizes<B: Backend>(b: &B, quick: bool) -> Vec<(u32, bool)> {
    match (b.kind(), b.info().is_cpu || quick) {
        (dynsmem_host::backend::BackendKind::Cpu, _) => vec![(64, false), (64, true)],
        (_, true) => vec![(128, false), (128, true)],
        _ => vec![(1024, false), (4096, false), (8192, false), (4096, true)],
    }
}

/// GEMM on CUDA beside cuBLAS on the same inputs (the ratio is to cuBLAS; f16 inputs have
/// no anchor). Returns cuBLAS's records.
fn gemm_cuda(
    cuda: &dynsmem_host::backend::cuda::CudaBackend,
    opts: &BenchOptions,
    records: &mut Sink<'_>,
    progress: &mut dyn FnMut(&str),
) -> Vec<Record> {
    use dynsmem_host::kernels::sgemm;
    let prov = crate::provenance(cuda.kind(), &opts.command);
    let mut anchors = Vec::new();
    for (side, f16_inputs) in gemm_sizes(cuda, opts.quick) {
        let p = sgemm::SgemmProblem { m: side, n: side, k: side, f16_inputs };
        let c = sgemm::default_config(cuda, &p);
        progress(&format!("cuda: sgemm {side}^3 f16={f16_inputs}, and cuBLAS"));
        let (rec, anchor) = bench::sgemm_cuda(cuda, p, c, false, opts.timing, &prov, opts.seed);
        records.push(rec);
        // The same algorithm in CUDA C with static arrays, beside cuBLAS too.
        let variant = dynsmem_host::kernels::Variant::CudaStatic;
        let (c, note) = sgemm::fit_config(cuda, variant, &p, c);
        progress(&format!("cuda: sgemm {side}^3 f16={f16_inputs} {variant}"));
        let prepared = sgemm::prepare(cuda, p, c, false, variant, opts.seed);
        let rec =
            bench::workload(cuda, "sgemm", variant, json(&p), json(&c), prepared, opts.timing, &prov, anchor.as_ref());
        records.push(noted(rec, note));
        if let Some(a) = anchor {
            anchors.push(a.clone());
            records.push(a);
        }
    }
    anchors
}

/// GEMM on a backend that has no cuBLAS of its own (the CPU backend, HIP, WGSL), in every
/// variant it runs (WGSL: f32 inputs only; its form has no f16). A row's anchor is the
/// verified cuBLAS record of the same problem among `cublas` (measured earlier in this
/// run, on the CUDA device), so the WGSL rows of a machine with CUDA carry their ratio to
/// cuBLAS; without one, no anchor and no ratio.
fn gemm<B: Kernels>(
    backend: &B,
    opts: &BenchOptions,
    cublas: &[Record],
    records: &mut Sink<'_>,
    progress: &mut dyn FnMut(&str),
) {
    use dynsmem_host::kernels::{Variant, sgemm};
    let prov = crate::provenance(backend.kind(), &opts.command);
    for (side, f16_inputs) in gemm_sizes(backend, opts.quick) {
        let p = sgemm::SgemmProblem { m: side, n: side, k: side, f16_inputs };
        let c = sgemm::default_config(backend, &p);
        let anchor = cublas.iter().find(|a| a.error.is_none() && a.tflops.is_some() && a.problem == json(&p));
        for &variant in Kernels::variants(backend) {
            if f16_inputs && variant != Variant::LaunchSized {
                continue;
            }
            progress(&format!("{}: sgemm {side}^3 f16={f16_inputs} {variant}", backend.kind()));
            records.push(bench::workload(
                backend,
                "sgemm",
                variant,
                json(&p),
                json(&c),
                sgemm::prepare(backend, p, c, false, variant, opts.seed),
                opts.timing,
                &prov,
                anchor,
            ));
        }
    }
}

/// `rec` with `note` (why a cuda-static row ran another config than the one asked).
fn noted(mut rec: Record, note: Option<String>) -> Record {
    rec.note = note;
    rec
}

/// A problem or config as it goes into a record.
fn json<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).expect("problems and configs serialize")
}
