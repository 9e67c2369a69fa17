//! [`KernelFamily`]: a kernel described on the contract ([`Kernel`]) as a registry family, so
//! that `dynsmem run`, `tune`, `bench` and `shapes` take a researcher's own kernel beside (or
//! without) the built-in families: the problem is a set of named sizes (each a `--name`
//! option), the config the kernel's named parameters (each a `--param` option of `run`),
//! and [`KernelFamily::build`] makes the kernel of one problem.
//!
//! ```ignore
//! static MEAN: KernelFamily = KernelFamily {
//!     name: "window_mean",
//!     about: "moving average of a window of floats",
//!     sizes: &[Size::new("n", 1 << 24, 10_007, "elements"), Size::new("window", 33, 33, "window")],
//!     build: |p| window_mean(p["n"], p["window"]),
//!     image: Some(DeviceImage { ptx: images::PTX, amdgpu: images::AMDGPU, cpu: own_kernels::KERNELS }),
//!     ..KernelFamily::EMPTY
//! };
//! dynsmem::cli::main(&[&MEAN])
//! ```
//!
//! Problems and configs are JSON objects of their names (`{"n": 10007, "window": 33}`,
//! `{"block": 128, "per_thread": 2}`): the forms records, caches and the tuning database
//! carry for every family.

use std::collections::BTreeMap;

use serde_json::Value;

mod problem;

pub use problem::{Problem, Size, SizeDefault};

use super::{DynFamily, Resolved, Sizes};
use crate::backend::{AnyBackend, Backend, Variant};
use crate::contract::{FamilyBackend, Footprint, Kernel, Target, ValueKind, Workload};
use crate::error::{Error, Result};
use crate::tune::db::TuningDb;
use crate::tune::db::tuned_json;
use crate::tune::{DynTunable, Param, SearchSpace, Tunable};

/// One problem the bench (or the conformance) runs: the problem's values that differ from
/// their defaults (a JSON object), and the config it asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub problem: Value,
    pub config: CaseConfig,
}

/// The config a [`Case`] runs.
#[derive(Debug, Clone, PartialEq)]
pub enum CaseConfig {
    /// The family's default: the tuning database's where it has one, else the heuristic.
    Default,
    /// A config of its own (one that picks a kernel on purpose), every parameter named.
    Given(Value),
    /// The heuristic default on the backend with these parameters over it (transpose's
    /// unpadded tiles, to show the bank conflicts): never the database's.
    OverDefault(Value),
}

impl Case {
    /// The problem at the default config.
    pub fn default_config(problem: Value) -> Case {
        Case { problem, config: CaseConfig::Default }
    }
    /// The problem at a config of its own.
    pub fn with(problem: Value, config: Value) -> Case {
        Case { problem, config: CaseConfig::Given(config) }
    }
    /// The problem at the heuristic default with `params` over it.
    pub fn over_default(problem: Value, params: Value) -> Case {
        Case { problem, config: CaseConfig::OverDefault(params) }
    }
}

