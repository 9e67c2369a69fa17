//! Search strategies, one file each, all with one signature ([`SearchFn`]): given the
//! space, a runner, a budget and a seeded generator, visit configs until the budget is
//! spent or the strategy is done, and return every evaluation in the order made.
//!
//! Every strategy goes through an [`Evaluator`], which owns what they share: each config
//! is evaluated at most once per search (a revisit is answered from memory and costs
//! nothing), the budget counts distinct configs evaluated (answered from the cache or
//! measured: a cached config costs an evaluation, as in Kernel Tuner, so a replay spends
//! its budget the way the sweep would) and seconds of wall time, and the best so far.

pub mod annealing;
pub mod exhaustive;
pub mod hill_climb;
pub mod random;

use std::collections::HashMap;
use std::time::Instant;

use super::runner::{Evaluation, Runner};
use super::space::SearchSpace;
use crate::rng::SplitMix64;

/// When a search stops: after `evaluations` distinct configs and/or `seconds` of wall
/// time, whichever comes first; neither set means the whole space.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    pub evaluations: Option<usize>,
    pub seconds: Option<f64>,
}

impl Budget {
    /// No limit but the space.
    pub fn unlimited() -> Budget {
        Budget::default()
    }

    pub fn evaluations(n: usize) -> Budget {
        Budget { evaluations: Some(n), seconds: None }
    }

    pub fn seconds(s: f64) -> Budget {
        Budget { evaluations: None, seconds: Some(s) }
    }

    /// Most distinct evaluations this budget allows on a space of `len` configs.
    pub fn max_evaluations(&self, len: usize) -> usize {
        self.evaluations.unwrap_or(len).min(len)
    }
}

/// Why a search stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// Every config of the space was evaluated.
    SpaceExhausted,
    /// The evaluation budget was spent.
    Evaluations,
    /// The time budget was spent.
    Seconds,
    /// The strategy ended by itself (e.g. the annealing schedule's iteration cap).
    Finished,
    /// The runner could not go on (its results could not be recorded).
    RunnerFailed(String),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::SpaceExhausted => f.write_str("every config evaluated"),
            Stop::Evaluations => f.write_str("evaluation budget spent"),
            Stop::Seconds => f.write_str("time budget spent"),
            Stop::Finished => f.write_str("strategy finished"),
            Stop::RunnerFailed(e) => write!(f, "stopped: {e}"),
        }
    }
}

/// What a search did.
#[derive(Debug, Clone)]
pub struct SearchResult {
    pub strategy: &'static str,
    /// Every distinct config evaluated, in order.
    pub evaluations: Vec<Evaluation>,
    pub stop: Stop,
    /// Wall-clock seconds the search took.
    pub seconds: f64,
}

impl SearchResult {
    /// The fastest verified config.
    pub fn best(&self) -> Option<&Evaluation> {
        self.ranked().into_iter().next()
    }

    /// The verified configs, fastest first (ties by order of evaluation).
    pub fn ranked(&self) -> Vec<&Evaluation> {
        let mut ok: Vec<&Evaluation> = self.evaluations.iter().filter(|e| e.score.is_some()).collect();
        ok.sort_by(|a, b| a.score.unwrap().total_cmp(&b.score.unwrap()));
        ok
    }

    /// Configs that failed (build, launch, verification).
    pub fn failed(&self) -> impl Iterator<Item = &Evaluation> {
        self.evaluations.iter().filter(|e| e.score.is_none())
    }
}

/// The one signature every strategy has.
pub type SearchFn = fn(&SearchSpace, &mut dyn Runner, Budget, &mut SplitMix64) -> SearchResult;

/// The strategies, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    Exhaustive,
    Random,
    Anneal,
    HillClimb,
}

impl Strategy {
    pub const ALL: [Strategy; 4] = [Strategy::Exhaustive, Strategy::Random, Strategy::Anneal, Strategy::HillClimb];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::Exhaustive => "exhaustive",
            Strategy::Random => "random",
            Strategy::Anneal => "anneal",
            Strategy::HillClimb => "hill-climb",
        }
    }

    pub fn search_fn(self) -> SearchFn {
        match self {
            Strategy::Exhaustive => exhaustive::search,
            Strategy::Random => random::search,
            Strategy::Anneal => annealing::search,
            Strategy::HillClimb => hill_climb::search,
        }
    }

    pub fn search(
        self,
        space: &SearchSpace,
        runner: &mut dyn Runner,
        budget: Budget,
        rng: &mut SplitMix64,
    ) -> SearchResult {
        (self.search_fn())(space, runner, budget, rng)
    }
}

