//! The top-k re-measurement: a sweep measures each config once, at one moment, so its
//! ranking mixes config differences with drift (clocks, temperature, other tenants). Before
//! naming the best, the k best configs are measured again in interleaved rounds (each
//! round times every one of them once, starting one further along each round), and the
//! best is the one with the least median over the rounds. The report says whether the
//! sweep's ranking held.

use super::objective::Objective;
use super::space::SearchSpace;
use super::{Tunable, TuneBackend};
use crate::backend::Variant;
use crate::error::Result;
use crate::measure::{self, TimingOptions};
use serde::Serialize;

/// One re-measured config.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Confirmed {
    /// Position in [`SearchSpace::points`].
    pub index: usize,
    pub params: std::collections::BTreeMap<String, u32>,
    /// Its rank in the sweep (0: the sweep's best) and its score there.
    pub sweep_rank: usize,
    pub sweep_score: f64,
    /// Its score in each round (NaN where a round failed).
    pub rounds: Vec<f64>,
    /// Median of [`Confirmed::rounds`] and its 95% bootstrap interval.
    pub median: f64,
    pub ci95: Option<[f64; 2]>,
    /// Why it could not be re-measured, if it could not.
    pub error: Option<String>,
}

/// What the re-measurement found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Confirmation {
    pub objective: String,
    pub unit: String,
    /// In the sweep's order.
    pub configs: Vec<Confirmed>,
    /// Position in [`Confirmation::configs`] of the config with the least median.
    pub best: usize,
    /// The sweep's best is still the best.
    pub best_held: bool,
    /// The whole order of the k held.
    pub ranking_held: bool,
    /// The best's interval does not overlap the runner-up's: the two differ beyond the
    /// rounds' noise.
    pub separated: bool,
}

impl Confirmation {
    pub fn best(&self) -> &Confirmed {
        &self.configs[self.best]
    }
}

/// Re-measures `ranked` (indices into `space`, the sweep's best first) in `rounds`
/// interleaved rounds; each timing is `timing` with a single warm-up run (the device is
/// warm from the sweep) and, for an energy objective, its energy window.
#[allow(clippy::too_many_arguments)]
pub fn confirm<B: TuneBackend, T: Tunable>(
    backend: &B,
    tunable: &T,
    variant: Variant,
    space: &SearchSpace,
    ranked: &[(usize, f64)],
    timing: TimingOptions,
    seed: u64,
    objective: Objective,
    rounds: usize,
) -> Result<Confirmation> {
    let rounds = rounds.max(1);
    let opts = TimingOptions { warmup: 1, ..timing };
    let mut workloads = Vec::new();
    let mut errors: Vec<Option<String>> = Vec::new();
    for &(i, _) in ranked {
        match tunable.prepare(backend, variant, &space.points[i], seed) {
            Ok(w) => {
                workloads.push(Some(w));
                errors.push(None);
            }
            Err(e) => {
                workloads.push(None);
                errors.push(Some(e.to_string()));
            }
        }
    }
    let k = ranked.len();
    // scores[round][config]
    let mut scores = vec![vec![f64::NAN; k]; rounds];
    for (r, row) in scores.iter_mut().enumerate() {
        for j in 0..k {
            let c = (j + r) % k;
            let Some(w) = &workloads[c] else { continue };
            match crate::backend::time(backend, opts, &mut || w.run()) {
                Ok((t, _)) => {
                    let energy = t.observation.as_ref().and_then(|o| o.energy).map(|e| e.joules_per_run);
                    row[c] = objective.of(t.median_ms, energy).unwrap_or(f64::NAN);
                }
                Err(e) => errors[c] = Some(e.to_string()),
            }
        }
    }
    let configs: Vec<Confirmed> = ranked
        .iter()
        .enumerate()
        .map(|(c, &(index, sweep_score))| {
            let own: Vec<f64> = scores.iter().map(|row| row[c]).collect();
            let ok: Vec<f64> = own.iter().copied().filter(|v| v.is_finite()).collect();
            let mut sorted = ok.clone();
            sorted.sort_by(f64::total_cmp);
            Confirmed {
                index,
                params: space.params_map(index),
                sweep_rank: c,
                sweep_score,
                rounds: own,
                median: measure::median_sorted(&sorted),
                ci95: measure::median_ci95(&ok),
                error: errors[c].clone(),
            }
        })
        .collect();
    Ok(summarise(objective, configs))
}

/// Names the best of re-measured configs (in the sweep's order) and whether the order held.
pub fn summarise(objective: Objective, configs: Vec<Confirmed>) -> Confirmation {
    let key = |c: &Confirmed| if c.median.is_nan() { f64::INFINITY } else { c.median };
    let mut order: Vec<usize> = (0..configs.len()).collect();
    order.sort_by(|&a, &b| key(&configs[a]).total_cmp(&key(&configs[b])));
    let best = order.first().copied().unwrap_or(0);
    let separated = match (order.first(), order.get(1)) {
        (Some(&a), Some(&b)) => match (configs[a].ci95, configs[b].ci95) {
            (Some([_, hi]), Some([lo, _])) => hi < lo,
            _ => false,
        },
        _ => false,
    };
    Confirmation {
        objective: objective.name().into(),
        unit: objective.unit().into(),
        best,
        best_held: best == 0,
        ranking_held: order.iter().enumerate().all(|(i, &c)| i == c),
        separated,
        configs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(rank: usize, rounds: &[f64]) -> Confirmed {
        let mut sorted = rounds.to_vec();
        sorted.sort_by(f64::total_cmp);
        Confirmed {
            index: rank,
            params: Default::default(),
            sweep_rank: rank,
            sweep_score: rank as f64,
            rounds: rounds.to_vec(),
            median: measure::median_sorted(&sorted),
            ci95: measure::median_ci95(rounds),
            error: None,
        }
    }

    #[test]
    fn the_best_is_the_least_median_over_the_rounds() {
        let held = summarise(Objective::Time, vec![c(0, &[1.0, 1.01, 0.99]), c(1, &[2.0, 2.1, 1.9])]);
        assert!(held.best_held && held.ranking_held && held.separated);
        assert_eq!(held.best().index, 0);
        // The sweep's second is faster once re-measured: the ranking did not hold.
        let flipped =
            summarise(Objective::Time, vec![c(0, &[1.0, 1.2, 1.1]), c(1, &[0.9, 0.95, 0.92]), c(2, &[3.0; 3])]);
        assert_eq!((flipped.best, flipped.best_held, flipped.ranking_held), (1, false, false));
        // Overlapping rounds: named, but not separated.
        let close = summarise(Objective::Time, vec![c(0, &[1.0, 1.1, 1.05]), c(1, &[1.02, 1.12, 1.06])]);
        assert!(close.best_held && !close.separated);
        // A config that failed every round ranks last.
        let failed = summarise(Objective::Time, vec![c(0, &[f64::NAN; 2]), c(1, &[2.0, 2.0])]);
        assert_eq!(failed.best, 1);
    }
}
