//! 2-D stencil (blur), host side: problem, configs, the WGSL form beside it
//! (`stencil2d.wgsl`), the CPU reference and the [`Workload`]. The device algorithm is
//! documented in `dynsmem_kernels::stencil2d`.

use dynsmem_kernels::stencil2d::{ANY_RADIUS_ENTRY, HALO, MAX_RADIUS, RADII, Stencil2dConfig, const_entry};
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

pub use family::STENCIL2D;

pub(crate) const WGSL_TEMPLATE: &str = include_str!("stencil2d.wgsl");
/// The cuda-static form: the same algorithm in CUDA C with static arrays.
pub const CUDA_SOURCE: &str = include_str!("stencil2d.cu");

/// Which weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Blur {
    /// All weights `1 / K^2`.
    Box,
    /// `exp(-(dx^2 + dy^2) / (2 sigma^2))`, normalised, `sigma = (radius + 1) / 2`.
    Gaussian,
}

/// A `width x height` image through a `(2 radius + 1)^2` stencil.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Stencil2dProblem {
    pub width: u32,
    pub height: u32,
    pub radius: u32,
    pub blur: Blur,
}

/// 128 x 32 tiles of 128 threads (32 groups of four columns x 4 strips of 8 rows): a good
/// tile for both radii on the H100 (tuning provenance in `NOTES.md`), and small enough for
/// lavapipe's 32 KB of static workgroup memory; the WGSL twin's 64 x 8 tiles of 64 threads,
/// tuned on the H200 (`NOTES.md`); 16 x 8 tiles of 8 threads on the CPU backend.
pub fn default_config<B: FamilyBackend>(backend: &B) -> Stencil2dConfig {
    default_for(backend.kind(), backend.small_configs())
}

/// [`default_config`] on a backend of `kind` that asks for small configs (`small`) or not.
pub fn default_for(kind: BackendKind, small: bool) -> Stencil2dConfig {
    if small {
        Stencil2dConfig { block: 8, tile_w: 16, tile_h: 8 }
    } else if kind == BackendKind::Wgsl {
        Stencil2dConfig { block: 64, tile_w: 64, tile_h: 8 }
    } else {
        Stencil2dConfig { block: 128, tile_w: 128, tile_h: 32 }
    }
}

/// The stencil's weights, row-major `K x K`.
pub fn weights(radius: u32, blur: Blur) -> Vec<f32> {
    let k = (2 * radius + 1) as i32;
    let r = radius as i32;
    let raw: Vec<f64> = match blur {
        Blur::Box => vec![1.0; (k * k) as usize],
        Blur::Gaussian => {
            let sigma = (radius as f64 + 1.0) / 2.0;
            (0..k * k)
                .map(|i| {
                    let (dx, dy) = ((i % k - r) as f64, (i / k - r) as f64);
                    (-(dx * dx + dy * dy) / (2.0 * sigma * sigma)).exp()
                })
                .collect()
        }
    };
    let sum: f64 = raw.iter().sum();
    raw.iter().map(|w| (w / sum) as f32).collect()
}

/// The unrolled registers of the WGSL form for `radius` (1 or 2), as the text of
/// `stencil2d.wgsl`'s slots: the weights are scalars `w<i>` and the window's slot `j`
/// (tile row `y_first + j` mod K) is the scalars `s<j>_<i>`, so that every index is a
/// name and the driver keeps them in registers, as the Rust kernel's constant-indexed
/// arrays are.
fn window_code(radius: u32) -> Vec<(&'static str, String)> {
    let k = 2 * radius + 1;
    let ww = 4 + 2 * radius;
    let halo = dynsmem_kernels::stencil2d::HALO;
    let lanes = ["x", "y", "z", "w"];
    let join = |v: Vec<String>, sep: &str| v.join(sep);
    // Slot `slot` = window row of tile row `tr`: columns HALO - R .. of the group's three vectors.
    let read_row = |slot: u32, tr: &str| {
        let sets = (0..ww)
            .map(|i| {
                let e = halo - radius + i;
                format!("s{slot}_{i} = v{}.{};", e / 4, lanes[(e % 4) as usize])
            })
            .collect();
        format!(
            "{{ let b = ({tr}) * PITCH + g; let v0 = tile[b]; let v1 = tile[b + 1u]; let v2 = tile[b + 2u]; {} }}",
            join(sets, " ")
        )
    };
    let decls = (0..k * k)
        .map(|i| format!("var w{i}: f32;"))
        .chain((0..k).flat_map(|j| (0..ww).map(move |i| format!("var s{j}_{i}: f32;"))))
        .collect();
    let steps = (0..k)
        .map(|u| {
            // Output column c: one accumulator per window row, then their sum, as in the Rust kernel.
            let outs: Vec<String> = (0..4)
                .map(|c| {
                    let rows: Vec<String> = (0..k)
                        .map(|dy| {
                            let slot = (u + dy) % k;
                            (0..k).fold("0.0".to_string(), |acc, dx| {
                                format!("fma(w{}, s{slot}_{}, {acc})", dy * k + dx, c + dx)
                            })
                        })
                        .collect();
                    format!("out.{} = {};", lanes[c as usize], rows.join(" + "))
                })
                .collect();
            format!(
                "if (r < strip) {{\n                {}\n                var out: vec4<f32>;\n                {}\n                \
                 let y = y0 + y_first + r;\n                if (y < height && x < width) {{ store(y, x, width, vec_rows, out); }}\n                \
                 r++;\n            }}",
                read_row((u + k - 1) % k, &format!("y_first + r + {}u", k - 1)),
                outs.join("\n                ")
            )
        })
        .collect();
    vec![
        ("DECLS", join(decls, " ")),
        ("LOAD_WEIGHTS", join((0..k * k).map(|i| format!("w{i} = wt[{i}u];")).collect(), " ")),
        ("FIRST_ROWS", join((0..k - 1).map(|j| read_row(j, &format!("y_first + {j}u"))).collect(), "\n        ")),
        ("STEPS", join(steps, "\n            ")),
    ]
}

