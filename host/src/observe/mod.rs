//! Observers: what the GPU was doing while a config was timed (clocks, power, temperature,
//! throttle reasons) and the energy one run costs, read from the vendor's management
//! library while [`crate::backend::time`] runs, and stored in every record.
//!
//! - [`Observer`]: one device's readings (NVML for NVIDIA in [`nvml`], AMD SMI in
//!   [`amdsmi`]); a backend offers one through [`crate::backend::Backend::observer`].
//! - [`Sampler`]: a thread that reads an observer every [`SAMPLE_PERIOD`] while the
//!   timed and energy runs go on, summarised into an [`Observation`].
//! - Energy: the device's cumulative energy counter read from one counter update to
//!   another around a window of back-to-back runs ([`crate::backend::time`] runs it):
//!   joules per run = counter delta / runs. It includes the idle power of the device
//!   during the window (as Kernel Tuner's NVML observer does).

pub mod amdsmi;
pub mod nvml;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How often the sampler reads the observer.
pub const SAMPLE_PERIOD: Duration = Duration::from_millis(5);

/// One reading of a device, each field where the library reports it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    pub sm_clock_mhz: Option<f64>,
    pub mem_clock_mhz: Option<f64>,
    pub power_w: Option<f64>,
    pub temperature_c: Option<f64>,
    /// Why clocks are below their maximum now (NVML's clock event reasons), by name.
    pub throttle_reasons: Vec<String>,
}

/// A device's management-library readings. `Sync`: the sampler thread reads it while the
/// measuring thread launches.
pub trait Observer: Send + Sync {
    /// The library, e.g. `nvml`.
    fn source(&self) -> &'static str;
    /// The readings now.
    fn sample(&self) -> Sample;
    /// The cumulative energy counter in millijoules, where the device has one.
    fn energy_mj(&self) -> Option<u64>;
    /// Locks the SM clock at `mhz` until the observer is dropped; `Err` says why not (most
    /// drivers allow it only to root).
    fn lock_clocks(&self, mhz: u32) -> Result<(), String> {
        Err(format!("{} cannot lock clocks (asked: {mhz} MHz)", self.source()))
    }
    /// What a [`Observer::lock_clocks`] asked for and whether it took (records say so).
    fn clock_lock(&self) -> Option<String> {
        None
    }
}

/// Least, median and greatest of a reading over a measurement's samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    /// `None` for no values.
    pub fn of(mut values: Vec<f64>) -> Option<Spread> {
        values.retain(|v| v.is_finite());
        values.sort_by(f64::total_cmp);
        let (&min, &max) = (values.first()?, values.last()?);
        Some(Spread { min, median: crate::stats::median_sorted(&values), max })
    }
}

/// The energy of one run, from the device's energy counter over a window of back-to-back
/// runs that starts and ends at counter updates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Energy {
    /// Joules per run: counter delta over `runs`.
    pub joules_per_run: f64,
    /// Mean power over the window: counter delta over `window_ms`.
    pub watts: f64,
    pub runs: u64,
    pub window_ms: f64,
}

/// What the observer saw during one measurement: stored in the record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub source: String,
    /// Readings taken (one every [`SAMPLE_PERIOD`], and one at the start).
    pub samples: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<Spread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_clock_mhz: Option<Spread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w: Option<Spread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<Spread>,
    /// Every throttle reason seen in any sample, sorted.
    #[serde(default)]
    pub throttle_reasons: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<Energy>,
    /// Whether we asked to lock clocks, at what, and whether it took (None: not asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_lock: Option<String>,
}

impl Observation {
    /// The summary of `samples`.
    pub fn summarise(source: &str, samples: &[Sample], clock_lock: Option<String>) -> Observation {
        let spread = |f: fn(&Sample) -> Option<f64>| Spread::of(samples.iter().filter_map(f).collect());
        let mut reasons: Vec<String> = samples.iter().flat_map(|s| s.throttle_reasons.iter().cloned()).collect();
        reasons.sort();
        reasons.dedup();
        Observation {
            source: source.into(),
            samples: samples.len() as u32,
            sm_clock_mhz: spread(|s| s.sm_clock_mhz),
            mem_clock_mhz: spread(|s| s.mem_clock_mhz),
            power_w: spread(|s| s.power_w),
            temperature_c: spread(|s| s.temperature_c),
            throttle_reasons: reasons,
            energy: None,
            clock_lock,
        }
    }
}

/// Reads `observer` on a thread of its own every [`SAMPLE_PERIOD`] while `body` runs, and
/// returns `body`'s result with the summary of the readings.
pub fn sampled<R>(observer: &dyn Observer, body: impl FnOnce() -> R) -> (R, Observation) {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut samples = vec![observer.sample()];
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(SAMPLE_PERIOD);
                samples.push(observer.sample());
            }
            samples
        });
        let out = body();
        stop.store(true, Ordering::Relaxed);
        let samples = sampler.join().unwrap_or_default();
        (out, Observation::summarise(observer.source(), &samples, observer.clock_lock()))
    })
}

