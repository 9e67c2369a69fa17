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

use super::{DynFamily, Resolved, Sizes, to_json};
use crate::backend::{AnyBackend, Variant};
use crate::contract::{FamilyBackend, Footprint, Kernel, Target, Workload};
use crate::error::{Error, Result};
use crate::tune::db::TuningDb;
use crate::tune::db::tuned_json;
use crate::tune::{DynTunable, Param, SearchSpace, Tunable};

/// One named size of a [`KernelFamily`]'s problem: a `--name` option of `run`, `tune` and
/// `bench`'s cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub name: &'static str,
    /// The default on a GPU.
    pub gpu: u64,
    /// The default on a CPU device (the CPU backend, lavapipe), where every kernel thread
    /// is an OS thread: small enough for a check.
    pub cpu: u64,
    /// One line for `--help`.
    pub help: &'static str,
}

impl Size {
    pub const fn new(name: &'static str, gpu: u64, cpu: u64, help: &'static str) -> Size {
        Size { name, gpu, cpu, help }
    }
}

/// A problem of a [`KernelFamily`]: its sizes by name, `p["n"]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Problem(pub BTreeMap<String, u64>);

impl std::ops::Index<&str> for Problem {
    type Output = u64;
    /// Panics naming the size when the family declares none of that name: a typo in the
    /// family's `build`, found on its first call.
    fn index(&self, name: &str) -> &u64 {
        self.0.get(name).unwrap_or_else(|| panic!("no size `{name}` (the problem has {:?})", self.0.keys()))
    }
}

