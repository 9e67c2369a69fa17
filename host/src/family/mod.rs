//! The family abstraction: what `run`, `bench`, `tune`, the conformance suites, the
//! criterion benches and the fuzz targets know of a kernel family.
//!
//! A family is declared on [`kernel::KernelFamily`], the description a researcher's own
//! kernel uses too: its sizes, its cases and the [`crate::contract::Kernel`] of a problem.
//! Ten of the thirteen built-ins are; SGEMM, HGEMM and attention (forward) still implement
//! the typed [`Family`] trait below (with [`Entry`] its erasure and their own `Tunable`s),
//! which goes once they move.
//!
//! A family is a type implementing [`Family`] (a zero-sized marker in its own folder,
//! `families/<name>/`), and one line of [`crate::families::FAMILIES`]. [`Family`] is typed
//! (its problem, config and command-line options are its own structs) and generic over the
//! backend, so it is not object-safe; [`DynFamily`], implemented for every `Family`
//! through [`Entry`], is its erased face: problems and configs as JSON values (the form
//! records and cache keys carry anyway) and the backend as [`AnyBackend`]. The CLI, the
//! bench and the tuner iterate `&[&dyn DynFamily]`; nothing outside a family's folder
//! names the family.
//!
//! Why a trait pair and not an enum of families: a researcher's crate adds families the
//! host crate has never seen (see the guide), and a registry of its own is a slice of
//! `&dyn DynFamily`; why not one object-safe trait: [`crate::backend::Backend`] is generic
//! over element types (`htod::<T>`), so launching code must be generic over the backend.

use std::fmt::Debug;
use std::marker::PhantomData;

use clap::FromArgMatches;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub mod kernel;
mod probe;
pub mod rows;
pub mod shapes;
pub mod space;

pub use probe::{PointVerdict, probe_point};

pub use crate::backend::{AnyBackend, Erase};
use crate::backend::{Backend, BackendKind, Variant};
use crate::contract::{FamilyBackend, Workload};
pub use crate::contract::{Footprint, Target};
use crate::error::{Error, Result};
use crate::tune::db::{TuningDb, heuristic, tuned_json};
use crate::tune::{DynTunable, TuneBackend};

/// Default problem sizes on one backend: GPU sizes move at least 1 GiB (far past an
/// H100's 50 MB L2); CPU sizes (lavapipe, the CPU backend) only show that the path runs
/// and verifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    /// Elements of the 1-D families.
    pub n: u64,
    /// Side of the square 2-D problems (a quarter of it for GEMM).
    pub side: u32,
    /// Rows of the row-wise families at rows of 4096.
    pub rows: u32,
    /// Bodies of the all-pairs (n-body) problems.
    pub bodies: u32,
    /// Side of a square GEMM.
    pub gemm: u32,
}

/// Default 1-D size on a GPU: 2^28 4-byte elements (1 GiB).
pub const GPU_ELEMENTS: u64 = 1 << 28;
/// On a CPU adapter (lavapipe): a check, not a figure.
pub const CPU_ELEMENTS: u64 = 1 << 22;
/// On the CPU backend (one OS thread per kernel thread, a context switch per barrier).
pub const CPU_BACKEND_ELEMENTS: u64 = 1 << 16;

impl Sizes {
    pub fn gpu() -> Sizes {
        Sizes { n: GPU_ELEMENTS, side: 16_384, rows: 65_536, bodies: 65_536, gemm: 4096 }
    }
    pub fn cpu_adapter() -> Sizes {
        Sizes { n: CPU_ELEMENTS, side: 1024, rows: 256, bodies: 2048, gemm: 256 }
    }
    pub fn cpu_backend() -> Sizes {
        Sizes { n: CPU_BACKEND_ELEMENTS, side: 256, rows: 16, bodies: 256, gemm: 96 }
    }
    /// Whether these are a GPU's sizes ([`Sizes::gpu`], with any `n`): a kernel described on
    /// the contract ([`kernel::KernelFamily`]) then takes its sizes' GPU defaults.
    pub fn is_gpu(&self) -> bool {
        Sizes { n: GPU_ELEMENTS, ..*self } == Sizes::gpu()
    }
    /// The sizes for `b` (small ones everywhere when `quick`), with `n` overriding the 1-D
    /// size.
    pub fn for_backend<B: Backend>(b: &B, n: Option<u64>, quick: bool) -> Sizes {
        let mut s = match (b.kind(), b.info().is_cpu || quick) {
            (BackendKind::Cpu, _) => Sizes::cpu_backend(),
            (_, true) => Sizes::cpu_adapter(),
            _ => Sizes::gpu(),
        };
        if let Some(n) = n {
            s.n = n;
        }
        s
    }
}

