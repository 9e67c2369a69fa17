//! Comparing device results with CPU references, with a tolerance that knows the dtype.
//!
//! Integers compare exactly. Floats compare with `|actual - expected| <= atol + rtol * scale`
//! where `scale` is what the rounding error of the computation is proportional to (for a
//! sum: the sum of absolute values, not the sum, which cancellation can make tiny).

use std::fmt;

use crate::element::Element;

/// How close a float result must be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Relative to the scale of the computation.
    pub rtol: f64,
    /// Absolute floor.
    pub atol: f64,
}

impl Tolerance {
    /// Exact equality (integers, min/max of floats: both select an input element).
    pub const EXACT: Tolerance = Tolerance { rtol: 0.0, atol: 0.0 };

    /// For a sum of `T` evaluated as a tree whose longest chain of dependent additions
    /// is `depth`: the classic bound `|error| <= depth * eps * sum |x_i|`, doubled for the
    /// rounding of the reference itself. Zero for integer types.
    pub fn summation<T: Element>(depth: u64) -> Tolerance {
        Tolerance { rtol: 2.0 * depth.max(1) as f64 * T::EPSILON, atol: 0.0 }
    }

    /// Whether `actual` is close enough to `expected`. NaN matches only NaN, an infinity
    /// only itself, a finite value only a finite one; equal values always match, so an exact comparison holds whatever the
    /// scale (a scale of NaN or infinity, from non-finite inputs, would make the bound NaN).
    pub fn allows(&self, expected: f64, actual: f64, scale: f64) -> bool {
        if expected.is_nan() {
            return actual.is_nan();
        }
        if expected.is_infinite() || actual == expected {
            return actual == expected;
        }
        // A finite expectation is never met by a NaN or an infinity, whatever the bound.
        actual.is_finite() && (actual - expected).abs() <= self.bound(scale)
    }

    /// The allowed absolute difference at `scale`: `atol + rtol * |scale|`, with no
    /// relative part when `rtol` is 0 (so an infinite scale does not make it NaN).
    pub fn bound(&self, scale: f64) -> f64 {
        if self.rtol == 0.0 { self.atol } else { self.atol + self.rtol * scale.abs() }
    }
}

/// A result that does not match its reference: which element, what was expected, what
/// the device returned, and the bound it broke.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct Mismatch {
    pub kernel: String,
    pub index: usize,
    pub expected: String,
    pub actual: String,
    /// The allowed absolute difference at that element (0 for exact comparison).
    pub allowed: f64,
    /// How many elements differ in all.
    pub count: usize,
    pub len: usize,
    /// What the result was checked against, for the message (`None`: the CPU reference).
    pub against: Option<Box<str>>,
}

impl Mismatch {
    /// This mismatch, said to be against `against` (e.g. "the kernel's f64 reference").
    pub fn against(mut self, against: impl Into<String>) -> Mismatch {
        self.against = Some(against.into().into_boxed_str());
        self
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: result differs from {} at index {}: expected {}, got {}",
            self.kernel,
            self.against.as_deref().unwrap_or("the CPU reference"),
            self.index,
            self.expected,
            self.actual
        )?;
        if self.allowed > 0.0 {
            write!(f, " (allowed difference {:.3e})", self.allowed)?;
        }
        if self.count > 1 {
            write!(f, "; {} of {} elements differ", self.count, self.len)?;
        }
        Ok(())
    }
}

/// What an f32 a kernel returned says of where it came from, when it is a poison value:
/// the outputs' own ([`crate::element::Element::poison`], never written) or the CPU
/// backend's workgroup-memory poison (every byte
/// [`crate::backend::cpu::REGION_POISON`]: stored from workgroup memory no thread wrote).
pub fn poison_note(x: f32) -> Option<&'static str> {
    let region = u32::from_ne_bytes([crate::backend::cpu::REGION_POISON; 4]);
    if x.to_bits() == region {
        Some(
            "workgroup memory's poison: the kernel stored a value it read from launch-sized workgroup memory \
             that no thread had written (read before it was staged, or outside what was staged)",
        )
    } else if x.to_bits() == <f32 as Element>::poison().to_bits() {
        Some("the output's poison: no thread wrote this element")
    } else {
        None
    }
}

