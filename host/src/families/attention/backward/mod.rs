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

use dynsmem_kernels::attention_backward::{
    AttentionBwdConfig, AttentionBwdKind, DELTA_THREADS, MAX_TILE, entry_names, wgmma, wgmma_entry_name,
};
use dynsmem_reference::attention::{Form, Grad, GradRow as RowReference, Tensors, backward_row};

pub use family::{ATTENTION_BACKWARD, SIZES, default_config};

use super::{AttentionProblem, Half};
use crate::backend::{Arg, Buffer, TensorSwizzle, Variant};
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

/// The reference of row `r` of `head` for `grad` under `form` (the bounds: [`backward_row`]),
/// with one pair left out where `skip` is given (the tests' one wrong term).
fn reference_row(t: &Tensors<'_>, grad: Grad, head: usize, r: usize, skip: Option<usize>, form: Form) -> RowReference {
    backward_row(t, grad, head, r, skip, form)
}

/// The arithmetic of `kind`'s kernels for inputs of `dtype`: the wgmma kernel rounds `P` and
/// `dS` to the input type (f16's subnormals below 2^-14: an absolute 2^-25).
pub fn form(kind: AttentionBwdKind, dtype: Half) -> Form {
    match kind {
        AttentionBwdKind::Simt => Form::F32,
        AttentionBwdKind::Wgmma => Form::TensorCore {
            unit: dtype.unit_roundoff(),
            tiny: if dtype == Half::F16 { 2f64.powi(-25) } else { 0.0 },
        },
    }
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
fn reference_rows(p: &AttentionProblem, t: &Tensors<'_>, seed: u64, form: Form) -> [Vec<MatrixEntry>; 3] {
    let (seq, d) = (p.seq as usize, p.d as usize);
    let q_rows = checked_rows(p, seed, 0x6451);
    let k_rows = checked_rows(p, seed, 0x644B);
    let dq = crate::par::map(q_rows.len(), |n| reference_row(t, Grad::Dq, q_rows[n].0, q_rows[n].1, None, form));
    let dkdv = crate::par::map(k_rows.len(), |n| reference_row(t, Grad::Dkdv, k_rows[n].0, k_rows[n].1, None, form));
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

/// The checked entries of `dQ`, `dK`, `dV`.
type Reference = [Vec<MatrixEntry>; 3];

/// The forward's outputs for one set of inputs, and the references built from them.
struct Forward {
    /// `O` as 16-bit bits and as values, and `lse`.
    o: Vec<u16>,
    o_values: Vec<f32>,
    lse: Vec<f32>,
    /// The reference under [`Form::F32`] and under the tensor-core form, each made when a
    /// config of that kind first asks.
    references: [OnceLock<Arc<Reference>>; 2],
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
        let bits = o.iter().map(|&x| p.dtype.bits(x)).collect();
        let forward = Forward { o: bits, o_values: o, lse, references: [OnceLock::new(), OnceLock::new()] };
        Ok(self.forward.get_or_init(|| Arc::new(forward)).clone())
    }

    /// The reference of `kind`'s arithmetic from the forward's outputs.
    fn reference(&self, forward: &Forward, kind: AttentionBwdKind) -> Arc<Reference> {
        let slot = &forward.references[(kind == AttentionBwdKind::Wgmma) as usize];
        slot.get_or_init(|| {
            let [q, k, v, d_o] = &self.values;
            let t = tensors(&self.problem, [q, k, v, d_o], &forward.o_values, &forward.lse);
            Arc::new(reference_rows(&self.problem, &t, self.seed, form(kind, self.problem.dtype)))
        })
        .clone()
    }
}

/// The rules a config and problem must meet before anything is built, as one message naming
/// the kernel: what the tuner's filter, `run` and `bench` all apply. `Ok` is the three
/// entries (pre-pass, dK/dV, dQ) that run them.
pub fn validate(
    p: &AttentionProblem,
    cfg: &AttentionBwdConfig,
) -> std::result::Result<[&'static str; 3], (String, String)> {
    let name = match cfg.kind {
        AttentionBwdKind::Simt => "attention_bwd_simt",
        AttentionBwdKind::Wgmma => "attention_bwd_wgmma",
    };
    let fail = |reason: String| Err((name.to_string(), reason));
    if !dynsmem_kernels::attention::HEAD_DIMS.contains(&p.d) {
        return fail(format!("head dimension 64 or 128 (compiled in), got {}", p.d));
    }
    if !cfg.fits(p.d) {
        return fail(match cfg.kind {
            AttentionBwdKind::Simt => format!(
                "bq 1 to {MAX_TILE} (query rows per tile: the dQ kernel's threads), bk 1 to {MAX_TILE} (key rows per \
                 tile: the dK/dV kernel's threads), stages 1 (got {cfg:?})"
            ),
            AttentionBwdKind::Wgmma => format!(
                "bq {} (compiled in), bk 64 or 128 (64 keys per math warpgroup), stages {} to {} (got {cfg:?})",
                wgmma::WGMMA_BQ,
                wgmma::MIN_STAGES,
                wgmma::MAX_STAGES
            ),
        });
    }
    let Some(mut entries) = entry_names(p.d, p.dtype == Half::Bf16) else {
        return fail(format!("no entry for D {} {:?}", p.d, p.dtype));
    };
    if cfg.kind == AttentionBwdKind::Wgmma {
        let Some(entry) = wgmma_entry_name(p.d, p.dtype == Half::Bf16) else {
            return fail(format!("no entry for D {} {:?}", p.d, p.dtype));
        };
        entries[1] = entry;
        entries[2] = entry;
    }
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
    let grid = grid(p, cfg);
    if grid > u32::MAX as u64 || p.bh() > u32::MAX as u64 {
        return Err((kernel.into(), format!("{grid} blocks: at most 2^32 - 1")));
    }
    Ok(entries)
}

/// The most blocks of a config's launches.
fn grid(p: &AttentionProblem, cfg: &AttentionBwdConfig) -> u64 {
    let bh = p.bh() as u32;
    match cfg.kind {
        AttentionBwdKind::Simt => cfg.dkdv_grid(p.seq, bh).max(cfg.dq_grid(p.seq, bh)),
        AttentionBwdKind::Wgmma => cfg.wgmma_grid(p.seq, bh),
    }
}

/// The kernels of one config and their launch sizes: the pre-pass, then the SIMT dK/dV and
/// dQ kernels, or the one wgmma kernel (`main`, no `dq`).
struct Kernels<K> {
    delta: Prepared<K>,
    main: Prepared<K>,
    dq: Option<Prepared<K>>,
}

/// The inputs, the forward's outputs and the gradients on the device.
pub struct AttentionBwdWorkload<'b, B: FamilyBackend> {
    backend: &'b B,
    kernels: Kernels<B::Kernel>,
    problem: AttentionProblem,
    config: AttentionBwdConfig,
    /// `Q`, `K`, `V`, `dO`, `O`: two 16-bit values per word.
    halves: [Buffer<B::Raw, u32>; 5],
    /// wgmma: the tensor maps of Q, K, V, dO.
    maps: Option<[Buffer<B::Raw, u32>; 4]>,
    lse: Buffer<B::Raw, f32>,
    delta: Buffer<B::Raw, f32>,
    dq: Buffer<B::Raw, f32>,
    dk: Buffer<B::Raw, f32>,
    dv: Buffer<B::Raw, f32>,
    reference: Arc<Reference>,
}

