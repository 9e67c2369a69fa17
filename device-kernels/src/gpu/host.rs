//! The `gpu` module on the host: what the CPU backend needs to run the same kernel source.
//!
//! The CPU backend (`dynsmem_host::backend::cpu`) runs each thread of a workgroup either on its
//! own OS thread (the stress schedule) or as a coroutine among the workgroup's on one OS thread
//! (the fast schedule), and installs a [`ThreadContext`] with [`with_context`]; `gpu::*` read
//! it. The workgroup's barrier is the backend's ([`Workgroup`]), so a barrier is a real one.
//! What a GPU would let pass is raised as a [`Fault`] (by unwinding with it as the payload,
//! which skips the panic hook): an access outside a carved array, a carve larger than the
//! launch gave, a device-memory access outside the launch's buffers ([`GlobalBuffer`]), a
//! trap, a barrier only part of the workgroup reaches.

extern crate std;

use core::cell::Cell;
use core::fmt;
use core::panic::Location;
use std::boxed::Box;
use std::string::String;

/// The workgroup a thread belongs to: its barrier.
pub trait Workgroup: Sync {
    /// Returns when every thread of the workgroup has called `barrier` at the same source
    /// location; raises a [`Fault`] (via [`fault`]) when that cannot happen.
    fn barrier(&self, thread: u32, at: &'static Location<'static>);
    /// Called by a thread at each global-memory synchronisation point (an atomic, an
    /// acquire load, a release store), where a GPU's blocks can interleave; the backend
    /// may delay the thread there, or stop it with a [`Fault`]. Default: nothing.
    fn interleave(&self, _thread: u32) {}
}

/// What one kernel thread sees: its ids, the grid, its workgroup's region and barrier.
#[derive(Clone, Copy)]
pub struct ThreadContext<'a> {
    pub kernel: &'static str,
    pub workgroup: u32,
    pub thread: u32,
    pub block_dim: u32,
    pub grid_dim: u32,
    /// The workgroup's launch-sized region (aligned to `REGION_ALIGN`) and its size.
    pub region: *mut u8,
    pub region_bytes: u32,
    pub sync: &'a dyn Workgroup,
    /// The thread-block cluster the workgroup runs in; `None`: a cluster of one.
    pub cluster: Option<Cluster<'a>>,
    /// The launch's device-memory buffers, one per pointer parameter: every access through
    /// [`super::read_global`], [`super::write_global`], the global atomics and the async
    /// copies is checked against them ([`FaultKind::GlobalOverrun`]).
    pub buffers: &'a [GlobalBuffer],
}

/// A device-memory buffer a launch passed to a pointer parameter, as the CPU backend
/// allocated it: `bytes` at `base`, between guard zones of `guard_before` and `guard_after`
/// bytes that no buffer owns. An address in a guard zone belongs to the buffer the zone
/// guards, so an access a little past either end (up to a whole buffer's length past the
/// end) is reported against the buffer it overran, not taken for an access to a neighbour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlobalBuffer {
    /// The kernel parameter it was passed as (`KernelEntry::param_names`).
    pub param: &'static str,
    pub base: usize,
    pub bytes: usize,
    pub guard_before: usize,
    pub guard_after: usize,
}

impl GlobalBuffer {
    /// Whether `addr` is in this buffer or its guard zones.
    fn claims(&self, addr: usize) -> bool {
        addr >= self.base.saturating_sub(self.guard_before) && addr < self.base + self.bytes + self.guard_after
    }
}

/// A workgroup's place in its thread-block cluster, as the CPU backend emulates one: the
/// cluster's workgroups run at once, each in its own region, and share a barrier.
#[derive(Clone, Copy)]
pub struct Cluster<'a> {
    /// This workgroup's rank (its index in `regions`).
    pub rank: u32,
    /// Every workgroup's region, by rank (addresses: each of `region_bytes`).
    pub regions: &'a [usize],
    /// The barrier of all `regions.len() * block_dim` threads, numbered
    /// `rank * block_dim + thread`.
    pub sync: &'a dyn Workgroup,
}

