//! Attention backward, host side: inputs, the forward that makes `O` and `lse`, the f64
//! reference of the gradients with a bound per entry (every row for small problems, sampled
//! rows for large ones), and the [`Workload`]. The device algorithm and which of its
//! parameters are launch-time: `dynsmem_kernels::attention_backward`.
//!
//! The problem is the forward's ([`AttentionProblem`]): `dQ`, `dK`, `dV` of
//! `O = softmax(Q K^T / sqrt(D)) V` for an output gradient `dO`, all `[batch, heads, seq, D]`,
//! the inputs 16-bit, the gradients f32. The SIMT kernels run on every backend with the
//! launch-sized Rust kernels (the CPU backend included). `O` and `lse` come from the forward
//! kernel on the same backend (its default config: wgmma on sm_90a, SIMT elsewhere), run once
//! per set of inputs when the first config is prepared; the reference takes that `O` and
//! `lse` as given (see [`reference_rows`]).

mod family;

use std::sync::{Arc, OnceLock};

use dynsmem_kernels::attention_backward::{AttentionBwdConfig, DELTA_THREADS, MAX_TILE, entry_names};
use dynsmem_reference::attention::{Grad, GradRow as RowReference, Tensors, backward_row};

pub use family::{ATTENTION_BACKWARD, SIZES, default_config};

use super::{AttentionProblem, Half};
use crate::backend::{Arg, Buffer, Variant};
use crate::contract::{FamilyBackend, KernelInfo, Prepared, Workload, invalid};
use crate::element::pack_halves;
use crate::error::{Error, Result};
use crate::rng::SplitMix64;
use crate::verify::{MatrixEntry, Tolerance, check_matrix_entries};

/// Above this many multiply-adds of one pass of the reference the check takes sampled rows.
pub const FULL_REFERENCE_MACS: u64 = 1 << 27;
/// Query rows (for `dQ`) and key rows (for `dK`, `dV`) a sampled check compares, besides the
/// first and last row of the first and last head.
pub const SAMPLES: usize = 256;

/// The inputs of `(problem, seed)` as values (exact in the input type): the forward's `Q`,
/// `K`, `V` (the same streams as `attention`'s) and `dO`, uniform in `[-1, 1]`.
fn inputs(p: &AttentionProblem, seed: u64) -> [Vec<f32>; 4] {
    let [q, k, v] = super::inputs(p, seed);
    let len = q.len();
    let mut rng = SplitMix64::new(seed ^ 0x644F);
    let d_o = (0..len).map(|_| p.dtype.value(p.dtype.bits(2.0 * rng.next_f32() - 1.0))).collect();
    [q, k, v, d_o]
}

/// The tensors of `p` as the reference sees them (see [`Tensors`]): the inputs `Q`, `K`,
/// `V`, `dO`, the forward's `O` (as values) and `lse`.
fn tensors<'a>(p: &AttentionProblem, values: [&'a [f32]; 4], o: &[f32], lse: &'a [f32]) -> Tensors<'a> {
    Tensors::new(super::shape(p), values, o, lse)
}

/// The reference of row `r` of `head` for `grad` (the bounds: [`backward_row`]), with one
/// pair left out where `skip` is given (the tests' one wrong term).
fn reference_row(t: &Tensors<'_>, grad: Grad, head: usize, r: usize, skip: Option<usize>) -> RowReference {
    backward_row(t, grad, head, r, skip)
}

/// The (head, row) pairs a check compares: all of them for small problems, else the first
/// and last rows of the first and last heads and [`SAMPLES`] others drawn from `stream`.
fn checked_rows(p: &AttentionProblem, seed: u64, stream: u64) -> Vec<(usize, usize)> {
    let (bh, seq) = (p.bh() as usize, p.seq as usize);
    let macs = p.rows() * p.seq as u64 * p.d as u64;
    if macs <= FULL_REFERENCE_MACS {
        return (0..bh).flat_map(|h| (0..seq).map(move |r| (h, r))).collect();
    }
    let mut rng = SplitMix64::new(seed ^ stream);
    let mut picks = vec![(0, 0), (0, seq - 1), (bh - 1, 0), (bh - 1, seq - 1)];
    picks.extend((0..SAMPLES).map(|_| (rng.below(bh as u64) as usize, rng.below(seq as u64) as usize)));
    picks
}

