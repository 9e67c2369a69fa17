//! Deliberately broken kernels on the CPU backend: each fault is caught and reported with
//! the kernel, workgroup, thread and what went wrong, and nothing hangs.

use std::sync::mpsc;
use std::time::Duration;

use dynsmem::host::Error;
use dynsmem::host::backend::cpu::{CpuBackend, CpuSchedule};
use dynsmem::host::backend::{Backend, LaunchDims};
use dynsmem_kernels::gpu;
use dynsmem_kernels::gpu::host::FaultKind;
use dynsmem_kernels::layout::Carve;
use dynsmem_kernels::vector::Vec4;

/// Workgroup `b`'s sum of `input[b * block ..][..block]` into `out[b]`: each thread stores
/// its element in launch-sized scratch, then (after the barrier, where `barrier`) thread 0
/// adds them up.
fn sums_of_blocks(input: *const u32, out: *mut u32, barrier: bool) {
    let (t, b, block) = (gpu::thread_idx_x(), gpu::block_idx_x(), gpu::block_dim_x());
    let mut carve = Carve::new();
    let scratch = carve.array::<u32>(block).unwrap_or_else(|_| gpu::trap());
    let shared = gpu::launch_region(carve.bytes()).array(scratch);
    unsafe { shared.write(t, gpu::read_global(input.add((b * block + t) as usize))) };
    if barrier {
        gpu::barrier();
    }
    if t == 0 {
        let mut sum = 0u32;
        for i in 0..block {
            sum = sum.wrapping_add(unsafe { shared.read(i) });
        }
        unsafe { gpu::write_global(out.add(b as usize), sum) };
    }
}

dynsmem_kernels::kernels! { BROKEN;
    /// Thread `t` writes element `t + 1` of a `block`-element scratch: the last thread
    /// writes one element past the carve.
    pub fn overrun_by_one(out: *mut u32) {
        let block = gpu::block_dim_x();
        let mut carve = Carve::new();
        let scratch = carve.array::<u32>(block).unwrap_or_else(|_| gpu::trap());
        let shared = gpu::launch_region(carve.bytes()).array(scratch);
        let t = gpu::thread_idx_x();
        unsafe { shared.write(t + 1, t) };
        gpu::barrier();
        if t == 0 {
            unsafe { gpu::write_global(out, shared.read(1)) };
        }
    }

    /// Carves 4096 bytes whatever the launch gave.
    pub fn carve_too_large(out: *mut u32) {
        let _ = gpu::launch_region(4096);
        unsafe { gpu::write_global(out, 1) };
    }

    /// A barrier inside a thread-dependent branch: only even threads reach it.
    pub fn barrier_in_branch(out: *mut u32) {
        if gpu::thread_idx_x() % 2 == 0 {
            gpu::barrier();
        }
        if gpu::thread_idx_x() == 0 {
            unsafe { gpu::write_global(out, 7) };
        }
    }

    /// Both sides of a thread-dependent branch have a barrier: two barriers in the source.
    #[allow(clippy::if_same_then_else)]
    pub fn barriers_in_both_branches(out: *mut u32) {
        if gpu::thread_idx_x() < 16 {
            gpu::barrier();
        } else {
            gpu::barrier();
        }
        if gpu::thread_idx_x() == 0 {
            unsafe { gpu::write_global(out, 7) };
        }
    }

    /// Traps in workgroup 1, thread 3.
    pub fn trap_in_one_thread(out: *mut u32) {
        gpu::barrier();
        if gpu::block_idx_x() == 1 && gpu::thread_idx_x() == 3 {
            gpu::trap();
        }
        gpu::barrier();
        unsafe { gpu::write_global(out, 1) };
    }

    /// A correct kernel: workgroup sums of `input` through launch-sized scratch.
    pub fn block_sums(input: *const u32, out: *mut u32) {
        sums_of_blocks(input, out, true);
    }

    /// [`block_sums`] without its barrier (a planted race): thread 0 sums the scratch while
    /// the other threads may not have written their elements yet.
    pub fn block_sums_no_barrier(input: *const u32, out: *mut u32) {
        sums_of_blocks(input, out, false);
    }

    /// In a cluster: rank 0's odd threads wait at their workgroup's barrier, every other
    /// thread at the cluster's, so neither barrier is ever complete.
    pub fn cluster_and_block_barriers(out: *mut u32) {
        if gpu::micro::cluster_rank() == 0 && gpu::thread_idx_x() % 2 == 1 {
            gpu::barrier();
        } else {
            gpu::micro::cluster_barrier();
        }
        unsafe { gpu::write_global(out, 1) };
    }

    /// Thread `t` of block `b` copies `input[b * block + t + 1]`: the grid's last thread
    /// reads one element past `input`.
    pub fn reads_one_past(input: *const u32, out: *mut u32) {
        let g = gpu::block_idx_x() * gpu::block_dim_x() + gpu::thread_idx_x();
        unsafe { gpu::write_global(out.add(g as usize), gpu::read_global(input.add(g as usize + 1))) };
    }

    /// Thread 3 stores to the element before `out`.
    pub fn writes_one_before(input: *const u32, out: *mut u32) {
        let t = gpu::thread_idx_x();
        let v = unsafe { gpu::read_global(input.add(t as usize)) };
        let at = if t == 3 { out.wrapping_sub(1) } else { out.wrapping_add(t as usize) };
        unsafe { gpu::write_global(at, v) };
    }

    /// Thread 0 reads the last element of a second `input` just past the first: the
    /// address is in `input`'s guard zone, never in the buffer allocated next.
    pub fn reads_a_whole_buffer_past(input: *const u32, out: *mut u32) {
        let n = gpu::block_dim_x() as usize;
        let t = gpu::thread_idx_x() as usize;
        let i = if t == 0 { 2 * n - 1 } else { t };
        unsafe { gpu::write_global(out.add(t), gpu::read_global(input.add(i))) };
    }

    /// Thread `t` starts an async copy of vector `t` of `input` into the block's tile (a
    /// tile's staging copy): with fewer than `block` whole vectors in `input`, the last
    /// thread's copy runs off its end.
    pub fn copies_past_the_end(input: *const Vec4<u32>, out: *mut u32) {
        let t = gpu::thread_idx_x();
        let mut carve = Carve::new();
        let tile = carve.array::<Vec4<u32>>(gpu::block_dim_x()).unwrap_or_else(|_| gpu::trap());
        let shared = gpu::launch_region(carve.bytes()).array(tile);
        let src = input.wrapping_add(t as usize);
        unsafe { shared.copy_async(t, src) };
        gpu::copy_async_wait();
        unsafe { gpu::write_global(out.add(t as usize), shared.read(t).0[0]) };
    }
}

