//! The half-precision GEMM `C (m x n) = A (m x k) B^T` (`A` row-major `m x k`, `B` row-major
//! `n x k`), its inputs given as the values of their 16-bit elements (widened to f32, exact).

/// Entry `(i, j)` of `C` and the scale its rounding error grows with: `(sum_t a_it b_jt,
/// sum_t |a_it b_jt|)`, in f64.
pub fn entry(a: &[f32], b: &[f32], k: usize, i: usize, j: usize) -> (f64, f64) {
    let (row, col) = (&a[i * k..(i + 1) * k], &b[j * k..(j + 1) * k]);
    row.iter().zip(col).fold((0.0, 0.0), |(s, t), (&x, &y)| {
        let p = x as f64 * y as f64;
        (s + p, t + p.abs())
    })
}
