//! The epilogues of the GEMM kernels: a thread's accumulator fragment into `C`.
//!
//! - [`store_pair`]: straight from registers, a pair of adjacent entries per store (every
//!   kernel; the only way where `C`'s rows are not 16-byte multiples, and for split tiles).
//! - [`store_staged`] (wgmma, [`super::TMA_STORE`]): a math warpgroup writes its `64 x BN`
//!   tile in chunks of [`STAGE_COLS`] columns into one of its 2 to 4 staging buffers in
//!   launch-sized shared memory, laid out as the copy engine's swizzle reads them, and one
//!   thread stores each chunk with a tensor-map store (TMA). The stores run on while the
//!   warpgroup writes the next chunk and then multiplies the next tile, so the tensor cores
//!   wait only for the shared-memory writes, not for `C`'s lines to reach L2.

use crate::gpu::{self, SharedArray, WARPGROUP};

use super::ROWS_PER_UNIT;

/// Columns of `C` per staged chunk: one 128-byte swizzle row of f32 (a 64-byte one of 16-bit
/// output). Every wgmma `BN` is a multiple.
pub const STAGE_COLS: u32 = 32;
/// Staging buffers per math warpgroup ([`super::HgemmConfig::stage_buffers`]), fewest and
/// most: one is written while the others' stores read them.
pub const MIN_STAGE_BUFFERS: u32 = 2;
pub const MAX_STAGE_BUFFERS: u32 = 4;
/// Words of one staging buffer: a warpgroup's 64 rows of a chunk in f32 (16-bit output uses
/// the first half).
pub const STAGE_WORDS: u32 = ROWS_PER_UNIT * STAGE_COLS;

/// Byte offset of entry `(row, col)` of a staged chunk of `elem_bytes`-byte elements (4 or 2):
/// rows of `STAGE_COLS * elem_bytes` bytes (128 or 64), each 16-byte piece XOR-ed with the
/// buffer offset's bits 7 and up (`row % 8` for 128-byte rows, `(row / 2) % 4` for 64-byte
/// ones), which is how the 128- and 64-byte swizzles of a tensor map lay out a box (the buffer
/// is 1024-byte aligned). The rows a fragment store writes at one column then fall in
/// different bank groups.
#[inline(always)]
pub const fn staged_offset(row: u32, col: u32, elem_bytes: u32) -> u32 {
    let row_bytes = STAGE_COLS * elem_bytes;
    let byte = col * elem_bytes;
    let swizzle = ((row * row_bytes) >> 7) & (row_bytes / 16 - 1);
    row * row_bytes + (((byte / 16) ^ swizzle) * 16) + byte % 16
}

/// Stores a pair of adjacent entries `(row, col)`, `(row, col + 1)` of `C` (`ldc` = `n`), the
/// ones inside `m x n`: one 8-byte (f32) or 4-byte (16-bit) store where `n` is even (the
/// pair is then aligned), else entry by entry.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn store_pair<const BF16: bool>(
    c: *mut u8,
    out16: bool,
    m: u32,
    n: u32,
    row: u32,
    col: u32,
    v0: f32,
    v1: f32,
) {
    if row >= m || col >= n {
        return;
    }
    let at = row as usize * n as usize + col as usize;
    let both = col + 1 < n;
    unsafe {
        if out16 {
            let w = gpu::pack_half2::<BF16>(v0, v1);
            let p = c.cast::<u16>().add(at);
            if both && n % 2 == 0 {
                gpu::write_global(p.cast::<u32>(), w);
            } else {
                gpu::write_global(p, w as u16);
                if both {
                    gpu::write_global(p.add(1), (w >> 16) as u16);
                }
            }
        } else {
            let p = c.cast::<f32>().add(at);
            if both && n % 2 == 0 {
                // One 8-byte store (`at` is even, so 8-byte aligned): an `[f32; 2]` is only
                // 4-byte aligned and would be stored as two words.
                gpu::write_global(p.cast::<u64>(), u64::from(v0.to_bits()) | (u64::from(v1.to_bits()) << 32));
            } else {
                gpu::write_global(p, v0);
                if both {
                    gpu::write_global(p.add(1), v1);
                }
            }
        }
    }
}