/// Launches `kernel` on a fresh backend in another thread; fails the test if it does not
/// come back within 20 s (a hang is exactly what the CPU backend must not do).
fn launch(kernel: &'static str, dims: LaunchDims) -> dynsmem::host::Result<()> {
    launch_with(kernel, dims, None)
}

/// [`launch`] with an `input` of `input_len` `u32`s (`0, 1, ...`) before the 64-element `out`
/// where `input_len` is given.
fn launch_with(kernel: &'static str, dims: LaunchDims, input_len: Option<usize>) -> dynsmem::host::Result<()> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let cpu = CpuBackend::with_kernels(&[BROKEN]);
        let result = (|| {
            let input = input_len.map(|n| cpu.htod(&(0..n as u32).collect::<Vec<_>>())).transpose()?;
            let out = cpu.alloc::<u32>(64)?;
            let k = cpu.kernel(kernel)?;
            let args: Vec<_> = input.iter().map(|i| i.arg()).chain([out.arg()]).collect();
            cpu.launch(&k, dims, &args)
        })();
        let _ = tx.send(result);
    });
    rx.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| panic!("{kernel} hung the CPU backend"))
}

fn fault(result: dynsmem::host::Result<()>) -> (String, u32, u32, FaultKind, String) {
    match result {
        Err(e @ Error::KernelFault { .. }) => {
            let msg = e.to_string();
            let Error::KernelFault { kernel, workgroup, thread, fault: Some(kind), .. } = e else { unreachable!() };
            (kernel, workgroup, thread, *kind, msg)
        }
        other => panic!("expected a kernel fault, got {other:?}"),
    }
}

