//! The moving average as a dynsmem family: its problem, the WGSL and CUDA C twins, the CPU
//! reference, the workload (validate, upload, run, check), its `Family` face (command-line
//! options, defaults, bench cases) and its search space. The device algorithm is
//! documented in `own_kernels` (`kernels/src/lib.rs`).

use dynsmem_host::Result;
use dynsmem_host::backend::{Arg, Backend, BackendKind, Buffer};
use dynsmem_host::families::{
    CudaSource, FamilyBackend, KernelInfo, Prepared, Variant, WgslSpec, Workload, bytes_of, check_footprint,
    check_index, fill_template, fit_static, invalid, invalid_problem, layout_reason, wgsl_sizing,
};
use dynsmem_host::family::{BenchCase, Family, Sizes};
use dynsmem_host::rng::SplitMix64;
use dynsmem_host::tune::{Footprint, Param, Space, Target, Tuner};
use dynsmem_host::verify::{Tolerance, check_slice};
use own_kernels::WindowConfig;
use serde::{Deserialize, Serialize};

const KERNEL: &str = "window_mean_f32";
/// The static-WGSL twin (hashed into the WGSL image of tuning-cache keys).
pub const WGSL_TEMPLATE: &str = include_str!("window_mean.wgsl");
/// The cuda-static twin: the same algorithm with a static `__shared__` tile.
pub const CUDA_SOURCE: &str = include_str!("window_mean.cu");

/// `n` inputs; `n - window + 1` outputs, each the mean of `window` consecutive inputs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WindowProblem {
    pub n: u32,
    pub window: u32,
}

impl WindowProblem {
    pub fn outputs(&self) -> u32 {
        self.n.saturating_sub(self.window.saturating_sub(1))
    }
}

/// The family's marker type.
pub struct WindowMean;

#[derive(clap::Args, Debug, Clone)]
pub struct ProblemArgs {
    /// Inputs (default: the backend's 1-D size).
    #[arg(long)]
    pub n: Option<u32>,
    /// Inputs per output.
    #[arg(long, default_value_t = 33)]
    pub window: u32,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ConfigArgs {
    #[arg(long)]
    pub block: Option<u32>,
    #[arg(long)]
    pub per_thread: Option<u32>,
}

/// 256 threads of 4 outputs each (16 threads on the CPU backend, whose threads are OS threads).
pub fn default_config<B: Backend>(backend: &B) -> WindowConfig {
    let block = if backend.kind() == BackendKind::Cpu { 16 } else { 256 };
    WindowConfig { block, per_thread: 4 }
}

fn tile_len(p: &WindowProblem, c: &WindowConfig) -> u64 {
    c.block as u64 * c.per_thread as u64 + p.window.max(1) as u64 - 1
}

/// Bytes of the static twins' tile (WGSL and CUDA C alike).
pub fn static_bytes(p: &WindowProblem, c: &WindowConfig) -> u32 {
    (tile_len(p, c) * 4).min(u32::MAX as u64) as u32
}

fn wgsl_spec(p: &WindowProblem, c: &WindowConfig, variant: Variant) -> WgslSpec {
    let items = [
        ("BLOCK", "u32", c.block as f64),
        ("PER_THREAD", "u32", c.per_thread as f64),
        ("WINDOW", "u32", p.window as f64),
        ("TILE", "u32", tile_len(p, c) as f64),
    ];
    let (sizing, constants) = wgsl_sizing(variant, &items);
    WgslSpec {
        name: format!("{KERNEL}[{variant},window={},block={},per_thread={}]", p.window, c.block, c.per_thread),
        source: fill_template(WGSL_TEMPLATE, &[("SIZING", &sizing)]),
        entry: "window_mean",
        constants,
        workgroup_size: c.block,
        static_bytes: static_bytes(p, c),
    }
}

fn cuda_source(p: &WindowProblem, c: &WindowConfig) -> CudaSource {
    CudaSource {
        name: format!("{KERNEL}[cuda-static,window={},block={},per_thread={}]", p.window, c.block, c.per_thread),
        source: CUDA_SOURCE,
        file: "window_mean.cu",
        entry: "window_mean_static",
        defines: vec![
            ("BLOCK", c.block.to_string()),
            ("PER_THREAD", c.per_thread.to_string()),
            ("WINDOW", p.window.to_string()),
        ],
        static_bytes: static_bytes(p, c),
    }
}

/// The CPU reference, in f64.
pub fn reference(x: &[f32], window: usize) -> Vec<f64> {
    let outputs = x.len() + 1 - window;
    (0..outputs).map(|i| x[i..i + window].iter().map(|&v| v as f64).sum::<f64>() / window as f64).collect()
}

/// A sum of `window` f32 values in order (`window - 1` dependent additions) and a product
/// by `1 / window`, against the mean of the magnitudes: the classic summation bound,
/// doubled.
pub fn tolerance(window: u32) -> Tolerance {
    Tolerance { rtol: 2.0 * (window as f64 + 2.0) * f32::EPSILON as f64, atol: 0.0 }
}

/// Validates the problem and config against the backend (nothing is generated, uploaded
/// or launched when a check fails) and builds the kernel.
fn validate<B: FamilyBackend>(
    backend: &B,
    p: &WindowProblem,
    c: &WindowConfig,
    variant: Variant,
) -> Result<Prepared<B::Kernel>> {
    if c.block == 0 || c.per_thread == 0 {
        return Err(invalid(KERNEL, "block and per_thread must be at least 1"));
    }
    if p.window == 0 || p.window > p.n {
        return Err(invalid_problem(KERNEL, format!("window must be 1..=n ({}), got {}", p.n, p.window)));
    }
    // The kernel steps its u32 span start by grid * span past the last output.
    let span = c.block as u64 * c.per_thread as u64;
    let past = p.outputs() as u64 + c.grid(p.n, p.window) as u64 * span;
    check_index(KERNEL, "outputs + grid * block * per_thread", past, u32::MAX as u64, "u32 (span start)")?;
    // x and y on the device; x, the f64 reference and the read-back on the host.
    check_footprint(backend, KERNEL, bytes_of(p.n as u64, 8), bytes_of(p.n as u64, 16))?;
    let wgsl = |v: Variant| wgsl_spec(p, c, v);
    let cuda = || cuda_source(p, c);
    Prepared::new(backend, KERNEL, c.shared_bytes(p.window), c.grid(p.n, p.window), c.block, variant, &wgsl, &cuda)
}

pub struct WindowWorkload<'b, B: FamilyBackend> {
    backend: &'b B,
    kernel: Prepared<B::Kernel>,
    problem: WindowProblem,
    config: WindowConfig,
    x: Buffer<B::Raw, f32>,
    y: Buffer<B::Raw, f32>,
    expected: Vec<f64>,
    /// Mean magnitude of each output's window: the error scale of the check.
    scale: Vec<f64>,
}

