//! What both example programs share: the device images `build.rs` made from `kernels/`, and
//! one sweep of a kernel on one backend with its exports read back.

use std::error::Error;

use dynsmem_host::contract::Kernel;
use dynsmem_host::measure::TimingOptions;
use dynsmem_host::tune::{TuneBackend, TuneOptions, tune_kernel_with};

pub mod images {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

/// Sweeps `kernel` on `backend` (every config checked, then timed with few repeats: this
/// shows the path, it is not a measurement), prints the summary, and writes the T4 results
/// and the Kernel Tuner cache. Any failed config is an error.
pub fn sweep<B: TuneBackend>(backend: &B, kernel: &Kernel) -> Result<(), Box<dyn Error>> {
    let timing = TimingOptions { warmup: 1, warmup_ms: 0.0, repeats: 5, ..TimingOptions::default() };
    let s = tune_kernel_with(backend, kernel, &TuneOptions { timing, ..TuneOptions::default() })?;
    println!("{}", s.summary());
    if let Some((config, error)) = s.failures().into_iter().next() {
        return Err(format!("{config} failed: {error}").into());
    }
    let stem = std::env::temp_dir().join(format!("own-kernel-{}-{}", kernel.entry(), backend.kind()));
    let (t4, kt) = (stem.with_extension("t4.json"), stem.with_extension("kt-cache.json"));
    s.export_t4(&t4)?;
    s.export_kt_cache(&kt)?;
    println!("  exported {} and {}", t4.display(), kt.display());
    Ok(())
}
