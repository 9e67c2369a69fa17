//! The fast schedule: each workgroup's threads as stackful coroutines on one OS thread,
//! switched only at barriers, and the launch's workgroups spread over the host's cores.
//!
//! Layout of one launch:
//! - `workers` OS threads (the host's cores, at most one per cluster) take clusters from a
//!   shared counter, in the seeded order of [`Order`]; a cluster (one workgroup when the
//!   launch has none) runs to its end on the worker that took it.
//! - A cluster's `size * block` threads are coroutines, numbered `rank * block + thread`, on
//!   that worker. They run in passes: each pass resumes every unfinished thread once, in
//!   thread order or in reverse (drawn from the seed per cluster), and a thread runs until it
//!   waits at a barrier or returns. The last thread to arrive at a barrier releases it; the
//!   others go on at the next pass. So a pass is one barrier phase, and a launch costs a
//!   switch per thread per phase, not a futex wake.
//! - Each rank's barrier and the cluster's barrier are [`Scope`]s of one [`Group`], which
//!   makes the same three divergence reports as the stress schedule's `sync` (a thread that
//!   returned while others wait, a wait for a thread that returned, two barrier sites), and
//!   one it cannot hang on: a pass in which no thread moved (threads of one workgroup at its
//!   barrier and at the cluster's), reported instead of spinning.
//! - Device-memory synchronisation points ([`Workgroup::interleave`]) never switch
//!   coroutines: a thread that spins on another workgroup's flag (a look-back) spins on its
//!   worker, yielding the OS thread now and then, while the workgroup it waits for runs on
//!   another worker or has finished. Kernels that wait only on workgroups that took earlier
//!   tickets (the scan, stream-K) always progress; one that waits on a workgroup by grid index
//!   can spin for ever here, as it can on a GPU.
//!
//! What it does not do is look for races: threads between two barriers run one after another,
//! never interleaved. The stress schedule (`execute`) does that.

use std::cell::{Cell, RefCell};
use std::panic::Location;
use std::sync::atomic::AtomicU32;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use dynsmem_kernels::gpu::host::{Workgroup, fault, raw_context, set_raw_context};

use super::execute::{Order, fault_of_payload, keep_first, outcome};
use super::sync::{Arrival, Barrier};
use super::*;

/// One barrier: a workgroup's (its `block` threads) or a cluster's (all `size * block`).
#[derive(Default)]
struct Scope {
    members: u32,
    barrier: Barrier,
}

/// The threads of one cluster (or workgroup) as coroutines on one OS thread: their barriers
/// (`scopes[rank]` each workgroup's, `scopes[size]` the cluster's) and how to switch away.
struct Group<'a> {
    block: u32,
    size: u32,
    scopes: RefCell<Vec<Scope>>,
    poisoned: Cell<bool>,
    /// Set when any workgroup of the launch faulted.
    abort: &'a AtomicBool,
    /// Each thread's yielder, set when it starts.
    yielders: Vec<Cell<*const Yielder<(), Step>>>,
    /// Arrivals and exits so far: a pass that adds none is stuck.
    progress: Cell<u64>,
    /// Which scope and site each thread waits at, for the report of a stuck pass.
    waiting: Vec<Cell<Option<(usize, &'static Location<'static>)>>>,
    /// Synchronisation points so far, to yield the OS thread at one in [`YIELD_EVERY`].
    points: Cell<u32>,
}

// SAFETY: a `Group` is only used on the worker that runs its threads (the coroutines all run
// on that OS thread); `Workgroup` asks for `Sync` because the stress schedule shares its
// barrier between OS threads.
unsafe impl Sync for Group<'_> {}

/// Stacks of finished kernel threads, kept for the next launch: mapping one (a `mmap` and a
/// guard page) costs more than a kernel thread of a small launch runs.
static STACKS: Mutex<Vec<DefaultStack>> = Mutex::new(Vec::new());
/// Most stacks [`STACKS`] keeps (each reserves `THREAD_STACK` bytes of address space; only the
/// pages a kernel thread touched are memory).
const MAX_KEPT_STACKS: usize = 4096;

