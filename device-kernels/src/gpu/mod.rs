//! The only module that touches `core::arch::nvptx`, `core::arch::amdgpu` and the GPU
//! intrinsics. Kernels call `gpu::*`, so one kernel source serves both GPU targets and,
//! through [`host`], the CPU backend, which runs every thread of a workgroup on an OS
//! thread with a real barrier and checks what a GPU would let pass.
//!
//! Everything here is 1-D (`x`) because every kernel family launches 1-D blocks and
//! derives 2-D coordinates itself; add `y`/`z` when a family needs them.

#[cfg(not(gpu))]
use core::panic::Location;

use crate::layout::Slice;

#[cfg(not(gpu))]
pub mod host;
pub mod micro;
mod tensor_core;
pub use tensor_core::*;

/// The alignment the launch-sized region is requested with. `gpu_launch_sized_workgroup_mem`
/// aligns the base only to the alignment of the type it is asked with: 16 would do for
/// 16-byte vector access, but sm_90's tensor-map copies with the 128-byte swizzle (and the
/// `wgmma` descriptors that read their tiles) need 1024-byte aligned tiles, and one request
/// type serves every kernel (nvptx emits one symbol, at the largest alignment asked).
pub const REGION_ALIGN: u32 = 1024;

// ---------------------------------------------------------------------------------------
// NVIDIA (nvptx64)
// ---------------------------------------------------------------------------------------

#[cfg(target_arch = "nvptx64")]
mod arch {
    use core::arch::nvptx;

