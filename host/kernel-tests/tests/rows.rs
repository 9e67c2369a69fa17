//! Softmax and RMSNorm on the row skeleton (device-kernels/src/rows.rs, softmax.rs,
//! rmsnorm.rs): every row length class (shorter than a vector, not a multiple of 4, one
//! vector per thread or several, longer than a block holds in registers), row groups of
//! every width (several rows a block, a block per row), blocks that are not a power of two,
//! clusters that split a row (RMSNorm then holds its weights), launched grids smaller than
//! the rows need (the row-step loop), and rows of -inf, NaN and +inf.

use dynsmem_kernel_tests::*;
use dynsmem_kernels::rows::RowConfig;
use dynsmem_kernels::{rmsnorm, softmax};

/// `(rows, cols, block, cluster, grid)`; `grid` 0: the config's own.
type Case = (u32, u32, u32, u32, u32);

/// The draws: each names the path it is there for.
const CASES: &[Case] = &[
    (3, 1, 32, 1, 0),     // one float a row: every vector an edge
    (5, 3, 32, 1, 0),     // shorter than a vector, shifts 0..3 by row
    (7, 4, 64, 1, 0),     // one whole vector a row, 64 rows' groups a block
    (9, 130, 64, 1, 0),   // an edge at each end, rows shifted by 2
    (6, 517, 128, 1, 0),  // ragged, a group of 32 of a block of 128 per row
    (4, 1000, 256, 1, 0), // a block per row, four vectors a thread
    (3, 4103, 256, 1, 0), // more than four vectors a thread, ragged
    (5, 700, 96, 1, 0),   // a block that is not a power of two: one row a block
    (11, 64, 64, 1, 2),   // a launched grid smaller than the rows: the row-step loop
    (13, 333, 128, 1, 3), // several steps, several rows a block, the last step partly past the rows
    (4, 2051, 64, 2, 0),  // a row split over a cluster of two
    (3, 5003, 128, 4, 4), // a cluster of four, one cluster for three rows: the step loop with clusters
    (2, 9, 64, 4, 0),     // a cluster wider than the row: blocks with empty parts
    (7, 3001, 64, 2, 2),  // two clusters for seven rows: the step loop with clusters
];

fn dims(config: RowConfig, rows: u32, cols: u32, grid: u32, held: bool) -> LaunchDims {
    let shared = config.shared_bytes(cols, config.holds(held)).expect("layout");
    let grid = if grid == 0 { config.grid(rows, cols) } else { grid * config.cluster };
    LaunchDims { grid, block: config.block, shared_bytes: shared, cluster: config.cluster }
}

fn softmax_case(cpu: &Cpu, x: &[f32], (rows, cols, block, cluster, grid): Case) -> Vec<f32> {
    let config = RowConfig { block, cluster };
    let (input, output) = (mem(x), zeros::<f32>(x.len()));
    let args = [Arg::Mem(&input), Arg::Mem(&output), Arg::U32(rows), Arg::U32(cols)];
    launch(cpu, entry(softmax::KERNELS, "softmax_f32"), dims(config, rows, cols, grid, false), &args);
    output.to_vec()
}

#[test]
fn softmax_matches_the_reference_on_every_path() {
    let cpu = cpu();
    for (k, &case) in CASES.iter().enumerate() {
        let (rows, cols) = (case.0 as usize, case.1 as usize);
        // A range of 100 (every other draw): a shift by anything but the row's maximum
        // overflows exp (e^88 is f32's largest), though softmax is shift-invariant.
        let x = floats(rows * cols, 10 + k as u64, if k % 2 == 0 { 50.0 } else { 8.0 });
        let got = softmax_case(&cpu, &x, case);
        // The host's exp2 and a sum of `cols` terms in f32: 2 ulp per term of the tree.
        let rel = 1e-6 + 2.0 * (cols as f64).log2().max(1.0) * f32::EPSILON as f64;
        let want = dynsmem_reference::softmax(&x, rows, cols);
        assert_close(&format!("softmax {case:?}"), &got, &want, None, Tol { abs: 1e-12, rel });
    }
}

#[test]
fn softmax_of_infinite_and_nan_rows() {
    let cpu = cpu();
    let cols = 37;
    // Row 0: one +inf (NaN: inf - inf); row 1: only -inf (NaN: 0 / 0); row 2: a NaN; row 3:
    // -inf among finite values (weight 0); row 4: finite.
    let mut x = floats(5 * cols, 3, 4.0);
    x[5] = f32::INFINITY;
    x[cols..2 * cols].fill(f32::NEG_INFINITY);
    x[2 * cols + 7] = f32::NAN;
    x[3 * cols + 1] = f32::NEG_INFINITY;
    let got = softmax_case(&cpu, &x, (5, cols as u32, 32, 1, 0));
    for (r, what) in [(0, "a +inf"), (1, "only -inf"), (2, "a NaN")] {
        assert!(got[r * cols..(r + 1) * cols].iter().all(|v| v.is_nan()), "softmax of a row with {what}: {got:?}");
    }
    assert_eq!(got[3 * cols + 1], 0.0, "a -inf among finite values weighs 0");
    let want = dynsmem_reference::softmax(&x[3 * cols..], 2, cols);
    assert_close("softmax's finite rows", &got[3 * cols..], &want, None, Tol { abs: 1e-12, rel: 2e-6 });
}

