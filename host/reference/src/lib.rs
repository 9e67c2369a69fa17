//! The CPU references of the built-in kernel families: what each kernel computes, written as
//! the plain definition in f64 (no tiles, no shared memory, no algorithm of the kernel's), and
//! where the result is a sum, the scale its rounding error grows with (the sum of the terms'
//! magnitudes). `dynsmem-host` checks every backend's result against them; the kernel tests
//! (host/kernel-tests) check the CPU executor's.
//!
//! Inputs are row-major. Large inputs are spread over the host's cores ([`par`]).

pub mod attention;
pub mod hgemm;
pub mod nbody;
pub mod par;
pub mod reduce;

/// Row-wise softmax of a `rows x cols` matrix: `exp(x - max) / sum exp(x - max)` per row.
pub fn softmax(input: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    let per_row = par::map(rows, |r| {
        let row = &input[r * cols..(r + 1) * cols];
        let m = row.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x as f64));
        let e: Vec<f64> = row.iter().map(|&x| (x as f64 - m).exp()).collect();
        let s: f64 = e.iter().sum();
        e.into_iter().map(|v| v / s).collect::<Vec<f64>>()
    });
    per_row.into_iter().flatten().collect()
}

/// RMSNorm of a `rows x cols` matrix with weights `g` (`cols` of them): `x / sqrt(mean(x^2) +
/// eps) * g` per row.
pub fn rmsnorm(x: &[f32], g: &[f32], rows: usize, cols: usize, eps: f32) -> Vec<f64> {
    let per_row = par::map(rows, |r| {
        let row = &x[r * cols..(r + 1) * cols];
        let ss: f64 = row.iter().map(|&v| v as f64 * v as f64).sum();
        let inv = 1.0 / (ss / cols as f64 + eps as f64).sqrt();
        row.iter().zip(g).map(|(&v, &w)| v as f64 * inv * w as f64).collect::<Vec<f64>>()
    });
    per_row.into_iter().flatten().collect()
}

/// The transpose of a `rows x cols` matrix: output element `i` (row `i / rows` of the
/// `cols x rows` result) is input element `(i % rows, i / rows)`.
pub fn transpose(input: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    par::map(rows * cols, |i| input[(i % rows) * cols + i / rows] as f64)
}

/// The 1-D convolution of `x` with the odd-length taps `w`, centred, zero outside `x`; and
/// per output the sum of `|w_k x_j|`.
pub fn conv1d(x: &[f32], w: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let half = w.len() / 2;
    let n = x.len();
    let both = par::map(n, |i| {
        let (mut y, mut scale) = (0.0f64, 0.0f64);
        for (k, &wk) in w.iter().enumerate() {
            let j = i + k;
            if j >= half && j - half < n {
                let p = wk as f64 * x[j - half] as f64;
                y += p;
                scale += p.abs();
            }
        }
        (y, scale)
    });
    both.into_iter().unzip()
}

/// The 2-D stencil of radius `radius` (weights `w`, `(2 radius + 1)^2` of them, row-major)
/// over a `width x height` image, edges clamped; and per output the sum of `|w x|`.
pub fn stencil2d(image: &[f32], width: usize, height: usize, radius: usize, w: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let k = 2 * radius + 1;
    let both = par::map(width * height, |i| {
        let (x, y) = (i % width, i / width);
        let (mut out, mut scale) = (0.0f64, 0.0f64);
        for dy in 0..k {
            for dx in 0..k {
                let sx = (x + dx).saturating_sub(radius).min(width - 1);
                let sy = (y + dy).saturating_sub(radius).min(height - 1);
                let p = w[dy * k + dx] as f64 * image[sy * width + sx] as f64;
                out += p;
                scale += p.abs();
            }
        }
        (out, scale)
    });
    both.into_iter().unzip()
}

/// The count of each of `bins` bins; keys `>= bins` are not counted.
pub fn histogram(keys: &[u32], bins: u32) -> Vec<u32> {
    let mut counts = vec![0u32; bins as usize];
    for &k in keys {
        if k < bins {
            counts[k as usize] += 1;
        }
    }
    counts
}

/// The exclusive prefix sums of `data` in f64, and per output the prefix sum of magnitudes.
pub fn exclusive_scan_f32(data: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let (mut s, mut a) = (0.0f64, 0.0f64);
    data.iter()
        .map(|&x| {
            let out = (s, a);
            s += x as f64;
            a += (x as f64).abs();
            out
        })
        .unzip()
}

/// The exclusive prefix sums of `data`, wrapping.
pub fn exclusive_scan_u32(data: &[u32]) -> Vec<u32> {
    let mut s = 0u32;
    data.iter()
        .map(|&x| {
            let out = s;
            s = s.wrapping_add(x);
            out
        })
        .collect()
}

/// Entry `(i, j)` of `alpha A B + beta C` (`A` is `m x k`, `B` `k x n`, `C` `m x n`) in f64,
/// and the scale its rounding error grows with (`|alpha| sum |a b| + |beta c|`).
pub fn gemm_entry(
    (a, b, c): (&[f32], &[f32], &[f32]),
    (n, k): (usize, usize),
    (alpha, beta): (f32, f32),
    (i, j): (usize, usize),
) -> (f64, f64) {
    let (mut dot, mut abs) = (0.0f64, 0.0f64);
    for p in 0..k {
        let prod = a[i * k + p] as f64 * b[p * n + j] as f64;
        dot += prod;
        abs += prod.abs();
    }
    let old = beta as f64 * c[i * n + j] as f64;
    (alpha as f64 * dot + old, (alpha as f64).abs() * abs + old.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_rows_sum_to_one() {
        let out = softmax(&[0.0, 1.0, 2.0, -1.0, -1.0, -1.0], 2, 3);
        assert!((out[..3].iter().sum::<f64>() - 1.0).abs() < 1e-15);
        assert!((out[3] - 1.0 / 3.0).abs() < 1e-15);
        assert!((out[2] / out[1] - 1f64.exp()).abs() < 1e-12);
    }

    #[test]
    fn scans_are_exclusive_and_u32_wraps() {
        assert_eq!(exclusive_scan_u32(&[u32::MAX, 2, 3]), vec![0, u32::MAX, 1]);
        assert_eq!(exclusive_scan_f32(&[1.0, -2.0, 4.0]), (vec![0.0, 1.0, -1.0], vec![0.0, 1.0, 3.0]));
    }

    #[test]
    fn conv1d_and_stencil_pad_and_clamp() {
        assert_eq!(conv1d(&[1.0, 2.0, 3.0], &[1.0, 10.0, 100.0]).0, vec![210.0, 321.0, 32.0]);
        // 2 x 1 image, radius 1, only the right-hand weight: the right edge clamps to itself.
        let mut w = vec![0.0; 9];
        w[5] = 1.0;
        assert_eq!(stencil2d(&[1.0, 2.0], 2, 1, 1, &w).0, vec![2.0, 2.0]);
    }

    #[test]
    fn gemm_entry_is_alpha_ab_plus_beta_c() {
        // A = [1 2], B = [3; 4], C = [5]: 2 (1*3 + 2*4) + 0.5 * 5.
        let e = gemm_entry((&[1.0, 2.0], &[3.0, 4.0], &[5.0]), (1, 2), (2.0, 0.5), (0, 0));
        assert_eq!(e, (24.5, 24.5));
    }

    #[test]
    fn histogram_ignores_keys_past_the_last_bin() {
        assert_eq!(histogram(&[0, 1, 1, 5], 2), vec![1, 2]);
    }
}
