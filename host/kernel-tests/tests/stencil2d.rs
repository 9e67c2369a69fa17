//! The 2-D stencil (device-kernels/src/stencil2d.rs): both const-radius entries
//! (`stencil2d_f32_r1`, `stencil2d_f32_r2`) and the any-radius entry (`stencil2d_f32`) at
//! every radius it takes, 1 to `MAX_RADIUS` (1 and 2 too). The draws take tiles whose sides
//! do not divide the image, images smaller than one tile and smaller than the radius, one
//! row and one column, widths that are not whole vectors (the pixel-by-pixel loads and
//! stores), interior tiles (the unclamped asynchronous copy), strips shorter and longer than
//! the register window, launched grids smaller than the tiles (the tile loop) and larger.
//!
//! The weights are non-symmetric integers on integer images, so every sum is exact in f32
//! whatever its order and a single wrong tap, a transposed or mirrored weight index, or a
//! wrong clamp on any of the four edges changes an output: those draws compare exactly.
//! Box and Gaussian blurs on [0, 1) images run beside them within a stated tolerance.

use dynsmem_cpu::FaultKind;
use dynsmem_kernel_tests::*;
use dynsmem_kernels::stencil2d::{self, ANY_RADIUS_ENTRY, MAX_RADIUS, RADII, Stencil2dConfig, const_entry, halo};

/// The weights of a draw.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Weights {
    /// Integers in `-16..=16` but 0, none symmetric (checked); on an image of integers in
    /// `0..64`: exact sums.
    Int,
    /// All `1 / K^2` (`host/src/families/stencil2d/mod.rs::weights`, box).
    Box,
    /// `exp(-(dx^2 + dy^2) / (2 sigma^2))`, `sigma = (r + 1) / 2`, normalised (the host's
    /// Gaussian).
    Gauss,
}

use Weights::{Box, Gauss, Int};

/// `(width, height, radius, (block, tile_w, tile_h), grid, weights)`; `grid` 0: the
/// config's own (a block per tile).
type Case = (u32, u32, u32, Config, u32, Weights);

/// `(block, tile_w, tile_h)`.
type Config = (u32, u32, u32);

/// The const-radius entries' draws, `Case` less the radius: each runs on both entries (K = 3
/// and 5, so a strip of 4 is a window turn and a step at 3x3, a turn cut short at 5x5). Each
/// names the path it is there for.
const CONST_CASES: &[(u32, u32, Config, u32, Weights)] = &[
    (1, 1, (1, 4, 1), 0, Int),      // one pixel: every tap clamped on all four sides
    (1, 9, (2, 4, 4), 0, Int),      // one column: the pixel-by-pixel loads and stores
    (13, 1, (2, 8, 2), 0, Int),     // one row, a ragged right tile
    (3, 2, (4, 8, 8), 0, Int),      // an image smaller than one tile and than the window
    (16, 12, (1, 4, 1), 0, Int),    // strips of one row (shorter than the window)
    (24, 21, (2, 4, 8), 0, Int),    // strips of four, a ragged bottom tile
    (28, 22, (1, 4, 7), 3, Int),    // strips of 7, grid 3 of 28 tiles: the tile loop
    (36, 30, (3, 12, 11), 2, Int),  // strips of 11 (two window turns and more), three groups, grid 2
    (40, 26, (6, 12, 4), 0, Int),   // interior tiles (the asynchronous copy), two strips of two
    (37, 23, (4, 8, 6), 5, Int),    // width not whole vectors: no vector load or store, grid 5
    (34, 19, (8, 16, 6), 1, Int),   // one block for every tile, strips of 3; 8 threads' loads wrap rows of 6 vectors
    (20, 16, (2, 8, 5), 40, Int),   // a grid larger than the tiles: idle blocks
    (64, 40, (16, 16, 16), 0, Int), // 16 threads, strips of 4, interior tiles
    (33, 17, (4, 8, 4), 0, Box),    // box blur
    (44, 31, (8, 16, 8), 0, Gauss), // Gaussian blur, interior tiles
    (29, 27, (2, 4, 10), 7, Gauss), // Gaussian blur, ragged, the tile loop
];

/// The problem: `(width, height, radius)`.
type Shape = (u32, u32, u32);

