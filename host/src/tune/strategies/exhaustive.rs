//! Exhaustive search: every config in the space's enumeration order, until the budget is
//! spent. With a budget smaller than the space it is "the first configs", the baseline the
//! other strategies must beat.

use super::{Budget, Evaluator, SearchResult, Stop};
use crate::rng::SplitMix64;
use crate::tune::runner::Runner;
use crate::tune::space::SearchSpace;

pub fn search(space: &SearchSpace, runner: &mut dyn Runner, budget: Budget, _rng: &mut SplitMix64) -> SearchResult {
    let mut ev = Evaluator::new(space, runner, budget);
    for i in 0..space.len() {
        if ev.cost(i).is_none() {
            break;
        }
    }
    ev.finish("exhaustive", Stop::SpaceExhausted)
}
