//! One launch on the CPU backend's stress schedule: the workgroups in a seeded order, each
//! workgroup's threads as OS threads meeting at real barriers, with the bounds checks and
//! fault reports. The order and the fault helpers are shared with the fast schedule (`fast`).

use super::*;

/// The order in which a launch's workgroups start: `k -> (a k + b) mod grid` with `a`
/// coprime to `grid`, both drawn from the seed (a permutation of the grid in O(1) memory,
/// for grids of any size).
pub(super) struct Order {
    grid: u64,
    a: u64,
    b: u64,
}

impl Order {
    pub(super) fn new(grid: u32, seed: u64) -> Order {
        let grid = grid.max(1) as u64;
        let mut rng = crate::rng::SplitMix64::new(seed);
        let mut a = 1 + rng.below(grid);
        while gcd(a, grid) != 1 {
            a = 1 + rng.below(grid);
        }
        Order { grid, a: a % grid, b: rng.below(grid) }
    }

    /// The `k`-th workgroup to start.
    pub(super) fn at(&self, k: u32) -> u32 {
        ((self.a as u128 * k as u128 + self.b as u128) % self.grid as u128) as u32
    }
}

/// The fault a kernel thread unwound with: its [`Fault`], or a panic's message as one.
pub(super) fn fault_of_payload(
    payload: Box<dyn std::any::Any + Send>,
    kernel: &'static str,
    workgroup: u32,
    thread: u32,
) -> Fault {
    match payload.downcast::<Fault>() {
        Ok(f) => *f,
        Err(other) => {
            let msg = other
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| other.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".into());
            Fault { kernel, workgroup, thread, kind: FaultKind::Panic(msg) }
        }
    }
}

