//! `dynsmem`: list devices, run and verify one kernel config, benchmark every family.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand, ValueEnum};
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::backend::{Backend, BackendKind, Probe};
use dynsmem::host::bench;
use dynsmem::host::kernels::Variant;
use dynsmem::host::kernels::reduce::{ReduceConfig, ReduceElement, ReduceKernels, ReduceOp, ReduceProblem};
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
    /// Backend (default: cuda when present, else hip, else wgsl on a GPU adapter, else cpu).
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    /// Variant (default: the backend's first: launch-sized on cuda, wgsl-literal on wgsl).
    #[arg(long, value_enum)]
    variant: Option<VariantArg>,
    /// Append the record (JSON lines) to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    timing: TimingArgs,
}

fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Devices => devices(),
        Command::Run { family: RunFamily::Reduce(args) } => run_reduce(args),
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

fn run_reduce(args: ReduceArgs) -> anyhow::Result<()> {
    // Without --backend: CUDA if present, else a Vulkan GPU, else the CPU backend.
    match args.backend {
        Some(BackendArg::Cuda) => match dynsmem::cuda(0) {
            Probe::Ready(b) => reduce_on(&b, &args),
            Probe::Unavailable(k, why) => bail!("{k} unavailable: {why}"),
        },
        Some(BackendArg::Wgsl) => match dynsmem::wgsl() {
            Probe::Ready(b) => reduce_on(&b, &args),
            Probe::Unavailable(k, why) => bail!("{k} unavailable: {why}"),
        },
        Some(BackendArg::Hip) => match dynsmem::hip(0) {
            Probe::Ready(b) => reduce_on(&b, &args),
            Probe::Unavailable(k, why) => bail!("{k} unavailable: {why}"),
        },
        Some(BackendArg::Cpu) => reduce_on(&CpuBackend::new(), &args),
        None => {
            match dynsmem::cuda(0) {
                Probe::Ready(b) => return reduce_on(&b, &args),
                Probe::Unavailable(k, why) => eprintln!("{k} unavailable ({why})"),
            }
            match dynsmem::hip(0) {
                Probe::Ready(b) => return reduce_on(&b, &args),
                Probe::Unavailable(k, why) => eprintln!("{k} unavailable ({why})"),
            }
            match dynsmem::wgsl() {
                Probe::Ready(b) if !b.info().is_cpu => return reduce_on(&b, &args),
                Probe::Ready(b) => eprintln!("wgsl adapter {} is a CPU adapter", b.info().name),
                Probe::Unavailable(k, why) => eprintln!("{k} unavailable ({why})"),
            }
            eprintln!("no GPU: using the CPU backend (--backend wgsl runs the WGSL kernels on the CPU Vulkan adapter)");
            reduce_on(&CpuBackend::new(), &args)
        }
    }
}

fn reduce_on<B: ReduceKernels>(backend: &B, args: &ReduceArgs) -> anyhow::Result<()> {
    let info = backend.info();
    let n = args.n.unwrap_or(match (info.backend, info.is_cpu) {
        (BackendKind::Cpu, _) => suite::CPU_BACKEND_ELEMENTS,
        (_, true) => suite::CPU_ELEMENTS,
        _ => suite::GPU_ELEMENTS,
    });
    let default = backend.reduce_default_config();
    let config = ReduceConfig {
        block: args.block.unwrap_or(default.block),
        items_per_thread: args.ipt.unwrap_or(default.items_per_thread),
        staged: args.staged,
    };
    let variant = match args.variant {
        None => backend.reduce_variants()[0],
        Some(VariantArg::LaunchSized) => Variant::LaunchSized,
        Some(VariantArg::WgslLiteral) => Variant::WgslLiteral,
        Some(VariantArg::WgslOverride) => Variant::WgslOverride,
    };
    let op = match args.op {
        OpArg::Sum => ReduceOp::Sum,
        OpArg::Min => ReduceOp::Min,
        OpArg::Max => ReduceOp::Max,
    };
    let dtype = match args.dtype {
        DtypeArg::F32 => Dtype::F32,
        DtypeArg::U32 => Dtype::U32,
    };
    let problem = ReduceProblem { n, op, dtype };
    let timing =
        TimingOptions { warmup: args.timing.warmup, warmup_ms: args.timing.warmup_ms, repeats: args.timing.repeats };
    let prov = dynsmem::provenance(backend.kind(), &command_line());
    println!("{}", suite::describe(backend));
    // Validate before generating gigabytes of input, so bad input fails fast.
    let plan = dynsmem::host::kernels::reduce::ReducePlan::new(backend, problem, config, variant)
        .with_context(|| format!("reduce {} {} n={n} on {}", op.name(), dtype.name(), backend.kind()))?;
    let passes = plan.passes.len();
    drop(plan);
    let anchor = bench::copy_anchor(backend, n * dtype.bytes() as u64, timing, &prov);
    let rec = match dtype {
        Dtype::F32 => {
            let data = f32::inputs(n as usize, args.timing.seed);
            bench::reduce(backend, &data, problem, config, variant, timing, &prov, Some(&anchor))
        }
        Dtype::U32 => {
            let data = u32::inputs(n as usize, args.timing.seed);
            bench::reduce(backend, &data, problem, config, variant, timing, &prov, Some(&anchor))
        }
    };
    print_run(&rec, passes, &anchor);
    if let Some(path) = &args.json {
        let mut w = JsonlWriter::append(path)?;
        w.write(&rec)?;
        w.write(&anchor)?;
    }
    if let Some(e) = &rec.error {
        bail!("{e}");
    }
    Ok(())
}

fn print_run(rec: &Record, passes: usize, anchor: &Record) {
    println!(
        "kernel {} ({}), {} pass{}; launch-sized shared memory {} B, static {} B",
        rec.kernel,
        rec.variant,
        passes,
        if passes == 1 { "" } else { "es" },
        rec.shared_bytes,
        rec.static_shared_bytes
    );
    if let (Some(med), Some(min), Some(max), Some(g)) = (rec.median_ms, rec.min_ms, rec.max_ms, rec.gbps) {
        println!(
            "time: median {med:.4} ms (min {min:.4}, max {max:.4}) over {} runs [{}]; {g:.1} GB/s read",
            rec.times_ms.len(),
            rec.timer
        );
    }
    if let Some(a) = anchor.gbps {
        let ratio = rec.ratio.map(|r| format!("; ratio {r:.3}")).unwrap_or_default();
        println!("anchor: device-to-device copy {a:.1} GB/s (read + write){ratio}");
    }
    println!(
        "verified: {}",
        if rec.verified { "yes, against the CPU reference".to_string() } else { "NO".to_string() }
    );
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
