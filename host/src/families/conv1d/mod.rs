//! 1-D convolution, host side: problem, configs, the WGSL form beside it (`conv1d.wgsl`),
//! the CPU reference and the [`Workload`]. The device algorithm is documented in
//! `dynsmem_kernels::conv1d`.

use dynsmem_kernels::conv1d::{Conv1dConfig, MAX_TAPS, OUTPUTS_PER_THREAD, entry_name};
use serde::{Deserialize, Serialize};

use crate::backend::BackendKind;
use crate::backend::Variant;
use crate::contract::{
    CudaSource, FamilyBackend, Footprint, Launch, Target, WgslSpec, fill_template, invalid, invalid_problem,
    wgsl_sizing,
};
use crate::error::{Error, Result};
use crate::rng::SplitMix64;
use crate::verify::{Tolerance, check_slice};

mod family;

pub use family::CONV1D;

pub(crate) const WGSL_TEMPLATE: &str = include_str!("conv1d.wgsl");
/// The cuda-static form: the same algorithm in CUDA C with static arrays.
pub const CUDA_SOURCE: &str = include_str!("conv1d.cu");

/// `n` samples through a `taps`-tap filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Conv1dProblem {
    pub n: u64,
    pub taps: u32,
}

/// 128 threads x 8 outputs, 4 outputs for fewer than 8 taps (less zero padding of the
/// taps), tuned on the H100 (provenance in `NOTES.md`); 16 x 4 on the CPU backend.
pub fn default_config<B: FamilyBackend>(backend: &B, taps: u32) -> Conv1dConfig {
    default_for(backend.kind(), backend.small_configs(), taps)
}

/// [`default_config`] on a backend of `kind` that asks for small configs (`small`) or not:
/// the WGSL twin keeps 4 outputs a thread at every tap count (tuned at 33 taps on the H200,
/// `NOTES.md`).
pub fn default_for(kind: BackendKind, small: bool, taps: u32) -> Conv1dConfig {
    if small {
        Conv1dConfig { block: 16, outputs_per_thread: 4 }
    } else if taps < 8 || kind == BackendKind::Wgsl {
        Conv1dConfig { block: 128, outputs_per_thread: 4 }
    } else {
        Conv1dConfig { block: 128, outputs_per_thread: 8 }
    }
}

/// The unrolled register window of the WGSL form for `r` outputs per thread (4 or 8),
/// as the text of `conv1d.wgsl`'s slots: the window is scalars named `a<i>` (accumulators),
/// `lo<i>`, `hi<i>` (the two halves of the 2R tile elements) and `w<i>` (R taps), so
/// that every index is a name and the driver keeps them in registers.
fn window_code(r: u32) -> Vec<(&'static str, String)> {
    let names = |p: &str| (0..r).map(|i| format!("{p}{i}")).collect::<Vec<_>>();
    let lanes = ["x", "y", "z", "w"];
    // `dst<4q+c> = src[at + q].c` for each of the r/4 vectors.
    let load = |dst: &str, src: &str, at: &str| {
        (0..r / 4)
            .map(|q| {
                let v = format!("{src}[{at} + {q}u]");
                let parts: Vec<String> =
                    (0..4).map(|c| format!("{dst}{} = {dst}v{q}.{};", 4 * q + c, lanes[c as usize])).collect();
                format!("{{ let {dst}v{q} = {v}; {} }}", parts.join(" "))
            })
            .collect::<Vec<_>>()
            .join("\n            ")
    };
    // acc[i] += w[j] * window[i + j], the window being `first` then `second`.
    let step = |first: &str, second: &str| {
        let mut lines = Vec::new();
        for j in 0..r {
            for i in 0..r {
                let v = if i + j < r { format!("{first}{}", i + j) } else { format!("{second}{}", i + j - r) };
                lines.push(format!("a{i} = fma(w{j}, {v}, a{i});"));
            }
        }
        lines.join(" ")
    };
    let decl = |p: &str| names(p).iter().map(|n| format!("var {n}: f32;")).collect::<Vec<_>>().join(" ");
    let store = (0..r / 4)
        .map(|q| {
            let a = (0..4).map(|c| format!("a{}", 4 * q + c)).collect::<Vec<_>>().join(", ");
            format!("if (o + 4u * (base + {q}u) < n) {{ store4(o + 4u * (base + {q}u), n, vec4<f32>({a})); }}")
        })
        .collect::<Vec<_>>()
        .join("\n        ");
    vec![
        ("WINDOW_DECLS", [decl("a"), decl("lo"), decl("hi"), decl("w")].join("\n    ")),
        ("ZERO_ACC", names("a").iter().map(|n| format!("{n} = 0.0;")).collect::<Vec<_>>().join(" ")),
        ("LOAD_LO0", load("lo", "tile", "base")),
        ("LOAD_HI", load("hi", "tile", "base + k + RV")),
        ("LOAD_LO", load("lo", "tile", "base + k + 2u * RV")),
        ("LOAD_W0", load("w", "wt", "k")),
        ("LOAD_W1", load("w", "wt", "k + RV")),
        ("STEP_LO_HI", step("lo", "hi")),
        ("STEP_HI_LO", step("hi", "lo")),
        ("STORE", store),
    ]
}

