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
mod tune;

use std::sync::{Arc, OnceLock};

use dynsmem_kernels::attention_backward::{AttentionBwdConfig, DELTA_THREADS, MAX_TILE, entry_names};

pub use family::AttentionBackward;
pub use tune::AttentionBwdTunable;

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

const EPS: f64 = f32::EPSILON as f64;

/// The inputs of `(problem, seed)` as values (exact in the input type): the forward's `Q`,
/// `K`, `V` (the same streams as `attention`'s) and `dO`, uniform in `[-1, 1]`.
fn inputs(p: &AttentionProblem, seed: u64) -> [Vec<f32>; 4] {
    let [q, k, v] = super::inputs(p, seed);
    let len = q.len();
    let mut rng = SplitMix64::new(seed ^ 0x644F);
    let d_o = (0..len).map(|_| p.dtype.value(p.dtype.bits(2.0 * rng.next_f32() - 1.0))).collect();
    [q, k, v, d_o]
}

/// The tensors of one problem as the reference sees them: the inputs, the forward's `O` (as
/// values) and `lse`, and each row's `Delta = dO . O` with `sum |dO O|` (f64).
struct Tensors<'a> {
    p: &'a AttentionProblem,
    q: &'a [f32],
    k: &'a [f32],
    v: &'a [f32],
    d_o: &'a [f32],
    lse: &'a [f32],
    delta: Vec<(f64, f64)>,
}

impl<'a> Tensors<'a> {
    fn new(p: &'a AttentionProblem, [q, k, v, d_o]: [&'a [f32]; 4], o: &[f32], lse: &'a [f32]) -> Tensors<'a> {
        let d = p.d as usize;
        let delta = (0..p.rows() as usize)
            .map(|r| {
                let (g, o) = (&d_o[r * d..(r + 1) * d], &o[r * d..(r + 1) * d]);
                g.iter()
                    .zip(o)
                    .fold((0.0, 0.0), |(s, a), (&x, &y)| (s + x as f64 * y as f64, a + (x as f64 * y as f64).abs()))
            })
            .collect();
        Tensors { p, q, k, v, d_o, lse, delta }
    }
    fn row<'b>(&self, t: &'b [f32], head: usize, r: usize) -> &'b [f32] {
        let (seq, d) = (self.p.seq as usize, self.p.d as usize);
        let at = (head * seq + r) * d;
        &t[at..at + d]
    }
}

/// One (query `i`, key `j`) pair of a head: the weight `P_ij`, its relative error bound, and
/// `dS_ij` with its absolute error bound.
struct Pair {
    p: f64,
    p_rel: f64,
    ds: f64,
    ds_err: f64,
}

/// The pair `(i, j)` of `head` in f64, with the error a correct kernel's f32 arithmetic may
/// put on it (bounds, not estimates; `d` the head dimension, `eps` f32's):
/// - the base-2 score, an f32 dot product of `d` products of a pre-scaled row (the scale an
///   approximate `rsqrt` times `log2 e`) and an exact one, is off by at most
///   `(d + 4) eps sum |q k| / sqrt(d)` in natural-log units; `lse log2 e` by `eps |lse|`, the
///   difference's rounding by `eps |s - lse|`, `exp2` by `2^-21` relative: so `P` is off by a
///   factor `exp(x)`, `x <= (d + 8) eps sum |q k| / sqrt(d) + 2 eps (|lse| + |s - lse|) +
///   2^-20`, taken as the relative error `p_rel = 2 x`;
/// - `dP = dO . v` and `Delta = dO . O` (the pre-pass) are f32 dot products of `d` exact
///   products: off by `(d + 2) eps sum |.|` each;
/// - `dS = P (dP - Delta)`: `P [(p_rel + 3 eps) |dP - Delta| + (1 + p_rel) (dP's error +
///   Delta's error)]` (the subtraction and the product rounded once each).
fn pair(t: &Tensors<'_>, head: usize, i: usize, j: usize) -> Pair {
    let d = t.p.d as f64;
    let scale = 1.0 / d.sqrt();
    let (qi, kj, vj, gi) = (t.row(t.q, head, i), t.row(t.k, head, j), t.row(t.v, head, j), t.row(t.d_o, head, i));
    let dot = |a: &[f32], b: &[f32]| {
        a.iter().zip(b).fold((0.0, 0.0), |(s, m), (&x, &y)| {
            let xy = x as f64 * y as f64;
            (s + xy, m + xy.abs())
        })
    };
    let (s, s_abs) = dot(qi, kj);
    let (s, s_abs) = (s * scale, s_abs * scale);
    let lse = t.lse[head * t.p.seq as usize + i] as f64;
    let p = (s - lse).exp();
    let x = (d + 8.0) * EPS * s_abs + 2.0 * EPS * (lse.abs() + (s - lse).abs()) + 2f64.powi(-20);
    let p_rel = 2.0 * x;
    let (dp, dp_abs) = dot(gi, vj);
    let (delta, delta_abs) = t.delta[head * t.p.seq as usize + i];
    let diff = dp - delta;
    let ds_err = p * ((p_rel + 3.0 * EPS) * diff.abs() + (1.0 + p_rel) * (d + 2.0) * EPS * (dp_abs + delta_abs));
    Pair { p, p_rel, ds: p * diff, ds_err }
}

