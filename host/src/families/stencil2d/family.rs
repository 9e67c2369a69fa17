//! Stencil2d's face to the registry: its command-line options, defaults and bench cases.

use dynsmem_kernels::stencil2d::Stencil2dConfig;

use super::{Blur, Stencil2dProblem};
use crate::backend::Variant;
use crate::contract::halvings;
use crate::contract::{FamilyBackend, Workload, bytes_of, check_footprint};
use crate::error::Result;
use crate::family::space::Tuner;
use crate::family::{BenchCase, Family, Sizes};

pub struct Stencil2d;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum BlurArg {
    Box,
    Gaussian,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ProblemArgs {
    /// Image width and height (default: 16384 on a GPU).
    #[arg(long)]
    pub width: Option<u32>,
    #[arg(long)]
    pub height: Option<u32>,
    /// Radius: 1 (3x3) to 32 (65x65), given at launch; the static twins run 1 and 2.
    #[arg(long, default_value_t = 1)]
    pub radius: u32,
    #[arg(long, value_enum, default_value = "gaussian")]
    pub blur: BlurArg,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ConfigArgs {
    #[arg(long)]
    pub block: Option<u32>,
    #[arg(long)]
    pub tile_w: Option<u32>,
    #[arg(long)]
    pub tile_h: Option<u32>,
}

impl Family for Stencil2d {
    const NAME: &'static str = "stencil2d";
    const ABOUT: &'static str = "2-D stencil (blur) of any radius, with a bordered tile sized at launch.";
    const WGSL_TEMPLATE: &'static str = super::WGSL_TEMPLATE;
    const SHAPES: &'static str = include_str!("shapes.txt");
    type Problem = Stencil2dProblem;
    type Config = Stencil2dConfig;
    type ProblemArgs = ProblemArgs;
    type ConfigArgs = ConfigArgs;
    type Tunable = Tuner<Self>;

    fn problem(a: &ProblemArgs, sizes: &Sizes) -> Stencil2dProblem {
        let blur = match a.blur {
            BlurArg::Box => Blur::Box,
            BlurArg::Gaussian => Blur::Gaussian,
        };
        Stencil2dProblem {
            width: a.width.unwrap_or(sizes.side),
            height: a.height.unwrap_or(sizes.side),
            radius: a.radius,
            blur,
        }
    }
    fn config(a: &ConfigArgs, d: &Stencil2dConfig) -> Stencil2dConfig {
        Stencil2dConfig {
            block: a.block.unwrap_or(d.block),
            tile_w: a.tile_w.unwrap_or(d.tile_w),
            tile_h: a.tile_h.unwrap_or(d.tile_h),
        }
    }
    fn default_config<B: FamilyBackend>(backend: &B, _: &Stencil2dProblem) -> Stencil2dConfig {
        super::default_config(backend)
    }
    fn static_bytes(p: &Stencil2dProblem, c: &Stencil2dConfig) -> Option<u32> {
        Some(super::twin_static_bytes(p, c))
    }
    /// The static forms' fallbacks: shorter tiles (the
    /// same threads, each with a shorter strip), then narrower ones with fewer threads, each
    /// kept to the thread arrangement the kernel needs (the default 128 x 32 fits: 19.7 KB).
    fn static_fallbacks(_: &Stencil2dProblem, c: &Stencil2dConfig) -> Vec<Stencil2dConfig> {
        let shorter = halvings(c.tile_h, 1).map(|tile_h| Stencil2dConfig { tile_h, ..*c });
        let narrower = halvings(c.tile_w, 4).map(|tile_w| Stencil2dConfig {
            tile_w,
            block: c.block * tile_w / c.tile_w.max(1),
            ..*c
        });
        shorter.chain(narrower).filter(|c| c.fits()).collect()
    }
    fn prepare<'b, B: FamilyBackend>(
        backend: &'b B,
        p: &Stencil2dProblem,
        c: &Stencil2dConfig,
        variant: Variant,
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        let pixels = p.width as u64 * p.height as u64;
        // Input and output on the device; the input, the f64 reference and its error
        // scale, the NaN fill and the read-back on the host.
        check_footprint(backend, "stencil2d_f32", bytes_of(pixels, 8), bytes_of(pixels, 28))?;
        Ok(Box::new(super::prepare(backend, *p, *c, variant, seed)?))
    }
    fn anchor_bytes(p: &Stencil2dProblem) -> Option<u64> {
        Some(bytes_of(p.width as u64 * p.height as u64, 4))
    }
    /// 2049 x 1025 in 8 x 4 tiles: 257 x 257 = 66049 tiles, past the 65535-block grid.
    fn edge_cases() -> Vec<BenchCase<Self>> {
        let problem = Stencil2dProblem { width: 2049, height: 1025, radius: 1, blur: Blur::Box };
        vec![BenchCase { problem, config: Stencil2dConfig { block: 8, tile_w: 8, tile_h: 4 } }]
    }
    fn bench_cases<B: FamilyBackend>(backend: &B, sizes: &Sizes) -> Vec<BenchCase<Self>> {
        [1, 2]
            .into_iter()
            .map(|radius| BenchCase {
                problem: Stencil2dProblem { width: sizes.side, height: sizes.side, radius, blur: Blur::Gaussian },
                config: super::default_config(backend),
            })
            .collect()
    }
}
