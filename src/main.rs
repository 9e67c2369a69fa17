//! `dynsmem`: list devices, run and verify one kernel config, benchmark every family.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Parser;
use dynsmem::cli::*;
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::backend::cuda::CudaBackend;
use dynsmem::host::backend::hip::HipBackend;
use dynsmem::host::backend::wgpu::WgpuBackend;
use dynsmem::host::backend::{Backend, BackendKind, Probe};
use dynsmem::host::bench;
use dynsmem::host::kernels::reduce::{ReduceConfig, ReduceElement, ReduceKernels, ReduceProblem};
use dynsmem::host::kernels::{Kernels, Variant, Workload};
use dynsmem::host::measure::TimingOptions;
use dynsmem::host::report::{JsonlWriter, Record, TableStyle, records_table};
use dynsmem::suite;
use dynsmem_kernels::Dtype;

/// `println!` without its panic: when the reader went away (`dynsmem ... | head`) the
/// rest of the output goes nowhere and the command still finishes (its records are
/// written, its exit code tells); any other failure to write stdout (a full disk) is an
/// error of the command.
macro_rules! say {
    ($($arg:tt)*) => {
        emit(::std::format_args!($($arg)*))?
    };
}

fn emit(args: std::fmt::Arguments<'_>) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_fmt(args).and_then(|()| out.write_all(b"\n")).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(anyhow::Error::new(e).context("writing to stdout")),
        _ => Ok(()),
    }
}

mod tune_cmd;

fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Devices => devices(),
        Command::Run { family } => run(family),
        Command::Bench { json, markdown, plots, n, quick, timing } => {
            run_bench(json, markdown, plots, n, quick, timing)
        }
        Command::Plot { records, out } => plot(&records, &out),
        Command::Tune { family } => tune_cmd::tune(family),
    }
}

fn limits_line<B: Backend>(b: &B) -> String {
    let l = &b.info().limits;
    let mut parts = vec![format!("max threads/block {}", l.max_threads_per_block)];
    if l.launch_shared_max > 0 {
        parts.push(format!(
            "launch-sized shared memory {} B default, {} B with opt-in",
            l.launch_shared_default, l.launch_shared_max
        ));
    } else {
        parts.push("no launch-sized workgroup memory".into());
    }
    parts.push(format!("static workgroup memory {} B", l.static_shared_max));
    if let Some(s) = l.shared_per_multiprocessor {
        parts.push(format!("{s} B per multiprocessor"));
    }
    if let Some(m) = l.multiprocessors {
        parts.push(format!("{m} multiprocessors"));
    }
    parts.join("; ")
}

fn devices() -> anyhow::Result<()> {
    match dynsmem::cuda(0) {
        Probe::Ready(b) => say!("{}\n    {}", suite::describe(&b), limits_line(&b)),
        Probe::Unavailable(k, why) => say!("{k}: unavailable: {why}"),
    }
    match dynsmem::wgsl() {
        Probe::Ready(b) => say!("{}\n    {}", suite::describe(&b), limits_line(&b)),
        Probe::Unavailable(k, why) => say!("{k}: unavailable: {why}"),
    }
    match dynsmem::hip(0) {
        Probe::Ready(b) => say!("{}\n    {}", suite::describe(&b), limits_line(&b)),
        Probe::Unavailable(k, why) => say!("{k}: unavailable: {why}"),
    }
    let cpu = CpuBackend::new();
    say!("{}\n    {}", suite::describe(&cpu), limits_line(&cpu));
    Ok(())
}

/// The backend a `run` uses.
enum Picked {
    Cuda(CudaBackend),
    Hip(HipBackend),
    Wgsl(WgpuBackend),
    Cpu(CpuBackend),
}

