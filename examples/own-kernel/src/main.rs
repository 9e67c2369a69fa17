//! A kernel of your own from your own crate: the moving average of `kernels/` (built for
//! the GPU by `build.rs`), registered as a dynsmem family of this crate, then on the CPU
//! backend (and on WGSL where a Vulkan adapter is present):
//! (a) one config prepared, run and checked against the CPU reference;
//! (b) its search space swept by the exhaustive strategy, every config verified before it
//!     is timed, results in a tuning cache (a temporary file);
//! (c) the sweep exported in Kernel Tuner's T4 format and read back.
//!
//! On a CUDA machine the same code runs the embedded PTX through
//! `dynsmem_host::backend::cuda::CudaBackend::new(images::PTX)`. Exits non-zero on any
//! failure.

mod family;

use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;

use dynsmem_host::backend::cpu::CpuBackend;
use dynsmem_host::backend::wgpu::WgpuBackend;
use dynsmem_host::backend::{BackendKind, Probe};
use dynsmem_host::families::{Variant, Workload};
use dynsmem_host::family::{DynFamily, Entry, Family, to_json};
use dynsmem_host::measure::TimingOptions;
use dynsmem_host::report::Provenance;
use dynsmem_host::rng::SplitMix64;
use dynsmem_host::tune::strategies::Stop;
use dynsmem_host::tune::{Budget, RealRunner, SearchSpace, Strategy, Target, TuneBackend, TuneCache, Tuner, t4};

use family::{WindowMean, WindowProblem};

