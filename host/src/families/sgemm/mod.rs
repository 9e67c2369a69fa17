//! GEMM, host side: problem, configs, the CPU reference (whole for small shapes, sampled
//! for large ones), the [`Workload`], the static-WGSL form beside it (`sgemm.wgsl`, f32
//! inputs), and cuBLAS as the anchor and the large-shape reference on CUDA ([`cublas`]).
//! The device algorithm, and which of its parameters are launch-time and which compiled
//! in, is documented in `dynsmem_kernels::sgemm`.

pub mod cost;
pub mod cublas;

use dynsmem_kernels::sgemm::SgemmConfig;
use serde::{Deserialize, Serialize};

use crate::backend::{Backend, BackendKind, Variant};
use crate::contract::{CudaSource, FamilyBackend, WgslSpec, fill_template, wgsl_sizing};
use crate::rng::SplitMix64;
use crate::verify::Tolerance;

/// The cuda-static form: the same algorithm in CUDA C with static arrays.
mod check;
mod family;
mod tune;
mod workload;

pub use check::{check, streamk_problem_check, tma_check, tma_problem_check, wgsl_check};

pub use family::{Sgemm, SgemmRun};
pub use tune::SgemmTunable;
pub use workload::{HostInputs, SgemmWorkload, prepare, prepare_entry, prepare_with};

pub const CUDA_SOURCE: &str = include_str!("sgemm.cu");
pub(crate) const WGSL_TEMPLATE: &str = include_str!("sgemm.wgsl");
/// The WGSL entry point's name in records (f16 inputs add `,f16` to its config: they are
/// read as f16 and multiplied in f32, as `hgemm_f16_f32`'s SIMT tile does).
const WGSL_KERNEL: &str = "sgemm_f32";
/// Stages the WGSL form has: one tile, or two (double-buffered through registers; with no
/// asynchronous copy in WGSL a deeper ring would only hold more registers).
pub const WGSL_MAX_STAGES: u32 = 2;
/// 16-byte chunks of each tile one invocation may hold in registers in the two-stage WGSL
/// form (`MAX_LOADS` in `sgemm.wgsl`: function-scope arrays take no `override` size).
pub const WGSL_MAX_STAGED_LOADS: u32 = 8;
/// Floats of padding after each transposed row of the A tile in the WGSL form (one vec4,
/// `A_ROW_PAD` in `sgemm.wgsl`, which says why).
pub const WGSL_A_ROW_PAD: u32 = 4;

/// `alpha` of every run: not 1, so a kernel that ignores it fails.
pub const ALPHA: f32 = 1.5;
/// `beta` of every run: not 0, so `C` is read and accumulated into.
pub const BETA: f32 = -0.5;
/// Above this many multiply-adds the CPU reference checks [`SAMPLES`] entries of `C`
/// instead of all of them.
pub const FULL_REFERENCE_MACS: u64 = 1 << 31;
/// Entries of `C` a sampled check compares (every row and column hit at least once when
/// the matrix is smaller than this).
pub const SAMPLES: usize = 4096;

/// `C (m x n) = ALPHA * A (m x k) * B (k x n) + BETA * C`, row-major; inputs f32, or f16
/// with f32 accumulation and output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SgemmProblem {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub f16_inputs: bool,
}

impl SgemmProblem {
    fn elem_bytes(&self) -> u32 {
        if self.f16_inputs { 2 } else { 4 }
    }
}

