//! The primitives the memory probes ([`crate::memprobe`]) time: the cycle counter, global
//! loads with a cache hint, workgroup and device atomics of each kind, fences by scope, and
//! a thread-block cluster's shared memory (distributed shared memory, sm_90).
//!
//! Each is one instruction where the hardware has one, in an `asm!` block (not `pure`), so
//! the compiler neither merges, hoists nor drops it: a probe's loop runs exactly the
//! accesses it names. On the CPU backend they are what the kernels need to give the same
//! results (plain loads, `core` atomics and fences, clusters the backend emulates); the clock
//! there counts nanoseconds.
//!
//! sm_90-only forms (cluster fences, cluster addressing) trap in an image built for an
//! older target: the host runs them only where the device is sm_90 or newer.

#[cfg(not(gpu))]
use super::host;
use crate::vector::{Vec2, Vec4};

/// A cache hint of a global load (PTX cache operators).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum CacheHint {
    /// `ld.global` (`.ca`: cached in L1 and L2).
    Default = 0,
    /// `ld.global.cg`: cached in L2 only.
    Global = 1,
    /// `ld.global.cs`: streaming, likely accessed once (evict first).
    Streaming = 2,
    /// `ld.global.cv`: volatile, fetched again on every load.
    Volatile = 3,
    /// `ld.global.nc`: the read-only (texture) path.
    NonCoherent = 4,
}

impl CacheHint {
    pub const ALL: [CacheHint; 5] =
        [CacheHint::Default, CacheHint::Global, CacheHint::Streaming, CacheHint::Volatile, CacheHint::NonCoherent];

    pub const fn from_u32(v: u32) -> Option<CacheHint> {
        match v {
            0 => Some(CacheHint::Default),
            1 => Some(CacheHint::Global),
            2 => Some(CacheHint::Streaming),
            3 => Some(CacheHint::Volatile),
            4 => Some(CacheHint::NonCoherent),
            _ => None,
        }
    }

    /// The PTX spelling (`ld.global` for the default).
    pub const fn ptx(self) -> &'static str {
        match self {
            CacheHint::Default => "ld.global",
            CacheHint::Global => "ld.global.cg",
            CacheHint::Streaming => "ld.global.cs",
            CacheHint::Volatile => "ld.global.cv",
            CacheHint::NonCoherent => "ld.global.nc",
        }
    }
}

/// A free-running counter: SM clock cycles on NVIDIA (`%clock64`), nanoseconds on the CPU
/// backend. Read it before and after a dependent chain; the difference over the chain's
/// length is the latency. AMD has no counter here (0: the probes record no cycles there):
/// `s_memrealtime` is missing on RDNA3 (gfx1100), one of the images this crate builds.
#[inline(always)]
pub fn clock() -> u64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let t: u64;
        // SAFETY: reads a special register; not `pure`, so it stays in program order.
        unsafe { core::arch::asm!("mov.u64 {}, %clock64;", out(reg64) t, options(nostack)) };
        t
    }
    #[cfg(target_arch = "amdgpu")]
    {
        0
    }
    #[cfg(not(gpu))]
    {
        host::clock_ns()
    }
}

/// One hinted global load of `T` (4, 8 or 16 bytes: `u32`, [`Vec2`], [`Vec4`]) with the
/// cache operator `H` (a [`CacheHint`] as `u32`, so it is chosen at compile time).
pub trait HintedLoad: Copy {
    /// The sum of the 32-bit words of the value (what the probes fold).
    fn word_sum(self) -> u32;
    /// # Safety
    /// `p` is valid device memory, aligned for `Self`.
    unsafe fn load<const H: u32>(p: *const Self) -> Self;
}

/// One hinted load in PTX: `$op` (a [`CacheHint::ptx`] spelling) of 1, 2 or 4 words.
#[cfg(target_arch = "nvptx64")]
macro_rules! ld {
    ($op:literal, $p:expr, u32) => {{
        let v: u32;
        core::arch::asm!(concat!($op, ".u32 {v}, [{p}];"), v = out(reg32) v, p = in(reg64) $p, options(nostack));
        v
    }};
    ($op:literal, $p:expr, v2) => {{
        let (a, b): (u32, u32);
        core::arch::asm!(concat!($op, ".v2.u32 {{{a}, {b}}}, [{p}];"),
            a = out(reg32) a, b = out(reg32) b, p = in(reg64) $p, options(nostack));
        Vec2([a, b])
    }};
    ($op:literal, $p:expr, v4) => {{
        let (a, b, c, d): (u32, u32, u32, u32);
        core::arch::asm!(concat!($op, ".v4.u32 {{{a}, {b}, {c}, {d}}}, [{p}];"),
            a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
            p = in(reg64) $p, options(nostack));
        Vec4([a, b, c, d])
    }};
}

