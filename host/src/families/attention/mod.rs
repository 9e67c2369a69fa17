//! Attention forward, host side: problem, validation, inputs, the CPU reference (f64, every
//! row for small problems, sampled rows for large ones), and the [`Workload`]. The device
//! algorithms, and which of their parameters are launch-time and which compiled in:
//! `dynsmem_kernels::attention`.
//!
//! `O = softmax(Q K^T / sqrt(D)) V` and the row log-sum-exp, per (batch, head), `Q`, `K`, `V`,
//! `O` as `[batch, heads, seq, D]` 16-bit tensors. The wgmma kernel runs on compute
//! capability 9.0 with an `sm_90a` image; the SIMT kernel on every backend with the
//! launch-sized Rust kernels (the CPU backend included). There is no cuda-static or WGSL
//! twin yet (`NOTES.md`). PyTorch's SDPA is the anchor, run beside the CLI by `sdpa.py`.

pub mod backward;
mod family;
mod tune;

use std::sync::Arc;

use dynsmem_kernels::attention::{AttentionConfig, AttentionKind, FIXED, entry_name};
use dynsmem_reference::attention::{ForwardRow as RowReference, Shape, forward_row};
use serde::{Deserialize, Serialize};

pub use family::{Attention, AttentionRun, default_config};
pub use tune::AttentionTunable;

use crate::backend::{AnyBackend, Arg, Buffer, TensorSwizzle, Variant};
use crate::contract::{FamilyBackend, KernelInfo, Prepared, Workload, invalid};
pub use crate::element::Half;
use crate::element::pack_halves;
use crate::error::{Error, Result};
use crate::rng::SplitMix64;
use crate::verify::{MatrixEntry, Tolerance, check_matrix_entries};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AttentionProblem {
    pub batch: u32,
    pub heads: u32,
    /// Queries and keys per head.
    pub seq: u32,
    /// Head dimension: 64 or 128.
    pub d: u32,
    pub dtype: Half,
    /// Query `i` sees keys `0..=i` only.
    pub causal: bool,
}

impl AttentionProblem {
    /// Heads of the whole batch: `batch x heads`.
    pub fn bh(&self) -> u64 {
        self.batch as u64 * self.heads as u64
    }
    /// Rows of `Q` (and of `K`, `V`, `O`) over all heads.
    pub fn rows(&self) -> u64 {
        self.bh() * self.seq as u64
    }
    /// FlashAttention's count: `4 B H S^2 D` (two products), halved under a causal mask.
    pub fn flops(&self) -> f64 {
        let full = 4.0 * self.bh() as f64 * self.seq as f64 * self.seq as f64 * self.d as f64;
        if self.causal { full / 2.0 } else { full }
    }
}

/// Above this many multiply-adds of the reference the check takes [`SAMPLES`] rows.
pub const FULL_REFERENCE_MACS: u64 = 1 << 28;
/// Rows a sampled check compares (besides the first and last row of the first and last
/// head).
pub const SAMPLES: usize = 384;

/// Magnitudes of the uniform inputs: `Q` and `K` in `[-2, 2]` (scores of standard deviation
/// about 1.3 at any `D`), `V` in `[-1, 1]`, each rounded to the input type.
const QK_RANGE: f32 = 2.0;

/// The shape of `p`'s tensors as the reference takes it.
pub(crate) fn shape(p: &AttentionProblem) -> Shape {
    Shape { seq: p.seq as usize, d: p.d as usize, causal: p.causal }
}

/// The reference of one row: `O`'s entries, the error each may have, `lse` and its error
/// (the bounds: [`forward_row`]).
fn reference_row(p: &AttentionProblem, q: &[f32], k: &[f32], v: &[f32], head: usize, row: usize) -> RowReference {
    reference_row_without(p, [q, k, v], head, row, None)
}

/// [`reference_row`] with key `skip` left out (the tests' one wrong term).
fn reference_row_without(
    p: &AttentionProblem,
    tensors: [&[f32]; 3],
    head: usize,
    row: usize,
    skip: Option<usize>,
) -> RowReference {
    forward_row(shape(p), p.dtype.unit_roundoff(), tensors, head, row, skip)
}

