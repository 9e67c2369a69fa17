//! The barrier of one CPU-backend workgroup: a real barrier over the workgroup's OS
//! threads, which also reports the barriers a GPU would hang on or silently mis-execute.
//!
//! Three ways a barrier goes wrong, each raised as a `Fault` in the thread that sees it:
//! - a thread waits at a barrier that a thread which already returned will never reach;
//! - a thread returns while others wait at a barrier (`exit`);
//! - two threads wait at barriers at different source locations (a barrier inside a
//!   thread-dependent branch that both sides happen to have).
//!
//! Once one thread faults, the workgroup is poisoned: every waiting thread wakes and stops
//! with `Aborted`, so nothing hangs. A fault in another workgroup of the launch sets the
//! launch's `abort` flag, which stops this one at its next barrier or global-memory
//! synchronisation point (a look-back spinning on a tile that will never be published).
//!
//! It is also where the backend perturbs the interleaving of workgroups: at every
//! global-memory synchronisation point ([`Workgroup::interleave`]) a thread may yield or
//! sleep, drawn from the launch's seed, so that a workgroup reading another's published
//! state sees it in every stage (the scan's aggregate before its inclusive prefix).

use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use dynsmem_kernels::gpu::host::{FaultKind, Workgroup, fault};

use crate::rng::SplitMix64;

/// One barrier's bookkeeping and its divergence rules, shared by both schedules (this file's
/// OS-thread barrier and the fast schedule's coroutine barrier): who waits, where, and who
/// already returned. The schedule does the waiting and the poisoning.
#[derive(Default)]
pub(super) struct Barrier {
    /// Threads waiting at the current barrier generation.
    arrived: u32,
    /// Where the first of them waits, and which thread that is.
    site: Option<(&'static Location<'static>, u32)>,
    pub(super) generation: u64,
    /// Threads that returned from the kernel.
    exited: u32,
}

/// What an arrival at a [`Barrier`] comes to.
pub(super) enum Arrival {
    /// The last of the `members`: the barrier is released (the next generation begins).
    Released,
    /// The thread waits until the barrier's generation is no longer this one.
    Wait(u64),
}

impl Barrier {
    /// `thread` arrives at the barrier at `at`, of `members` threads: released, waiting, or the
    /// divergence it is (a thread already returned; another waits at another site).
    pub(super) fn arrive(
        &mut self,
        members: u32,
        thread: u32,
        at: &'static Location<'static>,
    ) -> Result<Arrival, FaultKind> {
        if self.exited > 0 {
            let exited = self.exited;
            return Err(FaultKind::BarrierDivergence(format!(
                "thread {thread} waits at the barrier at {at}, which the {exited} thread(s) that already returned from the kernel will never reach"
            )));
        }
        match self.site {
            None => self.site = Some((at, thread)),
            // One call site's `Location` is usually one static: compare addresses first.
            Some((site, first)) if !(std::ptr::eq(site, at) || site == at) => {
                return Err(FaultKind::BarrierDivergence(format!(
                    "thread {thread} reached the barrier at {at} while thread {first} waits at the barrier at {site}"
                )));
            }
            Some(_) => {}
        }
        self.arrived += 1;
        if self.arrived == members {
            self.arrived = 0;
            self.site = None;
            self.generation += 1;
            return Ok(Arrival::Released);
        }
        Ok(Arrival::Wait(self.generation))
    }

    /// `thread` returned from the kernel: the divergence it is where threads wait at the
    /// barrier (they will never be released), else `None`.
    pub(super) fn exit(&mut self, thread: u32) -> Option<FaultKind> {
        self.exited += 1;
        if self.arrived == 0 {
            return None;
        }
        let (site, waiter) = self.site.expect("set by the first arrival");
        let arrived = self.arrived;
        Some(FaultKind::BarrierDivergence(format!(
            "thread {thread} returned from the kernel while {arrived} thread(s) (thread {waiter} first) wait at the barrier at {site}"
        )))
    }

    /// Whether a thread waits at it.
    #[cfg(test)]
    fn waited(&self) -> bool {
        self.arrived > 0
    }
}

#[derive(Default)]
struct State {
    barrier: Barrier,
    poisoned: bool,
}

