//! The tensor-core GEMM (device-kernels/src/hgemm.rs) as far as the CPU can check it. Its
//! kernels multiply with `wgmma` (sm_90a) or `ldmatrix` + `mma.sync` (sm_80), which have no
//! host implementation (`gpu/tensor_core.rs` traps off NVIDIA): no entry runs on the CPU
//! executor, and `unreachable.txt` names their lines (the CUDA tests of the repository root,
//! `tests/hgemm.rs`, run them against `dynsmem_reference::hgemm`). What the kernels and the
//! host share, and the CPU checks here against definitions: the work each block of a launch
//! takes (the persistent wgmma blocks' segments in grouped tile order, cooperative and
//! ping-pong, alone and in clusters, data-parallel and stream-K) covers every k-tile of every
//! output tile once; the stream-K workspace holds every piece and counter the blocks index;
//! the launch-sized carve; which entry runs a config.

use std::collections::HashMap;

use dynsmem_kernel_tests::*;
use dynsmem_kernels::gpu::host::{Fault, FaultKind};
use dynsmem_kernels::hgemm::{
    self, CLUSTER, DEPTH2, FIXED, FIXED_C2, HgemmConfig, MAX_STAGE_BUFFERS, MAX_STAGES, MAX_UNITS, MIN_STAGE_BUFFERS,
    MIN_STAGES, MMA_BK, MMA_BN, MmaKind, OUT16, PINGPONG, ROWS_PER_UNIT, SLOT_ALIGN, STAGE_COLS, STAGE_WORDS, STAGE3,
    STAGE4, STREAMK, TMA_STORE, WGMMA_BK, WGMMA_BN, entry_name, ring_advance, staged_offset, tile_coords,
};

/// `(m, n, k)`: every side a multiple of no tile; each names what it is there for.
const SHAPES: &[(u32, u32, u32)] = &[
    (1, 1, 8),        // one tile, one k-tile
    (67, 131, 72),    // two k-tiles (the second ragged), two column tiles of 128
    (200, 300, 1000), // an odd number of row tiles: a cluster's second block past m
    (513, 250, 4104), // many k-tiles: stream-K splits tiles over several blocks
    (1100, 2100, 520),
];

/// Every wgmma config shape the entries take (with [`WGMMA_BN`] widths, ranks and group sizes
/// that do not divide the tile rows).
fn wgmma_configs() -> Vec<HgemmConfig> {
    let mut out = Vec::new();
    for (bm, bn, cluster, flags, group_m) in [
        (64, 128, 1, 0, 8),
        (128, 160, 2, 0, 3),
        (128, 192, 1, PINGPONG, 8),
        (128, 224, 2, PINGPONG | DEPTH2, 1),
        (128, 256, 1, STREAMK, 8),
        (64, 192, 2, STREAMK, 3),
        (128, 256, 2, STREAMK | DEPTH2, 2),
    ] {
        let cfg = HgemmConfig { group_m, ..HgemmConfig::wgmma(bm, bn, 4).with_cluster(cluster) }.with_flags(flags);
        assert!(cfg.fits(), "{cfg:?}");
        out.push(cfg);
    }
    out
}

/// Grids of `cfg` on `m x n x k`: one cluster, a few, and one cluster per item (or, stream-K,
/// as many as the split can feed: at most one per unit).
fn grids(cfg: &HgemmConfig, m: u32, n: u32, k: u32) -> Vec<u32> {
    let items = cfg.items(m, n);
    let most = if cfg.streamk { items * k.div_ceil(cfg.bk()) } else { items };
    let mut g: Vec<u32> = [1, 3, 7, most].iter().map(|&w| w.min(most) * cfg.cluster).collect();
    g.dedup();
    g
}