/// One problem the bench runs, with the config it asks for on a backend.
#[derive(Debug, Clone)]
pub struct BenchCase<F: Family> {
    pub problem: F::Problem,
    pub config: F::Config,
}

/// A kernel family, typed. Implement it on a marker type in the family's folder and add
/// one line to [`crate::families::FAMILIES`]; `run`, `bench`, `tune` and the test suites
/// follow from it.
pub trait Family: 'static {
    /// Name in records, cache keys and the command line (`dynsmem run <NAME>`).
    const NAME: &'static str;
    /// One line for `--help`.
    const ABOUT: &'static str;
    /// The WGSL twin's template text (hashed into the WGSL image of tuning-cache keys).
    const WGSL_TEMPLATE: &'static str;
    /// The family's shape suite (`shapes.txt` in its folder; see [`shapes`]): empty for a
    /// family without one.
    const SHAPES: &'static str = "";

    type Problem: Serialize + DeserializeOwned + Clone + Debug + PartialEq;
    type Config: Serialize + DeserializeOwned + Clone + Debug + PartialEq;
    /// The problem's command-line options, shared by `run` and `tune`.
    type ProblemArgs: clap::Args + clap::FromArgMatches;
    /// The config's command-line options of `run` (each replaces a field of the default).
    type ConfigArgs: clap::Args + clap::FromArgMatches;
    /// The tuner's side: its parameters, constraints and workloads.
    type Tunable: space::ForProblem<Problem = Self::Problem> + 'static;

    /// The problem the options name, sizes left out taken from `sizes`.
    fn problem(args: &Self::ProblemArgs, sizes: &Sizes) -> Self::Problem;
    /// The config the options ask for over `default` (the default config, fitted to the
    /// variant).
    fn config(args: &Self::ConfigArgs, default: &Self::Config) -> Self::Config;

    /// The default config with the options that pick a kernel rather than size it
    /// applied, before it is fitted to the variant (reduce's `--staged`). Default: none.
    fn select(_args: &Self::ConfigArgs, default: Self::Config) -> Self::Config {
        default
    }
    /// The config a backend runs when none is given.
    fn default_config<B: FamilyBackend>(backend: &B, problem: &Self::Problem) -> Self::Config;
    /// Bytes of `config`'s workgroup arrays for `problem` (the launch-sized layout, which the
    /// static forms copy), or `None` where it has no layout. Default: `None`.
    fn static_bytes(_problem: &Self::Problem, _config: &Self::Config) -> Option<u32> {
        None
    }
    /// Smaller configs for the static forms to try, best first, when `config`'s arrays pass
    /// the static limit (see [`Family::fit_config`]). Default: none.
    fn static_fallbacks(_problem: &Self::Problem, _config: &Self::Config) -> Vec<Self::Config> {
        Vec::new()
    }
    /// The config `variant` runs for `config`, and why when it is another (cuda-static's
    /// arrays cannot hold what launch-sized memory can). Default: the first of
    /// [`Family::static_fallbacks`] within the backend's static limit, by
    /// [`crate::contract::fit_static`].
    fn fit_config<B: FamilyBackend>(
        backend: &B,
        variant: Variant,
        problem: &Self::Problem,
        config: Self::Config,
    ) -> (Self::Config, Option<String>) {
        let limit = backend.info().limits.static_shared_max;
        let fallbacks = Self::static_fallbacks(problem, &config);
        crate::contract::fit_static(variant, limit, config, fallbacks, |c| Self::static_bytes(problem, c))
    }

    /// Validates and builds one config on `backend`, inputs from `seed` uploaded and the
    /// reference computed; nothing is launched yet. A refusal is a typed error naming the
    /// kernel, what was asked and the limit.
    fn prepare<'b, B: FamilyBackend>(
        backend: &'b B,
        problem: &Self::Problem,
        config: &Self::Config,
        variant: Variant,
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>>;

    /// Bytes a device-to-device copy moves to anchor this problem (bandwidth-bound
    /// families), or `None` (compute-bound families: their workloads may carry a vendor
    /// anchor, [`Workload::vendor_anchor`]).
    fn anchor_bytes(problem: &Self::Problem) -> Option<u64>;

    /// The problems and configs the bench runs on `backend`.
    fn bench_cases<B: FamilyBackend>(backend: &B, sizes: &Sizes) -> Vec<BenchCase<Self>>
    where
        Self: Sized;
    /// Cases the conformance runs besides the bench's, on every backend, small enough for
    /// the CPU backend: a launch of more tiles than the kernel's grid takes (its
    /// grid-stride loop past `MAX_GRID` workgroups), with the smallest block that takes it
    /// (every kernel thread of the CPU backend is an OS thread). Default: none, for a
    /// family whose grid covers every tile.
    fn edge_cases() -> Vec<BenchCase<Self>>
    where
        Self: Sized,
    {
        Vec::new()
    }
    /// Whether the bench runs `variant` for `problem` (default: every variant; the
    /// wgsl-subgroup variant only where [`Family::SUBGROUP_TWIN`] says, see [`has_form`]).
    fn bench_variant(_problem: &Self::Problem, _variant: Variant) -> bool {
        true
    }
    /// Whether the family's WGSL twin has a subgroup form (the wgsl-subgroup variant):
    /// where the Rust kernel folds or scans with warp shuffles.
    const SUBGROUP_TWIN: bool = false;

    /// The tuner's view of `problem`, or `None` where the family has no search space.
    fn tunable(problem: Self::Problem) -> Option<Self::Tunable> {
        Some(space::ForProblem::for_problem(problem))
    }
}

