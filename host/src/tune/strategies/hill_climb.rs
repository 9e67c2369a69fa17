//! Greedy hill climbing with restarts, after Kernel Tuner's `greedy_mls`: from a random
//! config, evaluate its adjacent neighbours (one parameter one step) in random order and
//! move to the first faster one; at a config none of whose adjacent neighbours is faster,
//! try its wider neighbours (one parameter, any value) the same way; at a config none of
//! those improves either (a local optimum), restart from a random unvisited config.

use super::{Budget, Evaluator, SearchResult, Stop, shuffle};
use crate::rng::SplitMix64;
use crate::tune::runner::Runner;
use crate::tune::space::SearchSpace;

pub fn search(space: &SearchSpace, runner: &mut dyn Runner, budget: Budget, rng: &mut SplitMix64) -> SearchResult {
    let mut ev = Evaluator::new(space, runner, budget);
    'restarts: while let Some(start) = ev.random_unvisited(rng) {
        let Some(mut cost) = ev.cost(start) else { break };
        let mut at = start;
        'climb: loop {
            for hamming in [false, true] {
                let mut near = space.neighbours(at, hamming);
                shuffle(&mut near, rng);
                for j in near {
                    let Some(c) = ev.cost(j) else { break 'restarts };
                    if c < cost {
                        at = j;
                        cost = c;
                        continue 'climb;
                    }
                }
            }
            continue 'restarts;
        }
    }
    ev.finish("hill-climb", Stop::SpaceExhausted)
}
