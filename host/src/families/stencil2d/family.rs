//! Stencil2d's description: its problem's sizes, its parameters (block, tile width and
//! height), its bench and edge cases, and its launch.

use dynsmem_kernels::stencil2d::Stencil2dConfig;
use serde_json::json;

use super::{Blur, Stencil2dProblem};
use crate::backend::BackendKind;
use crate::contract::{Kernel, Param, Params, Target, bytes_of, check_footprint, halvings};
use crate::family::kernel::{Case, KernelFamily, Size};

pub static STENCIL2D: KernelFamily = KernelFamily {
    name: "stencil2d",
    about: "2-D stencil (blur) of any radius, with a bordered tile sized at launch.",
    sizes: &[
        Size::of("width", |s| s.side as u64, "Image width (default: 16384 on a GPU)"),
        Size::of("height", |s| s.side as u64, "Image height (default: 16384 on a GPU)"),
        Size::fixed("radius", 1, "Radius: 1 (3x3) to 32 (65x65), given at launch; the static twins run 1 and 2"),
        Size::choice("blur", &["gaussian", "box"], "The weights"),
    ],
    build: |p| {
        let blur = if p.choice("blur") == "box" { Blur::Box } else { Blur::Gaussian };
        let problem =
            Stencil2dProblem { width: p.u32("width")?, height: p.u32("height")?, radius: p.u32("radius")?, blur };
        Ok(Kernel::new(dynsmem_kernels::stencil2d::KERNELS, "stencil2d_f32")
            .space(space)
            .footprint_by(move |p, t| super::check(&problem, &config_of(p), t))
            .default_by(|b| params_of(&super::default_for(b.kind(), b.small_configs())))
            .fit_static_by(
                move |p| Some(super::twin_static_bytes(&problem, &config_of(p))),
                |p| fallbacks(&config_of(p)),
            )
            .twins_by(
                super::WGSL_TEMPLATE,
                move |p, v| super::wgsl_spec(&problem, &config_of(p), v),
                move |p| super::cuda_source(&problem, &config_of(p)),
            )
            .workload_by(move |b, p, v, seed| {
                crate::erased_workload!(b, b => {
                    let pixels = problem.width as u64 * problem.height as u64;
                    // Input and output on the device; the input, the f64 reference and its
                    // error scale, the NaN fill and the read-back on the host.
                    check_footprint(b, "stencil2d_f32", bytes_of(pixels, 8), bytes_of(pixels, 28))?;
                    super::prepare(b, problem, config_of(p), v, seed)
                })
            }))
    },
    cases: Some(|s| {
        let problem = |radius: u32| json!({"width": s.side, "height": s.side, "radius": radius, "blur": "gaussian"});
        vec![Case::default_config(problem(1)), Case::default_config(problem(2))]
    }),
    // 2049 x 1025 in 8 x 4 tiles: 257 x 257 = 66049 tiles, past the 65535-block grid.
    edge: || {
        let problem = json!({"width": 2049, "height": 1025, "radius": 1, "blur": "box"});
        vec![Case::with(problem, json!({"block": 8, "tile_w": 8, "tile_h": 4}))]
    },
    anchor_bytes: Some(|p| bytes_of(p["width"] * p["height"], 4)),
    shapes: include_str!("shapes.txt"),
    ..KernelFamily::EMPTY
};

/// Block, tile width and height; fewer threads on the CPU backend.
fn space(target: &Target) -> Vec<Param> {
    if target.backend == BackendKind::Cpu {
        vec![
            Param::new("block", &[4, 8, 16, 32, 64]),
            Param::new("tile_w", &[16, 32, 64]),
            Param::new("tile_h", &[4, 8, 16, 32]),
        ]
    } else {
        vec![
            Param::new("block", &[64, 128, 256, 512, 1024]),
            Param::new("tile_w", &[16, 32, 64, 128, 256]),
            Param::new("tile_h", &[4, 8, 16, 32, 64]),
        ]
    }
}

fn config_of(p: &Params) -> Stencil2dConfig {
    Stencil2dConfig { block: p["block"], tile_w: p["tile_w"], tile_h: p["tile_h"] }
}

fn params_of(c: &Stencil2dConfig) -> Params {
    Params([("block", c.block), ("tile_w", c.tile_w), ("tile_h", c.tile_h)].into_iter().collect())
}

/// The static forms' fallbacks: shorter tiles (the same threads, each with a shorter strip),
/// then narrower ones with fewer threads, each kept to the thread arrangement the kernel
/// needs (the default 128 x 32 fits: 19.7 KB).
fn fallbacks(c: &Stencil2dConfig) -> Vec<Params> {
    let shorter = halvings(c.tile_h, 1).map(|tile_h| Stencil2dConfig { tile_h, ..*c });
    let narrower =
        halvings(c.tile_w, 4).map(|tile_w| Stencil2dConfig { tile_w, block: c.block * tile_w / c.tile_w.max(1), ..*c });
    shorter.chain(narrower).filter(|c| c.fits()).map(|c| params_of(&c)).collect()
}