pub(super) struct WorkgroupSync<'a> {
    threads: u32,
    state: Mutex<State>,
    wake: Condvar,
    /// Set when any workgroup of the launch faulted.
    abort: &'a AtomicBool,
    /// Seed of the delays at synchronisation points, and how many have been drawn.
    seed: u64,
    draws: AtomicU64,
}

impl<'a> WorkgroupSync<'a> {
    pub(super) fn new(threads: u32, abort: &'a AtomicBool, seed: u64) -> WorkgroupSync<'a> {
        WorkgroupSync {
            threads,
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            abort,
            seed,
            draws: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A thread that unwound while holding the lock leaves it poisoned; the state is
        // still consistent (every update is a plain field write).
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Poisons the workgroup, wakes every waiter and raises `kind` in the calling thread.
    fn fail(&self, mut state: MutexGuard<'_, State>, kind: FaultKind) -> ! {
        state.poisoned = true;
        drop(state);
        self.wake.notify_all();
        fault(kind)
    }

    /// Marks the workgroup failed after a fault raised elsewhere (a region overrun, a trap):
    /// threads waiting at a barrier wake and stop.
    pub(super) fn poison(&self) {
        self.lock().poisoned = true;
        self.wake.notify_all();
    }

    /// Called when `thread` returns from the kernel.
    pub(super) fn exit(&self, thread: u32) {
        let mut s = self.lock();
        if let Some(divergence) = s.barrier.exit(thread)
            && !s.poisoned
        {
            // After a fault elsewhere in the launch, a thread of this workgroup may have been
            // stopped before a barrier the others wait at: not this workgroup's divergence,
            // but its waiters will never be released, so they wake and stop (`Aborted`).
            if self.abort.load(Ordering::Relaxed) {
                s.poisoned = true;
                drop(s);
                self.wake.notify_all();
                return;
            }
            self.fail(s, divergence);
        }
    }

    /// Readies the state for the next workgroup (all threads are between workgroups).
    pub(super) fn reset(&self) {
        *self.lock() = State::default();
    }
}

impl Workgroup for WorkgroupSync<'_> {
    /// One draw in eight yields the thread; one in 64 sleeps it for 20 to 275 us (long
    /// enough for another workgroup to run a barrier phase or two).
    fn interleave(&self, _thread: u32) {
        if self.abort.load(Ordering::Relaxed) {
            fault(FaultKind::Aborted);
        }
        let draw = SplitMix64::new(self.seed ^ self.draws.fetch_add(1, Ordering::Relaxed)).next_u64();
        match draw % 64 {
            0 => std::thread::sleep(Duration::from_micros(20 + (draw >> 56))),
            1..8 => std::thread::yield_now(),
            _ => {}
        }
    }

    fn barrier(&self, thread: u32, at: &'static Location<'static>) {
        let mut s = self.lock();
        if self.abort.load(Ordering::Relaxed) && !s.poisoned {
            self.fail(s, FaultKind::Aborted);
        }
        if s.poisoned {
            drop(s);
            fault(FaultKind::Aborted);
        }
        let generation = match s.barrier.arrive(self.threads, thread, at) {
            Err(divergence) => self.fail(s, divergence),
            Ok(Arrival::Released) => {
                drop(s);
                self.wake.notify_all();
                return;
            }
            Ok(Arrival::Wait(generation)) => generation,
        };
        while s.barrier.generation == generation && !s.poisoned {
            s = self.wake.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        if s.barrier.generation == generation {
            drop(s);
            fault(FaultKind::Aborted);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread returning while another waits at a barrier, after a fault elsewhere in the
    /// launch set `abort`: the waiter wakes and stops instead of waiting for ever.
    #[test]
    fn an_exit_after_an_abort_releases_the_waiters() {
        let abort = AtomicBool::new(false);
        let sync = WorkgroupSync::new(2, &abort, 1);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    sync.barrier(0, Location::caller());
                }));
                tx.send(waited.is_err()).unwrap();
            });
            // Thread 0 waits at the barrier; then another workgroup faults, then thread 1 returns.
            while !sync.lock().barrier.waited() {
                std::thread::yield_now();
            }
            abort.store(true, Ordering::SeqCst);
            sync.exit(1);
            let stopped = rx.recv_timeout(Duration::from_secs(10));
            if stopped.is_err() {
                sync.poison(); // let the scope end; the assertion below reports the hang
            }
            assert_eq!(stopped, Ok(true), "the waiter was not released (it would hang the launch)");
        });
    }
}