fn rmsnorm_case(cpu: &Cpu, x: &[f32], g: &[f32], eps: f32, (rows, cols, block, cluster, grid): Case) -> Vec<f32> {
    let config = RowConfig { block, cluster };
    let (xm, gm, ym) = (mem(x), mem(g), zeros::<f32>(x.len()));
    let args = [Arg::Mem(&xm), Arg::Mem(&gm), Arg::Mem(&ym), Arg::U32(rows), Arg::U32(cols), Arg::F32(eps)];
    launch(cpu, entry(rmsnorm::KERNELS, "rmsnorm_f32"), dims(config, rows, cols, grid, true), &args);
    ym.to_vec()
}

#[test]
fn rmsnorm_matches_the_reference_on_every_path() {
    let cpu = cpu();
    for (k, &case) in CASES.iter().enumerate() {
        let (rows, cols) = (case.0 as usize, case.1 as usize);
        let x = floats(rows * cols, 100 + k as u64, 3.0);
        // Weights away from 0, so that every element's weight counts.
        let g: Vec<f32> = floats(cols, 200 + k as u64, 1.0).iter().map(|w| 1.5 + w).collect();
        let eps = 1e-3 * (1 + k) as f32;
        let got = rmsnorm_case(&cpu, &x, &g, eps, case);
        // A sum of `cols` squares in f32, a square root, two products.
        let rel = 8.0 * f32::EPSILON as f64 + 2.0 * (cols as f64).log2().max(1.0) * f32::EPSILON as f64;
        let want = dynsmem_reference::rmsnorm(&x, &g, rows, cols, eps);
        assert_close(&format!("rmsnorm {case:?} eps {eps}"), &got, &want, None, Tol { abs: 1e-12, rel });
    }
}

#[test]
fn rmsnorm_of_rows_with_an_infinity_or_a_nan() {
    let cpu = cpu();
    let cols = 41;
    // Row 1 holds +inf: its mean square is inf, so its finite elements give 0 and the
    // infinity NaN (inf x 0), as the definition does. Row 2 holds a NaN: all NaN.
    let mut x = floats(4 * cols, 5, 2.0);
    x[cols + 3] = f32::INFINITY;
    x[2 * cols + 9] = f32::NAN;
    let g = vec![1.0; cols];
    let got = rmsnorm_case(&cpu, &x, &g, 1e-5, (4, cols as u32, 64, 1, 0));
    assert!(got[cols + 3].is_nan() && got[cols + 4] == 0.0, "row 1 holds +inf: {:?}", &got[cols..2 * cols]);
    assert!(got[2 * cols..3 * cols].iter().all(|v| v.is_nan()), "row 2 holds a NaN: {:?}", &got[2 * cols..3 * cols]);
    let want = dynsmem_reference::rmsnorm(&x, &g, 4, cols, 1e-5);
    assert_close("rmsnorm with an infinity and a NaN", &got, &want, None, Tol { abs: 1e-12, rel: 2e-6 });
}

/// Views that start inside their buffers, each at another float past a 16-byte boundary (a
/// slice of a user's tensor): the input's, the output's and the weights' vectors then disagree
/// on alignment, and the kernels take the lane-by-lane stores and weight reads.
#[test]
fn rows_of_views_with_different_alignments() {
    let cpu = cpu();
    for (k, &(rows, cols, block, cluster)) in [(5u32, 203u32, 64u32, 1u32), (3, 1029, 128, 2)].iter().enumerate() {
        let config = RowConfig { block, cluster };
        let n = (rows * cols) as usize;
        let x = floats(n, 300 + k as u64, 20.0);
        let g: Vec<f32> = floats(cols as usize, 400 + k as u64, 1.0).iter().map(|w| 1.5 + w).collect();
        // Input 1 float past its buffer's start, output 3, weights 2.
        let pad = |v: &[f32], at: usize| [vec![0.0; at], v.to_vec()].concat();
        let (xm, gm) = (mem(&pad(&x, 1)), mem(&pad(&g, 2)));
        let ym = zeros::<f32>(n + 3);
        let (xa, ya, ga) = (Arg::At(&xm, 4), Arg::At(&ym, 12), Arg::At(&gm, 8));
        let tol = Tol { abs: 1e-12, rel: 2e-6 };

        let args = [xa, ya, Arg::U32(rows), Arg::U32(cols)];
        launch(&cpu, entry(softmax::KERNELS, "softmax_f32"), dims(config, rows, cols, 0, false), &args);
        let got: Vec<f32> = ym.to_vec();
        assert_eq!(&got[..3], &[0.0; 3], "softmax wrote before its output view");
        let want = dynsmem_reference::softmax(&x, rows as usize, cols as usize);
        assert_close(&format!("softmax of views {rows}x{cols}"), &got[3..], &want, None, tol);

        let args = [xa, ga, ya, Arg::U32(rows), Arg::U32(cols), Arg::F32(1e-4)];
        launch(&cpu, entry(rmsnorm::KERNELS, "rmsnorm_f32"), dims(config, rows, cols, 0, true), &args);
        let got: Vec<f32> = ym.to_vec();
        let want = dynsmem_reference::rmsnorm(&x, &g, rows as usize, cols as usize, 1e-4);
        assert_close(&format!("rmsnorm of views {rows}x{cols}"), &got[3..], &want, None, tol);
    }
}