/// The cost a strategy minimises: the median time of a verified config, +inf for one
/// that failed (never preferred over one that ran).
pub fn cost(e: &Evaluation) -> f64 {
    e.score.unwrap_or(f64::INFINITY)
}

/// Evaluates configs for a strategy: once each, within the budget (see the module docs).
pub struct Evaluator<'s, 'r> {
    space: &'s SearchSpace,
    runner: &'r mut dyn Runner,
    budget: Budget,
    max_evaluations: usize,
    started: Instant,
    seen: HashMap<usize, usize>,
    evaluations: Vec<Evaluation>,
    stop: Option<Stop>,
    best: Option<(usize, f64)>,
    /// When the runner last returned: the time from then to the next evaluation is the
    /// strategy's own (choosing the next config).
    last_return: Instant,
}

impl<'s, 'r> Evaluator<'s, 'r> {
    pub fn new(space: &'s SearchSpace, runner: &'r mut dyn Runner, budget: Budget) -> Self {
        Evaluator {
            space,
            runner,
            budget,
            max_evaluations: budget.max_evaluations(space.len()),
            started: Instant::now(),
            seen: HashMap::new(),
            evaluations: Vec::new(),
            stop: None,
            best: None,
            last_return: Instant::now(),
        }
    }

    /// The cost of config `i` ([`cost`]): from memory when this search evaluated it
    /// already, else from the runner while the budget allows. `None` once the search must
    /// stop (budget spent, runner failed): the strategy returns then.
    pub fn cost(&mut self, i: usize) -> Option<f64> {
        if let Some(&k) = self.seen.get(&i) {
            return Some(cost(&self.evaluations[k]));
        }
        if self.stop.is_some() {
            return None;
        }
        if self.evaluations.len() >= self.max_evaluations {
            self.stop =
                Some(if self.evaluations.len() >= self.space.len() { Stop::SpaceExhausted } else { Stop::Evaluations });
            return None;
        }
        if self.budget.seconds.is_some_and(|s| self.started.elapsed().as_secs_f64() >= s) {
            self.stop = Some(Stop::Seconds);
            return None;
        }
        let search_ms = self.last_return.elapsed().as_secs_f64() * 1e3;
        let evaluated = self.runner.evaluate(self.space, i);
        self.last_return = Instant::now();
        match evaluated {
            Ok(mut e) => {
                e.search_ms = search_ms;
                let c = cost(&e);
                if c.is_finite() && self.best.is_none_or(|(_, b)| c < b) {
                    self.best = Some((i, c));
                }
                self.seen.insert(i, self.evaluations.len());
                self.evaluations.push(e);
                if self.evaluations.len() == self.space.len() {
                    self.stop = Some(Stop::SpaceExhausted);
                }
                Some(c)
            }
            Err(e) => {
                self.stop = Some(Stop::RunnerFailed(e.to_string()));
                None
            }
        }
    }

    /// Whether the search can still evaluate a new config.
    pub fn can_continue(&self) -> bool {
        self.stop.is_none()
    }

    pub fn visited(&self, i: usize) -> bool {
        self.seen.contains_key(&i)
    }

    /// Distinct configs evaluated so far.
    pub fn count(&self) -> usize {
        self.evaluations.len()
    }

    /// The evaluation budget of this search on this space.
    pub fn max_evaluations(&self) -> usize {
        self.max_evaluations
    }

    /// The best config so far and its cost.
    pub fn best(&self) -> Option<(usize, f64)> {
        self.best
    }

    /// A config not evaluated yet, uniformly at random; `None` when every one was.
    pub fn random_unvisited(&self, rng: &mut SplitMix64) -> Option<usize> {
        let n = self.space.len();
        let left = n - self.seen.len();
        if left == 0 {
            return None;
        }
        // Rejection sampling while most are unvisited, else a pick among the rest.
        if left * 4 >= n {
            loop {
                let i = rng.below(n as u64) as usize;
                if !self.visited(i) {
                    return Some(i);
                }
            }
        }
        let k = rng.below(left as u64) as usize;
        (0..n).filter(|i| !self.visited(*i)).nth(k)
    }

