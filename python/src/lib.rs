//! `dynsmem._native`: the native part of the Python package (python/dynsmem/). It holds a
//! registry of families (the built-in ones, or a researcher's own: [`init`]) and gives Python
//! four things over the library:
//!
//! - [`cli`]: a command line (`run`, `tune`, `bench`, ...) in this process, its records written
//!   where `--json` / `--cache` say, a refusal raised as `DynsmemError` with the command
//!   line's text; a sweep's workers are `python -m dynsmem` processes (the caller survives a
//!   config that faults or hangs);
//! - [`options`]: the options of a family's `run` / `tune`, so that keyword arguments map to
//!   them;
//! - [`comparison`]: the comparison table of a record file, as rows;
//! - [`prepare`] and [`Prepared`]: a family's kernel for one problem and config on CUDA,
//!   launched on a framework's memory (a PyTorch tensor's) on the framework's stream.
//!
//! The GIL is released while a command runs.

use std::collections::HashMap;
use std::sync::OnceLock;

use dynsmem::cli::{Invocation, prepare_on};
use dynsmem::host::backend::{BackendKind, OwnedBackend, Probe};
use dynsmem::host::contract::Workload;
use dynsmem::host::family::DynFamily;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyType};

/// The package's exception class, `dynsmem._errors.DynsmemError`: one class for every native
/// module (each of which is a library of its own, with its own statics), so that
/// `except dynsmem.DynsmemError` catches a researcher's module's refusals too.
fn error_class(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    Ok(py.import("dynsmem._errors")?.getattr("DynsmemError")?.cast_into::<PyType>()?)
}

/// A `DynsmemError` with `message` (a RuntimeError where the package cannot be imported).
fn raise(message: String) -> PyErr {
    Python::attach(|py| match error_class(py) {
        Ok(class) => PyErr::from_type(class, message),
        Err(_) => PyRuntimeError::new_err(message),
    })
}

/// The registry of this module: set once by [`init`].
static FAMILIES: OnceLock<&'static [&'static dyn DynFamily]> = OnceLock::new();

fn families_of() -> &'static [&'static dyn DynFamily] {
    FAMILIES.get().copied().unwrap_or(&[])
}

/// The error as Python sees it: the whole chain, `context: cause: cause`.
fn error(e: anyhow::Error) -> PyErr {
    raise(format!("{e:#}"))
}

/// Adds the module's functions to `m`, over the families of `registry`. A researcher's crate makes its own
/// module with it:
///
/// ```ignore
/// #[pyo3::pymodule]
/// fn own_kernel_native(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
///     dynsmem_python::init(m, &[&own_kernel::WINDOW_MEAN])
/// }
/// ```
///
/// and Python uses it with `dynsmem.use_native(own_kernel_native)`.
pub fn init(m: &Bound<'_, PyModule>, registry: &'static [&'static dyn DynFamily]) -> PyResult<()> {
    let set = FAMILIES.get_or_init(|| registry);
    if !std::ptr::eq(*set, registry) {
        return Err(raise("this module's registry is already set to other families".into()));
    }
    dynsmem::set_families(registry).map_err(error)?;
    m.add("DynsmemError", error_class(m.py())?)?;
    m.add("COMMIT", dynsmem::COMMIT)?;
    m.add("RUSTC", dynsmem::RUSTC)?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(families, m)?)?;
    m.add_function(wrap_pyfunction!(options, m)?)?;
    m.add_function(wrap_pyfunction!(comparison, m)?)?;
    m.add_function(wrap_pyfunction!(prepare, m)?)?;
    m.add_class::<Prepared>()?;
    Ok(())
}

/// The built-in families.
#[cfg(feature = "builtin")]
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    init(m, dynsmem::host::families::FAMILIES)
}

