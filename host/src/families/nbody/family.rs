//! N-body's description: its problem's sizes, its parameters (block, bodies per shared
//! tile), its bench case, and its launch.

use dynsmem_kernels::nbody::NbodyConfig;
use serde_json::json;

use super::NbodyProblem;
use crate::contract::{Kernel, Param, Params, Target, halvings};
use crate::family::kernel::{Case, KernelFamily, Size};

pub static NBODY: KernelFamily = KernelFamily {
    name: "nbody",
    about: "One all-pairs n-body step, bodies staged in tiles.",
    sizes: &[
        Size::of("n", |s| s.bodies as u64, "Bodies (default: 65536 on a GPU)"),
        Size::f32("dt", 0.01, "Time step"),
        Size::f32("softening", 0.01, "Softening length (added to every squared distance)"),
    ],
    build: |p| {
        let problem = NbodyProblem { n: p.u32("n")?, dt: p.f32("dt"), softening: p.f32("softening") };
        Ok(Kernel::new(dynsmem_kernels::nbody::KERNELS, super::KERNEL)
            .space(space)
            .footprint_by(move |p, t| super::check(&problem, &config_of(p), t))
            .default_by(|b| params_of(&super::default_for(b.small_configs())))
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
    cases: Some(|s| vec![Case::default_config(json!({"n": s.bodies}))]),
    compute_bound: true,
    shapes: include_str!("shapes.txt"),
    ..KernelFamily::EMPTY
};

/// Block and tile; fewer threads and bodies on a CPU device.
fn space(target: &Target) -> Vec<Param> {
    if target.is_cpu {
        vec![Param::new("block", &[8, 16, 32, 64]), Param::new("tile", &[16, 32, 64, 128])]
    } else {
        vec![Param::new("block", &[64, 128, 256, 512, 1024]), Param::new("tile", &[64, 128, 256, 512, 1024, 2048])]
    }
}

fn config_of(p: &Params) -> NbodyConfig {
    NbodyConfig { block: p["block"], tile: p["tile"] }
}

fn params_of(c: &NbodyConfig) -> Params {
    Params([("block", c.block), ("tile", c.tile)].into_iter().collect())
}

/// The static forms' fallbacks: smaller tiles (the default 256 bodies fit: 4 KB).
fn fallbacks(c: &NbodyConfig) -> Vec<Params> {
    halvings(c.tile, 1).map(|tile| params_of(&NbodyConfig { tile, ..*c })).collect()
}