/// The inputs of `(problem, seed)` as values (exact in the input type): Q, K, V.
fn inputs(p: &AttentionProblem, seed: u64) -> [Vec<f32>; 3] {
    let len = (p.rows() * p.d as u64) as usize;
    let make = |range: f32, stream: u64| -> Vec<f32> {
        let mut rng = SplitMix64::new(seed ^ stream);
        (0..len).map(|_| p.dtype.value(p.dtype.bits(range * (2.0 * rng.next_f32() - 1.0)))).collect()
    };
    [make(QK_RANGE, 0x51), make(QK_RANGE, 0x4B), make(1.0, 0x56)]
}

/// The (head, row) pairs a check compares: all of them for small problems, else the first
/// and last rows of the first and last heads and [`SAMPLES`] others from the seed.
fn checked_rows(p: &AttentionProblem, seed: u64) -> Vec<(usize, usize)> {
    let (bh, seq) = (p.bh() as usize, p.seq as usize);
    let macs = p.rows() * p.seq as u64 * p.d as u64;
    if macs <= FULL_REFERENCE_MACS {
        return (0..bh).flat_map(|h| (0..seq).map(move |r| (h, r))).collect();
    }
    let mut rng = SplitMix64::new(seed ^ 0x5A);
    let mut picks = vec![(0, 0), (0, seq - 1), (bh - 1, 0), (bh - 1, seq - 1)];
    picks.extend((0..SAMPLES).map(|_| (rng.below(bh as u64) as usize, rng.below(seq as u64) as usize)));
    picks
}

/// A problem's inputs as the device gets them, and the reference of the checked rows.
pub struct HostInputs {
    q: Vec<u16>,
    k: Vec<u16>,
    v: Vec<u16>,
    /// `((row of O, column), reference, allowed error)` of each checked entry of `O`.
    out: Vec<MatrixEntry>,
    /// `((row, 0), reference, allowed error)` of each checked `lse`.
    lse: Vec<MatrixEntry>,
}

impl HostInputs {
    pub fn new(p: &AttentionProblem, seed: u64) -> HostInputs {
        let [q, k, v] = inputs(p, seed);
        let picks = checked_rows(p, seed);
        let refs = crate::par::map(picks.len(), |i| reference_row(p, &q, &k, &v, picks[i].0, picks[i].1));
        let (mut out, mut lse) = (Vec::new(), Vec::new());
        for (&(head, row), r) in picks.iter().zip(&refs) {
            let at = head * p.seq as usize + row;
            out.extend((0..p.d as usize).map(|i| ((at, i), r.out[i], r.out_err[i])));
            lse.push(((at, 0), r.lse, r.lse_err));
        }
        let bits = |x: &[f32]| x.iter().map(|&x| p.dtype.bits(x)).collect();
        HostInputs { q: bits(&q), k: bits(&k), v: bits(&v), out, lse }
    }
}

/// Each entry's error is its own bound: [`check_matrix_entries`] with this tolerance allows
/// exactly the entry's `allowed error`.
const PER_ENTRY: Tolerance = Tolerance { rtol: 1.0, atol: 0.0 };

