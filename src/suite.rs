//! The benchmark suite `dynsmem bench` runs: every family present, on every backend this
//! machine has, at default sizes, each beside the anchor measured in the same run.

use dynsmem_host::backend::cpu::CpuBackend;
use dynsmem_host::backend::{Backend, Probe};
use dynsmem_host::bench;
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

#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub timing: TimingOptions,
    /// Overrides the default element count.
    pub n: Option<u64>,
    pub seed: u64,
    pub command: String,
}

/// What the bench found and measured.
pub struct BenchReport {
    /// One line per backend: what it is, or why it cannot be used.
    pub backends: Vec<String>,
    pub records: Vec<Record>,
}

/// Runs the suite. `progress` gets a line before each measurement.
pub fn bench(opts: &BenchOptions, progress: &mut dyn FnMut(&str)) -> BenchReport {
    let mut backends = Vec::new();
    let mut records = Vec::new();
    let mut inputs: Option<(u64, Vec<f32>)> = None;

    let mut have_cuda = false;
    match crate::cuda(0) {
        Probe::Ready(cuda) => {
            have_cuda = true;
            backends.push(describe(&cuda));
            let n = opts.n.unwrap_or(GPU_ELEMENTS);
            family_reduce(&cuda, n, opts, &mut inputs, &mut records, progress);
        }
        Probe::Unavailable(kind, why) => backends.push(format!("{kind}: unavailable: {why}")),
    }
    let mut have_hip = false;
    match crate::hip(0) {
        Probe::Ready(hip) => {
            have_hip = true;
            backends.push(describe(&hip));
            let n = opts.n.unwrap_or(GPU_ELEMENTS);
            family_reduce(&hip, n, opts, &mut inputs, &mut records, progress);
        }
        Probe::Unavailable(kind, why) => backends.push(format!("{kind}: unavailable: {why}")),
    }
    match crate::wgsl() {
        Probe::Ready(wgsl) => {
            backends.push(describe(&wgsl));
            let n = opts.n.unwrap_or(if wgsl.info().is_cpu { CPU_ELEMENTS } else { GPU_ELEMENTS });
            family_reduce(&wgsl, n, opts, &mut inputs, &mut records, progress);
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
        let n = opts.n.unwrap_or(CPU_BACKEND_ELEMENTS);
        family_reduce(&cpu, n, opts, &mut inputs, &mut records, progress);
    }
    BenchReport { backends, records }
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

fn family_reduce<B: ReduceKernels>(
    backend: &B,
    n: u64,
    opts: &BenchOptions,
    inputs: &mut Option<(u64, Vec<f32>)>,
    records: &mut Vec<Record>,
    progress: &mut dyn FnMut(&str),
) {
    let prov = crate::provenance(backend.kind(), &opts.command);
    progress(&format!("{}: copy anchor, {} MB", backend.kind(), n * 4 / 1_000_000));
    let anchor = bench::copy_anchor(backend, n * 4, opts.timing, &prov);
    if inputs.as_ref().is_none_or(|(m, _)| *m != n) {
        progress(&format!("generating {n} f32 inputs"));
        *inputs = Some((n, f32::inputs(n as usize, opts.seed)));
    }
    let data = &inputs.as_ref().expect("set above").1;
    let problem = ReduceProblem { n, op: ReduceOp::Sum, dtype: Dtype::F32 };
    for config in [backend.reduce_default_config(), STAGED_200K] {
        for &variant in backend.reduce_variants() {
            progress(&format!("{}: reduce {variant} {config:?}", backend.kind()));
            records.push(bench::reduce(backend, data, problem, config, variant, opts.timing, &prov, Some(&anchor)));
        }
    }
    records.push(anchor);
}