/// CUDA, f32: the stream-K tensor-map kernel ([`SgemmConfig::sk`]) at the tile, stages and
/// blocks per multiprocessor the cost model ranks first ([`cost::streamk_default`]); rows of
/// A or B that are not 16-byte aligned are padded as part of each run. Where `m`, `n` or `k`
/// is 0 (no tensor map describes an empty matrix), or on HIP, the k-group kernel's 256 x 128 x
/// 32 with three stages and 16 rows per thread (152064 B) where the tiles fill the GPU (two or
/// more per multiprocessor), else 128 x 64 x 32 with three stages and 8 rows per thread (128
/// threads, 76032 B), split over k where that leaves multiprocessors idle. f16 inputs (8 rows
/// per thread): 128 x 128 x 32 with two stages, or 64 x 128 x 32 with three below two tiles per
/// multiprocessor. 16 x 16 x 8, two stages (4 threads), on the CPU backend.
///
/// WGSL: 128 x 128 x 8, one stage (256 invocations, 8320 B), and 64 x 64 x 16, two stages
/// (64 invocations; untuned), where 128 x 128 tiles leave fewer than two per
/// multiprocessor (132 assumed: Vulkan does not say). On a CPU adapter (lavapipe)
/// WGSL_CPU_ADAPTER_CONFIG. The H100 choices come from tuning runs; their figures and
/// provenance are in `NOTES.md` beside this file.
pub fn default_config<B: FamilyBackend>(backend: &B, problem: &SgemmProblem) -> SgemmConfig {
    if backend.small_configs() {
        return SgemmConfig::new(16, 16, if problem.f16_inputs { 16 } else { 8 }, 2);
    }
    if backend.kind() == BackendKind::Wgsl {
        if backend.info().is_cpu {
            return WGSL_CPU_ADAPTER_CONFIG;
        }
        let sms = backend.info().limits.multiprocessors.unwrap_or(132) as u64;
        let big = SgemmConfig::new(128, 128, 8, 1);
        return if big.grid(problem.m, problem.n) >= 2 * sms { big } else { SgemmConfig::new(64, 64, 16, 2) };
    }
    let limits = &backend.info().limits;
    if !problem.f16_inputs
        && backend.kind() == BackendKind::Cuda
        && tma_problem_check(problem).is_ok()
        && let Some(cfg) = cost::streamk_default(problem, limits)
    {
        return cfg;
    }
    let sms = limits.multiprocessors.unwrap_or(132) as u64;
    let (big, small) = if problem.f16_inputs {
        (SgemmConfig::new(128, 128, 32, 2), SgemmConfig::new(64, 128, 32, 3))
    } else {
        (SgemmConfig::new(256, 128, 32, 3).with_tm(16), SgemmConfig::new(128, 64, 32, 3))
    };
    let fits = big.shared_bytes(problem.elem_bytes()).is_ok_and(|b| b <= limits.launch_shared_max);
    if fits && big.grid(problem.m, problem.n) >= 2 * sms {
        return big;
    }
    small.with_splits(default_splits(&small, problem, sms))
}

/// Split-K for `cfg` where its tiles leave multiprocessors idle: enough splits to give
/// about one block per multiprocessor (not two: see `NOTES.md`), each keeping at least [`MIN_SPLIT_K_TILES`]
/// k-tiles (shorter splits spend their time filling the pipeline), at most
/// [`MAX_SPLITS`](dynsmem_kernels::sgemm::MAX_SPLITS); 1 where the tiles already fill the
/// GPU.
pub fn default_splits(cfg: &SgemmConfig, problem: &SgemmProblem, sms: u64) -> u32 {
    let tiles = cfg.grid(problem.m, problem.n);
    let by_sms = sms / tiles.max(1);
    let by_depth = (problem.k.div_ceil(cfg.bk.max(1)) / MIN_SPLIT_K_TILES) as u64;
    by_sms.min(by_depth).clamp(1, dynsmem_kernels::sgemm::MAX_SPLITS as u64) as u32
}

/// Fewest k-tiles a split of the default config takes ([`default_splits`]).
pub const MIN_SPLIT_K_TILES: u32 = 4;

/// The cuda-static kernel: `sgemm.cu` with the block tile, stages and input type as
/// defines (the 8 x 8 thread tile is compiled in, as in the Rust kernel); its static arrays
/// are the Rust kernel's layout (the ring of A and B tiles as 16-byte chunks).
pub fn cuda_source(problem: &SgemmProblem, cfg: &SgemmConfig) -> CudaSource {
    let entry = if problem.f16_inputs { "hgemm_f16_f32" } else { "sgemm_f32" };
    CudaSource {
        name: format!("{entry}[cuda-static,{}x{}x{},stages={}]", cfg.bm, cfg.bn, cfg.bk, cfg.stages),
        source: CUDA_SOURCE,
        file: "sgemm.cu",
        entry: "sgemm_static",
        defines: vec![
            ("BM", cfg.bm.to_string()),
            ("BN", cfg.bn.to_string()),
            ("BK", cfg.bk.to_string()),
            ("STAGES", cfg.stages.to_string()),
            ("F16", (problem.f16_inputs as u32).to_string()),
        ],
        static_bytes: cfg.shared_bytes(problem.elem_bytes()).unwrap_or(u32::MAX),
    }
}