/// A config request resolved against a backend: the problem, the config to run, and the
/// note saying why it is not the one asked (cuda-static fitted to its static limit).
#[derive(Debug, Clone)]
pub struct Resolved {
    pub problem: Value,
    pub config: Value,
    pub note: Option<String>,
    /// Where the config came from: the command line, the tuning database (which entry),
    /// or the family's heuristic default, and why.
    pub origin: String,
}

/// A [`Family`], erased: what the registry holds.
pub trait DynFamily: Sync {
    fn name(&self) -> &'static str;
    fn about(&self) -> &'static str;
    fn wgsl_template(&self) -> &'static str;
    /// The shape suite's text ([`Family::SHAPES`]).
    fn shapes(&self) -> &'static str;
    /// `dynsmem run <name>`'s options: the problem's, then the config's.
    fn run_args(&self, cmd: clap::Command) -> clap::Command;
    /// `dynsmem tune <name>`'s options (the problem's), where the family has a search space.
    fn tune_args(&self, cmd: clap::Command) -> Option<clap::Command>;
    /// The problem the parsed options name, sizes left out taken from `sizes`, and the
    /// problem fields the options set (given, or by a default of the option rather than of
    /// `sizes`): a replay matches those against the recorded problems. A problem option's
    /// clap id is its problem field's name.
    fn problem(&self, m: &clap::ArgMatches, sizes: &Sizes) -> Result<(Value, Vec<String>)>;
    /// The problem and config `run` asks for on `backend`: defaults filled in (from `db`
    /// where it has an answer for the problem on this device) and fitted.
    fn resolve(
        &self,
        m: &clap::ArgMatches,
        backend: AnyBackend<'_>,
        variant: Variant,
        sizes: &Sizes,
        db: Option<&TuningDb>,
    ) -> Result<Resolved>;
    /// The bench's cases on `backend`, per variant, each config fitted to the variant. A case
    /// that runs the family's default config takes `db`'s where it has an answer for the
    /// case's problem on this device; a case that picks its own config keeps it.
    fn bench_cases(
        &self,
        backend: AnyBackend<'_>,
        variant: Variant,
        sizes: &Sizes,
        db: Option<&TuningDb>,
    ) -> Vec<Resolved>;
    /// The conformance's further cases ([`Family::edge_cases`]) that `variant` runs, each
    /// config fitted to it.
    fn edge_cases(&self, backend: AnyBackend<'_>, variant: Variant) -> Vec<Resolved>;
    fn prepare<'b>(
        &self,
        backend: AnyBackend<'b>,
        problem: &Value,
        config: &Value,
        variant: Variant,
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>>;
    fn anchor_bytes(&self, problem: &Value) -> Result<Option<u64>>;
    /// Whether the family has a form in `variant` for `problem` ([`Family::bench_variant`]):
    /// the bench and the shape suites run only those.
    fn has_variant(&self, problem: &Value, variant: Variant) -> Result<bool>;
    /// The tuner's view of `problem`, or `None` where the family has no search space.
    fn tunable(&self, problem: &Value) -> Result<Option<Box<dyn DynTunable>>>;
    /// The device image of the family's kernels where it is not the built-in one (a
    /// researcher's kernel crate): the CLI loads it beside the built-in image.
    fn image(&self) -> Option<kernel::DeviceImage> {
        None
    }
}

/// The registry's handle on a [`Family`]: `&Entry::<MyFamily>::NEW`.
pub struct Entry<F>(PhantomData<fn() -> F>);

impl<F: Family> Entry<F> {
    pub const NEW: Entry<F> = Entry(PhantomData);
}

fn from_json<T: DeserializeOwned>(family: &str, what: &str, v: &Value) -> Result<T> {
    serde_json::from_value(v.clone())
        .map_err(|e| Error::InvalidProblem { kernel: family.into(), reason: format!("{what} {v}: {e}") })
}

/// A problem or config as records carry it (they always serialize).
pub fn to_json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("problems and configs serialize")
}

