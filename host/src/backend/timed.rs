//! Timing a run on a device: warm-up, timed runs through the backend's device timer, and
//! the observer's readings meanwhile; and two operations timed interleaved in one process
//! ([`time_paired`]). The statistics are [`crate::measure`]'s.

use super::Backend;
use crate::error::{Error, Result};
use crate::measure::{self, MAX_WARMUP_RUNS, Paired, Timing, TimingOptions};
use crate::observe::{self, Observation};

/// At least `warmup` untimed runs of `work` and `warmup_ms` of wall time, waiting after
/// each; returns the runs made (at most [`MAX_WARMUP_RUNS`]).
fn warm_up<B: Backend>(backend: &B, opts: &TimingOptions, work: &mut dyn FnMut() -> Result<()>) -> Result<u32> {
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
    Ok(warmups)
}

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
    let warmups = warm_up(backend, &opts, work)?;
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

/// Times `ours` against `anchor` (each queues one launch of its operation) interleaved, so
/// that both run under the same clocks and device state: after warming both up together
/// (as [`time`] warms up one) and one probe launch of each to size the batches
/// ([`measure::paired_batch`]), [`measure::paired_rounds`] rounds, each a batch of
/// back-to-back launches of ours and a batch of the anchor, every batch between its own
/// device timestamps ([`Backend::time_runs`]) and one wait per round. The order alternates
/// (ABBA: even rounds ours first, odd rounds the anchor first) so neither always runs on a
/// device the other has just warmed or heated. The ratio is the median of the per-round
/// ratios ([`measure::median_paired_ratio`]).
pub fn time_paired<B: Backend>(
    backend: &B,
    opts: TimingOptions,
    ours: &mut dyn FnMut() -> Result<()>,
    anchor: &mut dyn FnMut() -> Result<()>,
) -> Result<Paired> {
    opts.validate()?;
    let warmups = warm_up(backend, &opts, &mut || {
        ours()?;
        anchor()
    })?;
    let [ours_ms, anchor_ms] = round(backend, 1, true, ours, anchor)?;
    let batch = measure::paired_batch(ours_ms.min(anchor_ms));
    let rounds = (0..measure::paired_rounds(&opts))
        .map(|r| round(backend, batch, r % 2 == 0, ours, anchor))
        .collect::<Result<Vec<_>>>()?;
    let why = format!("a batch timed at no positive time, rounds {rounds:?}");
    Paired::new(rounds, batch, warmups).ok_or_else(|| paired_error(why))
}

/// One round of [`time_paired`]: `batch` launches of each operation back to back, ours
/// first where `ours_first`, each batch timed on the device, one wait. Returns
/// `[ours ms, anchor ms]`.
fn round<B: Backend>(
    backend: &B,
    batch: u32,
    ours_first: bool,
    ours: &mut dyn FnMut() -> Result<()>,
    anchor: &mut dyn FnMut() -> Result<()>,
) -> Result<[f64; 2]> {
    let mut next_is_ours = ours_first;
    let times = backend.time_runs(2, &mut || {
        let op: &mut dyn FnMut() -> Result<()> = if next_is_ours { &mut *ours } else { &mut *anchor };
        next_is_ours = !next_is_ours;
        (0..batch).try_for_each(|_| op())
    })?;
    match times[..] {
        [first, second] if ours_first => Ok([first, second]),
        [first, second] => Ok([second, first]),
        _ => Err(paired_error(format!("the backend timed {} batches of a round, not 2", times.len()))),
    }
}

fn paired_error(reason: String) -> Error {
    Error::InvalidConfig { kernel: "paired timing".into(), reason }
}

/// The record's `timer`: the backend's device timer and how the timed runs were queued.
pub fn timer_label<B: Backend>(backend: &B, opts: &TimingOptions) -> String {
    let mode = if opts.back_to_back { "back-to-back" } else { "waited per run" };
    format!("{}, {mode}", backend.timer_name())
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};

    use super::*;
    use crate::backend::cpu::{CpuBackend, CpuMem};
    use crate::backend::{Arg, Buffer, DeviceInfo, LaunchDims};
    use crate::element::Element;

    /// The CPU backend with a virtual clock: an operation advances `now` by its cost, and a
    /// timed run reads `now` before and after. Timings are then exact, whatever the load on
    /// the machine running the test.
    struct VirtualClock {
        cpu: CpuBackend,
        now: Cell<f64>,
    }

    impl Backend for VirtualClock {
        type Raw = CpuMem;
        type Kernel = &'static dynsmem_kernels::KernelEntry;
        fn info(&self) -> &DeviceInfo {
            self.cpu.info()
        }
        fn alloc<T: Element>(&self, len: usize) -> Result<Buffer<CpuMem, T>> {
            self.cpu.alloc(len)
        }
        fn htod<T: Element>(&self, data: &[T]) -> Result<Buffer<CpuMem, T>> {
            self.cpu.htod(data)
        }
        fn dtoh<T: Element>(&self, buf: &Buffer<CpuMem, T>) -> Result<Vec<T>> {
            self.cpu.dtoh(buf)
        }
        fn copy<T: Element>(&self, src: &Buffer<CpuMem, T>, dst: &mut Buffer<CpuMem, T>) -> Result<()> {
            self.cpu.copy(src, dst)
        }
        fn fill_zero<T: Element>(&self, buf: &Buffer<CpuMem, T>) -> Result<()> {
            self.cpu.fill_zero(buf)
        }
        fn launch(&self, kernel: &Self::Kernel, dims: LaunchDims, args: &[Arg<'_, CpuMem>]) -> Result<()> {
            self.cpu.launch(kernel, dims, args)
        }
        fn synchronize(&self) -> Result<()> {
            Ok(())
        }
        fn time_ms(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
            let start = self.now.get();
            work()?;
            Ok(self.now.get() - start)
        }
        fn timer_name(&self) -> &'static str {
            "virtual clock"
        }
    }

    /// Ours costs 1 ms a launch and the anchor 3 ms (on a virtual clock), so every batch is
    /// one launch, the rounds alternate ours-first and anchor-first, each pair is mapped back
    /// to [ours, anchor], and the ratio is exactly 3.
    #[test]
    fn paired_rounds_alternate_and_the_ratio_favours_the_faster() {
        let clock = VirtualClock { cpu: CpuBackend::new(), now: Cell::new(0.0) };
        let opts = TimingOptions { warmup: 2, warmup_ms: 0.0, repeats: 12, energy_ms: 0.0, back_to_back: true };
        let order = RefCell::new(String::new());
        let op = |name: char, ms: f64| {
            let (order, now) = (&order, &clock.now);
            move || -> Result<()> {
                order.borrow_mut().push(name);
                now.set(now.get() + ms);
                Ok(())
            }
        };
        let p = time_paired(&clock, opts, &mut op('o', 1.0), &mut op('a', 3.0)).unwrap();
        assert_eq!((p.batch, p.warmup, p.rounds_ms.len()), (1, 2, 6));
        assert_eq!(order.into_inner(), "oaoa".to_string() + "oa" + "oaaooaaooaao", "warm-up, probe, ABBA rounds");
        assert!(p.rounds_ms.iter().all(|&r| r == [1.0, 3.0]), "[ours, anchor] in each round: {:?}", p.rounds_ms);
        assert_eq!(p.ratio, 3.0, "anchor ms / ours ms");
    }
}
