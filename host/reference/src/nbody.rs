//! The n-body step's reference: one body's new state after one semi-implicit Euler step of
//! the all-pairs softened gravity, in f64.

/// Body `i` after one step of `dt` with softening length `softening` (`pos` as `[x, y, z,
/// m]`, `vel` as `[vx, vy, vz, 0]` per body): its new position and velocity (`[x, y, z, m,
/// vx, vy, vz, 0]`) and the error scale of each component. The acceleration is `sum_j m_j
/// d_j / (|d_j|^2 + softening^2)^(3/2)` with `d_j = p_j - p_i` over every body (the body's
/// own term is zero); `v' = v + a dt`, `p' = p + v' dt`.
pub fn step_body(pos: &[[f32; 4]], vel: &[[f32; 4]], i: usize, dt: f32, softening: f32) -> ([f64; 8], [f64; 8]) {
    let me = pos[i].map(|v| v as f64);
    let eps2 = (softening as f64).powi(2);
    let (mut a, mut scale) = ([0.0f64; 3], [0.0f64; 3]);
    for b in pos {
        let d = [b[0] as f64 - me[0], b[1] as f64 - me[1], b[2] as f64 - me[2]];
        let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2;
        let s = b[3] as f64 / (r2 * r2.sqrt());
        for c in 0..3 {
            a[c] += d[c] * s;
            scale[c] += (d[c] * s).abs();
        }
    }
    let dt = dt as f64;
    let v = vel[i].map(|v| v as f64);
    let nv = [v[0] + a[0] * dt, v[1] + a[1] * dt, v[2] + a[2] * dt];
    let np = [me[0] + nv[0] * dt, me[1] + nv[1] * dt, me[2] + nv[2] * dt];
    let sv = [v[0].abs() + scale[0] * dt, v[1].abs() + scale[1] * dt, v[2].abs() + scale[2] * dt];
    let sp = [me[0].abs() + sv[0] * dt, me[1].abs() + sv[1] * dt, me[2].abs() + sv[2] * dt];
    ([np[0], np[1], np[2], me[3], nv[0], nv[1], nv[2], 0.0], [sp[0], sp[1], sp[2], 0.0, sv[0], sv[1], sv[2], 0.0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_bodies_pull_by_the_inverse_square() {
        // Body 1 (mass 2) one unit along x from body 0 (mass 1): a_0 = 2 / 1, a_1 = -1 / 1;
        // each body's own term is zero (a softening is what keeps it 0 / r^3 finite; 1e-30
        // leaves r^2 = 1 exact). One step of 0.5 from rest.
        let pos = [[0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 2.0]];
        let vel = [[0.0; 4]; 2];
        let (b0, s0) = step_body(&pos, &vel, 0, 0.5, 1e-30);
        assert_eq!(b0, [0.5, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0]);
        assert_eq!(s0, [0.5, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]);
        let (b1, _) = step_body(&pos, &vel, 1, 0.5, 1e-30);
        assert_eq!(b1, [0.75, 0.0, 0.0, 2.0, -0.5, 0.0, 0.0, 0.0]);
        // A softening of 1: r^2 + 1 = 2, so a_0 = 2 / 2^1.5.
        let (b0, _) = step_body(&pos, &vel, 0, 1.0, 1.0);
        assert!((b0[4] - 2.0 / 2f64.powf(1.5)).abs() < 1e-15);
    }
}
