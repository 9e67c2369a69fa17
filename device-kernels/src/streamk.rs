//! The stream-K schedule of the persistent GEMMs (`sgemm_f32_sk*`, the tensor-core GEMM's
//! `STREAMK` flag): which (output tile, k-tile) units each block of a persistent grid
//! computes, and how the pieces of a tile that several blocks share are summed. Plain integer
//! arithmetic, the same on the device and the host (the host sizes the workspace and the tests
//! check the schedule with it). A "block" here is the schedule's worker: a block of the
//! SGEMM, a cluster of the tensor-core GEMM (whose blocks each take their own row of a
//! cluster's tiles through the same segments).
//!
//! # Units and blocks
//! A unit is one k-tile of one output tile: `tiles * k_tiles` units. With `G` blocks:
//! - where the tiles make two or more waves, the first `(tiles / G - 1) * G` tiles are
//!   data-parallel (block `b` takes tiles `b, b + G, ...` whole, in raster order, so that the
//!   tiles in flight at once are neighbours and share their rows of A and columns of B in L2);
//! - the other tiles' units (`sk_units`) are split evenly: block `b` takes the contiguous
//!   range `[sk_begin(b), sk_begin(b + 1))` (the first `sk_units % G` blocks one more), so
//!   every block ends at the same time and no multiprocessor waits on a partial last wave.
//!
//! # Pieces and the fix-up
//! A tile whose units fall in one block is stored by it. A tile split over blocks `first ..=
//! last` has one piece per block: each block writes its piece to its workspace slot, then
//! counts itself on the tile's counter (after a device-scope fence); the block that counts
//! last adds the pieces in block order (its own read back too), stores the tile and resets
//! the counter. No block ever waits on another, so any block order is correct (a GPU's, or
//! the CPU backend's), and the sum's order is fixed: the result does not depend on which
//! block came last. A block holds at most two pieces (its range can start and end inside
//! tiles): slots `2 b` (the tile its range starts in) and `2 b + 1` (the tile it ends in).

use crate::gpu;
use crate::vector::Vec4;

/// The schedule of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamK {
    /// Output tiles, in the kernel's tile order (raster for the SGEMM, grouped for the
    /// tensor-core GEMM).
    pub tiles: u32,
    /// k-tiles per output tile (at least 1).
    pub k_tiles: u32,
    /// Blocks of the launch (`G`, at least 1).
    pub blocks: u32,
    /// Tiles computed whole, data-parallel, before the stream-K tiles.
    pub dp_tiles: u32,
}

/// A block's run of consecutive units of one tile: k-tiles `kt0 .. kt1` of `tile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub tile: u32,
    pub kt0: u32,
    pub kt1: u32,
}

impl StreamK {
    /// The schedule of `tiles` tiles of `k_tiles` k-tiles each over `blocks` blocks (both at
    /// least 1 after clamping). Units are counted in u32 (32-bit division on the device, not
    /// a call): `tiles * k_tiles` must fit ([`StreamK::fits`]); hosts refuse problems past it.
    pub const fn new(tiles: u32, k_tiles: u32, blocks: u32) -> StreamK {
        let tiles = if tiles == 0 { 1 } else { tiles };
        let k_tiles = if k_tiles == 0 { 1 } else { k_tiles };
        let blocks = if blocks == 0 { 1 } else { blocks };
        let dp_tiles = if tiles / blocks >= 2 { (tiles / blocks - 1) * blocks } else { 0 };
        StreamK { tiles, k_tiles, blocks, dp_tiles }
    }

    /// Whether `tiles * k_tiles` units fit the schedule's u32 count.
    pub const fn fits(tiles: u64, k_tiles: u64) -> bool {
        tiles.saturating_mul(k_tiles) <= u32::MAX as u64
    }

    /// Every tile whole, data-parallel (block `b` takes tiles `b, b + blocks, ...`): the
    /// schedule without stream-K, so that one walk over segments serves both.
    pub const fn data_parallel(tiles: u32, k_tiles: u32, blocks: u32) -> StreamK {
        let s = StreamK::new(tiles, k_tiles, blocks);
        StreamK { dp_tiles: s.tiles, ..s }
    }

