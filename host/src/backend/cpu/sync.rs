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
//! with `Aborted`, so nothing hangs.

use std::panic::Location;
use std::sync::{Condvar, Mutex, MutexGuard};

use dynsmem_kernels::gpu::host::{FaultKind, Workgroup, fault};

#[derive(Default)]
struct State {
    /// Threads waiting at the current barrier generation.
    arrived: u32,
    /// Where the first of them waits, and which thread that is.
    site: Option<(&'static Location<'static>, u32)>,
    generation: u64,
    /// Threads that returned from the kernel.
    exited: u32,
    poisoned: bool,
}

pub(super) struct WorkgroupSync {
    threads: u32,
    state: Mutex<State>,
    wake: Condvar,
}

impl WorkgroupSync {
    pub(super) fn new(threads: u32) -> WorkgroupSync {
        WorkgroupSync { threads, state: Mutex::new(State::default()), wake: Condvar::new() }
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
        s.exited += 1;
        if s.arrived > 0 && !s.poisoned {
            let (site, waiter) = s.site.expect("set by the first arrival");
            let arrived = s.arrived;
            self.fail(
                s,
                FaultKind::BarrierDivergence(format!(
                    "thread {thread} returned from the kernel while {arrived} thread(s) (thread {waiter} first) wait at the barrier at {site}"
                )),
            );
        }
    }

    /// Readies the state for the next workgroup (all threads are between workgroups).
    pub(super) fn reset(&self) {
        *self.lock() = State::default();
    }
}

impl Workgroup for WorkgroupSync {
    fn barrier(&self, thread: u32, at: &'static Location<'static>) {
        let mut s = self.lock();
        if s.poisoned {
            drop(s);
            fault(FaultKind::Aborted);
        }
        if s.exited > 0 {
            let exited = s.exited;
            self.fail(
                s,
                FaultKind::BarrierDivergence(format!(
                    "thread {thread} waits at the barrier at {at}, which the {exited} thread(s) that already returned from the kernel will never reach"
                )),
            );
        }
        match s.site {
            None => s.site = Some((at, thread)),
            Some((site, first)) if site != at => self.fail(
                s,
                FaultKind::BarrierDivergence(format!(
                    "thread {thread} reached the barrier at {at} while thread {first} waits at the barrier at {site}"
                )),
            ),
            Some(_) => {}
        }
        s.arrived += 1;
        if s.arrived == self.threads {
            s.arrived = 0;
            s.site = None;
            s.generation += 1;
            drop(s);
            self.wake.notify_all();
            return;
        }
        let generation = s.generation;
        while s.generation == generation && !s.poisoned {
            s = self.wake.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        if s.generation == generation {
            drop(s);
            fault(FaultKind::Aborted);
        }
    }
}