/// The device images `build.rs` made from `kernels/`.
mod images {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

/// This crate's families: the registry `dynsmem`'s commands iterate, of its own.
static FAMILIES: &[&dyn DynFamily] = &[&Entry::<WindowMean>::NEW];

type Res<T> = std::result::Result<T, Box<dyn Error>>;

fn main() -> ExitCode {
    match run() {
        Ok(()) => {
            println!("own-kernel: all checks passed");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("own-kernel: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Res<()> {
    println!(
        "own-kernel: PTX for {} {} ({} bytes), {} AMD code object(s), checked = {}",
        images::PTX_ARCH,
        images::PTX_VERSION,
        images::PTX.len(),
        images::AMDGPU.len(),
        images::CHECKED
    );
    for k in own_kernels::KERNELS {
        if !images::PTX.contains(&format!(".entry {}(", k.name)) {
            return Err(format!("the PTX has no entry {}", k.name).into());
        }
    }

    // The CPU backend runs the kernels' Rust source, one OS thread per GPU thread: hand it
    // this crate's kernel table beside dynsmem's own.
    let cpu = CpuBackend::with_kernels(&[own_kernels::KERNELS]);
    let cpu_image =
        dynsmem_host::tune::image_hash(&[b"cpu-backend", std::env::consts::ARCH.as_bytes(), images::PTX.as_bytes()]);
    exercise(&cpu, Variant::LaunchSized, &cpu_image)?;

    match WgpuBackend::probe() {
        Probe::Ready(wgsl) => {
            let image = dynsmem_host::tune::image_hash(&[family::WGSL_TEMPLATE.as_bytes()]);
            exercise(&wgsl, Variant::WgslOverride, &image)?;
        }
        // CI sets DYNSMEM_REQUIRE_WGSL=1 (it installs lavapipe): there a missing adapter fails.
        Probe::Unavailable(_, why) if std::env::var("DYNSMEM_REQUIRE_WGSL").is_ok_and(|v| v == "1") => {
            return Err(format!("wgsl: unavailable with DYNSMEM_REQUIRE_WGSL=1: {why}").into());
        }
        Probe::Unavailable(_, why) => println!("wgsl: skipped ({why})"),
    }
    Ok(())
}

/// (a), (b) and (c) on one backend.
fn exercise<B: TuneBackend>(backend: &B, variant: Variant, image: &str) -> Res<()> {
    let info = backend.info();
    let tag = info.backend.to_string();
    println!("{tag}: {} ({variant})", info.name);

    // (a) One config: the typed API, then the same through the registry (erased: JSON
    // problems and configs, as records carry them).
    let problem = WindowProblem { n: 10_007, window: 33 };
    let config = WindowMean::default_config(backend, &problem);
    let work = WindowMean::prepare(backend, &problem, &config, variant, 1)?;
    work.run()?;
    work.check()?;
    let k = work.kernel();
    println!(
        "{tag}: {} verified: {problem:?} with {config:?}, {} B launch-sized + {} B static workgroup memory",
        k.name, k.shared_bytes, k.static_shared_bytes
    );
    let fam = dynsmem_host::family::find(FAMILIES, "window-mean").ok_or("window-mean is not registered")?;
    let odd = WindowProblem { n: 1000, window: 1000 };
    let work = fam.prepare(backend.erase(), &to_json(&odd), &to_json(&config), variant, 2)?;
    work.run()?;
    work.check()?;
    println!("{tag}: {} verified through the registry: {odd:?}", work.kernel().name);

    // (b) Tune: every config of the space, verified, then timed.
    let tune_problem =
        WindowProblem { n: if info.backend == BackendKind::Cpu { 1 << 14 } else { 1 << 20 }, window: 65 };
    let tuner = Tuner::<WindowMean>::new(tune_problem);
    let target = Target::of(backend, variant);
    let space = SearchSpace::build(&tuner, &target, &[])?;
    println!(
        "{tag}: tuning {tune_problem:?}: {} configs, {} filtered before launch",
        space.len(),
        space.filtered.len()
    );
    let dir = std::env::temp_dir();
    let stem = format!("own-kernel-{}-{tag}", std::process::id());
    let cache_path = dir.join(format!("{stem}.jsonl"));
    let t4_path = dir.join(format!("{stem}.t4.json"));
    let result = tune_and_export(backend, variant, image, &tuner, &space, &cache_path, &t4_path);
    let _ = std::fs::remove_file(&cache_path);
    let _ = std::fs::remove_file(&t4_path);
    result
}

fn tune_and_export<B: TuneBackend>(
    backend: &B,
    variant: Variant,
    image: &str,
    tuner: &Tuner<WindowMean>,
    space: &SearchSpace,
    cache_path: &PathBuf,
    t4_path: &PathBuf,
) -> Res<()> {
    let info = backend.info();
    let tag = info.backend.to_string();
    let mut cache = TuneCache::open(cache_path)?;
    let prov = Provenance {
        rustc: env!("DYNSMEM_RUSTC").into(),
        commit: env!("DYNSMEM_GIT_COMMIT").into(),
        command: "own-kernel".into(),
        image: format!("nvptx64 {} {}", images::PTX_ARCH, images::PTX_VERSION),
    };
    let commit = prov.commit.clone();
    // Few repeats: this checks the path, it is not a measurement.
    let timing = TimingOptions { warmup: 1, warmup_ms: 0.0, repeats: 5, energy_ms: 0.0, back_to_back: true };
    let strategy = Strategy::Exhaustive;
    let mut runner = RealRunner::new(backend, tuner, &mut cache, variant, image, timing, 1, prov, strategy.name());
    let result = strategy.search(space, &mut runner, Budget::unlimited(), &mut SplitMix64::new(1));
    if let Stop::RunnerFailed(e) = &result.stop {
        return Err(format!("the sweep stopped: {e}").into());
    }
    if let Some(f) = result.failed().next() {
        return Err(format!("{} failed: {}", space.describe(f.index), f.error.as_deref().unwrap_or("no result")).into());
    }
    if result.evaluations.len() != space.len() {
        return Err(format!("{} of {} configs evaluated", result.evaluations.len(), space.len()).into());
    }
    let best = result.best().ok_or("no config verified")?;
    println!(
        "{tag}: {} evaluated in {:.1} s; best: {} -> {:.4} ms ({} B of workgroup memory)",
        result.evaluations.len(),
        result.seconds,
        space.describe(best.index),
        best.score.unwrap_or(f64::NAN),
        space.footprints[best.index].shared_bytes(variant)
    );
    let cached = TuneCache::read(cache_path)?.len();
    if cached != space.len() {
        return Err(format!("the cache holds {cached} entries for {} configs", space.len()).into());
    }

    // (c) T4: Kernel Tuner's results format, every config (filtered ones included).
    let meta = t4::Metadata {
        family: WindowMean::NAME.into(),
        problem: to_json(&tuner_problem(tuner)),
        device: info.name.clone(),
        driver: info.driver.clone(),
        backend: tag.clone(),
        variant: variant.name().into(),
        image_hash: image.into(),
        strategy: result.strategy.into(),
        commit,
    };
    let doc = t4::export(space, &result.evaluations, &meta);
    std::fs::write(t4_path, serde_json::to_string_pretty(&doc)?)?;
    let back: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(t4_path)?)?;
    let results = back["results"].as_array().map_or(0, Vec::len);
    let filtered = back["metadata"]["filtered"].as_array().map_or(0, Vec::len);
    if back["schema_version"] != t4::SCHEMA_VERSION || results != space.len() || filtered != space.filtered.len() {
        return Err(format!("the T4 export {} does not read back: {results} results", t4_path.display()).into());
    }
    println!(
        "{tag}: T4 export of {results} results and {filtered} filtered configs written and read back ({})",
        t4_path.display()
    );
    Ok(())
}

fn tuner_problem(t: &Tuner<WindowMean>) -> WindowProblem {
    use dynsmem_host::tune::Tunable;
    *t.problem()
}
