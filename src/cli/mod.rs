//! The command line of `dynsmem`, parsed by clap: every subcommand, family and option,
//! with the values each accepts. A library module (not private to the binary) so that the
//! parser itself can be fuzzed (`host/fuzz`, target `cli_args`) and tested.

//!
//! `run` and `tune` have a subcommand per family of the registry
//! ([`crate::families`]), each with the options the family declares
//! (its problem's, then its config's), so they are built at run time ([`command`]) rather
//! than derived.

use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
pub use dynsmem_host::backend::BackendKind;
use dynsmem_host::family::{DynFamily, find};

/// `println!` without its panic: when the reader went away (`dynsmem ... | head`) the
/// rest of the output goes nowhere and the command still finishes (its records are
/// written, its exit code tells); any other failure to write stdout (a full disk) is an
/// error of the command.
macro_rules! say {
    ($($arg:tt)*) => {
        emit(::std::format_args!($($arg)*))?
    };
}

pub(crate) fn emit(args: std::fmt::Arguments<'_>) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_fmt(args).and_then(|()| out.write_all(b"\n")).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(anyhow::Error::new(e).context("writing to stdout")),
        _ => Ok(()),
    }
}

mod app;
pub use app::prepare_on;
mod files;
mod kt_cmd;
mod probe_cmd;
mod sass_cmd;
mod spirv_cmd;
mod tune_cmd;
mod workers;