/// The rules a config and problem must meet before anything is built, as one message
/// naming the kernel: what the tuner's filter, `run` and `bench` all apply. `Ok` is the
/// entry point that runs them.
pub fn validate(
    p: &AttentionProblem,
    cfg: &AttentionConfig,
    fixed: bool,
) -> std::result::Result<&'static str, (String, String)> {
    use dynsmem_kernels::attention as dev;
    let kernel = match cfg.kind {
        AttentionKind::Wgmma => "attention_wgmma",
        AttentionKind::Simt => "attention_simt",
    };
    let fail = |reason: String| Err((kernel.to_string(), reason));
    if !dev::HEAD_DIMS.contains(&p.d) {
        return fail(format!("head dimension 64 or 128 (compiled in), got {}", p.d));
    }
    if !cfg.fits(p.d) {
        return fail(match cfg.kind {
            AttentionKind::Wgmma => format!(
                "bq 64 or 128 (64 rows per math warpgroup), bk {} (compiled in), stages {} to {}, pingpong only with \
                 two math warpgroups (bq 128) (got {cfg:?})",
                dev::WGMMA_BK,
                dev::MIN_STAGES,
                dev::MAX_STAGES
            ),
            AttentionKind::Simt => format!(
                "bq 1 to {} (one thread per query row), bk 1 to {}, stages 1, no pingpong (got {cfg:?})",
                dev::SIMT_MAX_BQ,
                dev::SIMT_MAX_BK
            ),
        });
    }
    let Some(entry) = entry_name(cfg, p.d, p.dtype == Half::Bf16, fixed) else {
        return fail(format!(
            "no entry has this shape: the compiled-in tile is {FIXED:?} with f16 inputs, D 128 (got {cfg:?}, {:?}, D {})",
            p.dtype, p.d
        ));
    };
    if p.batch == 0 || p.heads == 0 || p.seq == 0 {
        return Err((
            entry.into(),
            format!("batch, heads and seq at least 1 (got {} x {} x {})", p.batch, p.heads, p.seq),
        ));
    }
    // Tensor-map row coordinates and the kernels' row indices are 32-bit.
    if p.rows() + dev::WGMMA_BK as u64 > i32::MAX as u64 {
        return Err((entry.into(), format!("batch x heads x seq below 2^31 - {} (got {})", dev::WGMMA_BK, p.rows())));
    }
    if cfg.grid(p.seq, p.bh() as u32) > u32::MAX as u64 || p.bh() > u32::MAX as u64 {
        return Err((entry.into(), format!("{} blocks: at most 2^32 - 1", cfg.grid(p.seq, p.bh() as u32))));
    }
    Ok(entry)
}

/// The device and image facts an entry needs, checked before building: wgmma needs compute
/// capability 9.0 and an `sm_90a` image; SIMT the launch-sized Rust kernels.
fn check_device(backend: AnyBackend<'_>, cfg: &AttentionConfig, entry: &str, variant: Variant) -> Result<()> {
    let unsupported = |what: String| Err(Error::Unsupported { backend: backend.kind(), what });
    if variant != Variant::LaunchSized {
        return unsupported(format!("{entry} in the {variant} form (NOTES.md: no cuda-static or WGSL twin yet)"));
    }
    if cfg.kind == AttentionKind::Simt {
        return Ok(());
    }
    let AnyBackend::Cuda(cuda) = backend else {
        return unsupported(format!(
            "{entry}: wgmma and tensor-map copies run on CUDA only (the SIMT kernel runs here)"
        ));
    };
    cuda.wgmma_refusal(entry).map_or(Ok(()), unsupported)
}

/// Q, K, V and O on the device (two 16-bit values per word), and the row statistics.
pub struct AttentionWorkload<'b, B: FamilyBackend> {
    backend: &'b B,
    kernel: Prepared<B::Kernel>,
    problem: AttentionProblem,
    config: AttentionConfig,
    q: Buffer<B::Raw, u32>,
    k: Buffer<B::Raw, u32>,
    v: Buffer<B::Raw, u32>,
    o: Buffer<B::Raw, u32>,
    lse: Buffer<B::Raw, f32>,
    /// wgmma: the tensor maps of Q, K and V.
    maps: Option<[Buffer<B::Raw, u32>; 3]>,
    host: Arc<HostInputs>,
}

/// Validates `config` for `problem`, uploads the inputs, computes the reference rows and
/// builds the kernel; nothing is launched. `fixed` runs the compiled-in-tile entry.
pub fn prepare<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: AttentionProblem,
    config: AttentionConfig,
    fixed: bool,
    variant: Variant,
    inputs: impl FnOnce() -> Arc<HostInputs>,
) -> Result<AttentionWorkload<'b, B>> {
    let entry = validate(&problem, &config, fixed).map_err(|(kernel, reason)| invalid(&kernel, reason))?;
    check_device(backend.erase(), &config, entry, variant)?;
    let (rows, d) = (problem.rows(), problem.d as u64);
    let grid = config.grid(problem.seq, problem.bh() as u32) as u32;
    let device = 4 * rows * d * 2 + rows * 4;
    crate::contract::check_footprint(backend, entry, device, device + rows * d * 8)?;
    let kernel =
        Prepared::new(backend, entry, config.shared_bytes(problem.d), grid, config.threads(), variant, None, None)?;
    let host = inputs();
    let q = backend.htod(&pack_halves(&host.q))?;
    let k = backend.htod(&pack_halves(&host.k))?;
    let v = backend.htod(&pack_halves(&host.v))?;
    let o = backend.alloc::<u32>((rows * d).div_ceil(2) as usize)?;
    let lse = backend.alloc::<f32>(rows as usize)?;
    let maps = if config.kind == AttentionKind::Wgmma {
        use dynsmem_kernels::attention::{PANEL, WGMMA_BK};
        let map = |buf: &Buffer<B::Raw, u32>, box_rows: u32| {
            backend.tensor_map_2d(buf, 2, [d, rows], d * 2, [PANEL, box_rows], TensorSwizzle::B128)
        };
        Some([map(&q, config.bq)?, map(&k, WGMMA_BK)?, map(&v, WGMMA_BK)?])
    } else {
        None
    };
    Ok(AttentionWorkload { backend, kernel, problem, config, q, k, v, o, lse, maps, host })
}