/// `--backend`, or without it: CUDA if present, else HIP, else a Vulkan GPU, else the CPU
/// backend (saying why on stderr).
fn pick(choice: Option<BackendArg>) -> anyhow::Result<Picked> {
    let ready = |k: BackendKind, why: String| anyhow::anyhow!("{k} unavailable: {why}");
    match choice {
        Some(BackendArg::Cuda) => match dynsmem::cuda(0) {
            Probe::Ready(b) => Ok(Picked::Cuda(b)),
            Probe::Unavailable(k, why) => Err(ready(k, why)),
        },
        Some(BackendArg::Hip) => match dynsmem::hip(0) {
            Probe::Ready(b) => Ok(Picked::Hip(b)),
            Probe::Unavailable(k, why) => Err(ready(k, why)),
        },
        Some(BackendArg::Wgsl) => match dynsmem::wgsl() {
            Probe::Ready(b) => Ok(Picked::Wgsl(b)),
            Probe::Unavailable(k, why) => Err(ready(k, why)),
        },
        Some(BackendArg::Cpu) => Ok(Picked::Cpu(CpuBackend::new())),
        None => {
            match dynsmem::cuda(0) {
                Probe::Ready(b) => return Ok(Picked::Cuda(b)),
                Probe::Unavailable(k, why) => eprintln!("{k} unavailable ({why})"),
            }
            match dynsmem::hip(0) {
                Probe::Ready(b) => return Ok(Picked::Hip(b)),
                Probe::Unavailable(k, why) => eprintln!("{k} unavailable ({why})"),
            }
            match dynsmem::wgsl() {
                Probe::Ready(b) if !b.info().is_cpu => return Ok(Picked::Wgsl(b)),
                Probe::Ready(b) => eprintln!("wgsl adapter {} is a CPU adapter", b.info().name),
                Probe::Unavailable(k, why) => eprintln!("{k} unavailable ({why})"),
            }
            eprintln!("no GPU: using the CPU backend (--backend wgsl runs the WGSL kernels on the CPU Vulkan adapter)");
            Ok(Picked::Cpu(CpuBackend::new()))
        }
    }
}

fn run(family: RunFamily) -> anyhow::Result<()> {
    let common = match &family {
        RunFamily::Reduce(a) => &a.common,
        RunFamily::Scan(a) => &a.common,
        RunFamily::Histogram(a) => &a.common,
        RunFamily::Conv1d(a) => &a.common,
        RunFamily::Stencil2d(a) => &a.common,
        RunFamily::Transpose(a) => &a.common,
        RunFamily::Softmax(a) => &a.common,
        RunFamily::Nbody(a) => &a.common,
        RunFamily::Sgemm(a) => &a.common,
    };
    // The record file is opened first: a path that cannot be written is refused before
    // anything runs, not after the measurement it would have held.
    let mut out = match &common.json {
        Some(path) => Some(JsonlWriter::append(path).with_context(|| format!("--json {}", path.display()))?),
        None => None,
    };
    match pick(common.backend)? {
        Picked::Cuda(b) => match &family {
            // cuda-static GEMM runs as any other family (its record has no cuBLAS anchor).
            RunFamily::Sgemm(a) if !matches!(a.common.variant, Some(VariantArg::CudaStatic)) => {
                sgemm_cuda(&b, a, out.as_mut())
            }
            _ => run_on(&b, &family, common, out.as_mut()),
        },
        Picked::Hip(b) => run_on(&b, &family, common, out.as_mut()),
        Picked::Wgsl(b) => run_on(&b, &family, common, out.as_mut()),
        Picked::Cpu(b) => run_on(&b, &family, common, out.as_mut()),
    }
}

fn variant_of<B: Kernels>(backend: &B, v: Option<VariantArg>) -> Variant {
    match v {
        None => Kernels::variants(backend)[0],
        Some(VariantArg::LaunchSized) => Variant::LaunchSized,
        Some(VariantArg::WgslLiteral) => Variant::WgslLiteral,
        Some(VariantArg::WgslOverride) => Variant::WgslOverride,
        Some(VariantArg::CudaStatic) => Variant::CudaStatic,
    }
}

fn json<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).expect("problems and configs serialize")
}

