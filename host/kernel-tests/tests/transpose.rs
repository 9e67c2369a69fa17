//! Transpose (device-kernels/src/transpose.rs), both entries: `transpose_f32` by square
//! tiles, padded by 0 or 1 float a row, at sides that are and are not multiples of the
//! tile, blocks whose thread rows cover a tile four at a time, one at a time, both, or
//! outnumber its rows; and `transpose_thin_f32` by slabs, wide and tall, short sides 1 to
//! SLAB_SIDE, a last slab narrower than the others; launched grids smaller than the tile
//! or slab count (the tile loop); the entry picked as the host picks it
//! (`TransposeConfig::slab`). Then the traps of configs the entries refuse, and the
//! config's own arithmetic (fits, layout, slab, tiles, grid) against its definitions.

use dynsmem_kernel_tests::*;
use dynsmem_kernels::gpu::host::FaultKind;
use dynsmem_kernels::layout::LayoutError;
use dynsmem_kernels::transpose::{self, MAX_GRID, SLAB_SIDE, Slab, TransposeConfig, TransposeRefusal};

/// `(rows, cols, block, tile, pad, grid)`; `grid` 0: the config's own.
type Case = (u32, u32, u32, u32, u32, u32);

/// Square tiles (no side of 1 to SLAB_SIDE, or a slab too narrow for one position a line):
/// each draw names the path it is there for. `step` is `block / tile` thread rows.
const TILE_CASES: &[Case] = &[
    (16, 24, 16, 8, 1, 0),  // whole tiles, step 2: only the four-rows loop (8 - j > 6 twice)
    (19, 37, 32, 8, 0, 0),  // ragged both sides, no padding, step 4: only the one-row loop
    (40, 75, 96, 32, 1, 0), // step 3: four-rows loop, then the one-row loop (rows 24, 27, 30)
    (45, 23, 16, 16, 1, 3), // step 1, a launched grid of 3 for 9 tiles: the tile loop
    (33, 70, 8, 2, 0, 0),   // step 4 over a tile of 2: threads with no tile rows
    (12, 9, 4, 1, 1, 5),    // 1 x 1 tiles padded, 108 tiles over a grid of 5
    (9, 100, 16, 8, 0, 0),  // a short side of SLAB_SIDE + 1: tiles, ragged along it
    (100, 9, 24, 8, 1, 0),  // the tall one, step 3
    (5, 50, 4, 2, 0, 0),    // a short side of 5 but 4 floats a tile: no slab, tiles
    (30, 30, 16, 4, 1, 1),  // a grid of one block for all 64 tiles
];

/// Slabs: each draw names the path it is there for. `width` is `tile (tile + pad) / short`.
const THIN_CASES: &[Case] = &[
    (1, 1000, 16, 8, 1, 0),  // one row: width 72, four-loads loop then one load; last slab 64
    (1000, 1, 16, 8, 1, 0),  // one column (tall): the packed input, strided output
    (8, 300, 16, 8, 0, 0),   // a short side of SLAB_SIDE, no padding: width 8, slabs whole
    (300, 8, 16, 8, 1, 0),   // tall, width 9: last slab of 3 positions
    (5, 5, 8, 4, 1, 0),      // square (wide): width 4, last slab of one
    (3, 777, 32, 16, 1, 4),  // width 90, 9 slabs over a launched grid of 4
    (777, 6, 16, 8, 0, 2),   // tall, width 10, 78 slabs over a grid of 2
    (1, 7, 1, 1, 0, 0),      // a 1-float tile: slabs of one position, a block of one
    (7, 2, 64, 32, 1, 0),    // one slab, fewer elements than threads
    (2, 4099, 64, 16, 1, 3), // width 136, 31 slabs over a grid of 3, four loads a thread
];

fn dims(config: TransposeConfig, rows: u32, cols: u32, grid: u32) -> LaunchDims {
    let shared = config.fits().expect("a config the entries take");
    let grid = if grid == 0 { config.grid(rows, cols) } else { grid };
    LaunchDims { grid, block: config.block, shared_bytes: shared, cluster: 1 }
}

/// The transpose by the entry the host picks for the shape (`host/src/families/transpose`);
/// the output starts as NaNs, so that an element no thread writes shows.
fn run(cpu: &Cpu, x: &[f32], (rows, cols, block, tile, pad, grid): Case) -> (&'static str, Vec<f32>) {
    let config = TransposeConfig { block, tile, pad };
    let name = if config.slab(rows, cols).is_some() { "transpose_thin_f32" } else { "transpose_f32" };
    let input = mem(x);
    let output = CpuMem::filled(x.len() * 4, 0xFF).expect("host allocation");
    let args = [Arg::Mem(&input), Arg::Mem(&output), Arg::U32(rows), Arg::U32(cols), Arg::U32(tile), Arg::U32(pad)];
    launch(cpu, entry(transpose::KERNELS, name), dims(config, rows, cols, grid), &args);
    (name, output.to_vec())
}