/// Which gradient row a reference is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grad {
    /// `dQ` of query `i`: a sum over the keys it sees.
    Dq,
    /// `dK` and `dV` of key `j`: sums over the queries that see it.
    Dkdv,
}

/// A reference row: the entries of `dQ` (or of `dK`, then `dV`) and the error each may have.
#[derive(Debug, Clone, Default)]
struct RowReference {
    /// `dQ_i` (Dq) or `dK_j` (Dkdv).
    a: Vec<f64>,
    a_err: Vec<f64>,
    /// `dV_j` (Dkdv); empty for Dq.
    b: Vec<f64>,
    b_err: Vec<f64>,
}

/// The reference of row `r` of `head` for `grad`, with the pair `(r, skip)` (Dq) or
/// `(skip, r)` (Dkdv) left out where `skip` is given (the tests' one wrong term).
///
/// The sums over `n` pairs: each term's error from [`pair`], then the f32 accumulation
/// (fused multiply-adds in a chain: `(n + 2) eps` relative to the sum of the terms' sizes),
/// then the final multiply by an approximate `rsqrt` (`2^-20` relative to the same sum):
/// - `dV_jd = sum_i P_ij dO_id`: error `sum_i P_ij |dO_id| (p_rel + (n + 3) eps)`;
/// - `dK_jd = scale sum_i dS_ij q_id`: error `scale sum_i [dS_err |q_id| + ((n + 2) eps +
///   2^-20) (|dS_ij| + dS_err) |q_id|]`; `dQ_id` likewise over the keys, with `k_jd`.
///
/// A missing pair moves an entry by its term (`P_ij dO_id`, `scale dS_ij q_id`): past the
/// bound wherever the term is not negligible against the sum's size (at the tests' sizes,
/// one wrong term in most pairs; the family's unit tests count them).
fn reference_row(t: &Tensors<'_>, grad: Grad, head: usize, r: usize, skip: Option<usize>) -> RowReference {
    let (seq, d) = (t.p.seq as usize, t.p.d as usize);
    let scale = 1.0 / (d as f64).sqrt();
    let others = match (grad, t.p.causal) {
        (Grad::Dq, true) => 0..r + 1,
        (Grad::Dkdv, true) => r..seq,
        (_, false) => 0..seq,
    };
    let n = others.len() as f64;
    let mut out = RowReference {
        a: vec![0.0; d],
        a_err: vec![0.0; d],
        b: if grad == Grad::Dkdv { vec![0.0; d] } else { Vec::new() },
        b_err: if grad == Grad::Dkdv { vec![0.0; d] } else { Vec::new() },
    };
    // Per entry: the sum, the terms' own errors, the terms' sizes.
    let (mut a_own, mut a_size) = (vec![0.0; d], vec![0.0; d]);
    let (mut b_own, mut b_size) = (vec![0.0; d], vec![0.0; d]);
    for o in others.filter(|o| Some(*o) != skip) {
        let (i, j) = if grad == Grad::Dq { (r, o) } else { (o, r) };
        let pr = pair(t, head, i, j);
        match grad {
            Grad::Dq => {
                let kj = t.row(t.k, head, j);
                for e in 0..d {
                    let x = kj[e] as f64;
                    out.a[e] += pr.ds * x;
                    a_own[e] += pr.ds_err * x.abs();
                    a_size[e] += (pr.ds.abs() + pr.ds_err) * x.abs();
                }
            }
            Grad::Dkdv => {
                let (qi, gi) = (t.row(t.q, head, i), t.row(t.d_o, head, i));
                for e in 0..d {
                    let (x, g) = (qi[e] as f64, gi[e] as f64);
                    out.a[e] += pr.ds * x;
                    a_own[e] += pr.ds_err * x.abs();
                    a_size[e] += (pr.ds.abs() + pr.ds_err) * x.abs();
                    out.b[e] += pr.p * g;
                    b_own[e] += pr.p * g.abs() * pr.p_rel;
                    b_size[e] += pr.p * g.abs();
                }
            }
        }
    }
    for e in 0..d {
        out.a[e] *= scale;
        out.a_err[e] = scale * (a_own[e] + ((n + 2.0) * EPS + 2f64.powi(-20)) * a_size[e]);
        if grad == Grad::Dkdv {
            out.b_err[e] = b_own[e] + (n + 3.0) * EPS * b_size[e];
        }
    }
    out
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
fn reference_rows(t: &Tensors<'_>, seed: u64) -> [Vec<MatrixEntry>; 3] {
    let (seq, d) = (t.p.seq as usize, t.p.d as usize);
    let q_rows = checked_rows(t.p, seed, 0x6451);
    let k_rows = checked_rows(t.p, seed, 0x644B);
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
        let tensors = Tensors::new(p, [q, k, v, d_o], &o, &lse);
        let reference = reference_rows(&tensors, self.seed);
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
            Tensors::new(&self.p, [q, k, v, d_o], &self.o, &self.lse)
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
