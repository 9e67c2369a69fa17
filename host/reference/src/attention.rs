//! Attention, forward and backward: `O = softmax(Q K^T / sqrt(D)) V` and the row log-sum-exp
//! per head, and the gradients `dQ`, `dK`, `dV` for an output gradient `dO`, in f64 with a
//! bound per entry on the error a correct f32 kernel may make. Tensors are `heads x seq x D`
//! row-major (each head's rows contiguous), their 16-bit elements given as values (widened
//! to f32, exact). Causal masking is top-left aligned: query `i` sees keys `0..=i`.

const EPS: f64 = f32::EPSILON as f64;

/// The shape of a problem's tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Queries and keys per head.
    pub seq: usize,
    /// Head dimension.
    pub d: usize,
    /// Query `i` sees keys `0..=i` only.
    pub causal: bool,
}

/// The reference of one row of the forward: `O`'s entries, the error each may have, `lse`
/// and its error.
#[derive(Debug, Clone, Default)]
pub struct ForwardRow {
    pub out: Vec<f64>,
    pub out_err: Vec<f64>,
    pub lse: f64,
    pub lse_err: f64,
}

/// Row `row` of `head` of the forward, with key `skip` left out where given (the tests' one
/// wrong term); `unit_roundoff` is the 16-bit type's (`P` and `O` are rounded to it).
///
/// The error a correct kernel may make, per entry, from the inputs of the row (bounds, not
/// estimates):
/// - scores: each `s_j` is an f32 dot product of `D` exact products, off by at most
///   `(D + 2) eps sum_d |q_d k_jd| / sqrt(D)` =: `ds` (the scale's rounding included);
///   every weight `p_j = exp(s_j - lse)` is then off by a factor up to `exp(2 ds)`;
/// - the exponentials (`ex2.approx`: 2^-21 relative) and the f32 sums over the keys
///   (`(keys + 8) eps` relative to `sum p |v|`);
/// - `P` rounded to the input type before the second product (unit roundoff `u` of each
///   weight), and `O` rounded to it at the end (`u |o|`).
///
/// So entry `d` of `O` may be off by `(2 u + (keys + 8) eps + 2^-20 + 4 ds) sum_j p_j
/// |v_jd| + u |o_d|`, and `lse` by `ds + (keys + 8) eps + 2^-20 + 4 eps |lse|`. A missing key
/// moves an entry of `O` by `p_j |v_jd - o_d|` and `lse` by `-log(1 - p_j)`: past these bounds
/// wherever its weight is not negligible.
pub fn forward_row(
    shape: Shape,
    unit_roundoff: f64,
    [q, k, v]: [&[f32]; 3],
    head: usize,
    row: usize,
    skip: Option<usize>,
) -> ForwardRow {
    let Shape { seq, d, causal } = shape;
    let base = head * seq * d;
    let qr = &q[base + row * d..base + (row + 1) * d];
    let keys = if causal { row + 1 } else { seq };
    let scale = 1.0 / (d as f64).sqrt();
    let mut scores = Vec::with_capacity(keys);
    let mut ds: f64 = 0.0;
    for j in (0..keys).filter(|j| Some(*j) != skip) {
        let kr = &k[base + j * d..base + (j + 1) * d];
        let (s, abs) = qr.iter().zip(kr).fold((0.0, 0.0), |(s, a), (&x, &y)| {
            let t = x as f64 * y as f64;
            (s + t, a + t.abs())
        });
        scores.push(s * scale);
        ds = ds.max((d as f64 + 2.0) * EPS * abs * scale);
    }
    let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = scores.iter().map(|s| (s - m).exp()).collect();
    let l: f64 = weights.iter().sum();
    let u = unit_roundoff;
    let rel = 2.0 * u + (keys as f64 + 8.0) * EPS + 2f64.powi(-20) + 4.0 * ds;
    let mut out = vec![0.0; d];
    let mut out_err = vec![0.0; d];
    for (j, w) in (0..keys).filter(|j| Some(*j) != skip).zip(&weights) {
        let vr = &v[base + j * d..base + (j + 1) * d];
        for i in 0..d {
            out[i] += w * vr[i] as f64;
            out_err[i] += w * (vr[i] as f64).abs();
        }
    }
    for i in 0..d {
        out[i] /= l;
        out_err[i] = rel * out_err[i] / l + u * out[i].abs();
    }
    let lse = m + l.ln();
    let lse_err = ds + (keys as f64 + 8.0) * EPS + 2f64.powi(-20) + 4.0 * EPS * lse.abs();
    ForwardRow { out, out_err, lse, lse_err }
}