/// The device and image facts the wgmma kernel needs (compute capability 9.0, an `sm_90a`
/// image), checked before building; the SIMT kernels run on every backend.
fn check_device<B: FamilyBackend>(backend: &B, cfg: &AttentionBwdConfig, entry: &str) -> Result<()> {
    if cfg.kind == AttentionBwdKind::Simt {
        return Ok(());
    }
    let unsupported = |what: String| Err(Error::Unsupported { backend: backend.kind(), what });
    let crate::family::AnyBackend::Cuda(cuda) = backend.erase() else {
        return unsupported(format!(
            "{entry}: wgmma and tensor-map copies run on CUDA only (the SIMT kernels run here)"
        ));
    };
    cuda.wgmma_refusal(entry).map_or(Ok(()), unsupported)
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
    check_device(backend, &config, dkdv_entry)?;
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
    let delta = Prepared::new(backend, delta_entry, Ok(0), delta_grid, DELTA_THREADS, variant, None, None)?;
    let prepared = |entry, bytes, grid: u64, threads| {
        Prepared::new(backend, entry, bytes, grid as u32, threads, variant, None, None)
    };
    let kernels = match config.kind {
        AttentionBwdKind::Simt => Kernels {
            delta,
            main: prepared(dkdv_entry, config.dkdv_bytes(problem.d), config.dkdv_grid(problem.seq, bh), config.bk)?,
            dq: Some(prepared(dq_entry, config.dq_bytes(problem.d), config.dq_grid(problem.seq, bh), config.bq)?),
        },
        AttentionBwdKind::Wgmma => Kernels {
            delta,
            main: prepared(
                dkdv_entry,
                config.wgmma_bytes(problem.d),
                config.wgmma_grid(problem.seq, bh),
                config.threads(),
            )?,
            dq: None,
        },
    };
    let host = inputs();
    let forward = host.forward(backend)?;
    let up = |b: Vec<u16>| backend.htod(&pack_halves(&b));
    let halves = [up(host.bits(0))?, up(host.bits(1))?, up(host.bits(2))?, up(host.bits(3))?, up(forward.o.clone())?];
    let maps = if config.kind == AttentionBwdKind::Wgmma {
        use dynsmem_kernels::attention::PANEL;
        // Every tile is copied in boxes of 64 columns x 64 rows (a K/V tile of 128 keys as two).
        let map = |buf: &Buffer<B::Raw, u32>| {
            backend.tensor_map_2d(buf, 2, [d, rows], d * 2, [PANEL, wgmma::WGMMA_BQ], TensorSwizzle::B128)
        };
        Some([map(&halves[0])?, map(&halves[1])?, map(&halves[2])?, map(&halves[3])?])
    } else {
        None
    };
    let reference = host.reference(&forward, config.kind);
    let n = (rows * d) as usize;
    Ok(AttentionBwdWorkload {
        backend,
        kernels,
        problem,
        config,
        halves,
        maps,
        lse: backend.htod(&forward.lse)?,
        delta: backend.alloc::<f32>(rows as usize)?,
        dq: backend.alloc::<f32>(n)?,
        dk: backend.alloc::<f32>(n)?,
        dv: backend.alloc::<f32>(n)?,
        reference,
    })
}