/// The any-radius entry's draws at radius `r`, 1 to [`MAX_RADIUS`]: configs rotate with `r`.
fn any_cases(r: u32) -> Vec<Case> {
    // (block, tile_w, tile_h): one or several groups, strips of 1 to 3 rows.
    const CONFIGS: [Config; 6] = [(1, 4, 1), (2, 4, 2), (2, 8, 3), (3, 12, 2), (4, 8, 4), (6, 12, 2)];
    let cfg = CONFIGS[r as usize % CONFIGS.len()];
    let (_, tw, th) = cfg;
    let h = halo(r);
    // Interior: the tile at x0 (the first multiple of tile_w past the halo) and y0 (past the
    // radius) has its whole border inside the image; the tiles around it are clamped on every
    // side (the image reaches one vector right of the interior tile's border and one row
    // below it). Width whole vectors: vector loads in the clamped tiles too.
    let (x0, y0) = (h.next_multiple_of(tw), r.next_multiple_of(th));
    let interior = (x0 + tw + h + 4, y0 + th + r + 1, r, cfg, 0, Int);
    // Ragged: a width not whole vectors (5, 7, 9: smaller than the radius past r = 9), a
    // height of r + 2; grid 2 (fewer than the tiles): the tile loop.
    let ragged = (5 + 2 * (r % 3), r + 2, r, (2, 4, 2), 2, Int);
    let mut cases = vec![interior, ragged];
    // Thin images and blurs at a few radii (each S = halo - r class among them).
    match r {
        3 => cases.push((1, 7, r, (1, 4, 1), 0, Int)),  // one column
        4 => cases.push((10, 1, r, (2, 8, 1), 0, Int)), // one row, ragged
        5 => cases.push((1, 1, r, (2, 4, 2), 0, Int)),  // one pixel
        6 => cases.push((24, 20, r, (4, 8, 4), 0, Gauss)),
        7 => cases.push((21, 19, r, (2, 4, 2), 3, Box)),
        32 => cases.push((3, 2, r, (4, 8, 8), 3, Int)), // a 65x65 window over a 3x2 image; 3 blocks, 1 tile
        _ => {}
    }
    cases
}

fn weights(radius: u32, kind: Weights, seed: u64) -> Vec<f32> {
    let k = (2 * radius + 1) as usize;
    match kind {
        Int => {
            let w: Vec<f32> = below(k * k, seed, 32)
                .iter()
                .map(|&v| if v < 16 { v as f32 - 16.0 } else { v as f32 - 15.0 })
                .collect();
            // Not symmetric under a transposition or either mirror, so a swapped index shows.
            let at = |dy: usize, dx: usize| w[dy * k + dx];
            let differs = |f: &dyn Fn(usize, usize) -> f32| (0..k * k).any(|i| w[i] != f(i / k, i % k));
            assert!(differs(&|y, x| at(x, y)), "draw {seed}: symmetric under transposition");
            assert!(differs(&|y, x| at(y, k - 1 - x)), "draw {seed}: symmetric left to right");
            assert!(differs(&|y, x| at(k - 1 - y, x)), "draw {seed}: symmetric top to bottom");
            w
        }
        Box => vec![1.0 / (k * k) as f32; k * k],
        Gauss => {
            let (r, sigma) = (radius as f64, (radius as f64 + 1.0) / 2.0);
            let raw: Vec<f64> = (0..k * k)
                .map(|i| {
                    let (dx, dy) = ((i % k) as f64 - r, (i / k) as f64 - r);
                    (-(dx * dx + dy * dy) / (2.0 * sigma * sigma)).exp()
                })
                .collect();
            let sum: f64 = raw.iter().sum();
            raw.iter().map(|w| (w / sum) as f32).collect()
        }
    }
}

/// Launches `name` on `image` and returns its output (NaN-filled before, so a pixel no
/// thread writes shows).
fn run(
    cpu: &Cpu,
    name: &str,
    image: &[f32],
    w: &[f32],
    (width, height, radius): Shape,
    cfg: Stencil2dConfig,
    grid: u32,
) -> Vec<f32> {
    let (input, wm, output) = (mem(image), mem(w), mem(&vec![f32::NAN; image.len()]));
    let shared_bytes = cfg.shared_bytes(radius).expect("layout");
    let grid = if grid == 0 { cfg.grid(width, height) } else { grid };
    let dims = LaunchDims { grid, block: cfg.block, shared_bytes, cluster: 1 };
    let mut args = vec![
        Arg::Mem(&input),
        Arg::Mem(&wm),
        Arg::Mem(&output),
        Arg::U32(width),
        Arg::U32(height),
        Arg::U32(cfg.tile_w),
        Arg::U32(cfg.tile_h),
    ];
    if name == ANY_RADIUS_ENTRY {
        args.push(Arg::U32(radius));
    }
    launch(cpu, entry(stencil2d::KERNELS, name), dims, &args);
    output.to_vec()
}