pub(super) fn clap_error(family: &str, e: clap::Error) -> Error {
    Error::InvalidConfig { kernel: family.into(), reason: e.to_string() }
}

impl<F: Family> DynFamily for Entry<F> {
    fn name(&self) -> &'static str {
        F::NAME
    }
    fn about(&self) -> &'static str {
        F::ABOUT
    }
    fn wgsl_template(&self) -> &'static str {
        F::WGSL_TEMPLATE
    }
    fn shapes(&self) -> &'static str {
        F::SHAPES
    }
    fn run_args(&self, cmd: clap::Command) -> clap::Command {
        <F::ConfigArgs as clap::Args>::augment_args(<F::ProblemArgs as clap::Args>::augment_args(cmd))
    }
    fn tune_args(&self, cmd: clap::Command) -> Option<clap::Command> {
        // Whether a family has a search space does not depend on the problem's sizes.
        let probe = F::problem(&F::ProblemArgs::from_arg_matches(&clap_defaults::<F>()).ok()?, &Sizes::cpu_backend());
        F::tunable(probe)?;
        Some(<F::ProblemArgs as clap::Args>::augment_args(cmd))
    }
    fn problem(&self, m: &clap::ArgMatches, sizes: &Sizes) -> Result<(Value, Vec<String>)> {
        let args = F::ProblemArgs::from_arg_matches(m).map_err(|e| clap_error(F::NAME, e))?;
        let problem = to_json(&F::problem(&args, sizes));
        let given = m.ids().map(|id| id.as_str()).filter(|id| problem.get(id).is_some()).map(str::to_string).collect();
        Ok((problem, given))
    }
    fn resolve(
        &self,
        m: &clap::ArgMatches,
        backend: AnyBackend<'_>,
        variant: Variant,
        sizes: &Sizes,
        db: Option<&TuningDb>,
    ) -> Result<Resolved> {
        let pargs = F::ProblemArgs::from_arg_matches(m).map_err(|e| clap_error(F::NAME, e))?;
        let cargs = F::ConfigArgs::from_arg_matches(m).map_err(|e| clap_error(F::NAME, e))?;
        let problem = F::problem(&pargs, sizes);
        // Tuning on first use only where the default is asked: no config option given.
        let asks_default = !config_given::<F>(m);
        let (fitted, note, origin) = crate::with_backend!(backend, b => {
            let (d, origin) = match tuned::<F, _>(db, b, variant, &problem, asks_default) {
                (Some(c), why) => (c, why),
                (None, why) => (F::default_config(b, &problem), why),
            };
            let (fitted, note) = F::fit_config(b, variant, &problem, F::select(&cargs, d));
            (fitted, note, origin)
        });
        let config = F::config(&cargs, &fitted);
        // The note explains the fitted default; a config given on the command line is run
        // as given (and refused with the limit where it does not fit).
        let given = config != fitted;
        let note = note.filter(|_| !given);
        let origin = if given { format!("command line, over the default from the {origin}") } else { origin };
        Ok(Resolved { problem: to_json(&problem), config: to_json(&config), note, origin })
    }
    fn bench_cases(
        &self,
        backend: AnyBackend<'_>,
        variant: Variant,
        sizes: &Sizes,
        db: Option<&TuningDb>,
    ) -> Vec<Resolved> {
        crate::with_backend!(backend, b => {
            // Only a case that runs the family's default config takes the database's: the
            // others choose their kernel on purpose (reduce's staged case shows memory past
            // 48 KB, transpose's unpadded case the bank conflicts).
            let cases = F::bench_cases(b, sizes).into_iter().map(|c| {
                let is_default = c.config == F::default_config(b, &c.problem);
                if !is_default {
                    return (c, "the bench case's own config (it picks its kernel)".to_string());
                }
                match tuned::<F, _>(db, b, variant, &c.problem, true) {
                    (Some(config), why) => (BenchCase { problem: c.problem, config }, why),
                    (None, why) => (c, why),
                }
            });
            fitted(b, variant, cases)
        })
    }
    fn edge_cases(&self, backend: AnyBackend<'_>, variant: Variant) -> Vec<Resolved> {
        crate::with_backend!(backend, b => fitted(b, variant, F::edge_cases().into_iter().map(|c| (c, "edge case".to_string()))))
    }
    fn prepare<'b>(
        &self,
        backend: AnyBackend<'b>,
        problem: &Value,
        config: &Value,
        variant: Variant,
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        let p: F::Problem = from_json(F::NAME, "problem", problem)?;
        let c: F::Config = from_json(F::NAME, "config", config)?;
        crate::with_backend!(backend, b => F::prepare(b, &p, &c, variant, seed))
    }
    fn anchor_bytes(&self, problem: &Value) -> Result<Option<u64>> {
        Ok(F::anchor_bytes(&from_json(F::NAME, "problem", problem)?))
    }
    fn has_variant(&self, problem: &Value, variant: Variant) -> Result<bool> {
        Ok(has_form::<F>(&from_json(F::NAME, "problem", problem)?, variant))
    }
    fn tunable(&self, problem: &Value) -> Result<Option<Box<dyn DynTunable>>> {
        let p: F::Problem = from_json(F::NAME, "problem", problem)?;
        Ok(F::tunable(p).map(|t| Box::new(t) as Box<dyn DynTunable>))
    }
}

