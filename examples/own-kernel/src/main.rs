//! A kernel of your own from your own crate, on dynsmem's kernel contract: two kernels of
//! `kernels/` (built for the GPU by `build.rs`) described in a few lines each, every config
//! checked against the same kernel run on the CPU backend, swept on every backend this
//! machine has, and exported as T4 results and a Kernel Tuner cache. `window_mean` has
//! WGSL and CUDA C twins; `chunk_sums` has none (its WGSL sweep is a typed refusal).
//! Exits non-zero on any failure.

use std::error::Error;
use std::process::ExitCode;

use dynsmem_host::backend::{Probe, cpu::CpuBackend, cuda::CudaBackend, wgpu::WgpuBackend};
use dynsmem_host::contract::{Data, Fill, Kernel, Params};
use dynsmem_host::measure::TimingOptions;
use dynsmem_host::tune::{TuneBackend, TuneOptions, tune_kernel_with};
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

/// Every config sums chunks of `SPAN` inputs (so every config has the same outputs); the
/// parameters split a chunk between threads and items per thread.
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

fn sweep<B: TuneBackend>(backend: &B, kernel: &Kernel) -> Result<(), Box<dyn Error>> {
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
    let t4_doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&t4)?)?;
    let kt_doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&kt)?)?;
    let (results, cached) =
        (t4_doc["results"].as_array().map_or(0, Vec::len), kt_doc["cache"].as_object().map_or(0, |c| c.len()));
    if results != s.space.len() || cached != s.space.len() + s.space.filtered.len() {
        return Err(format!("exports hold {results} T4 results and {cached} cache points").into());
    }
    println!("  exported {} and {}", t4.display(), kt.display());
    Ok(())
}

fn main() -> ExitCode {
    let run = || -> Result<(), Box<dyn Error>> {
        let (mean, sums) = (window_mean(10_007, 33), chunk_sums(100_003));
        let cpu = CpuBackend::with_kernels(&[own_kernels::KERNELS]);
        sweep(&cpu, &mean)?;
        sweep(&cpu, &sums)?;
        if let Probe::Ready(cuda) = CudaBackend::probe(0, images::PTX) {
            sweep(&cuda, &mean)?;
            sweep(&cuda, &sums)?;
        }
        match WgpuBackend::probe() {
            Probe::Ready(wgsl) => {
                sweep(&wgsl, &mean)?;
                let refusal = sweep(&wgsl, &sums).err().ok_or("chunk_sums has no WGSL twin, yet it ran")?;
                println!("wgsl: chunk_sums refused as it should be: {refusal}");
            }
            Probe::Unavailable(_, why) if std::env::var("DYNSMEM_REQUIRE_WGSL").is_ok_and(|v| v == "1") => {
                return Err(format!("wgsl unavailable with DYNSMEM_REQUIRE_WGSL=1: {why}").into());
            }
            Probe::Unavailable(_, why) => println!("wgsl: skipped ({why})"),
        }
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("own-kernel: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