/// What went wrong in a kernel thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultKind {
    /// An access to element `index` of a carved array of `len` elements: bytes
    /// `offset..offset + access_bytes` of a `region_bytes`-byte launch-sized region (for
    /// [`super::read_shared`], the array is the whole region in elements of the access's size).
    RegionOverrun {
        offset: u64,
        access_bytes: u32,
        region_bytes: u32,
        index: u32,
        len: u32,
        at: &'static Location<'static>,
    },
    /// A device-memory access of `access_bytes` at byte `offset` (negative: before its start)
    /// of the buffer passed as parameter `param`, outside its `buffer_bytes`; `index` is the
    /// element (of the access's size) that offset is. An address in no buffer's guard zones
    /// is reported against the nearest buffer.
    GlobalOverrun {
        param: &'static str,
        write: bool,
        index: i64,
        offset: i64,
        access_bytes: u32,
        buffer_bytes: u64,
        at: &'static Location<'static>,
    },
    /// A device-memory access of `access_bytes` at byte `offset` of the buffer passed as
    /// parameter `param`, inside it but at an address that is not a multiple of `align`.
    Misaligned {
        param: &'static str,
        write: bool,
        offset: i64,
        access_bytes: u32,
        align: u32,
        at: &'static Location<'static>,
    },
    /// The kernel's carve needs `required` bytes; the launch gave `launched`.
    CarveTooLarge { required: u32, launched: u32, at: &'static Location<'static> },
    /// `gpu::trap()` (or a panic in kernel code).
    Trap { at: &'static Location<'static> },
    /// A barrier only part of the workgroup reaches.
    BarrierDivergence(String),
    /// A panic in kernel code (an arithmetic overflow, a slice index) with its message.
    Panic(String),
    /// This thread stopped because another thread of its workgroup faulted.
    Aborted,
}

/// A fault with where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub kernel: &'static str,
    pub workgroup: u32,
    pub thread: u32,
    pub kind: FaultKind,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} workgroup {} thread {}: ", self.kernel, self.workgroup, self.thread)?;
        match &self.kind {
            FaultKind::RegionOverrun { offset, access_bytes, region_bytes, index, len, at } => write!(
                f,
                "access outside the launch-sized region's carve at {at}: element {index} of an array of {len} \
                 (bytes {offset}..{} of a {region_bytes}-byte region)",
                offset + *access_bytes as u64
            ),
            FaultKind::GlobalOverrun { param, write, index, offset, access_bytes, buffer_bytes, at } => write!(
                f,
                "{} of element {index} of `{param}` at {at}, outside the buffer: bytes {offset}..{} of a \
                 {buffer_bytes}-byte buffer",
                if *write { "store" } else { "load" },
                offset + *access_bytes as i64,
            ),
            FaultKind::Misaligned { param, write, offset, access_bytes, align, at } => write!(
                f,
                "misaligned {access_bytes}-byte {} at byte {offset} of `{param}` at {at}: the access needs a \
                 {align}-byte aligned address",
                if *write { "store" } else { "load" },
            ),
            FaultKind::CarveTooLarge { required, launched, at } => {
                write!(
                    f,
                    "the kernel's carve needs {required} bytes of launch-sized memory, the launch gave {launched} ({at})"
                )
            }
            FaultKind::Trap { at } => write!(f, "trap at {at}"),
            FaultKind::BarrierDivergence(msg) => write!(f, "barrier divergence: {msg}"),
            FaultKind::Panic(msg) => write!(f, "panic: {msg}"),
            FaultKind::Aborted => write!(f, "aborted after another thread faulted"),
        }
    }
}

std::thread_local! {
    static CONTEXT: Cell<*const ThreadContext<'static>> = const { Cell::new(core::ptr::null()) };
}

/// Runs `f` with `ctx` as this thread's GPU context (restored afterwards, also when `f`
/// unwinds).
pub fn with_context<R>(ctx: &ThreadContext<'_>, f: impl FnOnce() -> R) -> R {
    struct Restore(*const ThreadContext<'static>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CONTEXT.with(|c| c.set(self.0));
        }
    }
    // The pointer is only dereferenced while `ctx` is borrowed here.
    let ptr = (ctx as *const ThreadContext<'_>).cast::<ThreadContext<'static>>();
    let _restore = Restore(CONTEXT.with(|c| c.replace(ptr)));
    f()
}

/// This OS thread's context pointer, for an executor that runs several kernel threads on
/// one OS thread (as coroutines): it saves the pointer before it switches away from a kernel
/// thread and puts it back with [`set_raw_context`] when that thread resumes.
pub fn raw_context() -> *const ThreadContext<'static> {
    CONTEXT.with(|c| c.get())
}

/// Puts back a pointer [`raw_context`] returned.
///
/// # Safety
/// `ptr` is null or points to a context that outlives every `gpu::*` call until the pointer
/// is replaced (the kernel thread it was saved for is suspended, not finished).
pub unsafe fn set_raw_context(ptr: *const ThreadContext<'static>) {
    CONTEXT.with(|c| c.set(ptr));
}

/// This thread's context. Outside a CPU-backend launch there is none: calling `gpu::*`
/// there is a bug in the caller. (A reference, not a copy: every shared-memory access reads
/// it.)
pub fn context() -> &'static ThreadContext<'static> {
    let ptr = CONTEXT.with(|c| c.get());
    assert!(!ptr.is_null(), "gpu::* called outside a kernel launched by the CPU backend");
    // SAFETY: set by `with_context` (or put back by `set_raw_context`) for the kernel thread
    // running now, whose context outlives every `gpu::*` call it makes.
    unsafe { &*ptr }
}