fn check(cases: &[Case], want_entry: &str, seed: u64) {
    let cpu = cpu();
    for (k, &case) in cases.iter().enumerate() {
        let (rows, cols) = (case.0 as usize, case.1 as usize);
        let x = floats(rows * cols, seed + k as u64, 1.0);
        let (name, got) = run(&cpu, &x, case);
        assert_eq!(name, want_entry, "the draw {case:?} is there for {want_entry}");
        // A transpose moves floats: exactly equal.
        let want = dynsmem_reference::transpose(&x, rows, cols);
        assert_close(&format!("{name} {case:?}"), &got, &want, None, Tol::EXACT);
    }
}

#[test]
fn tiles_match_the_reference_on_every_path() {
    check(TILE_CASES, "transpose_f32", 10);
}

#[test]
fn slabs_match_the_reference_on_every_path() {
    check(THIN_CASES, "transpose_thin_f32", 100);
}

/// Launches `name` and expects a trap (a config the entry refuses).
fn traps(name: &str, (rows, cols, block, tile, pad): (u32, u32, u32, u32, u32), why: &str) {
    let (input, output) = (zeros::<f32>((rows * cols) as usize), zeros::<f32>((rows * cols) as usize));
    let args = [Arg::Mem(&input), Arg::Mem(&output), Arg::U32(rows), Arg::U32(cols), Arg::U32(tile), Arg::U32(pad)];
    let dims = LaunchDims { grid: 1, block, shared_bytes: 1024, cluster: 1 };
    match cpu().launch(entry(transpose::KERNELS, name), dims, &args) {
        Err(LaunchError::Fault { fault, .. }) if matches!(fault.kind, FaultKind::Trap { .. }) => {}
        other => panic!("{name} with {why}: expected a trap, got {:?}", other.map_err(|e| e.to_string())),
    }
}

#[test]
fn the_entries_trap_on_configs_they_refuse() {
    traps("transpose_f32", (4, 4, 12, 8, 1), "a block that is not a multiple of the tile");
    traps("transpose_f32", (4, 4, 4, 8, 1), "a block smaller than the tile");
    traps("transpose_thin_f32", (9, 9, 16, 8, 1), "a matrix the config cuts in square tiles");
    // 40000 x 40000 floats: the slab exists, the layout's bytes overflow u32.
    traps("transpose_thin_f32", (2, 4, 16, 40_000, 0), "a layout past u32 bytes");
}

#[test]
fn config_rules_match_their_definitions() {
    let c = |block, tile, pad| TransposeConfig { block, tile, pad };
    // fits: block a positive multiple of tile, and the layout's bytes.
    assert_eq!(c(256, 64, 1).fits(), Ok(64 * 65 * 4));
    assert_eq!(c(8, 8, 0).fits(), Ok(8 * 8 * 4));
    for (block, tile) in [(8, 0), (4, 8), (12, 8)] {
        assert_eq!(c(block, tile, 1).fits(), Err(TransposeRefusal::Block { block, tile }), "block {block} tile {tile}");
    }
    // tile + pad overflows: the message shows the size asked (saturated).
    let over = LayoutError::Overflow { offset: 0, len: u32::MAX, elem_bytes: u32::MAX };
    assert_eq!(c(u32::MAX, u32::MAX, 1).layout(), Err(over));
    // tile (tile + pad) overflows.
    assert_eq!(
        c(70_000, 70_000, 0).layout(),
        Err(LayoutError::Overflow { offset: 0, len: 70_000, elem_bytes: 280_000 })
    );
    // The floats fit u32, their bytes do not: the carve's error.
    let fits = c(40_000, 40_000, 0).fits();
    assert!(matches!(fits, Err(TransposeRefusal::Layout(LayoutError::Overflow { .. }))), "{fits:?}");
    assert_eq!(c(12, 8, 1).fits().unwrap_err().to_string(), "block (12) must be a positive multiple of tile (8)");
    assert!(fits.unwrap_err().to_string().starts_with("shared-memory layout: "));

    // slab: a short side of 1..=SLAB_SIDE and at least one position a line.
    let t = c(16, 8, 1);
    assert_eq!(t.slab(3, 100), Some(Slab { short: 3, long: 100, width: 24, wide: true }));
    assert_eq!(t.slab(100, SLAB_SIDE), Some(Slab { short: SLAB_SIDE, long: 100, width: 9, wide: false }));
    assert_eq!(t.slab(4, 4), Some(Slab { short: 4, long: 4, width: 18, wide: true }));
    assert_eq!(t.slab(SLAB_SIDE + 1, 100), None);
    assert_eq!(t.slab(0, 100), None);
    assert_eq!(c(2, 2, 0).slab(5, 100), None, "4 floats, 5 lines");
    assert_eq!(c(u32::MAX, u32::MAX, 1).slab(1, 10), None, "tile + pad overflows");
    assert_eq!(c(70_000, 70_000, 0).slab(1, 10), None, "tile (tile + pad) overflows");

    // tiles and grid: slabs where cut so, square tiles otherwise; grid within 1..=MAX_GRID.
    assert_eq!(t.tiles(3, 100), 100u64.div_ceil(24));
    assert_eq!(t.tiles(20, 17), 3 * 3);
    assert_eq!(t.square_tiles(3, 100), 13);
    assert_eq!(c(0, 0, 0).square_tiles(3, 5), 15, "a tile of 0 counts as 1");
    assert_eq!(t.grid(0, 0), 1);
    assert_eq!(t.grid(20, 17), 9);
    assert_eq!(t.grid(1 << 20, 1 << 20), MAX_GRID);
}