/// `Delta_r = dO_r . O_r` and `sum |dO_r O_r|` of each of the `rows` rows of width `d`.
pub fn delta(o: &[f32], d_o: &[f32], rows: usize, d: usize) -> Vec<(f64, f64)> {
    (0..rows)
        .map(|r| {
            let (g, o) = (&d_o[r * d..(r + 1) * d], &o[r * d..(r + 1) * d]);
            g.iter().zip(o).fold((0.0, 0.0), |(s, a), (&x, &y)| {
                let t = x as f64 * y as f64;
                (s + t, a + t.abs())
            })
        })
        .collect()
}

/// The tensors of one backward problem as the reference sees them: the inputs, the
/// forward's `O` (as values, through [`delta`]) and `lse`, and each row's `Delta` with
/// `sum |dO O|`.
pub struct Tensors<'a> {
    pub shape: Shape,
    pub q: &'a [f32],
    pub k: &'a [f32],
    pub v: &'a [f32],
    pub d_o: &'a [f32],
    pub lse: &'a [f32],
    pub delta: Vec<(f64, f64)>,
}

impl<'a> Tensors<'a> {
    /// `O` and `lse` are the forward's, taken as given: the bounds are those of the
    /// backward's own arithmetic.
    pub fn new(shape: Shape, [q, k, v, d_o]: [&'a [f32]; 4], o: &[f32], lse: &'a [f32]) -> Tensors<'a> {
        let delta = delta(o, d_o, lse.len(), shape.d);
        Tensors { shape, q, k, v, d_o, lse, delta }
    }
    fn row<'b>(&self, t: &'b [f32], head: usize, r: usize) -> &'b [f32] {
        let (seq, d) = (self.shape.seq, self.shape.d);
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
    /// `dP - Delta`.
    diff: f64,
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
    let d = t.shape.d as f64;
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
    let lse = t.lse[head * t.shape.seq + i] as f64;
    let p = (s - lse).exp();
    let x = (d + 8.0) * EPS * s_abs + 2.0 * EPS * (lse.abs() + (s - lse).abs()) + 2f64.powi(-20);
    let p_rel = 2.0 * x;
    let (dp, dp_abs) = dot(gi, vj);
    let (delta, delta_abs) = t.delta[head * t.shape.seq + i];
    let diff = dp - delta;
    let ds_err = p * ((p_rel + 3.0 * EPS) * diff.abs() + (1.0 + p_rel) * (d + 2.0) * EPS * (dp_abs + delta_abs));
    Pair { p, p_rel, ds: p * diff, ds_err, diff }
}

/// Which gradient row a reference is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grad {
    /// `dQ` of query `i`: a sum over the keys it sees.
    Dq,
    /// `dK` and `dV` of key `j`: sums over the queries that see it.
    Dkdv,
}

/// A reference row of the backward: the entries of `dQ` (or of `dK`, then `dV`) and the
/// error each may have.
#[derive(Debug, Clone, Default)]
pub struct GradRow {
    /// `dQ_i` (Dq) or `dK_j` (Dkdv).
    pub a: Vec<f64>,
    pub a_err: Vec<f64>,
    /// `dV_j` (Dkdv); empty for Dq.
    pub b: Vec<f64>,
    pub b_err: Vec<f64>,
}

/// The arithmetic a backward kernel does, which sets its bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Form {
    /// Every product and sum in f32 (the SIMT kernels).
    F32,
    /// Tensor cores: `P` rounded to the 16-bit input type (relative error `unit`, absolute
    /// `tiny` where the result is subnormal) for `dV`'s product and for `dS = P (dP - Delta)`,
    /// which is rounded likewise for `dK`'s and `dQ`'s products; the products' sums in the
    /// tensor cores' f32 accumulation (taken as one ulp, `2 eps`, per addition).
    TensorCore { unit: f64, tiny: f64 },
}

