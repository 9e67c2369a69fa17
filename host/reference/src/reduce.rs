//! Reduce: the sum, minimum or maximum of a slice, as plain folds. Float sums are taken in
//! f64 with the sum of magnitudes (the scale an f32 sum's rounding error grows with) and its
//! positive and negative parts (whether an f32 partial sum can overflow); `u32` sums wrap
//! (modulo 2^32).
//!
//! NaN and infinities as every backend implements them: min and max ignore NaN operands
//! (`f64::min`; all NaN gives the identity, +inf for min, -inf for max) and treat
//! infinities as values; a sum is NaN when any input is NaN or both +inf and -inf occur,
//! else +inf or -inf when one occurs.

/// The sum of `f32`s in f64 and the magnitudes it grows its rounding error with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloatSum {
    /// The sum, in f64 (0 for no input).
    pub value: f64,
    /// The sum of magnitudes (NaN when an input is NaN).
    pub abs_sum: f64,
    /// The sum of the positive inputs.
    pub pos_sum: f64,
    /// The sum of the magnitudes of the negative inputs.
    pub neg_sum: f64,
}

/// The sum of `data` in f64, with its sums of magnitudes.
pub fn sum_f32(data: &[f32]) -> FloatSum {
    let wide = || data.iter().map(|&x| x as f64);
    FloatSum {
        value: wide().sum(),
        abs_sum: wide().map(f64::abs).sum(),
        pos_sum: wide().filter(|&x| x > 0.0).sum(),
        neg_sum: wide().filter(|&x| x < 0.0).map(f64::abs).sum(),
    }
}

/// The least of `data`, NaN ignored; +inf for no input (or only NaN).
pub fn min_f32(data: &[f32]) -> f64 {
    data.iter().fold(f64::INFINITY, |m, &x| m.min(x as f64))
}

/// The greatest of `data`, NaN ignored; -inf for no input (or only NaN).
pub fn max_f32(data: &[f32]) -> f64 {
    data.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x as f64))
}

/// The sum of `data` modulo 2^32.
pub fn sum_u32(data: &[u32]) -> u32 {
    data.iter().fold(0u32, |s, &x| s.wrapping_add(x))
}

/// The least of `data`; `u32::MAX` for no input.
pub fn min_u32(data: &[u32]) -> u32 {
    data.iter().fold(u32::MAX, |m, &x| m.min(x))
}

/// The greatest of `data`; 0 for no input.
pub fn max_u32(data: &[u32]) -> u32 {
    data.iter().fold(0, |m, &x| m.max(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_semantics() {
        let f = [1.5f32, -2.0, f32::NAN, 4.0];
        assert_eq!(min_f32(&f), -2.0);
        assert_eq!(max_f32(&f), 4.0);
        assert!(sum_f32(&f).value.is_nan() && sum_f32(&f).abs_sum.is_nan());
        let s = sum_f32(&[1.0, -1.0, 2.0]);
        assert_eq!((s.value, s.abs_sum, s.pos_sum, s.neg_sum), (2.0, 4.0, 3.0, 1.0));
        assert!(sum_f32(&[f32::INFINITY, f32::NEG_INFINITY]).value.is_nan());
        assert_eq!((min_f32(&[]), max_f32(&[f32::NAN])), (f64::INFINITY, f64::NEG_INFINITY));
    }

    #[test]
    fn integer_semantics() {
        let u = [u32::MAX, 2, 7];
        assert_eq!((sum_u32(&u), min_u32(&u), max_u32(&u)), (8, 2, u32::MAX));
        assert_eq!((sum_u32(&[]), min_u32(&[]), max_u32(&[])), (0, u32::MAX, 0));
    }
}