/// What the blocks of a wgmma launch of `grid` blocks take, as the kernel walks it: per block
/// (worker `b / cluster`, rank `b % cluster`) and math unit, its segments `j` (ping-pong: unit
/// `u` takes `u, u + 2, ...`), each a run of k-tiles of the tile at `tile_coords`' row (times
/// the cluster, plus the rank) and column. `(row tile, column tile, k-tile) -> times`.
fn walk(cfg: &HgemmConfig, m: u32, n: u32, k: u32, grid: u32) -> HashMap<(u32, u32, u32), u32> {
    let sched = cfg.schedule(m, n, k, grid);
    let (tiles_m, tiles_n) = (m.div_ceil(cfg.tile_rows()), n.div_ceil(cfg.bn));
    let items_m = tiles_m.div_ceil(cfg.cluster);
    let units: &[u32] = if cfg.pingpong { &[0, 1] } else { &[0] };
    let mut seen = HashMap::new();
    for b in 0..grid {
        let (worker, rank) = (b / cfg.cluster, b % cfg.cluster);
        for &u in units {
            let (mut j, step) = if cfg.pingpong { (u, 2) } else { (0, 1) };
            while let Some(seg) = sched.segment(worker, j) {
                let (im, tn) = tile_coords(seg.tile, items_m, tiles_n, cfg.group_m);
                for kt in seg.kt0..seg.kt1 {
                    *seen.entry((im * cfg.cluster + rank, tn, kt)).or_insert(0) += 1;
                }
                j += step;
            }
        }
    }
    seen
}

#[test]
fn every_k_tile_of_every_output_tile_is_taken_once() {
    for &(m, n, k) in SHAPES {
        for cfg in wgmma_configs() {
            for grid in grids(&cfg, m, n, k) {
                let what = format!("{m} x {n} x {k}, grid {grid}, {cfg:?}");
                let seen = walk(&cfg, m, n, k, grid);
                let (tiles_m, tiles_n, k_tiles) =
                    (m.div_ceil(cfg.tile_rows()), n.div_ceil(cfg.bn), k.div_ceil(WGMMA_BK));
                // A cluster's blocks past the last row tile compute rows past m (not stored);
                // nothing else is outside the problem.
                let rows_taken = tiles_m.div_ceil(cfg.cluster) * cfg.cluster;
                for (&(tm, tn, kt), &times) in &seen {
                    assert!(tm < rows_taken && tn < tiles_n && kt < k_tiles, "{what}: ({tm}, {tn}, {kt}) outside");
                    assert_eq!(times, 1, "{what}: ({tm}, {tn}, k-tile {kt}) taken {times} times");
                }
                assert_eq!(seen.len() as u32, rows_taken * tiles_n * k_tiles, "{what}: k-tiles left out");
            }
        }
    }
}

#[test]
fn the_stream_k_workspace_holds_every_piece_and_counter_the_blocks_index() {
    for &(m, n, k) in SHAPES {
        for cfg in wgmma_configs().into_iter().filter(|c| c.streamk) {
            for grid in grids(&cfg, m, n, k) {
                let what = format!("{m} x {n} x {k}, grid {grid}, {cfg:?}");
                let sched = cfg.schedule(m, n, k, grid);
                assert!(sched.blocks <= sched.sk_units().max(1), "{what}: a cluster without a unit");
                let (pieces, counters) = cfg.sk_workspace(m, n, k, grid);
                let (rows, warps) = (cfg.tile_rows(), cfg.math_warps());
                // (piece slot, rank) -> (worker, tile): no two pieces share a slot.
                let mut slots = HashMap::new();
                for worker in 0..grid / cfg.cluster {
                    let mut j = 0;
                    while let Some(seg) = sched.segment(worker, j) {
                        j += 1;
                        if sched.whole(&seg) {
                            continue;
                        }
                        let (first, last) = sched.pieces(seg.tile);
                        assert!((first..=last).contains(&worker), "{what}: {seg:?} of worker {worker} not a piece");
                        for rank in 0..cfg.cluster {
                            let slot = sched.slot(worker, seg.tile) * cfg.cluster + rank;
                            // The piece's last warp's 16 rows of `bn` floats.
                            let end = (slot * rows + rows) as u64 * cfg.bn as u64;
                            assert!(end <= pieces, "{what}: piece slot {slot} ends at {end}, past {pieces}");
                            let prior = slots.insert(slot, (worker, seg.tile));
                            assert!(prior.is_none(), "{what}: slot {slot} of {prior:?} and {:?}", (worker, seg.tile));
                            let counter = ((seg.tile - sched.dp_tiles) * cfg.cluster + rank) * warps + warps - 1;
                            assert!((counter as u64) < counters, "{what}: counter {counter} past {counters}");
                        }
                    }
                }
            }
        }
    }
    let dp = HgemmConfig::wgmma(128, 256, 4);
    assert_eq!(dp.sk_workspace(513, 250, 4104, 8), (0, 0), "no workspace without stream-K");
}