/// Compares a scalar result. `scale` as in [`Tolerance::allows`].
pub fn check_scalar<T: Element>(
    kernel: &str,
    expected: f64,
    actual: T,
    scale: f64,
    tol: Tolerance,
) -> Result<(), Mismatch> {
    let ok = if T::EPSILON == 0.0 { actual.to_f64() == expected } else { tol.allows(expected, actual.to_f64(), scale) };
    if ok {
        Ok(())
    } else {
        Err(Mismatch {
            kernel: kernel.to_string(),
            index: 0,
            expected: format_expected::<T>(expected),
            actual: actual.to_string(),
            allowed: tol.bound(scale),
            count: 1,
            len: 1,
            against: None,
        })
    }
}

/// Compares arrays element by element; `scale(i)` gives the error scale of element `i`.
pub fn check_slice<T: Element + Sync>(
    kernel: &str,
    expected: &[f64],
    actual: &[T],
    scale: impl Fn(usize) -> f64 + Sync,
    tol: Tolerance,
) -> Result<(), Mismatch> {
    if expected.len() != actual.len() {
        return Err(Mismatch {
            kernel: kernel.to_string(),
            index: expected.len().min(actual.len()),
            expected: format!("{} elements", expected.len()),
            actual: format!("{} elements", actual.len()),
            allowed: 0.0,
            count: 1,
            len: expected.len(),
            against: None,
        });
    }
    // In chunks on every core (a 2^28-element check is a large part of a bench case): each
    // chunk's first mismatch and count, the first chunk's first that has one.
    let ok = |i: usize| {
        let (e, a) = (expected[i], actual[i].to_f64());
        if T::EPSILON == 0.0 { a == e } else { tol.allows(e, a, scale(i)) }
    };
    let chunks = crate::par::chunks(expected.len(), |range| {
        let mut first = None;
        let mut count = 0usize;
        for i in range {
            if !ok(i) {
                count += 1;
                first.get_or_insert(i);
            }
        }
        (first, count)
    });
    let first = chunks.iter().find_map(|c| c.0);
    let count: usize = chunks.iter().map(|c| c.1).sum();
    match first {
        None => Ok(()),
        Some(i) => Err(Mismatch {
            kernel: kernel.to_string(),
            index: i,
            expected: format_expected::<T>(expected[i]),
            actual: actual[i].to_string(),
            allowed: tol.bound(scale(i)),
            count,
            len: expected.len(),
            against: None,
        }),
    }
}

/// One reference entry of a row-major matrix: `((row, col), expected, scale)`.
pub type MatrixEntry = ((usize, usize), f64, f64);

/// Compares the listed entries of a row-major matrix `got` with `cols` columns (a GEMM's
/// sampled or whole `C`). The mismatch names the first wrong entry as `C[row][col]`, counts
/// every wrong one, and has the number of entries checked as its `len`.
pub fn check_matrix_entries(
    kernel: &str,
    entries: &[MatrixEntry],
    got: &[f32],
    cols: usize,
    tol: Tolerance,
) -> Result<(), Mismatch> {
    let mut first: Option<Mismatch> = None;
    let mut count = 0;
    for &((i, j), want, scale) in entries {
        let actual = got[i * cols + j];
        if !tol.allows(want, actual as f64, scale) {
            count += 1;
            first.get_or_insert(Mismatch {
                kernel: kernel.to_string(),
                index: i * cols + j,
                expected: format!("{want} (C[{i}][{j}])"),
                actual: actual.to_string(),
                allowed: tol.bound(scale),
                count: 0,
                len: entries.len(),
                against: None,
            });
        }
    }
    match first {
        None => Ok(()),
        Some(m) => Err(Mismatch { count, ..m }),
    }
}

