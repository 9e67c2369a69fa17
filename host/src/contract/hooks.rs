//! What a [`Kernel`] description says beyond the Kernel Tuner form (fixed buffers, a fixed
//! space, one launch) where its kernel needs it: the hooks the built-in families declare
//! themselves with, open to a researcher's kernel on the same terms.
//!
//! | method | what it gives | without it |
//! | --- | --- | --- |
//! | [`Kernel::space`] | the parameters and candidates per target, with absent values | [`Kernel::params`] everywhere |
//! | [`Kernel::alias`] | a short command-line name of a parameter | its name in kebab case |
//! | [`Kernel::restrict_named`] | a restriction a refusal names | [`Kernel::restrict`], numbered |
//! | [`Kernel::footprint_by`] | the one validation: a typed refusal or the footprint, per variant | grid, block and bytes of the params |
//! | [`Kernel::default_by`] | a heuristic default per backend | [`Kernel::default_config`] |
//! | [`Kernel::fit_by`] | the config a twin runs where its static arrays cannot hold the asked one | the config asked |
//! | [`Kernel::cluster_by`] | thread-block clusters of the launch | clusters of 1 |
//! | [`Kernel::twins_by`] | twins generated per point (folds, vector widths, fitted sizes) | [`Kernel::wgsl`] / [`Kernel::cuda`] templates |
//! | [`Kernel::forms`] | the variants it has a form in (a subgroup twin) | the Rust kernel and each twin given |
//! | [`Kernel::rank_by`] | a cost model: the configs most likely fastest, best first | no model (tuning on first use keeps the default) |
//! | [`Kernel::workload_by`] | its own workload: several launches, inputs from the run's seed | one launch of the described arguments |
//!
//! Every hook sees a point as [`Params`] (values by parameter name): configs cross the
//! erasure once, by name.

use super::{CudaSource, Footprint, Kernel, Param, Params, Target, WgslSpec, Workload};
use crate::backend::{AnyBackend, Limits, Variant};
use crate::error::Result;

/// The parameters and their candidates on a target ([`Kernel::space`]).
pub type SpaceFn = dyn Fn(&Target) -> Vec<Param>;
/// The kernel's one validation ([`Kernel::footprint_by`]).
pub type FootprintFn = dyn Fn(&Params, &Target) -> Result<Footprint>;
/// The heuristic default on a backend (its limits, whether it asks for small configs, its
/// occupancy) ([`Kernel::default_by`]).
pub type DefaultFn = dyn for<'b> Fn(AnyBackend<'b>) -> Params;
/// The config a variant runs for the one asked, and why where it differs ([`Kernel::fit_by`]).
pub type FitFn = dyn Fn(&Params, Variant, &Limits) -> (Params, Option<String>);
/// Blocks of a launch's thread-block clusters ([`Kernel::cluster_by`]).
pub type ClusterFn = dyn Fn(&Params) -> u32;
/// The WGSL twin of a point for a variant ([`Kernel::twins_by`]).
pub type WgslFn = dyn Fn(&Params, Variant) -> WgslSpec;
/// The CUDA C twin of a point ([`Kernel::twins_by`]).
pub type CudaFn = dyn Fn(&Params) -> CudaSource;
/// Whether the kernel has a form in a variant ([`Kernel::forms`]).
pub type FormsFn = dyn Fn(Variant) -> bool;
/// A cost model ([`Kernel::rank_by`]): of `configs` (with their footprints) on a device of
/// `limits`, the indices of at most `limit` most likely fastest, best first.
pub type RankFn = dyn Fn(&[Params], &[Footprint], &Limits, usize) -> Vec<usize>;
/// The kernel's own workload of one point ([`Kernel::workload_by`]): the backend, the
/// point, the variant and the inputs' seed.
pub type WorkloadFn = dyn for<'b> Fn(AnyBackend<'b>, &Params, Variant, u64) -> Result<Box<dyn Workload + 'b>>;

