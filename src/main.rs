//! `dynsmem`: list devices, run and verify one kernel config, benchmark every family.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand, ValueEnum};
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::backend::cuda::CudaBackend;
use dynsmem::host::backend::hip::HipBackend;
use dynsmem::host::backend::wgpu::WgpuBackend;
use dynsmem::host::backend::{Backend, BackendKind, Probe};
use dynsmem::host::bench;
use dynsmem::host::kernels::reduce::{ReduceConfig, ReduceElement, ReduceKernels, ReduceOp, ReduceProblem};
use dynsmem::host::kernels::{Kernels, Variant};
use dynsmem::host::measure::TimingOptions;
use dynsmem::host::report::{JsonlWriter, Record, TableStyle, records_table};
use dynsmem::suite;
use dynsmem_kernels::Dtype;

#[derive(Parser)]
#[command(name = "dynsmem", version, about = "GPU workgroup (shared) memory sized at launch: run, verify, compare")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List every backend found, with its workgroup-memory limits, and why any other cannot be used.
    Devices,
    /// Run one kernel config, verify it against the CPU reference, and time it.
    Run {
        #[command(subcommand)]
        family: RunFamily,
    },
    /// Run every family on every available backend at default sizes and print a comparison table.
    Bench {
        /// Append the records (JSON lines) to this file.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Print the table as Markdown.
        #[arg(long)]
        markdown: bool,
        /// Elements per problem (default: 2^28 on a GPU, 2^22 on a CPU Vulkan adapter, 2^16 on the CPU backend).
        #[arg(long)]
        n: Option<u64>,
        #[command(flatten)]
        timing: TimingArgs,
    },
}

#[derive(Subcommand)]
enum RunFamily {
    /// Sum / min / max of n elements to one value.
    Reduce(ReduceArgs),
    /// Exclusive prefix sum (decoupled look-back; WGSL: reduce-then-scan).
    Scan(ScanArgs),
    /// Counts of u32 keys in bins held in workgroup memory.
    Histogram(HistogramArgs),
    /// K-tap 1-D convolution with a halo tile.
    Conv1d(Conv1dArgs),
    /// 3x3 / 5x5 stencil (blur) with a bordered tile.
    Stencil2d(Stencil2dArgs),
    /// Matrix transpose through padded tiles.
    Transpose(TransposeArgs),
    /// Row-wise softmax, one row per block held in workgroup memory.
    Softmax(SoftmaxArgs),
    /// One all-pairs n-body step, bodies staged in tiles.
    Nbody(NbodyArgs),
}

#[derive(clap::Args, Clone, Copy)]
struct TimingArgs {
    /// Untimed runs before timing (at least).
    #[arg(long, default_value_t = 3)]
    warmup: u32,
    /// Milliseconds of warm-up before timing (at least): an idle GPU clocks down.
    #[arg(long, default_value_t = 200.0)]
    warmup_ms: f64,
    /// Timed runs (the median is reported; every time is recorded).
    #[arg(long, default_value_t = 20)]
    repeats: u32,
    /// Seed of the generated inputs.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BackendArg {
    /// Rust kernels (PTX) on an NVIDIA GPU.
    Cuda,
    /// The static-WGSL kernels through wgpu on a Vulkan adapter.
    Wgsl,
    /// Rust kernels (HSA code objects) on an AMD GPU through HIP.
    Hip,
    /// Rust kernels on the host: one OS thread per kernel thread, real barriers, checked.
    Cpu,
}

#[derive(Clone, Copy, ValueEnum)]
enum OpArg {
    Sum,
    Min,
    Max,
}

#[derive(Clone, Copy, ValueEnum)]
enum DtypeArg {
    F32,
    U32,
}

#[derive(Clone, Copy, ValueEnum)]
enum VariantArg {
    LaunchSized,
    WgslLiteral,
    WgslOverride,
}

/// What every `run` takes besides its problem and config.
#[derive(clap::Args)]
struct Common {
    /// Backend (default: cuda when present, else hip, else wgsl on a GPU adapter, else cpu).
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    /// Variant (default: the backend's first: launch-sized on cuda/hip/cpu, wgsl-literal on wgsl).
    #[arg(long, value_enum)]
    variant: Option<VariantArg>,
    /// Append the record and the anchor's (JSON lines) to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    timing: TimingArgs,
}