    #[inline(always)]
    pub fn thread_idx_x() -> u32 {
        // SAFETY: reading a special register has no side effects.
        unsafe { nvptx::_thread_idx_x() }
    }
    #[inline(always)]
    pub fn block_idx_x() -> u32 {
        unsafe { nvptx::_block_idx_x() }
    }
    #[inline(always)]
    pub fn block_dim_x() -> u32 {
        unsafe { nvptx::_block_dim_x() }
    }
    #[inline(always)]
    pub fn grid_dim_x() -> u32 {
        unsafe { nvptx::_grid_dim_x() }
    }
    /// `bar.sync 0`: orders shared-memory accesses among the block's threads.
    #[inline(always)]
    pub fn barrier() {
        unsafe { nvptx::_syncthreads() }
    }
    /// `red.shared.add.u32`: an atomic add in shared memory without a return value, at
    /// the SM (core's atomics would be `.sys`-scoped generic atomics).
    #[inline(always)]
    pub unsafe fn shared_atomic_add_u32(p: *mut u32, v: u32) {
        // SAFETY: `p` points into this block's shared memory (the caller's contract).
        unsafe {
            core::arch::asm!(
                "{{ .reg .u64 %sa; cvta.to.shared.u64 %sa, {p}; red.shared.add.u32 [%sa], {v}; }}",
                p = in(reg64) p,
                v = in(reg32) v,
                options(nostack)
            );
        }
    }
    /// `rsqrt.approx.f32`: about 1 ulp on sm_70+, one instruction.
    #[inline(always)]
    pub fn rsqrt(x: f32) -> f32 {
        let r: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            core::arch::asm!("rsqrt.approx.f32 {}, {};", out(reg32) r, in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    /// Bytes of launch-sized shared memory this launch was given (`%dynamic_smem_size`).
    #[inline(always)]
    pub fn dynamic_smem_size() -> u32 {
        let bytes: u32;
        // SAFETY: reads a special register.
        unsafe {
            core::arch::asm!("mov.u32 {}, %dynamic_smem_size;", out(reg32) bytes, options(pure, nomem, nostack));
        }
        bytes
    }
}

// ---------------------------------------------------------------------------------------
// AMD (amdgpu): ids from the hardware registers, dims from the HSA dispatch packet.
// ---------------------------------------------------------------------------------------

#[cfg(target_arch = "amdgpu")]
mod arch {
    use core::arch::amdgpu;
    use core::sync::atomic::{Ordering, fence};

    /// Byte offsets into the HSA kernel dispatch packet (`hsa_kernel_dispatch_packet_t`).
    const WORKGROUP_SIZE_X: usize = 4; // u16
    const GRID_SIZE_X: usize = 12; // u32, in work-items
    const GROUP_SEGMENT_SIZE: usize = 28; // u32, static + dynamic LDS bytes

    #[inline(always)]
    fn packet_u16(offset: usize) -> u16 {
        let p = core::intrinsics::gpu::amdgpu_dispatch_ptr() as *const u8;
        // SAFETY: the dispatch packet is valid for the whole kernel and the offset is in it.
        unsafe { p.add(offset).cast::<u16>().read() }
    }
    #[inline(always)]
    fn packet_u32(offset: usize) -> u32 {
        let p = core::intrinsics::gpu::amdgpu_dispatch_ptr() as *const u8;
        unsafe { p.add(offset).cast::<u32>().read() }
    }

    #[inline(always)]
    pub fn thread_idx_x() -> u32 {
        amdgpu::workitem_id_x()
    }
    #[inline(always)]
    pub fn block_idx_x() -> u32 {
        amdgpu::workgroup_id_x()
    }
    #[inline(always)]
    pub fn block_dim_x() -> u32 {
        packet_u16(WORKGROUP_SIZE_X) as u32
    }
    #[inline(always)]
    pub fn grid_dim_x() -> u32 {
        packet_u32(GRID_SIZE_X).div_ceil(block_dim_x())
    }
    /// `s_barrier` does not order memory by itself; HIP's `__syncthreads` brackets it
    /// with workgroup-scope fences. Rust has no scoped fence, so these are system-scope:
    /// correct, and conservative.
    #[inline(always)]
    pub fn barrier() {
        fence(Ordering::Release);
        amdgpu::s_barrier();
        fence(Ordering::Acquire);
    }
    #[inline(always)]
    pub fn dynamic_smem_size() -> u32 {
        packet_u32(GROUP_SEGMENT_SIZE) - amdgpu::groupstaticsize()
    }
    /// An LDS atomic (`ds_add_u32` once LLVM infers the address space of the pointer).
    #[inline(always)]
    pub unsafe fn shared_atomic_add_u32(p: *mut u32, v: u32) {
        // SAFETY: `p` is a valid, 4-aligned pointer into LDS (the caller's contract).
        unsafe { core::sync::atomic::AtomicU32::from_ptr(p) }.fetch_add(v, Ordering::Relaxed);
    }
    #[inline(always)]
    pub fn rsqrt(x: f32) -> f32 {
        1.0 / core::intrinsics::sqrt(x)
    }
}

/// Math both GPU targets lower the same way (LLVM intrinsics).
#[cfg(gpu)]
mod math {
    #[inline(always)]
    pub fn exp2(x: f32) -> f32 {
        core::intrinsics::exp2(x)
    }
    /// NVPTX's LLVM lowers no `llvm.log2.f32`: `lg2.approx` by hand there.
    #[inline(always)]
    pub fn log2(x: f32) -> f32 {
        #[cfg(target_arch = "nvptx64")]
        {
            let r: f32;
            // SAFETY: pure arithmetic.
            unsafe {
                core::arch::asm!("lg2.approx.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
            };
            r
        }
        #[cfg(not(target_arch = "nvptx64"))]
        core::intrinsics::log2(x)
    }
    #[inline(always)]
    pub fn sqrt(x: f32) -> f32 {
        core::intrinsics::sqrt(x)
    }
    #[inline(always)]
    pub fn fma(a: f32, b: f32, c: f32) -> f32 {
        core::intrinsics::fma(a, b, c)
    }
}

#[cfg(not(gpu))]
use host as math;

#[cfg(gpu)]
#[repr(C, align(1024))]
struct RegionAlign([u8; 1024]);

#[cfg(gpu)]
#[inline(always)]
fn region_base() -> *mut u8 {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<RegionAlign>().cast()
}

#[cfg(not(gpu))]
use host as arch;

#[cfg(not(gpu))]
#[inline(always)]
fn region_base() -> *mut u8 {
    host::region_base()
}

/// This thread's index in its block.
#[inline(always)]
pub fn thread_idx_x() -> u32 {
    arch::thread_idx_x()
}
/// This block's index in the grid.
#[inline(always)]
pub fn block_idx_x() -> u32 {
    arch::block_idx_x()
}
/// Threads per block.
#[inline(always)]
pub fn block_dim_x() -> u32 {
    arch::block_dim_x()
}
/// Blocks in the grid.
#[inline(always)]
pub fn grid_dim_x() -> u32 {
    arch::grid_dim_x()
}
/// Threads that execute in lockstep: 32 on NVIDIA, the wavefront size on AMD (64 on CDNA
/// such as gfx90a/gfx942, 32 on RDNA such as gfx1100), 32 on the CPU backend. Kernels that
/// do warp-level work must ask, never assume 32.
#[inline(always)]
pub fn wave_size() -> u32 {
    #[cfg(target_arch = "amdgpu")]
    {
        core::arch::amdgpu::wavefrontsize()
    }
    #[cfg(not(target_arch = "amdgpu"))]
    {
        32
    }
}

/// Bytes of launch-sized workgroup memory this launch was given.
#[inline(always)]
pub fn dynamic_smem_size() -> u32 {
    arch::dynamic_smem_size()
}

/// 2^x (the hardware's approximation on GPUs: `ex2.approx.f32`, `v_exp_f32`).
#[inline(always)]
pub fn exp2(x: f32) -> f32 {
    math::exp2(x)
}

/// 2^x with results under f32's normal range flushed to zero: one instruction on NVIDIA
/// (`ex2.approx.ftz.f32`; [`exp2`] adds a scaling either side for subnormal inputs and
/// results). For weights that are summed with and rounded beside values near 1 (softmax), where
/// what is flushed (under 2^-126) is far below the rounding. Elsewhere [`exp2`].
#[inline(always)]
pub fn exp2_ftz(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            core::arch::asm!("ex2.approx.ftz.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    math::exp2(x)
}

/// log2(x) (the hardware's approximation on GPUs: `lg2.approx.f32`, `v_log_f32`).
#[inline(always)]
pub fn log2(x: f32) -> f32 {
    math::log2(x)
}

/// e^x through [`exp2`].
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    math::exp2(x * core::f32::consts::LOG2_E)
}

#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    math::sqrt(x)
}

/// `a * b + c` with one rounding (`fma.rn.f32`, `v_fma_f32`).
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    math::fma(a, b, c)
}

/// 1/sqrt(x) (approximate on NVIDIA: `rsqrt.approx.f32`).
#[inline(always)]
pub fn rsqrt(x: f32) -> f32 {
    arch::rsqrt(x)
}

/// Reads the `T` at `p` in device (global) memory. Kernels read device memory only through
/// this, the atomics and the async copies below, so that the CPU backend checks every
/// access against the launch's buffers and faults on one outside them
/// ([`host::FaultKind::GlobalOverrun`]); on a GPU it is a plain load.
///
/// # Safety
/// `p` is valid, aligned device memory for a `T` that no other thread writes meanwhile.
#[inline(always)]
#[cfg_attr(not(gpu), track_caller)]
pub unsafe fn read_global<T: Copy>(p: *const T) -> T {
    #[cfg(not(gpu))]
    host::check_global(p.cast(), size_of::<T>() as u32, align_of::<T>() as u32, false);
    unsafe { p.read() }
}

/// Writes `v` to the `T` at `p` in device (global) memory: the store [`read_global`] is the
/// load of (checked on the CPU backend, a plain store on a GPU).
///
/// # Safety
/// `p` is valid, aligned device memory for a `T` that no other thread reads or writes
/// meanwhile.
#[inline(always)]
#[cfg_attr(not(gpu), track_caller)]
pub unsafe fn write_global<T: Copy>(p: *mut T, v: T) {
    #[cfg(not(gpu))]
    host::check_global(p.cast_const().cast(), size_of::<T>() as u32, align_of::<T>() as u32, true);
    unsafe { p.write(v) }
}

/// Reads the `T` at `p` in this workgroup's launch-sized region, for the register-tile loops
/// that walk a [`SharedArray::range_ptr`] by constant offsets (every other access goes
/// through [`SharedArray`]). Checked against the region on the CPU backend; a plain load on
/// a GPU.
///
/// # Safety
/// `p` is inside a range [`SharedArray::range_ptr`] returned, aligned for `T`, and no other
/// thread writes it meanwhile.
#[inline(always)]
#[cfg_attr(not(gpu), track_caller)]
pub unsafe fn read_shared<T: Copy>(p: *const T) -> T {
    #[cfg(not(gpu))]
    host::check_shared(p.cast(), size_of::<T>() as u32);
    unsafe { p.read() }
}

/// Atomically adds `v` to the `u32` at `p` in device (global) memory; returns the old value.
///
/// # Safety
/// `p` is valid, 4-aligned device memory that every accessor touches atomically.
#[inline(always)]
#[cfg_attr(not(gpu), track_caller)]
pub unsafe fn atomic_add_global_u32(p: *mut u32, v: u32) -> u32 {
    #[cfg(not(gpu))]
    host::check_global(p.cast_const().cast(), 4, 4, true);
    #[cfg(not(gpu))]
    host::interleave();
    unsafe { core::sync::atomic::AtomicU32::from_ptr(p) }.fetch_add(v, core::sync::atomic::Ordering::Relaxed)
}

/// Atomically adds `v` to the `f32` at `p` in device (global) memory, returning nothing
/// (`red.add.f32` on NVIDIA; a compare-and-swap loop elsewhere). The order in which adds
/// from different blocks land is not fixed, so the sum's rounding is not either.
///
/// # Safety
/// As [`atomic_add_global_u32`].
#[inline(always)]
#[cfg_attr(not(gpu), track_caller)]
pub unsafe fn atomic_add_global_f32(p: *mut f32, v: f32) {
    #[cfg(not(gpu))]
    host::check_global(p.cast_const().cast(), 4, 4, true);
    #[cfg(target_arch = "nvptx64")]
    unsafe {
        core::arch::asm!("red.add.f32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v, options(nostack));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        #[cfg(not(gpu))]
        host::interleave();
        let word = unsafe { core::sync::atomic::AtomicU32::from_ptr(p.cast()) };
        let mut old = word.load(core::sync::atomic::Ordering::Relaxed);
        loop {
            let new = (f32::from_bits(old) + v).to_bits();
            match word.compare_exchange_weak(
                old,
                new,
                core::sync::atomic::Ordering::Relaxed,
                core::sync::atomic::Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(seen) => old = seen,
            }
        }
    }
}

/// Loads a `u64` in device memory with acquire ordering (for flags other blocks publish).
///
/// # Safety
/// As [`atomic_add_global_u32`], 8-aligned.
#[inline(always)]
#[cfg_attr(not(gpu), track_caller)]
pub unsafe fn load_acquire_u64(p: *const u64) -> u64 {
    #[cfg(not(gpu))]
    host::check_global(p.cast(), 8, 8, false);
    #[cfg(not(gpu))]
    host::interleave();
    unsafe { core::sync::atomic::AtomicU64::from_ptr(p.cast_mut()) }.load(core::sync::atomic::Ordering::Acquire)
}

/// Stores a `u64` in device memory with release ordering (publishing to other blocks).
///
/// # Safety
/// As [`load_acquire_u64`].
#[inline(always)]
#[cfg_attr(not(gpu), track_caller)]
pub unsafe fn store_release_u64(p: *mut u64, v: u64) {
    #[cfg(not(gpu))]
    host::check_global(p.cast_const().cast(), 8, 8, true);
    unsafe { core::sync::atomic::AtomicU64::from_ptr(p) }.store(v, core::sync::atomic::Ordering::Release);
    #[cfg(not(gpu))]
    host::interleave();
}

/// Starts copying 16 bytes from device memory at `src` to workgroup memory at `dst`
/// without passing through registers: `cp.async.cg` on sm_80 and later (a thread can have
/// a whole tile in flight at no register cost), a plain load and store elsewhere. The data
/// is there once this thread calls [`copy_async_wait`]; other threads see it after a
/// [`barrier`] that follows the wait.
///
/// # Safety
/// `src` is 16-byte aligned device memory, `dst` 16-byte aligned workgroup memory, and
/// nothing reads or writes `dst` until the wait.
#[inline(always)]
unsafe fn copy_async_16(dst: *mut u8, src: *const u8) {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 d; cvta.to.shared.u64 d, {dst}; cp.async.cg.shared.global [d], [{src}], 16; }}",
            dst = in(reg64) dst,
            src = in(reg64) src,
            options(nostack)
        );
    }
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
    unsafe {
        dst.cast::<[u32; 4]>().write(src.cast::<[u32; 4]>().read())
    };
}