/// Up to `n` stacks from [`STACKS`].
fn take_stacks(n: usize) -> Vec<DefaultStack> {
    let mut kept = STACKS.lock().unwrap_or_else(|p| p.into_inner());
    let from = kept.len().saturating_sub(n);
    kept.split_off(from)
}

/// Gives `stacks` back to [`STACKS`], up to its bound.
fn keep_stacks(stacks: Vec<DefaultStack>) {
    let mut kept = STACKS.lock().unwrap_or_else(|p| p.into_inner());
    let room = MAX_KEPT_STACKS.saturating_sub(kept.len());
    kept.extend(stacks.into_iter().take(room));
}

/// A spinning thread yields its OS thread at one synchronisation point in this many.
const YIELD_EVERY: u32 = 64;

impl<'a> Group<'a> {
    fn new(block: u32, size: u32, abort: &'a AtomicBool) -> Group<'a> {
        let n = (block * size) as usize;
        let mut scopes: Vec<Scope> = (0..size).map(|_| Scope { members: block, ..Scope::default() }).collect();
        scopes.push(Scope { members: block * size, ..Scope::default() });
        Group {
            block,
            size,
            scopes: RefCell::new(scopes),
            poisoned: Cell::new(false),
            abort,
            yielders: (0..n).map(|_| Cell::new(std::ptr::null())).collect(),
            progress: Cell::new(0),
            waiting: (0..n).map(|_| Cell::new(None)).collect(),
            points: Cell::new(0),
        }
    }

    /// Readies the group for the next cluster.
    fn reset(&self) {
        for s in self.scopes.borrow_mut().iter_mut() {
            s.barrier = Barrier::default();
        }
        self.poisoned.set(false);
        self.waiting.iter().for_each(|w| w.set(None));
    }

    /// Poisons the group and raises `kind` in the calling thread.
    fn fail(&self, kind: FaultKind) -> ! {
        self.poisoned.set(true);
        fault(kind)
    }

    /// Thread `index` of the group (`thread` as its scope numbers it, for messages) waits at
    /// the barrier of scope `s` at `at`.
    fn barrier(&self, s: usize, index: u32, thread: u32, at: &'static Location<'static>) {
        if self.poisoned.get() {
            fault(FaultKind::Aborted);
        }
        if self.abort.load(Ordering::Relaxed) {
            self.fail(FaultKind::Aborted);
        }
        let mut scopes = self.scopes.borrow_mut();
        let sc = &mut scopes[s];
        let arrival = sc.barrier.arrive(sc.members, thread, at);
        drop(scopes);
        let generation = match arrival {
            Err(divergence) => self.fail(divergence),
            Ok(Arrival::Released) => {
                self.progress.set(self.progress.get() + 1);
                return;
            }
            Ok(Arrival::Wait(generation)) => generation,
        };
        self.progress.set(self.progress.get() + 1);
        let me = &self.waiting[index as usize];
        me.set(Some((s, at)));
        let yielder = self.yielders[index as usize].get();
        loop {
            let context = raw_context();
            // SAFETY: set by this thread's coroutine when it started; it lives as long as the
            // coroutine, which is suspended here, not finished.
            unsafe { (*yielder).suspend(Step::Waits) };
            // SAFETY: this thread's own context, saved above; `execute_fast` keeps it alive
            // until the thread returns.
            unsafe { set_raw_context(context) };
            if self.scopes.borrow()[s].barrier.generation != generation {
                break;
            }
            if self.poisoned.get() || self.abort.load(Ordering::Relaxed) {
                self.fail(FaultKind::Aborted);
            }
        }
        me.set(None);
    }

    /// Thread `thread` of scope `s` returned from the kernel.
    fn exit(&self, s: usize, thread: u32) {
        let divergence = self.scopes.borrow_mut()[s].barrier.exit(thread);
        self.progress.set(self.progress.get() + 1);
        if let Some(divergence) = divergence
            && !self.poisoned.get()
        {
            // As in the stress schedule: after a fault elsewhere the waiters are released,
            // not blamed.
            if self.abort.load(Ordering::Relaxed) {
                self.poisoned.set(true);
                return;
            }
            self.fail(divergence);
        }
    }

    fn interleave(&self) {
        if self.abort.load(Ordering::Relaxed) {
            fault(FaultKind::Aborted);
        }
        let points = self.points.get().wrapping_add(1);
        self.points.set(points);
        if points.is_multiple_of(YIELD_EVERY) {
            std::thread::yield_now();
        }
    }

    /// The report of a pass in which no thread moved: where each of the first waiting threads
    /// of two different scopes waits.
    fn stuck(&self) -> (u32, FaultKind) {
        let cluster = self.size as usize;
        let mut first: Option<(u32, usize, &Location)> = None;
        for (i, w) in self.waiting.iter().enumerate() {
            let Some((s, at)) = w.get() else { continue };
            match first {
                None => first = Some((i as u32, s, at)),
                Some((j, t, there)) if t != s => {
                    let name =
                        |s: usize| if s == cluster { "cluster".to_string() } else { format!("workgroup rank {s}") };
                    let what = format!(
                        "no thread can go on: thread {j} waits at the {} barrier at {there} while thread {i} waits at the {} \
                         barrier at {at} (threads numbered rank * block + thread)",
                        name(t),
                        name(s)
                    );
                    return (j % self.block, FaultKind::BarrierDivergence(what));
                }
                Some(_) => {}
            }
        }
        let what = "no thread can go on: every unfinished thread waits at a barrier that is never complete".to_string();
        (first.map_or(0, |f| f.0 % self.block), FaultKind::BarrierDivergence(what))
    }
}

/// A workgroup's barrier in its group: rank `rank`'s scope.
struct RankView<'g, 'a> {
    group: &'g Group<'a>,
    rank: u32,
}

impl Workgroup for RankView<'_, '_> {
    fn barrier(&self, thread: u32, at: &'static Location<'static>) {
        let g = self.group;
        g.barrier(self.rank as usize, self.rank * g.block + thread, thread, at);
    }
    fn interleave(&self, _thread: u32) {
        self.group.interleave();
    }
}

/// The cluster's barrier in its group (threads numbered `rank * block + thread`).
struct ClusterView<'g, 'a>(&'g Group<'a>);

impl Workgroup for ClusterView<'_, '_> {
    fn barrier(&self, thread: u32, at: &'static Location<'static>) {
        self.0.barrier(self.0.size as usize, thread, thread, at);
    }
    fn interleave(&self, _thread: u32) {
        self.0.interleave();
    }
}

/// One launch on the fast schedule (see the module documentation); the arguments are
/// [`execute::execute`]'s, whose bounds checks, region poison and fault reports it shares.
pub(super) fn execute_fast(
    entry: &'static KernelEntry,
    dims: LaunchDims,
    slots: &[u64],
    buffers: &[GlobalBuffer],
    seed: u64,
    skip_first: bool,
) -> std::result::Result<(), Fault> {
    let size = dims.cluster.max(1);
    let clusters = dims.grid / size;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let workers = cores.clamp(1, clusters.max(1));
    let order = Order::new(clusters, seed);
    let next = AtomicU32::new(if skip_first { 1 } else { 0 });
    let abort = AtomicBool::new(false);
    let first: Mutex<Option<Fault>> = Mutex::new(None);
    let launch = Launch { entry, dims, slots, buffers };
    let worker = || {
        let fault = launch.work(&abort, || {
            let k = next.fetch_add(1, Ordering::Relaxed);
            (k < clusters && !abort.load(Ordering::Relaxed)).then(|| {
                let reverse = crate::rng::SplitMix64::new(seed ^ k as u64).next_u64() & 1 == 1;
                (order.at(k) * size, reverse)
            })
        });
        if let Some(f) = fault {
            keep_first(&first, f);
            abort.store(true, Ordering::SeqCst);
        }
    };
    if workers == 1 {
        // One cluster, or one core: no worker to start.
        worker();
        return outcome(first);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|i| std::thread::Builder::new().name(format!("dynsmem-cpu-{i}")).spawn_scoped(scope, worker))
            .collect();
        for h in handles {
            let kind = match h {
                Ok(h) => match h.join() {
                    Ok(()) => continue,
                    Err(_) => FaultKind::Panic("a CPU-backend worker panicked outside the kernel".into()),
                },
                Err(e) => FaultKind::Panic(format!("could not start a CPU-backend worker: {e}")),
            };
            keep_first(&first, Fault { kernel: entry.name, workgroup: 0, thread: 0, kind });
            abort.store(true, Ordering::SeqCst);
        }
    });
    outcome(first)
}