/// The hooks a description gave (see the module documentation).
#[derive(Default)]
pub(super) struct Hooks {
    pub space: Option<Box<SpaceFn>>,
    pub named: Vec<&'static str>,
    pub footprint: Option<Box<FootprintFn>>,
    pub default: Option<Box<DefaultFn>>,
    pub fit: Option<Box<FitFn>>,
    pub cluster: Option<Box<ClusterFn>>,
    /// The WGSL template (hashed into tuning-cache keys), its generator, and the CUDA C one.
    pub twins: Option<(&'static str, Box<WgslFn>, Box<CudaFn>)>,
    pub forms: Option<Box<FormsFn>>,
    pub rank: Option<Box<RankFn>>,
    pub workload: Option<Box<WorkloadFn>>,
    /// How each parameter's value reads ([`Kernel::space`]'s); empty: every one a number.
    pub kinds: Vec<super::ValueKind>,
    /// Short command-line names of parameters: `(parameter, alias)`.
    pub aliases: Vec<(&'static str, &'static str)>,
}

/// A neutral target the parameter names are read on: names do not depend on the target
/// ([`Kernel::space`]), only their candidates do.
pub(super) fn naming_target() -> Target {
    Target {
        backend: crate::backend::BackendKind::Cuda,
        variant: Variant::LaunchSized,
        limits: Limits::h100(),
        is_cpu: false,
    }
}

impl Kernel {
    /// The parameters and their candidates as functions of the target (a CPU device sweeps
    /// fewer threads; clusters only where the backend runs them), each with the value an
    /// entry recorded before it existed stands for ([`Param::absent_as`]). The names and
    /// their order must be the same on every target; [`Kernel::params`] is not needed.
    pub fn space(mut self, f: impl Fn(&Target) -> Vec<Param> + 'static) -> Kernel {
        let named = f(&naming_target());
        self = self.params(&named.iter().map(|p| (p.name, p.values.as_slice())).collect::<Vec<_>>());
        self.hooks.kinds = named.iter().map(|p| p.kind).collect();
        self.hooks.space = Some(Box::new(f));
        self
    }

    /// A second, short command-line name of a parameter (`--ipt` for `--items-per-thread`).
    /// Configs, caches and records know the parameter by its one name.
    pub fn alias(mut self, param: &'static str, alias: &'static str) -> Kernel {
        self.hooks.aliases.push((param, alias));
        self
    }

    /// How parameter `i`'s value reads in configs and on the command line.
    pub fn kind_of(&self, i: usize) -> super::ValueKind {
        self.hooks.kinds.get(i).copied().unwrap_or_default()
    }

    /// The config of `point` as records, caches and the tuning database carry it: an object
    /// of the parameters' names, each value as its kind reads.
    pub fn config_value(&self, point: &[u32]) -> serde_json::Value {
        let names = self.param_space().map(|(n, _)| n);
        let values = names.zip(point).enumerate().map(|(i, (n, &v))| (n.to_string(), self.kind_of(i).to_json(v)));
        serde_json::Value::Object(values.collect())
    }

    /// The command-line alias of `param`, where [`Kernel::alias`] gave one.
    pub fn alias_of(&self, param: &str) -> Option<&'static str> {
        self.hooks.aliases.iter().find(|(p, _)| *p == param).map(|(_, a)| *a)
    }

    /// A restriction with a name: a point it refuses is filtered with "restriction `name`
    /// does not hold", not with its number.
    pub fn restrict_named(mut self, name: &'static str, f: impl Fn(&Params) -> bool + 'static) -> Kernel {
        let i = self.restrictions.len();
        self = self.restrict(f);
        self.hooks.named.resize(i, "");
        self.hooks.named.push(name);
        self
    }

    /// The kernel's one validation: a typed refusal naming the kernel, the value and the
    /// limit, or what the point asks for with the bytes of the form the target's variant
    /// builds (launch-sized for the Rust kernel, the static arrays of a twin). It replaces
    /// [`Kernel::grid`], [`Kernel::block`] and [`Kernel::shared_bytes`]; the restrictions
    /// still apply first.
    pub fn footprint_by(mut self, f: impl Fn(&Params, &Target) -> Result<Footprint> + 'static) -> Kernel {
        self.hooks.footprint = Some(Box::new(f));
        self
    }