/// The checked entries of `dQ`, `dK` and `dV`: `((row over all heads, column), reference,
/// allowed error)` (see [`reference_row`]), from the forward's `O` and `lse` taken as given:
/// the bounds are those of the backward kernels' own arithmetic. (Against the gradient of the
/// exact attention, `O` rounded to the input type moves `Delta` by up to `u sum |dO O|` more,
/// and `lse`'s error moves every weight by its factor; neither is the backward's error.)
fn reference_rows(p: &AttentionProblem, t: &Tensors<'_>, seed: u64) -> [Vec<MatrixEntry>; 3] {
    let (seq, d) = (p.seq as usize, p.d as usize);
    let q_rows = checked_rows(p, seed, 0x6451);
    let k_rows = checked_rows(p, seed, 0x644B);
    let dq = crate::par::map(q_rows.len(), |n| reference_row(t, Grad::Dq, q_rows[n].0, q_rows[n].1, None));
    let dkdv = crate::par::map(k_rows.len(), |n| reference_row(t, Grad::Dkdv, k_rows[n].0, k_rows[n].1, None));
    let (mut out_q, mut out_k, mut out_v) = (Vec::new(), Vec::new(), Vec::new());
    for (&(head, row), r) in q_rows.iter().zip(&dq) {
        out_q.extend((0..d).map(|e| ((head * seq + row, e), r.a[e], r.a_err[e])));
    }
    for (&(head, row), r) in k_rows.iter().zip(&dkdv) {
        out_k.extend((0..d).map(|e| ((head * seq + row, e), r.a[e], r.a_err[e])));
        out_v.extend((0..d).map(|e| ((head * seq + row, e), r.b[e], r.b_err[e])));
    }
    [out_q, out_k, out_v]
}

/// Each entry's error is its own bound: [`check_matrix_entries`] with this tolerance allows
/// exactly the entry's `allowed error`.
const PER_ENTRY: Tolerance = Tolerance { rtol: 1.0, atol: 0.0 };

/// The forward's outputs for one set of inputs, and the reference built from them.
struct Forward {
    /// `O` as 16-bit bits, and `lse`.
    o: Vec<u16>,
    lse: Vec<f32>,
    /// The checked entries of `dQ`, `dK`, `dV`.
    reference: [Vec<MatrixEntry>; 3],
}

/// A problem's inputs (values exact in the input type), and once the first config is
/// prepared, the forward's outputs and the reference.
pub struct HostInputs {
    problem: AttentionProblem,
    seed: u64,
    /// `Q`, `K`, `V`, `dO`.
    values: [Vec<f32>; 4],
    forward: OnceLock<Arc<Forward>>,
}

impl HostInputs {
    pub fn new(p: &AttentionProblem, seed: u64) -> HostInputs {
        HostInputs { problem: *p, seed, values: inputs(p, seed), forward: OnceLock::new() }
    }

    fn bits(&self, i: usize) -> Vec<u16> {
        self.values[i].iter().map(|&x| self.problem.dtype.bits(x)).collect()
    }

    /// The forward's `O` and `lse` from `backend` (its default config), read back, and the
    /// reference from them: once per inputs, by the first backend that asks.
    fn forward<B: FamilyBackend>(&self, backend: &B) -> Result<Arc<Forward>> {
        if let Some(f) = self.forward.get() {
            return Ok(f.clone());
        }
        let p = &self.problem;
        let cfg = super::default_config(backend.erase(), p);
        let host =
            super::HostInputs { q: self.bits(0), k: self.bits(1), v: self.bits(2), out: Vec::new(), lse: Vec::new() };
        let fwd = super::prepare(backend, *p, cfg, false, Variant::LaunchSized, || Arc::new(host))?;
        fwd.launch()?;
        let (o, lse) = fwd.result()?;
        drop(fwd);
        let [q, k, v, d_o] = &self.values;
        let tensors = tensors(p, [q, k, v, d_o], &o, &lse);
        let reference = reference_rows(p, &tensors, self.seed);
        let o = o.iter().map(|&x| p.dtype.bits(x)).collect();
        Ok(self.forward.get_or_init(|| Arc::new(Forward { o, lse, reference })).clone())
    }
}