/// A row whose layout overflows 32 bits (the host refuses it before launch) traps in every
/// thread instead of carving a wrapped-around region.
#[test]
fn a_row_past_the_layout_traps() {
    let cpu = cpu();
    let (x, y) = (zeros::<f32>(4), zeros::<f32>(4));
    let dims = LaunchDims { grid: 1, block: 32, shared_bytes: 1024, cluster: 1 };
    let args = [Arg::Mem(&x), Arg::Mem(&y), Arg::U32(0), Arg::U32(u32::MAX - 3)];
    match cpu.launch(entry(softmax::KERNELS, "softmax_f32"), dims, &args) {
        Err(LaunchError::Fault { fault, .. }) => {
            assert!(matches!(fault.kind, dynsmem_cpu::FaultKind::Trap { .. }), "expected a trap: {fault}")
        }
        other => panic!("a row of 2^32 - 4 floats launched: {:?}", other.err()),
    }
}

/// The layout's arithmetic as its documentation states it: the host launches with it, so a
/// wrong grid, group or size launches wrong even where the kernel is right. Bytes: the parts
/// (`rows_per_block` of `part` floats, 16-byte aligned), the held vector, two scratch lanes of
/// `block` floats rounded to vectors, two partials.
#[test]
fn row_configs_are_what_their_documentation_says() {
    let b = RowConfig::blocks;
    let c2 = |block| RowConfig { block, cluster: 2 };
    // Row groups: the fewest threads (a power of two) leaving each at most four vectors.
    assert_eq!((b(256).row_threads(4096), b(256).rows_per_block(4096)), (256, 1));
    assert_eq!((b(256).row_threads(512), b(256).rows_per_block(512)), (32, 8));
    assert_eq!((b(256).row_threads(16), b(256).row_threads(17), b(256).row_threads(1)), (1, 2, 1));
    assert_eq!(b(8).row_threads(4096), 8, "at most the block");
    assert_eq!((b(96).row_threads(8), c2(256).row_threads(8)), (96, 256), "the whole block");
    // Parts: the cols + 3 slots a row may take, over the cluster, in whole vectors.
    assert_eq!((b(64).part(130), c2(64).part(130), c2(64).held(130)), (136, 68, 76));
    assert!(c2(64).holds(true) && !c2(64).holds(false) && !b(64).holds(true));
    assert_eq!(b(64).shared_bytes(130, false), Ok(136 * 4 * 4 + 2 * 64 * 4 + 8));
    assert_eq!(c2(64).shared_bytes(130, true), Ok(68 * 4 + 76 * 4 + 2 * 64 * 4 + 8));
    assert_eq!(b(30).shared_bytes(4, false), Ok(8 * 4 + 2 * 32 * 4 + 8), "a part of 7 slots, lanes of 32");
    // 32768 floats: 128 KB in one block, 64 KB a block in clusters of two (and the scratch).
    assert_eq!(b(1024).shared_bytes(32768, false), Ok(32772 * 4 + 2 * 1024 * 4 + 8));
    assert_eq!(c2(1024).shared_bytes(32768, false), Ok(16388 * 4 + 2 * 1024 * 4 + 8));
    // Grids: a cluster per `rows_per_block` rows, at least one, at most MAX_GRID blocks.
    assert_eq!((b(64).grid(9, 130), b(64).step(9, 130)), (3, 12));
    assert_eq!((b(64).grid(0, 130), c2(64).grid(5, 100)), (1, 10));
    assert_eq!(b(256).grid(1_000_000, 4096), dynsmem_kernels::rows::MAX_GRID);
    assert_eq!((c2(256).grid(1_000_000, 8192), c2(256).step(1_000_000, 8192)), (65534, 32767));
    // A block with no whole-vector pitch: the scratch's two lanes of 4-byte floats overflow.
    let overflow = dynsmem_kernels::layout::LayoutError::Overflow { offset: 0, len: u32::MAX, elem_bytes: 8 };
    assert_eq!(b(u32::MAX).shared_bytes(4, false), Err(overflow));
}
