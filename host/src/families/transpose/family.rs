//! Transpose's description: its problem's sizes, its parameters (block, tile side, padding
//! in floats per tile row), its bench and edge cases, and its launch.

use dynsmem_kernels::transpose::TransposeConfig;
use serde_json::json;

use super::TransposeProblem;
use crate::backend::BackendKind;
use crate::contract::{Kernel, Param, Params, Target, bytes_of, halvings};
use crate::family::kernel::{Case, KernelFamily, Size};

pub static TRANSPOSE: KernelFamily = KernelFamily {
    name: "transpose",
    about: "Matrix transpose through padded tiles.",
    sizes: &[
        Size::of("rows", |s| s.side as u64, "Rows (default: 16384 on a GPU)"),
        Size::of("cols", |s| s.side as u64, "Columns (default: 16384 on a GPU)"),
    ],
    build: |p| {
        let problem = TransposeProblem { rows: p.u32("rows")?, cols: p.u32("cols")? };
        Ok(Kernel::new(dynsmem_kernels::transpose::KERNELS, super::KERNEL)
            .space(space)
            .footprint_by(move |p, t| super::check(&problem, &config_of(p), t))
            .default_by(|b| params_of(&super::default_for(b.kind(), b.small_configs())))
            .fit_static_by(|p| config_of(p).shared_bytes().ok(), |p| fallbacks(&config_of(p)))
            .twins_by(
                super::WGSL_TEMPLATE,
                |p, v| super::wgsl_spec(&config_of(p), v),
                |p| super::cuda_source(&config_of(p)),
            )
            .workload_by(
                move |b, p, v, seed| crate::erased_workload!(b, b => super::prepare(b, problem, config_of(p), v, seed)),
            ))
    },
    // The default, and the same without padding (bank conflicts on the reads).
    cases: Some(|s| {
        let problem = json!({"rows": s.side, "cols": s.side});
        vec![Case::default_config(problem.clone()), Case::over_default(problem, json!({"pad": 0}))]
    }),
    // 2049 x 2048 in 8 x 8 tiles: 257 x 256 = 65792 tiles, past the 65535-block grid.
    edge: || vec![Case::with(json!({"rows": 2049, "cols": 2048}), json!({"block": 8, "tile": 8, "pad": 1}))],
    anchor_bytes: Some(|p| bytes_of(p["rows"] * p["cols"], 4)),
    shapes: include_str!("shapes.txt"),
    ..KernelFamily::EMPTY
};

/// Block, tile side and padding; fewer threads on the CPU backend.
fn space(target: &Target) -> Vec<Param> {
    if target.backend == BackendKind::Cpu {
        vec![Param::new("block", &[8, 16, 32, 64]), Param::new("tile", &[4, 8, 16, 32]), Param::new("pad", &[0, 1])]
    } else {
        vec![
            Param::new("block", &[64, 128, 256, 512, 1024]),
            Param::new("tile", &[8, 16, 32, 64]),
            Param::new("pad", &[0, 1, 2]),
        ]
    }
}

fn config_of(p: &Params) -> TransposeConfig {
    TransposeConfig { block: p["block"], tile: p["tile"], pad: p["pad"] }
}

fn params_of(c: &TransposeConfig) -> Params {
    Params([("block", c.block), ("tile", c.tile), ("pad", c.pad)].into_iter().collect())
}

/// The static forms' fallbacks: smaller tiles with the same padding and block, down to 16
/// (the default 64 x 65 fits: 16.6 KB).
fn fallbacks(c: &TransposeConfig) -> Vec<Params> {
    halvings(c.tile, 16)
        .map(|tile| TransposeConfig { tile, ..*c })
        .filter(|c| c.block >= c.tile && c.block.is_multiple_of(c.tile))
        .map(|c| params_of(&c))
        .collect()
}
