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
//! - [`shard`]: one sweep split between processes (GPUs of a host, Slurm array tasks),
//!   each with its own cache, and the merge that joins their caches.
//! - [`supervise`]: a sweep in a worker process that a supervisor restarts when a config
//!   faults (the device context is lost) or hangs, recording that config as failed.
//! - [`autotune`]: tuning on first use: a problem no tuned config answers measures the
//!   few configs its family's cost model ranks first, and keeps the winner per user.
//! - [`t4`]: export in Kernel Tuner's T4 results format; [`plot`]: SVG plots;
//!   [`progress`]: the terminal progress bar.
//!
//! A kernel joins the tuner with one impl of [`Tunable`] ([`tunable`]): a built-in family
//! through `family::space::Tuner`, a user's [`crate::contract::Kernel`] directly.

pub mod autotune;
pub mod cache;
pub mod confirm;
pub mod db;
pub mod kernel;
pub mod kt;
pub mod objective;
pub mod plot;
pub mod progress;
pub mod runner;
pub mod shard;
pub mod space;
pub mod strategies;
pub mod supervise;
pub mod t4;
pub mod tunable;

use crate::backend::cpu::CpuBackend;
use crate::backend::cuda::CudaBackend;
use crate::backend::hip::HipBackend;
use crate::backend::wgpu::WgpuBackend;
use crate::contract::FamilyBackend;

pub use cache::{CacheEntry, CacheKey, TuneCache, TuneFields};
pub use kernel::{Sweep, TuneOptions, tune_kernel, tune_kernel_with};
pub use objective::Objective;
pub use runner::{Evaluation, RealRunner, ReplayRunner, Runner};
pub use shard::{Shard, Worker};
pub use space::{Point, SearchSpace};
pub use strategies::{Budget, SearchResult, Strategy};

pub use crate::contract::{Footprint, Target};
pub use tunable::{DynTunable, ErasedTunable, Param, Tunable};

/// A backend the tuner can measure on: every family's kernels, and the time it spends
/// building kernels (WGSL pipelines), which the tuner reports apart from kernel time.
pub trait TuneBackend: FamilyBackend {
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