impl<B: FamilyBackend> AttentionBwdWorkload<'_, B> {
    /// The pre-pass, then the dK/dV kernel and the dQ kernel, or `dQ` zeroed and the wgmma
    /// kernel, in stream order.
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
        let [bh_arg, bq, bk] = [Arg::U32(bh), Arg::U32(cfg.bq), Arg::U32(cfg.bk)];
        let (lse, delta) = (self.lse.arg(), self.delta.arg());
        let main = &self.kernels.main;
        if let Some([qm, km, vm, dom]) = &self.maps {
            // The wgmma kernel adds into dQ.
            self.backend.fill_zero(&self.dq)?;
            let (dq, dk, dv) = (self.dq.arg(), self.dk.arg(), self.dv.arg());
            let args = [
                qm.arg(),
                km.arg(),
                vm.arg(),
                dom.arg(),
                lse,
                delta,
                dq,
                dk,
                dv,
                seq,
                bh_arg,
                causal,
                bk,
                Arg::U32(cfg.stages),
            ];
            return self.backend.launch(
                &main.built.kernel,
                main.dims(cfg.wgmma_grid(p.seq, bh) as u32, cfg.threads()),
                &args,
            );
        }
        self.backend.launch(
            &main.built.kernel,
            main.dims(cfg.dkdv_grid(p.seq, bh) as u32, cfg.bk),
            &[
                q.arg(),
                k.arg(),
                v.arg(),
                d_o.arg(),
                lse,
                delta,
                self.dk.arg(),
                self.dv.arg(),
                seq,
                bh_arg,
                causal,
                bq,
                bk,
            ],
        )?;
        let dq = self.kernels.dq.as_ref().expect("the SIMT form has a dQ kernel");
        self.backend.launch(
            &dq.built.kernel,
            dq.dims(cfg.dq_grid(p.seq, bh) as u32, cfg.bq),
            &[q.arg(), k.arg(), v.arg(), d_o.arg(), lse, delta, self.dq.arg(), seq, bh_arg, causal, bq, bk],
        )
    }

    /// `dQ`, `dK`, `dV`, read back.
    pub fn result(&self) -> Result<[Vec<f32>; 3]> {
        Ok([self.backend.dtoh(&self.dq)?, self.backend.dtoh(&self.dk)?, self.backend.dtoh(&self.dv)?])
    }

    /// Compares `dQ`, `dK`, `dV` with the reference rows.
    pub fn compare(&self, [dq, dk, dv]: &[Vec<f32>; 3]) -> Result<()> {
        let d = self.problem.d as usize;
        let [rq, rk, rv] = &*self.reference;
        let main = &self.kernels.main.name;
        let dq_name = self.kernels.dq.as_ref().map_or(main, |k| &k.name);
        check_matrix_entries(&format!("{dq_name} (dQ)"), rq, dq, d, PER_ENTRY)?;
        check_matrix_entries(&format!("{main} (dK)"), rk, dk, d, PER_ENTRY)?;
        check_matrix_entries(&format!("{main} (dV)"), rv, dv, d, PER_ENTRY)?;
        Ok(())
    }

    pub fn problem(&self) -> AttentionProblem {
        self.problem
    }
}

