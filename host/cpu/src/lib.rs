//! The CPU executor: dynsmem's Rust kernels, from the same source as the PTX, run on the
//! host. It catches what a GPU would hide: an access outside a carved array of the region, a
//! carve larger than the launch gave, a device-memory access outside the launch's buffers, a
//! barrier only part of the workgroup reaches; each becomes a [`Fault`] naming the kernel,
//! workgroup and thread, and nothing hangs.
//!
//! Two schedules run a launch ([`CpuSchedule`]), with the same checks and reports:
//! - **fast** (the default, `fast`): a workgroup's threads are coroutines on one OS thread,
//!   switched at barriers; workgroups (whole clusters) are spread over the host's cores. It is
//!   the reference of the contract's CPU-run check and what the test suites run.
//! - **stress** (`execute`): a workgroup's threads are OS threads meeting at real barriers
//!   (`sync`), built to find races a GPU run could let through:
//!   [`Schedule::resident`] workgroups run at once, in a seeded order that is not the grid
//!   order, so protocols between workgroups (the scan's look-back) really interleave; and
//!   threads are delayed at random at global-memory synchronisation points (atomics, acquire
//!   loads, release stores), so a workgroup sees another's published state in each of its
//!   stages. A missing barrier shows up here, not under fast, where threads between two
//!   barriers never interleave.
//!
//! Under both, launch-sized regions are filled with [`REGION_POISON`] at each launch and
//! between workgroups, so reading workgroup memory nobody wrote gives NaNs, not zeros. The
//! workgroup order comes from a seed; `DYNSMEM_CPU_SEED` sets it, `DYNSMEM_CPU_SCHEDULE=fast|stress`
//! the schedule, so a failure can be run again with the same order (under stress the OS still
//! schedules the threads).
//!
//! Layers, as in `cudarc`: [`launch`] runs one launch of a [`KernelEntry`] on packed argument
//! slots (what `dynsmem-host`'s CPU backend calls); [`Cpu`] is the safe API over it, with
//! buffers ([`CpuMem`]) and typed arguments ([`Arg`]), which the kernel tests
//! (`host/kernel-tests`) use. This crate and `dynsmem-kernels` are all those tests link, so a
//! kernel edit rebuilds in seconds.

mod execute;
mod fast;
pub mod rng;
mod sync;

use std::alloc::Layout;
use std::panic::AssertUnwindSafe;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

use dynsmem_kernels::gpu::host::{Cluster, GlobalBuffer, ThreadContext, with_context};
pub use dynsmem_kernels::gpu::host::{Fault, FaultKind};
pub use dynsmem_kernels::{KernelEntry, LaunchDims, ParamKind};

use self::sync::WorkgroupSync;

/// An allocation the host could not make.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the host could not allocate {requested} bytes for a CPU-executor buffer")]
pub struct AllocError {
    pub requested: u64,
}

/// Host memory standing in for device memory: `bytes` (zero-filled, [`REGION_ALIGN`]-aligned)
/// between two guard zones that no buffer owns, [`GUARD_BEFORE`] bytes before and at least
/// the buffer's own length (and [`GUARD_AFTER_MIN`]) after. Kernels' device-memory accesses
/// are checked against `bytes` ([`GlobalBuffer`]); an access up to a buffer's length past
/// its end lands in its own guard zone, so it is reported against the buffer it overran,
/// never taken for an access to the next allocation. The guard zones are allocated
/// zero-filled and never written, so the operating system backs large ones with no memory.
///
/// [`REGION_ALIGN`]: dynsmem_kernels::gpu::REGION_ALIGN
pub struct CpuMem {
    /// The allocation: the guard zones and the buffer.
    alloc: NonNull<u8>,
    layout: Layout,
    bytes: usize,
}

/// Bytes of the guard zone before each [`CpuMem`] buffer (a multiple of the alignment).
const GUARD_BEFORE: usize = 4096;
/// The least bytes of the guard zone after each [`CpuMem`] buffer.
const GUARD_AFTER_MIN: usize = 4096;

// SAFETY: plain owned memory; kernels share it across threads the way GPU threads share
// device memory, and the backend waits for every launch before returning.
unsafe impl Send for CpuMem {}
unsafe impl Sync for CpuMem {}