/// Whether `F` has a form in `variant` for `problem`: [`Family::bench_variant`], and a
/// subgroup twin for the wgsl-subgroup variant.
fn has_form<F: Family>(problem: &F::Problem, variant: Variant) -> bool {
    F::bench_variant(problem, variant) && (variant != Variant::WgslSubgroup || F::SUBGROUP_TWIN)
}

/// The cases `variant` runs, each config fitted to it.
fn fitted<F: Family, B: FamilyBackend>(
    b: &B,
    variant: Variant,
    cases: impl IntoIterator<Item = (BenchCase<F>, String)>,
) -> Vec<Resolved> {
    cases
        .into_iter()
        .filter(|(c, _)| has_form::<F>(&c.problem, variant))
        .map(|(c, origin)| {
            let (config, note) = F::fit_config(b, variant, &c.problem, c.config);
            Resolved { problem: to_json(&c.problem), config: to_json(&config), note, origin }
        })
        .collect()
}

/// The tuned config for `problem` on `b` and the line saying where it came from (`(None,
/// why)`: the heuristic default runs, and why): [`tuned_json`] for a typed family.
fn tuned<F: Family, B: TuneBackend>(
    db: Option<&TuningDb>,
    b: &B,
    variant: Variant,
    problem: &F::Problem,
    autotune: bool,
) -> (Option<F::Config>, String) {
    let Some(tunable) = F::tunable(problem.clone()) else {
        return (None, heuristic(F::NAME, db, b));
    };
    let default = || to_json(&F::default_config(b, problem));
    let (config, why) = tuned_json(db, b, variant, F::NAME, &tunable, default, autotune);
    match config.map(serde_json::from_value::<F::Config>) {
        Some(Ok(c)) => (Some(c), why),
        Some(Err(e)) => (None, format!("{}; its config does not parse: {e}", heuristic(F::NAME, db, b))),
        None => (None, why),
    }
}

/// Whether the command line of `m` gives any of the family's config options.
fn config_given<F: Family>(m: &clap::ArgMatches) -> bool {
    let cmd = <F::ConfigArgs as clap::Args>::augment_args(clap::Command::new(F::NAME));
    let given = |id: &str| {
        m.try_get_raw(id).is_ok_and(|v| v.is_some())
            && m.value_source(id).is_some_and(|s| s == clap::parser::ValueSource::CommandLine)
    };
    cmd.get_arguments().any(|a| given(a.get_id().as_str()))
}

/// The matches of an empty command line of the family's problem options (every option
/// at its default).
fn clap_defaults<F: Family>() -> clap::ArgMatches {
    let cmd = <F::ProblemArgs as clap::Args>::augment_args(clap::Command::new(F::NAME).no_binary_name(true));
    cmd.try_get_matches_from(std::iter::empty::<String>()).unwrap_or_default()
}

/// Looks a family up by name in `families`.
pub fn find<'a>(families: &[&'a dyn DynFamily], name: &str) -> Option<&'a dyn DynFamily> {
    families.iter().copied().find(|f| f.name() == name)
}