/// The config `variant` runs for `cfg` (see [`crate::contract::fit_static`]): the same block tile
/// with shallower k-tiles (keeping the stages), then fewer stages, then smaller block
/// tiles; each kept to what the kernel can run, with 8 rows per thread and one split in the
/// static forms (noted when `cfg` asked otherwise).
pub fn fit_config<B: Backend>(
    backend: &B,
    variant: Variant,
    problem: &SgemmProblem,
    cfg: SgemmConfig,
) -> (SgemmConfig, Option<String>) {
    let eb = problem.elem_bytes();
    // The static forms compute 8 rows per thread, and have no tensor-map copies.
    let rows_note = if variant != Variant::LaunchSized && cfg.tma {
        Some(format!("the {variant} form has no tensor-map copies: the tensor-map tile ran as the 8 x 8 k-group tile"))
    } else {
        (variant != Variant::LaunchSized && cfg.tm != 8)
            .then(|| format!("the {variant} form computes 8 rows per thread: tm = {} ran as 8", cfg.tm))
    };
    // Split-K is the launch-sized kernels' (the static forms have no workspace sum), and so
    // is stream-K (a tensor-map kernel).
    let splits_note = (variant != Variant::LaunchSized && cfg.splits > 1)
        .then(|| format!("the {variant} form has no split-K: {} splits ran as 1", cfg.splits));
    let rows_note = join_notes(rows_note, splits_note);
    // (Every note is of a static form: those run 8 rows, no tensor maps, one split.)
    let cfg = if rows_note.is_some() { SgemmConfig::new(cfg.bm, cfg.bn, cfg.bk, cfg.stages) } else { cfg };
    let mut fallbacks = Vec::new();
    for (bm, bn) in [(cfg.bm, cfg.bn), (cfg.bm, cfg.bn / 2), (cfg.bm / 2, cfg.bn / 2)] {
        for stages in (1..=cfg.stages).rev() {
            for bk in std::iter::once(cfg.bk).chain(crate::contract::halvings(cfg.bk, 4)) {
                fallbacks.push(SgemmConfig::new(bm, bn, bk, stages).with_tm(cfg.tm));
            }
        }
    }
    fallbacks.retain(|c| c.fits(eb) && *c != cfg);
    let limit = backend.info().limits.static_shared_max;
    let (c, note) = crate::contract::fit_static(variant, limit, cfg, fallbacks, |c| c.shared_bytes(eb).ok());
    (c, join_notes(rows_note, note))
}

/// Two optional notes as one, `; ` between them.
fn join_notes(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    }
}

/// The WGSL default on a CPU Vulkan adapter (lavapipe): 64 x 64 x 8 (64 invocations, 8448 B
/// with two stages), chosen by tuning both variants on lavapipe (see `NOTES.md`).
pub const WGSL_CPU_ADAPTER_CONFIG: SgemmConfig = SgemmConfig::new(64, 64, 8, 2);

/// 16-byte chunks of the A and of the B tile each invocation copies per k-tile in the WGSL
/// form (`LOADS_A`, `LOADS_B` of `sgemm.wgsl`).
pub fn wgsl_loads(cfg: &SgemmConfig) -> (u32, u32) {
    let threads = cfg.threads().max(1) as u64;
    let a = (cfg.bm as u64 * cfg.bk as u64 / 4).div_ceil(threads);
    let b = (cfg.bk as u64 * cfg.bn as u64 / 4).div_ceil(threads);
    (a.min(u32::MAX as u64) as u32, b.min(u32::MAX as u64) as u32)
}

/// Bytes of the WGSL form's `var<workgroup>` arrays: `stages` transposed A tiles of `bk`
/// rows of `bm + WGSL_A_ROW_PAD` floats and `stages` B tiles of `bk x bn` floats (u64: the
/// product of a fuzzed config does not fit u32).
pub fn wgsl_static_bytes(cfg: &SgemmConfig) -> u64 {
    let (bm, bn, bk, s) = (cfg.bm as u64, cfg.bn as u64, cfg.bk as u64, cfg.stages as u64);
    s * bk * (bm + WGSL_A_ROW_PAD as u64) * 4 + s * bk * bn * 4
}

