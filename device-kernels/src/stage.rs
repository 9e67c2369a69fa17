//! Copying from device memory into a shared tile with several loads in flight per thread.
//!
//! A loop that loads one element and stores it to shared memory in the same iteration
//! waits a full memory round trip per element: the store needs the loaded value. Issuing
//! [`BATCH`] loads before their stores overlaps their round trips; with thousands of
//! threads per multiprocessor that is the difference between latency-bound and
//! bandwidth-bound staging.

use crate::gpu::SharedArray;

/// Loads in flight per thread.
pub const BATCH: u32 = 4;

/// Thread `tid` of `block` threads stores `load(i)` at `index(i)` of `dst`, for
/// `i = tid, tid + block, ... < count`, [`BATCH`] loads at a time.
///
/// # Contract
/// Every `index(i)` is inside `dst`, every `load(i)` is a valid read, and no other thread
/// touches those elements of `dst` until the next barrier.
#[inline(always)]
pub fn stage<T: Copy>(
    dst: SharedArray<T>,
    count: u32,
    tid: u32,
    block: u32,
    index: impl Fn(u32) -> u32,
    load: impl Fn(u32) -> T,
) {
    let mut i = tid;
    // `i + 3 * block < count` without overflow.
    while count > i && count - i > (BATCH - 1) * block {
        let (a, b, c, d) = (load(i), load(i + block), load(i + 2 * block), load(i + 3 * block));
        unsafe {
            dst.write(index(i), a);
            dst.write(index(i + block), b);
            dst.write(index(i + 2 * block), c);
            dst.write(index(i + 3 * block), d);
        }
        i += BATCH * block;
    }
    while i < count {
        unsafe { dst.write(index(i), load(i)) };
        i += block;
    }
}

/// Thread `tid` of `block` threads copies `src[i]` to `dst[index(i)]`, for `i = tid, tid +
/// block, ... < count`, all in flight at once without registers on sm_80+
/// ([`SharedArray::copy_async`]), and waits for its copies. The caller's barrier after it
/// makes them visible to the block.
///
/// # Contract
/// `src` holds `count` 16-byte aligned elements of device memory; every `index(i)` is
/// inside `dst`; no other thread touches those elements until the next barrier.
#[inline(always)]
pub fn stage_async<T: Copy>(
    dst: SharedArray<T>,
    src: *const T,
    count: u32,
    tid: u32,
    block: u32,
    index: impl Fn(u32) -> u32,
) {
    let mut i = tid;
    while i < count {
        unsafe { dst.copy_async(index(i), src.add(i as usize)) };
        i += block;
    }
    crate::gpu::copy_async_wait();
}
