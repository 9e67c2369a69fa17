//! A kernel of your own from your own crate, on dynsmem's kernel contract: the moving average
//! of `kernels/` in a few lines, every config checked against the same kernel run on the CPU
//! backend, swept on every backend here (the CPU backend, CUDA, WGSL with its twin), exported
//! as T4 results and a Kernel Tuner cache. `src/bin/chunk_sums.rs`: a kernel without twins.

use std::process::ExitCode;

use dynsmem_host::backend::{Probe, cpu::CpuBackend, cuda::CudaBackend, wgpu::WgpuBackend};
use dynsmem_host::contract::Kernel;
use dynsmem_host::tune::{TuneBackend, TuneOptions, tune_kernel_with};
use dynsmem_host::{Error, Result};

use own_kernel::{images, window_mean};

/// Every config checked, then timed briefly; the sweep exported; any failed config an error.
fn sweep<B: TuneBackend>(backend: &B, kernel: &Kernel) -> Result<()> {
    let s = tune_kernel_with(backend, kernel, &TuneOptions::quick())?;
    println!("{}", s.summary());
    s.export(&std::env::temp_dir().join(format!("window-mean-{}", backend.kind())))?;
    s.all_verified()
}

fn main() -> ExitCode {
    let run = || -> Result<()> {
        let mean = window_mean(10_007, 33);
        sweep(&CpuBackend::with_kernels(&[own_kernels::KERNELS]), &mean)?;
        if let Probe::Ready(cuda) = CudaBackend::probe(0, images::PTX) {
            sweep(&cuda, &window_mean(1 << 20, 33))?;
        }
        match WgpuBackend::probe() {
            Probe::Ready(wgsl) => sweep(&wgsl, &mean),
            // CI installs lavapipe and sets DYNSMEM_REQUIRE_WGSL=1: there a missing adapter fails.
            Probe::Unavailable(backend, reason) if std::env::var("DYNSMEM_REQUIRE_WGSL").as_deref() == Ok("1") => {
                Err(Error::Unavailable { backend, reason })
            }
            Probe::Unavailable(_, why) => {
                println!("wgsl: skipped ({why})");
                Ok(())
            }
        }
    };
    run().map_or_else(
        |e| {
            eprintln!("own-kernel: FAILED: {e}");
            ExitCode::FAILURE
        },
        |()| ExitCode::SUCCESS,
    )
}
