//! Timing a run on a device: warm-up, timed runs through the backend's device timer, and
//! the observer's readings meanwhile. The statistics are [`crate::measure`]'s.

use super::Backend;
use crate::error::Result;
use crate::measure::{MAX_WARMUP_RUNS, Timing, TimingOptions};
use crate::observe::{self, Observation};

/// Times `work` (the launches of one run) on the device: at least `warmup` untimed runs
/// and `warmup_ms` of warm-up, then `repeats` runs each timed on its own with the
/// backend's device timer. Where the backend has an observer, it is sampled through the
/// timed runs and, with `energy_ms`, a window of back-to-back runs for the energy of one
/// run ([`observe::energy`]). Returns the timing and the number of warm-up runs made.
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
    let timed_runs = |work: &mut dyn FnMut() -> Result<()>| -> Result<Timing> {
        let times = if opts.back_to_back {
            backend.time_runs(opts.repeats, work)?
        } else {
            (0..opts.repeats).map(|_| backend.time_ms(work)).collect::<Result<Vec<_>>>()?
        };
        Ok(Timing::from_times(times))
    };
    let Some(observer) = backend.observer() else { return Ok((timed_runs(work)?, warmups)) };
    let (measured, observation) = observe::sampled(observer, || -> Result<_> {
        let timing = timed_runs(work)?;
        if opts.energy_ms <= 0.0 {
            return Ok((timing, None));
        }
        // Batches of about a millisecond of runs, so the waits between them idle the
        // device for a small part of the window.
        let per_batch = (1.0 / timing.median_ms).ceil().clamp(1.0, 256.0) as u64;
        let window = std::time::Duration::from_secs_f64(opts.energy_ms / 1e3);
        let energy = observe::energy(observer, window, per_batch, &mut || {
            for _ in 0..per_batch {
                work()?;
            }
            backend.synchronize()
        })?;
        Ok((timing, energy))
    });
    let (mut timing, energy) = measured?;
    timing.observation = Some(Observation { energy, ..observation });
    Ok((timing, warmups))
}

/// The record's `timer`: the backend's device timer and how the timed runs were queued.
pub fn timer_label<B: Backend>(backend: &B, opts: &TimingOptions) -> String {
    let mode = if opts.back_to_back { "back-to-back" } else { "waited per run" };
    format!("{}, {mode}", backend.timer_name())
}