/// The WGSL pipeline of `cfg` (checked by [`wgsl_check`] first), for f16 inputs where
/// `f16_inputs` (read as `f16` and converted to f32 as they are read: wgpu's SHADER_F16).
pub fn wgsl_spec(cfg: &SgemmConfig, variant: Variant, f16_inputs: bool) -> WgslSpec {
    let (la, lb) = wgsl_loads(cfg);
    let (sizing, constants) = wgsl_sizing(
        variant,
        &[
            ("BM", "u32", cfg.bm as f64),
            ("BN", "u32", cfg.bn as f64),
            ("BK", "u32", cfg.bk as f64),
            ("STAGES", "u32", cfg.stages as f64),
            ("THREADS", "u32", cfg.threads() as f64),
            ("LOADS_A", "u32", la as f64),
            ("LOADS_B", "u32", lb as f64),
        ],
    );
    WgslSpec {
        name: format!(
            "{WGSL_KERNEL}[{variant},bm={},bn={},bk={},stages={}{}]",
            cfg.bm,
            cfg.bn,
            cfg.bk,
            cfg.stages,
            if f16_inputs { ",f16" } else { "" }
        ),
        source: fill_template(
            WGSL_TEMPLATE,
            &[
                ("SIZING", &sizing),
                ("ENABLE", if f16_inputs { "enable f16;" } else { "" }),
                ("AB", if f16_inputs { "f16" } else { "f32" }),
            ],
        ),
        entry: "sgemm",
        constants,
        workgroup_size: cfg.threads(),
        static_bytes: wgsl_static_bytes(cfg).min(u32::MAX as u64) as u32,
        subgroups: false,
        f16: f16_inputs,
    }
}

/// Workgroups of the WGSL form for an `m x n` result: one per tile up to the adapter's
/// `max_grid_x`; the kernel walks the tiles past it (a grid-stride loop).
pub fn wgsl_grid(cfg: &SgemmConfig, m: u32, n: u32, max_grid_x: u64) -> u32 {
    cfg.grid(m, n).min(max_grid_x).min(u32::MAX as u64).max(1) as u32
}

/// Largest magnitude of the integer inputs at depth `k` for which every result is exact:
/// each `|a b| <= mag^2`, so every partial sum of the k products, in any order and with
/// any FMA contraction, is an integer of at most `mag^2 k <= 2^21`, and `ALPHA` times it
/// plus `BETA c` a multiple of 1/2 below 2^23: all exact in `f32` (and the inputs in f16).
/// `None` past `k = 2^21`, where the inputs are uniform floats and the check has a bound.
pub fn exact_magnitude(k: u32) -> Option<u32> {
    [4u32, 2, 1].into_iter().find(|&m| (m * m) as u64 * k as u64 <= 1 << 21)
}

/// How results are compared with the reference at depth `k`: exactly where the inputs
/// are exact integers ([`exact_magnitude`]), so that one dropped, doubled or misplaced
/// term (a product of at least 1) fails; otherwise each entry is a chain of `k` dependent
/// FMAs plus `ALPHA` and `BETA`, held to the classic summation bound.
pub fn tolerance(k: u32) -> Tolerance {
    if exact_magnitude(k).is_some() { Tolerance::EXACT } else { Tolerance::summation::<f32>(k as u64 + 2) }
}

/// The inputs: nonzero integers of magnitude up to [`exact_magnitude`] (exact in f32 and
/// f16, so the kernel and the f64 reference multiply the same values), or, for deeper
/// problems, uniform in [-1, 1) (rounded to f16 when the problem asks for f16).
///
/// Integer inputs cannot show a kernel that computes in reduced precision (TF32, f16
/// products of f32 inputs); the f32 entries use plain FMAs only.
fn inputs(problem: &SgemmProblem, seed: u64) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut rng = SplitMix64::new(seed);
    let mag = exact_magnitude(problem.k);
    let mut fill = |len: u64| -> Vec<f32> {
        (0..len)
            .map(|_| match mag {
                Some(m) => rng.signed_nonzero(m) as f32,
                None => {
                    let v = rng.next_f32() * 2.0 - 1.0;
                    if problem.f16_inputs { half::f16::from_f32(v).to_f32() } else { v }
                }
            })
            .collect()
    };
    let (m, n, k) = (problem.m as u64, problem.n as u64, problem.k as u64);
    let a = fill(m * k);
    let b = fill(k * n);
    let c = fill(m * n);
    (a, b, c)
}

/// `ALPHA * sum_k a[i][k] b[k][j] + BETA * c[i][j]` in f64, and the scale its rounding
/// error grows with (`|ALPHA| sum |a b| + |BETA c|`).
pub fn reference_entry(a: &[f32], b: &[f32], c: &[f32], n: usize, k: usize, i: usize, j: usize) -> (f64, f64) {
    dynsmem_reference::gemm_entry((a, b, c), (n, k), (ALPHA, BETA), (i, j))
}

