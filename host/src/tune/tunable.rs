//! The tuner's view of a kernel: its parameters and their candidate values, the
//! constraints a point must meet before launch, and how a point becomes a workload.
//! [`Tunable`] is the typed form; [`DynTunable`] / [`ErasedTunable`] are the erased forms
//! the registry and the CLI hand the tuner. A built-in family implements it through
//! `family::space::Tuner`; a user's [`crate::contract::Kernel`] implements it directly.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::backend::{AnyBackend, Variant};
use crate::contract::{FamilyBackend, Footprint, Target, Workload};
use crate::error::Result;
use crate::tune::space::SearchSpace;

pub use crate::contract::Param;

/// One kernel family's side of the tuner: its problem, its tunable parameters with their
/// candidate values, the constraints a config must meet before it is launched, and how to
/// build a verified, timeable [`Workload`] for one config. A new family joins with
/// one impl of this trait in its folder (`families/<name>/tune.rs`), returned by its
/// [`crate::family::Family::tunable`].
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
    fn prepare<'b, B: FamilyBackend>(
        &self,
        backend: &'b B,
        variant: Variant,
        point: &[u32],
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>>
    where
        Self: Sized;

    /// What the outputs of configs prepared with inputs `seed` are checked against, as cache
    /// keys carry it ([`super::TuneFields::check`]): two sweeps with different checks never
    /// answer each other. A built-in family: its CPU reference of the seed's inputs.
    fn check_id(&self, seed: u64) -> Result<String> {
        Ok(format!("the {} CPU reference, inputs seed {seed}", self.family()))
    }

    /// The points of `space` most likely to be fastest, best first, at most `limit`, as the
    /// family's cost model ranks them: what tuning on first use ([`super::autotune`])
    /// measures. `None` (the default): the family has no model, and a problem without a
    /// tuned config keeps the heuristic default.
    fn candidates(&self, space: &SearchSpace, limit: usize) -> Option<Vec<usize>> {
        let _ = (space, limit);
        None
    }
}

/// [`Tunable`], erased (object-safe): what the registry hands the tuner. Problems and
/// configs as JSON, the backend as [`AnyBackend`].
pub trait DynTunable {
    fn family(&self) -> &'static str;
    fn problem_json(&self) -> serde_json::Value;
    fn params(&self, target: &Target) -> Vec<Param>;
    fn check(&self, point: &[u32], target: &Target) -> std::result::Result<Footprint, String>;
    fn config_json(&self, point: &[u32]) -> serde_json::Value;
    fn check_id(&self, seed: u64) -> Result<String>;
    fn prepare_any<'b>(
        &self,
        backend: AnyBackend<'b>,
        variant: Variant,
        point: &[u32],
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>>;
}

impl<T: Tunable> DynTunable for T {
    fn family(&self) -> &'static str {
        Tunable::family(self)
    }
    fn problem_json(&self) -> serde_json::Value {
        serde_json::to_value(Tunable::problem(self)).expect("problems serialize")
    }
    fn params(&self, target: &Target) -> Vec<Param> {
        Tunable::params(self, target)
    }
    fn check(&self, point: &[u32], target: &Target) -> std::result::Result<Footprint, String> {
        Tunable::check(self, point, target)
    }
    fn config_json(&self, point: &[u32]) -> serde_json::Value {
        Tunable::config_json(self, point)
    }
    fn check_id(&self, seed: u64) -> Result<String> {
        Tunable::check_id(self, seed)
    }
    fn prepare_any<'b>(
        &self,
        backend: AnyBackend<'b>,
        variant: Variant,
        point: &[u32],
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        crate::with_backend!(backend, b => Tunable::prepare(self, b, variant, point, seed))
    }
}

/// A [`DynTunable`] with its problem as JSON: the [`Tunable`] the CLI's tuner drives for
/// any family of the registry (same cache keys as the typed one: the problem and configs
/// serialize alike).
pub struct ErasedTunable {
    inner: Box<dyn DynTunable>,
    problem: serde_json::Value,
}

impl ErasedTunable {
    pub fn new(inner: Box<dyn DynTunable>) -> ErasedTunable {
        let problem = inner.problem_json();
        ErasedTunable { inner, problem }
    }
}

impl Tunable for ErasedTunable {
    type Problem = serde_json::Value;
    type Config = serde_json::Value;

    fn family(&self) -> &'static str {
        self.inner.family()
    }
    fn problem(&self) -> &serde_json::Value {
        &self.problem
    }
    fn params(&self, target: &Target) -> Vec<Param> {
        self.inner.params(target)
    }
    fn check(&self, point: &[u32], target: &Target) -> std::result::Result<Footprint, String> {
        self.inner.check(point, target)
    }
    fn config(&self, point: &[u32]) -> serde_json::Value {
        self.inner.config_json(point)
    }
    fn check_id(&self, seed: u64) -> Result<String> {
        self.inner.check_id(seed)
    }
    fn prepare<'b, B: FamilyBackend>(
        &self,
        backend: &'b B,
        variant: Variant,
        point: &[u32],
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        self.inner.prepare_any(backend.erase(), variant, point, seed)
    }
}

/// The inputs of the last seed a tunable prepared, made once and shared by every config
/// measured with that seed (a sweep measures many configs on the same inputs). The last
/// seed's are dropped before the next ones are made (they can be gigabytes).
pub struct SeedInputs<T>(std::cell::RefCell<Option<(u64, std::sync::Arc<T>)>>);

impl<T> Default for SeedInputs<T> {
    fn default() -> Self {
        SeedInputs(std::cell::RefCell::new(None))
    }
}

impl<T> SeedInputs<T> {
    /// The inputs of `seed`: the held ones, or `make()`'s.
    pub fn get(&self, seed: u64, make: impl FnOnce() -> T) -> std::sync::Arc<T> {
        let mut slot = self.0.borrow_mut();
        if let Some((s, inputs)) = slot.as_ref()
            && *s == seed
        {
            return inputs.clone();
        }
        *slot = None;
        let inputs = std::sync::Arc::new(make());
        *slot = Some((seed, inputs.clone()));
        inputs
    }
}