pub(crate) fn wgsl_spec(problem: &Stencil2dProblem, cfg: &Stencil2dConfig, variant: Variant) -> WgslSpec {
    let (sizing, constants) = wgsl_sizing(
        variant,
        &[
            ("BLOCK", "u32", cfg.block as f64),
            ("TILE_W", "u32", cfg.tile_w as f64),
            ("TILE_H", "u32", cfg.tile_h as f64),
        ],
    );
    let radius = problem.radius.to_string();
    let derived = if variant == Variant::WgslOverride { "override" } else { "const" };
    let window = window_code(problem.radius);
    let mut slots: Vec<(&str, &str)> = vec![("SIZING", &sizing), ("RADIUS", &radius), ("DERIVED", derived)];
    slots.extend(window.iter().map(|(k, v)| (*k, v.as_str())));
    WgslSpec {
        name: format!(
            "stencil2d_f32_r{}[{variant},tile={}x{},block={}]",
            problem.radius, cfg.tile_w, cfg.tile_h, cfg.block
        ),
        source: fill_template(WGSL_TEMPLATE, &slots),
        entry: "stencil2d",
        constants,
        workgroup_size: cfg.block,
        static_bytes: twin_static_bytes(problem, cfg),
        subgroups: false,
        f16: false,
    }
}

/// Bytes of the twins' static arrays: the bordered tile as vectors ([`HALO`] columns each
/// side), then the `K x K` weights.
pub fn twin_static_bytes(problem: &Stencil2dProblem, cfg: &Stencil2dConfig) -> u32 {
    let r = problem.radius as u64;
    let pitch = (cfg.tile_w / 4 + 2 * HALO / 4) as u64;
    let bytes = pitch * (cfg.tile_h as u64 + 2 * r) * 16 + (2 * r + 1).pow(2) * 4;
    bytes.min(u32::MAX as u64) as u32
}

/// The cuda-static kernel: `stencil2d.cu` with the radius, tile and block as defines; its
/// static arrays are the bordered tile as vectors and the weights ([`twin_static_bytes`]).
pub fn cuda_source(problem: &Stencil2dProblem, cfg: &Stencil2dConfig) -> CudaSource {
    CudaSource {
        name: format!(
            "stencil2d_f32_r{}[cuda-static,tile={}x{},block={}]",
            problem.radius, cfg.tile_w, cfg.tile_h, cfg.block
        ),
        source: CUDA_SOURCE,
        file: "stencil2d.cu",
        entry: "stencil2d_static",
        defines: vec![
            ("RADIUS", problem.radius.to_string()),
            ("TILE_W", cfg.tile_w.to_string()),
            ("TILE_H", cfg.tile_h.to_string()),
            ("BLOCK", cfg.block.to_string()),
        ],
        static_bytes: twin_static_bytes(problem, cfg),
    }
}

/// The CPU reference in f64 (edges clamped) and each output's error scale `sum |w x|`.
pub use dynsmem_reference::stencil2d as reference;