    /// The heuristic default per backend: what `run` and `bench` launch where no config is
    /// given and the tuning database has none. It may read the backend's limits, whether it
    /// asks for small configs (the CPU backend, where every kernel thread is an OS thread) and
    /// its occupancy. Replaces [`Kernel::default_config`].
    pub fn default_by(mut self, f: impl for<'b> Fn(AnyBackend<'b>) -> Params + 'static) -> Kernel {
        self.hooks.default = Some(Box::new(f));
        self
    }

    /// The config a variant runs for the one asked, with a note saying why where it is
    /// another: a twin's static arrays cannot hold what launch-sized memory can. Applied to
    /// defaults and bench cases, never to a config given on the command line (that one is
    /// refused with the bytes and the limit).
    pub fn fit_by(mut self, f: impl Fn(&Params, Variant, &Limits) -> (Params, Option<String>) + 'static) -> Kernel {
        self.hooks.fit = Some(Box::new(f));
        self
    }

    /// [`Kernel::fit_by`] the common way: for cuda-static, where the point's static arrays
    /// (`bytes`) pass the backend's static limit, the first of `fallbacks` (best first) that
    /// fits, with a note; where none fits the point is kept, and its build is refused with the
    /// bytes and the limit. Other variants run the point asked.
    pub fn fit_static_by(
        self,
        bytes: impl Fn(&Params) -> Option<u32> + 'static,
        fallbacks: impl Fn(&Params) -> Vec<Params> + 'static,
    ) -> Kernel {
        self.fit_by(move |p, variant, limits| {
            super::fit_static(variant, limits.static_shared_max, p.clone(), fallbacks(p), &bytes)
        })
    }

    /// Launches the grid as thread-block clusters of `f(point)` blocks (1: no cluster),
    /// checked against the backend before anything is launched.
    pub fn cluster_by(mut self, f: impl Fn(&Params) -> u32 + 'static) -> Kernel {
        self.hooks.cluster = Some(Box::new(f));
        self
    }

    /// Twins generated per point: `wgsl(point, variant)` and `cuda(point)`, with `template`
    /// the WGSL text they are made from (hashed into tuning-cache keys). Replaces
    /// [`Kernel::wgsl`] and [`Kernel::cuda`].
    pub fn twins_by(
        mut self,
        template: &'static str,
        wgsl: impl Fn(&Params, Variant) -> WgslSpec + 'static,
        cuda: impl Fn(&Params) -> CudaSource + 'static,
    ) -> Kernel {
        self.hooks.twins = Some((template, Box::new(wgsl), Box::new(cuda)));
        self
    }

    /// The variants the kernel has a form in (the bench and the shape suites run only
    /// those): a twin with a subgroup form says so here.
    pub fn forms(mut self, f: impl Fn(Variant) -> bool + 'static) -> Kernel {
        self.hooks.forms = Some(Box::new(f));
        self
    }

    /// A cost model: of a space's configs (with their footprints) on a device of `limits`,
    /// at most `limit` most likely fastest, best first. Tuning on first use measures those.
    pub fn rank_by(mut self, f: impl Fn(&[Params], &[Footprint], &Limits, usize) -> Vec<usize> + 'static) -> Kernel {
        self.hooks.rank = Some(Box::new(f));
        self
    }

    /// The kernel's own workload of one point: several launches, or inputs made from the
    /// run's seed and checked by the family's own reference. The arguments, grid and check
    /// described otherwise are not used; the footprint, the space and the twins still are.
    pub fn workload_by(
        mut self,
        f: impl for<'b> Fn(AnyBackend<'b>, &Params, Variant, u64) -> Result<Box<dyn Workload + 'b>> + 'static,
    ) -> Kernel {
        self.hooks.workload = Some(Box::new(f));
        self
    }
}