pub(crate) fn wgsl_spec(problem: &Conv1dProblem, cfg: &Conv1dConfig, variant: Variant) -> WgslSpec {
    let kp = cfg.padded_taps(problem.taps);
    let (sizing, constants) = wgsl_sizing(
        variant,
        &[("BLOCK", "u32", cfg.block as f64), ("TAPS", "u32", problem.taps as f64), ("KP", "u32", kp as f64)],
    );
    let r = cfg.outputs_per_thread.to_string();
    let window = window_code(cfg.outputs_per_thread);
    let derived = if variant == Variant::WgslOverride { "override" } else { "const" };
    let mut slots: Vec<(&str, &str)> = vec![("SIZING", &sizing), ("R", &r), ("DERIVED", derived)];
    slots.extend(window.iter().map(|(k, v)| (*k, v.as_str())));
    WgslSpec {
        name: format!("conv1d_f32_r{}[{variant},taps={},block={}]", cfg.outputs_per_thread, problem.taps, cfg.block),
        source: fill_template(WGSL_TEMPLATE, &slots),
        entry: "conv1d",
        constants,
        workgroup_size: cfg.block,
        // The Rust kernel's layout: tile and halo, and the shifted taps, as vectors.
        static_bytes: cfg.shared_bytes(problem.taps).unwrap_or(u32::MAX),
        subgroups: false,
        f16: false,
    }
}

/// The cuda-static kernel: `conv1d.cu` with the outputs per thread, taps, padded taps and
/// block as defines; its static arrays are the Rust kernel's layout (tile and halo, and
/// the shifted taps, as vectors).
pub fn cuda_source(problem: &Conv1dProblem, cfg: &Conv1dConfig) -> CudaSource {
    CudaSource {
        name: format!("conv1d_f32_r{}[cuda-static,taps={},block={}]", cfg.outputs_per_thread, problem.taps, cfg.block),
        source: CUDA_SOURCE,
        file: "conv1d.cu",
        entry: "conv1d_static",
        defines: vec![
            ("OUTS", cfg.outputs_per_thread.to_string()),
            ("TAPS", problem.taps.to_string()),
            ("KP", cfg.padded_taps(problem.taps).to_string()),
            ("BLOCK", cfg.block.to_string()),
        ],
        static_bytes: cfg.shared_bytes(problem.taps).unwrap_or(u32::MAX),
    }
}

/// The CPU reference in f64 and, per output, the sum of `|w_k x_j|` its rounding error
/// scales with.
pub use dynsmem_reference::conv1d as reference;