impl CpuMem {
    /// `bytes` zero bytes (and the guard zones).
    pub fn zeroed(bytes: usize) -> Result<CpuMem, AllocError> {
        let oom = |requested: u64| AllocError { requested };
        let size = bytes
            .checked_next_multiple_of(16)
            .and_then(|b| b.checked_add(GUARD_BEFORE + b.max(GUARD_AFTER_MIN)))
            .ok_or_else(|| oom(bytes as u64))?;
        let layout = Layout::from_size_align(size, dynsmem_kernels::gpu::REGION_ALIGN as usize)
            .map_err(|_| oom(bytes as u64))?;
        // SAFETY: non-zero size (the guard zones).
        let alloc = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }).ok_or_else(|| oom(size as u64))?;
        Ok(CpuMem { alloc, layout, bytes })
    }

    /// Like [`CpuMem::zeroed`], every byte `byte`.
    pub fn filled(bytes: usize, byte: u8) -> Result<CpuMem, AllocError> {
        let mut mem = CpuMem::zeroed(bytes)?;
        mem.bytes_mut().fill(byte);
        Ok(mem)
    }

    /// Overwrites every byte with [`REGION_POISON`].
    ///
    /// # Safety
    /// No other thread reads or writes the memory meanwhile.
    pub unsafe fn poison(&self) {
        unsafe { std::ptr::write_bytes(self.ptr(), REGION_POISON, self.bytes) };
    }

    pub fn ptr(&self) -> *mut u8 {
        // SAFETY: the guard zone before the buffer is inside the allocation.
        unsafe { self.alloc.as_ptr().add(GUARD_BEFORE) }
    }

    pub fn addr(&self) -> u64 {
        self.ptr() as u64
    }

    /// The buffer as a kernel parameter `param` sees it.
    pub fn global(&self, param: &'static str) -> GlobalBuffer {
        GlobalBuffer {
            param,
            base: self.ptr() as usize,
            bytes: self.bytes,
            guard_before: GUARD_BEFORE,
            guard_after: self.layout.size() - GUARD_BEFORE - self.bytes,
        }
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: owned, initialised (zeroed) memory of this size.
        unsafe { std::slice::from_raw_parts(self.ptr(), self.bytes) }
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr(), self.bytes) }
    }
}

impl Drop for CpuMem {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { std::alloc::dealloc(self.alloc.as_ptr(), self.layout) }
    }
}

/// How the CPU backend runs a launch's workgroups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// Coroutines and all cores, or OS threads and perturbed timing.
    pub mode: CpuSchedule,
    /// Stress only: workgroups in flight at once (fewer when the grid is smaller), each with
    /// its own threads, region and barrier, like the blocks resident on a GPU's SMs.
    pub resident: u32,
    /// Seed of each launch's workgroup order (and, under stress, of the delays at
    /// synchronisation points); launch `i` of a backend draws from `seed` and `i`.
    pub seed: u64,
}

/// How the CPU backend runs a workgroup's threads (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuSchedule {
    /// Coroutines switched at barriers, workgroups over all cores: the reference and the tests.
    #[default]
    Fast,
    /// An OS thread per kernel thread, workgroups in a perturbed order with random delays:
    /// finds races (a missing barrier, a look-back that reads a tile too early).
    Stress,
}

impl CpuSchedule {
    pub fn name(self) -> &'static str {
        match self {
            CpuSchedule::Fast => "fast",
            CpuSchedule::Stress => "stress",
        }
    }
}

/// The environment variable that picks the schedule (`fast` or `stress`).
pub const SCHEDULE_ENV: &str = "DYNSMEM_CPU_SCHEDULE";

/// The schedule `--cpu-schedule` set for this process (0: none; else `1 + CpuSchedule as u8`).
static SCHEDULE_SET: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Sets the schedule of every CPU backend made from now on in this process, over
/// `DYNSMEM_CPU_SCHEDULE` (the command line's `--cpu-schedule`).
pub fn set_cpu_schedule(mode: CpuSchedule) {
    SCHEDULE_SET.store(1 + mode as u8, Ordering::Relaxed);
}

