//! Tile tuner: sweeps the launch-time configs of one kernel family over one compiled
//! image, like Kernel Tuner does for recompiled kernels.
//!
//! The pieces, one file each:
//! - [`space`]: the search space of a family (its [`Tunable`] parameters and their
//!   candidate values), filtered *before* anything is launched by the kernel's own
//!   constraints and the backend's limits; every filtered config keeps its reason.
//! - [`runner`]: what evaluates one config. [`runner::RealRunner`] builds, verifies
//!   against the CPU reference, then times it on a device, and appends the result to the
//!   [`cache`]; [`runner::ReplayRunner`] answers from a recorded cache with no device. Both
//!   behind one [`runner::Runner`] trait, so every strategy runs on either.
//! - [`strategies`]: exhaustive, random sampling, simulated annealing and greedy hill
//!   climbing with restarts, one file each, all with the signature of
//!   [`strategies::SearchFn`], budgeted by evaluations and/or seconds.
//! - [`cache`]: append-only JSON lines (one synced line per finished config, through
//!   [`crate::report::JsonlWriter`]), keyed by device, driver, kernel-image hash, family,
//!   variant, problem and config: a rerun answers cached configs from it, and a sweep
//!   killed at any point loses no finished config.
//! - [`t4`]: export in Kernel Tuner's T4 results format; [`plot`]: SVG plots;
//!   [`progress`]: the terminal progress bar.
//!
//! A family joins the tuner with one impl of [`Tunable`] (see [`families`]).

pub mod cache;
pub mod families;
pub mod plot;
pub mod progress;
pub mod runner;
pub mod space;
pub mod strategies;
pub mod t4;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::backend::cpu::CpuBackend;
use crate::backend::cuda::CudaBackend;
use crate::backend::hip::HipBackend;
use crate::backend::wgpu::WgpuBackend;
use crate::backend::{BackendKind, Limits};
use crate::error::Result;
use crate::kernels::reduce::ReduceKernels;
use crate::kernels::{Kernels, Variant, Workload};

pub use cache::{CacheEntry, CacheKey, TuneCache, TuneFields};
pub use runner::{Evaluation, RealRunner, ReplayRunner, Runner};
pub use space::{Param, Point, SearchSpace};
pub use strategies::{Budget, SearchResult, Strategy};

/// What a search space is filtered against: the backend, the variant it builds, and the
/// device's limits. Stored in every cache entry, so a replay rebuilds the same space with
/// no device.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Target {
    pub backend: BackendKind,
    pub variant: Variant,
    pub limits: Limits,
    /// A CPU device (the CPU backend, lavapipe): the default candidate lists are smaller,
    /// since every kernel thread of the CPU backend is an OS thread.
    pub is_cpu: bool,
}

/// The resources one config asks for, computed without a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Footprint {
    /// Threads per block (workgroup).
    pub threads: u32,
    /// Blocks of the largest launch.
    pub grid: u32,
    /// Launch-sized workgroup bytes per block of the Rust kernel (its layout's bytes).
    pub launch_bytes: u32,
    /// Static workgroup bytes of the WGSL form (`var<workgroup>` arrays).
    pub static_bytes: u32,
}

impl Footprint {
    /// The workgroup bytes the target's variant uses: launch-sized for the Rust kernels,
    /// static for WGSL. What the plots put on their x axis.
    pub fn shared_bytes(&self, variant: Variant) -> u32 {
        if variant == Variant::LaunchSized { self.launch_bytes } else { self.static_bytes }
    }
}

/// A backend the tuner can measure on: every family's kernels, and the time it spends
/// building kernels (WGSL pipelines), which the tuner reports apart from kernel time.
pub trait TuneBackend: Kernels + ReduceKernels {
    /// Milliseconds spent building kernels so far. The Rust backends load one image at
    /// start-up and build nothing per config: 0. WGSL creates a pipeline per config.
    fn build_ms_total(&self) -> f64 {
        0.0
    }
}

impl TuneBackend for CudaBackend {}
impl TuneBackend for HipBackend {}
impl TuneBackend for CpuBackend {}
impl TuneBackend for WgpuBackend {
    fn build_ms_total(&self) -> f64 {
        self.pipeline_ms_total()
    }
}

/// One kernel family's side of the tuner: its problem, its tunable parameters with their
/// candidate values, the constraints a config must meet before it is launched, and how to
/// build a verified, timeable [`Workload`] for one config. A new family joins with
/// one impl of this trait (in [`families`]), its template in [`WGSL_TEMPLATES`], and a
/// subcommand of `dynsmem tune` that builds its problem.
pub trait Tunable {
    /// The family's problem type, as `run` records it (part of the cache key).
    type Problem: Serialize + DeserializeOwned + Clone;

