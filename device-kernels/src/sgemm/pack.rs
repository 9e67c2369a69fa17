//! Row padding for the tensor-map kernels: a tensor map's rows must be a multiple of 16 bytes
//! apart, so an operand whose row length is not a multiple of 4 floats (A where `k` is not, B
//! where `n` is not) is first copied, as part of the same run, into a buffer whose rows are
//! `ld` floats apart (`cols` rounded up to 4). The tensor map then describes the copy with the
//! operand's own `cols` columns: the padding is never read (the copy engine zero-fills past
//! `cols`), so it is not written either.
//!
//! One launch pads both operands ([`pack_blocks`]): block `i < blocks(A)` copies a span of A,
//! the rest of B. A span is `PACK_SPAN` consecutive elements of one row; thread `t` copies
//! elements `t`, `t + threads`, ... of it, so a warp reads and writes 128 consecutive bytes.

use crate::gpu;

/// Elements of one row a block copies.
pub const PACK_SPAN: u32 = 1024;
/// Threads of a pack block.
pub const PACK_THREADS: u32 = 256;
/// Elements each thread copies.
const PER_THREAD: usize = (PACK_SPAN / PACK_THREADS) as usize;

/// Blocks that copy a `rows x cols` matrix (0 when there is nothing to copy).
pub const fn pack_blocks(rows: u32, cols: u32) -> u64 {
    rows as u64 * cols.div_ceil(PACK_SPAN) as u64
}

/// The row stride of `cols` columns padded to 16-byte rows.
pub const fn padded_ld(cols: u32) -> u32 {
    cols.next_multiple_of(4)
}

/// Copies span `block` of the `rows x cols` row-major `src` into `dst` (rows `ld` apart).
///
/// # Contract
/// `src` holds `rows * cols` floats, `dst` `rows * ld` with `ld >= cols`; `block <
/// pack_blocks(rows, cols)`; the block has [`PACK_THREADS`] threads.
#[inline(always)]
pub(super) fn pack_span(src: *const f32, dst: *mut f32, cols: u32, ld: u32, block: u32) {
    let spans = cols.div_ceil(PACK_SPAN);
    let (r, c0) = (block / spans, (block % spans) * PACK_SPAN);
    let (from, to) = (r as usize * cols as usize, r as usize * ld as usize);
    let t = gpu::thread_idx_x();
    let end = if cols - c0 < PACK_SPAN { cols } else { c0 + PACK_SPAN };
    // Every load of the thread before its first store: four reads in flight.
    let mut v = [0.0f32; PER_THREAD];
    for (i, v) in v.iter_mut().enumerate() {
        let c = c0 + t + i as u32 * PACK_THREADS;
        if c < end {
            *v = unsafe { gpu::read_global(src.add(from + c as usize)) };
        }
    }
    for (i, v) in v.iter().enumerate() {
        let c = c0 + t + i as u32 * PACK_THREADS;
        if c < end {
            unsafe { gpu::write_global(dst.add(to + c as usize), *v) };
        }
    }
}