/// Workgroups in flight at once under stress by default: enough for a look-back to meet a
/// predecessor that is itself still looking back.
pub const DEFAULT_RESIDENT: u32 = 3;
/// The seed when `DYNSMEM_CPU_SEED` is not set.
pub const DEFAULT_SEED: u64 = 1;

impl Schedule {
    /// The fast schedule, [`DEFAULT_SEED`]: what the kernel tests run on.
    pub fn fast() -> Schedule {
        Schedule { mode: CpuSchedule::Fast, resident: DEFAULT_RESIDENT, seed: DEFAULT_SEED }
    }

    /// The schedule `--cpu-schedule` set, else `DYNSMEM_CPU_SCHEDULE` (`fast` or `stress`),
    /// else fast; [`DEFAULT_RESIDENT`] workgroups at a time under stress; the seed from
    /// `DYNSMEM_CPU_SEED` (decimal) or [`DEFAULT_SEED`].
    ///
    /// # Panics
    /// When `DYNSMEM_CPU_SCHEDULE` holds neither name: a test run that asked for stress must
    /// not quietly run fast.
    pub fn from_env() -> Schedule {
        let seed = std::env::var("DYNSMEM_CPU_SEED").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_SEED);
        let mode = match SCHEDULE_SET.load(Ordering::Relaxed) {
            1 => CpuSchedule::Fast,
            2 => CpuSchedule::Stress,
            _ => match std::env::var(SCHEDULE_ENV).ok().as_deref().map(str::trim) {
                None | Some("") | Some("fast") => CpuSchedule::Fast,
                Some("stress") => CpuSchedule::Stress,
                Some(other) => panic!("{SCHEDULE_ENV}={other:?}: the CPU schedules are `fast` and `stress`"),
            },
        };
        Schedule { mode, resident: DEFAULT_RESIDENT, seed }
    }

    /// How the device name describes it.
    pub fn describe(&self) -> String {
        match self.mode {
            CpuSchedule::Fast => format!(
                "fast schedule: a workgroup's threads as coroutines on one OS thread, workgroups over the cores, \
                 order from seed {}",
                self.seed
            ),
            CpuSchedule::Stress => format!(
                "stress schedule: one OS thread per kernel thread; {} workgroups at a time, order and delays from seed {}",
                self.resident, self.seed
            ),
        }
    }
}

/// Stack of each kernel thread (an OS thread's under stress, a coroutine's under fast):
/// kernels keep a few registers' worth of locals.
const THREAD_STACK: usize = 256 * 1024;

/// Fill byte of launch-sized regions, at each launch and between the workgroups a region
/// serves: every `f32` reads as a NaN, every integer as all ones, so a kernel that reads
/// workgroup memory it never wrote (a GPU leaves there whatever the last block had) gets
/// garbage here too instead of the zeros a fresh allocation would give.
pub const REGION_POISON: u8 = 0xFF;

/// Runs one launch of `entry` on the host: `slots` holds one packed argument per parameter
/// (addresses and `u64` whole, `u32` in the low half, `f32` as its bits; [`KernelEntry::run`]),
/// `buffers` the device-memory buffers the pointer arguments point into, which every access
/// is checked against. `seed` orders the workgroups (and, under stress, the delays);
/// `skip_first` drops the first workgroup of that order (a planted bug for tests of how
/// failures surface). Returns the launch's first fault.
///
/// # Safety
/// `slots` match `entry.params`, and each pointer slot points into one of `buffers`, which
/// stay allocated until the call returns.
pub unsafe fn launch(
    entry: &'static KernelEntry,
    dims: LaunchDims,
    slots: &[u64],
    buffers: &[GlobalBuffer],
    schedule: Schedule,
    seed: u64,
    skip_first: bool,
) -> Result<(), Fault> {
    match schedule.mode {
        CpuSchedule::Fast => fast::execute_fast(entry, dims, slots, buffers, seed, skip_first),
        CpuSchedule::Stress => execute::execute(entry, dims, slots, buffers, schedule, seed, skip_first),
    }
}