/// Stops this kernel thread with `kind`, reported with the kernel, workgroup and thread.
pub fn fault(kind: FaultKind) -> ! {
    let c = context();
    std::panic::resume_unwind(Box::new(Fault { kernel: c.kernel, workgroup: c.workgroup, thread: c.thread, kind }))
}

pub(super) fn thread_idx_x() -> u32 {
    context().thread
}
pub(super) fn block_idx_x() -> u32 {
    context().workgroup
}
pub(super) fn block_dim_x() -> u32 {
    context().block_dim
}
pub(super) fn grid_dim_x() -> u32 {
    context().grid_dim
}
pub(super) fn dynamic_smem_size() -> u32 {
    context().region_bytes
}
pub(super) fn region_base() -> *mut u8 {
    context().region
}
#[track_caller]
pub(super) fn barrier() {
    let c = context();
    c.sync.barrier(c.thread, Location::caller());
}

pub(super) fn cluster_rank() -> u32 {
    context().cluster.map_or(0, |c| c.rank)
}
pub(super) fn cluster_size() -> u32 {
    context().cluster.map_or(1, |c| c.regions.len() as u32)
}
#[track_caller]
pub(super) fn cluster_barrier() {
    let c = context();
    match c.cluster {
        Some(k) => k.sync.barrier(k.rank * c.block_dim + c.thread, Location::caller()),
        None => c.sync.barrier(c.thread, Location::caller()),
    }
}
/// The address in block `rank`'s region of the byte at `p` in this block's; faults when `p`
/// is outside this block's region or `rank` outside the cluster.
#[track_caller]
pub(super) fn cluster_map(p: *const u8, access_bytes: u32, rank: u32) -> *const u8 {
    let c = context();
    let offset = (p as usize).wrapping_sub(c.region as usize) as u64;
    if offset + access_bytes as u64 > c.region_bytes as u64 {
        fault(FaultKind::RegionOverrun {
            offset,
            access_bytes,
            region_bytes: c.region_bytes,
            index: 0,
            len: 0,
            at: Location::caller(),
        });
    }
    let base = match c.cluster {
        Some(k) => match k.regions.get(rank as usize) {
            Some(&r) => r,
            None => {
                fault(FaultKind::Panic(std::format!("cluster_map to rank {rank} in a cluster of {}", k.regions.len())))
            }
        },
        None if rank == 0 => c.region as usize,
        None => fault(FaultKind::Panic(std::format!("cluster_map to rank {rank} outside a cluster"))),
    };
    (base + offset as usize) as *const u8
}

/// Faults unless the `access_bytes` at `addr` lie inside this workgroup's region.
#[track_caller]
pub(super) fn check_shared(addr: *const u8, access_bytes: u32) {
    let c = context();
    let offset = (addr as usize).wrapping_sub(c.region as usize) as u64;
    if offset + access_bytes as u64 > c.region_bytes as u64 {
        let size = access_bytes.max(1);
        fault(FaultKind::RegionOverrun {
            offset,
            access_bytes,
            region_bytes: c.region_bytes,
            index: (offset / size as u64) as u32,
            len: c.region_bytes / size,
            at: Location::caller(),
        });
    }
}

/// Faults unless the `access_bytes` at `addr` lie inside one of the launch's buffers and
/// `addr` is a multiple of `align` (a GPU faults on a misaligned access: a 16-byte vector
/// load needs a 16-byte aligned address; the host would read it anyway).
#[track_caller]
pub(super) fn check_global(addr: *const u8, access_bytes: u32, align: u32, write: bool) {
    let c = context();
    let addr = addr as usize;
    let inside = |b: &GlobalBuffer| addr >= b.base && addr + access_bytes as usize <= b.base + b.bytes;
    let Some(owner) = c.buffers.iter().find(|b| b.claims(addr)).or_else(|| {
        // In no buffer's guard zones: the nearest buffer.
        c.buffers.iter().min_by_key(|b| (addr as i128 - b.base as i128).unsigned_abs())
    }) else {
        fault(FaultKind::Panic(std::format!("device-memory access at {addr:#x} in a launch with no buffers")))
    };
    let offset = (addr as i128 - owner.base as i128) as i64;
    if inside(owner) {
        if !addr.is_multiple_of(align.max(1) as usize) {
            fault(FaultKind::Misaligned {
                param: owner.param,
                write,
                offset,
                access_bytes,
                align,
                at: Location::caller(),
            });
        }
        return;
    }
    fault(FaultKind::GlobalOverrun {
        param: owner.param,
        write,
        index: offset.div_euclid(access_bytes.max(1) as i64),
        offset,
        access_bytes,
        buffer_bytes: owner.bytes as u64,
        at: Location::caller(),
    })
}