/// Runs one family's config on `backend`: validate, then anchor, verify, time, print,
/// record. A problem or config the family refuses stops before anything is launched
/// (the anchor copy included) and writes no record.
fn run_on<B: ReduceKernels + Kernels>(
    backend: &B,
    family: &RunFamily,
    common: &Common,
    out: Option<&mut JsonlWriter>,
) -> anyhow::Result<()> {
    use dynsmem::host::device::{conv1d, histogram, nbody, scan, softmax, stencil2d, transpose};
    use dynsmem::host::kernels as k;
    let sizes = suite::Sizes::for_backend(backend, None, false);
    let timing = timing_options(&common.timing)?;
    let prov = dynsmem::provenance(backend.kind(), &command_line());
    let variant = variant_of(backend, common.variant);
    let seed = common.timing.seed;
    say!("{}", suite::describe(backend));
    let m = Measure { backend, variant, timing, prov: &prov };
    // Where cuda-static's static arrays cannot hold the default config, it runs the best
    // that fits; the note says so when that is the config run.
    let note: Option<String>;
    let (mut rec, anchor) = match family {
        RunFamily::Reduce(a) => return reduce_on(backend, a, &sizes, variant, timing, &prov, common, out),
        RunFamily::Scan(a) => {
            let p = a.problem.problem(&sizes);
            let (d, fit) = k::scan::fit_config(backend, variant, k::scan::default_config(backend));
            let c = scan::ScanConfig {
                block: a.block.unwrap_or(d.block),
                items_per_thread: a.ipt.unwrap_or(d.items_per_thread),
            };
            note = fit.filter(|_| c == d);
            let kernel = format!("scan_exclusive_{}", p.dtype.name());
            bridge_footprint(backend, &kernel, p.n)?;
            // The WGSL form scans tile sums level by level until one tile is left; with a
            // tile of one element no level is smaller than the last, and the launcher
            // allocates levels until memory runs out. Refused here until it refuses it.
            if variant != Variant::LaunchSized && c.tile() == Some(1) && p.n > 1 {
                return Err(anyhow::Error::new(dynsmem::host::Error::InvalidConfig {
                    kernel: kernel.clone(),
                    reason: format!(
                        "block * items_per_thread = 1: tiles of one element never reduce {} elements to one tile",
                        p.n
                    ),
                }))
                .context(format!("{kernel} on {}: refused, nothing launched", backend.kind()));
            }
            let anchor = Some(bytes_of(p.n, 4));
            match p.dtype {
                Dtype::F32 => {
                    m.run("scan", json(&p), json(&c), k::scan::prepare::<B, f32>(backend, p, c, variant, seed), anchor)?
                }
                Dtype::U32 => {
                    m.run("scan", json(&p), json(&c), k::scan::prepare::<B, u32>(backend, p, c, variant, seed), anchor)?
                }
            }
        }
        RunFamily::Histogram(a) => {
            let p = a.problem.problem(&sizes);
            let (d, fit) = k::histogram::fit_config(backend, variant, &p, k::histogram::default_config(backend, &p));
            let c = histogram::HistogramConfig {
                block: a.block.unwrap_or(d.block),
                grid: a.grid.unwrap_or(d.grid),
                copies: a.copies.unwrap_or(d.copies),
            };
            note = fit.filter(|_| c == d);
            let w = k::histogram::prepare(backend, p, c, variant, seed);
            m.run("histogram", json(&p), json(&c), w, Some(bytes_of(p.n, 4)))?
        }
        RunFamily::Conv1d(a) => {
            let p = a.problem.problem(&sizes);
            let (d, fit) = k::conv1d::fit_config(backend, variant, &p, k::conv1d::default_config(backend, p.taps));
            let c = conv1d::Conv1dConfig {
                block: a.block.unwrap_or(d.block),
                outputs_per_thread: a.outputs_per_thread.unwrap_or(d.outputs_per_thread),
            };
            note = fit.filter(|_| c == d);
            bridge_footprint(backend, "conv1d_f32", p.n)?;
            let w = k::conv1d::prepare(backend, p, c, variant, seed);
            m.run("conv1d", json(&p), json(&c), w, Some(bytes_of(p.n, 4)))?
        }
        RunFamily::Stencil2d(a) => {
            let p = a.problem.problem(&sizes);
            let (d, fit) = k::stencil2d::fit_config(backend, variant, &p, k::stencil2d::default_config(backend));
            let c = stencil2d::Stencil2dConfig {
                block: a.block.unwrap_or(d.block),
                tile_w: a.tile_w.unwrap_or(d.tile_w),
                tile_h: a.tile_h.unwrap_or(d.tile_h),
            };
            note = fit.filter(|_| c == d);
            let pixels = p.width as u64 * p.height as u64;
            bridge_footprint(backend, "stencil2d_f32", pixels)?;
            let w = k::stencil2d::prepare(backend, p, c, variant, seed);
            m.run("stencil2d", json(&p), json(&c), w, Some(bytes_of(pixels, 4)))?
        }
        RunFamily::Transpose(a) => {
            let p = a.problem.problem(&sizes);
            let (d, fit) = k::transpose::fit_config(backend, variant, k::transpose::default_config(backend));
            let c = transpose::TransposeConfig {
                block: a.block.unwrap_or(d.block),
                tile: a.tile.unwrap_or(d.tile),
                pad: a.pad.unwrap_or(d.pad),
            };
            note = fit.filter(|_| c == d);
            let w = k::transpose::prepare(backend, p, c, variant, seed);
            m.run("transpose", json(&p), json(&c), w, Some(bytes_of(p.rows as u64 * p.cols as u64, 4)))?
        }
        RunFamily::Softmax(a) => {
            let p = k::softmax::SoftmaxProblem { rows: a.rows.unwrap_or(sizes.softmax_rows), cols: a.cols };
            let (d, fit) = k::softmax::fit_config(backend, variant, &p, k::softmax::default_config(backend));
            let c = softmax::SoftmaxConfig { block: a.block.unwrap_or(d.block) };
            note = fit.filter(|_| c == d);
            let w = k::softmax::prepare(backend, p, c, variant, seed);
            m.run("softmax", json(&p), json(&c), w, Some(bytes_of(p.rows as u64 * p.cols as u64, 4)))?
        }
        RunFamily::Nbody(a) => {
            let p = k::nbody::NbodyProblem::new(a.n.unwrap_or(sizes.nbody));
            let (d, fit) = k::nbody::fit_config(backend, variant, k::nbody::default_config(backend));
            let c = nbody::NbodyConfig { block: a.block.unwrap_or(d.block), tile: a.tile.unwrap_or(d.tile) };
            note = fit.filter(|_| c == d);
            let w = k::nbody::prepare(backend, p, c, variant, seed);
            m.run("nbody", json(&p), json(&c), w, None)?
        }
        RunFamily::Sgemm(a) => {
            let (p, c) = sgemm_problem(backend, a, variant);
            note = sgemm_note(backend, a, variant, &p);
            let w = k::sgemm::prepare(backend, p, c, a.fixed, variant, seed);
            m.run("sgemm", json(&p), json(&c), w, None)?
        }
    };
    rec.note = note;
    finish(None, &rec, anchor.as_ref(), out)
}