impl<B: FamilyBackend> AttentionWorkload<'_, B> {
    fn launch(&self) -> Result<()> {
        let p = &self.problem;
        let [q, k, v] = match &self.maps {
            Some([q, k, v]) => [q.arg(), k.arg(), v.arg()],
            None => [self.q.arg(), self.k.arg(), self.v.arg()],
        };
        let cfg = &self.config;
        let grid = cfg.grid(p.seq, p.bh() as u32) as u32;
        self.backend.launch(
            &self.kernel.built.kernel,
            self.kernel.dims(grid, cfg.threads()),
            &[
                q,
                k,
                v,
                self.o.arg(),
                self.lse.arg(),
                Arg::U32(p.seq),
                Arg::U32(p.bh() as u32),
                Arg::U32(p.causal as u32),
                Arg::U32(cfg.bq),
                Arg::U32(cfg.bk),
                Arg::U32(cfg.stages),
                Arg::U32(cfg.pingpong as u32),
            ],
        )
    }

    /// `O` as f32 values and `lse`, read back.
    pub fn result(&self) -> Result<(Vec<f32>, Vec<f32>)> {
        let w = self.backend.dtoh(&self.o)?;
        let n = (self.problem.rows() * self.problem.d as u64) as usize;
        let out = self.problem.dtype.unpack(&w, n);
        Ok((out, self.backend.dtoh(&self.lse)?))
    }

    /// Compares `O` and `lse` with the reference rows.
    pub fn compare(&self, out: &[f32], lse: &[f32]) -> Result<()> {
        check_matrix_entries(&self.kernel.name, &self.host.out, out, self.problem.d as usize, PER_ENTRY)?;
        check_matrix_entries(&format!("{} (lse)", self.kernel.name), &self.host.lse, lse, 1, PER_ENTRY)?;
        Ok(())
    }

    pub fn problem(&self) -> AttentionProblem {
        self.problem
    }
    pub fn kernel_name(&self) -> &str {
        &self.kernel.name
    }
}

