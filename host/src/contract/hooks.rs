//! What a [`Kernel`] description says beyond the Kernel Tuner form (fixed buffers, a fixed
//! space, one launch) where its kernel needs it: the hooks the built-in families declare
//! themselves with, open to a researcher's kernel on the same terms.
//!
//! | method | what it gives | without it |
//! | --- | --- | --- |
//! | [`Kernel::space`] | the parameters and candidates per target, with absent values | [`Kernel::params`] everywhere |
//! | [`Kernel::picks`] | a parameter that picks a kernel: set before the fit | set after it, as given |
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
    /// Names of the restrictions by index ([`Kernel::restrict_named`]; empty: numbered).
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
    /// Parameters that pick a kernel rather than size it ([`Kernel::picks`]).
    pub picks: Vec<&'static str>,
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

    /// A parameter that picks a kernel rather than sizes it (reduce's `staged`): given on
    /// the command line over a default, it is set before the config is fitted to the
    /// variant, so the fit sizes the kernel it picks.
    pub fn picks(mut self, param: &'static str) -> Kernel {
        self.hooks.picks.push(param);
        self
    }

    /// Whether parameter `param` picks a kernel ([`Kernel::picks`]).
    pub fn is_pick(&self, param: &str) -> bool {
        self.hooks.picks.contains(&param)
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

/// What the hooks give, as the registry, the tuner and `prepare` read it.
impl Kernel {
    /// Whether the kernel has a form in `variant` ([`Kernel::forms`]; by default the Rust
    /// kernel always, a twin where described, and no subgroup form).
    pub fn has_form(&self, variant: Variant) -> bool {
        if let Some(forms) = &self.hooks.forms {
            return forms(variant);
        }
        match variant {
            Variant::LaunchSized => true,
            Variant::CudaStatic => self.has_cuda(),
            Variant::WgslLiteral | Variant::WgslOverride => self.has_wgsl(),
            Variant::WgslSubgroup => false,
        }
    }
    /// The parameters and their candidates on `target` ([`Kernel::space`], else
    /// [`Kernel::params`]).
    pub fn params_on(&self, target: &Target) -> Vec<Param> {
        match &self.hooks.space {
            Some(space) => space(target),
            None => self.param_space().map(|(n, v)| Param::new(n, v)).collect(),
        }
    }
    /// The point of `params`, every parameter named.
    pub fn point_of_params(&self, params: &Params) -> Option<Vec<u32>> {
        self.param_space().map(|(n, _)| params.0.get(n).copied()).collect()
    }
    /// The heuristic default on `backend` ([`Kernel::default_by`], else
    /// [`Kernel::default_config`]), where given.
    pub fn default_on(&self, backend: crate::backend::AnyBackend<'_>) -> Option<Vec<u32>> {
        match &self.hooks.default {
            Some(f) => self.point_of_params(&f(backend)),
            None => self.default_point(),
        }
    }
    /// The point `variant` runs for `point` asked ([`Kernel::fit_by`]) and why, where it is
    /// another.
    pub fn fit(&self, point: Vec<u32>, variant: Variant, limits: &Limits) -> (Vec<u32>, Option<String>) {
        let Some(fit) = &self.hooks.fit else { return (point, None) };
        let (fitted, note) = fit(&self.params_at(&point), variant, limits);
        match self.point_of_params(&fitted) {
            Some(p) => (p, note),
            None => (point, None),
        }
    }
    /// The cost model's ranking of `points` ([`Kernel::rank_by`]), where there is one.
    pub fn rank(
        &self,
        points: &[Vec<u32>],
        footprints: &[Footprint],
        limits: &Limits,
        limit: usize,
    ) -> Option<Vec<usize>> {
        let rank = self.hooks.rank.as_ref()?;
        let params: Vec<Params> = points.iter().map(|p| self.params_at(p)).collect();
        Some(rank(&params, footprints, limits, limit))
    }
    /// Whether the kernel has a heuristic default per backend ([`Kernel::default_by`]).
    pub fn has_default_by(&self) -> bool {
        self.hooks.default.is_some()
    }
    /// Whether the kernel brings its own workload ([`Kernel::workload_by`]).
    pub fn has_own_workload(&self) -> bool {
        self.hooks.workload.is_some()
    }
}

#[cfg(test)]
mod tests {
    use dynsmem_kernels::transpose::{KERNELS, TransposeConfig};

    use super::*;
    use crate::backend::cpu::CpuBackend;
    use crate::backend::{Backend, BackendKind, Erase};
    use crate::contract::{Fill, ValueKind};
    use crate::error::Error;
    use crate::tune::Tunable;

    fn config(p: &Params) -> TransposeConfig {
        TransposeConfig { block: p["block"], tile: p["tile"], pad: p["pad"] }
    }

    /// The built-in transpose described with arguments, as a user would: 13 x 7 floats.
    fn transpose() -> Kernel {
        Kernel::new(KERNELS, "transpose_f32")
            .input("input", 91, Fill::Random(7))
            .output("output", 91)
            .scalar("rows", 13u32)
            .scalar("cols", 7u32)
            .param_arg("tile")
            .param_arg("pad")
            .params(&[("block", &[16, 32]), ("tile", &[4, 8]), ("pad", &[0, 1])])
            .block(|p| p["block"])
            .grid(|p| config(p).grid(13, 7))
            .shared_bytes(|p| config(p).shared_bytes())
    }

    fn target(is_cpu: bool) -> Target {
        Target { is_cpu, ..naming_target() }
    }

    #[test]
    fn space_gives_candidates_per_target_under_names_read_once() {
        let k = transpose().space(|t| {
            let block: &[u32] = if t.is_cpu { &[4, 8] } else { &[64, 128] };
            vec![Param::new("block", block), Param::new("tile", &[8]), Param::new("pad", &[1]).absent_as(0)]
        });
        assert_eq!(k.param_space().map(|(n, _)| n).collect::<Vec<_>>(), ["block", "tile", "pad"]);
        assert_eq!(k.params_on(&target(true))[0].values, [4, 8]);
        assert_eq!(k.params_on(&target(false))[0].values, [64, 128]);
        assert_eq!(k.params_on(&target(true))[2].absent, Some(0));
        assert_eq!(Tunable::params(&k, &target(true)), k.params_on(&target(true)));
    }

    #[test]
    fn a_named_restriction_is_named_in_the_refusal() {
        let k =
            transpose().restrict(|_| true).restrict_named("tile divides the block", |p| p["block"] % p["tile"] == 0);
        let e = k.footprint_on(&[16, 8, 0], &target(true));
        assert!(e.is_ok(), "{e:?}");
        let e = transpose().restrict_named("no padding", |p| p["pad"] == 0).footprint_on(&[16, 8, 1], &target(true));
        assert_eq!(e.unwrap_err(), "restriction `no padding` of the kernel does not hold");
        let e = transpose().restrict(|p| p["pad"] == 0).footprint_on(&[16, 8, 1], &target(true));
        assert_eq!(e.unwrap_err(), "restriction 1 of the kernel does not hold");
    }

    #[test]
    fn footprint_by_is_the_one_validation_per_variant() {
        let k = Kernel::new(KERNELS, "transpose_f32")
            .params(&[("block", &[16]), ("tile", &[4, 8]), ("pad", &[0])])
            .footprint_by(|p, t| {
                if p["tile"] > 4 && t.variant != Variant::LaunchSized {
                    return Err(Error::InvalidConfig { kernel: "t".into(), reason: "no twin of tiles past 4".into() });
                }
                Ok(Footprint { threads: p["block"], grid: 3, launch_bytes: 64 * p["tile"], static_bytes: 0 })
            })
            .workload_by(|_, _, _, _| Err(Error::InvalidConfig { kernel: "t".into(), reason: "not run".into() }));
        k.validate().expect("footprint_by replaces grid, block and bytes");
        let launch = Target { variant: Variant::LaunchSized, ..target(false) };
        assert_eq!(k.footprint_on(&[16, 8, 0], &launch).unwrap().launch_bytes, 512);
        let twin = Target { variant: Variant::CudaStatic, ..target(false) };
        assert!(k.footprint_on(&[16, 8, 0], &twin).unwrap_err().contains("no twin of tiles past 4"));
        assert!(transpose().validate().is_ok(), "the described geometry validates");
        let bare = Kernel::new(KERNELS, "transpose_f32").params(&[("block", &[1])]);
        assert!(bare.validate().is_err(), "neither geometry nor footprint_by");
    }

    #[test]
    fn default_by_reads_the_backend() {
        let k = transpose().default_by(|b| {
            let block = if b.small_configs() { 16 } else { 32 };
            Params([("block", block), ("tile", 8), ("pad", 1)].into_iter().collect())
        });
        let cpu = CpuBackend::new();
        assert!(cpu.small_configs());
        assert_eq!(k.default_on(cpu.erase()), Some(vec![16, 8, 1]));
        let partial = transpose().default_by(|_| Params([("block", 16)].into_iter().collect()));
        assert_eq!(partial.default_on(cpu.erase()), None, "a default must name every parameter");
    }

    #[test]
    fn fit_static_by_refits_only_cuda_static_and_says_why() {
        let bytes = |p: &Params| Some(p["tile"] * 10_000);
        let smaller =
            |p: &Params| vec![Params([("block", p["block"]), ("tile", 4), ("pad", p["pad"])].into_iter().collect())];
        let k = transpose().fit_static_by(bytes, smaller);
        let limits = Limits::h100();
        assert_eq!(k.fit(vec![32, 8, 1], Variant::LaunchSized, &limits), (vec![32, 8, 1], None));
        let (point, note) = k.fit(vec![32, 8, 1], Variant::CudaStatic, &limits);
        assert_eq!(point, vec![32, 4, 1]);
        assert!(note.is_some_and(|n| n.contains("80000 B") && n.contains("49152 B")));
        assert_eq!(k.fit(vec![32, 4, 1], Variant::CudaStatic, &limits), (vec![32, 4, 1], None), "it fits as asked");
    }

    #[test]
    fn forms_and_twins_say_which_variants_build() {
        let plain = transpose();
        assert!(plain.has_form(Variant::LaunchSized) && !plain.has_form(Variant::CudaStatic));
        let spec = |_: &Params, _: Variant| -> WgslSpec { unreachable!("not built here") };
        let cuda = |_: &Params| -> CudaSource { unreachable!("not built here") };
        let twins = transpose().twins_by("// template", spec, cuda);
        assert!(twins.has_form(Variant::CudaStatic) && twins.has_form(Variant::WgslLiteral));
        assert!(!twins.has_form(Variant::WgslSubgroup), "no subgroup form unless said");
        assert_eq!(twins.wgsl_source(), Some("// template"));
        let every = transpose().twins_by("", spec, cuda).forms(|_| true);
        assert!(every.has_form(Variant::WgslSubgroup));
    }

    #[test]
    fn rank_by_orders_the_points_the_tuner_measures_first() {
        let k = transpose().rank_by(|params, _, _, limit| {
            let mut order: Vec<usize> = (0..params.len()).collect();
            order.sort_by_key(|&i| std::cmp::Reverse(params[i]["block"]));
            order.truncate(limit);
            order
        });
        let points = [vec![16, 4, 0], vec![32, 4, 0], vec![16, 8, 0]];
        let fp = [Footprint::default(); 3];
        assert_eq!(k.rank(&points, &fp, &Limits::h100(), 2), Some(vec![1, 0]));
        assert_eq!(transpose().rank(&points, &fp, &Limits::h100(), 2), None);
    }

    #[test]
    fn workload_by_takes_the_runs_seed_and_skips_the_described_arguments() {
        let k = Kernel::new(KERNELS, "transpose_f32")
            .params(&[("block", &[16]), ("tile", &[4]), ("pad", &[0])])
            .footprint_by(|p, _| Ok(Footprint { threads: p["block"], grid: 1, launch_bytes: 0, static_bytes: 0 }))
            .workload_by(|b, p, v, seed| {
                Err(Error::InvalidConfig { kernel: format!("{} {v}", b.kind()), reason: format!("{p:?} seed {seed}") })
            });
        let cpu = CpuBackend::new();
        let e = k.prepare_seeded(&cpu, Variant::LaunchSized, &[16, 4, 0], 1234).err().expect("the hook's error");
        assert!(e.to_string().contains("{block=16,pad=0,tile=4} seed 1234"), "{e}");
        assert_eq!(cpu.kind(), BackendKind::Cpu);
        assert!(Tunable::check_id(&k, 9).unwrap().contains("seed 9"));
    }

    #[test]
    fn cluster_by_is_checked_against_the_backend() {
        let k = transpose().cluster_by(|_| 1 << 10);
        let cpu = CpuBackend::new();
        let e = k.prepare(&cpu, Variant::LaunchSized, &[16, 4, 1]).err().expect("no cluster of 1024 blocks");
        assert!(e.to_string().contains("cluster"), "{e}");
        assert!(transpose().cluster_by(|_| 1).prepare(&cpu, Variant::LaunchSized, &[16, 4, 1]).is_ok());
    }

    #[test]
    fn flags_and_choices_read_as_configs_carry_them() {
        let k = transpose().space(|_| {
            vec![
                Param::new("block", &[16]),
                Param::flag("tile", &[false, true]),
                Param::choice("pad", &["none", "one"], &[0, 1]),
            ]
        });
        assert_eq!(k.config_value(&[16, 1, 1]), serde_json::json!({"block": 16, "tile": true, "pad": "one"}));
        for kind in [ValueKind::Number, ValueKind::Flag, ValueKind::Choice(&["a", "b"])] {
            assert_eq!(kind.from_json(&kind.to_json(1)), Some(1), "{kind:?}");
        }
        assert_eq!(ValueKind::Flag.from_json(&serde_json::json!(1)), None, "a flag is true or false");
        assert_eq!(transpose().alias("pad", "p").alias_of("pad"), Some("p"));
        // A choice past its names has no config: the check refuses it before anything else.
        let e = k.footprint(&[16, 1, 2]).expect_err("pad 2 names nothing");
        assert!(e.contains("`pad` = 2") && e.contains("none"), "{e}");
    }
}