    /// Units of the stream-K tiles.
    pub const fn sk_units(&self) -> u32 {
        (self.tiles - self.dp_tiles) * self.k_tiles
    }

    /// The first stream-K unit of block `b` (`b` = `blocks` gives the end).
    pub const fn sk_begin(&self, b: u32) -> u32 {
        let (q, r) = (self.sk_units() / self.blocks, self.sk_units() % self.blocks);
        b * q + if b < r { b } else { r }
    }

    /// The block whose range holds stream-K unit `u` (`u < sk_units`).
    pub const fn block_of(&self, u: u32) -> u32 {
        let (q, r) = (self.sk_units() / self.blocks, self.sk_units() % self.blocks);
        // The first r blocks take q + 1 units each.
        if u < r * (q + 1) { u / (q + 1) } else { r + (u - r * (q + 1)) / q }
    }

    /// Data-parallel tiles of block `b`.
    pub const fn dp_count(&self, b: u32) -> u32 {
        self.dp_tiles / self.blocks + if b < self.dp_tiles % self.blocks { 1 } else { 0 }
    }

    /// Units block `b` computes.
    pub const fn units(&self, b: u32) -> u32 {
        self.dp_count(b) * self.k_tiles + self.sk_begin(b + 1) - self.sk_begin(b)
    }

    /// The first stream-K unit of `tile` (a stream-K tile: `tile >= dp_tiles`).
    pub const fn tile_begin(&self, tile: u32) -> u32 {
        (tile - self.dp_tiles) * self.k_tiles
    }

    /// The blocks that hold a piece of stream-K `tile`: `first ..= last`.
    pub const fn pieces(&self, tile: u32) -> (u32, u32) {
        let u0 = self.tile_begin(tile);
        (self.block_of(u0), self.block_of(u0 + self.k_tiles - 1))
    }

    /// The workspace slot of block `b`'s piece of stream-K `tile`: `2 b` if its range starts
    /// in the tile, else `2 b + 1` (the tile its range ends in).
    pub const fn slot(&self, b: u32, tile: u32) -> u32 {
        2 * b + if self.sk_begin(b) >= self.tile_begin(tile) { 0 } else { 1 }
    }

    /// Block `b`'s segment `j` (data-parallel tiles first, then its stream-K range), or
    /// `None` past its last.
    pub const fn segment(&self, b: u32, j: u32) -> Option<Segment> {
        let dp = self.dp_count(b);
        if j < dp {
            return Some(Segment { tile: b + j * self.blocks, kt0: 0, kt1: self.k_tiles });
        }
        // The stream-K segments: walk from the range's start (a block's range spans at most
        // a few tiles, and this runs once per segment).
        let (mut u, end) = (self.sk_begin(b), self.sk_begin(b + 1));
        let mut left = j - dp;
        while u < end {
            let kt0 = u % self.k_tiles;
            let room = self.k_tiles - kt0;
            let take = if end - u < room { end - u } else { room };
            if left == 0 {
                let tile = self.dp_tiles + u / self.k_tiles;
                return Some(Segment { tile, kt0, kt1: kt0 + take });
            }
            left -= 1;
            u += take;
        }
        None
    }

    /// Whether `s` is a whole tile (stored by its block, no fix-up).
    pub const fn whole(&self, s: &Segment) -> bool {
        s.kt0 == 0 && s.kt1 == self.k_tiles
    }
}