/// The rules a config and problem must meet before anything is built, as one message naming
/// the kernel: what the tuner's filter, `run` and `bench` all apply. `Ok` is the three
/// entries (pre-pass, dK/dV, dQ) that run them.
pub fn validate(
    p: &AttentionProblem,
    cfg: &AttentionBwdConfig,
) -> std::result::Result<[&'static str; 3], (String, String)> {
    let fail = |reason: String| Err(("attention_bwd_simt".to_string(), reason));
    if !dynsmem_kernels::attention::HEAD_DIMS.contains(&p.d) {
        return fail(format!("head dimension 64 or 128 (compiled in), got {}", p.d));
    }
    if !cfg.fits(p.d) {
        return fail(format!(
            "bq 1 to {MAX_TILE} (query rows per tile: the dQ kernel's threads), bk 1 to {MAX_TILE} (key rows per \
             tile: the dK/dV kernel's threads) (got {cfg:?})"
        ));
    }
    let Some(entries) = entry_names(p.d, p.dtype == Half::Bf16) else {
        return fail(format!("no entry for D {} {:?}", p.d, p.dtype));
    };
    let kernel = entries[1];
    if p.batch == 0 || p.heads == 0 || p.seq == 0 {
        return Err((
            kernel.into(),
            format!("batch, heads and seq at least 1 (got {} x {} x {})", p.batch, p.heads, p.seq),
        ));
    }
    // The forward's rule (its tensor-map rows) and the kernels' 32-bit row indices.
    let fwd = dynsmem_kernels::attention::WGMMA_BK as u64;
    if p.rows() + fwd > i32::MAX as u64 {
        return Err((kernel.into(), format!("batch x heads x seq below 2^31 - {fwd} (got {})", p.rows())));
    }
    let grid = cfg.dkdv_grid(p.seq, p.bh() as u32).max(cfg.dq_grid(p.seq, p.bh() as u32));
    if grid > u32::MAX as u64 || p.bh() > u32::MAX as u64 {
        return Err((kernel.into(), format!("{grid} blocks: at most 2^32 - 1")));
    }
    Ok(entries)
}

/// The three kernels of one config and their launch sizes.
struct Kernels<K> {
    delta: Prepared<K>,
    dkdv: Prepared<K>,
    dq: Prepared<K>,
}

/// The inputs, the forward's outputs and the gradients on the device.
pub struct AttentionBwdWorkload<'b, B: FamilyBackend> {
    backend: &'b B,
    kernels: Kernels<B::Kernel>,
    problem: AttentionProblem,
    config: AttentionBwdConfig,
    /// `Q`, `K`, `V`, `dO`, `O`: two 16-bit values per word.
    halves: [Buffer<B::Raw, u32>; 5],
    lse: Buffer<B::Raw, f32>,
    delta: Buffer<B::Raw, f32>,
    dq: Buffer<B::Raw, f32>,
    dk: Buffer<B::Raw, f32>,
    dv: Buffer<B::Raw, f32>,
    forward: Arc<Forward>,
}

/// Validates `config` for `problem`, builds the three kernels, uploads the inputs and, the
/// first time `inputs` are used, runs the forward (its default config on `backend`) for `O`
/// and `lse` and computes the reference from them. The backward is not launched.
pub fn prepare<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: AttentionProblem,
    config: AttentionBwdConfig,
    variant: Variant,
    inputs: impl FnOnce() -> Arc<HostInputs>,
) -> Result<AttentionBwdWorkload<'b, B>> {
    let [delta_entry, dkdv_entry, dq_entry] =
        validate(&problem, &config).map_err(|(kernel, reason)| invalid(&kernel, reason))?;
    if variant != Variant::LaunchSized {
        return Err(Error::Unsupported {
            backend: backend.kind(),
            what: format!("{dkdv_entry} in the {variant} form (NOTES.md: no cuda-static or WGSL twin)"),
        });
    }
    let (rows, d, bh) = (problem.rows(), problem.d as u64, problem.bh() as u32);
    // Five 16-bit tensors, lse and delta, three f32 gradients; on the host the inputs and O
    // as f32 values, the bits, the forward's copies and the reference.
    let device = 5 * rows * d * 2 + 2 * rows * 4 + 3 * rows * d * 4;
    crate::contract::check_footprint(backend, dkdv_entry, device, rows * d * 40)?;
    let delta_grid = AttentionBwdConfig::delta_grid(rows) as u32;
    let kernels = Kernels {
        delta: Prepared::new(backend, delta_entry, Ok(0), delta_grid, DELTA_THREADS, variant, None, None)?,
        dkdv: Prepared::new(
            backend,
            dkdv_entry,
            config.dkdv_bytes(problem.d),
            config.dkdv_grid(problem.seq, bh) as u32,
            config.bk,
            variant,
            None,
            None,
        )?,
        dq: Prepared::new(
            backend,
            dq_entry,
            config.dq_bytes(problem.d),
            config.dq_grid(problem.seq, bh) as u32,
            config.bq,
            variant,
            None,
            None,
        )?,
    };
    let host = inputs();
    let forward = host.forward(backend)?;
    let up = |b: Vec<u16>| backend.htod(&pack_halves(&b));
    let halves = [up(host.bits(0))?, up(host.bits(1))?, up(host.bits(2))?, up(host.bits(3))?, up(forward.o.clone())?];
    let n = (rows * d) as usize;
    Ok(AttentionBwdWorkload {
        backend,
        kernels,
        problem,
        config,
        halves,
        lse: backend.htod(&forward.lse)?,
        delta: backend.alloc::<f32>(rows as usize)?,
        dq: backend.alloc::<f32>(n)?,
        dk: backend.alloc::<f32>(n)?,
        dv: backend.alloc::<f32>(n)?,
        forward,
    })
}