/// A moving average of `n` inputs drawn from `seed`, uniform in [-4, 4).
pub fn prepare<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: WindowProblem,
    config: WindowConfig,
    variant: Variant,
    seed: u64,
) -> Result<WindowWorkload<'b, B>> {
    let kernel = validate(backend, &problem, &config, variant)?;
    let mut rng = SplitMix64::new(seed);
    let x: Vec<f32> = (0..problem.n).map(|_| rng.next_f32() * 8.0 - 4.0).collect();
    let w = problem.window as usize;
    let expected = reference(&x, w);
    let abs: Vec<f32> = x.iter().map(|v| v.abs()).collect();
    let scale = reference(&abs, w);
    let xb = backend.htod(&x)?;
    let y = backend.htod(&vec![f32::NAN; problem.outputs() as usize])?;
    Ok(WindowWorkload { backend, kernel, problem, config, x: xb, y, expected, scale })
}

impl<B: FamilyBackend> Workload for WindowWorkload<'_, B> {
    fn kernel(&self) -> KernelInfo {
        self.kernel.info()
    }
    /// `x` read once and `y` written once.
    fn bytes(&self) -> u64 {
        (self.problem.n as u64 + self.problem.outputs() as u64) * 4
    }
    fn run(&self) -> Result<()> {
        let WindowProblem { n, window } = self.problem;
        let dims = self.kernel.dims(self.config.grid(n, window), self.config.block);
        self.backend.launch(
            &self.kernel.built.kernel,
            dims,
            &[self.x.arg(), self.y.arg(), Arg::U32(n), Arg::U32(window), Arg::U32(self.config.per_thread)],
        )
    }
    fn check(&self) -> Result<()> {
        let got = self.backend.dtoh(&self.y)?;
        check_slice(&self.kernel.name, &self.expected, &got, |i| self.scale[i], tolerance(self.problem.window))?;
        Ok(())
    }
}

impl Family for WindowMean {
    const NAME: &'static str = "window-mean";
    const ABOUT: &'static str =
        "Moving average over a tile of block * per_thread + window - 1 floats in workgroup memory.";
    const WGSL_TEMPLATE: &'static str = WGSL_TEMPLATE;
    type Problem = WindowProblem;
    type Config = WindowConfig;
    type ProblemArgs = ProblemArgs;
    type ConfigArgs = ConfigArgs;
    type Tunable = Tuner<Self>;

