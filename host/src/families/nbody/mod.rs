//! One n-body time step, host side: problem, configs, the WGSL form beside it
//! (`nbody.wgsl`) and the [`Workload`]; the CPU reference is `dynsmem_reference::nbody`.
//! The device algorithm is documented in `dynsmem_kernels::nbody`.

use dynsmem_kernels::nbody::{FLOPS_PER_INTERACTION, NbodyConfig};
use serde::{Deserialize, Serialize};

use crate::backend::Variant;

use crate::contract::{
    CudaSource, Data, FamilyBackend, Footprint, Launch, LaunchElement, Target, WgslSpec, fill_template, invalid,
    invalid_problem, wgsl_sizing,
};
use crate::error::Result;
use crate::rng::SplitMix64;
use crate::verify::{Tolerance, check_slice};

mod family;

pub use family::NBODY;

pub(crate) const WGSL_TEMPLATE: &str = include_str!("nbody.wgsl");
pub(crate) const KERNEL: &str = "nbody_step_f32";
/// The cuda-static form: the same algorithm in CUDA C with static arrays.
pub const CUDA_SOURCE: &str = include_str!("nbody.cu");
/// Bodies whose result is checked against the f64 reference (all of them when fewer):
/// the reference is O(n) per body.
const CHECKED_BODIES: usize = 256;

/// `n` bodies, one step of `dt`, softening length `softening`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NbodyProblem {
    pub n: u32,
    pub dt: f32,
    pub softening: f32,
}

impl NbodyProblem {
    pub fn new(n: u32) -> NbodyProblem {
        NbodyProblem { n, dt: 0.01, softening: 0.01 }
    }
}

/// 256 threads, tiles of 256 bodies (32 x 64 on the CPU backend).
pub fn default_config<B: FamilyBackend>(backend: &B) -> NbodyConfig {
    default_for(backend.small_configs())
}

/// [`default_config`] where the backend asks for small configs (`small`) or not.
pub fn default_for(small: bool) -> NbodyConfig {
    if small { NbodyConfig { block: 32, tile: 64 } } else { NbodyConfig { block: 256, tile: 256 } }
}

pub(crate) fn wgsl_spec(cfg: &NbodyConfig, variant: Variant) -> WgslSpec {
    let (sizing, constants) =
        wgsl_sizing(variant, &[("BLOCK", "u32", cfg.block as f64), ("TILE", "u32", cfg.tile as f64)]);
    WgslSpec {
        name: format!("{KERNEL}[{variant},tile={},block={}]", cfg.tile, cfg.block),
        source: fill_template(WGSL_TEMPLATE, &[("SIZING", &sizing)]),
        entry: "nbody_step",
        constants,
        workgroup_size: cfg.block,
        static_bytes: wgsl_static_bytes(cfg),
        subgroups: false,
        f16: false,
    }
}

/// Bytes of the WGSL form's static tile: 16 per body.
pub fn wgsl_static_bytes(cfg: &NbodyConfig) -> u32 {
    (cfg.tile as u64 * 16).min(u32::MAX as u64) as u32
}

/// The cuda-static kernel: `nbody.cu` with the tile and block as defines; its static array
/// is the Rust kernel's layout (`tile` bodies of 16 bytes).
pub fn cuda_source(cfg: &NbodyConfig) -> CudaSource {
    CudaSource {
        name: format!("{KERNEL}[cuda-static,tile={},block={}]", cfg.tile, cfg.block),
        source: CUDA_SOURCE,
        file: "nbody.cu",
        entry: "nbody_static",
        defines: vec![("TILE", cfg.tile.to_string()), ("BLOCK", cfg.block.to_string())],
        static_bytes: cfg.shared_bytes().unwrap_or(u32::MAX),
    }
}

/// The n-body step's one validation: `config` for `problem` on `target`, and what it asks
/// for. `prepare` calls it first and the tuner filters with it: a block and tile of at
/// least one, a positive softening and a finite step, u32 body indices, and the layout.
pub fn check(problem: &NbodyProblem, config: &NbodyConfig, target: &Target) -> Result<Footprint> {
    if config.block == 0 || config.tile == 0 {
        return Err(invalid(KERNEL, format!("block and tile must be at least 1 (got {config:?})")));
    }
    if problem.softening.is_nan() || problem.softening <= 0.0 || !problem.dt.is_finite() {
        return Err(invalid_problem(KERNEL, "softening must be positive and dt finite"));
    }
    // Body indices are u32: `block_idx * block + tid` over the grid, and the tile start
    // `j0`, which steps by `tile` past the last body (a wrap there would never end).
    let n = problem.n as u64;
    let threads = config.grid(problem.n) as u64 * config.block as u64;
    crate::contract::check_index(KERNEL, "grid * block", threads, u32::MAX as u64 + 1, "u32 (body index)")?;
    crate::contract::check_index(KERNEL, "n + tile", n + config.tile as u64, u32::MAX as u64, "u32 (tile start)")?;
    let layout =
        config.shared_bytes().map_err(|source| crate::error::Error::Layout { kernel: KERNEL.into(), source })?;
    Footprint::of_variant(
        target.variant,
        (config.block, config.grid(problem.n)),
        || Ok(layout),
        || Ok(cuda_source(config).static_bytes),
        |_| Ok(wgsl_static_bytes(config)),
    )
}