/// The note of `run sgemm`'s record: why a cuda-static run has another config than the
/// default asked (only when no tile flag replaced the fitted default).
fn sgemm_note<B: Kernels>(
    backend: &B,
    a: &SgemmArgs,
    variant: Variant,
    p: &dynsmem::host::kernels::sgemm::SgemmProblem,
) -> Option<String> {
    use dynsmem::host::kernels::sgemm;
    let flags = [a.bm, a.bn, a.bk, a.stages, a.tm];
    let (_, fit) = sgemm::fit_config(backend, variant, p, sgemm::default_config(backend, p));
    fit.filter(|_| flags.iter().all(Option::is_none))
}

/// The problem and config `run sgemm` asks for, defaults filled in (for cuda-static, the
/// default is the best config whose static arrays fit).
fn sgemm_problem<B: Kernels>(
    backend: &B,
    a: &SgemmArgs,
    variant: Variant,
) -> (dynsmem::host::kernels::sgemm::SgemmProblem, dynsmem::host::device::sgemm::SgemmConfig) {
    use dynsmem::host::kernels::sgemm;
    // The CPU backend runs a thread per kernel thread; a CPU Vulkan adapter (lavapipe) is
    // faster but still a CPU.
    let side = match (backend.kind(), backend.info().is_cpu) {
        (dynsmem::host::backend::BackendKind::Cpu, _) => 96,
        (_, true) => 256,
        _ => 4096,
    };
    let m = a.m.unwrap_or(side);
    let p = sgemm::SgemmProblem { m, n: a.n.unwrap_or(m), k: a.k.unwrap_or(m), f16_inputs: a.f16 };
    let (d, _) = sgemm::fit_config(backend, variant, &p, sgemm::default_config(backend, &p));
    let c = a.config_over(d);
    (p, c)
}