/// A family's typed launch over an erased backend, as [`Kernel::workload_by`] takes it:
/// `.workload_by(move |b, p, v, seed| erased_workload!(b, b => prepare(b, problem, config(p), v, seed)))`.
#[macro_export]
macro_rules! erased_workload {
    ($any:expr, $b:ident => $launch:expr) => {
        $crate::with_backend!($any, $b => Ok(Box::new($launch?) as Box<dyn $crate::contract::Workload + '_>))
    };
}

/// The device images a family's kernels come from, where they are not the built-in ones:
/// the module `dynsmem-build` writes for a researcher's kernel crate (`PTX`, `AMDGPU`) and
/// the crate's `kernels!` table (which the CPU backend runs). The CLI loads every family's
/// image beside the built-in one.
#[derive(Debug, Clone, Copy)]
pub struct DeviceImage {
    pub ptx: &'static str,
    pub amdgpu: &'static [(&'static str, &'static [u8])],
    pub cpu: &'static [dynsmem_kernels::KernelEntry],
}

/// A kernel of one's own as a family of the registry: see the module documentation. The
/// built-in families are declared on it too.
#[derive(Clone, Copy)]
pub struct KernelFamily {
    /// `dynsmem run <name>`; the family name of records, caches and the tuning database.
    pub name: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
    /// The problem's sizes and options.
    pub sizes: &'static [Size],
    /// The kernel of one problem (inputs, outputs, parameters, geometry, check): a
    /// [`Kernel`] as the contract describes it. Called once per `run` and per tuned
    /// problem; its check (the CPU run or an f64 reference) is computed once per call.
    pub build: fn(&Problem) -> Result<Kernel>,
    /// The problems `bench` runs beyond the default one (sizes left out take their
    /// default).
    pub bench: &'static [&'static [(&'static str, u64)]],
    /// The bench's cases as a function of the device's default sizes, each at its own
    /// config or the default; where given, it replaces the default problem and `bench`.
    pub cases: Option<fn(&Sizes) -> Vec<Case>>,
    /// Cases the conformance runs besides the bench's, on every backend, small enough for
    /// the CPU backend (a grid past its largest, an awkward shape).
    pub edge: fn() -> Vec<Case>,
    /// Bytes a device-to-device copy moves to anchor a problem's bandwidth. `None`: every
    /// buffer of the kernel once (its inputs read, its outputs written).
    pub anchor_bytes: Option<fn(&Problem) -> u64>,
    /// A compute-bound kernel: no copy anchor (its workloads may carry a vendor's,
    /// [`Workload::vendor_anchor`]); `anchor_bytes` is not used.
    pub compute_bound: bool,
    /// Where the kernels come from; `None`: the built-in image.
    pub image: Option<DeviceImage>,
    /// The shape suite of `dynsmem shapes` (the format of a built-in family's `shapes.txt`:
    /// `[gpu]`, `[small]` and `[random]` sections of `label: --size value ..` lines).
    pub shapes: &'static str,
}

impl KernelFamily {
    /// The fields a description leaves to their defaults (`..KernelFamily::EMPTY`): no
    /// sizes, no further bench problems, no edge cases, the buffers' bytes as the anchor,
    /// the built-in image. Its `build` refuses.
    pub const EMPTY: KernelFamily = KernelFamily {
        name: "",
        about: "",
        sizes: &[],
        build: |_| Err(Error::InvalidConfig { kernel: "KernelFamily::EMPTY".into(), reason: "no build given".into() }),
        bench: &[],
        cases: None,
        edge: Vec::new,
        anchor_bytes: None,
        compute_bound: false,
        image: None,
        shapes: "",
    };

    /// The problem with every size at its default for `sizes` and `given` over them.
    fn problem_of(&self, sizes: &Sizes, given: &[(&str, Value)]) -> Result<Problem> {
        let mut p = Problem::default();
        for s in self.sizes {
            p.set(s.name, s.default_value(sizes));
        }
        for (name, v) in given {
            let size = self.size(name)?;
            size.accepts(v).map_err(|e| self.invalid_problem(e))?;
            p.set(name, v.clone());
        }
        Ok(p)
    }

    fn size(&self, name: &str) -> Result<&Size> {
        self.sizes
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| self.invalid_problem(format!("no size `{name}` (the sizes are {:?})", self.size_names())))
    }

    fn size_names(&self) -> Vec<&'static str> {
        self.sizes.iter().map(|s| s.name).collect()
    }

    fn invalid_problem(&self, reason: String) -> Error {
        Error::InvalidProblem { kernel: self.name.into(), reason }
    }

    fn parse_problem(&self, v: &Value) -> Result<Problem> {
        let map = v.as_object().ok_or_else(|| {
            self.invalid_problem(format!("problem {v}: not an object of the sizes {:?}", self.size_names()))
        })?;
        let mut p = Problem::default();
        for s in self.sizes {
            if let Some(value) = map.get(s.name) {
                s.accepts(value).map_err(|e| self.invalid_problem(format!("problem {v}: {e}")))?;
                p.set(s.name, value.clone());
            }
        }
        let missing: Vec<&str> = self.size_names().into_iter().filter(|n| !p.has(n)).collect();
        if !missing.is_empty() {
            return Err(self.invalid_problem(format!("problem {v} lacks {missing:?}")));
        }
        Ok(p)
    }

    /// The problem of a case: its values over the defaults of `sizes`.
    fn case_problem(&self, sizes: &Sizes, case: &Case) -> Result<Problem> {
        let given: Vec<(&str, Value)> = match case.problem.as_object() {
            Some(m) => m.iter().map(|(k, v)| (k.as_str(), v.clone())).collect(),
            None => return Err(self.invalid_problem(format!("case problem {}: not an object", case.problem))),
        };
        self.problem_of(sizes, &given)
    }

    /// The kernel of `problem`, its contract checked (entry, arguments, parameters).
    fn kernel(&self, problem: &Problem) -> Result<Kernel> {
        let k = (self.build)(problem)?;
        k.validate()?;
        Ok(k)
    }

    /// The kernel's point for `config` (`{"block": 128, ..}`): every parameter given, or
    /// left out where it has a value for entries recorded before it existed (its `absent`
    /// on `target`).
    fn point_of(&self, kernel: &Kernel, config: &Value, target: &Target) -> Result<Vec<u32>> {
        let invalid = |reason: String| Error::InvalidConfig { kernel: self.name.into(), reason };
        if config.is_null() {
            return Err(invalid("no config was resolved for this problem (the case's note says why)".into()));
        }
        let map = config.as_object().ok_or_else(|| invalid(format!("config {config}: not an object of parameters")))?;
        let params = kernel.params_on(target);
        let names: Vec<&str> = params.iter().map(|p| p.name).collect();
        if let Some(extra) = map.keys().find(|k| !names.contains(&k.as_str())) {
            return Err(invalid(format!("config {config}: no parameter `{extra}` (the kernel has {names:?})")));
        }
        params
            .iter()
            .enumerate()
            .map(|(i, p)| match map.get(p.name) {
                Some(v) => kernel.kind_of(i).from_json(v).ok_or_else(|| {
                    invalid(format!("config {config}: `{}` = {v} is not {:?}", p.name, kernel.kind_of(i)))
                }),
                None => p.absent.ok_or_else(|| invalid(format!("config {config} gives no `{}`", p.name))),
            })
            .collect()
    }

    /// The point `b` runs when none is given and the line saying where it came from: the
    /// tuning database's (or tuning on first use, where `autotune`), else the kernel's
    /// heuristic default ([`Kernel::default_by`], [`Kernel::default_config`]) where it passes
    /// the backend's limits, else the first point of the search space that does.
    fn default_point<B: crate::tune::TuneBackend>(
        &self,
        b: &B,
        variant: Variant,
        tunable: &Named,
        db: Option<&TuningDb>,
        autotune: bool,
    ) -> Result<(Vec<u32>, String)> {
        let target = Target::of(b, variant);
        let kernel = &tunable.kernel;
        let (heuristic, origin) = if kernel.has_default_by() {
            (kernel.default_on(b.erase()), None)
        } else {
            let space = SearchSpace::build(tunable, &target, &[])?;
            let given = kernel.default_point().filter(|p| space.points.iter().any(|q| q == p));
            let origin =
                if given.is_some() { "the kernel's default config" } else { "the first config of the space that fits" };
            match given.or_else(|| space.points.first().cloned()) {
                Some(p) => (Some(p), Some(origin)),
                None => {
                    let reasons: Vec<String> = space.filtered.iter().take(3).map(|f| f.reason.clone()).collect();
                    return Err(Error::InvalidConfig {
                        kernel: self.name.into(),
                        reason: format!("no config of the space runs on {}: {}", b.info().name, reasons.join("; ")),
                    });
                }
            }
        };
        let heuristic_json = heuristic.as_ref().map(|p| Tunable::config_json(tunable, p));
        let default = || heuristic_json.clone().unwrap_or(Value::Null);
        let (tuned, why) = tuned_json(db, b, variant, self.name, tunable, default, autotune);
        if let Some(c) = tuned {
            match self.point_of(kernel, &c, &target) {
                Ok(p) => return Ok((p, why)),
                Err(e) if heuristic.is_none() => return Err(e),
                Err(e) => {
                    let p = heuristic.expect("checked");
                    return Ok((
                        p,
                        format!("{}; its config does not parse: {e}", crate::tune::db::heuristic(self.name, db, b)),
                    ));
                }
            }
        }
        let point = heuristic.ok_or_else(|| Error::InvalidConfig {
            kernel: self.name.into(),
            reason: format!("the kernel's default gives no value for every parameter on {}", b.info().name),
        })?;
        Ok((point, origin.map_or(why.clone(), |o| format!("{why}; {o}"))))
    }

    fn tunable_of(&self, problem: &Problem) -> Result<Named> {
        Ok(Named { family: self.name, problem: problem.to_json(), kernel: self.kernel(problem)? })
    }

    /// A case of `variant` resolved on `b` over the defaults of `sizes`: its config (given,
    /// or the default), fitted to the variant; `None` where the kernel has no form in it.
    fn resolve_case<B: crate::tune::TuneBackend>(
        &self,
        b: &B,
        variant: Variant,
        sizes: &Sizes,
        case: &Case,
        db: Option<&TuningDb>,
        origin: &str,
    ) -> Option<Resolved> {
        // A case that does not resolve is kept, without a config, its reason in the note:
        // preparing it fails with the family's own error (a broken description must not
        // drop its cases unseen).
        let unresolved = |problem: Value, e: Error| Resolved {
            problem,
            config: Value::Null,
            note: Some(format!("no config resolved: {e}")),
            origin: origin.to_string(),
        };
        let problem = match self.case_problem(sizes, case) {
            Ok(p) => p,
            Err(e) => return Some(unresolved(case.problem.clone(), e)),
        };
        let unresolved = |e: Error| unresolved(problem.to_json(), e);
        let tunable = match self.tunable_of(&problem) {
            Ok(t) => t,
            Err(e) => return Some(unresolved(e)),
        };
        if !tunable.kernel.has_form(variant) {
            return None;
        }
        let target = Target::of(b, variant);
        let resolved = match &case.config {
            CaseConfig::Given(c) => self.point_of(&tunable.kernel, c, &target).map(|p| (p, origin.to_string())),
            CaseConfig::Default => self.default_point(b, variant, &tunable, db, true),
            // The default's config with the case's values over it, read as any config is.
            CaseConfig::OverDefault(over) => {
                self.default_point(b, variant, &tunable, None, false).and_then(|(point, _)| {
                    let values = over.as_object().ok_or_else(|| Error::InvalidConfig {
                        kernel: self.name.into(),
                        reason: format!("case config {over}: not an object of parameters"),
                    })?;
                    let mut config = Tunable::config_json(&tunable, &point);
                    config.as_object_mut().expect("a config is an object of its parameters").extend(values.clone());
                    Ok((self.point_of(&tunable.kernel, &config, &target)?, origin.to_string()))
                })
            }
        };
        let (point, origin) = match resolved {
            Ok(r) => r,
            Err(e) => return Some(unresolved(e)),
        };
        let (point, note) = tunable.kernel.fit(point, variant, &b.info().limits);
        let config = Tunable::config_json(&tunable, &point);
        Some(Resolved { problem: tunable.problem.clone(), config, note, origin })
    }
}

/// A family's kernel for one problem, as the tuner and the tuning database see it: the
/// family's name and the problem's sizes (not the kernel's entry and buffers).
pub struct Named {
    family: &'static str,
    problem: Value,
    kernel: Kernel,
}

impl Tunable for Named {
    type Problem = Value;
    type Config = BTreeMap<&'static str, u32>;

    fn family(&self) -> &'static str {
        self.family
    }
    fn problem(&self) -> &Value {
        &self.problem
    }
    fn params(&self, target: &Target) -> Vec<Param> {
        Tunable::params(&self.kernel, target)
    }
    fn check(&self, point: &[u32], target: &Target) -> std::result::Result<Footprint, String> {
        Tunable::check(&self.kernel, point, target)
    }
    fn config(&self, point: &[u32]) -> Self::Config {
        Tunable::config(&self.kernel, point)
    }
    fn config_json(&self, point: &[u32]) -> Value {
        self.kernel.config_value(point)
    }
    /// A kernel with its own workload is checked against its family's reference of the
    /// seed's inputs; the others as [`Kernel::check_identity`] says.
    fn check_id(&self, seed: u64) -> Result<String> {
        if self.kernel.has_own_workload() {
            return Ok(format!("the {} CPU reference, inputs seed {seed}", self.family));
        }
        Tunable::check_id(&self.kernel, seed)
    }
    fn prepare<'b, B: FamilyBackend>(
        &self,
        backend: &'b B,
        variant: Variant,
        point: &[u32],
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        Tunable::prepare(&self.kernel, backend, variant, point, seed)
    }
    fn candidates(&self, space: &SearchSpace, limit: usize) -> Option<Vec<usize>> {
        Tunable::candidates(&self.kernel, space, limit)
    }
}