/// The entry point that runs `radius` for `variant`: the radius's own where the image has
/// one ([`RADII`]), else the any-radius entry (launch-sized only, radius 1 to
/// [`MAX_RADIUS`]); the twins are written for the radii of [`RADII`] alone.
pub fn entry(radius: u32, variant: Variant) -> Result<&'static str> {
    match (const_entry(radius), variant) {
        (Some(e), _) => Ok(e),
        (None, Variant::LaunchSized) if (1..=MAX_RADIUS).contains(&radius) => Ok(ANY_RADIUS_ENTRY),
        (None, Variant::LaunchSized) => Err(invalid_problem(
            ANY_RADIUS_ENTRY,
            format!("radius {radius} is outside 1..={MAX_RADIUS}, the radii the launch-sized stencil takes"),
        )),
        (None, v) => Err(invalid_problem(
            ANY_RADIUS_ENTRY,
            format!(
                "radius {radius}: the {v} twin is written for radii {RADII:?} (its window is registers named at \
                 compile time); the launch-sized stencil runs radius 1 to {MAX_RADIUS}"
            ),
        )),
    }
}

/// The stencil's one validation: `config` for `problem` on `target`, and what it asks for.
/// `prepare` calls it first and the tuner filters with it: a radius the variant runs
/// ([`entry`]), the threads dividing the tile (`Stencil2dConfig::fits`), WGSL's u32 indices,
/// and the layout.
pub fn check(problem: &Stencil2dProblem, config: &Stencil2dConfig, target: &Target) -> Result<Footprint> {
    let Stencil2dProblem { width, height, radius, .. } = *problem;
    let entry = entry(radius, target.variant)?;
    if !config.fits() {
        return Err(invalid(
            entry,
            format!(
                "tile_w must be a multiple of 4, block a multiple of tile_w / 4 and tile_h a multiple of \
                 block / (tile_w / 4) (got {config:?})"
            ),
        ));
    }
    let pixels = width as u64 * height as u64;
    if target.backend == BackendKind::Wgsl && pixels > (u32::MAX / 2) as u64 {
        return Err(invalid_problem(entry, format!("{width} x {height}: the WGSL path indexes with u32")));
    }
    let layout = config.shared_bytes(radius).map_err(|source| Error::Layout { kernel: entry.into(), source })?;
    Footprint::of_variant(
        target.variant,
        (config.block, config.grid(width, height)),
        || Ok(layout),
        || Ok(cuda_source(problem, config).static_bytes),
        |v| Ok(wgsl_spec(problem, config, v).static_bytes),
    )
}

/// A `width x height` image drawn from `seed` (uniform in [0, 1)) through the problem's blur.
pub fn prepare<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: Stencil2dProblem,
    config: Stencil2dConfig,
    variant: Variant,
    seed: u64,
) -> Result<Launch<'b, B>> {
    let Stencil2dProblem { width, height, radius, blur } = problem;
    // The one validation (the tuner's filter too), before anything is generated or uploaded.
    let footprint = check(&problem, &config, &Target::of(backend, variant))?;
    let entry = entry(radius, variant)?;
    let pixels = width as u64 * height as u64;
    let wgsl = |v: Variant| wgsl_spec(&problem, &config, v);
    let cuda = || cuda_source(&problem, &config);
    let geometry = (Ok(footprint.launch_bytes), footprint.grid, footprint.threads);
    let launch = Launch::prepare(backend, entry, geometry, variant, &wgsl, &cuda)?;
    let mut rng = SplitMix64::new(seed);
    let image: Vec<f32> = (0..pixels).map(|_| rng.next_f32()).collect();
    let ws = weights(radius, blur);
    let (expected, scale) = reference(&image, width as usize, height as usize, radius as usize, &ws);
    let taps = (2 * radius as u64 + 1).pow(2);
    let check = move |name: &str, got: &[f32]| {
        check_slice(name, &expected, got, |i| scale[i], Tolerance::summation::<f32>(taps))
    };
    let launch = launch
        .input(&image)?
        .input(&ws)?
        .output(&vec![f32::NAN; pixels as usize], check)?
        .arg(width)
        .arg(height)
        .arg(config.tile_w)
        .arg(config.tile_h)
        .bytes(2 * pixels * 4);
    // The any-radius entry takes the radius as its last argument.
    Ok(if entry == ANY_RADIUS_ENTRY { launch.arg(radius) } else { launch })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_are_normalised_and_the_reference_keeps_constants() {
        for blur in [Blur::Box, Blur::Gaussian] {
            for r in 1..=5 {
                let w = weights(r, blur);
                assert!((w.iter().map(|&v| v as f64).sum::<f64>() - 1.0).abs() < 1e-6);
                // A constant image stays constant, edges included (clamped).
                let (out, _) = reference(&[0.5; 12], 4, 3, r as usize, &w);
                assert!(out.iter().all(|v| (v - 0.5).abs() < 1e-6));
            }
        }
    }
}
