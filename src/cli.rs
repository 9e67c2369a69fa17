//! The command line of `dynsmem`, parsed by clap: every subcommand, family and option,
//! with the values each accepts. A library module (not private to the binary) so that the
//! parser itself can be fuzzed (`host/fuzz`, target `cli_args`) and tested.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use dynsmem_host::device::sgemm::{SgemmConfig, THREAD_TILE};
use dynsmem_host::kernels::conv1d::Conv1dProblem;
use dynsmem_host::kernels::histogram::HistogramProblem;
use dynsmem_host::kernels::reduce::{ReduceOp, ReduceProblem};
use dynsmem_host::kernels::scan::ScanProblem;
use dynsmem_host::kernels::stencil2d::{Blur, Stencil2dProblem};
use dynsmem_host::kernels::transpose::TransposeProblem;

use crate::suite::Sizes;

#[derive(Parser)]
#[command(name = "dynsmem", version, about = "GPU workgroup (shared) memory sized at launch: run, verify, compare")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
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
        /// Write SVG plots of this run's records into this folder (created if missing): a bar
        /// chart per family and GEMM TFLOP/s against size (see `dynsmem plot`).
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
        #[command(flatten)]
        timing: TimingArgs,
    },
    /// SVG plots of a record file (`bench --json`): a bar chart per family (GB/s or TFLOP/s
    /// per backend and variant, the same-run anchor and ratio marked) and GEMM TFLOP/s
    /// against size; of repeated measurements the file's last is plotted.
    Plot {
        /// The JSON-lines record file.
        records: PathBuf,
        /// Folder to write the SVG files into (created if missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Sweep one family's launch-time configs over one compiled image: filter, verify, time,
    /// cache (resumable), and report the best (see README "Tuning").
    Tune {
        #[command(subcommand)]
        family: TuneFamily,
    },
}