/// Runs the command line `args` (the program's name first) in this process. `worker` is the
/// program (and its leading arguments) that runs a sweep's worker with the command's
/// arguments after it. Returns the text of `--help` where that was asked for, else None.
#[pyfunction]
fn cli(py: Python<'_>, args: Vec<String>, worker: Vec<String>) -> PyResult<Option<String>> {
    let families = families_of();
    let invocation = Invocation { args, worker: worker.into_iter().map(Into::into).collect() };
    match py.detach(move || dynsmem::cli::run(families, invocation)) {
        Ok(()) => Ok(None),
        Err(e) => match e.downcast::<clap::Error>() {
            Ok(usage)
                if matches!(
                    usage.kind(),
                    clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
                ) =>
            {
                Ok(Some(usage.render().to_string()))
            }
            Ok(usage) => Err(raise(usage.render().to_string().trim_end().to_string())),
            Err(e) => Err(error(e)),
        },
    }
}

/// The names of the registry's families, in its order.
#[pyfunction]
fn families() -> Vec<&'static str> {
    families_of().iter().map(|f| f.name()).collect()
}

/// The options of `command` (`run` or `tune`) for `family`: a dict per option with `name`
/// (the long option, without dashes), `takes_value`, `default` (or None) and `help`.
#[pyfunction]
fn options<'py>(py: Python<'py>, command: &str, family: &str) -> PyResult<Bound<'py, PyList>> {
    let _registry = families_of();
    let cmd = dynsmem::cli::command();
    let Some(sub) = cmd.find_subcommand(command).and_then(|c| c.find_subcommand(family)) else {
        let names: Vec<&str> = families_of().iter().map(|f| f.name()).collect();
        return Err(raise(format!(
            "no `{command} {family}`: the families are {} (and `{command}` must be run or tune)",
            names.join(", ")
        )));
    };
    let out = PyList::empty(py);
    for a in sub.get_arguments() {
        let Some(long) = a.get_long() else { continue };
        let d = PyDict::new(py);
        d.set_item("name", long)?;
        d.set_item("takes_value", a.get_action().takes_values())?;
        let default: Vec<String> = a.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
        d.set_item("default", default.first())?;
        d.set_item("help", a.get_help().map(|h| h.to_string()))?;
        out.append(d)?;
    }
    Ok(out)
}

/// The comparison table of the records in `path` (JSON lines): `rows`, a dict per problem
/// and column (`family`, `problem`, `unit`, `column`, `backend`, `variant`, `figure`,
/// `ratio`, `config` as JSON text, `cell` as printed, `anchor`), `footnotes` and `devices`.
#[pyfunction]
fn comparison<'py>(py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyDict>> {
    let contents =
        dynsmem::host::report::read_jsonl(std::path::Path::new(path)).map_err(|e| error(anyhow::Error::new(e)))?;
    let c = dynsmem::host::report::Comparison::new(&contents.records);
    let rows = PyList::empty(py);
    for r in &c.rows {
        for (i, col) in c.columns.iter().enumerate() {
            let d = PyDict::new(py);
            d.set_item("family", &r.family)?;
            d.set_item("problem", &r.problem)?;
            d.set_item("unit", r.unit.name())?;
            d.set_item("column", &col.header)?;
            d.set_item("backend", col.backend.to_string())?;
            d.set_item("variant", &col.variant)?;
            let best = r.best.get(i).and_then(Option::as_ref);
            d.set_item("figure", best.map(|b| b.figure))?;
            d.set_item("ratio", best.and_then(|b| b.ratio))?;
            d.set_item("config", best.map(|b| b.config.to_string()))?;
            d.set_item("cell", r.cells.get(i))?;
            d.set_item("anchor", &r.anchor)?;
            rows.append(d)?;
        }
    }
    let out = PyDict::new(py);
    out.set_item("rows", rows)?;
    out.set_item("footnotes", &c.footnotes)?;
    out.set_item("devices", &c.devices)?;
    Ok(out)
}

thread_local! {
    /// The backends [`prepare`] made on this thread, kept for the life of the process: a
    /// prepared kernel borrows its backend, and a CUDA context is made once.
    static BACKENDS: std::cell::RefCell<HashMap<BackendKind, &'static OwnedBackend>> = Default::default();
}

