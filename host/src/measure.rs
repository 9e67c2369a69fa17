//! Device timing: warm-up, repeats, raw times, median and spread.

use serde::{Deserialize, Serialize};

use crate::backend::Backend;
use crate::error::{Error, Result};

/// How many runs to throw away and how many to keep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimingOptions {
    /// Untimed runs before timing, at least.
    pub warmup: u32,
    /// Keep warming up until this much wall time has passed: an idle GPU runs at low
    /// clocks (an H100 idles at 345 MHz) and a few short runs do not wake it up.
    pub warmup_ms: f64,
    pub repeats: u32,
}

impl Default for TimingOptions {
    fn default() -> Self {
        TimingOptions { warmup: 3, warmup_ms: 200.0, repeats: 20 }
    }
}

/// Most warm-up runs [`time`] makes, whatever `warmup_ms` asks: a bound on a run that
/// never warms up.
pub const MAX_WARMUP_RUNS: u32 = 100_000;
/// Most timed runs: each keeps its time, and a run that cannot finish is no measurement.
pub const MAX_REPEATS: u32 = 100_000;
/// Longest wall-clock warm-up, in milliseconds (one hour).
pub const MAX_WARMUP_MS: f64 = 3_600_000.0;

impl TimingOptions {
    /// Refuses options that cannot make a measurement: no timed run, more runs than
    /// [`MAX_REPEATS`] or [`MAX_WARMUP_RUNS`], or a warm-up time that is negative, NaN or
    /// past [`MAX_WARMUP_MS`]. [`time`] checks this before running anything.
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: String| Err(Error::InvalidConfig { kernel: "timing".into(), reason });
        if self.repeats == 0 || self.repeats > MAX_REPEATS {
            return bad(format!("repeats = {}: from 1 to {MAX_REPEATS} timed runs", self.repeats));
        }
        if self.warmup > MAX_WARMUP_RUNS {
            return bad(format!("warmup = {}: at most {MAX_WARMUP_RUNS} runs", self.warmup));
        }
        if !(0.0..=MAX_WARMUP_MS).contains(&self.warmup_ms) {
            return bad(format!("warmup_ms = {}: from 0 to {MAX_WARMUP_MS} ms", self.warmup_ms));
        }
        Ok(())
    }
}

/// Raw device times of the kept runs, in milliseconds, and their summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub times_ms: Vec<f64>,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
}

impl Timing {
    pub fn from_times(times_ms: Vec<f64>) -> Timing {
        let mut sorted = times_ms.clone();
        sorted.sort_by(f64::total_cmp);
        let median_ms = median_sorted(&sorted);
        Timing {
            min_ms: sorted.first().copied().unwrap_or(f64::NAN),
            max_ms: sorted.last().copied().unwrap_or(f64::NAN),
            median_ms,
            times_ms,
        }
    }
}

/// The median of sorted values (mean of the middle two for an even count; NaN if empty).
pub fn median_sorted(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// Times `work` (the launches of one run) on the device: at least `warmup` untimed runs
/// and `warmup_ms` of warm-up, then `repeats` runs each timed on its own with the
/// backend's device timer. Returns the timing and the number of warm-up runs made.
pub fn time<B: Backend>(
    backend: &B,
    opts: TimingOptions,
    work: &mut dyn FnMut() -> Result<()>,
) -> Result<(Timing, u32)> {
    opts.validate()?;
    let started = std::time::Instant::now();
    let mut warmups = 0u32;
    while warmups < opts.warmup || started.elapsed().as_secs_f64() * 1e3 < opts.warmup_ms {
        work()?;
        warmups += 1;
        // Waiting each time keeps the queue short, so the elapsed time is device time.
        backend.synchronize()?;
        if warmups >= MAX_WARMUP_RUNS {
            break;
        }
    }
    let mut times = Vec::with_capacity(opts.repeats as usize);
    for _ in 0..opts.repeats {
        times.push(backend.time_ms(work)?);
    }
    Ok((Timing::from_times(times), warmups))
}

/// Gigabytes (1e9 bytes) per second.
pub fn gbps(bytes: u64, ms: f64) -> f64 {
    bytes as f64 / (ms * 1e-3) / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread() {
        let t = Timing::from_times(vec![3.0, 1.0, 2.0, 10.0]);
        assert_eq!((t.median_ms, t.min_ms, t.max_ms), (2.5, 1.0, 10.0));
        assert_eq!(t.times_ms, vec![3.0, 1.0, 2.0, 10.0], "raw times keep their order");
        assert_eq!(Timing::from_times(vec![5.0, 1.0, 9.0]).median_ms, 5.0);
        assert!(Timing::from_times(vec![]).median_ms.is_nan());
        assert!((gbps(2_000_000_000, 1000.0) - 2.0).abs() < 1e-12);
    }
}