impl DynFamily for KernelFamily {
    fn name(&self) -> &'static str {
        self.name
    }
    fn about(&self) -> &'static str {
        self.about
    }
    fn wgsl_template(&self) -> &'static str {
        self.problem_of(&Sizes::cpu_backend(), &[])
            .and_then(|p| self.kernel(&p))
            .ok()
            .and_then(|k| k.wgsl_source())
            .unwrap_or("")
    }
    fn shapes(&self) -> &'static str {
        self.shapes
    }
    fn image(&self) -> Option<DeviceImage> {
        self.image
    }
    fn run_args(&self, cmd: clap::Command) -> clap::Command {
        let cmd = self.problem_args(cmd);
        // The parameters of the kernel at the CPU sizes: a kernel's parameters do not depend
        // on its problem's sizes.
        let params = self.problem_of(&Sizes::cpu_backend(), &[]).and_then(|p| self.kernel(&p));
        let Ok(kernel) = params else { return cmd };
        let params: Vec<(&'static str, Vec<u32>)> = kernel.param_space().map(|(n, v)| (n, v.to_vec())).collect();
        params.into_iter().enumerate().fold(cmd, |cmd, (i, (name, values))| {
            let arg = clap::Arg::new(name).long(kebab(name));
            let arg = match kernel.kind_of(i) {
                ValueKind::Number => arg.value_parser(clap::value_parser!(u32)),
                // `--staged` alone is `--staged true`.
                ValueKind::Flag => {
                    arg.value_parser(clap::value_parser!(bool)).num_args(0..=1).default_missing_value("true")
                }
                ValueKind::Choice(names) => arg.value_parser(clap::builder::PossibleValuesParser::new(names)),
            };
            let space: Vec<serde_json::Value> = values.iter().map(|&v| kernel.kind_of(i).to_json(v)).collect();
            let arg = arg.help(format!("Parameter `{name}` (the space: {})", Value::Array(space)));
            cmd.arg(match kernel.alias_of(name) {
                Some(alias) => arg.visible_alias(alias),
                None => arg,
            })
        })
    }
    fn tune_args(&self, cmd: clap::Command) -> Option<clap::Command> {
        Some(self.problem_args(cmd))
    }
    fn problem(&self, m: &clap::ArgMatches, sizes: &Sizes) -> Result<(Value, Vec<String>)> {
        let given: Vec<(&str, Value)> = self.sizes.iter().filter_map(|s| s.given(m).map(|v| (s.name, v))).collect();
        let p = self.problem_of(sizes, &given)?;
        let set = self
            .sizes
            .iter()
            .filter(|s| s.is_fixed() || given.iter().any(|(n, _)| *n == s.name))
            .map(|s| s.name.to_string())
            .collect();
        Ok((p.to_json(), set))
    }
    fn resolve(
        &self,
        m: &clap::ArgMatches,
        backend: AnyBackend<'_>,
        variant: Variant,
        sizes: &Sizes,
        db: Option<&TuningDb>,
    ) -> Result<Resolved> {
        let (problem, _) = self.problem(m, sizes)?;
        let tunable = self.tunable_of(&self.parse_problem(&problem)?)?;
        let names: Vec<&'static str> = tunable.kernel.param_space().map(|(n, _)| n).collect();
        let given: Vec<(usize, u32)> = names
            .iter()
            .enumerate()
            .filter_map(|(i, n)| {
                let v = match tunable.kernel.kind_of(i) {
                    ValueKind::Number => m.try_get_one::<u32>(n).ok().flatten().copied(),
                    ValueKind::Flag => m.try_get_one::<bool>(n).ok().flatten().map(|&b| u32::from(b)),
                    ValueKind::Choice(names) => m
                        .try_get_one::<String>(n)
                        .ok()
                        .flatten()
                        .and_then(|s| names.iter().position(|c| c == s))
                        .map(|i| i as u32),
                };
                v.map(|v| (i, v))
            })
            .collect();
        if given.len() == names.len() {
            let point: Vec<u32> = given.iter().map(|(_, v)| *v).collect();
            let config = Tunable::config_json(&tunable, &point);
            return Ok(Resolved { problem, config, note: None, origin: "command line".into() });
        }
        // Tuning on first use only where the default is asked: no parameter given. A given
        // parameter that picks a kernel is set before the fit.
        let picks: Vec<(usize, u32)> =
            given.iter().copied().filter(|(i, _)| tunable.kernel.is_pick(names[*i])).collect();
        let (default, origin) = crate::with_backend!(backend, b => {
            let (mut point, origin) = self.default_point(b, variant, &tunable, db, given.is_empty())?;
            for (i, v) in &picks {
                point[*i] = *v;
            }
            let (fitted, note) = tunable.kernel.fit(point, variant, &b.info().limits);
            Ok::<_, Error>(((fitted, note), origin))
        })?;
        let (fitted, note) = default;
        let mut point = fitted.clone();
        for (i, v) in &given {
            point[*i] = *v;
        }
        // The note explains the fitted default; a config given on the command line is run
        // as given (and refused with the limit where it does not fit).
        let over = point != fitted;
        let note = note.filter(|_| !over);
        let origin =
            if given.is_empty() { origin } else { format!("command line, over the default from the {origin}") };
        Ok(Resolved { problem, config: Tunable::config_json(&tunable, &point), note, origin })
    }
    fn bench_cases(
        &self,
        backend: AnyBackend<'_>,
        variant: Variant,
        sizes: &Sizes,
        db: Option<&TuningDb>,
    ) -> Vec<Resolved> {
        let cases = match self.cases {
            Some(cases) => cases(sizes),
            None => std::iter::once(&[][..])
                .chain(self.bench.iter().copied())
                .map(|given| {
                    let object = given.iter().map(|(n, v)| (n.to_string(), Value::from(*v))).collect();
                    Case::default_config(Value::Object(object))
                })
                .collect(),
        };
        let own = "the bench case's own config (it picks its kernel)";
        cases
            .iter()
            .filter_map(|case| crate::with_backend!(backend, b => self.resolve_case(b, variant, sizes, case, db, own)))
            .collect()
    }
    fn edge_cases(&self, backend: AnyBackend<'_>, variant: Variant) -> Vec<Resolved> {
        (self.edge)()
            .iter()
            .filter_map(|case| {
                let sizes = Sizes::cpu_backend();
                crate::with_backend!(backend, b => self.resolve_case(b, variant, &sizes, case, None, "edge case"))
            })
            .collect()
    }
    fn prepare<'b>(
        &self,
        backend: AnyBackend<'b>,
        problem: &Value,
        config: &Value,
        variant: Variant,
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        let kernel = self.kernel(&self.parse_problem(problem)?)?;
        crate::with_backend!(backend, b => {
            let point = self.point_of(&kernel, config, &Target::of(b, variant))?;
            kernel.prepare_seeded(b, variant, &point, seed)
        })
    }
    fn anchor_bytes(&self, problem: &Value) -> Result<Option<u64>> {
        let p = self.parse_problem(problem)?;
        if self.compute_bound {
            return Ok(None);
        }
        match self.anchor_bytes {
            Some(f) => Ok(Some(f(&p))),
            None => Ok(Some(self.kernel(&p)?.buffer_bytes())),
        }
    }
    fn has_variant(&self, problem: &Value, variant: Variant) -> Result<bool> {
        Ok(self.kernel(&self.parse_problem(problem)?)?.has_form(variant))
    }
    fn tunable(&self, problem: &Value) -> Result<Option<Box<dyn DynTunable>>> {
        Ok(Some(Box::new(self.tunable_of(&self.parse_problem(problem)?)?)))
    }
}

impl KernelFamily {
    /// `--<size>` options of `run` and `tune`.
    fn problem_args(&self, cmd: clap::Command) -> clap::Command {
        self.sizes.iter().fold(cmd, |cmd, s| cmd.arg(s.arg()))
    }
}

/// `per_thread` as an option's long name, `per-thread` (as the built-in families' derived
/// options spell theirs). The command line is built once per process: leaked once.
fn kebab(name: &'static str) -> &'static str {
    if name.contains('_') { Box::leak(name.replace('_', "-").into_boxed_str()) } else { name }
}