    /// The family name records use (`reduce`, `scan`, ...).
    fn family(&self) -> &'static str;

    /// The problem being tuned.
    fn problem(&self) -> &Self::Problem;

    /// The parameters and their default candidate values on `target`, in the order a
    /// [`Point`] lists them. The const-generic instantiations present in the image are
    /// the only candidates of a shape parameter (e.g. conv1d's outputs per thread).
    fn params(&self, target: &Target) -> Vec<Param>;

    /// Checks one point against the kernel's own constraints (its `fits()`, its layout)
    /// and returns what it asks for; `Err(reason)` filters it out. The backend's limits
    /// are checked by [`SearchSpace::build`] on the returned [`Footprint`].
    fn check(&self, point: &[u32], target: &Target) -> std::result::Result<Footprint, String>;

    /// The family's config struct, as `run` records it.
    type Config: Serialize;

    /// The config of a point (its values in [`Tunable::params`] order).
    fn config(&self, point: &[u32]) -> Self::Config;

    /// [`Tunable::config`] as records carry it.
    fn config_json(&self, point: &[u32]) -> serde_json::Value {
        serde_json::to_value(self.config(point)).expect("configs serialize")
    }

    /// Validates and builds the workload of one point on `backend` (inputs from `seed`,
    /// reference computed): nothing is launched yet.
    fn prepare<'b, B: TuneBackend>(
        &self,
        backend: &'b B,
        variant: Variant,
        point: &[u32],
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>>
    where
        Self: Sized;
}

/// FNV-1a, 64-bit: a stable hash (unlike `std`'s `DefaultHasher`, whose algorithm may
/// change between Rust releases) for kernel images in cache keys.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The hash of a kernel image as cache keys carry it: 16 hex digits of [`fnv1a64`] over
/// the image's parts, each prefixed by its length (so parts cannot run into each other).
pub fn image_hash(parts: &[&[u8]]) -> String {
    let mut all = Vec::new();
    for p in parts {
        all.extend_from_slice(&(p.len() as u64).to_le_bytes());
        all.extend_from_slice(p);
    }
    format!("{:016x}", fnv1a64(&all))
}

/// Every WGSL template the host library builds pipelines from. The WGSL "image" of a
/// config is its template filled with sizes from the problem and the config (both in the
/// cache key) and its `override` constants, so the hash of these texts stands for the
/// WGSL image (a new family adds its template here).
pub const WGSL_TEMPLATES: &[&str] = &[
    include_str!("../kernels/reduce/reduce.wgsl"),
    include_str!("../kernels/scan/scan.wgsl"),
    include_str!("../kernels/histogram/histogram.wgsl"),
    include_str!("../kernels/conv1d/conv1d.wgsl"),
    include_str!("../kernels/stencil2d/stencil2d.wgsl"),
    include_str!("../kernels/transpose/transpose.wgsl"),
    include_str!("../kernels/softmax/softmax.wgsl"),
    include_str!("../kernels/nbody/nbody.wgsl"),
    include_str!("../kernels/sgemm/sgemm.wgsl"),
];

/// [`image_hash`] of [`WGSL_TEMPLATES`].
pub fn wgsl_image_hash() -> String {
    let parts: Vec<&[u8]> = WGSL_TEMPLATES.iter().map(|t| t.as_bytes()).collect();
    image_hash(&parts)
}

/// JSON text with every object's keys sorted, at every depth: the canonical form of the
/// problems in cache keys (independent of how serde_json orders maps in this build).
pub fn canonical_json(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let body: Vec<String> =
                keys.into_iter().map(|k| format!("{}:{}", Value::String(k.clone()), canonical_json(&m[k]))).collect();
            format!("{{{}}}", body.join(","))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(canonical_json).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_published_vectors() {
        // From the FNV reference test suite (Fowler, Noll, Vo).
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
        assert_ne!(image_hash(&[b"ab", b"c"]), image_hash(&[b"a", b"bc"]), "parts cannot run together");
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let a: serde_json::Value = serde_json::from_str(r#"{"b":1,"a":{"d":[1,{"z":0,"y":2}],"c":"x"}}"#).unwrap();
        assert_eq!(canonical_json(&a), r#"{"a":{"c":"x","d":[1,{"y":2,"z":0}]},"b":1}"#);
    }
}
