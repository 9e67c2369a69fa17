//! Strategies replayed against committed tuning caches (no device): how close each gets
//! to the exhaustive best with at most 30% of the evaluations, seed by seed.
//!
//! The caches are real exhaustive sweeps, recorded as `tests/data/README.md` says
//! (command, machine, commit); they are embedded, so this test runs anywhere, a GPU
//! machine's staged executables included.
//!
//! The criterion ("within 5% of the exhaustive best, at most 30% of the evaluations, every
//! seed") can only be met by random sampling where enough configs are within 5%: with `m`
//! of `N` configs there and `k` draws, uniform sampling without replacement misses them
//! all with probability `C(N-m, k) / C(N, k)`. So each cache's odds `p` are computed from
//! its data; the criterion is asserted on every cache where `p >= 0.95` (there must be
//! one), and everywhere random sampling is held to its odds and annealing to beating them.
//! A strategy that takes the first configs fails the criterion (asserted).

use std::path::Path;

use dynsmem_host::device::sgemm::THREAD_ROWS;
use dynsmem_host::families::histogram::HISTOGRAM;
use dynsmem_host::families::reduce::REDUCE;
use dynsmem_host::families::sgemm::SgemmProblem;
use dynsmem_host::families::sgemm::SgemmTunable;
use dynsmem_host::family::DynFamily;
use dynsmem_host::report::parse_jsonl_as;
use dynsmem_host::rng::SplitMix64;
use dynsmem_host::tune::cache::GroupKey;
use dynsmem_host::tune::{
    Budget, CacheEntry, ErasedTunable, ReplayRunner, SearchSpace, Strategy, Target, Tunable, TuneCache,
};

/// A committed cache: one exhaustive sweep.
struct Recorded {
    name: &'static str,
    cache: TuneCache,
    group: GroupKey,
    space: SearchSpace,
    /// The exhaustive best: the fastest verified config of the sweep.
    best_ms: f64,
}

/// The committed sweeps (see `tests/data/README.md`).
const CACHES: [(&str, &str); 5] = [
    ("tune-reduce-cpu.jsonl", include_str!("data/tune-reduce-cpu.jsonl")),
    ("tune-reduce-lavapipe.jsonl", include_str!("data/tune-reduce-lavapipe.jsonl")),
    ("tune-histogram-lavapipe-4m.jsonl", include_str!("data/tune-histogram-lavapipe-4m.jsonl")),
    ("tune-histogram-lavapipe-16m.jsonl", include_str!("data/tune-histogram-lavapipe-16m.jsonl")),
    ("tune-sgemm-h100-4096.jsonl", include_str!("data/tune-sgemm-h100-4096.jsonl")),
];

/// "Within 5% of the exhaustive best".
const WITHIN: f64 = 0.05;
/// The seeds of the criterion.
const SEEDS: std::ops::RangeInclusive<u64> = 1..=10;
/// The seeds the success rates are measured over.
const MANY_SEEDS: std::ops::RangeInclusive<u64> = 1..=200;

fn space_of<T: Tunable>(t: &T, target: &Target, values: &[(String, Vec<u32>)]) -> SearchSpace {
    SearchSpace::build(t, target, values).expect("the recorded space builds")
}

fn load(name: &'static str, text: &str) -> Recorded {
    let (entries, torn) = parse_jsonl_as::<CacheEntry>(text.as_bytes(), Path::new(name)).expect("the cache parses");
    assert!(torn.is_empty(), "{name}: torn lines");
    let cache = TuneCache::from_entries(Path::new(name), entries);
    let groups = cache.groups();
    assert_eq!(groups.len(), 1, "{name}: one sweep per committed cache");
    let (group, target, _) = groups.into_iter().next().unwrap();
    let values = cache.group_values(&group);
    let problem: serde_json::Value = serde_json::from_str(&group.problem).unwrap();
    let space = match group.family.as_str() {
        "reduce" => {
            let tunable = REDUCE.tunable(&problem).unwrap().expect("reduce has a space");
            space_of(&ErasedTunable::new(tunable), &target, &values)
        }
        "histogram" => {
            let tunable = HISTOGRAM.tunable(&problem).unwrap().expect("histogram has a space");
            space_of(&ErasedTunable::new(tunable), &target, &values)
        }
        "sgemm" => {
            let problem = serde_json::from_value::<SgemmProblem>(problem).unwrap();
            // A sweep recorded before `tm` existed ran 8 rows per thread only.
            let rows: &'static [u32] = if values.iter().any(|(n, _)| n == "tm") { &THREAD_ROWS } else { &[8] };
            space_of(&SgemmTunable::with_thread_rows(problem, rows), &target, &values)
        }
        f => panic!("{name}: no space for {f}"),
    };
    // The sweep was exhaustive: the rebuilt space is exactly what the cache holds.
    let recorded = cache.group_entries(&group);
    assert_eq!(recorded.len(), space.len(), "{name}: every config of the space recorded, no other");
    // Parameters added since the sweep read as their absent values.
    for i in 0..space.len() {
        let found = recorded.contains_key(&space.params_map(i))
            || space.params_map_before(i).is_some_and(|k| recorded.contains_key(&k));
        assert!(found, "{name}: {} not recorded", space.describe(i));
    }
    let best_ms = cache.entries().iter().filter_map(|e| e.time_ms()).fold(f64::INFINITY, f64::min);
    assert!(best_ms.is_finite());
    Recorded { name, cache, group, space, best_ms }
}

fn recorded() -> Vec<Recorded> {
    CACHES.iter().map(|(n, t)| load(n, t)).collect()
}

/// The evaluations 30% of the space allows (rounded down).
fn budget(r: &Recorded) -> usize {
    r.space.len() * 3 / 10
}

