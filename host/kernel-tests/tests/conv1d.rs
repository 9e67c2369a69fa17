//! 1-D convolution (device-kernels/src/conv1d.rs, with stage.rs and vector.rs): both
//! entries of its KERNELS table (4 and 8 outputs per thread), odd tap counts from 3 to
//! MAX_TAPS whose padded taps take the two-step walk only, its tail only, or both, lengths
//! that are not a multiple of the vector or the tile; tiles inside the input (staged by
//! async copies), tiles at its ends (vector loads, lane by lane past its ends), inputs and
//! outputs that start off a 16-byte boundary (lane-by-lane loads and stores throughout);
//! blocks that stage their tile four vectors a thread at a time or one; launched grids
//! smaller than the tiles (the tile loop). Then the traps of tap counts the entries refuse,
//! and the config's arithmetic (padded taps, layout, grid, entry names) against its
//! definitions.

use dynsmem_kernel_tests::*;
use dynsmem_kernels::conv1d::{self, Conv1dConfig, MAX_GRID, MAX_TAPS, OUTPUTS_PER_THREAD, halo_before};
use dynsmem_kernels::gpu::host::{FaultKind, GlobalBuffer};
use dynsmem_kernels::layout::LayoutError;

/// `(n, taps, outputs per thread, block, grid, x offset, y offset)`; `grid` 0: the
/// config's own; offsets in floats past a 16-byte boundary (0: vector accesses).
type Case = (u64, u32, u32, u32, u32, u64, u64);

/// The draws: each names the path it is there for. `Kp` is the padded taps, `T` the
/// outputs a block; R = 4 walks `Kp / 4` vectors a step pair of 2, R = 8 a pair of 4.
const CASES: &[Case] = &[
    (1000, 3, 4, 8, 0, 0, 0), // R 4, Kp 8: one step pair, no tail; T 32: inside tiles, a ragged last
    (999, 9, 4, 8, 0, 0, 0),  // R 4, Kp 12: a pair and the tail; n odd: a lane-by-lane last store
    (1001, 129, 4, 4, 0, 0, 0), // R 4, MAX_TAPS, Kp 132: 16 pairs and the tail, weights 33 per thread,
    //   the tile staged four vectors a thread
    (517, 11, 4, 16, 5, 0, 0),  // R 4, Kp 16: two pairs; 33 tiles over a grid of 5
    (1000, 3, 8, 8, 0, 0, 0),   // R 8, Kp 8: the tail only
    (998, 9, 8, 8, 0, 0, 0),    // R 8, Kp 16: one pair, no tail
    (1003, 17, 8, 4, 0, 0, 0),  // R 8, Kp 24: a pair and the tail
    (2050, 129, 8, 8, 3, 0, 0), // R 8, MAX_TAPS, Kp 136: 8 pairs and the tail; a grid of 3
    (300, 65, 8, 32, 0, 0, 0),  // R 8, one tile wider than n: both ends in it, threads past n
    (5, 7, 4, 8, 0, 0, 0),      // n shorter than a vector and than the halo
    (777, 33, 4, 8, 0, 1, 0),   // x off its boundary: every tile loaded lane by lane
    (777, 33, 8, 8, 2, 0, 3),   // y off its boundary: every store lane by lane; a grid of 2
    (603, 5, 8, 16, 0, 3, 1),   // both off
    (64, 127, 4, 16, 0, 0, 0),  // n a multiple of T: no ragged tile, halo wider than n
];

/// `n` floats of `buf` from float `off` as kernel parameter `param` sees them: accesses
/// outside those `n` are reported against it.
fn window(buf: &CpuMem, param: &'static str, off: u64, n: u64) -> (u64, GlobalBuffer) {
    let whole = buf.global(param);
    let (start, bytes) = (off as usize * 4, n as usize * 4);
    let at = GlobalBuffer {
        param,
        base: whole.base + start,
        bytes,
        guard_before: whole.guard_before + start,
        guard_after: whole.guard_after + whole.bytes - start - bytes,
    };
    (buf.addr() + start as u64, at)
}

/// `y = conv(x, w)` by the entry for `r` outputs per thread, `x` and `y` at float offsets
/// of their buffers (the executor's buffers are 16-byte aligned; `Arg::Mem` passes only
/// their starts). `y` starts as NaNs, so that an element no thread writes shows.
fn run(cpu: &Cpu, x: &[f32], w: &[f32], (n, taps, r, block, grid, xo, yo): Case) -> Vec<f32> {
    let config = Conv1dConfig { block, outputs_per_thread: r };
    let name = conv1d::entry_name(r).expect("an entry of the image");
    let mut padded = vec![0.0f32; xo as usize];
    padded.extend_from_slice(x);
    let (xm, wm) = (mem(&padded), mem(w));
    let ym = CpuMem::filled((yo + n) as usize * 4, 0xFF).expect("host allocation");
    let (xa, xb) = window(&xm, "x", xo, n);
    let (ya, yb) = window(&ym, "y", yo, n);
    let grid = if grid == 0 { config.grid(n) } else { grid };
    let shared_bytes = config.shared_bytes(taps).expect("layout");
    let dims = LaunchDims { grid, block, shared_bytes, cluster: 1 };
    let entry = entry(conv1d::KERNELS, name);
    let slots = [xa, wm.addr(), ya, n, taps as u64];
    let buffers = [xb, wm.global("w"), yb];
    let schedule = cpu.schedule();
    // SAFETY: the slots are the entry's (x, w, y, n, taps); each pointer is inside its
    // buffer, all alive until the call returns.
    let res = unsafe { dynsmem_cpu::launch(entry, dims, &slots, &buffers, schedule, schedule.seed ^ n, false) };
    if let Err(fault) = res {
        panic!("{name} at {dims:?}: {fault}");
    }
    ym.to_vec::<f32>()[yo as usize..].to_vec()
}

