//! Simulated annealing, after Kernel Tuner's `simulated_annealing` strategy: from a random
//! config, take a random step ([`SearchSpace::random_step`]: each parameter jumps to any
//! value with probability [`JUMP`], then one moves to an adjacent value), always accepting
//! a faster config and a slower one with probability `exp(-(new - old) / old / T)`. The
//! temperature falls geometrically from [`T_START`] to [`T_END`] as the evaluation budget
//! is spent (the schedule fits the budget), and a walk that stops finding configs it has
//! not evaluated restarts from a random unvisited one.

use super::{Budget, Evaluator, SearchResult, Stop};
use crate::rng::SplitMix64;
use crate::tune::runner::Runner;
use crate::tune::space::SearchSpace;

/// Starting temperature: a config 20% slower is accepted with probability ~0.5.
pub const T_START: f64 = 0.3;
/// Final temperature: a config 1% slower is accepted with probability ~0.05.
pub const T_END: f64 = 0.003;
/// Steps in a row that evaluate nothing new before the walk restarts elsewhere.
pub const STUCK_STEPS: usize = 20;
/// Probability that a step moves a parameter to any of its values (Kernel Tuner's 0.2).
pub const JUMP: f64 = 0.2;
/// Draws of a step before a config counts as having no neighbour in the space.
const STEP_TRIES: usize = 16;

/// Probability of moving from a config of cost `old` to one of cost `new` at `t`.
pub fn acceptance(old: f64, new: f64, t: f64) -> f64 {
    if !old.is_finite() {
        1.0 // a failed config: always leave it
    } else if !new.is_finite() {
        0.0 // never step onto one
    } else if new < old {
        1.0
    } else {
        (-(new - old) / old.max(f64::MIN_POSITIVE) / t).exp()
    }
}

pub fn search(space: &SearchSpace, runner: &mut dyn Runner, budget: Budget, rng: &mut SplitMix64) -> SearchResult {
    let mut ev = Evaluator::new(space, runner, budget);
    let Some(start) = ev.random_unvisited(rng) else {
        return ev.finish("anneal", Stop::SpaceExhausted);
    };
    let Some(mut cost) = ev.cost(start) else {
        return ev.finish("anneal", Stop::Finished);
    };
    let mut at = start;
    let schedule = ev.max_evaluations().max(1) as f64;
    let mut stuck = 0;
    // A bound on steps that revisit: every step either evaluates a new config or counts
    // towards a restart, and restarts evaluate a new config each.
    let max_steps = 64 * space.len() + 1024;
    for _ in 0..max_steps {
        let t = T_START * (T_END / T_START).powf(ev.count() as f64 / schedule);
        let step = space.random_step(at, JUMP, rng, STEP_TRIES);
        let before = ev.count();
        let next = match step {
            Some(j) if stuck < STUCK_STEPS => j,
            _ => {
                // No step left the config, or none found anything new for a while: a
                // restart, which moves unconditionally.
                stuck = 0;
                let Some(i) = ev.random_unvisited(rng) else { break };
                let Some(c) = ev.cost(i) else { break };
                at = i;
                cost = c;
                continue;
            }
        };
        let Some(c) = ev.cost(next) else { break };
        stuck = if ev.count() > before { 0 } else { stuck + 1 };
        let r = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        if acceptance(cost, c, t) > r {
            at = next;
            cost = c;
        }
    }
    ev.finish("anneal", Stop::Finished)
}

#[cfg(test)]
mod tests {
    use super::acceptance;

    #[test]
    fn acceptance_prefers_faster_and_never_steps_onto_failures() {
        assert_eq!(acceptance(2.0, 1.0, 0.1), 1.0);
        assert_eq!(acceptance(1.0, f64::INFINITY, 10.0), 0.0);
        assert_eq!(acceptance(f64::INFINITY, 5.0, 0.001), 1.0);
        let hot = acceptance(1.0, 1.2, super::T_START);
        let cold = acceptance(1.0, 1.2, super::T_END);
        assert!(hot > 0.4 && hot < 0.6, "{hot}");
        assert!(cold < 1e-10, "{cold}");
    }
}