/// `run sgemm` on CUDA: ours beside cuBLAS on the same inputs (see `bench::sgemm_cuda`).
fn sgemm_cuda(backend: &CudaBackend, a: &SgemmArgs, out: Option<&mut JsonlWriter>) -> anyhow::Result<()> {
    let timing = timing_options(&a.common.timing)?;
    let prov = dynsmem::provenance(backend.kind(), &command_line());
    say!("{}", suite::describe(backend));
    let (p, c) = sgemm_problem(backend, a, Variant::LaunchSized);
    let (rec, anchor) = bench::sgemm_cuda(backend, p, c, a.fixed, timing, &prov, a.common.timing.seed);
    if rec.error.is_some() && rec.median_ms.is_none() && anchor.is_none() {
        bail!("sgemm on cuda: refused, nothing launched: {}", rec.error.clone().unwrap_or_default());
    }
    if let Some(anchor) = &anchor {
        match (&anchor.error, anchor.tflops) {
            (None, Some(t)) => {
                say!("cuBLAS SGEMM on the same inputs: {t:.2} TFLOP/s; its C matches ours entry by entry")
            }
            (Some(e), _) => say!("cuBLAS: {e}"),
            _ => {}
        }
    }
    if let Ok((regs, local)) = backend.kernel_resources(&rec.kernel) {
        say!("registers: {regs} per thread, {local} B of local memory per thread");
    }
    finish(None, &rec, anchor.as_ref(), out)
}

/// What measuring one prepared workload needs besides the workload.
struct Measure<'a, B> {
    backend: &'a B,
    variant: Variant,
    timing: TimingOptions,
    prov: &'a dynsmem::host::report::Provenance,
}

impl<B: Backend> Measure<'_, B> {
    /// A refused workload is returned as the error, before the anchor (of `anchor_bytes`,
    /// for bandwidth-bound families) is measured; a prepared one is anchored, verified and
    /// timed into a record.
    fn run<W: Workload>(
        &self,
        family: &str,
        problem: serde_json::Value,
        config: serde_json::Value,
        prepared: dynsmem::host::Result<W>,
        anchor_bytes: Option<u64>,
    ) -> anyhow::Result<(Record, Option<Record>)> {
        let w = prepared.with_context(|| format!("{family} on {}: refused, nothing launched", self.backend.kind()))?;
        let anchor = anchor_bytes.map(|b| bench::copy_anchor(self.backend, b, self.timing, self.prov));
        let rec = bench::workload(
            self.backend,
            family,
            self.variant,
            problem,
            config,
            Ok(w),
            self.timing,
            self.prov,
            anchor.as_ref(),
        );
        Ok((rec, anchor))
    }
}

/// `count` 4-byte elements, saturating: what the anchor copies.
fn bytes_of(count: u64, each: u64) -> u64 {
    dynsmem::host::kernels::bytes_of(count, each)
}

/// Device and host bytes per element of scan, conv1d and stencil2d (input and output on
/// the device; input, the f64 reference and its error scale, the NaN fill and the
/// read-back on the host). Their launchers do not check this yet; until they do, the CLI
/// refuses a size past memory here, so that it is an error instead of an abort.
const BRIDGE_DEVICE_BYTES: u64 = 8;
const BRIDGE_HOST_BYTES: u64 = 28;