fn backend(kind: BackendKind) -> anyhow::Result<&'static OwnedBackend> {
    BACKENDS.with(|b| {
        if let Some(owned) = b.borrow().get(&kind) {
            return Ok(*owned);
        }
        let owned: &'static OwnedBackend = match dynsmem::probe(kind, 0) {
            Probe::Ready(owned) => Box::leak(Box::new(owned)),
            Probe::Unavailable(k, why) => anyhow::bail!("{k} unavailable: {why}"),
        };
        b.borrow_mut().insert(kind, owned);
        Ok(owned)
    })
}

/// A family's kernel for one problem and config on one backend (device 0), validated and
/// built, its own inputs uploaded: launched on a caller's buffers with [`Prepared::run_on`].
/// Used from the thread that made it.
#[pyclass(unsendable, module = "dynsmem._native")]
struct Prepared {
    workload: Box<dyn Workload + 'static>,
    backend: &'static OwnedBackend,
    #[pyo3(get)]
    family: String,
    /// The resolved problem, as JSON text.
    #[pyo3(get)]
    problem: String,
    /// The resolved config, as JSON text.
    #[pyo3(get)]
    config: String,
    /// Where the config came from (the options, the tuning database, the heuristic).
    #[pyo3(get)]
    origin: String,
    #[pyo3(get)]
    variant: String,
}

/// Prepares the kernel a `run` command line (`args`, the program's name first) names on
/// its `--backend` (default cuda).
#[pyfunction]
fn prepare(args: Vec<String>) -> PyResult<Prepared> {
    let _registry = families_of();
    let parsed = dynsmem::cli::try_parse_from(&args).map_err(|e| error(e.into()))?;
    let dynsmem::cli::Parsed::Run { family, common, .. } = parsed else {
        return Err(raise(format!("not a `run` command line: {}", args.join(" "))));
    };
    let owned = backend(common.backend.unwrap_or(BackendKind::Cuda)).map_err(error)?;
    let (case, variant, workload) = prepare_on(owned.erase(), &args).map_err(error)?;
    Ok(Prepared {
        workload,
        backend: owned,
        family: family.name().to_string(),
        problem: case.problem.to_string(),
        config: case.config.to_string(),
        origin: case.origin,
        variant: variant.to_string(),
    })
}

#[pymethods]
impl Prepared {
    /// The kernel's name, as records give it.
    #[getter]
    fn kernel(&self) -> String {
        self.workload.kernel().name
    }
    /// Launch-sized workgroup bytes per block.
    #[getter]
    fn shared_bytes(&self) -> u32 {
        self.workload.kernel().shared_bytes
    }
    /// The buffer arguments, in order: a dict each (`name`, `element`, `len`, `output`,
    /// `zeroed`); empty for a family whose run is not one launch over buffers.
    fn buffers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for b in self.workload.buffers() {
            let d = PyDict::new(py);
            d.set_item("name", b.name)?;
            d.set_item("element", b.element)?;
            d.set_item("len", b.len)?;
            d.set_item("output", b.output)?;
            d.set_item("zeroed", b.zeroed)?;
            out.append(d)?;
        }
        Ok(out)
    }
    /// Queues one launch on the caller's buffers (`(address, bytes)` each, in the order of
    /// [`Prepared::buffers`]) on `stream` (a raw CUDA stream handle; 0 the legacy default
    /// stream). Returns at once: the work is in stream order.
    fn run_on(&self, buffers: Vec<(u64, u64)>, stream: u64) -> PyResult<()> {
        self.workload.run_on(&buffers, stream).map_err(|e| error(e.into()))
    }
    /// One run on its own inputs, checked against its reference (the check `run` makes).
    fn self_check(&self) -> PyResult<()> {
        self.workload.run().and_then(|()| self.workload.check()).map_err(|e| error(e.into()))
    }
    /// Waits for the backend's own stream.
    fn synchronize(&self) -> PyResult<()> {
        use dynsmem::host::backend::Backend;
        dynsmem::host::with_backend!(self.backend.erase(), b => b.synchronize()).map_err(|e| error(e.into()))
    }
    fn __repr__(&self) -> String {
        format!("<dynsmem.Prepared {} {} config {}>", self.kernel(), self.problem, self.config)
    }
}