impl<B: FamilyBackend> AttentionBwdWorkload<'_, B> {
    /// The pre-pass, then the dK/dV kernel, then the dQ kernel, in stream order.
    fn launch(&self) -> Result<()> {
        let (p, cfg) = (&self.problem, &self.config);
        let bh = p.bh() as u32;
        let [q, k, v, d_o, o] = &self.halves;
        let rows = p.rows();
        self.backend.launch(
            &self.kernels.delta.built.kernel,
            self.kernels.delta.dims(AttentionBwdConfig::delta_grid(rows) as u32, DELTA_THREADS),
            &[o.arg(), d_o.arg(), self.delta.arg(), Arg::U32(rows as u32), Arg::U32(p.d)],
        )?;
        let (seq, causal) = (Arg::U32(p.seq), Arg::U32(p.causal as u32));
        let [bh, bq, bk] = [Arg::U32(bh), Arg::U32(cfg.bq), Arg::U32(cfg.bk)];
        let (lse, delta) = (self.lse.arg(), self.delta.arg());
        self.backend.launch(
            &self.kernels.dkdv.built.kernel,
            self.kernels.dkdv.dims(cfg.dkdv_grid(p.seq, p.bh() as u32) as u32, cfg.bk),
            &[q.arg(), k.arg(), v.arg(), d_o.arg(), lse, delta, self.dk.arg(), self.dv.arg(), seq, bh, causal, bq, bk],
        )?;
        self.backend.launch(
            &self.kernels.dq.built.kernel,
            self.kernels.dq.dims(cfg.dq_grid(p.seq, p.bh() as u32) as u32, cfg.bq),
            &[q.arg(), k.arg(), v.arg(), d_o.arg(), lse, delta, self.dq.arg(), seq, bh, causal, bq, bk],
        )
    }

    /// `dQ`, `dK`, `dV`, read back.
    pub fn result(&self) -> Result<[Vec<f32>; 3]> {
        Ok([self.backend.dtoh(&self.dq)?, self.backend.dtoh(&self.dk)?, self.backend.dtoh(&self.dv)?])
    }

    /// Compares `dQ`, `dK`, `dV` with the reference rows.
    pub fn compare(&self, [dq, dk, dv]: &[Vec<f32>; 3]) -> Result<()> {
        let d = self.problem.d as usize;
        let [rq, rk, rv] = &self.forward.reference;
        check_matrix_entries(&format!("{} (dQ)", self.kernels.dq.name), rq, dq, d, PER_ENTRY)?;
        check_matrix_entries(&format!("{} (dK)", self.kernels.dkdv.name), rk, dk, d, PER_ENTRY)?;
        check_matrix_entries(&format!("{} (dV)", self.kernels.dkdv.name), rv, dv, d, PER_ENTRY)?;
        Ok(())
    }

    pub fn problem(&self) -> AttentionProblem {
        self.problem
    }
}