    /// Ends the search: `fallback` is the reason when the budget did not stop it.
    pub fn finish(self, strategy: &'static str, fallback: Stop) -> SearchResult {
        SearchResult {
            strategy,
            evaluations: self.evaluations,
            stop: self.stop.unwrap_or(fallback),
            seconds: self.started.elapsed().as_secs_f64(),
        }
    }
}

/// `items` in a uniformly random order (Fisher-Yates).
pub(crate) fn shuffle<T>(items: &mut [T], rng: &mut SplitMix64) {
    for i in (1..items.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::backend::BackendKind;
    use crate::backend::Variant;
    use crate::error::Result;
    use crate::tune::{Footprint, Param, Target, Tunable};

    /// A synthetic family: two parameters of 16 values each, with a smooth bowl of a cost
    /// whose minimum is at (11, 5), and every config with x + y == 7 filtered out.
    pub(crate) struct Bowl;

    impl Tunable for Bowl {
        type Problem = u32;
        type Config = serde_json::Value;
        fn family(&self) -> &'static str {
            "bowl"
        }
        fn problem(&self) -> &u32 {
            &0
        }
        fn params(&self, _: &Target) -> Vec<Param> {
            let v: Vec<u32> = (0..16).collect();
            vec![Param::new("x", &v), Param::new("y", &v)]
        }
        fn check(&self, p: &[u32], _: &Target) -> std::result::Result<Footprint, String> {
            if p[0] + p[1] == 7 {
                return Err("x + y == 7".into());
            }
            Ok(Footprint { threads: 1, grid: 1, launch_bytes: p[0] * 4, static_bytes: 0 })
        }
        fn config(&self, p: &[u32]) -> serde_json::Value {
            serde_json::json!({"x": p[0], "y": p[1]})
        }
        fn prepare<'b, B: crate::contract::FamilyBackend>(
            &self,
            _: &'b B,
            _: Variant,
            _: &[u32],
            _: u64,
        ) -> Result<Box<dyn crate::contract::Workload + 'b>> {
            unreachable!("synthetic")
        }
    }

    pub(crate) fn bowl_space() -> SearchSpace {
        let target = Target {
            backend: BackendKind::Cpu,
            variant: Variant::LaunchSized,
            limits: crate::tune::cache::tests::limits(),
            is_cpu: true,
        };
        SearchSpace::build(&Bowl, &target, &[]).unwrap()
    }

    /// Answers the bowl's cost, counting calls; config (3, 3) fails.
    pub(crate) struct BowlRunner {
        pub calls: Vec<usize>,
    }

    impl Runner for BowlRunner {
        fn evaluate(&mut self, space: &SearchSpace, i: usize) -> Result<Evaluation> {
            self.calls.push(i);
            let p = &space.points[i];
            let (x, y) = (p[0] as f64, p[1] as f64);
            let time = 1.0 + 0.05 * ((x - 11.0).powi(2) + (y - 5.0).powi(2));
            let failed = p[0] == 3 && p[1] == 3;
            Ok(Evaluation {
                index: i,
                score: (!failed).then_some(time),
                search_ms: 0.0,
                error: failed.then(|| "fault".to_string()),
                cached: false,
                entry: None,
            })
        }
    }

    #[test]
    fn space_filters_and_neighbours() {
        let s = bowl_space();
        assert_eq!(s.len(), 256 - 8);
        assert_eq!(s.filtered.len(), 8);
        assert!(s.filtered.iter().all(|f| f.point[0] + f.point[1] == 7 && f.reason == "x + y == 7"));
        let i = s.index_of(&[0, 0]).unwrap();
        let mut n: Vec<Vec<u32>> = s.neighbours(i, false).into_iter().map(|j| s.points[j].clone()).collect();
        n.sort();
        assert_eq!(n, vec![vec![0, 1], vec![1, 0]]);
        // (3, 3): (4, 3) and (3, 4) are filtered.
        let i = s.index_of(&[3, 3]).unwrap();
        let mut n: Vec<Vec<u32>> = s.neighbours(i, false).into_iter().map(|j| s.points[j].clone()).collect();
        n.sort();
        assert_eq!(n, vec![vec![2, 3], vec![3, 2]]);
        assert_eq!(s.neighbours(i, true).len(), 15 + 15 - 2);
    }

    #[test]
    fn every_strategy_respects_the_budget_and_never_repeats() {
        let space = bowl_space();
        for strategy in Strategy::ALL {
            for seed in 0..5 {
                let mut runner = BowlRunner { calls: Vec::new() };
                let mut rng = SplitMix64::new(seed);
                let r = strategy.search(&space, &mut runner, Budget::evaluations(40), &mut rng);
                let what = format!("{} seed {seed}", strategy.name());
                assert_eq!(r.evaluations.len(), 40, "{what}: {:?}", r.stop);
                assert_eq!(runner.calls.len(), 40, "{what}: the runner is asked once per config");
                let mut calls = runner.calls.clone();
                calls.sort_unstable();
                calls.dedup();
                assert_eq!(calls.len(), 40, "{what}: a config evaluated twice");
                assert_eq!(r.stop, Stop::Evaluations, "{what}");
            }
        }
    }

    #[test]
    fn unlimited_budgets_cover_the_space_or_end_by_themselves() {
        let space = bowl_space();
        let mut runner = BowlRunner { calls: Vec::new() };
        let r = exhaustive::search(&space, &mut runner, Budget::unlimited(), &mut SplitMix64::new(1));
        assert_eq!(r.evaluations.len(), space.len());
        assert_eq!(r.stop, Stop::SpaceExhausted);
        assert_eq!(r.best().map(|e| space.points[e.index].clone()), Some(vec![11, 5]));
        assert_eq!(r.failed().count(), 1);
        let ordered: Vec<usize> = r.evaluations.iter().map(|e| e.index).collect();
        assert_eq!(ordered, (0..space.len()).collect::<Vec<_>>(), "exhaustive walks the space in order");
        let mut runner = BowlRunner { calls: Vec::new() };
        let r = random::search(&space, &mut runner, Budget::unlimited(), &mut SplitMix64::new(1));
        assert_eq!(r.evaluations.len(), space.len());
        let ordered: Vec<usize> = r.evaluations.iter().map(|e| e.index).collect();
        assert_ne!(ordered, (0..space.len()).collect::<Vec<_>>(), "random is not in order");
    }

    #[test]
    fn neighbourhood_strategies_find_the_bowls_minimum_cheaply() {
        // A smooth bowl: annealing and hill climbing reach its minimum in a fraction of
        // the space, for every seed; so does no strategy that ignores the cost.
        let space = bowl_space();
        for strategy in [Strategy::Anneal, Strategy::HillClimb] {
            for seed in 0..10 {
                let mut runner = BowlRunner { calls: Vec::new() };
                let r = strategy.search(&space, &mut runner, Budget::evaluations(60), &mut SplitMix64::new(seed));
                let best = r.best().map(|e| space.points[e.index].clone());
                assert_eq!(best, Some(vec![11, 5]), "{} seed {seed}", strategy.name());
            }
        }
    }

    #[test]
    fn a_time_budget_stops_the_search() {
        struct Slow;
        impl Runner for Slow {
            fn evaluate(&mut self, _: &SearchSpace, i: usize) -> Result<Evaluation> {
                std::thread::sleep(std::time::Duration::from_millis(20));
                Ok(Evaluation { index: i, score: Some(1.0), error: None, cached: false, entry: None, search_ms: 0.0 })
            }
        }
        let space = bowl_space();
        let r = random::search(&space, &mut Slow, Budget::seconds(0.2), &mut SplitMix64::new(3));
        assert_eq!(r.stop, Stop::Seconds);
        assert!((5..=15).contains(&r.evaluations.len()), "{} evaluations in 0.2 s of 20 ms each", r.evaluations.len());
    }

    #[test]
    fn a_runner_failure_stops_every_strategy() {
        struct Broken(usize);
        impl Runner for Broken {
            fn evaluate(&mut self, _: &SearchSpace, i: usize) -> Result<Evaluation> {
                self.0 += 1;
                if self.0 > 3 {
                    return Err(crate::Error::InvalidConfig { kernel: "cache".into(), reason: "disk full".into() });
                }
                Ok(Evaluation { index: i, score: Some(1.0), error: None, cached: false, entry: None, search_ms: 0.0 })
            }
        }
        let space = bowl_space();
        for strategy in Strategy::ALL {
            let r = strategy.search(&space, &mut Broken(0), Budget::unlimited(), &mut SplitMix64::new(1));
            assert_eq!(r.evaluations.len(), 3, "{}", strategy.name());
            assert!(matches!(r.stop, Stop::RunnerFailed(ref e) if e.contains("disk full")), "{:?}", r.stop);
        }
    }
}
