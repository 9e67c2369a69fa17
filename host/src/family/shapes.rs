//! Shape suites: the problems a family is measured at besides its bench sizes, as committed
//! data (`shapes.txt` in the family's folder, [`Family::SHAPES`](super::Family::SHAPES)).
//!
//! A suite is lines of `label: options`, the options those of `dynsmem run <family>` (the
//! problem's only), so a shape is run by hand exactly as the suite runs it. `#` starts a
//! comment. Lines under `[gpu]` are for GPUs; lines under `[small]` are for CPU backends and
//! CPU Vulkan adapters (CI), small enough to run there in seconds and shaped like the GPU
//! ones (odd sides, rows that are not multiples of 4). Labels are unique within a section.
//! Under `[random]`, a `gpu:` and a `small:` line give templates for shapes drawn at run
//! time (`dynsmem shapes --random N --random-seed S`): an option's value `A..B` is drawn
//! log-uniformly from that range (`A..B/S`: then rounded down to a multiple of `S`), and a
//! value `a|b|c` uniformly from its choices ([`Suite::random`]). `tests/properties.rs` draws
//! its problems from the `small:` lines.

use super::{AnyBackend, DynFamily, Resolved, Sizes};
use crate::backend::Variant;
use crate::error::{Error, Result};
use crate::rng::SplitMix64;
use crate::tune::db::TuningDb;

/// Which of a suite's sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Gpu,
    Small,
}

impl Section {
    pub fn name(self) -> &'static str {
        match self {
            Section::Gpu => "gpu",
            Section::Small => "small",
        }
    }
}

/// One line of a suite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    pub label: String,
    /// The problem's options, as `dynsmem run <family>` takes them.
    pub args: Vec<String>,
    /// Line in the suite's text (1-based), for errors.
    pub line: usize,
}

/// A family's suite, parsed.
#[derive(Debug, Clone, Default)]
pub struct Suite {
    pub gpu: Vec<Shape>,
    pub small: Vec<Shape>,
    /// The `[random]` section's templates, per section: options whose values may be ranges
    /// `A..B`, drawn log-uniformly ([`Suite::random`]).
    pub random: Vec<(Section, Shape)>,
}

impl Suite {
    pub fn section(&self, s: Section) -> &[Shape] {
        match s {
            Section::Gpu => &self.gpu,
            Section::Small => &self.small,
        }
    }

    /// `count` shapes drawn from `section`'s `[random]` template with `seed`: every range
    /// `A..B` (inclusive) drawn log-uniformly, each independently (so skinny, deep and
    /// odd-sided shapes all come up), every choice `a|b|c` uniformly, labelled
    /// `random-SEED-I`. Empty where the suite has no template for the section.
    pub fn random(&self, section: Section, count: usize, seed: u64) -> Vec<Shape> {
        let Some((_, template)) = self.random.iter().find(|(s, _)| *s == section) else { return Vec::new() };
        let mut rng = SplitMix64::new(seed);
        (0..count)
            .map(|i| Shape {
                label: format!("random-{seed}-{i:02}"),
                args: template
                    .args
                    .iter()
                    .map(|a| match (parse_stepped_range(a), parse_choice(a)) {
                        (Some((lo, hi, step)), _) => (log_uniform(&mut rng, lo, hi) / step * step).to_string(),
                        (None, Some(choices)) => choices[rng.below(choices.len() as u64) as usize].to_string(),
                        (None, None) => a.clone(),
                    })
                    .collect(),
                line: template.line,
            })
            .collect()
    }
}

/// `A..B` with `0 < A <= B`, as `(A, B)`.
pub fn parse_range(arg: &str) -> Option<(u64, u64)> {
    let (lo, hi) = arg.split_once("..")?;
    let (lo, hi) = (lo.parse::<u64>().ok()?, hi.parse::<u64>().ok()?);
    (lo > 0 && lo <= hi).then_some((lo, hi))
}