/// A 16-byte load of device memory that other blocks wrote in this launch (a piece of a
/// split tile), from L2 (not a possibly stale L1 line).
///
/// # Contract
/// As for [`gpu::read_global`].
#[inline(always)]
pub fn read_l2(p: *const Vec4<f32>) -> [f32; 4] {
    use gpu::micro::{CacheHint, HintedLoad};
    let v = unsafe { <Vec4<u32> as HintedLoad>::load::<{ CacheHint::Global as u32 }>(p.cast()) };
    v.0.map(f32::from_bits)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    /// Every unit of every tile is computed by exactly one block, segments are non-empty, a
    /// block holds at most two pieces, in slots that no other piece uses, and every split tile's
    /// pieces are the blocks `pieces` names.
    fn check(tiles: u32, k_tiles: u32, blocks: u32) {
        let s = StreamK::new(tiles, k_tiles, blocks);
        let mut seen = std::vec![0u32; (tiles * k_tiles) as usize];
        let mut slots = std::collections::BTreeSet::new();
        let mut owners: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        let mut total = 0u64;
        for b in 0..blocks {
            let mut j = 0;
            let mut units = 0u32;
            let mut partial = 0;
            while let Some(seg) = s.segment(b, j) {
                assert!(seg.kt0 < seg.kt1 && seg.kt1 <= k_tiles, "{s:?} block {b} segment {j}: {seg:?}");
                for kt in seg.kt0..seg.kt1 {
                    seen[(seg.tile * k_tiles + kt) as usize] += 1;
                }
                units += seg.kt1 - seg.kt0;
                if !s.whole(&seg) {
                    partial += 1;
                    assert!(seg.tile >= s.dp_tiles);
                    assert!(slots.insert(s.slot(b, seg.tile)), "{s:?}: slot {} twice", s.slot(b, seg.tile));
                    owners.entry(seg.tile).or_default().push(b);
                }
                j += 1;
            }
            assert_eq!(units, s.units(b), "{s:?} block {b}");
            assert!(partial <= 2, "{s:?} block {b}: {partial} pieces");
            total += units as u64;
        }
        assert_eq!(total, tiles as u64 * k_tiles as u64);
        assert!(seen.iter().all(|&c| c == 1), "{s:?}: {seen:?}");
        for (tile, blocks_of) in owners {
            let (first, last) = s.pieces(tile);
            assert_eq!(blocks_of, (first..=last).collect::<Vec<_>>(), "{s:?} tile {tile}");
            assert!(last > first, "{s:?} tile {tile}: a split tile has two pieces or more");
        }
    }

    #[test]
    fn every_unit_once_at_most_two_pieces_per_block() {
        for tiles in [1, 2, 3, 7, 30, 131, 132, 133, 264, 265, 527, 528, 1000] {
            for k_tiles in [1, 2, 3, 5, 23, 64] {
                for blocks in [1, 2, 5, 132, 264] {
                    if (tiles as u64 * k_tiles as u64) >= blocks as u64 {
                        check(tiles, k_tiles, blocks);
                    }
                }
            }
        }
    }

    #[test]
    fn the_data_parallel_schedule_has_whole_tiles_in_grid_steps() {
        let s = StreamK::data_parallel(300, 7, 132);
        assert_eq!(s.sk_units(), 0);
        assert_eq!(s.dp_count(35), 3);
        assert_eq!(s.dp_count(36), 2);
        assert_eq!(s.segment(35, 2), Some(Segment { tile: 35 + 264, kt0: 0, kt1: 7 }));
        assert_eq!(s.segment(36, 2), None);
        let total: u32 = (0..132).map(|b| s.units(b)).sum();
        assert_eq!(total, 300 * 7);
    }

    #[test]
    fn data_parallel_waves_before_the_stream_k_tail() {
        // 528 tiles on 132 blocks: three waves data-parallel, the fourth stream-K (even).
        let s = StreamK::new(528, 128, 132);
        assert_eq!(s.dp_tiles, 396);
        assert_eq!(s.segment(5, 0), Some(Segment { tile: 5, kt0: 0, kt1: 128 }));
        assert_eq!(s.segment(5, 2), Some(Segment { tile: 269, kt0: 0, kt1: 128 }));
        // 132 tiles left over 132 blocks: one whole tile each, no piece.
        assert_eq!(s.segment(5, 3), Some(Segment { tile: 401, kt0: 0, kt1: 128 }));
        assert_eq!(s.segment(5, 4), None);
        // Fewer tiles than blocks: every tile split.
        let s = StreamK::new(30, 23, 132);
        assert_eq!(s.dp_tiles, 0);
        assert_eq!(s.units(0), 6);
        assert_eq!(s.units(131), 5);
        assert_eq!(s.pieces(0), (0, 3));
    }
}
