//! 16-byte vectors: four 4-byte elements moved by one load or store (`ld.global.v4`,
//! `ld.shared.v4`), a quarter of the instructions of scalar copies. Bandwidth-bound kernels
//! run out of issue slots long before they run out of bandwidth when every element costs
//! its own load, store and address arithmetic.

use crate::gpu;

/// Four elements, 16-byte aligned so that the compiler emits one vector access.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Vec4<T>(pub [T; 4]);

/// Two elements, 8-byte aligned (one `ld.global.v2` of 4-byte elements).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Vec2<T>(pub [T; 2]);

impl<T: Copy> Vec4<T> {
    #[inline(always)]
    pub const fn splat(v: T) -> Vec4<T> {
        Vec4([v; 4])
    }
}

/// Whether `p` may be read and written as [`Vec4`]s (host buffers need not be; device
/// allocations are).
#[inline(always)]
pub fn is_aligned16<T>(p: *const T) -> bool {
    (p as usize).is_multiple_of(16)
}

/// Elements `start .. start + 4` of the `len` elements at `src`, `zero` for those outside
/// `0..len`. One vector load when all four are inside, `start` is a multiple of 4 and
/// `aligned` says `src` is 16-byte aligned; element by element otherwise.
///
/// # Contract
/// `src` holds `len` elements.
#[inline(always)]
pub fn load4<T: Copy>(src: *const T, start: i64, len: u64, zero: T, aligned: bool) -> Vec4<T> {
    if aligned && start >= 0 && (start as u64).is_multiple_of(4) && start as u64 + 4 <= len {
        unsafe { gpu::read_global(src.add(start as usize).cast::<Vec4<T>>()) }
    } else {
        let mut v = Vec4::splat(zero);
        for (lane, x) in v.0.iter_mut().enumerate() {
            let g = start + lane as i64;
            if g >= 0 && (g as u64) < len {
                *x = unsafe { gpu::read_global(src.add(g as usize)) };
            }
        }
        v
    }
}

/// Stores the lanes of `v` that fall inside `0..len` at `dst + start ..`: one vector
/// store when all four do and the address is 16-byte aligned (see [`load4`]).
///
/// # Contract
/// `dst` holds `len` elements.
#[inline(always)]
pub fn store4<T: Copy>(dst: *mut T, start: u64, len: u64, v: Vec4<T>, aligned: bool) {
    if aligned && start.is_multiple_of(4) && start + 4 <= len {
        unsafe { gpu::write_global(dst.add(start as usize).cast::<Vec4<T>>(), v) }
    } else {
        for (lane, x) in v.0.iter().enumerate() {
            let g = start + lane as u64;
            if g < len {
                unsafe { gpu::write_global(dst.add(g as usize), *x) };
            }
        }
    }
}