/// `A..B/S` (a range whose draws are multiples of `S`; `S` divides `A`) or `A..B` (`S` 1), as
/// `(A, B, S)`.
pub fn parse_stepped_range(arg: &str) -> Option<(u64, u64, u64)> {
    match arg.split_once('/') {
        Some((range, step)) => {
            let ((lo, hi), step) = (parse_range(range)?, step.parse::<u64>().ok()?);
            (step > 0 && lo % step == 0).then_some((lo, hi, step))
        }
        None => parse_range(arg).map(|(lo, hi)| (lo, hi, 1)),
    }
}

/// `a|b|c` (two or more non-empty choices), as its choices.
pub fn parse_choice(arg: &str) -> Option<Vec<&str>> {
    let choices: Vec<&str> = arg.split('|').collect();
    (choices.len() > 1 && choices.iter().all(|c| !c.is_empty())).then_some(choices)
}

/// An integer in `[lo, hi]` whose logarithm is uniform over `[ln lo, ln (hi + 1))`.
fn log_uniform(rng: &mut SplitMix64, lo: u64, hi: u64) -> u64 {
    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let (a, b) = ((lo as f64).ln(), ((hi + 1) as f64).ln());
    ((a + u * (b - a)).exp().floor() as u64).clamp(lo, hi)
}

fn suite_error(family: &str, line: usize, reason: impl Into<String>) -> Error {
    Error::InvalidProblem { kernel: format!("{family} shape suite, line {line}"), reason: reason.into() }
}

/// Where a suite line goes: a section of fixed shapes, or the random templates.
#[derive(Clone, Copy)]
enum Place {
    Fixed(Section),
    Random,
}

/// Parses `text` as `family`'s suite (see the module documentation). Only the layout is
/// checked here; [`resolve`] checks each line's options against the family.
pub fn parse(family: &str, text: &str) -> Result<Suite> {
    let mut suite = Suite::default();
    let mut section = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        match content {
            "[gpu]" => section = Some(Place::Fixed(Section::Gpu)),
            "[small]" => section = Some(Place::Fixed(Section::Small)),
            "[random]" => section = Some(Place::Random),
            _ if content.starts_with('[') => {
                return Err(suite_error(
                    family,
                    line,
                    format!("unknown section {content} (sections: [gpu], [small], [random])"),
                ));
            }
            _ => {
                let Some(s) = section else {
                    return Err(suite_error(family, line, "a shape before any [gpu] or [small] section"));
                };
                let Some((label, args)) = content.split_once(':') else {
                    return Err(suite_error(family, line, format!("`{content}` is not `label: options`")));
                };
                let label = label.trim();
                if label.is_empty() || label.contains(char::is_whitespace) {
                    return Err(suite_error(family, line, format!("label `{label}` must be one word")));
                }
                let args: Vec<String> = args.split_whitespace().map(str::to_string).collect();
                let shape = Shape { label: label.to_string(), args, line };
                let s = match s {
                    Place::Fixed(s) => s,
                    Place::Random => {
                        let s = match label {
                            "gpu" => Section::Gpu,
                            "small" => Section::Small,
                            _ => {
                                return Err(suite_error(family, line, "a [random] line is `gpu: ...` or `small: ...`"));
                            }
                        };
                        if suite.random.iter().any(|(r, _)| *r == s) {
                            return Err(suite_error(family, line, format!("[random] has two `{label}` lines")));
                        }
                        if !shape.args.iter().any(|a| parse_stepped_range(a).is_some()) {
                            return Err(suite_error(family, line, "a [random] line needs a range `A..B` (0 < A <= B)"));
                        }
                        suite.random.push((s, shape));
                        continue;
                    }
                };
                let list = match s {
                    Section::Gpu => &mut suite.gpu,
                    Section::Small => &mut suite.small,
                };
                if list.iter().any(|sh| sh.label == label) {
                    return Err(suite_error(family, line, format!("label `{label}` repeats in [{}]", s.name())));
                }
                list.push(shape);
            }
        }
    }
    Ok(suite)
}

