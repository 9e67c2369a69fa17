//! Shape suites: the problems a family is measured at besides its bench sizes, as committed
//! data (`shapes.txt` in the family's folder, [`Family::SHAPES`](super::Family::SHAPES)).
//!
//! A suite is lines of `label: options`, the options those of `dynsmem run <family>` (the
//! problem's only), so a shape is run by hand exactly as the suite runs it. `#` starts a
//! comment. Lines under `[gpu]` are for GPUs; lines under `[small]` are for CPU backends and
//! CPU Vulkan adapters (CI), small enough to run there in seconds and shaped like the GPU
//! ones (odd sides, rows that are not multiples of 4). Labels are unique within a section.

use super::{AnyBackend, DynFamily, Resolved, Sizes};
use crate::backend::Variant;
use crate::error::{Error, Result};
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
}

impl Suite {
    pub fn section(&self, s: Section) -> &[Shape] {
        match s {
            Section::Gpu => &self.gpu,
            Section::Small => &self.small,
        }
    }
}

fn suite_error(family: &str, line: usize, reason: impl Into<String>) -> Error {
    Error::InvalidProblem { kernel: format!("{family} shape suite, line {line}"), reason: reason.into() }
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
            "[gpu]" => section = Some(Section::Gpu),
            "[small]" => section = Some(Section::Small),
            _ if content.starts_with('[') => {
                return Err(suite_error(family, line, format!("unknown section {content} (sections: [gpu], [small])")));
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
                let list = match s {
                    Section::Gpu => &mut suite.gpu,
                    Section::Small => &mut suite.small,
                };
                if list.iter().any(|sh| sh.label == label) {
                    return Err(suite_error(family, line, format!("label `{label}` repeats in [{}]", s.name())));
                }
                let args = args.split_whitespace().map(str::to_string).collect();
                list.push(Shape { label: label.to_string(), args, line });
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
}