/// Longest wait for the energy counter to move at either end of the window; a counter that
/// does not move in this time is taken as not working (no energy is reported).
pub const COUNTER_WAIT: Duration = Duration::from_millis(250);

/// Waits until the energy counter differs from `from` (polling every millisecond while
/// `between` runs, e.g. more work): the counter value and when it was read.
fn next_update(observer: &dyn Observer, from: u64, between: &mut dyn FnMut() -> bool) -> Option<(u64, Instant)> {
    let started = Instant::now();
    while started.elapsed() < COUNTER_WAIT {
        if !between() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let now = observer.energy_mj()?;
        if now != from {
            return Some((now, Instant::now()));
        }
    }
    None
}

/// The energy of one run of `batch` (which runs `runs_per_batch` runs and waits for them):
/// batches run back to back for at least `window`, from one update of the energy counter
/// to another. `None` when the device has no counter or it does not move; `Err` when a
/// batch fails.
pub fn energy<E>(
    observer: &dyn Observer,
    window: Duration,
    runs_per_batch: u64,
    batch: &mut dyn FnMut() -> Result<(), E>,
) -> Result<Option<Energy>, E> {
    let Some(first) = observer.energy_mj() else { return Ok(None) };
    // Start right after an update, so the window's first reading is exact.
    let Some((e0, t0)) = next_update(observer, first, &mut || false) else { return Ok(None) };
    let mut runs = 0u64;
    let mut failed = None;
    while t0.elapsed() < window {
        batch()?;
        runs += runs_per_batch;
    }
    let Some(at_window) = observer.energy_mj() else { return Ok(None) };
    // Keep the device busy until the counter moves again: the window ends at an update.
    let end = next_update(observer, at_window, &mut || {
        if failed.is_some() {
            return false;
        }
        match batch() {
            Ok(()) => runs += runs_per_batch,
            Err(e) => failed = Some(e),
        }
        true
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let Some((e1, t1)) = end else { return Ok(None) };
    let joules = (e1 - e0) as f64 / 1e3;
    let seconds = (t1 - t0).as_secs_f64();
    Ok(Some(Energy { joules_per_run: joules / runs as f64, watts: joules / seconds, runs, window_ms: seconds * 1e3 }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A device whose energy counter rises 7 mJ every 3 ms of wall time and which reads
    /// fixed clocks.
    struct Fake {
        started: Instant,
        lock: Mutex<()>,
    }

    impl Observer for Fake {
        fn source(&self) -> &'static str {
            "fake"
        }
        fn sample(&self) -> Sample {
            let _g = self.lock.lock().unwrap();
            Sample {
                sm_clock_mhz: Some(1980.0),
                mem_clock_mhz: Some(2619.0),
                power_w: Some(350.0),
                temperature_c: None,
                throttle_reasons: vec!["sw_power_cap".into()],
            }
        }
        fn energy_mj(&self) -> Option<u64> {
            Some(self.started.elapsed().as_millis() as u64 / 3 * 7)
        }
    }

    #[test]
    fn the_sampler_summarises_what_it_read() {
        let fake = Fake { started: Instant::now(), lock: Mutex::new(()) };
        let (v, o) = sampled(&fake, || {
            std::thread::sleep(Duration::from_millis(30));
            42
        });
        assert_eq!(v, 42);
        assert!(o.samples >= 2, "{} samples in 30 ms", o.samples);
        assert_eq!(o.sm_clock_mhz, Some(Spread { min: 1980.0, median: 1980.0, max: 1980.0 }));
        assert_eq!(o.temperature_c, None);
        assert_eq!(o.throttle_reasons, vec!["sw_power_cap".to_string()]);
    }

    #[test]
    fn energy_per_run_is_the_counter_delta_over_the_runs() {
        let fake = Fake { started: Instant::now(), lock: Mutex::new(()) };
        let mut batches = 0u64;
        let e = energy::<()>(&fake, Duration::from_millis(60), 4, &mut || {
            batches += 1;
            std::thread::sleep(Duration::from_micros(500));
            Ok(())
        })
        .unwrap()
        .expect("the fake counter moves");
        assert_eq!(e.runs, batches * 4);
        // 7 mJ per 3 ms is 2.333 W; the window ends within a millisecond of an update.
        assert!((e.watts - 7.0 / 3.0).abs() < 0.25, "{} W", e.watts);
        assert!((e.joules_per_run * e.runs as f64 / (e.window_ms / 1e3) - e.watts).abs() < 1e-9);
        assert!(e.window_ms >= 60.0);
    }

    #[test]
    fn a_counter_that_never_moves_gives_no_energy() {
        struct Stuck;
        impl Observer for Stuck {
            fn source(&self) -> &'static str {
                "stuck"
            }
            fn sample(&self) -> Sample {
                Sample::default()
            }
            fn energy_mj(&self) -> Option<u64> {
                Some(5)
            }
        }
        assert_eq!(energy::<()>(&Stuck, Duration::from_millis(5), 1, &mut || Ok(())), Ok(None));
    }
}