/// [`copy_async_16`] for 4 bytes (`cp.async.ca`: `.cg` takes only 16).
///
/// # Safety
/// `src` is 4-byte aligned device memory, `dst` 4-byte aligned workgroup memory, and
/// nothing reads or writes `dst` until the wait.
#[inline(always)]
unsafe fn copy_async_4(dst: *mut u8, src: *const u8) {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 d; cvta.to.shared.u64 d, {dst}; cp.async.ca.shared.global [d], [{src}], 4; }}",
            dst = in(reg64) dst,
            src = in(reg64) src,
            options(nostack)
        );
    }
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
    unsafe {
        dst.cast::<u32>().write(src.cast::<u32>().read())
    };
}

/// An element of a [`SharedArray`] as the hardware addresses workgroup memory, for copy
/// loops that step through a tile by constant offsets: on NVIDIA (sm_80 and later) a
/// 32-bit address in the shared window, so that a step is one 32-bit add that ptxas folds
/// into the copy's immediate offset (a generic 64-bit pointer costs a conversion and a
/// 64-bit multiply-add per copy); elsewhere the array and an index, checked per access
/// on the CPU backend like every [`SharedArray`] access. Its copies ask L2 for the whole
/// 128-byte line (`.L2::128B`, as cuBLAS's FFMA kernel's do): a GEMM's gather takes 32
/// bytes of a row per k-tile and the next tiles the rest of the line.
#[derive(Clone, Copy)]
pub struct SharedPtr<T> {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
    addr: u32,
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
    _elem: core::marker::PhantomData<*mut T>,
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
    array: SharedArray<T>,
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
    index: u32,
}