/// Keeps `fault` as the launch's fault unless it already has one that is not `Aborted` (the
/// cause, not a thread stopped because of it).
pub(super) fn keep_first(first: &Mutex<Option<Fault>>, fault: Fault) {
    let mut slot = first.lock().unwrap_or_else(|p| p.into_inner());
    if slot.as_ref().is_none_or(|f| f.kind == FaultKind::Aborted) {
        *slot = Some(fault);
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Runs one launch: `schedule.resident` workgroups at a time (each slot its own threads,
/// region and barrier), `dims.block` threads each. Workgroups run in clusters of
/// `dims.cluster`: a group of that many slots runs one cluster's workgroups at once (its
/// slot `r` the workgroup of rank `r`), with a barrier over all their threads and each
/// region reachable from the others ([`Cluster`]). Group `g` runs the `g`-th,
/// `g + groups`-th, ... cluster of a seeded order (a cluster of one: a workgroup).
pub(super) fn execute(
    entry: &'static KernelEntry,
    dims: LaunchDims,
    slots: &[u64],
    buffers: &[GlobalBuffer],
    schedule: Schedule,
    seed: u64,
    skip_first: bool,
) -> std::result::Result<(), Fault> {
    let size = dims.cluster.max(1);
    let clusters = dims.grid / size;
    let groups = (schedule.resident / size).clamp(1, clusters.max(1));
    let resident = groups * size;
    let order = Order::new(clusters, seed);
    let mut regions = Vec::with_capacity(resident as usize);
    for _ in 0..resident {
        regions.push(CpuMem::filled(dims.shared_bytes as usize, REGION_POISON).map_err(|e| Fault {
            kernel: entry.name,
            workgroup: 0,
            thread: 0,
            kind: FaultKind::Panic(e.to_string()),
        })?);
    }
    let region_addrs: Vec<usize> = regions.iter().map(|r| r.addr() as usize).collect();
    let abort = AtomicBool::new(false);
    let syncs: Vec<WorkgroupSync> =
        (0..resident).map(|s| WorkgroupSync::new(dims.block, &abort, seed ^ (s as u64) << 32)).collect();
    let cluster_syncs: Vec<WorkgroupSync> =
        (0..groups).map(|g| WorkgroupSync::new(size * dims.block, &abort, seed ^ (g as u64) << 40)).collect();
    let betweens: Vec<std::sync::Barrier> =
        (0..groups).map(|_| std::sync::Barrier::new((size * dims.block) as usize)).collect();
    let stops: Vec<AtomicBool> = (0..groups).map(|_| AtomicBool::new(false)).collect();
    let first: Mutex<Option<Fault>> = Mutex::new(None);
    // Threads start only once all of them exist: if one cannot be created, the others
    // must not wait for it at a barrier.
    let gate: (Mutex<Option<bool>>, Condvar) = (Mutex::new(None), Condvar::new());

    std::thread::scope(|scope| {
        'spawn: for slot in 0..resident {
            let (group, rank) = (slot / size, slot % size);
            let group_slots = (group * size) as usize..((group + 1) * size) as usize;
            let sync = &syncs[slot as usize];
            let (cluster_sync, between) = (&cluster_syncs[group as usize], &betweens[group as usize]);
            let stopped = &stops[group as usize];
            let (group_regions, group_syncs) = (&regions[group_slots.clone()], &syncs[group_slots.clone()]);
            let cluster =
                (size > 1).then_some(Cluster { rank, regions: &region_addrs[group_slots], sync: cluster_sync });
            let region_addr = region_addrs[slot as usize];
            for thread in 0..dims.block {
                let (abort, first, gate, order) = (&abort, &first, &gate, &order);
                let run = move || {
                    let mut open = gate.0.lock().unwrap_or_else(|p| p.into_inner());
                    while open.is_none() {
                        open = gate.1.wait(open).unwrap_or_else(|p| p.into_inner());
                    }
                    if *open == Some(false) {
                        return;
                    }
                    drop(open);
                    let mut k = if skip_first && group == 0 { groups } else { group };
                    while k < clusters {
                        let workgroup = order.at(k) * size + rank;
                        let ctx = ThreadContext {
                            kernel: entry.name,
                            workgroup,
                            thread,
                            block_dim: dims.block,
                            grid_dim: dims.grid,
                            region: region_addr as *mut u8,
                            region_bytes: dims.shared_bytes,
                            sync,
                            cluster,
                            buffers,
                        };
                        let ran = std::panic::catch_unwind(AssertUnwindSafe(|| {
                            with_context(&ctx, || {
                                // SAFETY: `slots` were checked against the kernel's parameters.
                                unsafe { (entry.run)(slots) };
                                sync.exit(thread);
                                if size > 1 {
                                    cluster_sync.exit(rank * dims.block + thread);
                                }
                            })
                        }));
                        if let Err(payload) = ran {
                            keep_first(first, fault_of_payload(payload, entry.name, workgroup, thread));
                            abort.store(true, Ordering::SeqCst);
                            sync.poison();
                            cluster_sync.poison();
                        }
                        // Between clusters: thread 0 of rank 0 readies the group's slots and
                        // decides for all of their threads whether to go on (each reading
                        // the launch's `abort` itself could split them between stopping and
                        // waiting).
                        between.wait();
                        if thread == 0 && rank == 0 {
                            group_syncs.iter().for_each(WorkgroupSync::reset);
                            cluster_sync.reset();
                            // SAFETY: every thread of this group waits at `between`; none
                            // touches the regions until the next cluster starts.
                            group_regions.iter().for_each(|r| unsafe { r.poison() });
                            stopped.store(abort.load(Ordering::SeqCst), Ordering::SeqCst);
                        }
                        between.wait();
                        if stopped.load(Ordering::SeqCst) {
                            break;
                        }
                        k += groups;
                    }
                };
                let spawned = std::thread::Builder::new().stack_size(THREAD_STACK).spawn_scoped(scope, run);
                if let Err(e) = spawned {
                    *first.lock().unwrap_or_else(|p| p.into_inner()) = Some(Fault {
                        kernel: entry.name,
                        workgroup: 0,
                        thread,
                        kind: FaultKind::Panic(format!("could not start kernel thread {thread}: {e}")),
                    });
                    break 'spawn;
                }
            }
        }
        let started = first.lock().unwrap_or_else(|p| p.into_inner()).is_none();
        *gate.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(started);
        gate.1.notify_all();
    });
    drop(regions);
    outcome(first)
}

/// The launch's result: its first fault ([`keep_first`]), if any.
pub(super) fn outcome(first: Mutex<Option<Fault>>) -> std::result::Result<(), Fault> {
    match first.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(f) => Err(f),
        None => Ok(()),
    }
}