/// The load of hint `$h` (a [`CacheHint`] as `u32`, a constant) of `$w` words.
#[cfg(target_arch = "nvptx64")]
macro_rules! hinted {
    ($h:expr, $p:expr, $w:ident) => {
        // SAFETY: the caller's contract (valid, aligned device memory).
        unsafe {
            match $h {
                1 => ld!("ld.global.cg", $p, $w),
                2 => ld!("ld.global.cs", $p, $w),
                3 => ld!("ld.global.cv", $p, $w),
                4 => ld!("ld.global.nc", $p, $w),
                _ => ld!("ld.global", $p, $w),
            }
        }
    };
}

impl HintedLoad for u32 {
    #[inline(always)]
    fn word_sum(self) -> u32 {
        self
    }
    #[inline(always)]
    unsafe fn load<const H: u32>(p: *const u32) -> u32 {
        #[cfg(not(gpu))]
        host::check_global(p.cast(), size_of::<u32>() as u32, align_of::<u32>() as u32, false);
        #[cfg(target_arch = "nvptx64")]
        {
            hinted!(H, p, u32)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        unsafe {
            p.read_volatile()
        }
    }
}

impl HintedLoad for Vec2<u32> {
    #[inline(always)]
    fn word_sum(self) -> u32 {
        self.0[0].wrapping_add(self.0[1])
    }
    #[inline(always)]
    unsafe fn load<const H: u32>(p: *const Vec2<u32>) -> Vec2<u32> {
        #[cfg(not(gpu))]
        host::check_global(p.cast(), size_of::<Vec2<u32>>() as u32, align_of::<Vec2<u32>>() as u32, false);
        #[cfg(target_arch = "nvptx64")]
        {
            hinted!(H, p, v2)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        unsafe {
            p.read_volatile()
        }
    }
}

impl HintedLoad for Vec4<u32> {
    #[inline(always)]
    fn word_sum(self) -> u32 {
        (self.0[0].wrapping_add(self.0[1])).wrapping_add(self.0[2].wrapping_add(self.0[3]))
    }
    #[inline(always)]
    unsafe fn load<const H: u32>(p: *const Vec4<u32>) -> Vec4<u32> {
        #[cfg(not(gpu))]
        host::check_global(p.cast(), size_of::<Vec4<u32>>() as u32, align_of::<Vec4<u32>>() as u32, false);
        #[cfg(target_arch = "nvptx64")]
        {
            hinted!(H, p, v4)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        unsafe {
            p.read_volatile()
        }
    }
}

/// A read of workgroup memory that is never merged with, or hoisted past, another (a
/// volatile load: `ld.volatile.shared`, one `LDS` each).
///
/// # Safety
/// `p` points into this block's launch-sized region.
#[inline(always)]
pub unsafe fn shared_load_volatile<T: Copy>(p: *const T) -> T {
    unsafe { p.read_volatile() }
}

/// A store to device memory that is never merged with, or removed in favour of, another
/// (a volatile store: `st.volatile.global`), checked on the CPU backend like
/// [`super::write_global`].
///
/// # Safety
/// `p` is valid, aligned device memory for a `T`.
#[inline(always)]
#[cfg_attr(not(gpu), track_caller)]
pub unsafe fn global_store_volatile<T: Copy>(p: *mut T, v: T) {
    #[cfg(not(gpu))]
    host::check_global(p.cast_const().cast(), size_of::<T>() as u32, align_of::<T>() as u32, true);
    unsafe { p.write_volatile(v) }
}

/// An atomic read-modify-write the atomics probe times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum AtomicOp {
    /// `red.add.u32` (no value returned: what a histogram's count compiles to).
    Add = 0,
    /// `red.min.u32`.
    Min = 1,
    /// An increment by compare-and-swap: `atom.cas.b32` retried until it lands (how an
    /// operation without its own atomic is built).
    CasIncrement = 2,
}

impl AtomicOp {
    pub const ALL: [AtomicOp; 3] = [AtomicOp::Add, AtomicOp::Min, AtomicOp::CasIncrement];
    pub const fn from_u32(v: u32) -> Option<AtomicOp> {
        match v {
            0 => Some(AtomicOp::Add),
            1 => Some(AtomicOp::Min),
            2 => Some(AtomicOp::CasIncrement),
            _ => None,
        }
    }
}

/// An increment by compare-and-swap, retried until one lands: `cas(expected, new)` returns
/// the value it found (the swap happened where that is `expected`). `old` is the first
/// guess. Returns the attempts.
#[inline(always)]
fn cas_increment(mut old: u32, cas: impl Fn(u32, u32) -> u32) -> u32 {
    let mut tries = 0;
    loop {
        tries += 1;
        let seen = cas(old, old.wrapping_add(1));
        if seen == old {
            return tries;
        }
        old = seen;
    }
}

/// The 32-bit shared-window address of a generic pointer into workgroup memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn shared_window(p: *const u32) -> u32 {
    let a: u32;
    // SAFETY: address arithmetic only.
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 t; cvta.to.shared.u64 t, {p}; cvt.u32.u64 {a}, t; }}",
            p = in(reg64) p as u64,
            a = out(reg32) a,
            options(pure, nomem, nostack)
        )
    };
    a
}