#[derive(clap::Args)]
struct ReduceArgs {
    /// Number of elements (default: 2^28 on a GPU, 2^22 on a CPU Vulkan adapter, 2^16 on the CPU backend).
    #[arg(long)]
    n: Option<u64>,
    #[arg(long, value_enum, default_value = "sum")]
    op: OpArg,
    #[arg(long, value_enum, default_value = "f32")]
    dtype: DtypeArg,
    /// Threads per block (default: the backend's default config).
    #[arg(long)]
    block: Option<u32>,
    /// Elements each thread folds per chunk (default: the backend's default config).
    #[arg(long)]
    ipt: Option<u32>,
    /// Stage each chunk through a launch-sized tile of block * ipt elements.
    #[arg(long)]
    staged: bool,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Args)]
struct ScanArgs {
    /// Elements (default as reduce).
    #[arg(long)]
    n: Option<u64>,
    #[arg(long, value_enum, default_value = "f32")]
    dtype: DtypeArg,
    #[arg(long)]
    block: Option<u32>,
    /// Elements per thread (a tile is block * ipt).
    #[arg(long)]
    ipt: Option<u32>,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Args)]
struct HistogramArgs {
    /// Keys (default as reduce).
    #[arg(long)]
    n: Option<u64>,
    #[arg(long, default_value_t = 256)]
    bins: u32,
    /// Percent of keys outside [0, bins) (not counted).
    #[arg(long, default_value_t = 0)]
    out_of_range: u32,
    #[arg(long)]
    block: Option<u32>,
    #[arg(long)]
    grid: Option<u32>,
    /// Private copies of the bins per block.
    #[arg(long)]
    copies: Option<u32>,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Args)]
struct Conv1dArgs {
    /// Samples (default as reduce).
    #[arg(long)]
    n: Option<u64>,
    /// Taps (odd, 3..=129).
    #[arg(long, default_value_t = 33)]
    taps: u32,
    #[arg(long)]
    block: Option<u32>,
    /// Outputs per thread: 4 or 8 (instantiated in the image).
    #[arg(long)]
    outputs_per_thread: Option<u32>,
    #[command(flatten)]
    common: Common,
}

#[derive(Clone, Copy, ValueEnum)]
enum BlurArg {
    Box,
    Gaussian,
}

#[derive(clap::Args)]
struct Stencil2dArgs {
    /// Image width and height (default: 16384 on a GPU).
    #[arg(long)]
    width: Option<u32>,
    #[arg(long)]
    height: Option<u32>,
    /// 1 (3x3) or 2 (5x5).
    #[arg(long, default_value_t = 1)]
    radius: u32,
    #[arg(long, value_enum, default_value = "gaussian")]
    blur: BlurArg,
    #[arg(long)]
    block: Option<u32>,
    #[arg(long)]
    tile_w: Option<u32>,
    #[arg(long)]
    tile_h: Option<u32>,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Args)]
struct TransposeArgs {
    /// Rows and columns (default: 16384 on a GPU).
    #[arg(long)]
    rows: Option<u32>,
    #[arg(long)]
    cols: Option<u32>,
    #[arg(long)]
    block: Option<u32>,
    #[arg(long)]
    tile: Option<u32>,
    /// Floats of padding per shared-tile row (1 avoids bank conflicts).
    #[arg(long)]
    pad: Option<u32>,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Args)]
struct SoftmaxArgs {
    /// Rows (default: 65536 on a GPU).
    #[arg(long)]
    rows: Option<u32>,
    /// Row length, 1..=32768 fits an H100's launch-sized limit.
    #[arg(long, default_value_t = 4096)]
    cols: u32,
    #[arg(long)]
    block: Option<u32>,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Args)]
struct NbodyArgs {
    /// Bodies (default: 65536 on a GPU).
    #[arg(long)]
    n: Option<u32>,
    #[arg(long)]
    block: Option<u32>,
    /// Bodies per shared-memory tile.
    #[arg(long)]
    tile: Option<u32>,
    #[command(flatten)]
    common: Common,
}

fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Devices => devices(),
        Command::Run { family } => run(family),
        Command::Bench { json, markdown, n, timing } => run_bench(json, markdown, n, timing),
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
        Probe::Ready(b) => println!("{}\n    {}", suite::describe(&b), limits_line(&b)),
        Probe::Unavailable(k, why) => println!("{k}: unavailable: {why}"),
    }
    match dynsmem::wgsl() {
        Probe::Ready(b) => println!("{}\n    {}", suite::describe(&b), limits_line(&b)),
        Probe::Unavailable(k, why) => println!("{k}: unavailable: {why}"),
    }
    match dynsmem::hip(0) {
        Probe::Ready(b) => println!("{}\n    {}", suite::describe(&b), limits_line(&b)),
        Probe::Unavailable(k, why) => println!("{k}: unavailable: {why}"),
    }
    let cpu = CpuBackend::new();
    println!("{}\n    {}", suite::describe(&cpu), limits_line(&cpu));
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
    };
    match pick(common.backend)? {
        Picked::Cuda(b) => run_on(&b, &family, common),
        Picked::Hip(b) => run_on(&b, &family, common),
        Picked::Wgsl(b) => run_on(&b, &family, common),
        Picked::Cpu(b) => run_on(&b, &family, common),
    }
}

fn variant_of<B: Kernels>(backend: &B, v: Option<VariantArg>) -> Variant {
    match v {
        None => Kernels::variants(backend)[0],
        Some(VariantArg::LaunchSized) => Variant::LaunchSized,
        Some(VariantArg::WgslLiteral) => Variant::WgslLiteral,
        Some(VariantArg::WgslOverride) => Variant::WgslOverride,
    }
}

fn dtype_of(d: DtypeArg) -> Dtype {
    match d {
        DtypeArg::F32 => Dtype::F32,
        DtypeArg::U32 => Dtype::U32,
    }
}

fn json<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).expect("problems and configs serialize")
}