/// What a kernel thread tells its worker when it suspends.
enum Step {
    /// It waits at a barrier.
    Waits,
    /// It returned from the kernel for its current cluster (with its fault, if any), and
    /// waits for the next cluster.
    Done(Option<Fault>),
}

type KernelThread = Coroutine<(), Step, (), DefaultStack>;

/// The launch as every worker sees it.
struct Launch<'r> {
    entry: &'static KernelEntry,
    dims: LaunchDims,
    slots: &'r [u64],
    buffers: &'r [GlobalBuffer],
}

impl Launch<'_> {
    /// One worker: its regions, its group and its `block * size` kernel threads, which run
    /// cluster after cluster. `take()` gives the next cluster to run (the base workgroup
    /// and whether its threads run last-to-first), or `None` when there is none. Returns the
    /// worker's first fault.
    fn work(&self, abort: &AtomicBool, mut take: impl FnMut() -> Option<(u32, bool)>) -> Option<Fault> {
        let (entry, dims) = (self.entry, self.dims);
        let (block, size) = (dims.block, dims.cluster.max(1));
        let n = (block * size) as usize;
        let fault_at = |workgroup, thread, kind| Some(Fault { kernel: entry.name, workgroup, thread, kind });
        let mut regions = Vec::with_capacity(size as usize);
        for _ in 0..size {
            match CpuMem::filled(dims.shared_bytes as usize, REGION_POISON) {
                Ok(r) => regions.push(r),
                Err(e) => return fault_at(0, 0, FaultKind::Panic(e.to_string())),
            }
        }
        let region_addrs: Vec<usize> = regions.iter().map(|r| r.addr() as usize).collect();
        let group = Group::new(block, size, abort);
        let views: Vec<RankView> = (0..size).map(|rank| RankView { group: &group, rank }).collect();
        let cluster_view = ClusterView(&group);
        // The cluster the threads run now (its rank-0 workgroup); `None`: they return.
        let current: Cell<Option<u32>> = Cell::new(None);
        // Threads of each rank that returned from the current cluster: when a rank's last one
        // returns, its workgroup has exited and its region is poisoned, as a GPU may hand an
        // exited block's shared memory to another (a peer reading it after that, without a
        // cluster barrier before the exit, reads NaNs).
        let exited: Vec<Cell<u32>> = (0..size).map(|_| Cell::new(0)).collect();
        let mut stacks = take_stacks(n);
        let mut threads: Vec<KernelThread> = Vec::with_capacity(n);
        for i in 0..n {
            let stack = match stacks.pop().map_or_else(|| DefaultStack::new(THREAD_STACK), Ok) {
                Ok(s) => s,
                Err(e) => {
                    // Threads made so far have not started: dropping them runs nothing.
                    return fault_at(
                        0,
                        i as u32,
                        FaultKind::Panic(format!("could not map a kernel thread's stack: {e}")),
                    );
                }
            };
            let (rank, thread) = (i as u32 / block, i as u32 % block);
            let (group, current, view, exited) = (&group, &current, &views[rank as usize], &exited[rank as usize]);
            let cluster = (size > 1).then_some(Cluster { rank, regions: &region_addrs, sync: &cluster_view });
            let region = region_addrs[rank as usize] as *mut u8;
            let body = move |yielder: &Yielder<(), Step>, ()| {
                group.yielders[i].set(yielder);
                while let Some(base) = current.get() {
                    let ctx = ThreadContext {
                        kernel: entry.name,
                        workgroup: base + rank,
                        thread,
                        block_dim: block,
                        grid_dim: dims.grid,
                        region,
                        region_bytes: dims.shared_bytes,
                        sync: view,
                        cluster,
                        buffers: self.buffers,
                    };
                    let ran = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        with_context(&ctx, || {
                            // SAFETY: `slots` were checked against the kernel's parameters.
                            unsafe { (entry.run)(self.slots) };
                            group.exit(rank as usize, thread);
                            if size > 1 {
                                group.exit(size as usize, i as u32);
                                exited.set(exited.get() + 1);
                                if exited.get() == block {
                                    // SAFETY: every thread of this rank has returned; a peer
                                    // still running reads it only between switches (coroutines
                                    // of one OS thread).
                                    unsafe { std::ptr::write_bytes(region, REGION_POISON, dims.shared_bytes as usize) };
                                }
                            }
                        })
                    }));
                    let fault = ran.err().map(|payload| fault_of_payload(payload, entry.name, base + rank, thread));
                    yielder.suspend(Step::Done(fault));
                }
            };
            // SAFETY: the body borrows this frame's group, views, regions and `current`, and
            // the launch's data, all of which outlive `threads`: each thread is resumed until
            // it returns (at the end of this function, with `current` set to `None`) before
            // `threads` is dropped, so none is dropped suspended.
            threads.push(unsafe { Coroutine::with_stack_unchecked(stack, body) });
        }
        let saved = raw_context();
        let mut fault = None;
        let mut ran_one = false;
        while let Some((base, reverse)) = take() {
            exited.iter().for_each(|e| e.set(0));
            if ran_one {
                group.reset();
                // SAFETY: no kernel thread of this worker runs between clusters; the regions
                // are its own.
                regions.iter().for_each(|r| unsafe { r.poison() });
            }
            ran_one = true;
            current.set(Some(base));
            if let Some(f) = run_cluster(&group, &mut threads, base, reverse, entry.name) {
                fault = Some(f);
                break;
            }
        }
        current.set(None);
        for mut t in threads {
            // Every thread waits for its next cluster (or never started): it returns now.
            let returned = matches!(t.resume(()), CoroutineResult::Return(()));
            debug_assert!(returned, "a kernel thread suspended between clusters");
            stacks.push(t.into_stack());
        }
        // SAFETY: the worker's own pointer from before its first cluster (null between launches).
        unsafe { set_raw_context(saved) };
        keep_stacks(stacks);
        fault
    }
}