impl<B: FamilyBackend> Workload for AttentionBwdWorkload<'_, B> {
    /// Named after the dK/dV kernel (the larger launch), with the larger of the two
    /// gradient kernels' launch-sized bytes.
    fn kernel(&self) -> KernelInfo {
        let (a, b) = (self.kernels.dkdv.info(), self.kernels.dq.info());
        KernelInfo { shared_bytes: a.shared_bytes.max(b.shared_bytes), ..a }
    }
    fn bytes(&self) -> u64 {
        0
    }
    /// FlashAttention-2's count for the backward: 2.5 times the forward's (five products of
    /// the forward's two), halved under the causal mask with it. The recomputation of the
    /// scores in both kernels is not counted.
    fn flops(&self) -> f64 {
        2.5 * self.problem.flops()
    }
    fn run(&self) -> Result<()> {
        self.launch()
    }
    /// Zeros `Delta` and the gradients, runs once, and compares (so a row a kernel skips
    /// fails: no checked row of these inputs has every entry near zero).
    fn check(&self) -> Result<()> {
        for b in [&self.delta, &self.dq, &self.dk, &self.dv] {
            self.backend.fill_zero(b)?;
        }
        self.launch()?;
        self.compare(&self.result()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A problem of one head, its inputs, and `O` and `lse` computed in f64 and stored as the
    /// forward stores them.
    struct Case {
        p: AttentionProblem,
        values: [Vec<f32>; 4],
        o: Vec<f32>,
        lse: Vec<f32>,
    }

    impl Case {
        fn new(seq: u32, dtype: Half, causal: bool) -> Case {
            let p = AttentionProblem { batch: 1, heads: 1, seq, d: 64, dtype, causal };
            let values = inputs(&p, 3);
            let (seq, d) = (seq as usize, p.d as usize);
            let [q, k, v, _] = &values;
            let scale = 1.0 / (d as f64).sqrt();
            let (mut o, mut lse) = (vec![0f32; seq * d], vec![0f32; seq]);
            for i in 0..seq {
                let keys = if causal { i + 1 } else { seq };
                let s: Vec<f64> = (0..keys)
                    .map(|j| (0..d).map(|e| q[i * d + e] as f64 * k[j * d + e] as f64).sum::<f64>() * scale)
                    .collect();
                let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let l: f64 = s.iter().map(|x| (x - m).exp()).sum();
                for e in 0..d {
                    let x: f64 = (0..keys).map(|j| (s[j] - m).exp() * v[j * d + e] as f64).sum::<f64>() / l;
                    o[i * d + e] = dtype.value(dtype.bits(x as f32));
                }
                lse[i] = (m + l.ln()) as f32;
            }
            Case { p, values, o, lse }
        }
        fn tensors(&self) -> Tensors<'_> {
            let [q, k, v, d_o] = &self.values;
            tensors(&self.p, [q, k, v, d_o], &self.o, &self.lse)
        }
        /// The gradients as the kernels compute them: f32, their order of operations.
        fn in_f32(&self) -> [Vec<f32>; 3] {
            let [q, k, v, g] = &self.values;
            let (seq, d) = (self.p.seq as usize, self.p.d as usize);
            let scale = 1.0 / (d as f32).sqrt();
            let c = std::f32::consts::LOG2_E * scale;
            let delta: Vec<f32> =
                (0..seq).map(|i| (0..d).fold(0f32, |s, e| self.o[i * d + e].mul_add(g[i * d + e], s))).collect();
            let lse2: Vec<f32> = self.lse.iter().map(|l| l * std::f32::consts::LOG2_E).collect();
            let sees = |i: usize, j: usize| !self.p.causal || j <= i;
            let dot = |a: &[f32], b: &[f32], pre: f32| a.iter().zip(b).fold(0f32, |s, (x, y)| x.mul_add(y * pre, s));
            let (mut dq, mut dk, mut dv) = (vec![0f32; seq * d], vec![0f32; seq * d], vec![0f32; seq * d]);
            for i in 0..seq {
                for j in (0..seq).filter(|&j| sees(i, j)) {
                    let (qi, kj, vj, gi) = (&q[i * d..][..d], &k[j * d..][..d], &v[j * d..][..d], &g[i * d..][..d]);
                    // dQ kernel: its query row pre-scaled.
                    let qs: Vec<f32> = qi.iter().map(|x| x * c).collect();
                    let p = (dot(&qs, kj, 1.0) - lse2[i]).exp2();
                    let ds = p * (dot(gi, vj, 1.0) - delta[i]);
                    for e in 0..d {
                        dq[i * d + e] = ds.mul_add(kj[e], dq[i * d + e]);
                    }
                    // dK/dV kernel: its key row pre-scaled.
                    let ks: Vec<f32> = kj.iter().map(|x| x * c).collect();
                    let p = (dot(qi, &ks, 1.0) - lse2[i]).exp2();
                    let ds = p * (dot(gi, vj, 1.0) - delta[i]);
                    for e in 0..d {
                        dv[j * d + e] = p.mul_add(gi[e], dv[j * d + e]);
                        dk[j * d + e] = ds.mul_add(qi[e], dk[j * d + e]);
                    }
                }
            }
            dq.iter_mut().chain(dk.iter_mut()).for_each(|x| *x *= scale);
            [dq, dk, dv]
        }
    }

    #[test]
    fn the_kernels_f32_arithmetic_stays_inside_the_bounds() {
        for (dtype, causal) in [(Half::F16, false), (Half::Bf16, true), (Half::F16, true)] {
            let case = Case::new(40, dtype, causal);
            let t = case.tensors();
            let [dq, dk, dv] = case.in_f32();
            let d = case.p.d as usize;
            for r in 0..case.p.seq as usize {
                let q = reference_row(&t, Grad::Dq, 0, r, None);
                let kv = reference_row(&t, Grad::Dkdv, 0, r, None);
                for e in 0..d {
                    let at = r * d + e;
                    assert!(PER_ENTRY.allows(q.a[e], dq[at] as f64, q.a_err[e]), "dQ[{r}][{e}] {causal}");
                    assert!(PER_ENTRY.allows(kv.a[e], dk[at] as f64, kv.a_err[e]), "dK[{r}][{e}] {causal}");
                    assert!(PER_ENTRY.allows(kv.b[e], dv[at] as f64, kv.b_err[e]), "dV[{r}][{e}] {causal}");
                }
            }
        }
    }

    #[test]
    fn one_left_out_pair_fails_the_check_of_dq_dk_and_dv() {
        for causal in [false, true] {
            let case = Case::new(40, Half::F16, causal);
            let t = case.tensors();
            let d = case.p.d as usize;
            let moved =
                |want: &[f64], got: &[f64], err: &[f64]| (0..d).any(|e| !PER_ENTRY.allows(want[e], got[e], err[e]));
            let (mut pairs, mut moved_q, mut moved_k, mut moved_v) = (0, 0, 0, 0);
            for i in [3, 11, 20, 39] {
                for j in [0, 2, 3, 9, 19, 30] {
                    if causal && j > i {
                        continue;
                    }
                    pairs += 1;
                    let (q, q_skip) =
                        (reference_row(&t, Grad::Dq, 0, i, None), reference_row(&t, Grad::Dq, 0, i, Some(j)));
                    let (kv, kv_skip) =
                        (reference_row(&t, Grad::Dkdv, 0, j, None), reference_row(&t, Grad::Dkdv, 0, j, Some(i)));
                    moved_q += moved(&q.a, &q_skip.a, &q.a_err) as usize;
                    moved_k += moved(&kv.a, &kv_skip.a, &kv.a_err) as usize;
                    moved_v += moved(&kv.b, &kv_skip.b, &kv.b_err) as usize;
                }
            }
            // Every pair whose weight is not negligible moves each gradient past its bound: at
            // these sizes nearly all of them.
            for (what, n) in [("dQ", moved_q), ("dK", moved_k), ("dV", moved_v)] {
                assert!(n * 4 >= pairs * 3, "causal {causal}: {what} moved for {n} of {pairs} pairs");
            }
        }
    }

    #[test]
    fn validate_names_the_rule_a_config_breaks() {
        let p = AttentionProblem { batch: 4, heads: 16, seq: 4096, d: 128, dtype: Half::F16, causal: false };
        let ok = validate(&p, &AttentionBwdConfig::new(16, 16)).unwrap();
        assert_eq!(
            ok,
            ["attention_bwd_delta_f16", "attention_bwd_simt_dkdv_f16_d128", "attention_bwd_simt_dq_f16_d128"]
        );
        let (kernel, why) = validate(&p, &AttentionBwdConfig::new(300, 16)).unwrap_err();
        assert!(kernel == "attention_bwd_simt" && why.contains("bq 1 to 256"), "{why}");
        let (_, why) = validate(&AttentionProblem { d: 96, ..p }, &AttentionBwdConfig::new(16, 16)).unwrap_err();
        assert!(why.contains("64 or 128"), "{why}");
        let (kernel, why) = validate(&AttentionProblem { seq: 0, ..p }, &AttentionBwdConfig::new(16, 16)).unwrap_err();
        assert!(kernel == "attention_bwd_simt_dkdv_f16_d128" && why.contains("at least 1"), "{why}");
    }
}