/// Runs one family's config on `backend`: verify, time, print, record.
fn run_on<B: ReduceKernels + Kernels>(backend: &B, family: &RunFamily, common: &Common) -> anyhow::Result<()> {
    use dynsmem::host::device::{conv1d, histogram, nbody, scan, softmax, stencil2d, transpose};
    use dynsmem::host::kernels as k;
    let sizes = suite::Sizes::for_backend(backend, None);
    let t = &common.timing;
    let timing = TimingOptions { warmup: t.warmup, warmup_ms: t.warmup_ms, repeats: t.repeats };
    let prov = dynsmem::provenance(backend.kind(), &command_line());
    let variant = variant_of(backend, common.variant);
    let seed = t.seed;
    println!("{}", suite::describe(backend));
    let anchor_for = |bytes: u64| Some(bench::copy_anchor(backend, bytes, timing, &prov));
    let (rec, anchor) = match family {
        RunFamily::Reduce(a) => return reduce_on(backend, a, sizes.n, variant, timing, &prov, common),
        RunFamily::Scan(a) => {
            let p = k::scan::ScanProblem { n: a.n.unwrap_or(sizes.n), dtype: dtype_of(a.dtype) };
            let d = k::scan::default_config(backend);
            let c = scan::ScanConfig {
                block: a.block.unwrap_or(d.block),
                items_per_thread: a.ipt.unwrap_or(d.items_per_thread),
            };
            let anchor = anchor_for(p.n * 4);
            let prepared_f = |v| k::scan::prepare::<B, f32>(backend, p, c, v, seed);
            let prepared_u = |v| k::scan::prepare::<B, u32>(backend, p, c, v, seed);
            let rec = match p.dtype {
                Dtype::F32 => bench::workload(
                    backend,
                    "scan",
                    variant,
                    json(&p),
                    json(&c),
                    prepared_f(variant),
                    timing,
                    &prov,
                    anchor.as_ref(),
                ),
                Dtype::U32 => bench::workload(
                    backend,
                    "scan",
                    variant,
                    json(&p),
                    json(&c),
                    prepared_u(variant),
                    timing,
                    &prov,
                    anchor.as_ref(),
                ),
            };
            (rec, anchor)
        }
        RunFamily::Histogram(a) => {
            let p = k::histogram::HistogramProblem {
                n: a.n.unwrap_or(sizes.n),
                bins: a.bins,
                out_of_range_pct: a.out_of_range,
            };
            let d = k::histogram::default_config(backend, &p);
            let c = histogram::HistogramConfig {
                block: a.block.unwrap_or(d.block),
                grid: a.grid.unwrap_or(d.grid),
                copies: a.copies.unwrap_or(d.copies),
            };
            let anchor = anchor_for(p.n * 4);
            let w = k::histogram::prepare(backend, p, c, variant, seed);
            (
                bench::workload(backend, "histogram", variant, json(&p), json(&c), w, timing, &prov, anchor.as_ref()),
                anchor,
            )
        }
        RunFamily::Conv1d(a) => {
            let p = k::conv1d::Conv1dProblem { n: a.n.unwrap_or(sizes.n), taps: a.taps };
            let d = k::conv1d::default_config(backend, a.taps);
            let c = conv1d::Conv1dConfig {
                block: a.block.unwrap_or(d.block),
                outputs_per_thread: a.outputs_per_thread.unwrap_or(d.outputs_per_thread),
            };
            let anchor = anchor_for(p.n * 4);
            let w = k::conv1d::prepare(backend, p, c, variant, seed);
            (bench::workload(backend, "conv1d", variant, json(&p), json(&c), w, timing, &prov, anchor.as_ref()), anchor)
        }
        RunFamily::Stencil2d(a) => {
            let blur = match a.blur {
                BlurArg::Box => k::stencil2d::Blur::Box,
                BlurArg::Gaussian => k::stencil2d::Blur::Gaussian,
            };
            let (width, height) = (a.width.unwrap_or(sizes.side), a.height.unwrap_or(sizes.side));
            let p = k::stencil2d::Stencil2dProblem { width, height, radius: a.radius, blur };
            let d = k::stencil2d::default_config(backend);
            let c = stencil2d::Stencil2dConfig {
                block: a.block.unwrap_or(d.block),
                tile_w: a.tile_w.unwrap_or(d.tile_w),
                tile_h: a.tile_h.unwrap_or(d.tile_h),
            };
            let anchor = anchor_for(width as u64 * height as u64 * 4);
            let w = k::stencil2d::prepare(backend, p, c, variant, seed);
            (
                bench::workload(backend, "stencil2d", variant, json(&p), json(&c), w, timing, &prov, anchor.as_ref()),
                anchor,
            )
        }
        RunFamily::Transpose(a) => {
            let p = k::transpose::TransposeProblem {
                rows: a.rows.unwrap_or(sizes.side),
                cols: a.cols.unwrap_or(sizes.side),
            };
            let d = k::transpose::default_config(backend);
            let c = transpose::TransposeConfig {
                block: a.block.unwrap_or(d.block),
                tile: a.tile.unwrap_or(d.tile),
                pad: a.pad.unwrap_or(d.pad),
            };
            let anchor = anchor_for(p.rows as u64 * p.cols as u64 * 4);
            let w = k::transpose::prepare(backend, p, c, variant, seed);
            (
                bench::workload(backend, "transpose", variant, json(&p), json(&c), w, timing, &prov, anchor.as_ref()),
                anchor,
            )
        }
        RunFamily::Softmax(a) => {
            let p = k::softmax::SoftmaxProblem { rows: a.rows.unwrap_or(sizes.softmax_rows), cols: a.cols };
            let c = softmax::SoftmaxConfig { block: a.block.unwrap_or(k::softmax::default_config(backend).block) };
            let anchor = anchor_for(p.rows as u64 * p.cols as u64 * 4);
            let w = k::softmax::prepare(backend, p, c, variant, seed);
            (
                bench::workload(backend, "softmax", variant, json(&p), json(&c), w, timing, &prov, anchor.as_ref()),
                anchor,
            )
        }
        RunFamily::Nbody(a) => {
            let p = k::nbody::NbodyProblem::new(a.n.unwrap_or(sizes.nbody));
            let d = k::nbody::default_config(backend);
            let c = nbody::NbodyConfig { block: a.block.unwrap_or(d.block), tile: a.tile.unwrap_or(d.tile) };
            let w = k::nbody::prepare(backend, p, c, variant, seed);
            (bench::workload(backend, "nbody", variant, json(&p), json(&c), w, timing, &prov, None), None)
        }
    };
    print_record(&rec, anchor.as_ref());
    finish(&rec, anchor.as_ref(), common)
}

