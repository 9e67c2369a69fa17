//! [`Kernel`]: a kernel of one's own described in a few lines, in the spirit of Kernel
//! Tuner's `tune_kernel`: the entry point, its arguments in order (buffers with their
//! contents or lengths, scalars, parameters passed as scalars), the tunable parameters
//! and their restrictions, the launch geometry and the launch-sized bytes as functions of
//! the parameters, and how the output is checked. `dynsmem_host::tune::tune_kernel`
//! sweeps it.
//!
//! The default check runs the SAME Rust kernel on the CPU backend (one OS thread per GPU
//! thread) at a reference config and compares every output with it: f32 outputs within
//! `1e-4 * max(|expected|, rms(expected))` (different configs may sum in a different
//! order), integer outputs exactly. An f64 reference function with a stated tolerance
//! replaces it ([`Kernel::reference`]).
//!
//! The static twins are optional. With [`Kernel::wgsl`] / [`Kernel::cuda`], the twin's
//! text has a `{{SIZING}}` slot (WGSL: `const NAME: u32 = v;` lines, or `override` lines
//! for the wgsl-override variant; CUDA C: `-D NAME=v` defines instead) filled with every
//! parameter, its name in capitals, and every [`Kernel::define`]; its static arrays are
//! taken to be the launch-sized bytes. Without a twin, its variants are a typed refusal.

use std::cell::OnceCell;
use std::rc::Rc;

use dynsmem_kernels::KernelEntry;
use dynsmem_kernels::entry::ParamKind;

use super::hooks::Hooks;
use super::launch::{Launch, OutputCheck};
pub use super::values::{Data, Fill, Params, Scalar, SharedBytes};
use super::wgsl::{WgslSpec, fill_template, wgsl_sizing};
use super::{CudaSource, FamilyBackend, Footprint, Param, Prepared, Target, Workload};
use crate::backend::cpu::CpuBackend;
use crate::backend::{Backend, Limits, Variant};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::rng::SplitMix64;
use crate::verify::{Tolerance, check_slice};