/// The reference of row `r` of `head` for `grad` under `form`'s arithmetic, with the pair
/// `(r, skip)` (Dq) or `(skip, r)` (Dkdv) left out where `skip` is given (the tests' one
/// wrong term).
///
/// The sums over `n` pairs: each term's error from the pair's (see `pair`), then the f32
/// accumulation (fused multiply-adds in a chain: `(n + 2) eps` relative to the sum of the
/// terms' sizes), then the final multiply by an approximate `rsqrt` (`2^-20` relative to the
/// same sum):
/// - `dV_jd = sum_i P_ij dO_id`: error `sum_i P_ij |dO_id| (p_rel + (n + 3) eps)`;
/// - `dK_jd = scale sum_i dS_ij q_id`: error `scale sum_i [dS_err |q_id| + ((n + 2) eps +
///   2^-20) (|dS_ij| + dS_err) |q_id|]`; `dQ_id` likewise over the keys, with `k_jd`.
///
/// Under [`Form::TensorCore`] each term also carries its rounded factors' errors (`unit |P| +
/// tiny` on `dV`'s; on `dK`'s and `dQ`'s, `P`'s through `dS`, `unit |dS| + tiny |dP - Delta|`,
/// and `dS`'s own, `unit |dS| + tiny`) and the accumulation's `eps` is doubled.
///
/// A missing pair moves an entry by its term (`P_ij dO_id`, `scale dS_ij q_id`): past the
/// bound wherever the term is not negligible against the sum's size.
pub fn backward_row(t: &Tensors<'_>, grad: Grad, head: usize, r: usize, skip: Option<usize>, form: Form) -> GradRow {
    let (unit, tiny, acc) = match form {
        Form::F32 => (0.0, 0.0, EPS),
        Form::TensorCore { unit, tiny } => (unit, tiny, 2.0 * EPS),
    };
    let Shape { seq, d, causal } = t.shape;
    let scale = 1.0 / (d as f64).sqrt();
    let others = match (grad, causal) {
        (Grad::Dq, true) => 0..r + 1,
        (Grad::Dkdv, true) => r..seq,
        (_, false) => 0..seq,
    };
    let n = others.len() as f64;
    let mut out = GradRow {
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
                let rounded = 2.0 * unit * (pr.ds.abs() + pr.ds_err) + tiny * (1.0 + pr.diff.abs());
                for e in 0..d {
                    let x = kj[e] as f64;
                    out.a[e] += pr.ds * x;
                    a_own[e] += (pr.ds_err + rounded) * x.abs();
                    a_size[e] += (pr.ds.abs() + pr.ds_err) * x.abs();
                }
            }
            Grad::Dkdv => {
                let (qi, gi) = (t.row(t.q, head, i), t.row(t.d_o, head, i));
                let rounded_ds = 2.0 * unit * (pr.ds.abs() + pr.ds_err) + tiny * (1.0 + pr.diff.abs());
                let rounded_p = unit * pr.p + tiny;
                for e in 0..d {
                    let (x, g) = (qi[e] as f64, gi[e] as f64);
                    out.a[e] += pr.ds * x;
                    a_own[e] += (pr.ds_err + rounded_ds) * x.abs();
                    a_size[e] += (pr.ds.abs() + pr.ds_err) * x.abs();
                    out.b[e] += pr.p * g;
                    b_own[e] += (pr.p * pr.p_rel + rounded_p) * g.abs();
                    b_size[e] += pr.p * g.abs();
                }
            }
        }
    }
    for e in 0..d {
        out.a[e] *= scale;
        out.a_err[e] = scale * (a_own[e] + ((n + 2.0) * acc + 2f64.powi(-20)) * a_size[e]);
        if grad == Grad::Dkdv {
            out.b_err[e] = b_own[e] + (n + 3.0) * acc * b_size[e];
        }
    }
    out
}