/// Every config the kernels accept, by the rules of each field.
fn every_config() -> Vec<HgemmConfig> {
    let mut out = Vec::new();
    for bm in [64, 128] {
        for stages in MIN_STAGES..=MAX_STAGES {
            out.push(HgemmConfig::mma(bm, stages));
            for bn in WGMMA_BN {
                for cluster in [1, CLUSTER] {
                    for flags in [
                        0,
                        PINGPONG,
                        DEPTH2,
                        STREAMK,
                        PINGPONG | DEPTH2,
                        STREAMK | DEPTH2,
                        TMA_STORE,
                        PINGPONG | TMA_STORE,
                        STREAMK | TMA_STORE,
                        TMA_STORE | STAGE3,
                        PINGPONG | TMA_STORE | STAGE4,
                        STREAMK | TMA_STORE | STAGE4,
                    ] {
                        let cfg = HgemmConfig::wgmma(bm, bn, stages).with_cluster(cluster).with_flags(flags);
                        if cfg.fits() {
                            out.push(cfg);
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn fits_is_the_rules_of_the_fields() {
    let mut accepted = 0;
    for kind in [MmaKind::Wgmma, MmaKind::Mma] {
        for bm in [0, 32, 64, 96, 128, 192, 256] {
            for bn in [64, 128, 160, 192, 224, 256, 288] {
                for stages in 0..=MAX_STAGES + 1 {
                    for cluster in [1, 2, 3] {
                        for depth in [1, 2, 3] {
                            for flags in [
                                0,
                                PINGPONG,
                                STREAMK,
                                PINGPONG | STREAMK,
                                TMA_STORE,
                                PINGPONG | TMA_STORE,
                                STAGE3,
                                TMA_STORE | STAGE3,
                                TMA_STORE | STAGE4,
                                TMA_STORE | STAGE3 | STAGE4,
                            ] {
                                let base = HgemmConfig { kind, bm, bn, stages, ..HgemmConfig::mma(64, 2) };
                                let cfg = base.with_cluster(cluster).with_flags(flags).with_depth(depth);
                                let wgmma = kind == MmaKind::Wgmma;
                                let want = (if wgmma { WGMMA_BN.contains(&bn) } else { bn == MMA_BN })
                                    && (bm == 64 || bm == 128)
                                    && (MIN_STAGES..=MAX_STAGES).contains(&stages)
                                    && (cluster == 1 || (cluster == CLUSTER && wgmma && bn != 128))
                                    && (flags & PINGPONG == 0 || (wgmma && bm == 128))
                                    && (depth == 1 || (depth == 2 && wgmma && stages >= 3))
                                    && (flags & STREAMK == 0 || (wgmma && flags & PINGPONG == 0))
                                    && (flags & TMA_STORE == 0 || wgmma)
                                    && (flags & (STAGE3 | STAGE4) == 0
                                        || (flags & TMA_STORE != 0 && flags & (STAGE3 | STAGE4) != STAGE3 | STAGE4));
                                assert_eq!(cfg.fits(), want, "{cfg:?}");
                                accepted += want as u32;
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(accepted > 0);
    let zero_group = HgemmConfig { group_m: 0, ..HgemmConfig::mma(64, 2) };
    assert!(!zero_group.fits(), "group_m 0");
    // A config without a cluster size (0) is one of plain blocks.
    for (m, n, k, grid) in [(513, 250, 4104, 6), (1100, 2100, 520, 9)] {
        let one = HgemmConfig::wgmma(128, 192, 4).with_streamk(true);
        let zero = one.with_cluster(0);
        assert_eq!(zero.b_box_rows(), one.b_box_rows(), "cluster 0: B's box");
        assert_eq!(zero.items(m, n), one.items(m, n), "cluster 0: items");
        assert_eq!(zero.schedule(m, n, k, grid), one.schedule(m, n, k, grid), "cluster 0: schedule");
        assert_eq!(zero.sk_workspace(m, n, k, grid), one.sk_workspace(m, n, k, grid), "cluster 0: workspace");
    }
}

/// The ring position `n` k-tiles on is `n` single steps (the slot wraps at `stages`, the phase
/// flips at each wrap); 0 stages (which no config has) count as one.
#[test]
fn the_ring_advances_one_slot_a_k_tile() {
    for stages in 0..=MAX_STAGES {
        let (mut slot, mut phase) = (0, 0);
        for n in 0..3 * MAX_STAGES + 1 {
            assert_eq!(ring_advance(0, 0, n, stages), (slot, phase), "stages {stages}, {n} on");
            slot += 1;
            if slot == stages.max(1) {
                (slot, phase) = (0, phase ^ 1);
            }
        }
    }
}

#[test]
fn the_carve_holds_every_slot_and_barrier_apart_and_aligned() {
    for cfg in every_config() {
        let l = cfg.layout().expect("layout");
        let (rows, bk) = (cfg.tile_rows(), cfg.bk());
        assert_eq!(rows, if cfg.pingpong { ROWS_PER_UNIT } else { cfg.bm }, "{cfg:?}");
        assert_eq!(cfg.bk(), if cfg.kind == MmaKind::Wgmma { WGMMA_BK } else { MMA_BK });
        assert_eq!((l.a.offset(), l.a.len()), (0, cfg.stages * rows * bk), "{cfg:?}: A's slots");
        assert_eq!(l.b.len(), cfg.stages * cfg.bn * bk, "{cfg:?}: B's slots");
        assert!(l.b.offset() >= l.a.end() && l.b.offset() % SLOT_ALIGN == 0, "{cfg:?}: B after A, aligned");
        // Every slot starts on the swizzle's period (A's and B's slot bytes are multiples).
        assert_eq!((rows * bk * 2) % SLOT_ALIGN, 0, "{cfg:?}: A's slot");
        let bars = if cfg.kind == MmaKind::Wgmma { cfg.stages } else { 0 };
        assert_eq!((l.full.len(), l.empty.len()), (bars, bars), "{cfg:?}: barriers");
        assert_eq!(l.turn.len(), if cfg.pingpong { MAX_UNITS } else { 0 }, "{cfg:?}: turns");
        assert!(l.full.offset() >= l.b.end() && l.empty.offset() >= l.full.end() && l.turn.offset() >= l.empty.end());
        // Staged stores: each math warpgroup's buffers after the barriers, on the swizzle's
        // period (the tensor map's box is read from there).
        assert!((MIN_STAGE_BUFFERS..=MAX_STAGE_BUFFERS).contains(&cfg.stage_buffers), "{cfg:?}: buffers");
        let staged = if cfg.tma_store { cfg.units() * cfg.stage_buffers * STAGE_WORDS } else { 0 };
        assert_eq!(l.stage.len(), staged, "{cfg:?}: staging buffers");
        assert!(
            l.stage.offset() >= l.turn.end() && l.stage.offset() % SLOT_ALIGN == 0,
            "{cfg:?}: staging after, aligned"
        );
        let end = match cfg.kind {
            MmaKind::Wgmma if cfg.tma_store => l.stage.end(),
            MmaKind::Wgmma => l.turn.end(),
            MmaKind::Mma => l.b.end(),
        };
        assert_eq!(cfg.shared_bytes().unwrap(), end, "{cfg:?}: bytes");
        let threads = if cfg.kind == MmaKind::Wgmma { 128 * (1 + cfg.bm / 64) } else { 128 * cfg.bm / 64 };
        assert_eq!(cfg.threads(), threads, "{cfg:?}: threads");
        assert_eq!(cfg.readers_per_slot(), if cfg.pingpong { 1 } else { cfg.bm / 64 }, "{cfg:?}");
        assert_eq!(cfg.b_box_rows() * cfg.cluster, cfg.bn, "{cfg:?}: a cluster's shares of B");
    }
}

#[test]
fn every_config_has_an_entry_of_its_cluster_and_parameters() {
    for cfg in every_config() {
        for bf16 in [false, true] {
            let name = entry_name(&cfg, bf16, false).unwrap_or_else(|| panic!("{cfg:?} bf16 {bf16}: no entry"));
            let e = entry(hgemm::KERNELS, name);
            let ty = if bf16 { "bf16" } else { "f16" };
            let want = match cfg.kind {
                MmaKind::Wgmma => format!("hgemm_wgmma_{ty}_n{}{}", cfg.bn, if cfg.cluster == 2 { "_c2" } else { "" }),
                MmaKind::Mma => format!("hgemm_mma_{ty}"),
            };
            assert_eq!(name, want, "{cfg:?}");
            assert_eq!(e.cluster, cfg.cluster, "{name}: cluster");
            assert_eq!(e.params.len(), 13, "{name}: parameters");
            // Only FIXED and FIXED_C2 (f16) have a compiled-in entry.
            let fixed = entry_name(&cfg, bf16, true);
            let is_fixed = !bf16 && (cfg == FIXED || cfg == FIXED_C2);
            assert_eq!(fixed.is_some(), is_fixed, "{cfg:?} bf16 {bf16}: {fixed:?}");
        }
    }
    for (cfg, name) in [(FIXED, "hgemm_wgmma_f16_n256_fixed"), (FIXED_C2, "hgemm_wgmma_f16_n256_c2_fixed")] {
        assert_eq!(entry_name(&cfg, false, true), Some(name));
        assert_eq!(entry(hgemm::KERNELS, name).cluster, cfg.cluster);
    }
    // Shapes no entry has: mma in clusters, wgmma's narrowest tile in clusters, other widths.
    assert_eq!(entry_name(&HgemmConfig::mma(64, 2).with_cluster(2), false, false), None);
    assert_eq!(entry_name(&HgemmConfig::wgmma(128, 128, 4).with_cluster(2), true, false), None);
    assert_eq!(entry_name(&HgemmConfig::wgmma(128, 96, 4), false, false), None);
    let bits = [OUT16, PINGPONG, DEPTH2, STREAMK, TMA_STORE, STAGE3, STAGE4];
    assert_eq!(bits.iter().fold(0, |a, b| a | b).count_ones(), bits.len() as u32, "one bit per flag");
    // The host launches `cfg.flags()`; the entries read them back with `with_flags`.
    for cfg in every_config() {
        assert_eq!(cfg.with_flags(cfg.flags()), cfg, "{cfg:?}: flags {:#x}", cfg.flags());
        assert_eq!(cfg.flags() & OUT16, 0, "{cfg:?}: the output type is the problem's");
    }
}

/// The staging layout is the tensor map's swizzle: a bijection of each chunk's entries onto
/// the buffer's bytes (16-byte pieces XOR-ed with the byte offset's bits 7 and up, 128-byte
/// rows of f32, 64-byte rows of 16-bit), and the fragment stores of one instruction (the 32
/// lanes' rows `lane / 4` and `+ 8`, columns `8 i + 2 (lane % 4)`) spread over the banks: as
/// few passes as their bytes need (256 bytes of f32 pairs: 2; 128 of 16-bit: 1).
#[test]
fn staging_is_the_tensor_maps_swizzle_and_fragment_stores_do_not_conflict() {
    for elem in [4u32, 2] {
        let row_bytes = STAGE_COLS * elem;
        let mut seen = vec![false; (ROWS_PER_UNIT * row_bytes) as usize];
        for row in 0..ROWS_PER_UNIT {
            for col in 0..STAGE_COLS {
                let at = staged_offset(row, col, elem);
                // The swizzle as the tensor-map documentation states it: the byte offset's
                // 16-byte index bits XOR-ed with its bits 7.. (3 bits for 128-byte rows, 2 for 64).
                let plain = row * row_bytes + col * elem;
                let bits = if elem == 4 { 7 } else { 3 };
                assert_eq!(at, plain ^ (((plain >> 7) & bits) << 4), "elem {elem}: ({row}, {col})");
                assert!(at.is_multiple_of(elem) && !seen[at as usize], "elem {elem}: ({row}, {col}) at {at}");
                seen[at as usize] = true;
            }
        }
        assert_eq!(seen.iter().filter(|&&s| s).count() as u32, ROWS_PER_UNIT * STAGE_COLS, "elem {elem}");
        assert!(ROWS_PER_UNIT * row_bytes <= STAGE_WORDS * 4, "elem {elem}: a chunk fits a buffer");
        for warp in 0..4 {
            for i in 0..4 {
                for h in 0..2 {
                    // Bytes each bank (4 bytes wide, 32 of them) gets from the warp's store.
                    let mut per_bank = [0u32; 32];
                    for lane in 0..32 {
                        let (row, col) = (warp * 16 + lane / 4 + 8 * h, 8 * i + 2 * (lane % 4));
                        let at = staged_offset(row, col, elem);
                        for b in 0..2 * elem / 4 {
                            per_bank[((at / 4 + b) % 32) as usize] += 1;
                        }
                    }
                    let passes = *per_bank.iter().max().unwrap();
                    let need = if elem == 4 { 2 } else { 1 };
                    assert_eq!(passes, need, "elem {elem}, warp {warp}, i {i}, h {h}: {per_bank:?}");
                }
            }
        }
    }
}

/// The file of the `gpu::trap` a launch expected to trap stops at.
fn trap_site(cpu: &Cpu, entry: &'static KernelEntry, dims: LaunchDims, args: &[Arg<'_>]) -> String {
    match cpu.launch(entry, dims, args) {
        Err(LaunchError::Fault { fault: Fault { kind: FaultKind::Trap { at }, .. }, .. }) => at.file().to_string(),
        other => panic!("{} at {dims:?}: expected a trap, got {other:?}", entry.name),
    }
}

/// Launches that break an entry's rules trap in `hgemm.rs`, before any tensor-core
/// instruction (the CPU has none: a launch that passed would trap in `gpu/tensor_core.rs`).
#[test]
fn launches_that_break_the_rules_trap_before_a_tensor_core_instruction() {
    let cpu = cpu();
    let (a, c, ws) = (mem(&vec![0u16; 64 * 64]), mem(&vec![0f32; 64 * 64]), mem(&vec![0u32; 1 << 16]));
    // (entry, grid, block, k, flags, bm, stages, why)
    for (kernel, grid, block, k, flags, bm, stages, why) in [
        ("hgemm_mma_f16", 1, 128, 64, 0, 96, 2, "bm 96"),
        ("hgemm_mma_bf16", 1, 128, 64, 0, 128, 2, "a block of 128 for bm 128"),
        ("hgemm_mma_f16", 1, 256, 64, 0, 128, 9, "9 stages"),
        ("hgemm_wgmma_f16_n256", 1, 384, 64, 0, 128, 1, "1 stage"),
        ("hgemm_wgmma_bf16_n128", 1, 256, 64, 0, 128, 4, "a block of 256 for bm 128"),
        ("hgemm_wgmma_f16_n192", 1, 256, 0, 0, 64, 4, "k 0"),
        ("hgemm_wgmma_bf16_n160_c2", 3, 384, 64, 0, 128, 4, "3 blocks in clusters of 2"),
        ("hgemm_wgmma_f16_n224", 1, 256, 64, PINGPONG, 64, 4, "ping-pong with one math warpgroup"),
        ("hgemm_wgmma_bf16_n256", 4, 384, 64, STREAMK, 128, 4, "stream-K: 4 blocks for one k-tile"),
        ("hgemm_wgmma_f16_n256_fixed", 1, 384, 64, 0, 64, 4, "the compiled-in entry with bm 64"),
        ("hgemm_wgmma_f16_n256_fixed", 1, 384, 64, 0, 128, 3, "the compiled-in entry with 3 stages"),
        ("hgemm_wgmma_f16_n256_fixed", 1, 384, 64, DEPTH2, 128, 4, "the compiled-in entry with depth 2"),
        ("hgemm_wgmma_f16_n256_c2_fixed", 2, 384, 64, 0, 64, 4, "the compiled-in c2 entry with bm 64"),
        ("hgemm_wgmma_f16_n256_c2_fixed", 2, 384, 64, 0, 128, 5, "the compiled-in c2 entry with 5 stages"),
        ("hgemm_wgmma_f16_n256_c2_fixed", 2, 384, 64, STREAMK, 128, 4, "the compiled-in c2 entry with stream-K"),
        ("hgemm_wgmma_f16_n256_fixed", 1, 384, 64, TMA_STORE, 128, 4, "the compiled-in entry with staged stores"),
        ("hgemm_wgmma_f16_n256_c2_fixed", 2, 384, 64, STAGE4, 128, 4, "the compiled-in c2 entry with 4 buffers"),
        ("hgemm_wgmma_bf16_n192", 1, 384, 64, STAGE3, 128, 4, "3 staging buffers without staged stores"),
        ("hgemm_wgmma_f16_n160", 1, 384, 64, TMA_STORE | STAGE3 | STAGE4, 128, 4, "both buffer bits"),
    ] {
        let dims = LaunchDims { grid, block, shared_bytes: 1 << 16, cluster: 1 };
        let args = [
            Arg::Mem(&a),
            Arg::Mem(&a),
            Arg::Mem(&c),
            Arg::Mem(&a),
            Arg::U32(64),
            Arg::U32(64),
            Arg::U32(k),
            Arg::U32(flags),
            Arg::U32(bm),
            Arg::U32(stages),
            Arg::U32(8),
            Arg::Mem(&ws),
            Arg::Mem(&ws),
        ];
        let f = trap_site(&cpu, entry(hgemm::KERNELS, kernel), dims, &args);
        assert!(f.ends_with("hgemm/mod.rs"), "{kernel}, {why}: {f}");
    }
}