/// `op` on the `u32` at `p` in workgroup memory (`v`: the addend or the bound; unused by
/// the CAS increment). Returns the CAS attempts it took (1 for add and min).
///
/// # Safety
/// `p` points into this block's launch-sized region; every concurrent access to it is atomic.
#[inline(always)]
pub unsafe fn shared_atomic(op: AtomicOp, p: *mut u32, v: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let a = shared_window(p);
        // SAFETY: the caller's contract.
        unsafe {
            match op {
                AtomicOp::Add => {
                    core::arch::asm!("red.shared.add.u32 [{a}], {v};", a = in(reg32) a, v = in(reg32) v, options(nostack))
                }
                AtomicOp::Min => {
                    core::arch::asm!("red.shared.min.u32 [{a}], {v};", a = in(reg32) a, v = in(reg32) v, options(nostack))
                }
                AtomicOp::CasIncrement => {
                    return cas_increment(p.read_volatile(), |old, new| {
                        let seen: u32;
                        core::arch::asm!("atom.shared.cas.b32 {s}, [{a}], {o}, {n};",
                            s = out(reg32) seen, a = in(reg32) a, o = in(reg32) old, n = in(reg32) new,
                            options(nostack));
                        seen
                    });
                }
            }
        }
        1
    }
    #[cfg(not(target_arch = "nvptx64"))]
    unsafe {
        core_atomic(op, p, v)
    }
}

/// Adds `v` to the `u32` at `p` in workgroup memory and returns the value before the add
/// (`atom.shared.add.u32`; [`shared_atomic`]'s add returns nothing).
///
/// # Safety
/// As [`shared_atomic`].
#[inline(always)]
pub unsafe fn shared_fetch_add(p: *mut u32, v: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let a = shared_window(p);
        let old: u32;
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!("atom.shared.add.u32 {o}, [{a}], {v};",
                o = out(reg32) old, a = in(reg32) a, v = in(reg32) v, options(nostack))
        };
        old
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        #[cfg(not(gpu))]
        host::interleave();
        // SAFETY: the caller's contract (valid, aligned, only accessed atomically).
        unsafe { core::sync::atomic::AtomicU32::from_ptr(p) }.fetch_add(v, core::sync::atomic::Ordering::Relaxed)
    }
}