/// Where a math warpgroup's staged store goes and what it has done so far.
pub(super) struct Staging {
    /// The warpgroup's `depth` buffers of [`STAGE_WORDS`] words, 1024-byte aligned.
    pub buffers: SharedArray<u32>,
    /// Buffers ([`MIN_STAGE_BUFFERS`] to [`MAX_STAGE_BUFFERS`]).
    pub depth: u32,
    /// `C`'s tensor map: `n x m` of the output type, box [`STAGE_COLS`] x 64, swizzled 128
    /// bytes (f32) or 64 bytes (16-bit).
    pub c_map: *const u8,
    /// The warpgroup (0 or 1): its named barrier is `1 + unit`.
    pub unit: u32,
    /// The buffer the next chunk goes to (`0..depth`, in turn).
    pub next: u32,
}

/// Stores the warpgroup's `64 x BN` accumulators (rows `y0..y0 + 64`, columns `x0..x0 + BN`
/// of `C`; the copy engine drops what lies past `m` or `n`) through `st`'s buffers (module
/// documentation). Per chunk: every thread writes its fragment's entries (two rows, eight
/// columns), fences them for the copy engine, and the warpgroup meets at its barrier; the
/// lead thread has first waited until the store that last read the buffer the next chunk goes
/// to (`depth - 1` chunks back) has read its bytes, then starts this chunk's store. Chunks
/// wholly past `n` are skipped.
///
/// # Contract
/// Every thread of the warpgroup calls it with the same arguments but `acc`; `out16` writes
/// the input type (`BF16` says which), else f32. The lead thread waits for its last store
/// ([`gpu::bulk_wait`]) before the block exits.
#[inline(always)]
pub(super) fn store_staged<const BF16: bool, const BN: u32, const ACC: usize>(
    acc: &[f32; ACC],
    st: &mut Staging,
    out16: bool,
    (x0, y0): (u32, u32),
    n: u32,
) {
    let t = gpu::thread_idx_x() % WARPGROUP;
    let (lane, warp) = (t % 32, t / 32);
    // This thread's fragment entries (see `gpu::wgmma`): rows `row` and `row + 8`, columns
    // `8 i + col` of each 32-column chunk.
    let (row, col) = (warp * 16 + lane / 4, 2 * (lane % 4));
    let lead = t == 0;
    unroll!(chunk in [0 1 2 3 4 5 6 7] {
        let x = x0 + STAGE_COLS * chunk as u32;
        if STAGE_COLS * (chunk as u32) < BN && x < n {
            let buf = st.next * STAGE_WORDS;
            unroll!(i in [0 1 2 3] {
                let q = 4 * chunk + i;
                unroll!(h in [0 1] {
                    let (v0, v1) = (acc[4 * q + 2 * h], acc[4 * q + 2 * h + 1]);
                    let (r, cc) = (row + 8 * h as u32, 8 * i as u32 + col);
                    // SAFETY: inside the buffer (`staged_offset` < 64 rows of the chunk's bytes);
                    // no store reads it (the lead's wait before the last barrier).
                    unsafe {
                        if out16 {
                            let at = buf + staged_offset(r, cc, 2) / 4;
                            st.buffers.write(at, gpu::pack_half2::<BF16>(v0, v1));
                        } else {
                            let at = (buf + staged_offset(r, cc, 4) / 4) / 2;
                            let bits = u64::from(v0.to_bits()) | (u64::from(v1.to_bits()) << 32);
                            st.buffers.cast::<u64>().write(at, bits);
                        }
                    }
                });
            });
            gpu::fence_proxy_async_shared();
            // The stores before this chunk's still pending are at most the last `depth - 2`:
            // the one before them read the next chunk's buffer.
            if lead {
                gpu::bulk_wait_read_pending(st.depth - 2);
            }
            match st.unit {
                0 => gpu::named_barrier_sync::<1>(WARPGROUP),
                _ => gpu::named_barrier_sync::<2>(WARPGROUP),
            }
            if lead {
                // SAFETY: the buffer (1024-byte aligned, whole), written and fenced by every
                // thread before the barrier; the next write to it follows the lead's wait.
                unsafe {
                    st.buffers.shared_ptr(buf, STAGE_WORDS).store_tile_2d(st.c_map, x as i32, y0 as i32);
                }
                gpu::bulk_commit();
            }
            st.next = if st.next + 1 == st.depth { 0 } else { st.next + 1 };
        }
    });
}
