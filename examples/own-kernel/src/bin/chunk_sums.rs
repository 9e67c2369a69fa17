//! The second example: a kernel with no static twins (`chunk_sums_u32` of `kernels/`, u32
//! sums checked exactly against the same kernel on the CPU backend), swept on the CPU backend
//! and on CUDA where present; on WGSL the sweep must be a typed refusal, not a panic.

use std::process::ExitCode;

use dynsmem_host::backend::{Probe, cpu::CpuBackend, cuda::CudaBackend, wgpu::WgpuBackend};
use dynsmem_host::contract::{Data, Kernel};
use dynsmem_host::tune::{TuneBackend, TuneOptions, tune_kernel_with};
use dynsmem_host::{Error, Result};

mod images {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

/// Every config sums chunks of `SPAN` inputs (so all have the same outputs); the parameters
/// split a chunk between threads and items per thread.
const SPAN: u32 = 512;

fn chunk_sums(n: u32) -> Kernel {
    let x: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761) >> 7).collect();
    Kernel::new(own_kernels::KERNELS, "chunk_sums_u32")
        .image(images::IMAGE_INFO)
        .input_data("x", Data::U32(x))
        .output_u32("sums", n.div_ceil(SPAN) as usize)
        .scalar("n", n)
        .param_arg("chunk")
        .params(&[("block", &[32, 64, 128, 256]), ("chunk", &[2, 4, 8, 16])])
        .restrict(|p| p["block"] * p["chunk"] == SPAN)
        .block(|p| p["block"])
        .grid(move |_| n.div_ceil(SPAN))
        .shared_bytes(|p| p["block"] * 4)
}

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