/// One step of `n` bodies drawn from `seed`; up to [`CHECKED_BODIES`] of them (the first, the last
/// and seeded others) are checked against the f64 reference.
pub fn prepare<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: NbodyProblem,
    config: NbodyConfig,
    variant: Variant,
    seed: u64,
) -> Result<Launch<'b, B>> {
    // The one validation (the tuner's filter too), before anything is generated or uploaded.
    let footprint = check(&problem, &config, &Target::of(backend, variant))?;
    let n = problem.n as u64;
    // Four 16-byte-per-body buffers on the device; positions and velocities (twice: as
    // generated and flattened), the NaN fill and the read-back on the host.
    crate::contract::check_footprint(
        backend,
        KERNEL,
        crate::contract::bytes_of(n, 64),
        crate::contract::bytes_of(n, 112),
    )?;
    let wgsl = |v: Variant| wgsl_spec(&config, v);
    let cuda = || cuda_source(&config);
    let geometry = (Ok(footprint.launch_bytes), footprint.grid, footprint.threads);
    let launch = Launch::prepare(backend, KERNEL, geometry, variant, &wgsl, &cuda)?;
    let n = problem.n as usize;
    let mut rng = SplitMix64::new(seed);
    let mut u = || rng.next_f32() * 2.0 - 1.0;
    let pos: Vec<[f32; 4]> = (0..n).map(|_| [u(), u(), u(), (1.0 + 0.5 * u()) / n.max(1) as f32]).collect();
    let vel: Vec<[f32; 4]> = (0..n).map(|_| [0.1 * u(), 0.1 * u(), 0.1 * u(), 0.0]).collect();
    let mut pick = SplitMix64::new(seed ^ 0x5eed);
    let bodies: Vec<usize> = if n <= CHECKED_BODIES {
        (0..n).collect()
    } else {
        let mut b: Vec<usize> = (0..CHECKED_BODIES - 2).map(|_| pick.below(n as u64) as usize).collect();
        b.extend([0, n - 1]);
        b
    };
    // (body, expected, scale) for the checked bodies.
    let expected: Vec<(usize, [f64; 8], [f64; 8])> = bodies
        .into_iter()
        .map(|i| {
            let (e, s) = dynsmem_reference::nbody::step_body(&pos, &vel, i, problem.dt, problem.softening);
            (i, e, s)
        })
        .collect();
    // Sums of n terms, each with an approximate reciprocal square root on GPUs.
    let tol = Tolerance { rtol: 2.0 * n.max(1) as f64 * f32::EPSILON as f64 + 1e-5, atol: 1e-12 };
    let check = move |name: &str, outputs: &[Data]| {
        let (pos, vel) = (f32::values(&outputs[0]), f32::values(&outputs[1]));
        let (mut want, mut scale, mut got) = (Vec::new(), Vec::new(), Vec::new());
        for (i, e, s) in &expected {
            want.extend_from_slice(e);
            scale.extend_from_slice(s);
            got.extend_from_slice(&pos[4 * i..4 * i + 4]);
            got.extend_from_slice(&vel[4 * i..4 * i + 4]);
        }
        check_slice(name, &want, &got, |k| scale[k], tol)
    };
    let flat = |v: &[[f32; 4]]| v.iter().flatten().copied().collect::<Vec<f32>>();
    let nan = vec![f32::NAN; 4 * n];
    Ok(launch
        .input(&flat(&pos))?
        .input(&flat(&vel))?
        .output_unchecked(&nan)?
        .output_unchecked(&nan)?
        .arg(problem.n)
        .arg(problem.dt)
        .arg(problem.softening * problem.softening)
        .arg(config.tile)
        .bytes(0)
        .flops(n as f64 * n as f64 * FLOPS_PER_INTERACTION as f64)
        .check_outputs(check))
}
