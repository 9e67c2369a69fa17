//! Scan's description: its problem's sizes, its parameters (block, items per thread: a
//! multiple of 4, since the kernel moves whole 16-byte vectors), its bench case, and its
//! launches (the look-back kernel; WGSL: reduce-then-scan, level by level, or the look-back
//! form in wgsl-subgroup).

use dynsmem_kernels::Dtype;
use dynsmem_kernels::scan::ScanConfig;
use serde_json::json;

use super::ScanProblem;
use crate::backend::{BackendKind, Limits, Variant};
use crate::contract::{Kernel, Param, Params, Target, Workload, bytes_of, check_footprint, fit_static, halvings};
use crate::error::{Error, Result};
use crate::family::kernel::{Case, KernelFamily, Size};

/// Device and host bytes per element (input and output on the device; the input, the f64
/// reference and its error scale, the NaN fill and the read-back on the host).
const DEVICE_BYTES: u64 = 8;
const HOST_BYTES: u64 = 28;

pub static SCAN: KernelFamily = KernelFamily {
    name: "scan",
    about: "Exclusive prefix sum (decoupled look-back; WGSL: reduce-then-scan, or look-back in wgsl-subgroup).",
    sizes: &[
        Size::of(
            "n",
            |s| s.n,
            "Elements (default: 2^28 on a GPU, 2^22 on a CPU Vulkan adapter, 2^16 on the CPU backend)",
        ),
        Size::choice("dtype", &["f32", "u32"], "Element type"),
    ],
    build: |p| {
        let dtype = if p.choice("dtype") == "u32" { Dtype::U32 } else { Dtype::F32 };
        let problem = ScanProblem { n: p["n"], dtype };
        Ok(Kernel::new(dynsmem_kernels::scan::KERNELS, super::entry(dtype))
            .space(space)
            .alias("items_per_thread", "ipt")
            .footprint_by(move |p, t| super::check(&problem, &config_of(p), t))
            .default_by(|b| params_of(&super::default_for(b.kind(), b.small_configs(), &b.info().limits)))
            .fit_by(|p, v, limits| {
                let (c, note) = fit_config(limits, v, config_of(p));
                (params_of(&c), note)
            })
            .twins_by(
                super::WGSL_TEMPLATE,
                move |p, v| super::wgsl_spec(dtype, &config_of(p), v, "tile_sums"),
                move |p| super::cuda_source(dtype, &config_of(p)),
            )
            // The WGSL folds and scans have a subgroup form.
            .forms(|_| true)
            .workload_by(move |b, p, v, seed| workload(b, problem, config_of(p), v, seed)))
    },
    cases: Some(|s| vec![Case::default_config(json!({"n": s.n, "dtype": "f32"}))]),
    anchor_bytes: Some(|p| bytes_of(p["n"], 4)),
    shapes: include_str!("shapes.txt"),
    ..KernelFamily::EMPTY
};

/// Block and items per thread (`ipt` in sweeps and database entries recorded before it was
/// named as the config names it); fewer threads on the CPU backend.
fn space(target: &Target) -> Vec<Param> {
    if target.backend == BackendKind::Cpu {
        vec![Param::new("block", &[4, 8, 16, 32, 64]), Param::new("items_per_thread", &[4, 8, 16, 32]).formerly("ipt")]
    } else {
        vec![
            Param::new("block", &[64, 128, 256, 512, 1024]),
            Param::new("items_per_thread", &[4, 8, 12, 16, 24, 32, 48, 64]).formerly("ipt"),
        ]
    }
}

fn config_of(p: &Params) -> ScanConfig {
    ScanConfig { block: p["block"], items_per_thread: p["items_per_thread"] }
}

fn params_of(c: &ScanConfig) -> Params {
    Params([("block", c.block), ("items_per_thread", c.items_per_thread)].into_iter().collect())
}

/// The config `variant` runs for `asked`: for cuda-static, where its arrays pass the static
/// limit, the same block with fewer items per thread (multiples of 4, the most that fit:
/// 512 x 20 for the launch-sized default 512 x 48, whose 100752 B are twice the static
/// limit), then smaller blocks, with a note ([`fit_static`]).
pub fn fit_config(limits: &Limits, variant: Variant, asked: ScanConfig) -> (ScanConfig, Option<String>) {
    let fewer_items = (1..asked.items_per_thread / 4).rev().map(|v| ScanConfig { items_per_thread: 4 * v, ..asked });
    let fallbacks = fewer_items.chain(halvings(asked.block, 32).map(|block| ScanConfig { block, ..asked }));
    fit_static(variant, limits.static_shared_max, asked, fallbacks, |c| c.shared_bytes().ok())
}

fn workload<'b>(
    b: crate::backend::AnyBackend<'b>,
    p: ScanProblem,
    c: ScanConfig,
    variant: Variant,
    seed: u64,
) -> Result<Box<dyn Workload + 'b>> {
    let kernel = super::entry(p.dtype);
    crate::with_backend!(b, b => {
        check_footprint(b, kernel, bytes_of(p.n, DEVICE_BYTES), bytes_of(p.n, HOST_BYTES))?;
        // The WGSL form scans tile sums level by level until one tile is left: with a tile
        // of one element no level is smaller than the last.
        if variant != Variant::LaunchSized && c.tile() == Some(1) && p.n > 1 {
            return Err(Error::InvalidConfig {
                kernel: kernel.into(),
                reason: format!(
                    "block * items_per_thread = 1: tiles of one element never reduce {} elements to one tile",
                    p.n
                ),
            });
        }
        Ok(match p.dtype {
            Dtype::F32 => Box::new(super::prepare::<_, f32>(b, p, c, variant, seed)?) as Box<dyn Workload + 'b>,
            Dtype::U32 => Box::new(super::prepare::<_, u32>(b, p, c, variant, seed)?),
        })
    })
}