/// Runs draw `case` on entry `name` and checks it against the reference.
fn check(cpu: &Cpu, name: &str, case: Case, seed: u64) {
    let (width, height, radius, (block, tile_w, tile_h), grid, kind) = case;
    let cfg = Stencil2dConfig { block, tile_w, tile_h };
    assert!(cfg.fits(), "draw {case:?}: the config does not fit");
    let n = (width * height) as usize;
    let image: Vec<f32> = match kind {
        Int => below(n, seed, 64).iter().map(|&v| v as f32).collect(),
        Box | Gauss => floats(n, seed, 0.5).iter().map(|v| v + 0.5).collect(),
    };
    let w = weights(radius, kind, seed + 1);
    let got = run(cpu, name, &image, &w, (width, height, radius), cfg, grid);
    let (want, scale) = dynsmem_reference::stencil2d(&image, width as usize, height as usize, radius as usize, &w);
    let what = format!("{name} {case:?}");
    match kind {
        // Integers up to 65^2 x 63 x 16 < 2^24: every partial sum is exact in f32.
        Int => assert_close(&what, &got, &want, None, Tol::EXACT),
        // K^2 products summed in f32, each fused step rounding once: at most K^2 half-ulps
        // (u) of the sum of magnitudes; admitted twice that (K^2 eps). The reference sums
        // the same f32 weights in f64.
        Box | Gauss => {
            let taps = ((2 * radius + 1) * (2 * radius + 1)) as f64;
            let tol = Tol { abs: 1e-30, rel: taps * f32::EPSILON as f64 };
            assert_close(&what, &got, &want, Some(&scale), tol)
        }
    }
}

#[test]
fn const_radius_entries_match_the_reference_on_every_path() {
    let cpu = cpu();
    for radius in RADII {
        let name = const_entry(radius).expect("a const entry for each of RADII");
        for (k, &(width, height, cfg, grid, kind)) in CONST_CASES.iter().enumerate() {
            let case = (width, height, radius, cfg, grid, kind);
            check(&cpu, name, case, 1000 * radius as u64 + 2 * k as u64);
        }
    }
}

#[test]
fn any_radius_entry_matches_the_reference_at_every_radius() {
    let cpu = cpu();
    for r in 1..=MAX_RADIUS {
        for (k, case) in any_cases(r).into_iter().enumerate() {
            check(&cpu, ANY_RADIUS_ENTRY, case, 100_000 + 100 * r as u64 + 2 * k as u64);
        }
    }
}

/// The entries trap on a launch their contract refuses, before touching memory.
#[test]
fn refused_launches_trap() {
    let cpu = cpu();
    let image = [1.0f32; 16];
    let w = vec![1.0f32; 25];
    let (input, wm, output) = (mem(&image), mem(&w), zeros::<f32>(16));
    let refused = |name: &str, (tile_w, tile_h): (u32, u32), block: u32, radius: Option<u32>| {
        let mut args = vec![
            Arg::Mem(&input),
            Arg::Mem(&wm),
            Arg::Mem(&output),
            Arg::U32(4),
            Arg::U32(4),
            Arg::U32(tile_w),
            Arg::U32(tile_h),
        ];
        args.extend(radius.map(Arg::U32));
        let dims = LaunchDims { grid: 1, block, shared_bytes: 4096, cluster: 1 };
        match cpu.launch(entry(stencil2d::KERNELS, name), dims, &args) {
            Err(LaunchError::Fault { fault, .. }) => {
                assert!(matches!(fault.kind, FaultKind::Trap { .. }), "{name} {tile_w}x{tile_h} {radius:?}: {fault}")
            }
            other => panic!("{name} {tile_w}x{tile_h} block {block} radius {radius:?}: {other:?}, not a trap"),
        }
    };
    for radius in RADII {
        let name = const_entry(radius).unwrap();
        refused(name, (6, 4), 1, None); // tile_w not whole vectors
        refused(name, (8, 3), 4, None); // tile_h not a multiple of the thread rows
        refused(name, (4, u32::MAX), 1, None); // fits, but tile_h + 2r overflows the layout
    }
    refused(ANY_RADIUS_ENTRY, (4, 4), 3, Some(1)); // tile_h not a multiple of the 3 thread rows
    refused(ANY_RADIUS_ENTRY, (0, 4), 1, Some(1)); // no column group
    refused(ANY_RADIUS_ENTRY, (16, 4), 2, Some(1)); // fewer threads than the 4 groups
    refused(ANY_RADIUS_ENTRY, (12, 4), 4, Some(1)); // 4 threads over 3 groups
    refused(ANY_RADIUS_ENTRY, (4, 0), 1, Some(1)); // no rows
    refused(ANY_RADIUS_ENTRY, (4, 4), 1, Some(0)); // radius 0
    refused(ANY_RADIUS_ENTRY, (4, 4), 1, Some(MAX_RADIUS + 1)); // past MAX_RADIUS: no layout
}

/// Each radius of `RADII` names an entry of the table and only those do; the any-radius
/// entry is in the table.
#[test]
fn every_radius_of_its_own_has_an_entry() {
    for r in 0..=MAX_RADIUS + 1 {
        match const_entry(r) {
            Some(name) => {
                assert!(RADII.contains(&r), "radius {r} has {name} but is not in RADII");
                assert_eq!(entry(stencil2d::KERNELS, name).name, format!("stencil2d_f32_r{r}"));
            }
            None => assert!(!RADII.contains(&r), "radius {r} of RADII has no entry"),
        }
    }
    entry(stencil2d::KERNELS, ANY_RADIUS_ENTRY);
    assert_eq!(stencil2d::KERNELS.len(), RADII.len() + 1, "an entry of the table no test runs");
}