/// A global-memory synchronisation point of this thread (see [`Workgroup::interleave`]).
pub(super) fn interleave() {
    let c = context();
    c.sync.interleave(c.thread);
}

pub(super) unsafe fn shared_atomic_add_u32(p: *mut u32, v: u32) {
    // SAFETY: `p` points into the workgroup's region, which its threads share.
    unsafe { core::sync::atomic::AtomicU32::from_ptr(p) }.fetch_add(v, core::sync::atomic::Ordering::Relaxed);
}
/// Nanoseconds since the first call in this process (the CPU backend's [`super::micro::clock`]).
pub(super) fn clock_ns() -> u64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    EPOCH.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
}
pub(super) fn exp2(x: f32) -> f32 {
    x.exp2()
}
pub(super) fn log2(x: f32) -> f32 {
    x.log2()
}
pub(super) fn sqrt(x: f32) -> f32 {
    x.sqrt()
}
pub(super) fn rsqrt(x: f32) -> f32 {
    1.0 / x.sqrt()
}
/// One rounding, as on a GPU. Without `+fma` in the host build, `mul_add` is a call into the
/// runtime's `fmaf`, which dispatches on every call and dominates FMA-heavy kernels on the CPU
/// backend: with the instruction present, a call to a function that is that instruction
/// instead. Keep it out of line: inlined, the feature check at every FMA of every kernel
/// multiplies the kernel crate's host compile time.
#[inline(never)]
pub(super) fn fma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the `fma` feature (checked just above; the answer is cached).
        return unsafe { fma_instruction(a, b, c) };
    }
    a.mul_add(b, c)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
fn fma_instruction(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}

/// The CPU backend's stand-in for a CUDA tensor map (`CUtensorMap`, 128 bytes), which
/// [`super::SharedPtr::copy_tile_2d`] reads on the host: a 2-D row-major tensor of
/// `elem_bytes`-byte elements at `base`, `dims` = (columns, rows), rows `row_bytes` apart,
/// copied in boxes of `box_dims` = (columns, rows), unswizzled, zeros past the tensor. The
/// backend that writes one checks that every element inside `dims` is inside its buffer, so
/// the copy reads only there (it is not checked against the launch's buffers: the tensor is
/// not a kernel parameter, as on a GPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostTensorMap {
    pub base: u64,
    pub dims: [u64; 2],
    pub row_bytes: u64,
    pub box_dims: [u32; 2],
    pub elem_bytes: u32,
}

impl HostTensorMap {
    /// Marks the words as a CPU tensor map (a GPU's map read on the host is refused).
    const MAGIC: u32 = 0x7e75_04a9;

    /// The 32 words a tensor-map buffer holds.
    pub fn to_words(&self) -> [u32; 32] {
        let mut w = [0u32; 32];
        let mut put = |i: usize, v: u64| {
            w[i] = v as u32;
            w[i + 1] = (v >> 32) as u32;
        };
        put(0, self.base);
        put(2, self.dims[0]);
        put(4, self.dims[1]);
        put(6, self.row_bytes);
        w[8] = self.box_dims[0];
        w[9] = self.box_dims[1];
        w[10] = self.elem_bytes;
        w[31] = Self::MAGIC;
        w
    }

    /// The map `to_words` wrote, or `None`.
    pub fn from_words(w: &[u32; 32]) -> Option<HostTensorMap> {
        let get = |i: usize| w[i] as u64 | (w[i + 1] as u64) << 32;
        (w[31] == Self::MAGIC).then(|| HostTensorMap {
            base: get(0),
            dims: [get(2), get(4)],
            row_bytes: get(6),
            box_dims: [w[8], w[9]],
            elem_bytes: w[10],
        })
    }

    /// The bytes of element `(x, y)`, or `None` outside the tensor.
    pub fn element(&self, x: i64, y: i64) -> Option<*const u8> {
        let inside = x >= 0 && y >= 0 && (x as u64) < self.dims[0] && (y as u64) < self.dims[1];
        inside.then(|| (self.base + y as u64 * self.row_bytes + x as u64 * self.elem_bytes as u64) as *const u8)
    }
}

/// Reads the CPU tensor map at `map` (checked against the launch's buffers), or faults.
#[track_caller]
pub(super) fn tensor_map(map: *const u8) -> HostTensorMap {
    check_global(map, 128, 4, false);
    // SAFETY: checked to be 128 bytes of a launch buffer; buffers are 16-byte aligned.
    let words = unsafe { map.cast::<[u32; 32]>().read() };
    HostTensorMap::from_words(&words).unwrap_or_else(|| {
        fault(FaultKind::Panic("a tensor-map copy from a buffer that holds no CPU tensor map".into()))
    })
}
