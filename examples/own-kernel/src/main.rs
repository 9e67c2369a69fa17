//! A kernel of your own from your own crate, on dynsmem's kernel contract: the moving average
//! of `kernels/` in a few lines, every config checked against the same kernel run on the CPU
//! backend, swept on every backend here (the CPU backend, CUDA, WGSL with its twin), exported
//! as T4 results and a Kernel Tuner cache. `src/bin/chunk_sums.rs`: a kernel without twins.

use std::process::ExitCode;

use dynsmem_host::backend::{Probe, cpu::CpuBackend, cuda::CudaBackend, wgpu::WgpuBackend};
use dynsmem_host::contract::{Fill, Kernel, Params};
use dynsmem_host::tune::{TuneBackend, TuneOptions, tune_kernel_with};
use dynsmem_host::{Error, Result};
use own_kernels::WindowConfig;

mod images {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

fn window_mean(n: u32, w: u32) -> Kernel {
    let cfg = |p: &Params| WindowConfig { block: p["block"], per_thread: p["per_thread"] };
    Kernel::new(own_kernels::KERNELS, "window_mean_f32")
        .image(images::IMAGE_INFO)
        .input("x", n as usize, Fill::Random(1))
        .output("y", (n - w + 1) as usize)
        .scalar("n", n)
        .scalar("window", w)
        .param_arg("per_thread")
        .params(&[("block", &[32, 64, 128, 256]), ("per_thread", &[1, 2, 4])])
        .block(|p| p["block"])
        .grid(move |p| cfg(p).grid(n, w))
        .shared_bytes(move |p| cfg(p).shared_bytes(w))
        .define("WINDOW", w)
        .wgsl(include_str!("window_mean.wgsl"), "window_mean")
        .cuda(include_str!("window_mean.cu"), "window_mean_static")
}

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