#[derive(Debug, Clone)]
enum ArgSpec {
    Input(&'static str, Rc<Data>),
    Output(&'static str, Data),
    Scalar(&'static str, Scalar),
}

/// How the outputs are checked.
pub enum Check {
    /// The same Rust kernel on the CPU backend at the reference config.
    CpuRun,
    /// An f64 reference of the inputs (one vector per output, in argument order) and the
    /// tolerance it admits, relative to `max(|expected|, rms(expected))`.
    Reference(Box<ReferenceFn>, Tolerance),
}

/// The reference function of [`Check::Reference`]: the inputs, in argument order.
pub type ReferenceFn = dyn Fn(&[&Data]) -> Vec<Vec<f64>>;
type ParamFn<T> = Box<dyn Fn(&Params) -> T>;

/// A static twin's text and entry point.
struct Twin {
    source: &'static str,
    entry: &'static str,
}

/// The expected outputs, computed once per kernel.
type Expected = Rc<Vec<Vec<f64>>>;

/// A kernel of one's own: see the module documentation.
pub struct Kernel {
    table: &'static [KernelEntry],
    entry: &'static str,
    args: Vec<ArgSpec>,
    /// Name, its twins' constant (the name in capitals), candidate values.
    params: Vec<(&'static str, &'static str, Vec<u32>)>,
    pub(super) restrictions: Vec<ParamFn<bool>>,
    grid: Option<ParamFn<u32>>,
    block: Option<ParamFn<u32>>,
    shared: Option<ParamFn<std::result::Result<u32, String>>>,
    check: Check,
    reference_point: Option<Vec<(&'static str, u32)>>,
    default_point: Option<Vec<(&'static str, u32)>>,
    work: (Option<u64>, f64),
    defines: Vec<(&'static str, u32)>,
    wgsl: Option<Twin>,
    cuda: Option<Twin>,
    image: [String; 3],
    expected: OnceCell<std::result::Result<(Expected, String), String>>,
    problem: OnceCell<serde_json::Value>,
    pub(super) hooks: Hooks,
}

/// The default f32 tolerance of [`Check::CpuRun`].
pub const CPU_RUN_RTOL: f64 = 1e-4;

impl Kernel {
    /// The kernel `entry` of `table` (the `kernels!` table of the kernel crate, which the CPU
    /// backend runs for the reference).
    pub fn new(table: &'static [KernelEntry], entry: &'static str) -> Kernel {
        Kernel {
            table,
            entry,
            args: Vec::new(),
            params: Vec::new(),
            restrictions: Vec::new(),
            grid: None,
            block: None,
            shared: None,
            check: Check::CpuRun,
            reference_point: None,
            default_point: None,
            work: (None, 0.0),
            defines: Vec::new(),
            wgsl: None,
            cuda: None,
            image: ["unknown"; 3].map(str::to_string),
            expected: OnceCell::new(),
            problem: OnceCell::new(),
            hooks: Hooks::default(),
        }
    }

    /// An input buffer of `len` f32 filled as `fill` says.
    pub fn input(self, name: &'static str, len: usize, fill: Fill) -> Kernel {
        let data = match fill {
            Fill::Random(seed) => {
                let mut rng = SplitMix64::new(seed);
                (0..len).map(|_| rng.next_f32() * 2.0 - 1.0).collect()
            }
            Fill::Value(v) => vec![v; len],
        };
        self.input_data(name, Data::F32(data))
    }
    /// An input buffer with the given contents.
    pub fn input_data(mut self, name: &'static str, data: impl Into<Data>) -> Kernel {
        self.args.push(ArgSpec::Input(name, Rc::new(data.into())));
        self
    }
    /// An output buffer of `len` f32, filled with NaN before each run.
    pub fn output(mut self, name: &'static str, len: usize) -> Kernel {
        self.args.push(ArgSpec::Output(name, Data::F32(vec![f32::poison(); len])));
        self
    }
    /// An output buffer of `len` u32, filled with [`Element::poison`] before each run.
    pub fn output_u32(mut self, name: &'static str, len: usize) -> Kernel {
        self.args.push(ArgSpec::Output(name, Data::U32(vec![u32::poison(); len])));
        self
    }
    /// A scalar argument (`u32`, `u64` or `f32`).
    pub fn scalar(mut self, name: &'static str, value: impl Into<Scalar>) -> Kernel {
        self.args.push(ArgSpec::Scalar(name, value.into()));
        self
    }
    /// A parameter's value passed as a `u32` argument.
    pub fn param_arg(mut self, name: &'static str) -> Kernel {
        self.args.push(ArgSpec::Scalar(name, Scalar::Param(name)));
        self
    }
    /// The tunable parameters and their candidate values (sorted: neighbourhood strategies
    /// walk them in order).
    pub fn params(mut self, params: &[(&'static str, &[u32])]) -> Kernel {
        // The twins' constant names live as long as the program: leaked once per kernel.
        let upper = |n: &str| &*Box::leak(n.to_uppercase().into_boxed_str());
        self.params = params.iter().map(|(n, v)| (*n, upper(n), v.to_vec())).collect();
        self
    }
    /// A condition every launched point must meet (Kernel Tuner's restrictions).
    pub fn restrict(mut self, f: impl Fn(&Params) -> bool + 'static) -> Kernel {
        self.restrictions.push(Box::new(f));
        self
    }
    /// Blocks of the launch.
    pub fn grid(mut self, f: impl Fn(&Params) -> u32 + 'static) -> Kernel {
        self.grid = Some(Box::new(f));
        self
    }
    /// Threads per block.
    pub fn block(mut self, f: impl Fn(&Params) -> u32 + 'static) -> Kernel {
        self.block = Some(Box::new(f));
        self
    }
    /// Launch-sized workgroup bytes per block.
    pub fn shared_bytes<S: SharedBytes>(mut self, f: impl Fn(&Params) -> S + 'static) -> Kernel {
        self.shared = Some(Box::new(move |p| f(p).into_bytes()));
        self
    }
    /// The point the CPU reference runs at (default: the first point of the space that
    /// meets the restrictions and the CPU backend's limits).
    pub fn reference_config(mut self, point: &[(&'static str, u32)]) -> Kernel {
        self.reference_point = Some(point.to_vec());
        self
    }
    /// The point `run` and `bench` launch where no config is given and the tuning database
    /// has none (default: the first point of the space that meets the restrictions and the
    /// backend's limits).
    pub fn default_config(mut self, point: &[(&'static str, u32)]) -> Kernel {
        self.default_point = Some(point.to_vec());
        self
    }
    /// What one launch must do, as records divide it by the time: the bytes it must move
    /// (default: every buffer argument once) and its floating-point operations (default:
    /// none, so no compute rate is reported).
    pub fn work(mut self, bytes: Option<u64>, flops: f64) -> Kernel {
        self.work = (bytes, flops);
        self
    }
    /// An f64 reference instead of the CPU run: one vector per output, in argument order,
    /// each element within `rtol * max(|expected|, rms(expected))`.
    pub fn reference(mut self, f: impl Fn(&[&Data]) -> Vec<Vec<f64>> + 'static, rtol: f64) -> Kernel {
        self.check = Check::Reference(Box::new(f), Tolerance { rtol, atol: 0.0 });
        self
    }
    /// A constant of the twins' `{{SIZING}}` (a problem size they are specialised for).
    pub fn define(mut self, name: &'static str, value: u32) -> Kernel {
        self.defines.push((name, value));
        self
    }
    /// The static-WGSL twin: its text (with a `{{SIZING}}` slot) and entry point.
    pub fn wgsl(mut self, source: &'static str, entry: &'static str) -> Kernel {
        self.wgsl = Some(Twin { source, entry });
        self
    }
    /// The static CUDA C twin (NVRTC, parameters as `-D` defines) and its entry point.
    pub fn cuda(mut self, source: &'static str, entry: &'static str) -> Kernel {
        self.cuda = Some(Twin { source, entry });
        self
    }
    /// The image the kernel comes from, `[hash, rustc, commit]` (`images::IMAGE_INFO` of the
    /// module `dynsmem-build` generates): the hash is part of every tuning-cache key (a
    /// rebuilt kernel is not answered from an old cache), the rest goes into records.
    pub fn image(mut self, info: [&str; 3]) -> Kernel {
        self.image = info.map(str::to_string);
        self
    }

    pub fn entry(&self) -> &'static str {
        self.entry
    }
    /// `[hash, rustc, commit]` of [`Kernel::image`] (`"unknown"` where not given).
    pub fn image_info(&self) -> &[String; 3] {
        &self.image
    }
    /// The parameters and their candidate values.
    pub fn param_space(&self) -> impl Iterator<Item = (&'static str, &[u32])> {
        self.params.iter().map(|(n, _, v)| (*n, v.as_slice()))
    }
    pub fn has_wgsl(&self) -> bool {
        self.wgsl.is_some() || self.hooks.twins.is_some()
    }
    pub fn has_cuda(&self) -> bool {
        self.cuda.is_some() || self.hooks.twins.is_some()
    }
    /// The WGSL twin's template text, where there is one.
    pub fn wgsl_source(&self) -> Option<&'static str> {
        self.wgsl.as_ref().map(|t| t.source).or(self.hooks.twins.as_ref().map(|t| t.0))
    }
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
        self.params.iter().map(|(n, _, _)| params.0.get(n).copied()).collect()
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
    /// Bytes of every buffer argument (inputs and outputs) once, or those [`Kernel::work`]
    /// gives: what a launch must read and write at least, the bandwidth anchor's size.
    pub fn buffer_bytes(&self) -> u64 {
        if let Some(bytes) = self.work.0 {
            return bytes;
        }
        let elems: usize = self
            .args
            .iter()
            .map(|a| match a {
                ArgSpec::Input(_, d) => d.len(),
                ArgSpec::Output(_, d) => d.len(),
                ArgSpec::Scalar(..) => 0,
            })
            .sum();
        elems as u64 * 4
    }
    /// The [`Kernel::default_config`] point, where given and naming every parameter.
    pub fn default_point(&self) -> Option<Vec<u32>> {
        let given = self.default_point.as_ref()?;
        self.params.iter().map(|(n, _, _)| given.iter().find(|(g, _)| g == n).map(|(_, v)| *v)).collect()
    }
    /// The point's values by parameter name.
    pub fn params_at(&self, point: &[u32]) -> Params {
        Params(self.params.iter().map(|(n, _, _)| *n).zip(point.iter().copied()).collect())
    }
    /// The problem as records and cache keys carry it: the arguments' names and lengths or
    /// values, and the twins' defines (made on first use, once the kernel is described).
    pub fn problem(&self) -> &serde_json::Value {
        self.problem.get_or_init(|| self.problem_json())
    }

    fn problem_json(&self) -> serde_json::Value {
        let args: Vec<serde_json::Value> = self
            .args
            .iter()
            .map(|a| match a {
                ArgSpec::Input(n, d) => serde_json::json!({ "input": n, "len": d.len() }),
                ArgSpec::Output(n, d) => serde_json::json!({ "output": n, "len": d.len() }),
                ArgSpec::Scalar(n, s) => serde_json::json!({ "scalar": n, "value": format!("{s:?}") }),
            })
            .collect();
        serde_json::json!({ "entry": self.entry, "args": args, "defines": self.defines })
    }

    fn invalid(&self, reason: impl Into<String>) -> Error {
        Error::InvalidConfig { kernel: self.entry.into(), reason: reason.into() }
    }

    /// The contract against the kernel's own entry: it is in the table, the arguments
    /// match its parameters one by one, every parameter has values, and grid, block and
    /// bytes are given. Checked before anything is uploaded or launched.
    pub fn validate(&self) -> Result<()> {
        let e = self.table.iter().find(|e| e.name == self.entry).ok_or_else(|| Error::MissingKernel {
            name: self.entry.into(),
            backend: crate::backend::BackendKind::Cpu,
            detail: format!("the kernels! table has {:?}", self.table.iter().map(|e| e.name).collect::<Vec<_>>()),
        })?;
        if self.params.is_empty() || self.params.iter().any(|(_, _, v)| v.is_empty()) {
            return Err(self.invalid("every kernel needs at least one parameter with at least one value"));
        }
        if self.hooks.workload.is_some() {
            // Its own workload passes the arguments.
            return Ok(());
        }
        let kinds: Vec<ParamKind> = self
            .args
            .iter()
            .map(|a| match a {
                ArgSpec::Input(..) | ArgSpec::Output(..) => ParamKind::Ptr,
                ArgSpec::Scalar(_, Scalar::U32(_) | Scalar::Param(_)) => ParamKind::U32,
                ArgSpec::Scalar(_, Scalar::U64(_)) => ParamKind::U64,
                ArgSpec::Scalar(_, Scalar::F32(_)) => ParamKind::F32,
            })
            .collect();
        if kinds != e.params {
            return Err(self.invalid(format!("the entry takes {:?}; the contract passes {kinds:?}", e.params)));
        }
        for a in &self.args {
            if let ArgSpec::Scalar(_, Scalar::Param(p)) = a
                && !self.params.iter().any(|(n, _, _)| n == p)
            {
                return Err(self.invalid(format!("argument `{p}` names no parameter")));
            }
        }
        let geometry = self.grid.is_some() && self.block.is_some() && self.shared.is_some();
        if !geometry && self.hooks.footprint.is_none() {
            return Err(self.invalid("grid, block and shared_bytes must all be given (or footprint_by)"));
        }
        Ok(())
    }

    /// The restrictions and the launch of one point, without a device; `Err(reason)` filters
    /// it. The backend's limits are checked on the footprint by the tuner's search space.
    /// A kernel with [`Kernel::footprint_by`] is checked on the H100's limits here; the
    /// tuner calls [`Kernel::footprint_on`] with its target.
    pub fn footprint(&self, point: &[u32]) -> std::result::Result<Footprint, String> {
        self.footprint_on(point, &super::hooks::naming_target())
    }

    /// [`Kernel::footprint`] of the form `target` builds.
    pub fn footprint_on(&self, point: &[u32], target: &Target) -> std::result::Result<Footprint, String> {
        self.validate().map_err(|e| e.to_string())?;
        let p = self.params_at(point);
        if let Some(i) = self.restrictions.iter().position(|r| !r(&p)) {
            return Err(match self.hooks.named.get(i).filter(|n| !n.is_empty()) {
                Some(name) => format!("restriction `{name}` of the kernel does not hold"),
                None => format!("restriction {} of the kernel does not hold", i + 1),
            });
        }
        if let Some(f) = &self.hooks.footprint {
            return f(&p, target).map_err(|e| e.to_string());
        }
        let bytes = (self.shared.as_ref().expect("validated"))(&p)?;
        let threads = (self.block.as_ref().expect("validated"))(&p);
        let grid = (self.grid.as_ref().expect("validated"))(&p);
        Ok(Footprint { threads, grid, launch_bytes: bytes, static_bytes: bytes })
    }

    /// The sizing constants of the twins at `point`: every parameter in capitals, then the
    /// defines.
    fn sizes(&self, point: &[u32]) -> Vec<(&'static str, u32)> {
        let params = self.params.iter().zip(point).map(|((_, upper, _), v)| (*upper, *v));
        params.chain(self.defines.iter().copied()).collect()
    }

    fn wgsl_spec(&self, point: &[u32], f: &Footprint, variant: Variant) -> Option<WgslSpec> {
        let p = self.params_at(point);
        if let Some((_, wgsl, _)) = &self.hooks.twins {
            return Some(wgsl(&p, variant));
        }
        let twin = self.wgsl.as_ref()?;
        let items: Vec<_> = self.sizes(point).into_iter().map(|(n, v)| (n, "u32", v as f64)).collect();
        let (sizing, constants) = wgsl_sizing(variant, &items);
        Some(WgslSpec {
            name: format!("{}[{variant},{}]", self.entry, describe(&p)),
            source: fill_template(twin.source, &[("SIZING", &sizing)]),
            entry: twin.entry,
            constants,
            workgroup_size: f.threads,
            static_bytes: f.static_bytes,
            subgroups: false,
            f16: false,
        })
    }

    fn cuda_source(&self, point: &[u32], f: &Footprint) -> Option<CudaSource> {
        if let Some((_, _, cuda)) = &self.hooks.twins {
            return Some(cuda(&self.params_at(point)));
        }
        let twin = self.cuda.as_ref()?;
        let defines = self.sizes(point).into_iter().map(|(n, v)| (n, v.to_string())).collect();
        Some(CudaSource {
            name: format!("{}[cuda-static,{}]", self.entry, describe(&self.params_at(point))),
            source: twin.source,
            file: "twin.cu",
            entry: twin.entry,
            defines,
            static_bytes: f.static_bytes,
        })
    }

    /// The expected outputs (computed on first use) and where they came from.
    pub fn expected(&self) -> Result<(Expected, String)> {
        let made = self.expected.get_or_init(|| self.compute_expected().map_err(|e| e.to_string()));
        made.clone().map_err(|reason| self.invalid(format!("no reference: {reason}")))
    }

    /// What this kernel's outputs are checked against, as tuning caches key it: where the
    /// expected outputs come from, a hash of them and of the inputs, and the tolerance. A
    /// change to the reference, the inputs or the tolerance makes another key.
    pub fn check_identity(&self) -> Result<String> {
        let (expected, from) = self.expected()?;
        let mut h = WordHash::new();
        for out in expected.iter() {
            h.words(out.iter().map(|v| v.to_bits()));
        }
        let outputs = h.finish();
        let mut h = WordHash::new();
        for a in &self.args {
            match a {
                ArgSpec::Input(_, d) => match &**d {
                    Data::F32(v) => h.words(v.iter().map(|x| u64::from(x.to_bits()))),
                    Data::U32(v) => h.words(v.iter().map(|&x| u64::from(x))),
                },
                ArgSpec::Scalar(name, s) => h.bytes(format!("{name}={s:?}").as_bytes()),
                ArgSpec::Output(..) => {}
            }
        }
        let tolerance = self.tolerance();
        Ok(format!(
            "{from}, expected outputs {outputs:016x}, inputs {:016x}, tolerance rtol {:e} atol {:e}",
            h.finish(),
            tolerance.rtol,
            tolerance.atol
        ))
    }

    /// The tolerance of float outputs.
    fn tolerance(&self) -> Tolerance {
        match &self.check {
            Check::Reference(_, t) => *t,
            Check::CpuRun => Tolerance { rtol: CPU_RUN_RTOL, atol: 0.0 },
        }
    }

    fn compute_expected(&self) -> Result<(Expected, String)> {
        self.validate()?;
        let inputs: Vec<&Data> =
            self.args.iter().filter_map(|a| if let ArgSpec::Input(_, d) = a { Some(&**d) } else { None }).collect();
        if let Check::Reference(f, _) = &self.check {
            return Ok((Rc::new(f(&inputs)), "the kernel's f64 reference".into()));
        }
        let cpu = CpuBackend::with_kernels(&[self.table]).with_schedule(crate::backend::cpu::CpuSchedule::Fast);
        let limits = cpu.info().limits;
        let point = match &self.reference_point {
            Some(given) => self.point_of(given)?,
            None => self.points().find(|pt| {
                self.footprint(pt).is_ok_and(|f| {
                    f.threads <= limits.max_threads_per_block && f.launch_bytes <= limits.launch_shared_max
                })
            }),
        }
        .ok_or_else(|| self.invalid("no point of the space meets the restrictions and the CPU backend's limits"))?;
        let work = self.prepare_at(&cpu, Variant::LaunchSized, &point, None)?;
        work.run()?;
        let outputs = work.read_outputs()?;
        for (name, out) in &outputs {
            let poisoned = match out {
                Data::F32(v) => v.iter().position(|x| x.is_nan()).map(|i| {
                    let note = crate::verify::poison_note(v[i]).unwrap_or("a NaN the kernel computed");
                    (i, format!("is NaN: {note}"))
                }),
                Data::U32(v) => v
                    .iter()
                    .position(|&x| x == u32::poison())
                    .map(|i| (i, "is still the output's poison: no thread wrote it".to_string())),
            };
            if let Some((i, what)) = poisoned {
                return Err(
                    self.invalid(format!("the CPU run at {}: {name}[{i}] {what}", describe(&self.params_at(&point))))
                );
            }
        }
        let why = format!("the same kernel on the CPU backend at {}", describe(&self.params_at(&point)));
        Ok((Rc::new(outputs.iter().map(|(_, d)| d.to_f64()).collect()), why))
    }

    /// Every point of the parameter product, first parameter slowest.
    fn points(&self) -> impl Iterator<Item = Vec<u32>> + '_ {
        let total: usize = self.params.iter().map(|(_, _, v)| v.len()).product();
        (0..total).map(move |mut i| {
            let mut pt = vec![0; self.params.len()];
            for (k, (_, _, values)) in self.params.iter().enumerate().rev() {
                pt[k] = values[i % values.len()];
                i /= values.len();
            }
            pt
        })
    }

    fn point_of(&self, given: &[(&'static str, u32)]) -> Result<Option<Vec<u32>>> {
        self.params
            .iter()
            .map(|(n, _, _)| {
                given
                    .iter()
                    .find(|(g, _)| g == n)
                    .map(|(_, v)| *v)
                    .ok_or_else(|| self.invalid(format!("the reference config {given:?} gives no value for `{n}`")))
            })
            .collect::<Result<Vec<u32>>>()
            .map(Some)
    }

    /// Validates point `point` and builds it on `backend` as `variant`, inputs uploaded and
    /// outputs poisoned; its check compares with [`Kernel::expected`].
    pub fn prepare<'b, B: FamilyBackend>(
        &self,
        backend: &'b B,
        variant: Variant,
        point: &[u32],
    ) -> Result<KernelWorkload<'b, B>> {
        let expected = self.expected()?;
        self.prepare_at(backend, variant, point, Some(expected))
    }

    /// [`Kernel::prepare`] as a workload, or the kernel's own ([`Kernel::workload_by`]) with
    /// inputs from `seed`; either checked first, nothing launched yet.
    pub fn prepare_seeded<'b, B: FamilyBackend>(
        &self,
        backend: &'b B,
        variant: Variant,
        point: &[u32],
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        match &self.hooks.workload {
            Some(own) => {
                self.validate()?;
                own(backend.erase(), &self.params_at(point), variant, seed)
            }
            None => Ok(Box::new(self.prepare(backend, variant, point)?)),
        }
    }

    fn prepare_at<'b, B: FamilyBackend>(
        &self,
        backend: &'b B,
        variant: Variant,
        point: &[u32],
        expected: Option<(Expected, String)>,
    ) -> Result<KernelWorkload<'b, B>> {
        self.validate()?;
        let p = self.params_at(point);
        let f = self
            .footprint_on(point, &Target::of(backend, variant))
            .map_err(|reason| self.invalid(format!("{}: {reason}", describe(&p))))?;
        let wgsl = |v: Variant| self.wgsl_spec(point, &f, v).expect("built only where the twin exists");
        let cuda = || self.cuda_source(point, &f).expect("built only where the twin exists");
        let kernel = Prepared::new(
            backend,
            self.entry,
            Ok(f.launch_bytes),
            f.grid,
            f.threads,
            variant,
            self.has_wgsl().then_some(&wgsl as &dyn Fn(Variant) -> WgslSpec),
            self.has_cuda().then_some(&cuda as &dyn Fn() -> CudaSource),
        )?;
        let tolerance = self.tolerance();
        let mut launch = Launch::new(backend, kernel, f.grid, f.threads).flops(self.work.1);
        if let Some(cluster) = &self.hooks.cluster {
            launch = launch.clustered(cluster(&p))?;
        }
        if let Some(bytes) = self.work.0 {
            launch = launch.bytes(bytes);
        }
        let mut k = 0;
        for a in &self.args {
            launch = match a {
                ArgSpec::Input(_, d) => match &**d {
                    Data::F32(v) => launch.input(v)?,
                    Data::U32(v) => launch.input(v)?,
                },
                ArgSpec::Output(name, d) => {
                    let want = expected.as_ref().map(|(e, from)| (e[k].clone(), from.clone()));
                    k += 1;
                    let check = want.map(|(want, from)| output_check(name, want, tolerance, from));
                    match d {
                        Data::F32(v) => launch.output_named(name, v, check, false)?,
                        Data::U32(v) => launch.output_named(name, v, check, false)?,
                    }
                }
                ArgSpec::Scalar(_, Scalar::Param(n)) => launch.arg(p[*n]),
                ArgSpec::Scalar(_, s) => launch.arg(*s),
            };
        }
        Ok(launch)
    }
}

/// The check of output `name` against `want`: f32 within `tolerance` at
/// `max(|expected|, rms(expected))`, u32 exactly.
/// A mismatch names `against`, the check's source, and says what a poison value it got means.
fn output_check(name: &'static str, want: Vec<f64>, tolerance: Tolerance, against: String) -> OutputCheck {
    Box::new(move |kernel, got| {
        let rms = (want.iter().map(|v| v * v).sum::<f64>() / want.len().max(1) as f64).sqrt();
        let what = format!("{kernel} output {name}");
        let scale = |i: usize| want[i].abs().max(rms);
        let checked = match got {
            Data::F32(g) => check_slice(&what, &want, g, scale, tolerance).map_err(|mut m| {
                if let Some(note) = crate::verify::poison_note(g[m.index]) {
                    m.actual = format!("{} ({note})", m.actual);
                }
                m
            }),
            Data::U32(g) => check_slice(&what, &want, g, scale, Tolerance::EXACT),
        };
        checked.map_err(|m| m.against(against.clone()))?;
        Ok(())
    })
}

/// `block=256,chunk=4`.
fn describe(p: &Params) -> String {
    p.0.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(",")
}

/// One point of a [`Kernel`] on one backend: what the tuner and `run` drive.
pub type KernelWorkload<'b, B> = Launch<'b, B>;

/// FNV-1a over 64-bit words (then bytes where given): hashes reference data and inputs
/// for cache keys eight times faster than FNV-1a byte by byte. Not cryptographic:
/// it tells apart checks a user changed, not data made to collide.
struct WordHash(u64);

impl Default for WordHash {
    fn default() -> Self {
        WordHash::new()
    }
}

impl WordHash {
    fn new() -> WordHash {
        WordHash(0xcbf2_9ce4_8422_2325)
    }
    fn words(&mut self, words: impl IntoIterator<Item = u64>) {
        for w in words {
            self.0 = (self.0 ^ w).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn bytes(&mut self, bytes: &[u8]) {
        self.words(bytes.iter().map(|&b| u64::from(b)));
    }
    fn finish(&self) -> u64 {
        self.0
    }
}