impl<T: Copy> SharedPtr<T> {
    /// `n` elements further on.
    #[inline(always)]
    pub fn wrapping_add(self, n: u32) -> Self {
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
        {
            SharedPtr {
                addr: self.addr.wrapping_add(n.wrapping_mul(size_of::<T>() as u32)),
                _elem: core::marker::PhantomData,
            }
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
        {
            SharedPtr { array: self.array, index: self.index.wrapping_add(n) }
        }
    }
    /// [`SharedArray::copy_async_word`] into this element.
    ///
    /// # Safety
    /// As for [`SharedArray::copy_async_word`]: the element is inside the array.
    #[inline(always)]
    #[cfg_attr(not(gpu), track_caller)]
    pub unsafe fn copy_async_word(self, src: *const T) {
        const { assert!(size_of::<T>() == 4 && align_of::<T>() >= 4) };
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
        unsafe {
            core::arch::asm!(
                "cp.async.ca.shared.global.L2::128B [{dst}], [{src}], 4;",
                dst = in(reg32) self.addr,
                src = in(reg64) src,
                options(nostack)
            );
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
        unsafe {
            self.array.copy_async_word(self.index, src)
        }
    }
    /// [`SharedArray::copy_async`] into this element.
    ///
    /// # Safety
    /// As for [`SharedArray::copy_async`]: the element is inside the array.
    #[inline(always)]
    #[cfg_attr(not(gpu), track_caller)]
    pub unsafe fn copy_async(self, src: *const T) {
        const { assert!(size_of::<T>() == 16 && align_of::<T>() >= 16) };
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
        unsafe {
            core::arch::asm!(
                "cp.async.cg.shared.global.L2::128B [{dst}], [{src}], 16;",
                dst = in(reg32) self.addr,
                src = in(reg64) src,
                options(nostack)
            );
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
        unsafe {
            self.array.copy_async(self.index, src)
        }
    }
    /// [`copy_async_word`](Self::copy_async_word) where `valid`, else zeros into this
    /// element (`cp.async` with a source size of 0: nothing is read): a predicated copy for
    /// tiles at a matrix's edge.
    ///
    /// # Safety
    /// As for [`copy_async_word`](Self::copy_async_word); `src` is a valid address even
    /// where `valid` is false (it is not read, but the instruction takes it).
    #[inline(always)]
    #[cfg_attr(not(gpu), track_caller)]
    pub unsafe fn copy_async_word_if(self, src: *const T, valid: bool) {
        const { assert!(size_of::<T>() == 4 && align_of::<T>() >= 4) };
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
        unsafe {
            core::arch::asm!(
                "cp.async.ca.shared.global.L2::128B [{dst}], [{src}], 4, {size};",
                dst = in(reg32) self.addr,
                src = in(reg64) src,
                size = in(reg32) if valid { 4u32 } else { 0 },
                options(nostack)
            );
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
        unsafe {
            if valid {
                self.array.copy_async_word(self.index, src)
            } else {
                self.array.write(self.index, core::mem::zeroed())
            }
        }
    }
    /// [`copy_async`](Self::copy_async) where `valid`, else zeros into this element (see
    /// [`copy_async_word_if`](Self::copy_async_word_if)).
    ///
    /// # Safety
    /// As for [`copy_async_word_if`](Self::copy_async_word_if), 16-byte elements.
    #[inline(always)]
    #[cfg_attr(not(gpu), track_caller)]
    pub unsafe fn copy_async_if(self, src: *const T, valid: bool) {
        const { assert!(size_of::<T>() == 16 && align_of::<T>() >= 16) };
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
        unsafe {
            core::arch::asm!(
                "cp.async.cg.shared.global.L2::128B [{dst}], [{src}], 16, {size};",
                dst = in(reg32) self.addr,
                src = in(reg64) src,
                size = in(reg32) if valid { 16u32 } else { 0 },
                options(nostack)
            );
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
        unsafe {
            if valid {
                self.array.copy_async(self.index, src)
            } else {
                self.array.write(self.index, core::mem::zeroed())
            }
        }
    }
}

impl<T: Copy> SharedPtr<T> {
    /// Starts copying the 2-D box at element coordinates `(x, y)` (`x` the contiguous
    /// dimension) of the tensor that `map` describes into this element and the ones after
    /// it, row after row (`cp.async.bulk.tensor.2d`, sm_90's tensor memory accelerator: one
    /// instruction from one thread moves the whole tile, and elements outside the tensor
    /// arrive as zeros), reporting its bytes (always the whole box) to `bar`. `map` is a
    /// CUDA tensor map (`CUtensorMap`, 128 bytes) in device memory. Only on sm_90: a trap
    /// elsewhere.
    ///
    /// # Safety
    /// `map` is a valid tensor map of this element type; this element is 128-byte aligned
    /// and the box inside the array; nothing touches the box until `bar`'s phase completes.
    #[inline(always)]
    pub unsafe fn copy_tile_2d(self, map: *const u8, x: i32, y: i32, bar: SharedPtr<u64>) {
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
        unsafe {
            core::arch::asm!(
                "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{dst}], [{map}, {{{x}, {y}}}], [{bar}];",
                dst = in(reg32) self.addr,
                map = in(reg64) map,
                x = in(reg32) x,
                y = in(reg32) y,
                bar = in(reg32) bar.addr,
                options(nostack)
            );
        }
        #[cfg(all(gpu, not(all(target_arch = "nvptx64", target_feature = "sm_90"))))]
        {
            let _ = (map, x, y, bar);
            trap();
        }
        // The CPU backend: the box copied at once (the barrier has nothing to wait for),
        // element by element into the array, each write checked against it.
        #[cfg(not(gpu))]
        {
            let _ = bar;
            let tm = host::tensor_map(map);
            let (bx, by) = (tm.box_dims[0] as usize, tm.box_dims[1] as usize);
            let first = self.index as usize * size_of::<T>();
            let e = tm.elem_bytes as usize;
            for r in 0..by {
                for c in 0..bx {
                    let src = tm.element(x as i64 + c as i64, y as i64 + r as i64);
                    let at = (first + (r * bx + c) * e) as u32;
                    // SAFETY: `element` is inside the tensor, which the map's maker checked
                    // is inside its buffer; the array is element-aligned (carved for T).
                    unsafe {
                        match e {
                            4 => self
                                .array
                                .cast::<u32>()
                                .write(at / 4, src.map_or(0, |p| p.cast::<u32>().read_unaligned())),
                            2 => self
                                .array
                                .cast::<u16>()
                                .write(at / 2, src.map_or(0, |p| p.cast::<u16>().read_unaligned())),
                            _ => host::fault(host::FaultKind::Panic(
                                "CPU tensor maps of 4- or 2-byte elements only".into(),
                            )),
                        }
                    }
                }
            }
        }
    }
    /// The 32-bit shared-window address (sm_80 and later), e.g. to check an alignment; 0
    /// elsewhere.
    #[inline(always)]
    pub fn shared_addr(self) -> u32 {
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
        {
            self.addr
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
        {
            0
        }
    }
}

impl SharedPtr<u64> {
    /// Initialises the transaction barrier (`mbarrier`, sm_90) at this element to wait for
    /// `arrivals` arrivals per phase; the block must pass a [`mbar_init_fence`] and a
    /// [`barrier`] before anyone else uses it. A no-op elsewhere.
    ///
    /// # Safety
    /// One thread, before any other use of the element.
    #[inline(always)]
    pub unsafe fn mbar_init(self, arrivals: u32) {
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
        unsafe {
            core::arch::asm!("mbarrier.init.shared::cta.b64 [{b}], {n};", b = in(reg32) self.addr, n = in(reg32) arrivals, options(nostack));
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90")))]
        let _ = arrivals;
    }
    /// Arrives on the barrier and adds `bytes` to the bytes its current phase waits for
    /// (the bulk copies that complete it).
    ///
    /// # Safety
    /// An initialised barrier; one arrival per phase per counted arrival.
    #[inline(always)]
    pub unsafe fn mbar_arrive_expect_tx(self, bytes: u32) {
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
        unsafe {
            core::arch::asm!(
                "{{ .reg .b64 s; mbarrier.arrive.expect_tx.shared::cta.b64 s, [{b}], {n}; }}",
                b = in(reg32) self.addr,
                n = in(reg32) bytes,
                options(nostack)
            );
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90")))]
        let _ = bytes;
    }
    /// Waits until the barrier's phase of parity `parity` (0 or 1) has completed: its
    /// arrivals made and its bytes landed, visible to this thread.
    ///
    /// # Safety
    /// An initialised barrier.
    #[inline(always)]
    pub unsafe fn mbar_wait(self, parity: u32) {
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
        loop {
            let done: u32;
            unsafe {
                core::arch::asm!(
                    "{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {q}; selp.u32 {d}, 1, 0, p; }}",
                    b = in(reg32) self.addr,
                    q = in(reg32) parity,
                    d = out(reg32) done,
                    options(nostack)
                );
            }
            if done != 0 {
                break;
            }
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90")))]
        let _ = parity;
    }
}

/// Makes [`SharedPtr::mbar_init`] visible to the copy engine (`fence.mbarrier_init`);
/// follow it with a [`barrier`].
#[inline(always)]
pub fn mbar_init_fence() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    unsafe {
        core::arch::asm!("fence.mbarrier_init.release.cluster;", options(nostack))
    };
}

/// Closes this thread's current group of [`SharedArray::copy_async`] copies
/// (`cp.async.commit_group`), so that [`copy_async_wait_pending`] can wait for it.
#[inline(always)]
pub fn copy_async_commit() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
    unsafe {
        core::arch::asm!("cp.async.commit_group;", options(nostack))
    };
}

/// Waits until at most `pending` of this thread's committed copy groups are still in
/// flight (`cp.async.wait_group`, whose count must be an immediate: 0 to 3 here, and a
/// larger count waits for all).
#[inline(always)]
pub fn copy_async_wait_pending(pending: u32) {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
    unsafe {
        match pending {
            1 => core::arch::asm!("cp.async.wait_group 1;", options(nostack)),
            2 => core::arch::asm!("cp.async.wait_group 2;", options(nostack)),
            3 => core::arch::asm!("cp.async.wait_group 3;", options(nostack)),
            _ => core::arch::asm!("cp.async.wait_group 0;", options(nostack)),
        }
    };
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
    let _ = pending;
}

/// Waits for this thread's [`SharedArray::copy_async`] copies (`cp.async.wait_all`).
#[inline(always)]
pub fn copy_async_wait() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
    unsafe {
        core::arch::asm!("cp.async.wait_all;", options(nostack))
    };
}

/// Waits until every thread of the block arrives, and orders workgroup-memory accesses
/// across it. Every thread must reach the same barrier: on the CPU backend a barrier only
/// part of the block reaches is reported with its source location instead of hanging.
#[inline(always)]
#[cfg_attr(not(gpu), track_caller)]
pub fn barrier() {
    arch::barrier()
}

/// Stops the kernel: on a GPU the launch fails with an error the host sees
/// (`CUDA_ERROR_ILLEGAL_INSTRUCTION` on NVIDIA) instead of running on or hanging; on the
/// CPU backend it is reported with the workgroup, thread and source location.
#[inline(always)]
#[cfg_attr(not(gpu), track_caller)]
pub fn trap() -> ! {
    #[cfg(gpu)]
    {
        core::intrinsics::abort_immediate()
    }
    #[cfg(not(gpu))]
    {
        host::fault(host::FaultKind::Trap { at: Location::caller() })
    }
}

/// The launch-sized region of this launch, after checking that it holds `required` bytes.
///
/// Fails (traps) when the launch gave less than the kernel's carve needs, so a host that
/// computed `shared_mem_bytes` wrongly gets a failed launch, never a silent overrun.
#[inline(always)]
#[cfg_attr(not(gpu), track_caller)]
pub fn launch_region(required: u32) -> Region {
    let bytes = dynamic_smem_size();
    if required > bytes {
        #[cfg(gpu)]
        trap();
        #[cfg(not(gpu))]
        host::fault(host::FaultKind::CarveTooLarge { required, launched: bytes, at: Location::caller() });
    }
    Region { base: region_base(), bytes }
}

/// The base of the launch-sized region, checked to be large enough for a carve.
#[derive(Clone, Copy)]
pub struct Region {
    base: *mut u8,
    bytes: u32,
}

impl Region {
    /// The sub-array `slice` of the region.
    #[inline(always)]
    pub fn array<T: Copy>(self, slice: Slice<T>) -> SharedArray<T> {
        SharedArray {
            // The carve was checked against the launch size by `launch_region`, and every
            // access is checked against `len` on the CPU backend (and on GPUs with the
            // `checked` feature); `wrapping_add` keeps a wrong slice from being UB here.
            ptr: self.base.wrapping_add(slice.offset() as usize).cast(),
            len: slice.len(),
            offset: slice.offset(),
            region_bytes: self.bytes,
        }
    }
}

/// A typed array in workgroup memory, shared by every thread of the block.
///
/// Accesses are raw (no `&mut`), because many threads touch it at once; ordering between
/// threads is the caller's job ([`barrier`]). On the CPU backend every index is checked
/// and an overrun is reported with the byte offset and the region's size; on GPUs only
/// with the `checked` feature (an overrun traps).
#[derive(Clone, Copy)]
pub struct SharedArray<T> {
    ptr: *mut T,
    len: u32,
    /// Byte offset of element 0 in the region, and the region's size (for reports).
    offset: u32,
    region_bytes: u32,
}

impl SharedArray<u32> {
    /// Atomically adds `v` to element `i`: a shared-memory (LDS) atomic on GPUs.
    ///
    /// # Safety
    /// `i < len`; every concurrent access to element `i` is atomic.
    #[inline(always)]
    #[cfg_attr(not(gpu), track_caller)]
    pub unsafe fn atomic_add(self, i: u32, v: u32) {
        self.check(i);
        unsafe { arch::shared_atomic_add_u32(self.ptr.add(i as usize), v) }
    }
}

impl<T: Copy> SharedArray<T> {
    #[inline(always)]
    pub fn len(self) -> u32 {
        self.len
    }
    #[inline(always)]
    pub fn is_empty(self) -> bool {
        self.len == 0
    }
    #[inline(always)]
    #[cfg_attr(not(gpu), track_caller)]
    fn check(self, i: u32) {
        #[cfg(gpu)]
        if cfg!(feature = "checked") && i >= self.len {
            trap();
        }
        #[cfg(not(gpu))]
        if i >= self.len {
            host::fault(host::FaultKind::RegionOverrun {
                offset: self.offset as u64 + i as u64 * size_of::<T>() as u64,
                access_bytes: size_of::<T>() as u32,
                region_bytes: self.region_bytes,
                index: i,
                len: self.len,
                at: Location::caller(),
            });
        }
    }
    /// # Safety
    /// `i < len`, and no other thread writes element `i` without a barrier in between.
    #[inline(always)]
    #[cfg_attr(not(gpu), track_caller)]
    pub unsafe fn read(self, i: u32) -> T {
        self.check(i);
        unsafe { self.ptr.add(i as usize).read() }
    }
    /// # Safety
    /// `i < len`, and no other thread accesses element `i` without a barrier in between.
    #[inline(always)]
    #[cfg_attr(not(gpu), track_caller)]
    pub unsafe fn write(self, i: u32, value: T) {
        self.check(i);
        unsafe { self.ptr.add(i as usize).write(value) }
    }
    /// Starts copying element `i` from device memory at `src` (16-byte elements only);
    /// see [`copy_async_wait`].
    ///
    /// # Safety
    /// `i < len`; `src` is valid, 16-byte aligned device memory; nothing touches element
    /// `i` until this thread's [`copy_async_wait`] and a barrier after it.
    #[inline(always)]
    #[cfg_attr(not(gpu), track_caller)]
    pub unsafe fn copy_async(self, i: u32, src: *const T) {
        const { assert!(size_of::<T>() == 16 && align_of::<T>() >= 16) };
        self.check(i);
        #[cfg(not(gpu))]
        host::check_global(src.cast(), 16, 16, false);
        unsafe { copy_async_16(self.ptr.add(i as usize).cast(), src.cast()) }
    }
    /// Starts copying one 4-byte element `i` from device memory at `src` (`cp.async.ca`,
    /// through L1: for gathers whose neighbours in the same sector are copied by other
    /// threads of the block); see [`copy_async_wait`].
    ///
    /// # Safety
    /// As for [`SharedArray::copy_async`], with `src` 4-byte aligned.
    #[inline(always)]
    #[cfg_attr(not(gpu), track_caller)]
    pub unsafe fn copy_async_word(self, i: u32, src: *const T) {
        const { assert!(size_of::<T>() == 4 && align_of::<T>() >= 4) };
        self.check(i);
        #[cfg(not(gpu))]
        host::check_global(src.cast(), 4, 4, false);
        unsafe { copy_async_4(self.ptr.add(i as usize).cast(), src.cast()) }
    }
    /// Element `start` as a [`SharedPtr`], after checking (as [`SharedArray::range_ptr`]
    /// does) that `start .. start + count` is inside the array.
    ///
    /// # Safety
    /// As for [`SharedArray::range_ptr`].
    #[inline(always)]
    #[cfg_attr(not(gpu), track_caller)]
    pub unsafe fn shared_ptr(self, start: u32, count: u32) -> SharedPtr<T> {
        if count > 0 {
            self.check(start.saturating_add(count - 1));
        }
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
        {
            let addr: u32;
            unsafe {
                core::arch::asm!(
                    "{{ .reg .u64 t; cvta.to.shared.u64 t, {p}; cvt.u32.u64 {a}, t; }}",
                    p = in(reg64) self.ptr.wrapping_add(start as usize),
                    a = out(reg32) addr,
                    options(pure, nomem, nostack)
                );
            }
            SharedPtr { addr, _elem: core::marker::PhantomData }
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
        {
            SharedPtr { array: self, index: start }
        }
    }
    /// A raw pointer to element `start`, after checking (on the CPU backend, and on GPUs
    /// with the `checked` feature) that `start .. start + count` is inside the array: for
    /// inner loops that walk a known range by pointer increments instead of recomputing an
    /// index per access.
    ///
    /// # Safety
    /// The caller reads or writes only `start .. start + count` through it, and orders the
    /// accesses with other threads as for [`SharedArray::read`].
    #[inline(always)]
    #[cfg_attr(not(gpu), track_caller)]
    pub unsafe fn range_ptr(self, start: u32, count: u32) -> *mut T {
        if count > 0 {
            self.check(start.saturating_add(count - 1));
        }
        self.ptr.wrapping_add(start as usize)
    }
    /// Elements `start .. start + len` as an array of their own (a block's share of a
    /// carved array), checked as an access to its last element.
    #[inline(always)]
    #[cfg_attr(not(gpu), track_caller)]
    pub fn window(self, start: u32, len: u32) -> SharedArray<T> {
        if len > 0 {
            self.check(start.saturating_add(len - 1));
        }
        SharedArray {
            ptr: self.ptr.wrapping_add(start as usize),
            len,
            offset: self.offset.wrapping_add(start.wrapping_mul(size_of::<T>() as u32)),
            region_bytes: self.region_bytes,
        }
    }
    /// The same memory seen as an array of `U` (e.g. 16-byte vectors for wide copies).
    ///
    /// # Safety
    /// The array's offset must be aligned for `U` (carve it with that alignment).
    #[inline(always)]
    pub unsafe fn cast<U: Copy>(self) -> SharedArray<U> {
        SharedArray {
            ptr: self.ptr.cast(),
            len: ((self.len as usize * size_of::<T>()) / size_of::<U>()) as u32,
            offset: self.offset,
            region_bytes: self.region_bytes,
        }
    }
}
