//! Conv1d's description: its problem's sizes, its parameters (block, outputs per thread: a
//! const generic, so only the instantiations in the image, [`OUTPUTS_PER_THREAD`], are
//! candidates), its bench and edge cases, and its launch.

use dynsmem_kernels::conv1d::{Conv1dConfig, OUTPUTS_PER_THREAD};
use serde_json::json;

use super::Conv1dProblem;
use crate::backend::BackendKind;
use crate::contract::{Kernel, Param, Params, Target, bytes_of, check_footprint, halvings};
use crate::family::kernel::{Case, KernelFamily, Size};

pub static CONV1D: KernelFamily = KernelFamily {
    name: "conv1d",
    about: "K-tap 1-D convolution with a halo tile.",
    sizes: &[
        Size::of(
            "n",
            |s| s.n,
            "Samples (default: 2^28 on a GPU, 2^22 on a CPU Vulkan adapter, 2^16 on the CPU backend)",
        ),
        Size::fixed("taps", 33, "Taps (odd, 3..=129)"),
    ],
    build: |p| {
        let problem = Conv1dProblem { n: p["n"], taps: p.u32("taps")? };
        // The workload launches the entry of the point's outputs per thread (`_r4`, `_r8`).
        Ok(Kernel::new(dynsmem_kernels::conv1d::KERNELS, "conv1d_f32_r4")
            .space(space)
            .footprint_by(move |p, t| super::check(&problem, &config_of(p), t))
            .default_by(move |b| params_of(&super::default_for(b.kind(), b.small_configs(), problem.taps)))
            .fit_static_by(move |p| config_of(p).shared_bytes(problem.taps).ok(), |p| fallbacks(&config_of(p)))
            .twins_by(
                super::WGSL_TEMPLATE,
                move |p, v| super::wgsl_spec(&problem, &config_of(p), v),
                move |p| super::cuda_source(&problem, &config_of(p)),
            )
            .workload_by(move |b, p, v, seed| {
                crate::erased_workload!(b, b => {
                    // Input and output on the device; the input, the f64 reference and its
                    // error scale, the NaN fill and the read-back on the host.
                    check_footprint(b, "conv1d_f32", bytes_of(problem.n, 8), bytes_of(problem.n, 28))?;
                    super::prepare(b, problem, config_of(p), v, seed)
                })
            }))
    },
    cases: Some(|s| [3, 33].into_iter().map(|taps| Case::default_config(json!({"n": s.n, "taps": taps}))).collect()),
    // 2^20 + 17 outputs in tiles of 4 x 4: 65538 tiles, past the 65535-block grid.
    edge: || vec![Case::with(json!({"n": (1u64 << 20) + 17, "taps": 3}), json!({"block": 4, "outputs_per_thread": 4}))],
    anchor_bytes: Some(|p| bytes_of(p["n"], 4)),
    shapes: include_str!("shapes.txt"),
    ..KernelFamily::EMPTY
};

/// Block, and outputs per thread of the image's instantiations; fewer threads on the CPU
/// backend.
fn space(target: &Target) -> Vec<Param> {
    let blocks: &[u32] =
        if target.backend == BackendKind::Cpu { &[4, 8, 16, 32, 64] } else { &[32, 64, 128, 256, 512, 1024] };
    vec![Param::new("block", blocks), Param::new("outputs_per_thread", &OUTPUTS_PER_THREAD)]
}

fn config_of(p: &Params) -> Conv1dConfig {
    Conv1dConfig { block: p["block"], outputs_per_thread: p["outputs_per_thread"] }
}

fn params_of(c: &Conv1dConfig) -> Params {
    Params([("block", c.block), ("outputs_per_thread", c.outputs_per_thread)].into_iter().collect())
}

/// The static forms' fallbacks: smaller blocks (every default fits: 128 x 8 outputs and
/// 129 taps are 4.7 KB).
fn fallbacks(c: &Conv1dConfig) -> Vec<Params> {
    halvings(c.block, 32).map(|block| params_of(&Conv1dConfig { block, ..*c })).collect()
}
