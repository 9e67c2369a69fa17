//! Property tests over the registry: every family at random problems, each with a random
//! valid config, run and checked against the family's CPU reference. On the CPU backend
//! (the Rust kernels, with their memory accesses checked) and on WGSL (lavapipe in CI: the
//! static twins). No family is named here: a family added to the registry is in it.
//!
//! - The problem: drawn from the `small:` template of the family's `shapes.txt`
//!   (`[random]`: ranges log-uniformly, `a|b` choices uniformly), so odd sizes, tails and
//!   edge tiles come up.
//! - The config: a uniformly drawn point of the family's search space on the target (every
//!   point the tuner would try), so paths the default configs never take run too.
//! - A failure is shrunk before it is reported: each drawn dimension is moved toward its
//!   range's low end while the same config still fails, and the smallest failing case is
//!   printed with the `dynsmem run` options that replay it.
//!
//! - On the CPU backend the configs form a covering design: each case takes the config with
//!   the most parameter values not run yet, and cases are added until every value that a
//!   valid config of the drawn problems takes has run.
//!
//! `DYNSMEM_PROPERTY_CASES` (cases per family, backend and variant; default
//! [`DEFAULT_CPU_CASES`] on the CPU backend, [`DEFAULT_WGSL_CASES`] on WGSL) and
//! `DYNSMEM_PROPERTY_SEED` set the run; `ci/properties.sh` runs a long one.

mod common;

use common::wgsl_or_skip;
use std::collections::BTreeSet;

use dynsmem::host::Error;
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::backend::{Backend, Variant};
use dynsmem::host::contract::FamilyBackend;
use dynsmem::host::families::FAMILIES;
use dynsmem::host::family::shapes::{self, Section};
use dynsmem::host::family::{DynFamily, Sizes};
use dynsmem::host::rng::SplitMix64;
use dynsmem::host::tune::{ErasedTunable, SearchSpace, Target, Tunable};

/// Cases per family and variant in the README's test command on the CPU backend (a case
/// takes milliseconds on its fast schedule), before the cases added to cover every value.
const DEFAULT_CPU_CASES: usize = 24;
/// Cases per family and variant in the README's test command on WGSL (lavapipe compiles a
/// pipeline per config).
const DEFAULT_WGSL_CASES: usize = 3;
/// Most candidate cases a shrink tries.
const SHRINK_STEPS: usize = 60;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

/// What one case came to.
#[derive(Debug)]
enum Outcome {
    Passed,
    /// Not run, and why: the problem or every config refused, or the backend lacks the family.
    Skipped(String),
    Failed(String),
}

/// A drawn case: the problem's options and the config's JSON (`None`: the family has no
/// search space, and its default config for the problem runs).
#[derive(Debug, Clone)]
struct Case {
    args: Vec<String>,
    config: Option<serde_json::Value>,
}