    fn problem(a: &ProblemArgs, sizes: &Sizes) -> WindowProblem {
        WindowProblem { n: a.n.unwrap_or(sizes.n.min(u32::MAX as u64) as u32), window: a.window }
    }
    fn config(a: &ConfigArgs, d: &WindowConfig) -> WindowConfig {
        WindowConfig { block: a.block.unwrap_or(d.block), per_thread: a.per_thread.unwrap_or(d.per_thread) }
    }
    fn default_config<B: FamilyBackend>(backend: &B, _: &WindowProblem) -> WindowConfig {
        default_config(backend)
    }
    /// cuda-static's tile is capped at the static limit: fewer outputs per thread, then
    /// smaller blocks.
    fn fit_config<B: FamilyBackend>(
        backend: &B,
        variant: Variant,
        p: &WindowProblem,
        c: WindowConfig,
    ) -> (WindowConfig, Option<String>) {
        let fallbacks = (1..=c.per_thread.max(1).ilog2())
            .map(|s| WindowConfig { per_thread: c.per_thread >> s, ..c })
            .chain(dynsmem_host::families::halvings(c.block, 32).map(|block| WindowConfig { block, per_thread: 1 }));
        let limit = backend.info().limits.static_shared_max;
        fit_static(variant, limit, c, fallbacks, |c| Some(static_bytes(p, c)))
    }
    fn prepare<'b, B: FamilyBackend>(
        backend: &'b B,
        p: &WindowProblem,
        c: &WindowConfig,
        variant: Variant,
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        Ok(Box::new(prepare(backend, *p, *c, variant, seed)?))
    }
    fn anchor_bytes(p: &WindowProblem) -> Option<u64> {
        Some(bytes_of(p.n as u64, 4))
    }
    fn bench_cases<B: FamilyBackend>(backend: &B, sizes: &Sizes) -> Vec<BenchCase<Self>> {
        let n = sizes.n.min(u32::MAX as u64) as u32;
        [9, 129]
            .into_iter()
            .map(|window| BenchCase { problem: WindowProblem { n, window }, config: default_config(backend) })
            .collect()
    }
    fn tunable(problem: WindowProblem) -> Option<Tuner<Self>> {
        Some(Tuner::new(problem))
    }
}

/// The search space: threads per block and outputs per thread.
impl Space for WindowMean {
    fn params(target: &Target, _: &WindowProblem) -> Vec<Param> {
        if target.is_cpu {
            vec![Param::new("block", &[4, 8, 16, 32]), Param::new("per_thread", &[1, 2, 4])]
        } else {
            vec![Param::new("block", &[64, 128, 256, 512, 1024]), Param::new("per_thread", &[1, 2, 4, 8])]
        }
    }
    fn config_of(point: &[u32]) -> WindowConfig {
        WindowConfig { block: point[0], per_thread: point[1] }
    }
    fn check(p: &WindowProblem, c: &WindowConfig, _: &Target) -> std::result::Result<Footprint, String> {
        if c.block == 0 || c.per_thread == 0 {
            return Err("block and per_thread must be at least 1".into());
        }
        let launch_bytes = c.shared_bytes(p.window).map_err(layout_reason)?;
        Ok(Footprint { threads: c.block, grid: c.grid(p.n, p.window), launch_bytes, static_bytes: static_bytes(p, c) })
    }
}

#[cfg(test)]
mod tests {
    use super::{reference, tolerance};
    use dynsmem_host::verify::check_slice;

    #[test]
    fn reference_is_a_moving_average() {
        assert_eq!(reference(&[1.0, 2.0, 3.0, 4.0], 2), vec![1.5, 2.5, 3.5]);
        assert_eq!(reference(&[1.0, 2.0, 3.0], 3), vec![2.0]);
        // A one-ulp-per-term error passes; a dropped term does not.
        let x: Vec<f32> = (0..100).map(|i| (i as f32 * 0.37).sin() * 4.0).collect();
        let e = reference(&x, 33);
        let abs: Vec<f32> = x.iter().map(|v| v.abs()).collect();
        let s = reference(&abs, 33);
        let f32_sum: Vec<f32> = (0..e.len()).map(|i| x[i..i + 33].iter().sum::<f32>() * (1.0 / 33.0)).collect();
        check_slice("t", &e, &f32_sum, |i| s[i], tolerance(33)).unwrap();
        let dropped: Vec<f32> = (0..e.len()).map(|i| x[i..i + 32].iter().sum::<f32>() * (1.0 / 33.0)).collect();
        assert!(check_slice("t", &e, &dropped, |i| s[i], tolerance(33)).is_err());
    }
}
