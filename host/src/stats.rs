//! Order statistics shared by the timing summaries and the observers' readings.

/// The median of sorted values (mean of the middle two for an even count; NaN if empty).
pub fn median_sorted(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}
