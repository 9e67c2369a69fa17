//! Reduce's description: its problem's sizes, its parameters (block, items per thread,
//! staged), its bench and edge cases, and its launches (a pass per level of partials).

use dynsmem_kernels::Dtype;
use serde_json::json;

use super::{ReduceConfig, ReduceOp, ReduceProblem};
use crate::backend::{BackendKind, Limits, Variant};
use crate::contract::{Kernel, Param, Params, Target, bytes_of, fit_static, halvings};
use crate::family::kernel::{Case, KernelFamily, Size};

/// A staged config with 200 KB of launch-sized tile per block: past the 48 KB a kernel
/// gets without opt-in, and past what static WGSL arrays may hold.
pub const STAGED_200K: ReduceConfig = ReduceConfig { block: 256, items_per_thread: 200, staged: true };

pub static REDUCE: KernelFamily = KernelFamily {
    name: "reduce",
    about: "Sum / min / max of n elements to one value.",
    sizes: &[
        Size::of(
            "n",
            |s| s.n,
            "Number of elements (default: 2^28 on a GPU, 2^22 on a CPU Vulkan adapter, 2^16 on the CPU backend)",
        ),
        Size::choice("op", &["sum", "min", "max"], "The operator"),
        Size::choice("dtype", &["f32", "u32"], "Element type"),
    ],
    build: |p| {
        let op = match p.choice("op") {
            "min" => ReduceOp::Min,
            "max" => ReduceOp::Max,
            _ => ReduceOp::Sum,
        };
        let dtype = if p.choice("dtype") == "u32" { Dtype::U32 } else { Dtype::F32 };
        let problem = ReduceProblem { n: p["n"], op, dtype };
        let entry = super::entry_name(op, dtype, false);
        Ok(Kernel::new(dynsmem_kernels::reduce::KERNELS, entry)
            .space(space)
            .alias("items_per_thread", "ipt")
            .picks("staged")
            .footprint_by(move |p, t| super::check(&problem, &config_of(p), t))
            .default_by(|b| crate::with_backend!(b, b => params_of(&super::default_config(b))))
            .fit_by(move |p, v, limits| {
                let (c, note) = fit_config(limits, v, dtype, config_of(p));
                (params_of(&c), note)
            })
            .twins_by(
                super::WGSL_TEMPLATE,
                move |p, v| {
                    let c = config_of(p);
                    super::wgsl_spec(op, dtype, &c, v, super::wgsl_static_bytes(dtype, &c).unwrap_or(u32::MAX))
                },
                move |p| super::cuda_source(op, dtype, &config_of(p)),
            )
            .workload_by(move |b, p, v, seed| {
                crate::with_backend!(b, b => super::work::prepare(b, problem, config_of(p), v, seed))
            }))
    },
    // The backend's default config, and a staged one with 200 KB of tile per block.
    cases: Some(|s| {
        let problem = json!({"n": s.n, "op": "sum", "dtype": "f32"});
        let staged = json!({"block": 256, "items_per_thread": 200, "staged": true});
        vec![Case::default_config(problem.clone()), Case::with(problem, staged)]
    }),
    // 2^23 + 3 elements in chunks of 4 x 32: 65537 chunks, past the 65535-block grid.
    edge: || {
        let problem = json!({"n": (1u64 << 23) + 3, "op": "sum", "dtype": "f32"});
        vec![Case::with(problem, json!({"block": 4, "items_per_thread": 32, "staged": false}))]
    },
    // f32 and u32 elements alike are 4 bytes.
    anchor_bytes: Some(|p| bytes_of(p["n"], 4)),
    shapes: include_str!("shapes.txt"),
    ..KernelFamily::EMPTY
};

/// Block, items per thread (`ipt` in sweeps and database entries recorded before it was
/// named as the config names it) and staging; fewer threads on the CPU backend.
fn space(target: &Target) -> Vec<Param> {
    let cpu = target.backend == BackendKind::Cpu;
    // On the CPU backend not only multiples of 4: the staged copy's scalar tail after its
    // vectors.
    let ipt: &[u32] = if cpu { &[1, 3, 4, 6, 8, 16, 32, 64, 128] } else { &[1, 2, 4, 8, 16, 32, 64, 128] };
    let block: &[u32] = if cpu { &[4, 8, 16, 32, 64] } else { &[32, 64, 128, 256, 512, 1024] };
    vec![
        Param::new("block", block),
        Param::new("items_per_thread", ipt).formerly("ipt"),
        Param::flag("staged", &[false, true]),
    ]
}

fn config_of(p: &Params) -> ReduceConfig {
    ReduceConfig { block: p["block"], items_per_thread: p["items_per_thread"], staged: p["staged"] != 0 }
}

fn params_of(c: &ReduceConfig) -> Params {
    let values = [("block", c.block), ("items_per_thread", c.items_per_thread), ("staged", u32::from(c.staged))];
    Params(values.into_iter().collect())
}

/// The config `variant` runs for `asked`: for cuda-static, where its arrays pass the static
/// limit, a staged config keeps its block and stages fewer items per thread (the most that
/// fit, multiples of 4 first for the 16-byte loads); an unstaged one halves its block. With
/// a note ([`fit_static`]).
pub fn fit_config(
    limits: &Limits,
    variant: Variant,
    dtype: Dtype,
    asked: ReduceConfig,
) -> (ReduceConfig, Option<String>) {
    let fallbacks: Vec<ReduceConfig> = if asked.staged {
        let ipts = (1..asked.items_per_thread).rev();
        ipts.clone()
            .filter(|i| i % 4 == 0)
            .chain(ipts.filter(|i| i % 4 != 0))
            .map(|items_per_thread| ReduceConfig { items_per_thread, ..asked })
            .collect()
    } else {
        halvings(asked.block, 32).map(|block| ReduceConfig { block, ..asked }).collect()
    };
    fit_static(variant, limits.static_shared_max, asked, fallbacks, |c| c.shared_bytes(dtype).ok())
}