#[test]
fn an_overrun_of_the_carve_is_reported_with_its_offset() {
    let (kernel, workgroup, thread, kind, msg) = fault(launch("overrun_by_one", LaunchDims::new(3, 32, 128)));
    // Every workgroup overruns; whichever the seeded schedule ran first is reported.
    assert_eq!((kernel.as_str(), thread), ("overrun_by_one", 31));
    assert!(workgroup < 3, "{workgroup}");
    match kind {
        FaultKind::RegionOverrun { offset, access_bytes, region_bytes, index, len, at } => {
            assert_eq!((offset, access_bytes, region_bytes, index, len), (128, 4, 128, 32, 32));
            assert!(at.file().ends_with("cpu_faults.rs"), "{at}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        msg.contains(&format!("workgroup {workgroup} thread 31"))
            && msg.contains("bytes 128..132 of a 128-byte region"),
        "{msg}"
    );
    assert!(
        msg.contains("CPU schedule: ") && msg.contains(", seed 1, launch 0"),
        "the message gives the schedule and its seed: {msg}"
    );
}

#[test]
fn a_carve_larger_than_the_launch_is_reported() {
    let (_, workgroup, _, kind, _) = fault(launch("carve_too_large", LaunchDims::new(1, 4, 1024)));
    assert_eq!(workgroup, 0);
    assert!(matches!(kind, FaultKind::CarveTooLarge { required: 4096, launched: 1024, .. }), "{kind:?}");
}

#[test]
fn a_barrier_only_some_threads_reach_is_reported_not_hung() {
    let (_, workgroup, _, kind, msg) = fault(launch("barrier_in_branch", LaunchDims::new(2, 8, 0)));
    assert!(workgroup < 2, "{workgroup}");
    assert!(matches!(kind, FaultKind::BarrierDivergence(_)), "{kind:?}");
    assert!(msg.contains("cpu_faults.rs"), "names the barrier's source location: {msg}");
}

#[test]
fn barriers_at_different_source_locations_are_reported() {
    let (_, _, _, kind, msg) = fault(launch("barriers_in_both_branches", LaunchDims::new(1, 32, 0)));
    let FaultKind::BarrierDivergence(detail) = kind else { panic!("{msg}") };
    assert!(detail.contains("while thread") && detail.matches("cpu_faults.rs").count() == 2, "{detail}");
}

#[test]
fn a_trap_names_its_workgroup_and_thread() {
    let (_, workgroup, thread, kind, _) = fault(launch("trap_in_one_thread", LaunchDims::new(3, 8, 0)));
    assert_eq!((workgroup, thread), (1, 3));
    assert!(matches!(kind, FaultKind::Trap { .. }), "{kind:?}");
}

#[test]
fn the_backend_survives_faults_and_runs_a_correct_kernel() {
    let cpu = CpuBackend::with_kernels(&[BROKEN]);
    let bad = cpu.kernel("overrun_by_one").unwrap();
    let out = cpu.alloc::<u32>(4).unwrap();
    assert!(cpu.launch(&bad, LaunchDims::new(1, 16, 64), &[out.arg()]).is_err());
    let input: Vec<u32> = (0..4 * 50).collect();
    let input = cpu.htod(&input).unwrap();
    let good = cpu.kernel("block_sums").unwrap();
    cpu.launch(&good, LaunchDims::new(4, 50, 200), &[input.arg(), out.arg()]).unwrap();
    let sums = cpu.dtoh(&out).unwrap();
    let expect: Vec<u32> = (0..4).map(|b| (b * 50..(b + 1) * 50).sum()).collect();
    assert_eq!(sums, expect);
}

#[test]
fn arguments_that_do_not_match_the_kernel_are_refused() {
    let cpu = CpuBackend::with_kernels(&[BROKEN]);
    let good = cpu.kernel("block_sums").unwrap();
    let out = cpu.alloc::<u32>(4).unwrap();
    let r = cpu.launch(&good, LaunchDims::new(1, 4, 16), &[out.arg()]);
    assert!(matches!(r, Err(Error::ArgumentMismatch { .. })), "{r:?}");
}

/// The fault's buffer, load or store, element index, byte offset, access size, buffer
/// size and source file.
fn global_overrun(kind: &FaultKind) -> (&'static str, bool, i64, i64, u32, u64, &'static str) {
    match *kind {
        FaultKind::GlobalOverrun { param, write, index, offset, access_bytes, buffer_bytes, at } => {
            (param, write, index, offset, access_bytes, buffer_bytes, at.file())
        }
        ref other => panic!("expected a device-memory overrun, got {other:?}"),
    }
}

#[test]
fn a_load_one_element_past_a_buffer_is_reported_with_buffer_and_index() {
    let (kernel, workgroup, thread, kind, msg) =
        fault(launch_with("reads_one_past", LaunchDims::new(2, 32, 0), Some(64)));
    assert_eq!((kernel.as_str(), workgroup, thread), ("reads_one_past", 1, 31));
    let (param, write, index, offset, access, bytes, file) = global_overrun(&kind);
    assert_eq!((param, write, index, offset, access, bytes), ("input", false, 64, 256, 4, 256));
    assert!(file.ends_with("cpu_faults.rs"), "the kernel's line, not the accessor's: {file}");
    assert!(
        msg.contains("workgroup 1 thread 31")
            && msg.contains("load of element 64 of `input`")
            && msg.contains("bytes 256..260 of a 256-byte buffer"),
        "{msg}"
    );
}

#[test]
fn a_store_before_a_buffer_is_reported() {
    let (_, workgroup, thread, kind, msg) = fault(launch_with("writes_one_before", LaunchDims::new(1, 8, 0), Some(8)));
    assert_eq!((workgroup, thread), (0, 3));
    let (param, write, index, offset, access, bytes, _) = global_overrun(&kind);
    assert_eq!((param, write, index, offset, access, bytes), ("out", true, -1, -4, 4, 256));
    assert!(msg.contains("store of element -1 of `out`"), "{msg}");
}

#[test]
fn an_overrun_by_a_whole_buffer_is_charged_to_the_buffer_overrun() {
    let (_, _, thread, kind, _) = fault(launch_with("reads_a_whole_buffer_past", LaunchDims::new(1, 16, 0), Some(16)));
    assert_eq!(thread, 0);
    let (param, write, index, ..) = global_overrun(&kind);
    assert_eq!((param, write, index), ("input", false, 31));
}

#[test]
fn an_async_copy_that_runs_off_a_buffer_is_reported() {
    // 30 elements: 7.5 vectors. Thread 7 copies elements 28..32, two past the end.
    let (_, _, thread, kind, msg) = fault(launch_with("copies_past_the_end", LaunchDims::new(1, 8, 8 * 16), Some(30)));
    assert_eq!(thread, 7, "{msg}");
    let (param, write, _, offset, access, bytes, _) = global_overrun(&kind);
    assert_eq!((param, write, offset, access, bytes), ("input", false, 112, 16, 120));
}

#[test]
fn a_kernel_inside_its_buffers_runs_clean() {
    // The kernels above with launches that stay inside: the checks refuse nothing valid.
    launch_with("reads_one_past", LaunchDims::new(2, 32, 0), Some(65)).unwrap();
    launch_with("copies_past_the_end", LaunchDims::new(1, 8, 8 * 16), Some(32)).unwrap();
}

/// The block sums of `0, 1, ..` over `grid` blocks of `block`, exact (wrapping).
fn block_sums_of(grid: u32, block: u32) -> Vec<u32> {
    (0..grid).map(|b| (0..block).fold(0u32, |s, t| s.wrapping_add(b * block + t))).collect()
}

/// Runs `kernel` (a block-sums kernel) on `schedule` with seed `seed`; its sums.
fn block_sums_on(kernel: &str, schedule: CpuSchedule, grid: u32, block: u32) -> Vec<u32> {
    let cpu = CpuBackend::with_kernels(&[BROKEN]).with_schedule(schedule);
    let input = cpu.htod(&(0..grid * block).collect::<Vec<u32>>()).unwrap();
    let out = cpu.alloc::<u32>(grid as usize).unwrap();
    let k = cpu.kernel(kernel).unwrap();
    cpu.launch(&k, LaunchDims::new(grid, block, block * 4), &[input.arg(), out.arg()]).unwrap();
    cpu.dtoh(&out).unwrap()
}

/// The correct kernel gives the exact sums on both schedules; the same kernel without its
/// barrier gives wrong sums on both. Stress finds it by timing (thread 0 sums while the
/// others, woken later, have not written: up to 20 launches); fast by order (each workgroup
/// runs its threads first-to-last or last-to-first, drawn per workgroup: a first-to-last
/// workgroup's thread 0 sums before the others write, and reads the region's poison).
#[test]
fn a_missing_barrier_is_caught_by_both_schedules() {
    let (grid, block) = (64, 64);
    let expected = block_sums_of(grid, block);
    for schedule in [CpuSchedule::Fast, CpuSchedule::Stress] {
        assert_eq!(block_sums_on("block_sums", schedule, grid, block), expected, "{schedule:?}");
        let launches = if schedule == CpuSchedule::Fast { 1 } else { 20 };
        let caught = (0..launches).any(|_| block_sums_on("block_sums_no_barrier", schedule, grid, block) != expected);
        assert!(caught, "the {schedule:?} schedule ran a kernel without its barrier {launches} times and saw nothing");
    }
}

/// Threads of one workgroup at its barrier and at the cluster's: the fast schedule reports
/// that no thread can go on instead of spinning for ever.
#[test]
fn a_cluster_barrier_met_by_a_workgroup_barrier_is_reported_not_hung() {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let cpu = CpuBackend::with_kernels(&[BROKEN]).with_schedule(CpuSchedule::Fast);
        let result = (|| {
            let out = cpu.alloc::<u32>(1)?;
            let k = cpu.kernel("cluster_and_block_barriers")?;
            cpu.launch(&k, LaunchDims { grid: 4, block: 8, shared_bytes: 0, cluster: 2 }, &[out.arg()])
        })();
        let _ = tx.send(result);
    });
    let result = rx.recv_timeout(Duration::from_secs(20)).expect("the launch hung the fast schedule");
    let (_, _, _, kind, msg) = fault(result);
    match kind {
        FaultKind::BarrierDivergence(what) => assert!(
            what.contains("no thread can go on") && what.contains("cluster barrier") && what.contains("workgroup rank"),
            "{msg}"
        ),
        other => panic!("{other:?}"),
    }
}