impl<B: FamilyBackend> Workload for AttentionWorkload<'_, B> {
    fn kernel(&self) -> KernelInfo {
        self.kernel.info()
    }
    fn bytes(&self) -> u64 {
        0
    }
    fn flops(&self) -> f64 {
        self.problem.flops()
    }
    fn run(&self) -> Result<()> {
        self.launch()
    }
    /// Zeros `O` and `lse`, runs once, and compares (so a row the kernel skips fails: no
    /// row of these inputs has all of `O` near zero).
    fn check(&self) -> Result<()> {
        self.backend.fill_zero(&self.o)?;
        self.backend.fill_zero(&self.lse)?;
        self.launch()?;
        let (out, lse) = self.result()?;
        self.compare(&out, &lse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(causal: bool) -> AttentionProblem {
        AttentionProblem { batch: 1, heads: 2, seq: 40, d: 64, dtype: Half::F16, causal }
    }

    /// The reference of head 0's rows, with key `skip` left out (one wrong term) or not.
    fn reference_skipping(p: &AttentionProblem, skip: Option<usize>) -> Vec<RowReference> {
        let [q, k, v] = inputs(p, 3);
        (0..p.seq as usize).map(|r| reference_row_without(p, [&q, &k, &v], 0, r, skip)).collect()
    }

    #[test]
    fn a_skipped_key_fails_the_check_of_o_and_of_lse() {
        for causal in [false, true] {
            let p = small(causal);
            let want = reference_skipping(&p, None);
            let changed = reference_skipping(&p, Some(3));
            // Rows that do not see key 3 (0..3 under the mask) match exactly. Of those that see
            // it, every row whose weight for it is not negligible moves past the bound: most of
            // them (a weight of e^-4 / 40 moves O by about its own rounding), and the check of
            // the whole problem fails.
            let (mut seeing, mut moved) = (0, 0);
            for (r, (w, c)) in want.iter().zip(&changed).enumerate() {
                let moved_o = (0..p.d as usize).any(|i| !PER_ENTRY.allows(w.out[i], c.out[i], w.out_err[i]));
                let moved_lse = !PER_ENTRY.allows(w.lse, c.lse, w.lse_err);
                if causal && r < 3 {
                    assert!(!moved_o && !moved_lse, "row {r} does not see key 3");
                    continue;
                }
                seeing += 1;
                moved += (moved_o && moved_lse) as usize;
            }
            assert!(moved * 4 >= seeing * 3, "causal {causal}: {moved} of {seeing} rows moved");
        }
    }

    #[test]
    fn rounding_p_and_o_stays_inside_the_bound() {
        // The kernel's own rounding, simulated: P and O rounded to f16, f32 sums.
        let p = small(false);
        let [q, k, v] = inputs(&p, 9);
        let d = p.d as usize;
        for r in [0, 17, 39] {
            let want = reference_row(&p, &q, &k, &v, 0, r);
            let scores: Vec<f32> = (0..p.seq as usize)
                .map(|j| (0..d).map(|i| q[r * d + i] * k[j * d + i]).sum::<f32>() / (d as f32).sqrt())
                .collect();
            let m = scores.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            let w: Vec<f32> = scores.iter().map(|s| (s - m).exp()).collect();
            let l: f32 = w.iter().sum();
            for i in 0..d {
                let acc: f32 = w.iter().enumerate().map(|(j, x)| p.dtype.value(p.dtype.bits(*x)) * v[j * d + i]).sum();
                let got = p.dtype.value(p.dtype.bits(acc / l));
                assert!(PER_ENTRY.allows(want.out[i], got as f64, want.out_err[i]), "row {r} col {i}");
            }
            assert!(PER_ENTRY.allows(want.lse, (m + l.ln()) as f64, want.lse_err));
        }
    }

    #[test]
    fn validate_names_the_rule_a_config_breaks() {
        let p = AttentionProblem { batch: 4, heads: 16, seq: 4096, d: 128, dtype: Half::F16, causal: false };
        assert_eq!(validate(&p, &AttentionConfig::wgmma(128, 2), false), Ok("attention_wgmma_f16_d128"));
        assert_eq!(validate(&p, &FIXED, true), Ok("attention_wgmma_f16_d128_fixed"));
        let (kernel, why) = validate(&p, &AttentionConfig::wgmma(192, 2), false).unwrap_err();
        assert!(kernel == "attention_wgmma" && why.contains("bq 64 or 128"), "{why}");
        let (_, why) = validate(&AttentionProblem { d: 96, ..p }, &AttentionConfig::simt(32, 32), false).unwrap_err();
        assert!(why.contains("64 or 128"), "{why}");
        let bf = AttentionProblem { dtype: Half::Bf16, d: 64, ..p };
        assert_eq!(validate(&bf, &AttentionConfig::simt(32, 16), false), Ok("attention_simt_bf16_d64"));
        assert!(validate(&bf, &FIXED, true).is_err(), "the fixed entry is f16, D 128");
        let (_, why) = validate(&AttentionProblem { seq: 0, ..p }, &FIXED, false).unwrap_err();
        assert!(why.contains("at least 1"), "{why}");
    }

    #[test]
    fn flops_halve_under_the_causal_mask() {
        let p = AttentionProblem { batch: 8, heads: 16, seq: 4096, d: 128, dtype: Half::F16, causal: false };
        assert_eq!(p.flops(), 4.0 * 128.0 * 4096.0 * 4096.0 * 128.0);
        assert_eq!(AttentionProblem { causal: true, ..p }.flops(), p.flops() / 2.0);
    }
}