/// `op` on the `u32` at `p` in device memory; as [`shared_atomic`].
///
/// # Safety
/// `p` is valid, 4-aligned device memory that every accessor touches atomically.
#[inline(always)]
pub unsafe fn global_atomic(op: AtomicOp, p: *mut u32, v: u32) -> u32 {
    #[cfg(not(gpu))]
    host::check_global(p.cast_const().cast(), 4, 4, true);
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: the caller's contract.
        unsafe {
            match op {
                AtomicOp::Add => {
                    core::arch::asm!("red.global.add.u32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v, options(nostack))
                }
                AtomicOp::Min => {
                    core::arch::asm!("red.global.min.u32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v, options(nostack))
                }
                AtomicOp::CasIncrement => {
                    return cas_increment(p.read_volatile(), |old, new| {
                        let seen: u32;
                        core::arch::asm!("atom.global.cas.b32 {s}, [{p}], {o}, {n};",
                            s = out(reg32) seen, p = in(reg64) p, o = in(reg32) old, n = in(reg32) new,
                            options(nostack));
                        seen
                    });
                }
            }
        }
        1
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        #[cfg(not(gpu))]
        host::interleave();
        unsafe { core_atomic(op, p, v) }
    }
}

/// The atomics through `core` (relaxed): AMD (LLVM picks LDS or global from the pointer's
/// address space) and the CPU backend.
#[cfg(not(target_arch = "nvptx64"))]
#[inline(always)]
unsafe fn core_atomic(op: AtomicOp, p: *mut u32, v: u32) -> u32 {
    use core::sync::atomic::{AtomicU32, Ordering::Relaxed};
    // SAFETY: the callers' contracts (valid, aligned, only accessed atomically).
    let word = unsafe { AtomicU32::from_ptr(p) };
    match op {
        AtomicOp::Add => {
            word.fetch_add(v, Relaxed);
            1
        }
        AtomicOp::Min => {
            word.fetch_min(v, Relaxed);
            1
        }
        AtomicOp::CasIncrement => cas_increment(word.load(Relaxed), |old, new| {
            word.compare_exchange(old, new, Relaxed, Relaxed).unwrap_or_else(|seen| seen)
        }),
    }
}

/// The scope of a fence: which threads are guaranteed to see the writes before it first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum FenceScope {
    /// `fence.acq_rel.cta`: the block.
    Block = 0,
    /// `fence.acq_rel.cluster`: the thread-block cluster (sm_90).
    Cluster = 1,
    /// `fence.acq_rel.gpu`: the device.
    Device = 2,
    /// `fence.acq_rel.sys`: the system (host and peer devices).
    System = 3,
}

impl FenceScope {
    pub const ALL: [FenceScope; 4] = [FenceScope::Block, FenceScope::Cluster, FenceScope::Device, FenceScope::System];
    pub const fn from_u32(v: u32) -> Option<FenceScope> {
        match v {
            0 => Some(FenceScope::Block),
            1 => Some(FenceScope::Cluster),
            2 => Some(FenceScope::Device),
            3 => Some(FenceScope::System),
            _ => None,
        }
    }
}

/// A fence of `scope` (sequentially consistent on AMD and the CPU backend, which have no
/// scoped fence in `core`).
#[inline(always)]
pub fn fence(scope: FenceScope) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence has no operands.
    unsafe {
        match scope {
            FenceScope::Block => core::arch::asm!("fence.acq_rel.cta;", options(nostack)),
            #[cfg(target_feature = "sm_90")]
            FenceScope::Cluster => core::arch::asm!("fence.acq_rel.cluster;", options(nostack)),
            #[cfg(not(target_feature = "sm_90"))]
            FenceScope::Cluster => super::trap(),
            FenceScope::Device => core::arch::asm!("fence.acq_rel.gpu;", options(nostack)),
            FenceScope::System => core::arch::asm!("fence.acq_rel.sys;", options(nostack)),
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = scope;
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
    }
}

/// This block's rank in its thread-block cluster (`%cluster_ctarank`; 0 without clusters).
/// The CPU backend emulates clusters: the rank of its launch's cluster.
#[inline(always)]
pub fn cluster_rank() -> u32 {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    {
        let r: u32;
        // SAFETY: reads a special register.
        unsafe { core::arch::asm!("mov.u32 {}, %cluster_ctarank;", out(reg32) r, options(pure, nomem, nostack)) };
        r
    }
    #[cfg(not(gpu))]
    {
        super::host::cluster_rank()
    }
    #[cfg(all(gpu, not(all(target_arch = "nvptx64", target_feature = "sm_90"))))]
    {
        0
    }
}

/// Blocks in this block's cluster (`%cluster_nctarank`; 1 without clusters).
#[inline(always)]
pub fn cluster_size() -> u32 {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    {
        let r: u32;
        // SAFETY: reads a special register.
        unsafe { core::arch::asm!("mov.u32 {}, %cluster_nctarank;", out(reg32) r, options(pure, nomem, nostack)) };
        r
    }
    #[cfg(not(gpu))]
    {
        super::host::cluster_size()
    }
    #[cfg(all(gpu, not(all(target_arch = "nvptx64", target_feature = "sm_90"))))]
    {
        1
    }
}