/// One replayed search: the distinct configs it evaluated, and its best time over the
/// exhaustive best, minus 1.
fn gap(r: &Recorded, strategy: Strategy, seed: u64) -> (usize, f64) {
    let mut runner = ReplayRunner::new(&r.cache, &r.group);
    let result = strategy.search(&r.space, &mut runner, Budget::evaluations(budget(r)), &mut SplitMix64::new(seed));
    assert_eq!(runner.answered, result.evaluations.len(), "one runner call per distinct config");
    let best = result.best().and_then(|e| e.score).unwrap_or(f64::INFINITY);
    (result.evaluations.len(), best / r.best_ms - 1.0)
}

/// Whether `strategy` meets the criterion on `r` for every seed of [`SEEDS`]; prints the
/// evaluations and gap of each seed.
fn meets_criterion(r: &Recorded, strategy: Strategy) -> bool {
    let gaps: Vec<(usize, f64)> = SEEDS.map(|s| gap(r, strategy, s)).collect();
    let cells: Vec<String> = gaps.iter().map(|(n, g)| format!("{n}:{:.1}%", g * 100.0)).collect();
    eprintln!(
        "{} ({} configs, 30% = {}): {:<10} {}",
        r.name,
        r.space.len(),
        budget(r),
        strategy.name(),
        cells.join(" ")
    );
    gaps.iter().all(|&(n, g)| n * 10 <= r.space.len() * 3 && g <= WITHIN)
}

/// Configs within 5% of the best, and uniform sampling's chance to draw one of them in
/// [`budget`] draws without replacement.
fn sampling_odds(r: &Recorded) -> (usize, f64) {
    let n = r.space.len();
    let m = r.cache.entries().iter().filter_map(|e| e.time_ms()).filter(|&t| t <= (1.0 + WITHIN) * r.best_ms).count();
    let miss: f64 = (0..budget(r)).map(|i| (n - m - i) as f64 / (n - i) as f64).product();
    (m, 1.0 - miss)
}

/// Share of [`MANY_SEEDS`] on which `strategy` gets within 5% in 30% of the evaluations.
fn success_rate(r: &Recorded, strategy: Strategy) -> f64 {
    let ok = MANY_SEEDS.filter(|&s| gap(r, strategy, s).1 <= WITHIN).count();
    ok as f64 / MANY_SEEDS.count() as f64
}

#[test]
fn random_and_annealing_reach_within_5_percent_of_the_best_with_30_percent_of_the_evaluations() {
    let mut asserted = 0;
    for r in recorded() {
        let (m, p) = sampling_odds(&r);
        eprintln!("{}: {m} of {} configs within 5% of the best; uniform sampling's odds {p:.3}", r.name, r.space.len());
        if p >= 0.95 {
            asserted += 1;
            for strategy in [Strategy::Random, Strategy::Anneal] {
                assert!(meets_criterion(&r, strategy), "{}: {} misses the criterion", r.name, strategy.name());
            }
        }
    }
    assert!(asserted >= 1, "no committed cache where random sampling can meet the criterion");
}

#[test]
fn the_criterion_rejects_a_strategy_that_takes_the_first_configs() {
    // Exhaustive search with a 30% budget is "the first 30% of the configs". On these
    // sweeps the fastest configs come late in the enumeration order.
    let all = recorded();
    for name in ["tune-reduce-lavapipe.jsonl", "tune-histogram-lavapipe-4m.jsonl"] {
        let r = all.iter().find(|r| r.name == name).unwrap();
        assert!(!meets_criterion(r, Strategy::Exhaustive), "{name}: the first configs meet the criterion");
    }
}

#[test]
fn random_sampling_lands_within_5_percent_as_often_as_uniform_sampling_does() {
    // A biased sampler (one favouring the enumeration order, or drawing a config twice)
    // strays from the odds; each search must also draw exactly the budget.
    for r in recorded() {
        let (_, p) = sampling_odds(&r);
        let rate = success_rate(&r, Strategy::Random);
        let sigma = (p * (1.0 - p) / MANY_SEEDS.count() as f64).sqrt();
        eprintln!("{}: random within 5% on {rate:.3} of {} seeds; odds {p:.3}", r.name, MANY_SEEDS.count());
        assert!((rate - p).abs() <= 4.0 * sigma + 0.01, "{}: rate {rate:.3}, odds {p:.3}", r.name);
        for seed in SEEDS {
            assert_eq!(gap(&r, Strategy::Random, seed).0, budget(&r));
        }
    }
}

#[test]
fn annealing_beats_uniform_sampling_on_every_cache() {
    for r in recorded() {
        let (_, p) = sampling_odds(&r);
        let rate = success_rate(&r, Strategy::Anneal);
        let climb = success_rate(&r, Strategy::HillClimb);
        eprintln!(
            "{}: within 5% with 30% of the evaluations on {} seeds: anneal {rate:.3}, hill-climb {climb:.3}, uniform sampling's odds {p:.3}",
            r.name,
            MANY_SEEDS.count()
        );
        assert!(rate >= p, "{}: annealing {rate:.3} does worse than uniform sampling {p:.3}", r.name);
    }
}

#[test]
fn on_the_h100_sgemm_sweep_annealing_meets_the_criterion_on_every_seed() {
    // The GPU sweep (241 configs, 8 within 5%): uniform sampling's odds (0.944) are under
    // the general test's 0.95 bar, and random sampling does miss on one of the ten seeds
    // (5.1% on seed 3); annealing, which walks neighbours of good configs, meets it on all.
    let all = recorded();
    let r = all.iter().find(|r| r.name == "tune-sgemm-h100-4096.jsonl").unwrap();
    assert!(meets_criterion(r, Strategy::Anneal), "{}: annealing misses the criterion", r.name);
}