#[derive(Subcommand)]
pub enum RunFamily {
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
    /// C = alpha A B + beta C (f32, or f16 inputs), block tile and stages chosen at launch;
    /// on CUDA beside cuBLAS on the same inputs.
    Sgemm(SgemmArgs),
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
    /// Seed of the generated inputs.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
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
pub enum OpArg {
    Sum,
    Min,
    Max,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum DtypeArg {
    F32,
    U32,
}

impl DtypeArg {
    pub fn dtype(self) -> dynsmem_kernels::Dtype {
        match self {
            DtypeArg::F32 => dynsmem_kernels::Dtype::F32,
            DtypeArg::U32 => dynsmem_kernels::Dtype::U32,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum VariantArg {
    LaunchSized,
    WgslLiteral,
    WgslOverride,
    /// CUDA C with static `__shared__` arrays, compiled per config through NVRTC (cuda only).
    CudaStatic,
}

/// What every `run` takes besides its problem and config.
#[derive(clap::Args)]
pub struct Common {
    /// Backend (default: cuda when present, else hip, else wgsl on a GPU adapter, else cpu).
    #[arg(long, value_enum)]
    pub backend: Option<BackendArg>,
    /// Variant (default: the backend's first: launch-sized on cuda/hip/cpu, wgsl-literal on wgsl).
    #[arg(long, value_enum)]
    pub variant: Option<VariantArg>,
    /// Append the record and the anchor's (JSON lines) to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub timing: TimingArgs,
}

#[derive(clap::Args)]
pub struct ReduceArgs {
    #[command(flatten)]
    pub problem: ReduceProblemArgs,
    /// Threads per block (default: the backend's default config).
    #[arg(long)]
    pub block: Option<u32>,
    /// Elements each thread folds per chunk (default: the backend's default config).
    #[arg(long)]
    pub ipt: Option<u32>,
    /// Stage each chunk through a launch-sized tile of block * ipt elements.
    #[arg(long)]
    pub staged: bool,
    #[command(flatten)]
    pub common: Common,
}

#[derive(clap::Args)]
pub struct ScanArgs {
    #[command(flatten)]
    pub problem: ScanProblemArgs,
    #[arg(long)]
    pub block: Option<u32>,
    /// Elements per thread (a tile is block * ipt).
    #[arg(long)]
    pub ipt: Option<u32>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(clap::Args)]
pub struct HistogramArgs {
    #[command(flatten)]
    pub problem: HistogramProblemArgs,
    #[arg(long)]
    pub block: Option<u32>,
    #[arg(long)]
    pub grid: Option<u32>,
    /// Private copies of the bins per block.
    #[arg(long)]
    pub copies: Option<u32>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(clap::Args)]
pub struct Conv1dArgs {
    #[command(flatten)]
    pub problem: Conv1dProblemArgs,
    #[arg(long)]
    pub block: Option<u32>,
    /// Outputs per thread: 4 or 8 (instantiated in the image).
    #[arg(long)]
    pub outputs_per_thread: Option<u32>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum BlurArg {
    Box,
    Gaussian,
}

#[derive(clap::Args)]
pub struct Stencil2dArgs {
    #[command(flatten)]
    pub problem: Stencil2dProblemArgs,
    #[arg(long)]
    pub block: Option<u32>,
    #[arg(long)]
    pub tile_w: Option<u32>,
    #[arg(long)]
    pub tile_h: Option<u32>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(clap::Args)]
pub struct TransposeArgs {
    #[command(flatten)]
    pub problem: TransposeProblemArgs,
    #[arg(long)]
    pub block: Option<u32>,
    #[arg(long)]
    pub tile: Option<u32>,
    /// Floats of padding per shared-tile row (1 avoids bank conflicts).
    #[arg(long)]
    pub pad: Option<u32>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(clap::Args)]
pub struct SoftmaxArgs {
    /// Rows (default: 65536 on a GPU).
    #[arg(long)]
    pub rows: Option<u32>,
    /// Row length, 1..=32768 fits an H100's launch-sized limit.
    #[arg(long, default_value_t = 4096)]
    pub cols: u32,
    #[arg(long)]
    pub block: Option<u32>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(clap::Args)]
pub struct SgemmArgs {
    /// Rows of A and C (default: 4096 on a GPU, 256 on a CPU Vulkan adapter, 96 on the CPU backend).
    #[arg(long)]
    pub m: Option<u32>,
    /// Columns of B and C (default: as m).
    #[arg(long)]
    pub n: Option<u32>,
    /// Columns of A, rows of B (default: as m).
    #[arg(long)]
    pub k: Option<u32>,
    /// f16 inputs with f32 accumulation and output (hgemm_f16_f32).
    #[arg(long)]
    pub f16: bool,
    /// The entry with the 128 x 128 x 16 two-stage block tile compiled in (f32 only).
    #[arg(long)]
    pub fixed: bool,
    /// Block tile rows (multiple of 8).
    #[arg(long)]
    pub bm: Option<u32>,
    /// Block tile columns (multiple of 8).
    #[arg(long)]
    pub bn: Option<u32>,
    /// Depth of a k-step (multiple of 4, and of 8 for f16).
    #[arg(long)]
    pub bk: Option<u32>,
    /// Pipeline stages (1 to 4; WGSL: 1 or 2): k-tiles in flight in shared memory.
    #[arg(long)]
    pub stages: Option<u32>,
    /// Rows of C per thread: 8 (64 accumulators) or 16 (128; f32, launch-sized CUDA only).
    /// Default: 8 when a tile (--bm, --bn, --bk, --stages) is given, else the default
    /// config's.
    #[arg(long)]
    pub tm: Option<u32>,
    /// f32 on CUDA sm_90: the tensor-map (TMA) kernel, thread tile 8 x 16, bn 128, bk 32
    /// or 64 (both tiles by the copy engine; K and N multiples of 4).
    #[arg(long)]
    pub tma: bool,
    #[command(flatten)]
    pub common: Common,
}

impl SgemmArgs {
    /// The config these options ask for over `default`: each tile option given replaces its
    /// field. A tile given without `--tm` (or `--fixed`) runs 8 rows per thread; with none
    /// given, `default` runs whole (16 rows for f32 on CUDA).
    pub fn config_over(&self, default: SgemmConfig) -> SgemmConfig {
        let tile_given = self.fixed || [self.bm, self.bn, self.bk, self.stages].iter().any(Option::is_some);
        SgemmConfig {
            bm: self.bm.unwrap_or(default.bm),
            bn: self.bn.unwrap_or(if self.tma { dynsmem_kernels::sgemm::TMA_BN } else { default.bn }),
            bk: self.bk.unwrap_or(default.bk),
            stages: self.stages.unwrap_or(default.stages),
            tm: self.tm.unwrap_or(if tile_given || self.tma { THREAD_TILE } else { default.tm }),
            tma: self.tma || (!tile_given && self.tm.is_none() && default.tma),
        }
    }
}

#[derive(clap::Args)]
pub struct NbodyArgs {
    /// Bodies (default: 65536 on a GPU).
    #[arg(long)]
    pub n: Option<u32>,
    #[arg(long)]
    pub block: Option<u32>,
    /// Bodies per shared-memory tile.
    #[arg(long)]
    pub tile: Option<u32>,
    #[command(flatten)]
    pub common: Common,
}

// `dynsmem tune`: the families with a search space, each with its problem options (as
// `run` takes them) and the tuner's options.

#[derive(Subcommand)]
pub enum TuneFamily {
    /// Block, items per thread, staged.
    Reduce(TuneReduceArgs),
    /// Block, items per thread (a multiple of 4).
    Scan(TuneScanArgs),
    /// Block, copies of the bins, grid.
    Histogram(TuneHistogramArgs),
    /// Block, outputs per thread (4 or 8: the image's instantiations).
    Conv1d(TuneConv1dArgs),
    /// Block, tile width, tile height.
    Stencil2d(TuneStencil2dArgs),
    /// Block, tile, padding.
    Transpose(TuneTransposeArgs),
    /// Block tile bm x bn x bk and pipeline stages.
    Sgemm(TuneSgemmArgs),
}

#[derive(clap::Args)]
pub struct TuneSgemmArgs {
    /// Rows of A and C (default: 4096 on a GPU, 64 on the CPU backend).
    #[arg(long)]
    pub m: Option<u32>,
    /// Columns of B and C (default: as m).
    #[arg(long)]
    pub n: Option<u32>,
    /// Columns of A, rows of B (default: as m).
    #[arg(long)]
    pub k: Option<u32>,
    /// f16 inputs with f32 accumulation.
    #[arg(long)]
    pub f16: bool,
    #[command(flatten)]
    pub tune: TuneCommon,
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

/// What every `tune` takes besides its problem.
#[derive(clap::Args)]
pub struct TuneCommon {
    /// Backend (default as for run).
    #[arg(long, value_enum)]
    pub backend: Option<BackendArg>,
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
    /// Write the evaluated (and filtered) configs in Kernel Tuner's T4 JSON format.
    #[arg(long)]
    pub t4: Option<PathBuf>,
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
    /// Timed runs per config (all are kept; the median is the objective).
    #[arg(long, default_value_t = 10)]
    pub repeats: u32,
}

#[derive(clap::Args)]
pub struct TuneReduceArgs {
    #[command(flatten)]
    pub problem: ReduceProblemArgs,
    #[command(flatten)]
    pub tune: TuneCommon,
}

#[derive(clap::Args)]
pub struct TuneScanArgs {
    #[command(flatten)]
    pub problem: ScanProblemArgs,
    #[command(flatten)]
    pub tune: TuneCommon,
}

#[derive(clap::Args)]
pub struct TuneHistogramArgs {
    #[command(flatten)]
    pub problem: HistogramProblemArgs,
    #[command(flatten)]
    pub tune: TuneCommon,
}

#[derive(clap::Args)]
pub struct TuneConv1dArgs {
    #[command(flatten)]
    pub problem: Conv1dProblemArgs,
    #[command(flatten)]
    pub tune: TuneCommon,
}

#[derive(clap::Args)]
pub struct TuneStencil2dArgs {
    #[command(flatten)]
    pub problem: Stencil2dProblemArgs,
    #[command(flatten)]
    pub tune: TuneCommon,
}

#[derive(clap::Args)]
pub struct TuneTransposeArgs {
    #[command(flatten)]
    pub problem: TransposeProblemArgs,
    #[command(flatten)]
    pub tune: TuneCommon,
}

// The problem options `run <family>` and `tune <family>` share, and the problems they name
// (sizes left out take the backend's defaults, `Sizes`).

#[derive(clap::Args)]
pub struct ReduceProblemArgs {
    /// Number of elements (default: 2^28 on a GPU, 2^22 on a CPU Vulkan adapter, 2^16 on the CPU backend).
    #[arg(long)]
    pub n: Option<u64>,
    #[arg(long, value_enum, default_value = "sum")]
    pub op: OpArg,
    #[arg(long, value_enum, default_value = "f32")]
    pub dtype: DtypeArg,
}

impl ReduceProblemArgs {
    pub fn problem(&self, sizes: &Sizes) -> ReduceProblem {
        let op = match self.op {
            OpArg::Sum => ReduceOp::Sum,
            OpArg::Min => ReduceOp::Min,
            OpArg::Max => ReduceOp::Max,
        };
        ReduceProblem { n: self.n.unwrap_or(sizes.n), op, dtype: self.dtype.dtype() }
    }
}

#[derive(clap::Args)]
pub struct ScanProblemArgs {
    /// Elements (default as reduce).
    #[arg(long)]
    pub n: Option<u64>,
    #[arg(long, value_enum, default_value = "f32")]
    pub dtype: DtypeArg,
}

impl ScanProblemArgs {
    pub fn problem(&self, sizes: &Sizes) -> ScanProblem {
        ScanProblem { n: self.n.unwrap_or(sizes.n), dtype: self.dtype.dtype() }
    }
}

#[derive(clap::Args)]
pub struct HistogramProblemArgs {
    /// Keys (default as reduce).
    #[arg(long)]
    pub n: Option<u64>,
    #[arg(long, default_value_t = 256)]
    pub bins: u32,
    /// Percent of keys outside [0, bins) (not counted).
    #[arg(long, default_value_t = 0)]
    pub out_of_range: u32,
}

impl HistogramProblemArgs {
    pub fn problem(&self, sizes: &Sizes) -> HistogramProblem {
        HistogramProblem { n: self.n.unwrap_or(sizes.n), bins: self.bins, out_of_range_pct: self.out_of_range }
    }
}

#[derive(clap::Args)]
pub struct Conv1dProblemArgs {
    /// Samples (default as reduce).
    #[arg(long)]
    pub n: Option<u64>,
    /// Taps (odd, 3..=129).
    #[arg(long, default_value_t = 33)]
    pub taps: u32,
}

impl Conv1dProblemArgs {
    pub fn problem(&self, sizes: &Sizes) -> Conv1dProblem {
        Conv1dProblem { n: self.n.unwrap_or(sizes.n), taps: self.taps }
    }
}

#[derive(clap::Args)]
pub struct Stencil2dProblemArgs {
    /// Image width and height (default: 16384 on a GPU).
    #[arg(long)]
    pub width: Option<u32>,
    #[arg(long)]
    pub height: Option<u32>,
    /// 1 (3x3) or 2 (5x5).
    #[arg(long, default_value_t = 1)]
    pub radius: u32,
    #[arg(long, value_enum, default_value = "gaussian")]
    pub blur: BlurArg,
}

impl Stencil2dProblemArgs {
    pub fn problem(&self, sizes: &Sizes) -> Stencil2dProblem {
        let blur = match self.blur {
            BlurArg::Box => Blur::Box,
            BlurArg::Gaussian => Blur::Gaussian,
        };
        Stencil2dProblem {
            width: self.width.unwrap_or(sizes.side),
            height: self.height.unwrap_or(sizes.side),
            radius: self.radius,
            blur,
        }
    }
}

#[derive(clap::Args)]
pub struct TransposeProblemArgs {
    /// Rows and columns (default: 16384 on a GPU).
    #[arg(long)]
    pub rows: Option<u32>,
    #[arg(long)]
    pub cols: Option<u32>,
}

impl TransposeProblemArgs {
    pub fn problem(&self, sizes: &Sizes) -> TransposeProblem {
        TransposeProblem { rows: self.rows.unwrap_or(sizes.side), cols: self.cols.unwrap_or(sizes.side) }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_definition_is_consistent() {
        // clap's own checks (unique ids and flags among flattened argument structs, ...),
        // which it otherwise runs only in debug builds.
        <super::Cli as clap::CommandFactory>::command().debug_assert();
    }

    fn sgemm_args(line: &str) -> super::SgemmArgs {
        use clap::Parser;
        match super::Cli::parse_from(line.split_whitespace()).command {
            super::Command::Run { family: super::RunFamily::Sgemm(a) } => a,
            _ => panic!("{line}: not run sgemm"),
        }
    }

    #[test]
    fn a_gemm_tile_given_without_tm_runs_eight_rows_and_none_given_runs_the_default_whole() {
        use super::SgemmConfig;
        let default = SgemmConfig::new(256, 128, 32, 3).with_tm(16);
        let whole = sgemm_args("dynsmem run sgemm --m 4096").config_over(default);
        assert_eq!(whole, default);
        let tile = sgemm_args("dynsmem run sgemm --bm 128 --bn 128 --bk 32 --stages 2").config_over(default);
        assert_eq!(tile, SgemmConfig::new(128, 128, 32, 2));
        let stages = sgemm_args("dynsmem run sgemm --stages 4").config_over(default);
        assert_eq!(stages, SgemmConfig::new(256, 128, 32, 4));
        let rows = sgemm_args("dynsmem run sgemm --bm 128 --tm 16").config_over(default);
        assert_eq!(rows, SgemmConfig::new(128, 128, 32, 3).with_tm(16));
        // The tensor-map default (CUDA f32 at 4096^3): whole with no option, the k-group
        // kernel with any tile option or --tm, and --tma over a k-group default.
        let tma = SgemmConfig::tma(256, 32, 3);
        assert_eq!(sgemm_args("dynsmem run sgemm").config_over(tma), tma);
        assert_eq!(sgemm_args("dynsmem run sgemm --tm 16").config_over(tma), default);
        assert_eq!(sgemm_args("dynsmem run sgemm --stages 2").config_over(tma), SgemmConfig::new(256, 128, 32, 2));
        assert_eq!(sgemm_args("dynsmem run sgemm --tma --stages 4").config_over(default), SgemmConfig::tma(256, 32, 4));
    }
}