/// Conv1d's one validation: `config` for `problem` on `target`, and what it asks for.
/// `prepare` calls it first and the tuner filters with it: outputs per thread among the
/// image's entries and the kernel's shape rules (`Conv1dConfig::fits`), an odd tap count
/// from 3 to [`MAX_TAPS`], WGSL's u32 indices, and the layout.
pub fn check(problem: &Conv1dProblem, config: &Conv1dConfig, target: &Target) -> Result<Footprint> {
    let Conv1dProblem { n, taps } = *problem;
    let entry = entry_name(config.outputs_per_thread).ok_or_else(|| {
        invalid(
            "conv1d_f32",
            format!(
                "outputs_per_thread {} is not in the image (one of {OUTPUTS_PER_THREAD:?})",
                config.outputs_per_thread
            ),
        )
    })?;
    if taps.is_multiple_of(2) || !(3..=MAX_TAPS).contains(&taps) {
        return Err(invalid_problem(entry, format!("taps = {taps}: an odd number from 3 to {MAX_TAPS}")));
    }
    if config.block == 0 {
        return Err(invalid(entry, "block must be at least 1 thread"));
    }
    if !config.fits() {
        return Err(invalid(entry, "block must be at least 1 and outputs per thread a multiple of 4"));
    }
    if target.backend == BackendKind::Wgsl && n > (u32::MAX / 2) as u64 {
        return Err(invalid_problem(entry, format!("n = {n}: the WGSL path indexes with u32")));
    }
    let layout = config.shared_bytes(taps).map_err(|source| Error::Layout { kernel: entry.into(), source })?;
    Footprint::of_variant(
        target.variant,
        (config.block, config.grid(n)),
        || Ok(layout),
        || Ok(cuda_source(problem, config).static_bytes),
        |v| Ok(wgsl_spec(problem, config, v).static_bytes),
    )
}

/// `n` samples drawn from `seed` (uniform in [-1, 1)) through a `taps`-tap filter drawn from it too.
pub fn prepare<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: Conv1dProblem,
    config: Conv1dConfig,
    variant: Variant,
    seed: u64,
) -> Result<Launch<'b, B>> {
    let Conv1dProblem { n, taps } = problem;
    // The one validation (the tuner's filter too), before anything is generated or uploaded.
    let footprint = check(&problem, &config, &Target::of(backend, variant))?;
    let entry = entry_name(config.outputs_per_thread).expect("check refuses an entry not in the image");
    let wgsl = |v: Variant| wgsl_spec(&problem, &config, v);
    let cuda = || cuda_source(&problem, &config);
    let geometry = (Ok(footprint.launch_bytes), footprint.grid, footprint.threads);
    let launch = Launch::prepare(backend, entry, geometry, variant, &wgsl, &cuda)?;
    let mut rng = SplitMix64::new(seed);
    let xs: Vec<f32> = (0..n).map(|_| rng.next_f32() * 2.0 - 1.0).collect();
    let ws: Vec<f32> = (0..taps).map(|_| (rng.next_f32() * 2.0 - 1.0) / taps as f32).collect();
    let (expected, scale) = reference(&xs, &ws);
    let tol = Tolerance::summation::<f32>(taps as u64);
    let check = move |name: &str, got: &[f32]| check_slice(name, &expected, got, |i| scale[i], tol);
    Ok(launch
        .input(&xs)?
        .input(&ws)?
        .output(&vec![f32::NAN; n as usize], check)?
        .arg(n)
        .arg(taps)
        .bytes(2 * n * 4)
        .flops(2.0 * n as f64 * taps as f64))
}

#[cfg(test)]
mod tests {
    #[test]
    fn reference_pads_with_zeros() {
        let (y, _) = super::reference(&[1.0, 2.0, 3.0], &[1.0, 10.0, 100.0]);
        // y[i] = x[i-1] + 10 x[i] + 100 x[i+1]
        assert_eq!(y, vec![210.0, 321.0, 32.0]);
    }
}
