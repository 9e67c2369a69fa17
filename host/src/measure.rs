//! Device timing: warm-up, repeats, raw times, median, spread and the median's bootstrap
//! interval; with the device's observer ([`crate::observe`]), what the GPU's clocks,
//! power and temperature were meanwhile and the energy of one run.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::observe::Observation;

/// How many runs to throw away and how many to keep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimingOptions {
    /// Untimed runs before timing, at least.
    pub warmup: u32,
    /// Keep warming up until this much wall time has passed: an idle GPU runs at low
    /// clocks (an H100 idles at 345 MHz) and a few short runs do not wake it up.
    pub warmup_ms: f64,
    pub repeats: u32,
    /// After the timed runs, run back to back for at least this long to read the energy of
    /// one run from the device's energy counter (0: no energy). Only where the backend
    /// has an observer with a counter (NVML, AMD SMI).
    #[serde(default)]
    pub energy_ms: f64,
    /// Queue the timed runs back to back and wait once (`Backend::time_runs`), each run
    /// still timed by its own device timestamps; `false`: wait after every run, so the
    /// device idles between runs for as long as the host takes to submit the next. Options
    /// recorded before the field existed were waited per run.
    #[serde(default)]
    pub back_to_back: bool,
}

impl Default for TimingOptions {
    fn default() -> Self {
        TimingOptions { warmup: 3, warmup_ms: 200.0, repeats: 20, energy_ms: 0.0, back_to_back: true }
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
        if !(0.0..=MAX_WARMUP_MS).contains(&self.energy_ms) {
            return bad(format!("energy_ms = {}: from 0 to {MAX_WARMUP_MS} ms", self.energy_ms));
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
    /// The median's 95% bootstrap interval ([`median_ci95`]); `None` for fewer than 2 runs.
    pub median_ci95_ms: Option<[f64; 2]>,
    /// What the device's observer read meanwhile (`None`: the backend has none).
    pub observation: Option<Observation>,
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
            median_ci95_ms: median_ci95(&times_ms),
            times_ms,
            observation: None,
        }
    }
}

/// Bootstrap resamples behind [`median_ci95`].
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// The 95% percentile-bootstrap interval of the median of `times`: the 2.5th and 97.5th
/// percentiles of the medians of [`BOOTSTRAP_RESAMPLES`] resamples drawn with replacement
/// (seeded by the times themselves, so a record's interval is reproducible from its raw
/// times). Two configs whose intervals do not overlap differ beyond run-to-run noise of
/// the kept runs; it cannot see what changes between processes (clocks, placement).
pub fn median_ci95(times: &[f64]) -> Option<[f64; 2]> {
    if times.len() < 2 {
        return None;
    }
    let seed = times.iter().fold(times.len() as u64, |h, t| h.rotate_left(5) ^ t.to_bits());
    let mut rng = crate::rng::SplitMix64::new(seed);
    let n = times.len();
    let mut draw = vec![0.0; n];
    let mut medians: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| {
            for d in draw.iter_mut() {
                *d = times[rng.below(n as u64) as usize];
            }
            draw.sort_by(f64::total_cmp);
            median_sorted(&draw)
        })
        .collect();
    medians.sort_by(f64::total_cmp);
    let at = |q: f64| medians[((q * (BOOTSTRAP_RESAMPLES - 1) as f64).round() as usize).min(BOOTSTRAP_RESAMPLES - 1)];
    Some([at(0.025), at(0.975)])
}

pub use crate::stats::median_sorted;

/// The geometric mean of positive `values` (ratios to an anchor), `None` for none.
pub fn geometric_mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.into_iter().fold((0.0, 0usize), |(s, n), v| (s + v.ln(), n + 1));
    (n > 0).then(|| (sum / n as f64).exp())
}

/// Fewest rounds [`crate::backend::time_paired`] makes, whatever `repeats` asks.
pub const MIN_PAIRED_ROUNDS: u32 = 5;
/// Device time one batch of a paired round should last at least, in milliseconds: long
/// enough that the event timer's resolution and the gap at each end of a batch are a small
/// part of it.
pub const PAIRED_BATCH_MS: f64 = 1.0;
/// Most launches in one batch of a paired round: a bound for operations too short to time.
pub const MAX_PAIRED_BATCH: u32 = 1024;

/// Two operations timed interleaved in one process ([`crate::backend::time_paired`]): ours
/// and an anchor (a vendor library on the same inputs), alternated in rounds so both run
/// under the same clocks and device state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// Per round, `[ours, anchor]`: device milliseconds of `batch` back-to-back launches of
    /// each, in round order (even rounds ran ours first, odd rounds the anchor first).
    pub rounds_ms: Vec<[f64; 2]>,
    /// Launches per batch, the same for both operations.
    pub batch: u32,
    /// [`median_paired_ratio`] of the rounds: above 1, ours is faster.
    pub ratio: f64,
    /// Untimed warm-up iterations (each one launch of both) before the rounds.
    pub warmup: u32,
}

impl Paired {
    /// The rounds and their median ratio; `None` where [`median_paired_ratio`] has none.
    pub fn new(rounds_ms: Vec<[f64; 2]>, batch: u32, warmup: u32) -> Option<Paired> {
        let ratio = median_paired_ratio(&rounds_ms)?;
        Some(Paired { rounds_ms, batch, ratio, warmup })
    }
}