impl Problem {
    /// `p.u32("n")`: a size the kernel takes as a `u32`, or the refusal naming it and the
    /// limit.
    pub fn u32(&self, name: &str) -> Result<u32> {
        let v = self[name];
        u32::try_from(v).map_err(|_| Error::IndexOverflow {
            kernel: format!("size `{name}`"),
            what: name.into(),
            requested: v,
            limit: u32::MAX as u64,
            index: "u32 (a kernel argument)",
        })
    }
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

/// A kernel of one's own as a family of the registry: see the module documentation.
#[derive(Clone, Copy)]
pub struct KernelFamily {
    /// `dynsmem run <name>`; the family name of records, caches and the tuning database.
    pub name: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
    /// The problem's sizes.
    pub sizes: &'static [Size],
    /// The kernel of one problem (inputs, outputs, parameters, geometry, check): a
    /// [`Kernel`] as the contract describes it. Called once per `run` and per tuned
    /// problem; its check (the CPU run or an f64 reference) is computed once per call.
    pub build: fn(&Problem) -> Result<Kernel>,
    /// The problems `bench` runs beyond the default one (sizes left out take their
    /// default).
    pub bench: &'static [&'static [(&'static str, u64)]],
    /// Bytes a device-to-device copy moves to anchor a problem's bandwidth. `None`: every
    /// buffer of the kernel once (its inputs read, its outputs written).
    pub anchor_bytes: Option<fn(&Problem) -> u64>,
    /// Where the kernels come from; `None`: the built-in image.
    pub image: Option<DeviceImage>,
    /// The shape suite of `dynsmem shapes` (the format of a built-in family's `shapes.txt`:
    /// `[gpu]`, `[small]` and `[random]` sections of `label: --size value ..` lines).
    pub shapes: &'static str,
}

impl KernelFamily {
    /// The fields a description leaves to their defaults (`..KernelFamily::EMPTY`): no
    /// sizes, no further bench problems, the buffers' bytes as the anchor, the built-in image.
    /// Its `build` refuses.
    pub const EMPTY: KernelFamily = KernelFamily {
        name: "",
        about: "",
        sizes: &[],
        build: |_| Err(Error::InvalidConfig { kernel: "KernelFamily::EMPTY".into(), reason: "no build given".into() }),
        bench: &[],
        anchor_bytes: None,
        image: None,
        shapes: "",
    };

    /// The problem with every size at its default for `sizes` and `given` over them.
    fn problem_of(&self, sizes: &Sizes, given: &[(&str, u64)]) -> Result<Problem> {
        let mut p = Problem::default();
        for s in self.sizes {
            p.0.insert(s.name.to_string(), if sizes.is_gpu() { s.gpu } else { s.cpu });
        }
        for (name, v) in given {
            if !p.0.contains_key(*name) {
                return Err(self.invalid_problem(format!("no size `{name}` (the sizes are {:?})", self.size_names())));
            }
            p.0.insert(name.to_string(), *v);
        }
        Ok(p)
    }

    fn size_names(&self) -> Vec<&'static str> {
        self.sizes.iter().map(|s| s.name).collect()
    }

    fn invalid_problem(&self, reason: String) -> Error {
        Error::InvalidProblem { kernel: self.name.into(), reason }
    }

    fn parse_problem(&self, v: &Value) -> Result<Problem> {
        let map: BTreeMap<String, u64> = serde_json::from_value(v.clone())
            .map_err(|e| self.invalid_problem(format!("problem {v}: {e} (sizes {:?})", self.size_names())))?;
        let missing: Vec<&str> = self.size_names().into_iter().filter(|n| !map.contains_key(*n)).collect();
        if !missing.is_empty() {
            return Err(self.invalid_problem(format!("problem {v} lacks {missing:?}")));
        }
        Ok(Problem(map))
    }

    /// The kernel of `problem`, its contract checked (entry, arguments, parameters).
    fn kernel(&self, problem: &Problem) -> Result<Kernel> {
        let k = (self.build)(problem)?;
        k.validate()?;
        Ok(k)
    }

    /// The kernel's point for `config` (`{"block": 128, ..}`), every parameter given.
    fn point_of(&self, kernel: &Kernel, config: &Value) -> Result<Vec<u32>> {
        let invalid = |reason: String| Error::InvalidConfig { kernel: self.name.into(), reason };
        let map: BTreeMap<String, u32> =
            serde_json::from_value(config.clone()).map_err(|e| invalid(format!("config {config}: {e}")))?;
        let names: Vec<&str> = kernel.param_space().map(|(n, _)| n).collect();
        if let Some(extra) = map.keys().find(|k| !names.contains(&k.as_str())) {
            return Err(invalid(format!("config {config}: no parameter `{extra}` (the kernel has {names:?})")));
        }
        names
            .iter()
            .map(|n| map.get(*n).copied().ok_or_else(|| invalid(format!("config {config} gives no `{n}`"))))
            .collect()
    }

    /// The config `b` runs when none is given: the tuning database's (or tuning on first
    /// use), else the kernel's [`Kernel::default_config`] where it passes the backend's limits,
    /// else the first point of the search space that does.
    fn default_config<B: crate::tune::TuneBackend>(
        &self,
        b: &B,
        variant: Variant,
        tunable: &Named,
        db: Option<&TuningDb>,
    ) -> Result<(Value, String)> {
        let target = Target::of(b, variant);
        let space = SearchSpace::build(tunable, &target, &[])?;
        let given = tunable.kernel.default_point().filter(|p| space.points.iter().any(|q| q == p));
        let heuristic = given.clone().or_else(|| space.points.first().cloned());
        let heuristic_json = heuristic.as_ref().map(|p| Tunable::config_json(tunable, p));
        let default = || heuristic_json.clone().unwrap_or(Value::Null);
        let (tuned, why) = tuned_json(db, b, variant, self.name, tunable, default, true);
        if let Some(c) = tuned {
            return Ok((c, why));
        }
        let Some(point) = heuristic else {
            let reasons: Vec<String> = space.filtered.iter().take(3).map(|f| f.reason.clone()).collect();
            return Err(Error::InvalidConfig {
                kernel: self.name.into(),
                reason: format!("no config of the space runs on {}: {}", b.info().name, reasons.join("; ")),
            });
        };
        let origin =
            if given.is_some() { "the kernel's default config" } else { "the first config of the space that fits" };
        Ok((Tunable::config_json(tunable, &point), format!("{why}; {origin}")))
    }

    fn tunable_of(&self, problem: &Problem) -> Result<Named> {
        Ok(Named { family: self.name, problem: problem_json(problem), kernel: self.kernel(problem)? })
    }
}

/// Whether `kernel` has a form in `variant`: the Rust kernel always, a twin where described.
fn has_form(kernel: &Kernel, variant: Variant) -> bool {
    match variant {
        Variant::LaunchSized => true,
        Variant::CudaStatic => kernel.has_cuda(),
        Variant::WgslLiteral | Variant::WgslOverride => kernel.has_wgsl(),
        // A described twin is one WGSL text, with no subgroup form beside it.
        Variant::WgslSubgroup => false,
    }
}

fn problem_json(p: &Problem) -> Value {
    to_json(&p.0)
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
    fn prepare<'b, B: FamilyBackend>(
        &self,
        backend: &'b B,
        variant: Variant,
        point: &[u32],
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        Tunable::prepare(&self.kernel, backend, variant, point, seed)
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
        kernel.param_space().fold(cmd, |cmd, (name, values)| {
            cmd.arg(
                clap::Arg::new(name)
                    .long(kebab(name))
                    .value_parser(clap::value_parser!(u32))
                    .help(format!("Parameter `{name}` (the space: {values:?})")),
            )
        })
    }
    fn tune_args(&self, cmd: clap::Command) -> Option<clap::Command> {
        Some(self.problem_args(cmd))
    }
    fn problem(&self, m: &clap::ArgMatches, sizes: &Sizes) -> Result<(Value, Vec<String>)> {
        let given: Vec<(&str, u64)> = self
            .sizes
            .iter()
            .filter_map(|s| m.try_get_one::<u64>(s.name).ok().flatten().map(|v| (s.name, *v)))
            .collect();
        let p = self.problem_of(sizes, &given)?;
        Ok((problem_json(&p), given.iter().map(|(n, _)| n.to_string()).collect()))
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
        let given: Vec<(&'static str, u32)> = tunable
            .kernel
            .param_space()
            .filter_map(|(n, _)| m.try_get_one::<u32>(n).ok().flatten().map(|v| (n, *v)))
            .collect();
        let (mut config, origin) = if given.len() == tunable.kernel.param_space().count() {
            (Value::Object(Default::default()), "command line".to_string())
        } else {
            crate::with_backend!(backend, b => self.default_config(b, variant, &tunable, db))?
        };
        for (n, v) in &given {
            config[*n] = Value::from(*v);
        }
        let origin = match (given.is_empty(), origin.as_str()) {
            (true, _) | (false, "command line") => origin,
            (false, _) => format!("command line, over the default from the {origin}"),
        };
        Ok(Resolved { problem, config, note: None, origin })
    }
    fn bench_cases(
        &self,
        backend: AnyBackend<'_>,
        variant: Variant,
        sizes: &Sizes,
        db: Option<&TuningDb>,
    ) -> Vec<Resolved> {
        let problems = std::iter::once(&[][..]).chain(self.bench.iter().copied());
        problems
            .filter_map(|given| {
                let p = self.problem_of(sizes, given).ok()?;
                let tunable = self.tunable_of(&p).ok()?;
                if !has_form(&tunable.kernel, variant) {
                    return None;
                }
                let (config, origin) =
                    crate::with_backend!(backend, b => self.default_config(b, variant, &tunable, db)).ok()?;
                Some(Resolved { problem: tunable.problem, config, note: None, origin })
            })
            .collect()
    }
    fn edge_cases(&self, _: AnyBackend<'_>, _: Variant) -> Vec<Resolved> {
        Vec::new()
    }
    fn prepare<'b>(
        &self,
        backend: AnyBackend<'b>,
        problem: &Value,
        config: &Value,
        variant: Variant,
        _seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        let kernel = self.kernel(&self.parse_problem(problem)?)?;
        let point = self.point_of(&kernel, config)?;
        crate::with_backend!(backend, b => Ok(Box::new(kernel.prepare(b, variant, &point)?) as Box<dyn Workload + 'b>))
    }
    fn anchor_bytes(&self, problem: &Value) -> Result<Option<u64>> {
        let p = self.parse_problem(problem)?;
        match self.anchor_bytes {
            Some(f) => Ok(Some(f(&p))),
            None => Ok(Some(self.kernel(&p)?.buffer_bytes())),
        }
    }
    fn has_variant(&self, problem: &Value, variant: Variant) -> Result<bool> {
        Ok(has_form(&self.kernel(&self.parse_problem(problem)?)?, variant))
    }
    fn tunable(&self, problem: &Value) -> Result<Option<Box<dyn DynTunable>>> {
        Ok(Some(Box::new(self.tunable_of(&self.parse_problem(problem)?)?)))
    }
}

impl KernelFamily {
    /// `--<size>` options of `run` and `tune`.
    fn problem_args(&self, cmd: clap::Command) -> clap::Command {
        self.sizes.iter().fold(cmd, |cmd, s| {
            cmd.arg(
                clap::Arg::new(s.name)
                    .long(kebab(s.name))
                    .value_parser(clap::value_parser!(u64))
                    .help(format!("{} (default: {} on a GPU, {} on a CPU device)", s.help, s.gpu, s.cpu)),
            )
        })
    }
}

/// `per_thread` as an option's long name, `per-thread` (as the built-in families' derived
/// options spell theirs). The command line is built once per process: leaked once.
fn kebab(name: &'static str) -> &'static str {
    if name.contains('_') { Box::leak(name.replace('_', "-").into_boxed_str()) } else { name }
}
