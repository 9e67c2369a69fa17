//! Random sampling: configs drawn uniformly without replacement (a seeded shuffle of the
//! space), until the budget is spent.

use super::{Budget, Evaluator, SearchResult, Stop, shuffle};
use crate::rng::SplitMix64;
use crate::tune::runner::Runner;
use crate::tune::space::SearchSpace;

pub fn search(space: &SearchSpace, runner: &mut dyn Runner, budget: Budget, rng: &mut SplitMix64) -> SearchResult {
    let mut order: Vec<usize> = (0..space.len()).collect();
    shuffle(&mut order, rng);
    let mut ev = Evaluator::new(space, runner, budget);
    for i in order {
        if ev.cost(i).is_none() {
            break;
        }
    }
    ev.finish("random", Stop::SpaceExhausted)
}