/// The section a backend runs by default: `small` on the CPU backend and CPU adapters.
pub fn section_for(is_cpu: bool) -> Section {
    if is_cpu { Section::Small } else { Section::Gpu }
}

/// `shape`'s problem and config on `backend` in `variant`, as `dynsmem run` resolves them
/// (the tuning database's config where it has one for the problem, else the family's
/// default; fitted to the variant). Options the problem does not take, or values it
/// refuses, are an error naming the suite line.
pub fn resolve(
    family: &dyn DynFamily,
    shape: &Shape,
    backend: AnyBackend<'_>,
    variant: Variant,
    sizes: &Sizes,
    db: Option<&TuningDb>,
) -> Result<Resolved> {
    let cmd = family.run_args(clap::Command::new(family.name()).no_binary_name(true));
    // The options' ids (clap also lists the argument groups the derives make).
    let options: Vec<String> = cmd.get_arguments().map(|a| a.get_id().to_string()).collect();
    let m = cmd
        .try_get_matches_from(&shape.args)
        .map_err(|e| suite_error(family.name(), shape.line, e.render().to_string().trim().to_string()))?;
    // Config options in a suite line would make the suite measure a config, not a problem.
    let (_, set) = family.problem(&m, sizes)?;
    let given: Vec<&str> = m
        .ids()
        .map(|id| id.as_str())
        .filter(|id| options.iter().any(|o| o == id))
        .filter(|id| m.value_source(id).is_some_and(|s| s == clap::parser::ValueSource::CommandLine))
        .collect();
    if let Some(extra) = given.iter().find(|id| !set.iter().any(|s| s == *id)) {
        return Err(suite_error(
            family.name(),
            shape.line,
            format!("`{extra}` is a config option; a suite line names a problem"),
        ));
    }
    family.resolve(&m, backend, variant, sizes, db)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Erase;
    use crate::backend::cpu::CpuBackend;
    use crate::families::FAMILIES;

    #[test]
    fn every_family_has_a_suite_whose_every_line_resolves() {
        let cpu = CpuBackend::new();
        for family in FAMILIES {
            let suite = parse(family.name(), family.shapes()).unwrap();
            assert!(suite.gpu.len() >= 4, "{}: {suite:?}", family.name());
            let mut resolved = Vec::new();
            for shape in suite.gpu.iter().chain(&suite.small) {
                let r = resolve(*family, shape, cpu.erase(), Variant::LaunchSized, &Sizes::cpu_backend(), None)
                    .unwrap_or_else(|e| panic!("{} {}: {e}", family.name(), shape.label));
                assert!(r.problem.is_object(), "{}", shape.label);
                resolved.push(r);
            }
            // Small shapes run on the CPU backend in CI; only a family that has no CPU form
            // (its kernels need tensor cores) may go without them, and it must say so.
            if suite.small.len() < 2 {
                let r = &resolved[0];
                let refused = family.prepare(cpu.erase(), &r.problem, &r.config, Variant::LaunchSized, 1).err();
                assert!(
                    matches!(refused, Some(crate::Error::Unsupported { .. })),
                    "{}: fewer than 2 [small] shapes, yet it runs on the CPU backend",
                    family.name()
                );
            }
        }
        let sgemm = parse("sgemm", crate::family::find(FAMILIES, "sgemm").unwrap().shapes()).unwrap();
        assert!(sgemm.gpu.len() >= 24, "the SGEMM suite has at least 24 shapes");
    }

    #[test]
    fn malformed_suites_and_config_options_are_refused_with_their_line() {
        let bad = |text: &str| parse("sgemm", text).unwrap_err().to_string();
        assert!(bad("a: --m 4").contains("line 1"), "a shape before a section");
        assert!(bad("[gpu]\n\n[huge]").contains("line 3"));
        assert!(bad("[gpu]\nno colon here").contains("label: options"));
        assert!(bad("[gpu]\na: --m 4\na: --m 5").contains("repeats"));
        let sgemm = crate::family::find(FAMILIES, "sgemm").unwrap();
        let cpu = CpuBackend::new();
        let suite = parse("sgemm", "[gpu]\n# comment\nx: --m 64 --bm 32\ny: --m 64 --nope 3").unwrap();
        let e = resolve(sgemm, &suite.gpu[0], cpu.erase(), Variant::LaunchSized, &Sizes::cpu_backend(), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3") && e.contains("config option"), "{e}");
        let e = resolve(sgemm, &suite.gpu[1], cpu.erase(), Variant::LaunchSized, &Sizes::cpu_backend(), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 4") && e.contains("--nope"), "{e}");
    }

    #[test]
    fn random_templates_draw_log_uniformly_within_their_ranges() {
        let suite = parse("sgemm", "[random]\ngpu: --m 64..8192 --n 7 --k 100..100\nsmall: --m 1..3").unwrap();
        let shapes = suite.random(Section::Gpu, 400, 5);
        assert_eq!(shapes[7].label, "random-5-07");
        let m: Vec<u64> = shapes.iter().map(|s| s.args[1].parse().unwrap()).collect();
        assert!(shapes.iter().all(|s| s.args[2..] == ["--n", "7", "--k", "100"]), "{:?}", shapes[0]);
        assert!(m.iter().all(|v| (64..=8192).contains(v)));
        // Log-uniform: about as many draws in [64, 724) as in [724, 8192] (the geometric
        // midpoint), where a uniform draw would put 93% above it.
        let low = m.iter().filter(|&&v| v < 724).count();
        assert!((150..250).contains(&low), "{low} of 400 below the geometric midpoint");
        assert!(m.iter().any(|v| v % 4 != 0), "odd sides come up");
        assert_eq!(suite.random(Section::Gpu, 3, 5), suite.random(Section::Gpu, 3, 5));
        let stepped = parse("hgemm", "[random]\ngpu: --k 1024..16384/8").unwrap().random(Section::Gpu, 200, 5);
        let k: Vec<u64> = stepped.iter().map(|s| s.args[1].parse().unwrap()).collect();
        assert!(k.iter().all(|v| v % 8 == 0 && (1024..=16384).contains(v)), "{k:?}");
        assert!(k.iter().any(|v| v % 16 != 0), "every multiple of 8 can come up");
        assert_eq!(parse_stepped_range("24..100/8"), Some((24, 100, 8)));
        assert_eq!(parse_stepped_range("20..100/8"), None, "the step divides the low end");
        assert_ne!(suite.random(Section::Gpu, 3, 5)[0].args, suite.random(Section::Gpu, 3, 6)[0].args);
        assert!(suite.random(Section::Small, 50, 1).iter().all(|s| ["1", "2", "3"].contains(&s.args[1].as_str())));
        // Choices: each drawn, nothing else.
        let choose = parse("reduce", "[random]\nsmall: --n 1..9 --op sum|min|max").unwrap();
        let ops: std::collections::BTreeSet<String> =
            choose.random(Section::Small, 60, 2).into_iter().map(|s| s.args[3].clone()).collect();
        assert_eq!(ops.into_iter().collect::<Vec<_>>(), ["max", "min", "sum"]);
        assert_eq!(parse_choice("a||b"), None);
        let bad = |text: &str| parse("sgemm", text).unwrap_err().to_string();
        assert!(bad("[random]\nhuge: --m 1..4").contains("`gpu: ...`"));
        assert!(bad("[random]\ngpu: --m 4").contains("range"));
        assert!(bad("[random]\ngpu: --m 9..4").contains("range"));
        assert!(bad("[random]\ngpu: --m 1..4\ngpu: --m 1..5").contains("two"));
        assert!(parse("sgemm", "[gpu]\na: --m 4").unwrap().random(Section::Gpu, 3, 1).is_empty());
    }
}
