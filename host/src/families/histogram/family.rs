//! Histogram's description: its problem's sizes, its parameters, its bench cases and its
//! launch. The tuner sweeps block, private copies of the bins per block and grid (in whole
//! waves of the device's multiprocessors where it reports them); clusters, held bins, counter
//! bits and merging are parameters with one candidate (`--cluster`, `--held`, `--bits`,
//! `--merge`), not searched: the split over a cluster ran slower than holding what fits
//! (`NOTES.md`).

use dynsmem_kernels::histogram::HistogramConfig;
use serde_json::json;

use super::HistogramProblem;
use crate::backend::{BackendKind, Limits, Variant};
use crate::contract::{Kernel, Param, Params, Target, bytes_of, fit_static};
use crate::family::kernel::{Case, KernelFamily, Size};

pub static HISTOGRAM: KernelFamily = KernelFamily {
    name: "histogram",
    about: "Counts of u32 keys in bins held in workgroup memory.",
    sizes: &[
        Size::of("n", |s| s.n, "Keys (default: 2^28 on a GPU, 2^22 on a CPU Vulkan adapter, 2^16 on the CPU backend)"),
        Size::fixed("bins", 256, "Bins"),
        Size::fixed("out_of_range_pct", 0, "Percent of keys outside [0, bins) (not counted)").long("out-of-range"),
    ],
    build: |p| {
        let problem =
            HistogramProblem { n: p["n"], bins: p.u32("bins")?, out_of_range_pct: p.u32("out_of_range_pct")? };
        Ok(Kernel::new(dynsmem_kernels::histogram::KERNELS, super::KERNEL)
            .space(space)
            .footprint_by(move |p, t| super::check(&problem, &config_of(p), t))
            .default_by(move |b| crate::with_backend!(b, b => params_of(&super::default_config(b, &problem))))
            .fit_by(move |p, v, limits| {
                let (c, note) = fit_config(limits, v, &problem, config_of(p));
                (params_of(&c), note)
            })
            .twins_by(
                super::WGSL_TEMPLATE,
                move |p, v| super::wgsl_spec(&problem, &config_of(p), v),
                move |p| super::cuda_source(&problem, &config_of(p)),
            )
            .workload_by(
                move |b, p, v, seed| crate::erased_workload!(b, b => super::prepare(b, problem, config_of(p), v, seed)),
            ))
    },
    // 256 and 4096 bins, and 49152 (192 KB of bins: past the 48 KB static limit).
    cases: Some(|s| {
        [256, 4096, 49_152]
            .map(|bins| Case::default_config(json!({"n": s.n, "bins": bins, "out_of_range_pct": 0})))
            .to_vec()
    }),
    anchor_bytes: Some(|p| bytes_of(p["n"], 4)),
    shapes: include_str!("shapes.txt"),
    ..KernelFamily::EMPTY
};

/// Block, copies and grid swept; the rest one candidate each, read as the value of entries
/// recorded before they existed.
fn space(target: &Target) -> Vec<Param> {
    let fixed = [
        Param::new("cluster", &[1]).absent_as(1),
        Param::new("held", &[0]).absent_as(0),
        Param::new("bits", &[32]).absent_as(32),
        Param::flag("merge", &[false]).absent_as(0),
    ];
    let swept = if target.backend == BackendKind::Cpu {
        // Few blocks there: every kernel thread is an OS thread.
        vec![Param::new("block", &[8, 16, 32, 64]), Param::new("copies", &[1, 2, 4]), Param::new("grid", &[1, 2, 4, 8])]
    } else {
        let grids: Vec<u32> = match target.limits.multiprocessors {
            Some(m) => [1, 2, 4, 8, 16].iter().map(|w| w * m).collect(),
            None => vec![64, 128, 256, 512, 1024, 2048],
        };
        vec![
            Param::new("block", &[128, 256, 512, 1024]),
            Param::new("copies", &[1, 2, 4, 8, 16]),
            Param::new("grid", &grids),
        ]
    };
    swept.into_iter().chain(fixed).collect()
}

fn config_of(p: &Params) -> HistogramConfig {
    HistogramConfig {
        block: p["block"],
        grid: p["grid"],
        copies: p["copies"],
        cluster: p["cluster"],
        held: p["held"],
        bits: p["bits"],
        merge: p["merge"] != 0,
    }
}

fn params_of(c: &HistogramConfig) -> Params {
    let values = [
        ("block", c.block),
        ("grid", c.grid),
        ("copies", c.copies),
        ("cluster", c.cluster),
        ("held", c.held),
        ("bits", c.bits),
        ("merge", u32::from(c.merge)),
    ];
    Params(values.into_iter().collect())
}

/// The config `variant` runs for `asked`: the twins hold every bin in one workgroup, so a
/// cluster config runs as plain blocks (one copy each where the bins need a cluster), then
/// fewer private copies of the bins, down to one, where cuda-static's arrays pass the static
/// limit; none fits when one copy is over it (49152 bins of 4 bytes are 192 KB, four times
/// the 48 KB a static array may hold). Each change with a note.
pub fn fit_config(
    limits: &Limits,
    variant: Variant,
    problem: &HistogramProblem,
    asked: HistogramConfig,
) -> (HistogramConfig, Option<String>) {
    let (config, note) = super::fit_twin(variant, asked);
    let fallbacks = (1..config.copies).rev().map(|copies| HistogramConfig { copies, ..config });
    let (config, fitted) =
        fit_static(variant, limits.static_shared_max, config, fallbacks, |c| c.shared_bytes(problem.bins).ok());
    (config, note.into_iter().chain(fitted).reduce(|a, b| format!("{a}; {b}")))
}