#[test]
fn conv1d_matches_the_reference_on_every_path() {
    let cpu = cpu();
    for (k, &case) in CASES.iter().enumerate() {
        let (n, taps) = (case.0 as usize, case.1 as usize);
        let x = floats(n, 10 + k as u64, 1.0);
        let w = floats(taps, 200 + k as u64, 1.0);
        let got = run(&cpu, &x, &w, case);
        let (want, scale) = dynsmem_reference::conv1d(&x, &w);
        // A chain of `taps` fused multiply-adds (the padding's zeros add nothing): each
        // rounds once, within half an ulp of the running sum, which is at most sum |w x|.
        let rel = taps as f64 * f32::EPSILON as f64;
        assert_close(&format!("conv1d {case:?}"), &got, &want, Some(&scale), Tol { abs: 0.0, rel });
    }
}

/// Launches `name` with `taps` and expects a trap.
fn traps(name: &str, taps: u32, why: &str) {
    let (x, w, y) = (zeros::<f32>(64), zeros::<f32>(129), zeros::<f32>(64));
    let args = [Arg::Mem(&x), Arg::Mem(&w), Arg::Mem(&y), Arg::U64(64), Arg::U32(taps)];
    let dims = LaunchDims { grid: 1, block: 8, shared_bytes: 4096, cluster: 1 };
    match cpu().launch(entry(conv1d::KERNELS, name), dims, &args) {
        Err(LaunchError::Fault { fault, .. }) if matches!(fault.kind, FaultKind::Trap { .. }) => {}
        other => panic!("{name} with {why}: expected a trap, got {:?}", other.map_err(|e| e.to_string())),
    }
}

#[test]
fn the_entries_trap_on_tap_counts_they_refuse() {
    for name in ["conv1d_f32_r4", "conv1d_f32_r8"] {
        traps(name, 4, "an even tap count");
        traps(name, u32::MAX, "padded taps past u32");
    }
}

#[test]
fn config_rules_match_their_definitions() {
    let c = |block, outputs_per_thread| Conv1dConfig { block, outputs_per_thread };
    // halo_before: K/2 rounded up to a multiple of 4.
    assert_eq!([3, 7, 9, 11, 17, 129].map(halo_before), [4, 4, 4, 8, 8, 64]);
    // padded_taps: K + halo_before(K) - K/2 rounded up to a multiple of max(R, 4).
    for taps in (3..=MAX_TAPS).step_by(2) {
        let shifted = taps + halo_before(taps) - taps / 2;
        for r in OUTPUTS_PER_THREAD {
            assert_eq!(c(8, r).padded_taps(taps), shifted.next_multiple_of(r), "taps {taps} R {r}");
        }
        assert_eq!(c(8, 0).padded_taps(taps), shifted.next_multiple_of(4), "R 0 rounds to 4");
    }
    assert_eq!(c(8, 4).padded_taps(u32::MAX), u32::MAX, "saturates");

    assert_eq!((c(16, 8).tile_outputs(), c(u32::MAX, 8).tile_outputs()), (Some(128), None));
    assert!(c(1, 4).fits() && c(32, 8).fits() && c(8, 12).fits());
    assert!(!c(0, 4).fits() && !c(8, 0).fits() && !c(8, 6).fits());

    // layout: the tile (T + Kp floats) then the taps (Kp), as vectors.
    let l = c(16, 8).layout(9).expect("layout");
    assert_eq!((l.tile.offset(), l.tile.len(), l.weights.offset(), l.weights.len(), l.bytes), (0, 36, 576, 4, 640));
    assert_eq!(c(16, 8).shared_bytes(129), Ok((128 + 136) / 4 * 16 + 136 / 4 * 16));
    let over = |len| Err::<u32, _>(LayoutError::Overflow { offset: 0, len, elem_bytes: 4 });
    assert_eq!(c(8, 4).layout(u32::MAX).map(|l| l.bytes), over(8), "padded taps overflow");
    assert_eq!(c(u32::MAX, 8).layout(3).map(|l| l.bytes), over(u32::MAX), "T overflows");
    assert_eq!(c(u32::MAX / 4, 4).layout(9).map(|l| l.bytes), over(u32::MAX / 4), "T + Kp overflows");
    // The tile's bytes overflow; then the tile's fit (2^32 - 16 bytes) and the taps' do not.
    for (block, what) in [(1 << 28, "the tile's"), ((1 << 28) - 3, "the taps'")] {
        let bytes = c(block, 4).shared_bytes(3);
        assert!(matches!(bytes, Err(LayoutError::Overflow { .. })), "{what} bytes overflow: {bytes:?}");
    }

    // grid: tiles within 1..=MAX_GRID.
    assert_eq!([c(16, 4).grid(0), c(16, 4).grid(64), c(16, 4).grid(65)], [1, 1, 2]);
    assert_eq!(c(16, 4).grid(1 << 40), MAX_GRID);
    assert_eq!(c(u32::MAX, 8).grid(5), 5, "a tile that overflows counts as 1");

    assert_eq!([4, 8, 12].map(conv1d::entry_name), [Some("conv1d_f32_r4"), Some("conv1d_f32_r8"), None]);
}
