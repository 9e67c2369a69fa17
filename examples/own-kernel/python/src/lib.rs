//! `own_kernel_native`: the example's families (the moving average, the chunk sums, the box
//! filter and the planted faults) as a dynsmem native module. In Python:
//!
//! ```text
//! import dynsmem, own_kernel_native
//! dynsmem.use_native(own_kernel_native)
//! dynsmem.run("window_mean", backend="cpu", n=5003, window=7, config={"block": 64, "per_thread": 2})
//! ```

use dynsmem::host::family::DynFamily;
use pyo3::prelude::*;

/// The module's registry: what `dynsmem.families()` lists once it is in use.
static FAMILIES: [&dyn DynFamily; 4] =
    [&own_kernel::WINDOW_MEAN, &own_kernel::CHUNK_SUMS, &own_kernel::BOX_FILTER, &own_kernel::PLANTED_FAULTS];

#[pymodule]
fn own_kernel_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    dynsmem_python::init(m, &FAMILIES)
}