/// The median over rounds of `anchor ms / ours ms` (each `[ours, anchor]`: one round's
/// batches of equal size), i.e. of our throughput over the anchor's. A median of per-round
/// ratios rather than a ratio of medians: each round's two batches ran under the same
/// clocks, so drift between rounds cancels within each ratio. `None` for no rounds or any
/// time that is not a positive finite number (no ratio can be formed from it).
pub fn median_paired_ratio(rounds_ms: &[[f64; 2]]) -> Option<f64> {
    let usable = |t: f64| t.is_finite() && t > 0.0;
    if rounds_ms.is_empty() || !rounds_ms.iter().flatten().all(|&t| usable(t)) {
        return None;
    }
    let mut ratios: Vec<f64> = rounds_ms.iter().map(|[ours, anchor]| anchor / ours).collect();
    ratios.sort_by(f64::total_cmp);
    Some(median_sorted(&ratios))
}

/// Rounds of a paired timing under `opts`: half its timed runs (each round runs both
/// operations), at least [`MIN_PAIRED_ROUNDS`].
pub fn paired_rounds(opts: &TimingOptions) -> u32 {
    (opts.repeats / 2).max(MIN_PAIRED_ROUNDS)
}

/// Launches per batch of a paired timing, from the device time of one launch of the faster
/// operation: enough for [`PAIRED_BATCH_MS`], from 1 to [`MAX_PAIRED_BATCH`] (the most where
/// the launch time is not a positive number: too short to register).
pub fn paired_batch(launch_ms: f64) -> u32 {
    if launch_ms.is_nan() || launch_ms <= 0.0 {
        return MAX_PAIRED_BATCH;
    }
    (PAIRED_BATCH_MS / launch_ms).ceil().clamp(1.0, MAX_PAIRED_BATCH as f64) as u32
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

    #[test]
    fn the_median_interval_holds_the_median_and_narrows_with_more_runs() {
        let noisy: Vec<f64> = (0..20).map(|i| 1.0 + ((i * 7) % 20) as f64 * 0.01).collect();
        let [lo, hi] = median_ci95(&noisy).unwrap();
        let m = Timing::from_times(noisy.clone()).median_ms;
        assert!(lo <= m && m <= hi && lo < hi, "[{lo}, {hi}] around {m}");
        assert!(lo >= 1.0 && hi <= 1.19);
        let more: Vec<f64> = noisy.iter().cycle().take(400).copied().collect();
        let [lo2, hi2] = median_ci95(&more).unwrap();
        assert!(hi2 - lo2 < hi - lo, "400 runs [{lo2}, {hi2}] not narrower than 20 [{lo}, {hi}]");
        assert_eq!(median_ci95(&noisy), median_ci95(&noisy), "reproducible from the times");
        assert_eq!(median_ci95(&[1.0]), None);
        assert_eq!(median_ci95(&[2.0, 2.0, 2.0]), Some([2.0, 2.0]));
    }

    #[test]
    fn the_paired_ratio_is_the_median_of_each_rounds_ratio() {
        // Odd count: ratios 2, 0.5, 1.25 -> median 1.25 (not the ratio of median times).
        let odd = [[1.0, 2.0], [4.0, 2.0], [2.0, 2.5]];
        assert_eq!(median_paired_ratio(&odd), Some(1.25));
        // One round's anchor time wrong enough to cross the middle moves the median.
        assert_eq!(median_paired_ratio(&[[1.0, 2.0], [4.0, 2.0], [2.0, 1.0]]), Some(0.5));
        // Even count: the mean of the middle two ratios, 1.25 and 1.5.
        let even = [[1.0, 2.0], [4.0, 2.0], [2.0, 2.5], [2.0, 3.0]];
        assert_eq!(median_paired_ratio(&even), Some(1.375));
        // Swapping ours and the anchor in one middle round moves it too.
        assert_eq!(median_paired_ratio(&[[1.0, 2.0], [4.0, 2.0], [2.5, 2.0], [2.0, 3.0]]), Some(1.15));
        assert_eq!(median_paired_ratio(&[[3.0, 3.0]]), Some(1.0));
        assert_eq!(median_paired_ratio(&[]), None);
        assert_eq!(median_paired_ratio(&[[1.0, 2.0], [0.0, 1.0]]), None, "a zero time has no ratio");
        assert_eq!(median_paired_ratio(&[[1.0, f64::NAN]]), None);
        let p = Paired::new(even.to_vec(), 8, 3).unwrap();
        assert_eq!((p.ratio, p.batch, p.warmup), (1.375, 8, 3));
    }

    #[test]
    fn paired_rounds_and_batches_follow_the_timing_options() {
        let opts = TimingOptions::default();
        assert_eq!(paired_rounds(&opts), opts.repeats / 2);
        assert_eq!(paired_rounds(&TimingOptions { repeats: 3, ..opts }), MIN_PAIRED_ROUNDS);
        assert_eq!(paired_batch(1.0 / 256.0), 256);
        assert_eq!(paired_batch(0.3), 4, "rounded up: a batch lasts at least PAIRED_BATCH_MS");
        assert_eq!(paired_batch(5.0), 1);
        assert_eq!(paired_batch(1e-9), MAX_PAIRED_BATCH);
        assert_eq!(paired_batch(0.0), MAX_PAIRED_BATCH);
        assert_eq!(paired_batch(f64::NAN), MAX_PAIRED_BATCH);
    }
}