/// The entries of `C` a check compares: all of them for small problems, else [`SAMPLES`]
/// spread over rows and columns (the corners included).
pub fn checked_entries(problem: &SgemmProblem, seed: u64) -> Vec<(usize, usize)> {
    let (m, n, k) = (problem.m as usize, problem.n as usize, problem.k as u64);
    if m == 0 || n == 0 {
        return Vec::new();
    }
    if (m as u64) * (n as u64) * k.max(1) <= FULL_REFERENCE_MACS {
        return (0..m * n).map(|e| (e / n, e % n)).collect();
    }
    let mut rng = SplitMix64::new(seed ^ 0x5eed);
    let mut picks = vec![(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)];
    for s in 0..SAMPLES {
        // Row s mod m and a random column, then the reverse, so every row and column of a
        // matrix smaller than SAMPLES is hit.
        if s % 2 == 0 {
            picks.push((s / 2 % m, rng.below(n as u64) as usize));
        } else {
            picks.push((rng.below(m as u64) as usize, s / 2 % n));
        }
    }
    picks
}

#[cfg(test)]
mod tests {
    use super::workload::device_words;
    use super::*;

    #[test]
    fn sampled_entries_cover_rows_columns_and_corners() {
        let p = SgemmProblem { m: 5000, n: 3000, k: 1000, f16_inputs: false };
        let picks = checked_entries(&p, 1);
        assert_eq!(picks.len(), SAMPLES + 4);
        assert!(picks.contains(&(4999, 2999)));
        let rows: std::collections::HashSet<_> = picks.iter().map(|p| p.0).collect();
        assert!(rows.len() >= SAMPLES / 2);
        let small = SgemmProblem { m: 3, n: 2, k: 7, f16_inputs: true };
        assert_eq!(checked_entries(&small, 1).len(), 6);
    }

    #[test]
    fn reference_entry_is_alpha_ab_plus_beta_c() {
        // [1 2] x [3; 4] = 11; 1.5 * 11 - 0.5 * 2 = 15.5
        let (v, s) = reference_entry(&[1.0, 2.0], &[3.0, 4.0], &[2.0], 1, 2, 0, 0);
        assert_eq!(v, 15.5);
        assert_eq!(s, 1.5 * 11.0 + 1.0);
    }

    #[test]
    fn wgsl_forms_of_one_config_differ_only_in_sizing() {
        let cfg = SgemmConfig::new(128, 128, 8, 2);
        // 2 x 8 x (128 + 4) + 2 x 8 x 128 floats.
        assert_eq!(wgsl_static_bytes(&cfg), 16640);
        assert_eq!(wgsl_loads(&cfg), (1, 1));
        let lit = wgsl_spec(&cfg, Variant::WgslLiteral, false);
        let ovr = wgsl_spec(&cfg, Variant::WgslOverride, false);
        assert!(lit.source.contains("const BM: u32 = 128u;") && lit.constants.is_empty());
        assert!(ovr.source.contains("override BM: u32;") && ovr.constants.contains(&("THREADS", 256.0)));
        assert!(!lit.source.contains("{{") && !ovr.source.contains("{{"));
        assert_eq!((lit.static_bytes, lit.workgroup_size), (16640, 256));
        let strip = |t: &str| t.lines().filter(|l| !l.starts_with("const ") && !l.starts_with("override ")).count();
        assert_eq!(strip(&lit.source), strip(&ovr.source));
    }

    #[test]
    fn wgsl_check_refuses_what_the_form_cannot_run() {
        let ok = |bm, bn, bk, stages| wgsl_check(&SgemmConfig::new(bm, bn, bk, stages));
        assert!(ok(128, 128, 8, 2).is_ok());
        assert!(ok(8, 8, 4, 2).is_ok());
        // 32 x 32 x 16: 8 chunks of each tile per invocation, the most two stages hold.
        assert!(ok(32, 32, 16, 2).is_ok());
        assert!(ok(32, 32, 32, 2).unwrap_err().contains("registers"));
        assert!(ok(32, 32, 32, 1).is_ok());
        assert!(ok(64, 64, 8, 3).unwrap_err().contains("1 or 2 stages"));
        assert!(ok(12, 64, 8, 1).is_err());
        assert!(ok(64, 64, 6, 1).is_err());
        // Grid capped at the dispatch limit, at least one workgroup.
        let c = SgemmConfig::new(8, 8, 4, 1);
        assert_eq!(wgsl_grid(&c, 4096, 4096, 65535), 65535);
        assert_eq!(wgsl_grid(&c, 0, 0, 65535), 1);
    }

    #[test]
    fn f16_words_pack_two_halves() {
        let w = device_words(&[1.0, -2.0, 0.5], true);
        assert_eq!(w, vec![0x3c00 | (0xc000 << 16), 0x3800]);
    }
}
