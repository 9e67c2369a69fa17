//! A family's search space as three functions on the family ([`Space`]), made a
//! [`Tunable`] by [`Tuner`]: the form for families whose tuner needs no state of its own
//! (a family with state, such as SGEMM's shared inputs, implements [`Tunable`] itself).

use super::{Family, Footprint, Target};
use crate::backend::Variant;
use crate::contract::{FamilyBackend, Workload};
use crate::error::Result;
use crate::tune::{Param, Tunable};

/// A family's search space as three functions, for families whose tuner needs no state
/// of its own: [`Tuner`] turns them into a [`Tunable`].
pub trait Space: Family {
    /// The parameters and their default candidate values on `target`, in the order a
    /// point lists them.
    fn params(target: &Target, problem: &Self::Problem) -> Vec<Param>;
    /// The config of a point (its values in [`Space::params`] order).
    fn config_of(point: &[u32]) -> Self::Config;
    /// The family's one validation (the same function its `prepare` calls first): the
    /// config's constraints (its `fits()`, its layout) and what it asks for; a refusal
    /// filters it out before launch, its text the reason. The backend's limits are checked on
    /// the returned [`Footprint`] by the search space.
    fn check(problem: &Self::Problem, config: &Self::Config, target: &Target) -> Result<Footprint>;
}

/// A [`Tunable`] made from the problem alone: what [`Family::tunable`] builds by default.
pub trait ForProblem: Tunable {
    fn for_problem(problem: Self::Problem) -> Self;
}

/// The [`Tunable`] of a [`Space`] family for one problem.
pub struct Tuner<F: Family> {
    problem: F::Problem,
}

impl<F: Family> Tuner<F> {
    pub fn new(problem: F::Problem) -> Tuner<F> {
        Tuner { problem }
    }
}

impl<F: Space> ForProblem for Tuner<F> {
    fn for_problem(problem: F::Problem) -> Tuner<F> {
        Tuner::new(problem)
    }
}

impl<F: Space> Tunable for Tuner<F> {
    type Problem = F::Problem;
    type Config = F::Config;

    fn family(&self) -> &'static str {
        F::NAME
    }
    fn problem(&self) -> &F::Problem {
        &self.problem
    }
    fn params(&self, target: &Target) -> Vec<Param> {
        F::params(target, &self.problem)
    }
    fn check(&self, point: &[u32], target: &Target) -> std::result::Result<Footprint, String> {
        F::check(&self.problem, &F::config_of(point), target).map_err(|e| e.to_string())
    }
    fn config(&self, point: &[u32]) -> F::Config {
        F::config_of(point)
    }
    fn prepare<'b, B: FamilyBackend>(
        &self,
        backend: &'b B,
        variant: Variant,
        point: &[u32],
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        F::prepare(backend, &self.problem, &F::config_of(point), variant, seed)
    }
}