/// One argument of a [`Cpu::launch`]: a buffer, a pointer into one, or a scalar by value.
#[derive(Clone, Copy)]
pub enum Arg<'a> {
    Mem(&'a CpuMem),
    /// The address `offset` bytes into the buffer (a view that starts inside it, as a slice of
    /// a user's tensor does: unaligned where the offset is); accesses are checked against the
    /// whole buffer.
    At(&'a CpuMem, usize),
    U32(u32),
    U64(u64),
    F32(f32),
}

impl Arg<'_> {
    fn kind(&self) -> ParamKind {
        match self {
            Arg::Mem(_) | Arg::At(..) => ParamKind::Ptr,
            Arg::U32(_) => ParamKind::U32,
            Arg::U64(_) => ParamKind::U64,
            Arg::F32(_) => ParamKind::F32,
        }
    }

    fn slot(&self) -> u64 {
        match *self {
            Arg::Mem(mem) => mem.addr(),
            Arg::At(mem, offset) => mem.addr() + offset as u64,
            Arg::U32(v) => v as u64,
            Arg::U64(v) => v,
            Arg::F32(v) => v.to_bits() as u64,
        }
    }
}

/// Why a [`Cpu::launch`] did not complete.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The arguments' kinds differ from the kernel's parameters.
    #[error("kernel {kernel}: expected arguments {expected:?}, got {got:?}")]
    ArgumentMismatch { kernel: &'static str, expected: &'static [ParamKind], got: Vec<ParamKind> },
    /// A kernel thread faulted (`launch` is its launch index on this executor).
    #[error("{fault} (CPU schedule: {schedule}, seed {seed}, launch {launch})")]
    Fault { fault: Fault, schedule: &'static str, seed: u64, launch: u64 },
}

/// The executor's safe API: launches of [`KernelEntry`]s on [`CpuMem`] buffers, each launch
/// `i` ordered by a seed drawn from the schedule's seed and `i`.
pub struct Cpu {
    schedule: Schedule,
    launches: AtomicU64,
}

impl Cpu {
    pub fn new(schedule: Schedule) -> Cpu {
        Cpu { schedule, launches: AtomicU64::new(0) }
    }

    pub fn schedule(&self) -> Schedule {
        self.schedule
    }

    /// Launches `entry` with `args` (checked against its parameters) on `dims`;
    /// `skip_first` as for [`launch`].
    pub fn launch_with(
        &self,
        entry: &'static KernelEntry,
        dims: LaunchDims,
        args: &[Arg<'_>],
        skip_first: bool,
    ) -> Result<(), LaunchError> {
        let kinds: Vec<ParamKind> = args.iter().map(Arg::kind).collect();
        if kinds != entry.params {
            return Err(LaunchError::ArgumentMismatch { kernel: entry.name, expected: entry.params, got: kinds });
        }
        let slots: Vec<u64> = args.iter().map(Arg::slot).collect();
        let buffers: Vec<GlobalBuffer> = args
            .iter()
            .zip(entry.param_names)
            .filter_map(|(a, &name)| match *a {
                Arg::Mem(mem) | Arg::At(mem, _) => Some(mem.global(name)),
                _ => None,
            })
            .collect();
        let launch = self.launches.fetch_add(1, Ordering::Relaxed);
        let seed = rng::SplitMix64::new(self.schedule.seed ^ launch.rotate_left(32)).next_u64();
        // SAFETY: the kinds match the parameters; every pointer is a live buffer of `buffers`.
        unsafe { self::launch(entry, dims, &slots, &buffers, self.schedule, seed, skip_first) }.map_err(|fault| {
            LaunchError::Fault { fault, schedule: self.schedule.mode.name(), seed: self.schedule.seed, launch }
        })
    }

    /// Launches `entry` with `args` on `dims`.
    pub fn launch(&self, entry: &'static KernelEntry, dims: LaunchDims, args: &[Arg<'_>]) -> Result<(), LaunchError> {
        self.launch_with(entry, dims, args, false)
    }
}

impl CpuMem {
    /// A buffer holding `data`.
    pub fn from_slice<T: bytemuck::Pod>(data: &[T]) -> Result<CpuMem, AllocError> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let mut mem = CpuMem::zeroed(bytes.len())?;
        mem.bytes_mut().copy_from_slice(bytes);
        Ok(mem)
    }

    /// The buffer's bytes as `T`s (its length a multiple of `T`'s size).
    pub fn to_vec<T: bytemuck::Pod>(&self) -> Vec<T> {
        bytemuck::pod_collect_to_vec(self.bytes())
    }
}