fn bridge_footprint<B: Backend>(backend: &B, kernel: &str, elems: u64) -> anyhow::Result<()> {
    dynsmem::host::kernels::check_footprint(
        backend,
        kernel,
        bytes_of(elems, BRIDGE_DEVICE_BYTES),
        bytes_of(elems, BRIDGE_HOST_BYTES),
    )
    .with_context(|| format!("{kernel} on {}: refused, nothing launched", backend.kind()))
}

/// The timing flags, checked: a repeat count or warm-up that could not finish (or whose
/// times would not fit memory) is refused before anything runs.
fn timing_options(t: &TimingArgs) -> anyhow::Result<TimingOptions> {
    let opts = TimingOptions { warmup: t.warmup, warmup_ms: t.warmup_ms, repeats: t.repeats };
    opts.validate()?;
    Ok(opts)
}

/// Appends the records (each one whole line, synced), then prints them (so a failure to
/// print cannot lose them), and turns a failed config into a nonzero exit. `heading` is
/// printed first.
fn finish(
    heading: Option<String>,
    rec: &Record,
    anchor: Option<&Record>,
    out: Option<&mut JsonlWriter>,
) -> anyhow::Result<()> {
    if let Some(w) = out {
        w.write(rec)?;
        if let Some(a) = anchor {
            w.write(a)?;
        }
    }
    if let Some(h) = heading {
        say!("{h}");
    }
    print_record(rec, anchor)?;
    if let Some(e) = &rec.error {
        bail!("{e}");
    }
    Ok(())
}