/// Every thread of every block of the cluster arrives, then waits for all of them
/// (`barrier.cluster.arrive` + `.wait`; a block barrier without clusters). Orders the
/// cluster's shared-memory accesses like [`super::barrier`] orders a block's.
#[inline(always)]
#[cfg_attr(not(gpu), track_caller)]
pub fn cluster_barrier() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    // SAFETY: every thread of the cluster reaches it (the caller's contract, as for a barrier).
    unsafe {
        core::arch::asm!("barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;", options(nostack))
    }
    #[cfg(not(gpu))]
    super::host::cluster_barrier();
    #[cfg(all(gpu, not(all(target_arch = "nvptx64", target_feature = "sm_90"))))]
    super::barrier()
}

/// The address of the same element of block `rank`'s launch-sized region as `p` is of this
/// block's (`mapa.shared::cluster`): a distributed-shared-memory address for
/// [`cluster_load`]. Without clusters `rank` is this block (on the CPU backend, `rank` must
/// then be 0).
#[inline(always)]
pub fn cluster_map(p: *const u32, rank: u32) -> ClusterPtr {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    {
        let a = shared_window(p);
        let m: u32;
        // SAFETY: address arithmetic only.
        unsafe {
            core::arch::asm!("mapa.shared::cluster.u32 {m}, {a}, {r};",
                m = out(reg32) m, a = in(reg32) a, r = in(reg32) rank, options(pure, nomem, nostack))
        };
        ClusterPtr(m)
    }
    #[cfg(not(gpu))]
    {
        ClusterPtr(super::host::cluster_map(p.cast(), 4, rank).cast())
    }
    #[cfg(all(gpu, not(all(target_arch = "nvptx64", target_feature = "sm_90"))))]
    {
        let _ = rank;
        ClusterPtr(p)
    }
}

/// A word in some block of this cluster's shared memory ([`cluster_map`]).
#[derive(Clone, Copy)]
pub struct ClusterPtr(
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))] u32,
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90")))] *const u32,
);

impl ClusterPtr {
    /// The pointer `words` 32-bit words further.
    #[inline(always)]
    pub fn offset(self, words: u32) -> ClusterPtr {
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
        {
            ClusterPtr(self.0.wrapping_add(words * 4))
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90")))]
        {
            ClusterPtr(self.0.wrapping_add(words as usize))
        }
    }
}

/// One 32-bit load through a cluster address (`ld.shared::cluster.u32`).
///
/// # Safety
/// `p` maps an element of a carved array of a block of this cluster that has not exited
/// (keep blocks in the cluster until their peers are done: [`cluster_barrier`]).
#[inline(always)]
pub unsafe fn cluster_load(p: ClusterPtr) -> u32 {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    {
        let v: u32;
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!("ld.shared::cluster.u32 {v}, [{p}];", v = out(reg32) v, p = in(reg32) p.0, options(nostack))
        };
        v
    }
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90")))]
    unsafe {
        p.0.read_volatile()
    }
}

/// One 16-byte load through a cluster address (`ld.shared::cluster.v4.u32`), `p` 16-byte
/// aligned.
///
/// # Safety
/// As [`cluster_load`], for four words.
#[inline(always)]
pub unsafe fn cluster_load4(p: ClusterPtr) -> Vec4<u32> {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    {
        let (a, b, c, d): (u32, u32, u32, u32);
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!("ld.shared::cluster.v4.u32 {{{a}, {b}, {c}, {d}}}, [{p}];",
                a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d, p = in(reg32) p.0,
                options(nostack))
        };
        Vec4([a, b, c, d])
    }
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90")))]
    unsafe {
        p.0.cast::<Vec4<u32>>().read_volatile()
    }
}

/// Adds `v` to a word of some block of this cluster's shared memory, returning nothing
/// (`red.relaxed.cluster.shared::cluster.add.u32`): the atomics of a histogram whose bins
/// are split over a cluster.
///
/// # Safety
/// As [`cluster_load`]; every concurrent access to the word is atomic.
#[inline(always)]
pub unsafe fn cluster_red_add(p: ClusterPtr, v: u32) {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!("red.relaxed.cluster.shared::cluster.add.u32 [{p}], {v};",
            p = in(reg32) p.0, v = in(reg32) v, options(nostack))
    };
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90")))]
    {
        // SAFETY: the caller's contract: the word is in a live region and accessed atomically.
        unsafe { core::sync::atomic::AtomicU32::from_ptr(p.0 as *mut u32) }
            .fetch_add(v, core::sync::atomic::Ordering::Relaxed);
        #[cfg(not(gpu))]
        host::interleave();
    }
}