/// Runs one cluster (rank-0 workgroup `base`) on `threads`, every one of which waits for its
/// next cluster, until each has returned from the kernel (or, after a fault, stopped); the
/// first fault of its threads (one that is not `Aborted` where there is one).
fn run_cluster(
    group: &Group,
    threads: &mut [KernelThread],
    base: u32,
    reverse: bool,
    kernel: &'static str,
) -> Option<Fault> {
    let n = threads.len();
    let mut done = vec![false; n];
    let mut started = vec![false; n];
    let mut live = n;
    let mut fault: Option<Fault> = None;
    while live > 0 {
        let before = group.progress.get();
        let poisoned_before = group.poisoned.get();
        for k in 0..n {
            let i = if reverse { n - 1 - k } else { k };
            if done[i] {
                continue;
            }
            if group.poisoned.get() && !started[i] {
                // Not started when the group failed: nothing of it runs.
                done[i] = true;
                live -= 1;
                continue;
            }
            started[i] = true;
            match threads[i].resume(()) {
                CoroutineResult::Yield(Step::Waits) => {}
                CoroutineResult::Yield(Step::Done(f)) => {
                    done[i] = true;
                    live -= 1;
                    if let Some(f) = f {
                        group.poisoned.set(true);
                        if fault.as_ref().is_none_or(|g| g.kind == FaultKind::Aborted) {
                            fault = Some(f);
                        }
                    }
                }
                CoroutineResult::Return(()) => unreachable!("a kernel thread returns only when no cluster is current"),
            }
        }
        let aborted = group.abort.load(Ordering::Relaxed);
        if live > 0 && group.progress.get() == before && !poisoned_before && !group.poisoned.get() && !aborted {
            let (thread, kind) = group.stuck();
            fault = Some(Fault { kernel, workgroup: base, thread, kind });
            group.poisoned.set(true);
        }
    }
    fault
}
