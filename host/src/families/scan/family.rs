//! Scan's face to the registry: its command-line options, defaults and bench cases.

use dynsmem_kernels::Dtype;
use dynsmem_kernels::scan::ScanConfig;

use super::ScanProblem;
use crate::backend::Variant;
use crate::contract::halvings;
use crate::contract::{FamilyBackend, Workload, bytes_of, check_footprint};
use crate::error::{Error, Result};
use crate::family::DtypeArg;
use crate::family::space::Tuner;
use crate::family::{BenchCase, Family, Sizes};

pub struct Scan;

#[derive(clap::Args, Debug, Clone)]
pub struct ProblemArgs {
    /// Elements (default: 2^28 on a GPU, 2^22 on a CPU Vulkan adapter, 2^16 on the CPU backend).
    #[arg(long)]
    pub n: Option<u64>,
    #[arg(long, value_enum, default_value = "f32")]
    pub dtype: DtypeArg,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ConfigArgs {
    #[arg(long)]
    pub block: Option<u32>,
    /// Elements per thread (a tile is block * ipt).
    #[arg(long)]
    pub ipt: Option<u32>,
}

/// Device and host bytes per element (input and output on the device; the input, the f64
/// reference and its error scale, the NaN fill and the read-back on the host).
const DEVICE_BYTES: u64 = 8;
const HOST_BYTES: u64 = 28;

impl Family for Scan {
    const NAME: &'static str = "scan";
    const SUBGROUP_TWIN: bool = true;
    const ABOUT: &'static str = "Exclusive prefix sum (decoupled look-back; WGSL: reduce-then-scan).";
    const WGSL_TEMPLATE: &'static str = super::WGSL_TEMPLATE;
    const SHAPES: &'static str = include_str!("shapes.txt");
    type Problem = ScanProblem;
    type Config = ScanConfig;
    type ProblemArgs = ProblemArgs;
    type ConfigArgs = ConfigArgs;
    type Tunable = Tuner<Self>;

    fn problem(a: &ProblemArgs, sizes: &Sizes) -> ScanProblem {
        ScanProblem { n: a.n.unwrap_or(sizes.n), dtype: a.dtype.dtype() }
    }
    fn config(a: &ConfigArgs, d: &ScanConfig) -> ScanConfig {
        ScanConfig { block: a.block.unwrap_or(d.block), items_per_thread: a.ipt.unwrap_or(d.items_per_thread) }
    }
    fn default_config<B: FamilyBackend>(backend: &B, _: &ScanProblem) -> ScanConfig {
        super::default_config(backend)
    }
    fn static_bytes(_: &ScanProblem, c: &ScanConfig) -> Option<u32> {
        c.shared_bytes().ok()
    }
    /// The static forms' fallbacks: the same block with
    /// fewer items per thread (multiples of 4, the most that fit: 512 x 20 for the launch-sized
    /// default 512 x 48, whose 100752 B are twice the static limit), then smaller blocks.
    fn static_fallbacks(_: &ScanProblem, c: &ScanConfig) -> Vec<ScanConfig> {
        let fewer_items = (1..c.items_per_thread / 4).rev().map(|v| ScanConfig { items_per_thread: 4 * v, ..*c });
        fewer_items.chain(halvings(c.block, 32).map(|block| ScanConfig { block, ..*c })).collect()
    }
    fn prepare<'b, B: FamilyBackend>(
        backend: &'b B,
        p: &ScanProblem,
        c: &ScanConfig,
        variant: Variant,
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        let kernel = format!("scan_exclusive_{}", p.dtype.name());
        check_footprint(backend, &kernel, bytes_of(p.n, DEVICE_BYTES), bytes_of(p.n, HOST_BYTES))?;
        // The WGSL form scans tile sums level by level until one tile is left: with a tile
        // of one element no level is smaller than the last.
        if variant != Variant::LaunchSized && c.tile() == Some(1) && p.n > 1 {
            return Err(Error::InvalidConfig {
                kernel,
                reason: format!(
                    "block * items_per_thread = 1: tiles of one element never reduce {} elements to one tile",
                    p.n
                ),
            });
        }
        Ok(match p.dtype {
            Dtype::F32 => Box::new(super::prepare::<B, f32>(backend, *p, *c, variant, seed)?),
            Dtype::U32 => Box::new(super::prepare::<B, u32>(backend, *p, *c, variant, seed)?),
        })
    }
    fn anchor_bytes(p: &ScanProblem) -> Option<u64> {
        Some(bytes_of(p.n, 4))
    }
    fn bench_cases<B: FamilyBackend>(backend: &B, sizes: &Sizes) -> Vec<BenchCase<Self>> {
        vec![BenchCase {
            problem: ScanProblem { n: sizes.n, dtype: Dtype::F32 },
            config: super::default_config(backend),
        }]
    }
}