impl<B: FamilyBackend> Workload for AttentionBwdWorkload<'_, B> {
    /// Named after the wgmma kernel or the SIMT dK/dV kernel (the larger launch), with the
    /// largest launch-sized bytes.
    fn kernel(&self) -> KernelInfo {
        let a = self.kernels.main.info();
        let b = self.kernels.dq.as_ref().map_or(0, |k| k.info().shared_bytes);
        KernelInfo { shared_bytes: a.shared_bytes.max(b), ..a }
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

        /// The gradients as the wgmma kernel computes them: `S` and `dP` as f32 sums of
        /// exact products, `P` rounded to the input type for `dV` and for `dS`, `dS` rounded
        /// for `dK` and `dQ`, f32 sums.
        fn in_tensor_core(&self) -> [Vec<f32>; 3] {
            let [q, k, v, g] = &self.values;
            let (seq, d, dt) = (self.p.seq as usize, self.p.d as usize, self.p.dtype);
            let scale = 1.0 / (d as f32).sqrt();
            let scale2 = std::f32::consts::LOG2_E * scale;
            let round = |x: f32| dt.value(dt.bits(x));
            let delta: Vec<f32> =
                (0..seq).map(|i| (0..d).fold(0f32, |s, e| self.o[i * d + e].mul_add(g[i * d + e], s))).collect();
            let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).fold(0f32, |s, (x, y)| x.mul_add(*y, s));
            let (mut dq, mut dk, mut dv) = (vec![0f32; seq * d], vec![0f32; seq * d], vec![0f32; seq * d]);
            for i in 0..seq {
                for j in (0..seq).filter(|&j| !self.p.causal || j <= i) {
                    let (qi, kj, vj, gi) = (&q[i * d..][..d], &k[j * d..][..d], &v[j * d..][..d], &g[i * d..][..d]);
                    let lse2 = self.lse[i] * std::f32::consts::LOG2_E;
                    let p = round(dot(qi, kj).mul_add(scale2, -lse2).exp2());
                    let ds = round(p * (dot(gi, vj) - delta[i]));
                    for e in 0..d {
                        dv[j * d + e] = p.mul_add(gi[e], dv[j * d + e]);
                        dk[j * d + e] = ds.mul_add(qi[e], dk[j * d + e]);
                        dq[i * d + e] = ds.mul_add(kj[e], dq[i * d + e]);
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
                let q = reference_row(&t, Grad::Dq, 0, r, None, Form::F32);
                let kv = reference_row(&t, Grad::Dkdv, 0, r, None, Form::F32);
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
                    let (q, q_skip) = (
                        reference_row(&t, Grad::Dq, 0, i, None, Form::F32),
                        reference_row(&t, Grad::Dq, 0, i, Some(j), Form::F32),
                    );
                    let (kv, kv_skip) = (
                        reference_row(&t, Grad::Dkdv, 0, j, None, Form::F32),
                        reference_row(&t, Grad::Dkdv, 0, j, Some(i), Form::F32),
                    );
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
    fn the_tensor_core_arithmetic_stays_inside_its_bounds_and_not_inside_f32_s() {
        for (dtype, causal) in [(Half::F16, false), (Half::Bf16, true), (Half::F16, true), (Half::Bf16, false)] {
            let case = Case::new(40, dtype, causal);
            let t = case.tensors();
            let [dq, dk, dv] = case.in_tensor_core();
            let (d, tc) = (case.p.d as usize, form(AttentionBwdKind::Wgmma, dtype));
            let mut outside_f32 = 0;
            for r in 0..case.p.seq as usize {
                let (q, kv) =
                    (reference_row(&t, Grad::Dq, 0, r, None, tc), reference_row(&t, Grad::Dkdv, 0, r, None, tc));
                let (q32, kv32) = (
                    reference_row(&t, Grad::Dq, 0, r, None, Form::F32),
                    reference_row(&t, Grad::Dkdv, 0, r, None, Form::F32),
                );
                for e in 0..d {
                    let at = r * d + e;
                    assert!(PER_ENTRY.allows(q.a[e], dq[at] as f64, q.a_err[e]), "dQ[{r}][{e}] {dtype:?} {causal}");
                    assert!(PER_ENTRY.allows(kv.a[e], dk[at] as f64, kv.a_err[e]), "dK[{r}][{e}] {dtype:?} {causal}");
                    assert!(PER_ENTRY.allows(kv.b[e], dv[at] as f64, kv.b_err[e]), "dV[{r}][{e}] {dtype:?} {causal}");
                    outside_f32 += !PER_ENTRY.allows(q32.a[e], dq[at] as f64, q32.a_err[e]) as usize
                        + !PER_ENTRY.allows(kv32.b[e], dv[at] as f64, kv32.b_err[e]) as usize;
                }
            }
            // The rounding of P and dS is what the wider bounds admit: the f32 ones refuse it.
            assert!(outside_f32 > 0, "{dtype:?} {causal}: every entry inside the f32 bounds");
        }
    }

    #[test]
    fn one_left_out_pair_fails_the_tensor_core_bounds_too() {
        for dtype in [Half::F16, Half::Bf16] {
            let case = Case::new(40, dtype, true);
            let t = case.tensors();
            let (d, tc) = (case.p.d as usize, form(AttentionBwdKind::Wgmma, dtype));
            let moved =
                |want: &[f64], got: &[f64], err: &[f64]| (0..d).any(|e| !PER_ENTRY.allows(want[e], got[e], err[e]));
            let (mut pairs, mut moved_all) = (0, 0);
            for i in [3, 11, 20, 39] {
                for j in [0, 2, 3, 9, 19, 30].into_iter().filter(|&j| j <= i) {
                    pairs += 1;
                    let (q, q_skip) =
                        (reference_row(&t, Grad::Dq, 0, i, None, tc), reference_row(&t, Grad::Dq, 0, i, Some(j), tc));
                    let (kv, kv_skip) = (
                        reference_row(&t, Grad::Dkdv, 0, j, None, tc),
                        reference_row(&t, Grad::Dkdv, 0, j, Some(i), tc),
                    );
                    moved_all += (moved(&q.a, &q_skip.a, &q.a_err)
                        && moved(&kv.a, &kv_skip.a, &kv.a_err)
                        && moved(&kv.b, &kv_skip.b, &kv.b_err)) as usize;
                }
            }
            assert!(moved_all * 4 >= pairs * 3, "{dtype:?}: all three moved for {moved_all} of {pairs} pairs");
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
        let wgmma = AttentionBwdConfig::wgmma(128, 2);
        assert_eq!(validate(&p, &wgmma).unwrap()[1], "attention_bwd_wgmma_f16_d128");
        for bad in [
            AttentionBwdConfig::wgmma(96, 2),
            AttentionBwdConfig::wgmma(128, 5),
            AttentionBwdConfig { bq: 128, ..wgmma },
        ] {
            let (kernel, why) = validate(&p, &bad).unwrap_err();
            assert!(kernel == "attention_bwd_wgmma" && why.contains("bk 64 or 128"), "{bad:?}: {why}");
        }
    }

    #[test]
    fn the_wgmma_layout_is_swizzle_aligned_and_its_largest_tiles_fit_the_h100() {
        let cfg = AttentionBwdConfig::wgmma(128, 2);
        let l = cfg.wgmma_layout(128).unwrap();
        assert!([l.k.offset(), l.v.offset(), l.ring.offset(), l.ds.offset()].iter().all(|o| o % 1024 == 0));
        assert_eq!(l.dq.offset() % 16, 0);
        assert_eq!(cfg.wgmma_bytes(128).unwrap(), 199720, "docs/families.md states it");
        assert!(AttentionBwdConfig::wgmma(128, 3).wgmma_bytes(128).unwrap() > 232448);
        assert!(AttentionBwdConfig::wgmma(128, 4).wgmma_bytes(64).unwrap() <= 232448);
        assert_eq!((cfg.threads(), AttentionBwdConfig::wgmma(64, 2).threads()), (384, 256));
    }
}