/// Runs `case` of `family` on `backend` in `variant`: prepare (validation, inputs,
/// reference), run, check.
fn run<B: FamilyBackend>(family: &dyn DynFamily, backend: &B, variant: Variant, case: &Case, seed: u64) -> Outcome {
    let cmd = family.run_args(clap::Command::new(family.name()).no_binary_name(true));
    let m = match cmd.try_get_matches_from(&case.args) {
        Ok(m) => m,
        Err(e) => return Outcome::Failed(format!("the template's options do not parse: {e}")),
    };
    let sizes = Sizes::cpu_backend();
    let (problem, config) = match (&case.config, family.problem(&m, &sizes)) {
        (_, Err(e)) => return Outcome::Skipped(format!("problem refused: {e}")),
        (Some(c), Ok((p, _))) => (p, c.clone()),
        (None, Ok((p, _))) => match family.resolve(&m, backend.erase(), variant, &sizes, None) {
            Ok(r) => (p, r.config),
            Err(e) => return Outcome::Skipped(format!("no default config: {e}")),
        },
    };
    let w = match family.prepare(backend.erase(), &problem, &config, variant, seed) {
        Ok(w) => w,
        Err(e @ (Error::Unsupported { .. } | Error::OutOfMemory { .. } | Error::ProblemTooLarge { .. })) => {
            return Outcome::Skipped(e.to_string());
        }
        // A config of the space that prepare refuses is the gates disagreeing.
        Err(e) => return Outcome::Failed(format!("prepare: {e}")),
    };
    match w.run().and_then(|()| w.check()) {
        Ok(_) => Outcome::Passed,
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// The problem the options `args` of `family` name, as JSON.
fn problem_of(family: &dyn DynFamily, args: &[String]) -> Result<serde_json::Value, String> {
    let cmd = family.run_args(clap::Command::new(family.name()).no_binary_name(true));
    let m = cmd.try_get_matches_from(args).map_err(|e| e.to_string())?;
    Ok(family.problem(&m, &Sizes::cpu_backend()).map_err(|e| e.to_string())?.0)
}

/// A value of a parameter: `(parameter name, value)`.
type Value = (String, u32);

/// Which values of which parameters the valid configs drawn from showed (`seen`), and which
/// ran in a case (`covered`).
#[derive(Default)]
struct Cover {
    seen: BTreeSet<Value>,
    covered: BTreeSet<Value>,
}

impl Cover {
    fn missing(&self) -> Vec<&Value> {
        self.seen.difference(&self.covered).collect()
    }
}

/// A valid config of `family`'s space for the problem `args`, on `backend` in `variant`,
/// with the parameter values it takes: `Ok(None)` where the family has no space, `Err`
/// where the problem is refused or no config of the space fits it. Uniform over the space;
/// with a `cover`, uniform over the configs that take the most values not run yet (a greedy
/// covering design: every value of every parameter runs in few cases).
fn draw_config<B: FamilyBackend>(
    family: &dyn DynFamily,
    backend: &B,
    variant: Variant,
    args: &[String],
    rng: &mut SplitMix64,
    cover: Option<&mut Cover>,
) -> Result<Option<(serde_json::Value, Vec<Value>)>, String> {
    let problem = problem_of(family, args)?;
    let Some(tunable) = family.tunable(&problem).map_err(|e| e.to_string())? else { return Ok(None) };
    let tunable = ErasedTunable::new(tunable);
    let space = SearchSpace::build(&tunable, &Target::of(backend, variant), &[]).map_err(|e| e.to_string())?;
    if space.points.is_empty() {
        return Err(format!("no config of the space fits ({} filtered)", space.filtered.len()));
    }
    let pairs = |point: &[u32]| -> Vec<Value> {
        space.params.iter().zip(point).map(|(p, &v)| (p.name.to_string(), v)).collect()
    };
    let candidates: Vec<usize> = match cover {
        None => (0..space.points.len()).collect(),
        Some(cover) => {
            let mut best = (0, Vec::new());
            for (i, point) in space.points.iter().enumerate() {
                let new = pairs(point).into_iter().filter(|p| !cover.covered.contains(p)).count();
                cover.seen.extend(pairs(point));
                match new.cmp(&best.0) {
                    std::cmp::Ordering::Greater => best = (new, vec![i]),
                    std::cmp::Ordering::Equal => best.1.push(i),
                    std::cmp::Ordering::Less => {}
                }
            }
            best.1
        }
    };
    let point = &space.points[candidates[rng.below(candidates.len() as u64) as usize]];
    Ok(Some((tunable.config(point), pairs(point))))
}

/// The smallest case the failing `case` shrinks to under `fails`: each option drawn from a
/// range (`ranges[i]` is `Some((low, high))` for argument `i`) is moved to its low end, or
/// halfway there, or one step down, for as long as the case still fails; the config stays.
fn shrink(case: &Case, ranges: &[Option<(u64, u64)>], mut fails: impl FnMut(&Case) -> bool) -> Case {
    let mut best = case.clone();
    let mut steps = 0;
    'outer: loop {
        for (i, range) in ranges.iter().enumerate() {
            let Some((low, _)) = *range else { continue };
            let Ok(v) = best.args[i].parse::<u64>() else { continue };
            let mut tries = vec![low, low + (v - low) / 2, v.saturating_sub(1)];
            tries.dedup();
            for t in tries.into_iter().filter(|&t| t >= low && t < v) {
                if steps == SHRINK_STEPS {
                    break 'outer;
                }
                steps += 1;
                let mut smaller = best.clone();
                smaller.args[i] = t.to_string();
                if fails(&smaller) {
                    best = smaller;
                    continue 'outer;
                }
            }
        }
        break;
    }
    best
}

/// Most cases a family's variant adds to `cases` to cover every value of its parameters.
const MAX_COVERING_CASES: usize = 48;

/// Draws and runs `cases` cases of every family on `backend`, each of its variants; panics
/// with every failure (shrunk). With `covering`, configs are drawn to cover every value of
/// every parameter that a valid config of the drawn problems takes, and cases are added (up to
/// [`MAX_COVERING_CASES`]) until they do; a value left out fails. Returns (ran, skipped, values
/// covered).
fn check_registry<B: FamilyBackend>(backend: &B, cases: usize, seed: u64, covering: bool) -> (usize, usize, usize) {
    let (mut ran, mut skipped, mut failures, mut values) = (0, 0, Vec::new(), 0);
    for (index, family) in FAMILIES.iter().enumerate() {
        let suite = shapes::parse(family.name(), family.shapes()).unwrap();
        let Some((_, template)) = suite.random.iter().find(|(s, _)| *s == Section::Small) else {
            // A family without a small template must be one the CPU backends cannot run.
            let refused = run(*family, backend, backend.variants()[0], &Case { args: Vec::new(), config: None }, seed);
            assert!(matches!(refused, Outcome::Skipped(_)), "{}: no [random] small: template", family.name());
            continue;
        };
        let ranges: Vec<Option<(u64, u64)>> = template.args.iter().map(|a| shapes::parse_range(a)).collect();
        for &variant in backend.variants() {
            let mut rng = SplitMix64::new(seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let shapes = suite.random(Section::Small, cases, rng.next_u64());
            // A variant the family has no form in (attention has no WGSL twin) is not drawn, as
            // the bench and the shape suites do not run it.
            let no_form = |shape: &shapes::Shape| {
                problem_of(*family, &shape.args).is_ok_and(|p| !family.has_variant(&p, variant).unwrap_or(true))
            };
            if shapes.first().is_some_and(no_form) {
                continue;
            }
            let (mut family_ran, mut family_skipped) = (0, Vec::new());
            let mut cover = covering.then(Cover::default);
            let mut shapes = shapes.into_iter();
            let mut extra = 0;
            loop {
                let shape = match shapes.next() {
                    Some(s) => s,
                    // The drawn cases are done: more until every value seen has run.
                    None if cover.as_ref().is_some_and(|c| !c.missing().is_empty()) && extra < MAX_COVERING_CASES => {
                        extra += 1;
                        suite.random(Section::Small, 1, rng.next_u64()).remove(0)
                    }
                    None => break,
                };
                let config = match draw_config(*family, backend, variant, &shape.args, &mut rng, cover.as_mut()) {
                    Ok(c) => c,
                    Err(why) => {
                        family_skipped.push(format!("{}: {why}", shape.args.join(" ")));
                        continue;
                    }
                };
                let (config, taken) = config.map_or((None, Vec::new()), |(c, t)| (Some(c), t));
                let case = Case { args: shape.args.clone(), config };
                let outcome = run(*family, backend, variant, &case, seed);
                if let (Some(c), false) = (cover.as_mut(), matches!(outcome, Outcome::Skipped(_))) {
                    c.covered.extend(taken);
                }
                match outcome {
                    Outcome::Passed => family_ran += 1,
                    Outcome::Skipped(why) => family_skipped.push(format!("{}: {why}", shape.args.join(" "))),
                    Outcome::Failed(first) => {
                        let small = shrink(&case, &ranges, |c| {
                            matches!(run(*family, backend, variant, c, seed), Outcome::Failed(_))
                        });
                        let why = match run(*family, backend, variant, &small, seed) {
                            Outcome::Failed(why) => why,
                            _ => first,
                        };
                        failures.push(format!(
                            "{} {variant} on {}: `dynsmem run {} {}` with config {} (seed {seed}; drawn as {}): {why}",
                            family.name(),
                            backend.info().name,
                            family.name(),
                            small.args.join(" "),
                            small.config.map_or("(default)".into(), |c| c.to_string()),
                            case.args.join(" "),
                        ));
                    }
                }
            }
            // Skips are allowed (a drawn problem no config fits), not a majority of them: a
            // template that draws mostly refused problems tests nothing.
            let drawn = cases + extra;
            assert!(
                family_skipped.len() * 2 <= drawn,
                "{} {variant}: {} of {drawn} cases skipped:\n{}",
                family.name(),
                family_skipped.len(),
                family_skipped.join("\n")
            );
            if let Some(c) = &cover {
                assert!(
                    c.missing().is_empty(),
                    "{} {variant}: {} cases left parameter values of valid configs unrun: {:?}",
                    family.name(),
                    drawn,
                    c.missing()
                );
                values += c.covered.len();
            }
            ran += family_ran;
            skipped += family_skipped.len();
        }
    }
    assert!(failures.is_empty(), "{} failing cases:\n{}", failures.len(), failures.join("\n"));
    (ran, skipped, values)
}

fn settings(default_cases: usize) -> (usize, u64) {
    (env_or("DYNSMEM_PROPERTY_CASES", default_cases), env_or("DYNSMEM_PROPERTY_SEED", 1))
}

#[test]
fn random_configs_at_random_problems_on_the_cpu_backend() {
    let (cases, seed) = settings(DEFAULT_CPU_CASES);
    let cpu = CpuBackend::new();
    let (ran, skipped, values) = check_registry(&cpu, cases, seed, true);
    common::note(&format!(
        "properties on the CPU backend: {ran} cases verified, {skipped} skipped ({cases} per family and more to cover \
         every parameter value: {values} values run; seed {seed})"
    ));
    assert!(ran >= FAMILIES.len() - 1, "{ran} cases ran");
}

#[test]
fn random_configs_at_random_problems_on_wgsl() {
    let Some(wgsl) = wgsl_or_skip("properties::random_configs_at_random_problems_on_wgsl") else { return };
    let (cases, seed) = settings(DEFAULT_WGSL_CASES);
    let (ran, skipped, _) = check_registry(&wgsl, cases, seed, false);
    common::note(&format!(
        "properties on WGSL ({}): {ran} cases verified, {skipped} skipped ({cases} per family and variant, seed {seed})",
        wgsl.info().name
    ));
    assert!(ran >= FAMILIES.len() - 1, "{ran} cases ran");
}

#[test]
fn a_failure_shrinks_to_the_smallest_failing_dimensions() {
    // A "kernel" that fails from n >= 37 on when m is odd: the shrink finds n = 37 and the
    // smallest odd m, and leaves the choice argument alone.
    let case = Case { args: ["--n", "5000", "--m", "91", "--op", "max"].map(String::from).to_vec(), config: None };
    let ranges = [None, Some((1, 70000)), None, Some((3, 200)), None, None];
    let fails = |c: &Case| {
        let (n, m): (u64, u64) = (c.args[1].parse().unwrap(), c.args[3].parse().unwrap());
        n >= 37 && m % 2 == 1
    };
    let small = shrink(&case, &ranges, fails);
    assert_eq!(small.args, ["--n", "37", "--m", "3", "--op", "max"]);
}