fn format_expected<T: Element>(v: f64) -> String {
    if T::EPSILON == 0.0 { format!("{}", v as u64) } else { format!("{v}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_entries_name_the_first_wrong_entry_and_count_all() {
        // A 2 x 3 matrix; the checked entries are (0, 1), (1, 0) and (1, 2).
        let entries: [MatrixEntry; 3] = [((0, 1), 4.0, 4.0), ((1, 0), 8.0, 8.0), ((1, 2), 2.0, 2.0)];
        let tol = Tolerance { rtol: 1e-3, atol: 0.0 };
        let good = [0.0, 4.0, 0.0, 8.0, 0.0, 2.0];
        assert!(check_matrix_entries("k", &entries, &good, 3, tol).is_ok());
        // One entry past its bound (0.002 at scale 2) fails.
        let mut bad = good;
        bad[5] = 2.01;
        let m = check_matrix_entries("k", &entries, &bad, 3, tol).unwrap_err();
        assert_eq!((m.index, m.count, m.len), (5, 1, 3));
        assert!(m.expected.contains("C[1][2]"), "{}", m.expected);
        bad[1] = 4.1;
        let m = check_matrix_entries("k", &entries, &bad, 3, tol).unwrap_err();
        assert_eq!((m.index, m.count), (1, 2), "the first in entry order, both counted");
    }

    #[test]
    fn integers_compare_exactly() {
        assert!(check_scalar::<u32>("k", 5.0, 5, 0.0, Tolerance::EXACT).is_ok());
        let e = check_scalar::<u32>("k", 5.0, 6, 1e9, Tolerance::summation::<u32>(100)).unwrap_err();
        assert_eq!((e.expected.as_str(), e.actual.as_str()), ("5", "6"));
    }

    #[test]
    fn summation_tolerance_scales_with_depth_and_magnitude() {
        let tol = Tolerance::summation::<f32>(10);
        // 10 chained additions over values summing (in magnitude) to 1000.
        let bound = 2.0 * 10.0 * f32::EPSILON as f64 * 1000.0;
        assert!(tol.allows(500.0, 500.0 + 0.99 * bound, 1000.0));
        assert!(!tol.allows(500.0, 500.0 + 1.01 * bound, 1000.0));
        assert!(!tol.allows(1.0, f64::NAN, 1.0));
        assert!(tol.allows(f64::NAN, f64::NAN, 1.0));
        assert!(!tol.allows(f64::INFINITY, 1e30, 1.0));
        assert!(!tol.allows(f64::INFINITY, f64::NEG_INFINITY, 1.0));
        assert!(!tol.allows(1.0, f64::INFINITY, f64::INFINITY), "an infinite scale allows no infinity");
    }

    #[test]
    fn exact_comparison_holds_with_a_non_finite_scale() {
        // min/max over inputs with a NaN or an infinity: the scale (sum of magnitudes)
        // is NaN or infinite, and equal values must still match, unequal ones not.
        for scale in [f64::NAN, f64::INFINITY, 0.0] {
            assert!(Tolerance::EXACT.allows(-4.0, -4.0, scale), "{scale}");
            assert!(!Tolerance::EXACT.allows(-4.0, -3.0, scale), "{scale}");
            assert!(!Tolerance::EXACT.allows(-4.0, f64::NAN, scale), "{scale}");
        }
        assert_eq!(Tolerance::EXACT.bound(f64::INFINITY), 0.0);
    }

    #[test]
    fn slice_mismatch_names_first_index_and_count() {
        let e = check_slice::<f32>(
            "reduce_sum_f32",
            &[1.0, 2.0, 3.0, 4.0],
            &[1.0, 2.5, 3.0, 9.0],
            |_| 1.0,
            Tolerance::summation::<f32>(1),
        )
        .unwrap_err();
        assert_eq!((e.index, e.count, e.len), (1, 2, 4));
        assert_eq!(e.expected, "2");
        assert_eq!(e.actual, "2.5");
        let msg = e.to_string();
        assert!(msg.contains("index 1") && msg.contains("expected 2") && msg.contains("got 2.5"), "{msg}");
    }
}