fn print_record(rec: &Record, anchor: Option<&Record>) -> anyhow::Result<()> {
    say!(
        "kernel {} ({}); launch-sized shared memory {} B, static {} B",
        rec.kernel,
        rec.variant,
        rec.shared_bytes,
        rec.static_shared_bytes
    );
    if let (Some(med), Some(min), Some(max)) = (rec.median_ms, rec.min_ms, rec.max_ms) {
        let mut figures = Vec::new();
        if let Some(g) = rec.gbps {
            figures.push(format!("{g:.1} GB/s"));
        }
        if let Some(t) = rec.tflops {
            figures.push(format!("{t:.2} TFLOP/s"));
        }
        say!(
            "time: median {med:.4} ms (min {min:.4}, max {max:.4}) over {} runs [{}]; {}",
            rec.times_ms.len(),
            rec.timer,
            figures.join(", ")
        );
    }
    if let Some(a) = anchor.and_then(|a| a.gbps) {
        let ratio = rec.ratio.map(|r| format!("; ratio {r:.3}")).unwrap_or_default();
        say!("anchor: device-to-device copy {a:.1} GB/s (read + write){ratio}");
    }
    if let Some(n) = &rec.note {
        say!("note: {n}");
    }
    match &rec.error {
        Some(e) => say!("error: {e}"),
        None => say!("verified: {}", if rec.verified { "yes, against the CPU reference" } else { "NO" }),
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn reduce_on<B: ReduceKernels>(
    backend: &B,
    args: &ReduceArgs,
    sizes: &suite::Sizes,
    variant: Variant,
    timing: TimingOptions,
    prov: &dynsmem::host::report::Provenance,
    common: &Common,
    out: Option<&mut JsonlWriter>,
) -> anyhow::Result<()> {
    let problem = args.problem.problem(sizes);
    let ReduceProblem { n, op, dtype } = problem;
    let asked = ReduceConfig { staged: args.staged, ..backend.reduce_default_config() };
    let (default, fit) = dynsmem::host::kernels::reduce::fit_config(backend, variant, dtype, asked);
    let config = ReduceConfig {
        block: args.block.unwrap_or(default.block),
        items_per_thread: args.ipt.unwrap_or(default.items_per_thread),
        staged: args.staged,
    };
    let note = fit.filter(|_| config == default);
    // Validate before generating gigabytes of input, so bad input fails fast.
    let plan =
        dynsmem::host::kernels::reduce::ReducePlan::new(backend, problem, config, variant).with_context(|| {
            format!("reduce {} {} n={n} on {}: refused, nothing launched", op.name(), dtype.name(), backend.kind())
        })?;
    let passes = plan.passes.len();
    drop(plan);
    let anchor = bench::copy_anchor(backend, n * dtype.bytes() as u64, timing, prov);
    let seed = common.timing.seed;
    let mut rec = match dtype {
        Dtype::F32 => bench::reduce(
            backend,
            &f32::inputs(n as usize, seed),
            problem,
            config,
            variant,
            timing,
            prov,
            Some(&anchor),
        ),
        Dtype::U32 => bench::reduce(
            backend,
            &u32::inputs(n as usize, seed),
            problem,
            config,
            variant,
            timing,
            prov,
            Some(&anchor),
        ),
    };
    rec.note = note;
    let heading = format!("{passes} pass{}", if passes == 1 { "" } else { "es" });
    finish(Some(heading), &rec, Some(&anchor), out)
}

fn run_bench(
    json: Option<PathBuf>,
    markdown: bool,
    plots: Option<PathBuf>,
    n: Option<u64>,
    quick: bool,
    timing: TimingArgs,
) -> anyhow::Result<()> {
    let opts =
        suite::BenchOptions { timing: timing_options(&timing)?, n, quick, seed: timing.seed, command: command_line() };
    if let Some(n) = n {
        suite::check_n(n).context("bench: refused, nothing launched")?;
    }
    let mut out = match &json {
        Some(path) => Some(JsonlWriter::append(path).with_context(|| format!("--json {}", path.display()))?),
        None => None,
    };
    // Each record is appended (one whole line, synced) as soon as it is made; the first
    // write error stops further writes and fails the command at the end.
    let mut write_error: Option<anyhow::Error> = None;
    let mut written = 0usize;
    let report = suite::bench(&opts, &mut |line| eprintln!("... {line}"), &mut |record| {
        if let (Some(w), None) = (out.as_mut(), &write_error) {
            match w.write(record) {
                Ok(()) => written += 1,
                Err(e) => write_error = Some(e.into()),
            }
        }
    });
    for line in &report.backends {
        say!("{line}");
    }
    say!("");
    let style = if markdown { TableStyle::Markdown } else { TableStyle::Text };
    let table = records_table(&report.records).render(style);
    say!("{}", table.strip_suffix('\n').unwrap_or(&table));
    if let Some(e) = write_error {
        return Err(e.context(format!("{written} of {} records appended", report.records.len())));
    }
    if let Some(path) = &json {
        say!("\n{written} records appended to {}", path.display());
    }
    if report.records.is_empty() {
        bail!("no backend available: nothing was measured");
    }
    // After the records are safe in their file: a plot that cannot be written loses none.
    if let Some(dir) = &plots {
        let paths = dynsmem::host::report::plot::write(&report.records, dir)
            .with_context(|| format!("--plots {}", dir.display()))?;
        say!("\n{} plots written to {}", paths.len(), dir.display());
    }
    Ok(())
}

/// `dynsmem plot`: the plots of a record file (torn lines, left by a killed writer, are
/// skipped and counted on stderr).
fn plot(records: &std::path::Path, out: &std::path::Path) -> anyhow::Result<()> {
    let contents = dynsmem::host::report::read_jsonl(records)?;
    if !contents.torn.is_empty() {
        eprintln!("{}: {} torn line(s) skipped", records.display(), contents.torn.len());
    }
    if contents.records.is_empty() {
        bail!("{}: no records", records.display());
    }
    let paths = dynsmem::host::report::plot::write(&contents.records, out)
        .with_context(|| format!("--out {}", out.display()))?;
    for p in &paths {
        say!("{}", p.display());
    }
    say!("{} plots of {} records", paths.len(), contents.records.len());
    Ok(())
}
