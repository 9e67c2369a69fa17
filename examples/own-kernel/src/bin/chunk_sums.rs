//! The second example: a kernel with no static twins (`chunk_sums_u32` of `kernels/`, u32
//! sums checked exactly against the same kernel on the CPU backend), swept on the CPU backend
//! and on CUDA where present; on WGSL the sweep must be a typed refusal, not a panic.

use std::process::ExitCode;

use dynsmem_host::backend::{Probe, cpu::CpuBackend, cuda::CudaBackend, wgpu::WgpuBackend};
use dynsmem_host::contract::Kernel;
use dynsmem_host::tune::{TuneBackend, TuneOptions, tune_kernel_with};
use dynsmem_host::{Error, Result};

use own_kernel::{chunk_sums, images};

fn sweep<B: TuneBackend>(backend: &B, kernel: &Kernel) -> Result<()> {
    let s = tune_kernel_with(backend, kernel, &TuneOptions::quick())?;
    println!("{}", s.summary());
    s.export(&std::env::temp_dir().join(format!("chunk-sums-{}", backend.kind())))?;
    s.all_verified()
}

fn main() -> ExitCode {
    let run = || -> Result<()> {
        let sums = chunk_sums(100_003);
        sweep(&CpuBackend::with_kernels(&[own_kernels::KERNELS]), &sums)?;
        if let Probe::Ready(cuda) = CudaBackend::probe(0, images::PTX) {
            sweep(&cuda, &chunk_sums(1 << 22))?;
        }
        if let Probe::Ready(wgsl) = WgpuBackend::probe() {
            match sweep(&wgsl, &sums) {
                Err(e @ Error::Unsupported { .. }) => println!("wgsl: refused, as it must be: {e}"),
                other => {
                    return Err(Error::InvalidConfig { kernel: "chunk_sums_u32".into(), reason: format!("{other:?}") });
                }
            }
        }
        Ok(())
    };
    run().map_or_else(
        |e| {
            eprintln!("chunk_sums: FAILED: {e}");
            ExitCode::FAILURE
        },
        |()| ExitCode::SUCCESS,
    )
}
