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

use super::expected::output_check;
use super::hooks::Hooks;
use super::launch::Launch;
pub use super::values::{Data, Fill, Params, Scalar, SharedBytes};
use super::wgsl::{WgslSpec, fill_template, wgsl_sizing};
use super::{CudaSource, FamilyBackend, Footprint, Prepared, Target, Workload};
use crate::backend::Variant;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::rng::SplitMix64;
use crate::verify::Tolerance;

#[derive(Debug, Clone)]
pub(super) enum ArgSpec {
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
pub(super) type Expected = Rc<Vec<Vec<f64>>>;

/// A kernel of one's own: see the module documentation.
pub struct Kernel {
    pub(super) table: &'static [KernelEntry],
    pub(super) entry: &'static str,
    pub(super) args: Vec<ArgSpec>,
    /// Name, its twins' constant (the name in capitals), candidate values.
    pub(super) params: Vec<(&'static str, &'static str, Vec<u32>)>,
    pub(super) restrictions: Vec<ParamFn<bool>>,
    pub(super) grid: Option<ParamFn<u32>>,
    pub(super) block: Option<ParamFn<u32>>,
    pub(super) shared: Option<ParamFn<std::result::Result<u32, String>>>,
    pub(super) check: Check,
    pub(super) reference_point: Option<Vec<(&'static str, u32)>>,
    pub(super) default_point: Option<Vec<(&'static str, u32)>>,
    pub(super) work: (Option<u64>, f64),
    pub(super) defines: Vec<(&'static str, u32)>,
    wgsl: Option<Twin>,
    cuda: Option<Twin>,
    pub(super) image: [String; 3],
    pub(super) expected: OnceCell<std::result::Result<(Expected, String), String>>,
    pub(super) problem: OnceCell<serde_json::Value>,
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

    pub(super) fn invalid(&self, reason: impl Into<String>) -> Error {
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
        // A choice's value is an index into its names: past them, no config names it.
        for (i, (&v, (name, ..))) in point.iter().zip(&self.params).enumerate() {
            if let super::ValueKind::Choice(names) = self.kind_of(i)
                && v as usize >= names.len()
            {
                return Err(format!("`{name}` = {v}: not one of {names:?}"));
            }
        }
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

    /// Every point of the parameter product, first parameter slowest.
    pub(super) fn points(&self) -> impl Iterator<Item = Vec<u32>> + '_ {
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

    pub(super) fn point_of(&self, given: &[(&'static str, u32)]) -> Result<Option<Vec<u32>>> {
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

    pub(super) fn prepare_at<'b, B: FamilyBackend>(
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

/// `block=256,chunk=4`.
pub(super) fn describe(p: &Params) -> String {
    p.0.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(",")
}

/// One point of a [`Kernel`] on one backend: what the tuner and `run` drive.
pub type KernelWorkload<'b, B> = Launch<'b, B>;