/// The command line over `families` (the built-in ones, `dynsmem::host::families::FAMILIES`,
/// a researcher's own [`crate::host::family::kernel::KernelFamily`]s, or both): `run`, `tune`,
/// `bench`, `shapes` and the rest take their kernels from them, and the backends load the
/// families' device images beside the built-in one. A researcher's binary is
/// `fn main() -> anyhow::Result<()> { dynsmem::cli::main(&[&MY_KERNEL]) }`.
pub fn main(families: &[&'static dyn DynFamily]) -> anyhow::Result<()> {
    match run(families, Invocation::from_env()?) {
        Err(e) => match e.downcast::<clap::Error>() {
            // Usage errors and `--help` print as clap prints them, with its exit code.
            Ok(usage) => usage.exit(),
            Err(e) => Err(e),
        },
        ok => ok,
    }
}

/// The command line `invocation.args` over `families`, in this process, as a library call: a
/// usage error (or `--help`) is a [`clap::Error`] in the result, never an exit; a sweep's
/// workers are started as `invocation.worker` says. The Python package's entry.
pub fn run(families: &[&'static dyn DynFamily], invocation: Invocation) -> anyhow::Result<()> {
    crate::set_families(families)?;
    let _current = invocation::Current::set(invocation);
    app::main()
}

mod invocation {
    use std::ffi::OsString;
    use std::sync::Mutex;

    /// How a command was started: its command line (the program's name first), as records
    /// and worker command lines carry it, and the program (with leading arguments) that runs
    /// a worker of its sweeps with the command's own arguments after it: this binary, or
    /// `python -m dynsmem` for the Python package, whose process is Python.
    #[derive(Debug, Clone, PartialEq)]
    pub struct Invocation {
        pub args: Vec<String>,
        pub worker: Vec<OsString>,
    }

    impl Invocation {
        /// This process's own command line, its workers this binary.
        pub fn from_env() -> anyhow::Result<Invocation> {
            use anyhow::Context;
            let exe = std::env::current_exe().context("the path of this binary")?;
            Ok(Invocation { args: std::env::args().collect(), worker: vec![exe.into_os_string()] })
        }
        /// The command this process runs now ([`super::run`]'s), else this process's own.
        pub fn current() -> anyhow::Result<Invocation> {
            match CURRENT.lock().expect("not poisoned").clone() {
                Some(i) => Ok(i),
                None => Invocation::from_env(),
            }
        }
        /// The arguments after the program's name.
        pub fn rest(&self) -> Vec<String> {
            self.args.iter().skip(1).cloned().collect()
        }
        /// A process of the worker program with `args` after it.
        pub fn worker_command(&self, args: &[String]) -> std::process::Command {
            let mut cmd = std::process::Command::new(&self.worker[0]);
            cmd.args(&self.worker[1..]).args(args);
            cmd
        }
    }

    static CURRENT: Mutex<Option<Invocation>> = Mutex::new(None);

    /// [`CURRENT`] for one command: cleared when dropped.
    pub struct Current;
    impl Current {
        pub fn set(invocation: Invocation) -> Current {
            *CURRENT.lock().expect("not poisoned") = Some(invocation);
            Current
        }
    }
    impl Drop for Current {
        fn drop(&mut self) {
            *CURRENT.lock().expect("not poisoned") = None;
        }
    }
}

pub use invocation::Invocation;

#[derive(Parser)]
#[command(name = "dynsmem", version, about = "GPU workgroup (shared) memory sized at launch: run, verify, compare")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// How the CPU backend runs a workgroup's threads: `fast` (coroutines, all cores; the
    /// default) or `stress` (an OS thread each, perturbed order and delays: finds races).
    /// Over `DYNSMEM_CPU_SCHEDULE`.
    #[arg(long, global = true, value_enum)]
    pub cpu_schedule: Option<dynsmem_host::backend::cpu::CpuSchedule>,
}

#[derive(Subcommand)]
pub enum Command {
    /// List every backend found, with its workgroup-memory limits, and why any other cannot be used.
    Devices,
    /// Print the registry's family names, one per line (for scripts: `ci/gpu.sh`, `ci/sanitize.sh`).
    Families {
        /// Only the families with a static WGSL twin.
        #[arg(long)]
        wgsl: bool,
    },
    /// Run every family on every available backend at default sizes and print a comparison
    /// table: a row per problem, a column per backend and variant (see `dynsmem compare`).
    Bench {
        /// Append the records (JSON lines) to this file.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Print the table as Markdown.
        #[arg(long)]
        markdown: bool,
        /// Print the per-record table (a row per record, every field: config, bytes, times,
        /// clocks, notes and errors in full) instead of the comparison.
        #[arg(long)]
        wide: bool,
        /// Write SVG plots of this run's records into this folder (created if missing): a bar
        /// chart per family, GEMM TFLOP/s against size and the decomposition (see `dynsmem plot`).
        #[arg(long, value_name = "DIR")]
        plots: Option<PathBuf>,
        /// Elements per problem (default: 2^28 on a GPU, 2^22 on a CPU Vulkan adapter, 2^16 on the CPU backend).
        #[arg(long)]
        n: Option<u64>,
        /// Small problems on every backend (a GPU gets what a CPU Vulkan adapter gets): a
        /// check that every family runs and verifies, in seconds; its figures are not
        /// bandwidth figures (the data fits in cache).
        #[arg(long)]
        quick: bool,
        /// Run only this family (repeatable; default: every one).
        #[arg(long = "family", value_name = "FAMILY")]
        families: Vec<String>,
        /// Run only this backend (repeatable; default: every one present, the CPU backend
        /// only without a GPU).
        #[arg(long = "backend", value_enum)]
        backends: Vec<BackendKind>,
        /// The regression gate: hold every row to this baseline's (records of an earlier
        /// bench, e.g. `results/baseline/h200.jsonl`) on the same device; a row found more than
        /// `--tolerance` slower is measured again, interleaved with the baseline's config, and
        /// the command exits nonzero if it still is (or if a baseline row is no longer made).
        #[arg(long, value_name = "FILE")]
        against: Option<PathBuf>,
        /// The slowdown the gate lets pass, as a fraction.
        #[arg(long, default_value_t = dynsmem_host::report::gate::DEFAULT_TOLERANCE)]
        tolerance: f64,
        /// Device time one measurement may take, in milliseconds: a kernel whose runs would
        /// take longer is timed fewer times (at least 5, no warm-up past the verifying run);
        /// 0 times every one as `--repeats` and `--warmup` say.
        #[arg(long, default_value_t = crate::suite::BUDGET_MS)]
        budget_ms: f64,
        #[command(flatten)]
        timing: TimingArgs,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Memory probes, sized at launch: workgroup-memory latency, bank conflicts (stride)
    /// and access width, distributed shared memory (clusters), device-memory latency by
    /// working set and bandwidth by width and cache hint, atomics by contention, fences by
    /// scope, and the occupancy explorer (families' launch-sized bytes padded to the opt-in
    /// limit, time against resident blocks). Then the run beside published Hopper figures.
    /// Resumes from its --json file.
    Probe {
        /// Probes to run (default: every one).
        #[arg(value_enum)]
        probes: Vec<dynsmem_host::memprobe::ProbeKind>,
        /// Backends to run (repeatable; default: every GPU backend present, and the WGSL
        /// twins; the CPU backend only without a GPU).
        #[arg(long, value_enum)]
        backend: Vec<BackendKind>,
        /// Families the occupancy explorer pads (repeatable; default: reduce, softmax, sgemm).
        #[arg(long = "family", value_name = "FAMILY")]
        families: Vec<String>,
        /// Padding step of the occupancy explorer, in bytes.
        #[arg(long, default_value_t = 4096)]
        step: u32,
        /// Small sweeps and sizes (default on CPU backends and CPU Vulkan adapters).
        #[arg(long)]
        quick: bool,
        /// Append the records (JSON lines) to this file; points it already holds for this
        /// device are kept, not measured again (an interrupted run resumes).
        #[arg(long)]
        json: Option<PathBuf>,
        /// Print the tables as Markdown.
        #[arg(long)]
        markdown: bool,
        /// Write SVG plots of the records (this run's and the file's) into this folder.
        #[arg(long, value_name = "DIR")]
        plots: Option<PathBuf>,
        /// Seed of the rings the chases follow.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Each family's shape suite (`shapes.txt` in its folder): every shape beside its anchor
    /// measured in the same run (a copy of its bytes; cuBLAS for SGEMM), then per family the
    /// geometric mean and the minimum of the ratios. Resumes from its --json file.
    Shapes {
        /// Families to run (default: every family).
        families: Vec<String>,
        /// Backends to run (repeatable; default: every one present, the CPU backend only
        /// without a GPU).
        #[arg(long, value_enum)]
        backend: Vec<BackendKind>,
        /// Variants to run (repeatable; default: every variant of each backend).
        #[arg(long, value_enum)]
        variant: Vec<VariantArg>,
        /// The suites' small shapes (default on CPU backends and CPU Vulkan adapters).
        #[arg(long)]
        small: bool,
        /// Only the suite shapes of these labels (repeatable).
        #[arg(long, value_name = "LABEL")]
        label: Vec<String>,
        /// Draw this many shapes from each family's `[random]` template (M, N, K of SGEMM
        /// log-uniform in [64, 8192]), instead of its suite (or besides the shapes --label
        /// names).
        #[arg(long, value_name = "N")]
        random: Option<usize>,
        /// The seed of --random's draw (default: the clock's seconds; the labels carry it).
        #[arg(long, value_name = "S", requires = "random")]
        random_seed: Option<u64>,
        /// Append the records (JSON lines) to this file; shapes it already holds for this
        /// device are kept, not measured again (an interrupted run resumes).
        #[arg(long)]
        json: Option<PathBuf>,
        /// Print the tables as Markdown.
        #[arg(long)]
        markdown: bool,
        /// Write a plot per family (ratio against shape) into this folder.
        #[arg(long, value_name = "DIR")]
        plots: Option<PathBuf>,
        #[command(flatten)]
        timing: TimingArgs,
        #[command(flatten)]
        db: DbArgs,
    },
    /// The comparison table of a record file (`bench --json`): a row per problem; per CUDA
    /// launch-sized, cuda-static, WGSL literal and WGSL override the best verified figure and
    /// its ratio to the same-run anchor; fallbacks, refusals and wrong results as footnotes.
    /// Of repeated measurements the file's last counts.
    Compare {
        /// The JSON-lines record file.
        records: PathBuf,
        /// Print the table as Markdown.
        #[arg(long)]
        markdown: bool,
        /// The regression gate instead of the table: hold every row to this baseline's on
        /// the same device (see `bench --against`, which also re-measures a slower row);
        /// exits nonzero where a row is more than `--tolerance` slower, or missing.
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        /// The slowdown the gate lets pass, as a fraction.
        #[arg(long, default_value_t = dynsmem_host::report::gate::DEFAULT_TOLERANCE)]
        tolerance: f64,
        /// With --baseline: every row, not only the failing ones.
        #[arg(long)]
        all: bool,
        /// Write `decomposition.svg` into this folder (created if missing): per problem,
        /// launch-sized over plain WGSL (literal, override) split into launch-sized over
        /// cuda-static (static sizing), cuda-static over the best WGSL (the WGSL toolchain)
        /// and the best WGSL over plain WGSL (idiom: the subgroup twins).
        #[arg(long, value_name = "DIR")]
        plots: Option<PathBuf>,
        /// The decomposition of `--plots` as a table instead of the comparison: per problem,
        /// launch-sized over plain WGSL, and its three factors (static sizing, the WGSL
        /// toolchain, idiom).
        #[arg(long)]
        decomposition: bool,
    },
    /// SVG plots of a record file (`bench --json`): a bar chart per family (GB/s or TFLOP/s
    /// per backend and variant, the same-run anchor and ratio marked), GEMM TFLOP/s against
    /// size, and the decomposition (see `compare`); of repeated measurements the file's last
    /// is plotted.
    Plot {
        /// The JSON-lines record file.
        records: PathBuf,
        /// Folder to write the SVG files into (created if missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// The SPIR-V each family's WGSL pipelines compile to on this machine's Vulkan adapter
    /// (wgpu's naga options): loads and stores by storage class and width, per-thread arrays
    /// and their dynamic indices, loops, bounds-check clamps, size. Builds and runs each
    /// bench case once at the quick sizes (verified).
    Spirv {
        /// Families to profile (default: every family).
        families: Vec<String>,
        /// Append one JSON line per pipeline to this file.
        #[arg(long)]
        json: Option<PathBuf>,
        #[command(flatten)]
        db: DbArgs,
    },
    /// The machine code of each family's launch-sized Rust entry beside its CUDA C twin (no GPU
    /// needed): SASS instruction mixes from ptxas/nvcc and nvdisasm (shared loads and stores by
    /// width, cp.async and TMA copies, barriers, FMAs, local memory), at the configs the bench
    /// runs on an H100, with the classes that differ named. Needs the CUDA toolkit's ptxas, nvcc
    /// and nvdisasm (`source ci/ptxas.sh` installs them).
    Sass {
        /// Families to compare (default: every family with a CUDA C twin).
        families: Vec<String>,
        /// Print the tables as Markdown.
        #[arg(long)]
        markdown: bool,
        /// Append one JSON line per twin to this file.
        #[arg(long)]
        json: Option<PathBuf>,
        #[command(flatten)]
        db: DbArgs,
    },
    /// What the embedded AMD code objects give each kernel (no GPU needed): VGPRs, AGPRs, SGPRs,
    /// spills, scratch, the largest block it was compiled for, and the waves per SIMD that allows
    /// with a given block and launch-sized LDS, per `gfx` target.
    CodeObjects {
        /// Work-items per block for the occupancy column.
        #[arg(long, default_value_t = 256)]
        block: u32,
        /// Bytes of launch-sized LDS per block for the occupancy column.
        #[arg(long, default_value_t = 0)]
        lds: u32,
        /// Print Markdown tables.
        #[arg(long)]
        markdown: bool,
    },
    /// Join tuner caches (the shards of a sweep, or caches from several machines) into one:
    /// every entry the output lacks is appended; then each sweep in them is reported as
    /// `tune --replay` reports it.
    Merge {
        /// The cache to append to (created if missing).
        #[arg(long)]
        out: PathBuf,
        /// The caches to read.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Rows of each sweep's table of the fastest configs.
        #[arg(long, default_value_t = 10)]
        top: usize,
    },
    /// Run a strategy against a Kernel Tuner cache file or T4 results file (no device): how
    /// often it finds the file's optimum within the budget.
    ReplayKt {
        /// The Kernel Tuner cache (`.json` with a `cache` object) or T4 results file.
        file: PathBuf,
        /// The entry key (cache) or measurement name (T4): minimised, or maximised where it is a
        /// rate (a key with `/`, or ending in `FLOPS`: GFLOP/s, GFLOPS/W).
        #[arg(long, default_value = "time")]
        objective: String,
        #[arg(long, value_enum, default_value = "anneal")]
        strategy: StrategyArg,
        /// Distinct configs per run.
        #[arg(long)]
        budget_evals: Option<usize>,
        /// Seed of the first run (run i uses seed + i).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Independent runs.
        #[arg(long, default_value_t = 10)]
        repeats: usize,
    },
    /// The tuning database: the best config per tuned problem and device, which `run` and
    /// `bench` take their default configs from.
    Db {
        #[command(subcommand)]
        action: DbAction,
    },
}

#[derive(Subcommand)]
pub enum DbAction {
    /// Distil tuner caches into a database file: each sweep's best config with its hardware
    /// fingerprint (device, multiprocessors, driver, image, SM clock).
    Build {
        /// The caches to read.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// The database file to write (JSON lines).
        #[arg(long)]
        out: PathBuf,
        #[arg(long, value_enum, default_value = "time")]
        objective: ObjectiveArg,
    },
    /// List the entries `run` and `bench` read: the built-in database, then the given files
    /// and those of DYNSMEM_TUNING_DB.
    List {
        /// More database files or caches.
        files: Vec<PathBuf>,
        /// Only this family's entries.
        #[arg(long)]
        family: Option<String>,
    },
}

/// Where default configs come from.
#[derive(clap::Args, Clone)]
pub struct DbArgs {
    /// A tuning database file or tuner cache to take default configs from, besides the
    /// built-in one and DYNSMEM_TUNING_DB (repeatable).
    #[arg(long, value_name = "FILE")]
    pub tuning_db: Vec<PathBuf>,
    /// Take every default config from the families' heuristics: no tuning database, no
    /// tuning on first use.
    #[arg(long)]
    pub no_tuning_db: bool,
    /// Tuning on first use, for a problem no tuned config is within range of: the few
    /// configs the family's cost model ranks first are verified and timed (about two
    /// seconds) and the fastest kept in the autotune cache. `gpu`: on GPU backends (the
    /// default, or DYNSMEM_AUTOTUNE); `all`: the CPU backend too; `off`.
    #[arg(long, value_enum, value_name = "MODE")]
    pub autotune: Option<crate::host::tune::autotune::AutotuneMode>,
    /// The same as `--autotune off`: the heuristic default where nothing tuned is in range.
    #[arg(long, conflicts_with = "autotune")]
    pub no_autotune: bool,
    /// The autotune cache directory (default: DYNSMEM_AUTOTUNE_CACHE, else
    /// $XDG_CACHE_HOME/dynsmem/autotune or ~/.cache/dynsmem/autotune).
    #[arg(long, value_name = "DIR")]
    pub autotune_cache: Option<PathBuf>,
}

#[derive(clap::Args, Clone, Copy)]
pub struct TimingArgs {
    /// Untimed runs before timing (at least).
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    /// Milliseconds of warm-up before timing (at least): an idle GPU clocks down.
    #[arg(long, default_value_t = 200.0)]
    pub warmup_ms: f64,
    /// Timed runs (the median is reported; every time is recorded).
    #[arg(long, default_value_t = 20)]
    pub repeats: u32,
    /// Wait for each timed run before queueing the next (the device idles between runs
    /// while the host submits); default: queue them back to back, each still timed alone.
    #[arg(long)]
    pub wait_each_run: bool,
    /// Milliseconds of back-to-back runs after timing for the energy of one run, where the
    /// GPU has an energy counter (NVML, AMD SMI); 0: none.
    #[arg(long, default_value_t = 250.0)]
    pub energy_ms: f64,
    /// Lock the GPU's SM clock at this many MHz for the run (NVML; needs the driver's
    /// permission, usually root); records say whether it took. Reset at exit.
    #[arg(long, value_name = "MHZ")]
    pub lock_clocks: Option<u32>,
    /// Seed of the generated inputs.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum VariantArg {
    LaunchSized,
    WgslLiteral,
    WgslOverride,
    /// WGSL with subgroup operations where the kernel has them (wgsl only, where the
    /// adapter has the `SUBGROUP` feature).
    WgslSubgroup,
    /// CUDA C with static `__shared__` arrays, compiled per config through NVRTC (cuda only).
    CudaStatic,
}

impl From<VariantArg> for dynsmem_host::backend::Variant {
    fn from(v: VariantArg) -> Self {
        use dynsmem_host::backend::Variant;
        match v {
            VariantArg::LaunchSized => Variant::LaunchSized,
            VariantArg::WgslLiteral => Variant::WgslLiteral,
            VariantArg::WgslOverride => Variant::WgslOverride,
            VariantArg::WgslSubgroup => Variant::WgslSubgroup,
            VariantArg::CudaStatic => Variant::CudaStatic,
        }
    }
}

/// What every `run` takes besides its problem and config.
#[derive(clap::Args)]
pub struct Common {
    /// Backend (default: cuda when present, else hip, else wgsl on a GPU adapter, else cpu).
    #[arg(long, value_enum)]
    pub backend: Option<BackendKind>,
    /// Variant (default: the backend's first: launch-sized on cuda/hip/cpu, wgsl-literal on wgsl).
    #[arg(long, value_enum)]
    pub variant: Option<VariantArg>,
    /// Append the record and the anchor's (JSON lines) to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Print the config `run` would use and where it comes from (command line, tuning
    /// database, heuristic), then stop: nothing is launched.
    #[arg(long)]
    pub config_only: bool,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StrategyArg {
    /// Every config, in order.
    Exhaustive,
    /// Configs drawn at random without replacement.
    Random,
    /// Simulated annealing over neighbouring configs.
    Anneal,
    /// Greedy hill climbing with random restarts.
    HillClimb,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectiveArg {
    Time,
    Energy,
    Edp,
}

impl From<ObjectiveArg> for dynsmem_host::tune::Objective {
    fn from(o: ObjectiveArg) -> Self {
        match o {
            ObjectiveArg::Time => dynsmem_host::tune::Objective::Time,
            ObjectiveArg::Energy => dynsmem_host::tune::Objective::Energy,
            ObjectiveArg::Edp => dynsmem_host::tune::Objective::Edp,
        }
    }
}

/// What every `tune` takes besides its problem.
#[derive(clap::Args)]
pub struct TuneCommon {
    /// Backend (default as for run).
    #[arg(long, value_enum)]
    pub backend: Option<BackendKind>,
    /// Variant (default: the backend's first).
    #[arg(long, value_enum)]
    pub variant: Option<VariantArg>,
    #[arg(long, value_enum, default_value = "exhaustive")]
    pub strategy: StrategyArg,
    /// Stop after this many distinct configs (cached ones count).
    #[arg(long)]
    pub budget_evals: Option<usize>,
    /// Start no new config after this many seconds (the one in flight finishes).
    #[arg(long)]
    pub budget_seconds: Option<f64>,
    /// Seed of the strategy's random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Seed of the generated inputs.
    #[arg(long, default_value_t = 42)]
    pub input_seed: u64,
    /// The cache (JSON lines, appended to; configs already in it are not measured again).
    #[arg(long, default_value = "results/tune-cache.jsonl")]
    pub cache: PathBuf,
    /// Rows of the table of the fastest configs.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Write the evaluated configs in Kernel Tuner's T4 JSON format (the filtered ones in its
    /// metadata).
    #[arg(long)]
    pub t4: Option<PathBuf>,
    /// Write the sweep's Kernel Tuner files: PREFIX.t4.json, PREFIX.t4-metadata.json,
    /// PREFIX.kt-cache.json (Kernel Tuner's simulation mode replays it), PREFIX.best.json,
    /// and PREFIX.confirm.json (the top-k re-measurement).
    #[arg(long, value_name = "PREFIX")]
    pub kt: Option<PathBuf>,
    /// Write an SVG of time against shared bytes here, and a heatmap beside it (`<stem>-heatmap.svg`).
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// The heatmap's two parameters, e.g. `block,ipt` (default: the first two with several values).
    #[arg(long, value_delimiter = ',')]
    pub heatmap: Vec<String>,
    /// Replace a parameter's candidate values, e.g. `--values block=64,128,256` (repeatable).
    #[arg(long = "values", value_name = "NAME=V,V,..")]
    pub values: Vec<String>,
    /// No device: run the strategy against the results recorded in the cache.
    #[arg(long)]
    pub replay: bool,
    /// With --replay: the recorded device (a substring of its name), when the cache has several.
    #[arg(long)]
    pub device: Option<String>,
    /// No progress bar or per-config lines.
    #[arg(long)]
    pub quiet: bool,
    /// Untimed runs before timing each config (at least).
    #[arg(long, default_value_t = 2)]
    pub warmup: u32,
    /// Milliseconds of warm-up per config (at least).
    #[arg(long, default_value_t = 50.0)]
    pub warmup_ms: f64,
    /// Timed runs per config (all are kept; the median is the time objective).
    #[arg(long, default_value_t = 10)]
    pub repeats: u32,
    /// Wait for each timed run before queueing the next (the device idles between runs
    /// while the host submits); default: queue them back to back, each still timed alone.
    #[arg(long)]
    pub wait_each_run: bool,
    /// What the search minimises: the median time, the energy of one run (J), or their
    /// product (energy-delay product, J·s).
    #[arg(long, value_enum, default_value = "time")]
    pub objective: ObjectiveArg,
    /// Milliseconds of back-to-back runs per config for its energy, where the GPU has an
    /// energy counter (default: 250 with --objective energy or edp, else 0).
    #[arg(long)]
    pub energy_ms: Option<f64>,
    /// Re-measure the K best configs in interleaved rounds before naming the best, and
    /// report whether the ranking held (0: name the sweep's best as measured).
    #[arg(long, default_value_t = 3, value_name = "K")]
    pub confirm_top: usize,
    /// Rounds of the top-K re-measurement (each round times every one of the K once, in a
    /// rotated order).
    #[arg(long, default_value_t = 5)]
    pub confirm_rounds: usize,
    /// Lock the GPU's SM clock at this many MHz for the sweep (NVML; see `run --help`).
    #[arg(long, value_name = "MHZ")]
    pub lock_clocks: Option<u32>,
    /// Seconds a config may run (from its first launch to its recorded result) before its
    /// worker process is killed and the config recorded as failed. Default: 10 x the longest
    /// config of the sweep so far, at least 10 s (60 s before any has finished).
    #[arg(long, value_name = "SECONDS")]
    pub config_timeout: Option<f64>,
    /// Measure in this process, with no supervised worker: a config that faults on a GPU
    /// ends the sweep (its context is lost), one that hangs hangs it. Default: a worker
    /// process that a supervisor restarts past such configs, recording them as failed.
    #[arg(long)]
    pub in_process: bool,
    #[command(flatten)]
    pub shards: ShardArgs,
}

/// Splitting one sweep between processes (see docs/tuning.md, "Sharded sweeps").
#[derive(clap::Args, Clone)]
#[command(next_help_heading = "Sharded sweeps")]
pub struct ShardArgs {
    /// Run shard I of N of the sweep (exhaustive/random: a 1/N part of the filtered space, dealt in a fixed order;
    /// anneal/hill-climb: an independent walk, seed + I - 1), into its own cache
    /// `<cache stem>.shard-I-of-N.jsonl`; `dynsmem merge` joins the shards' caches.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<dynsmem_host::tune::Shard>,
    /// One worker process per listed GPU ordinal (`0,1,2,3`; repeat one to run several on it:
    /// `0,0`), each pinned to its GPU (CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES) and running
    /// one shard; their caches are merged into --cache at the end. On the CPU backend the
    /// numbers only count workers.
    #[arg(long, value_delimiter = ',', value_name = "ORDINALS")]
    pub devices: Vec<u32>,
    /// Write a Slurm job array (one task per shard, a GPU each) and a merge job that depends on
    /// it into this folder, with `submit.sh` that submits both; nothing runs here.
    #[arg(long, value_name = "DIR")]
    pub slurm: Option<PathBuf>,
    /// With --slurm: the number of shards (array tasks).
    #[arg(long, value_name = "N", requires = "slurm")]
    pub shards: Option<u32>,
    /// With --slurm: submit the jobs with sbatch now.
    #[arg(long, requires = "slurm")]
    pub submit: bool,
    /// With --slurm: an sbatch option for every job, e.g. `--slurm-option=--partition=gpu`
    /// (repeatable).
    #[arg(long, value_name = "OPTION", requires = "slurm", allow_hyphen_values = true)]
    pub slurm_option: Vec<String>,
    /// With --slurm: the generic resource each array task asks for (default `gpu:1` for the
    /// GPU backends, none for the CPU backend; `none` for none).
    #[arg(long, value_name = "GRES", requires = "slurm")]
    pub slurm_gres: Option<String>,
    /// Report progress as a worker of `--devices` does (machine lines on stderr).
    #[arg(long, hide = true)]
    pub worker: bool,
}

/// What the command line asks for.
pub enum Parsed {
    /// A subcommand with fixed options.
    Fixed(Command),
    /// `run <family>`: the family, its parsed options (read by the family), and the rest.
    Run { family: &'static dyn DynFamily, matches: clap::ArgMatches, common: Common },
    /// `tune <family>`.
    Tune { family: &'static dyn DynFamily, matches: clap::ArgMatches, tune: Box<TuneCommon> },
}

/// The whole command line: the derived subcommands, and `run` and `tune` with a
/// subcommand per registry family.
pub fn command() -> clap::Command {
    let mut run = clap::Command::new("run")
        .about("Run one kernel config, verify it against the CPU reference, and time it.")
        .subcommand_required(true);
    let mut tune = clap::Command::new("tune")
        .about(
            "Sweep one family's launch-time configs over one compiled image: filter, verify, time, cache \
             (resumable), and report the best (see docs/tuning.md).",
        )
        .subcommand_required(true);
    for f in crate::families() {
        let sub = || clap::Command::new(f.name()).about(f.about());
        // The flattened options' derive sets their struct's doc as the about: the family's
        // own goes on after them.
        run = run.subcommand(Common::augment_args(f.run_args(sub())).about(f.about()));
        if let Some(t) = f.tune_args(sub()) {
            tune = tune.subcommand(TuneCommon::augment_args(t).about(f.about()));
        }
    }
    Cli::command().subcommand(run).subcommand(tune)
}

/// Parses `args` (the program name first).
pub fn try_parse_from<I, T>(args: I) -> Result<Parsed, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let m = command().try_get_matches_from(args)?;
    // Process-wide, before any backend is made: every CPU backend of this run uses it.
    if let Some(&mode) = m.get_one::<dynsmem_host::backend::cpu::CpuSchedule>("cpu_schedule") {
        dynsmem_host::backend::cpu::set_cpu_schedule(mode);
    }
    let family = |name: &str| find(crate::families(), name).expect("subcommands are the registry's names");
    match m.subcommand() {
        Some(("run", r)) => {
            let (name, fm) = r.subcommand().expect("a family is required");
            Ok(Parsed::Run { family: family(name), common: Common::from_arg_matches(fm)?, matches: fm.clone() })
        }
        Some(("tune", t)) => {
            let (name, fm) = t.subcommand().expect("a family is required");
            Ok(Parsed::Tune {
                family: family(name),
                tune: Box::new(TuneCommon::from_arg_matches(fm)?),
                matches: fm.clone(),
            })
        }
        _ => Ok(Parsed::Fixed(Cli::from_arg_matches(&m)?.command)),
    }
}

/// The options of a `tune` command line that a shard's worker does not take: the ones
/// that start or place the shards, and the report files the merged sweep writes.
const NOT_FORWARDED: [(&str, bool); 11] = [
    ("--kt", true),
    ("--devices", true),
    ("--slurm", true),
    ("--shards", true),
    ("--submit", false),
    ("--slurm-option", true),
    ("--slurm-gres", true),
    ("--shard", true),
    ("--t4", true),
    ("--plot", true),
    ("--heatmap", true),
];

/// A `tune` command line (`args` without the program name) as each shard's worker runs
/// it: the same family, problem and options, without [`NOT_FORWARDED`]'s (in either the
/// `--name value` or the `--name=value` form). The caller adds `--shard I/N`.
pub fn worker_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        match NOT_FORWARDED.iter().find(|(n, _)| *n == name) {
            Some((_, true)) if !a.contains('=') => {
                it.next();
            }
            Some(_) => {}
            None => out.push(a.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_definition_is_consistent() {
        // clap's own checks (unique ids and flags among flattened argument structs, ...),
        // which it otherwise runs only in debug builds.
        super::command().debug_assert();
    }

    #[test]
    fn workers_get_the_sweep_without_the_orchestration() {
        let args: Vec<String> = "tune reduce --n 4096 --devices 0,1 --backend cpu --slurm=d --shards 3 --submit \
             --slurm-option=--partition=gpu --slurm-option --time=5 --t4 x.json --plot=p.svg --cache c.jsonl --quiet"
            .split_whitespace()
            .map(String::from)
            .collect();
        assert_eq!(super::worker_args(&args).join(" "), "tune reduce --n 4096 --backend cpu --cache c.jsonl --quiet");
        // Every option of the list exists in the command line definition.
        let tune = super::command().find_subcommand("tune").unwrap().find_subcommand("reduce").unwrap().clone();
        for (name, takes_value) in super::NOT_FORWARDED {
            let arg = tune.get_arguments().find(|a| a.get_long() == Some(&name[2..]));
            let arg = arg.unwrap_or_else(|| panic!("{name} is not an option of tune"));
            assert_eq!(arg.get_action().takes_values(), takes_value, "{name}");
        }
    }

    #[test]
    fn the_given_problem_fields_are_those_the_options_set() {
        let Ok(super::Parsed::Tune { family, matches, .. }) =
            super::try_parse_from("dynsmem tune histogram --bins 16".split(' '))
        else {
            panic!("tune histogram parses")
        };
        let sizes = dynsmem_host::family::Sizes::cpu_backend();
        let (problem, mut given) = family.problem(&matches, &sizes).unwrap();
        given.sort();
        // `n` comes from the sizes, not the options; the defaulted options count as given.
        assert_eq!(given, ["bins", "out_of_range_pct"]);
        assert_eq!(problem["bins"], 16);
        assert_eq!(problem["n"], sizes.n);
    }

    #[test]
    fn every_family_has_a_run_subcommand() {
        for f in dynsmem_host::families::FAMILIES {
            let parsed = super::try_parse_from(["dynsmem", "run", f.name()]).expect("defaults parse");
            assert!(matches!(parsed, super::Parsed::Run { family, .. } if family.name() == f.name()));
        }
    }
}