/// Appends the records and turns a failed config into a nonzero exit.
fn finish(rec: &Record, anchor: Option<&Record>, common: &Common) -> anyhow::Result<()> {
    if let Some(path) = &common.json {
        let mut w = JsonlWriter::append(path)?;
        w.write(rec)?;
        if let Some(a) = anchor {
            w.write(a)?;
        }
    }
    if let Some(e) = &rec.error {
        bail!("{e}");
    }
    Ok(())
}

fn print_record(rec: &Record, anchor: Option<&Record>) {
    println!(
        "kernel {} ({}); launch-sized shared memory {} B, static {} B",
        rec.kernel, rec.variant, rec.shared_bytes, rec.static_shared_bytes
    );
    if let (Some(med), Some(min), Some(max)) = (rec.median_ms, rec.min_ms, rec.max_ms) {
        let mut figures = Vec::new();
        if let Some(g) = rec.gbps {
            figures.push(format!("{g:.1} GB/s"));
        }
        if let Some(t) = rec.tflops {
            figures.push(format!("{t:.2} TFLOP/s"));
        }
        println!(
            "time: median {med:.4} ms (min {min:.4}, max {max:.4}) over {} runs [{}]; {}",
            rec.times_ms.len(),
            rec.timer,
            figures.join(", ")
        );
    }
    if let Some(a) = anchor.and_then(|a| a.gbps) {
        let ratio = rec.ratio.map(|r| format!("; ratio {r:.3}")).unwrap_or_default();
        println!("anchor: device-to-device copy {a:.1} GB/s (read + write){ratio}");
    }
    match &rec.error {
        Some(e) => println!("error: {e}"),
        None => println!("verified: {}", if rec.verified { "yes, against the CPU reference" } else { "NO" }),
    }
}

#[allow(clippy::too_many_arguments)]
fn reduce_on<B: ReduceKernels>(
    backend: &B,
    args: &ReduceArgs,
    default_n: u64,
    variant: Variant,
    timing: TimingOptions,
    prov: &dynsmem::host::report::Provenance,
    common: &Common,
) -> anyhow::Result<()> {
    let n = args.n.unwrap_or(default_n);
    let default = backend.reduce_default_config();
    let config = ReduceConfig {
        block: args.block.unwrap_or(default.block),
        items_per_thread: args.ipt.unwrap_or(default.items_per_thread),
        staged: args.staged,
    };
    let op = match args.op {
        OpArg::Sum => ReduceOp::Sum,
        OpArg::Min => ReduceOp::Min,
        OpArg::Max => ReduceOp::Max,
    };
    let dtype = dtype_of(args.dtype);
    let problem = ReduceProblem { n, op, dtype };
    // Validate before generating gigabytes of input, so bad input fails fast.
    let plan = dynsmem::host::kernels::reduce::ReducePlan::new(backend, problem, config, variant)
        .with_context(|| format!("reduce {} {} n={n} on {}", op.name(), dtype.name(), backend.kind()))?;
    let passes = plan.passes.len();
    drop(plan);
    let anchor = bench::copy_anchor(backend, n * dtype.bytes() as u64, timing, prov);
    let seed = common.timing.seed;
    let rec = match dtype {
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
    println!("{passes} pass{}", if passes == 1 { "" } else { "es" });
    print_record(&rec, Some(&anchor));
    finish(&rec, Some(&anchor), common)
}

fn run_bench(json: Option<PathBuf>, markdown: bool, n: Option<u64>, timing: TimingArgs) -> anyhow::Result<()> {
    let opts = suite::BenchOptions {
        timing: TimingOptions { warmup: timing.warmup, warmup_ms: timing.warmup_ms, repeats: timing.repeats },
        n,
        seed: timing.seed,
        command: command_line(),
    };
    let report = suite::bench(&opts, &mut |line| eprintln!("... {line}"));
    for line in &report.backends {
        println!("{line}");
    }
    println!();
    let style = if markdown { TableStyle::Markdown } else { TableStyle::Text };
    print!("{}", records_table(&report.records).render(style));
    if let Some(path) = json {
        let mut w = JsonlWriter::append(&path).with_context(|| format!("opening {}", path.display()))?;
        for r in &report.records {
            w.write(r)?;
        }
        println!("\n{} records appended to {}", report.records.len(), path.display());
    }
    if report.records.is_empty() {
        bail!("no backend available: nothing was measured");
    }
    Ok(())
}
