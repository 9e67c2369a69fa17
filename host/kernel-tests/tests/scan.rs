//! The decoupled look-back scan (device-kernels/src/scan.rs), both entries (f32, u32 wrapping):
//! no elements, fewer than a tile, exactly one tile, tiles that do not divide `n` (ragged last
//! vectors), blocks smaller than [`RAKE`] (runs that read as zero), of one thread (the window
//! filled by one thread), not a multiple of 4 (runs by element), runs of several vectors,
//! several vectors a thread (the swizzle's strides), tile counts on both sides of the first
//! window reaching tile 0; then look-backs that walk past their window through published
//! aggregates, to tile 0 or to a prefix in the middle, on both sides of each window boundary;
//! blocks waiting at a predecessor that has not published (their aggregates published
//! meanwhile); the status words left (tile 0's published prefix, every tile's inclusive
//! prefix); input and output views that are not 16-byte aligned; and the configs the kernel
//! refuses.
//!
//! A look-back walks past its window only when more than [`WINDOW`] predecessors have
//! published their aggregates but not yet their prefixes: on a GPU, blocks in flight. The CPU
//! runs at most a few blocks at once, so those tests start the launch from that state: the
//! status words of tiles `0..pre` hold what blocks still looking back would have published
//! (tile 0 its prefix, the others their aggregates) and the tile counter stands at `pre`, so
//! the launch's blocks take tiles `pre..` and meet them.

use dynsmem_cpu::FaultKind;
use dynsmem_kernel_tests::*;
use dynsmem_kernels::scan::{self, FLAG_AGGREGATE, FLAG_PREFIX, RAKE, ScanConfig, WINDOW};

/// `(n, block, items_per_thread)`.
type Case = (usize, u32, u32);

/// The draws: each names the path it is there for.
const CASES: &[Case] = &[
    (0, 32, 4),          // no elements: one block, nothing written, tile 0 publishes 0
    (1, 32, 4),          // one element: the only tile's first vector ragged
    (7, 8, 4),           // shorter than a tile of 32, the last vector 3 elements
    (128, 32, 4),        // exactly one tile: the whole-tile load and store, a block of RAKE threads
    (129, 32, 4),        // a tile and one element: a second tile of one partial vector
    (50, 3, 4),          // a block of 3: runs of one, the scratch's vector half empty, 5 tiles
    (1000, 1, 4),        // a block of one thread: it fills the window alone; 250 tiles
    (333, 8, 12),        // three vectors a thread, a block smaller than RAKE, ragged by 1
    (1500, 33, 4),       // runs of 2, threads 17.. of RAKE with empty runs, ragged
    (4000, 96, 8),       // runs of 3 (by element), threads past RAKE, 6 tiles, ragged
    (4099, 97, 4),       // runs of 4 in a block that is not a multiple of 4: by element
    (8192, 128, 16),     // runs of 4 as vectors, exactly 4 tiles of 4 vectors a thread
    (9001, 256, 4),      // runs of 8 vectors, 9 tiles, ragged by 1
    (2000, 16, 32),      // 8 vectors a thread: the swizzle at stride 8
    (32 * 32, 8, 4),     // 32 tiles: the last tile's window one slot past tile 0
    (33 * 32, 8, 4),     // 33 tiles: the last tile's window ends exactly at tile 0
    (34 * 32 - 3, 8, 4), // 34 tiles: a window wholly inside the status words, ragged
    (WIDE, 64, 4),       // many tiles of a block of 64: a block looks back while others run
];

/// 300 tiles of 256.
const WIDE: usize = 300 * 256 - 5;

/// The elements' bits, the entry's name, the word a status word carries.
trait Elem: bytemuck::Pod {
    const ENTRY: &'static str;
    fn bits(self) -> u32;
}

impl Elem for f32 {
    const ENTRY: &'static str = "scan_exclusive_f32";
    fn bits(self) -> u32 {
        self.to_bits()
    }
}

impl Elem for u32 {
    const ENTRY: &'static str = "scan_exclusive_u32";
    fn bits(self) -> u32 {
        self
    }
}

fn config(block: u32, items_per_thread: u32) -> ScanConfig {
    ScanConfig { block, items_per_thread }
}

/// A status word: `flag` and `value`'s bits.
fn word(flag: u64, value: u32) -> u64 {
    (flag << 32) | value as u64
}

/// Launches the entry of `T` on `input` with the status words starting as `status` (one a
/// tile) and the tile counter at `pre`: its `tiles - pre` blocks take tiles `pre..`. The
/// output starts all ones (NaN as f32), so an element the kernel does not write shows.
/// Returns the output and the status words after.
fn run<T: Elem>(cpu: &Cpu, input: &[T], cfg: ScanConfig, status: &[u64], pre: u32) -> (Vec<T>, Vec<u64>) {
    run_at(cpu, input, cfg, status, pre, (0, 0))
}

/// [`run`] with the input and output as views starting `shift.0` and `shift.1` elements into
/// their buffers (not 16-byte aligned unless 0 mod 4): the buffers end at the `n`th element,
/// so a read or write past it faults, and the output's elements before the view must stay as
/// they were.
fn run_at<T: Elem>(
    cpu: &Cpu,
    input: &[T],
    cfg: ScanConfig,
    status: &[u64],
    pre: u32,
    (shift_in, shift_out): (usize, usize),
) -> (Vec<T>, Vec<u64>) {
    let n = input.len();
    let tiles = cfg.tiles(n as u64) as u32;
    assert_eq!(status.len(), tiles as usize);
    let x = mem(&[vec![T::zeroed(); shift_in], input.to_vec()].concat());
    let (status_m, counter) = (mem(status), mem(&[pre]));
    let out = CpuMem::filled((shift_out + n) * 4, 0xFF).expect("host allocation");
    let args = [
        Arg::At(&x, 4 * shift_in),
        Arg::At(&out, 4 * shift_out),
        Arg::U64(n as u64),
        Arg::Mem(&status_m),
        Arg::Mem(&counter),
        Arg::U32(cfg.items_per_thread),
    ];
    let shared_bytes = cfg.shared_bytes().expect("layout");
    let dims = LaunchDims { grid: tiles - pre, block: cfg.block, shared_bytes, cluster: 1 };
    launch(cpu, entry(scan::KERNELS, T::ENTRY), dims, &args);
    let what = format!("{} {cfg:?} n {n}, shifts {shift_in}, {shift_out}", T::ENTRY);
    assert_eq!(counter.to_vec::<u32>(), [tiles], "{what}: tickets taken");
    let out = out.to_vec::<T>();
    assert!(out[..shift_out].iter().all(|v| v.bits() == u32::MAX), "{what}: wrote before the output's view");
    (out[shift_out..].to_vec(), status_m.to_vec())
}

/// The status words a launch from `pre` leaves: those before `pre` as they were, then each
/// tile's inclusive prefix (`inclusive(t)`: the sum of every element before tile `t + 1`).
fn status_after(before: &[u64], pre: usize, inclusive: impl Fn(usize) -> u32) -> Vec<u64> {
    (0..before.len()).map(|t| if t < pre { before[t] } else { word(FLAG_PREFIX, inclusive(t)) }).collect()
}

/// The exact inclusive prefix of tile `t` of `data` (u32 or integer-valued f32).
fn inclusive_u32(data: &[u32], tile: usize, t: usize) -> u32 {
    data[..((t + 1) * tile).min(data.len())].iter().fold(0u32, |s, &x| s.wrapping_add(x))
}

/// The output of a launch from `pre`: the sentinel (all ones) before tile `pre`, the scan
/// after.
fn expected_u32(data: &[u32], tile: usize, pre: usize) -> Vec<u32> {
    let mut want = dynsmem_reference::exclusive_scan_u32(data);
    want[..(pre * tile).min(data.len())].fill(u32::MAX);
    want
}

/// u32 words from the whole range: the sums wrap around many times a tile.
fn wrapping(n: usize, seed: u64) -> Vec<u32> {
    below(n, seed, u32::MAX)
}

/// Integer-valued floats in [-64, 64]: every partial sum of up to 2^17 of them is exact in
/// f32, so any order of summation gives the reference exactly.
fn integral(n: usize, seed: u64) -> Vec<f32> {
    floats(n, seed, 64.0).iter().map(|x| x.round()).collect()
}

#[test]
fn u32_matches_the_definition_on_every_path() {
    let cpu = cpu();
    for (k, &(n, block, ipt)) in CASES.iter().enumerate() {
        let cfg = config(block, ipt);
        let data = wrapping(n, 10 + k as u64);
        let zeros = vec![0u64; cfg.tiles(n as u64) as usize];
        let (got, status) = run(&cpu, &data, cfg, &zeros, 0);
        let what = format!("u32 scan n {n} {cfg:?}");
        // Exact: sums modulo 2^32.
        assert_same(&what, &got, &dynsmem_reference::exclusive_scan_u32(&data));
        let tile = cfg.tile().unwrap() as usize;
        // Tile 0 publishes its aggregate as its prefix; every other tile its inclusive prefix.
        assert_same(&format!("{what}: status"), &status, &status_after(&zeros, 0, |t| inclusive_u32(&data, tile, t)));
    }
}

#[test]
fn f32_of_integers_matches_the_definition_exactly_on_every_path() {
    let cpu = cpu();
    for (k, &(n, block, ipt)) in CASES.iter().enumerate() {
        let cfg = config(block, ipt);
        let data = integral(n, 100 + k as u64);
        let zeros = vec![0u64; cfg.tiles(n as u64) as usize];
        let (got, status) = run(&cpu, &data, cfg, &zeros, 0);
        let what = format!("f32 scan of integers n {n} {cfg:?}");
        // Exact: every partial sum is an integer below 2^24.
        assert_close(&what, &got, &dynsmem_reference::exclusive_scan_f32(&data).0, None, Tol::EXACT);
        let ints: Vec<u32> = data.iter().map(|&x| x as i32 as u32).collect();
        let tile = cfg.tile().unwrap() as usize;
        let inclusive = |t| (inclusive_u32(&ints, tile, t) as i32 as f32).bits();
        assert_same(&format!("{what}: status"), &status, &status_after(&zeros, 0, inclusive));
    }
}

#[test]
fn f32_matches_the_reference_within_the_rounding_of_its_sums() {
    let cpu = cpu();
    for (k, &(n, block, ipt)) in CASES.iter().enumerate() {
        let cfg = config(block, ipt);
        let data = floats(n, 200 + k as u64, 1.0);
        let zeros = vec![0u64; cfg.tiles(n as u64) as usize];
        let (got, _) = run(&cpu, &data, cfg, &zeros, 0);
        let (want, magnitudes) = dynsmem_reference::exclusive_scan_f32(&data);
        // An f32 sum whose longest chain of additions is the thread's items, its run, the
        // RAKE runs, and the tiles' prefixes (one addition a tile, a window's sum each): each
        // addition rounds by at most eps of the sum of magnitudes so far. (Over many tiles
        // that bound admits an element's worth: a single wrong term is the integer-valued
        // draws' to catch, which are exact.)
        let (tiles, run) = (cfg.tiles(n as u64) as f64, block.div_ceil(RAKE) as f64);
        let chain = ipt as f64 + run + RAKE as f64 + 2.0 * tiles + 8.0;
        let tol = Tol { abs: 0.0, rel: chain * f32::EPSILON as f64 };
        assert_close(&format!("f32 scan n {n} {cfg:?}"), &got, &want, Some(&magnitudes), tol);
    }
}

/// Input and output not 16-byte aligned, one at a time and both: every tile loads (or
/// stores) element by element, the full tiles too.
const SHIFTS: &[(usize, usize)] = &[(1, 0), (0, 3), (2, 1)];

/// The draws the shifts run on: less than a tile, a tile and one element, several vectors a
/// thread, many ragged tiles.
const SHIFTED: &[Case] = &[(7, 8, 4), (129, 32, 4), (333, 8, 12), (9001, 256, 4)];

#[test]
fn unaligned_input_and_output_match_the_definition() {
    let cpu = cpu();
    for (k, &(n, block, ipt)) in SHIFTED.iter().enumerate() {
        let cfg = config(block, ipt);
        let zeros = vec![0u64; cfg.tiles(n as u64) as usize];
        for &shift in SHIFTS {
            let what = format!("n {n} {cfg:?}, input and output shifted by {shift:?} elements");
            let data = wrapping(n, 300 + k as u64);
            let (got, _) = run_at(&cpu, &data, cfg, &zeros, 0, shift);
            assert_same(&format!("u32 scan {what}"), &got, &dynsmem_reference::exclusive_scan_u32(&data));
            let data = integral(n, 400 + k as u64);
            let (got, _) = run_at(&cpu, &data, cfg, &zeros, 0, shift);
            let want = dynsmem_reference::exclusive_scan_f32(&data).0;
            assert_close(&format!("f32 scan of integers {what}"), &got, &want, None, Tol::EXACT);
        }
    }
}

/// What blocks still looking back would have published for tiles `0..pre`: tile 0 its
/// inclusive prefix, the others their aggregates (`value(t, flag)`); the rest zero.
fn in_flight(tiles: usize, pre: usize, value: impl Fn(usize, u64) -> u32) -> Vec<u64> {
    (0..tiles)
        .map(|t| match t {
            0 if pre > 0 => word(FLAG_PREFIX, value(0, FLAG_PREFIX)),
            t if t < pre => word(FLAG_AGGREGATE, value(t, FLAG_AGGREGATE)),
            _ => 0,
        })
        .collect()
}

/// Tiles published before the launch: the first launched block (tile `pre`) walks back over
/// `pre - 1` aggregates to tile 0's prefix, which sits in window slot `(pre - 1) % WINDOW` of
/// round `(pre - 1) / WINDOW`: both sides of the first and second window boundaries.
const PRE: &[u32] = &[1, 2, WINDOW - 1, WINDOW, WINDOW + 1, WINDOW + 2, 2 * WINDOW, 2 * WINDOW + 1, 3 * WINDOW + 5];

/// `(block, items_per_thread)` of the look-back draws: one thread filling the window alone,
/// a block smaller than the window, one larger.
const LOOK_BACK_CONFIGS: &[(u32, u32)] = &[(1, 4), (8, 4), (64, 4)];

#[test]
fn u32_look_back_walks_published_aggregates_to_tile_zero() {
    let cpu = cpu();
    for &(block, ipt) in LOOK_BACK_CONFIGS {
        let cfg = config(block, ipt);
        let tile = cfg.tile().unwrap() as usize;
        for &pre in PRE {
            let pre = pre as usize;
            // Three launched tiles, the last ragged.
            let n = (pre + 3) * tile - 3;
            let data = wrapping(n, 1000 + pre as u64);
            let aggregate =
                |t: usize| data[t * tile..((t + 1) * tile).min(n)].iter().fold(0u32, |s, &x| s.wrapping_add(x));
            let status = in_flight(pre + 3, pre, |t, _| aggregate(t));
            let (got, after) = run(&cpu, &data, cfg, &status, pre as u32);
            let what = format!("u32 look-back over {pre} published tiles, {cfg:?}");
            assert_same(&what, &got, &expected_u32(&data, tile, pre));
            let want = status_after(&status, pre, |t| inclusive_u32(&data, tile, t));
            assert_same(&format!("{what}: status"), &after, &want);
        }
    }
}

#[test]
fn f32_look_back_walks_published_aggregates_to_tile_zero() {
    let cpu = cpu();
    for &(block, ipt) in LOOK_BACK_CONFIGS {
        let cfg = config(block, ipt);
        let tile = cfg.tile().unwrap() as usize;
        for &pre in PRE {
            let pre = pre as usize;
            let n = (pre + 3) * tile - 1;
            let data = integral(n, 2000 + pre as u64);
            let sum = |a: usize, b: usize| data[a..b.min(n)].iter().map(|&x| x as f64).sum::<f64>() as f32;
            let status = in_flight(pre + 3, pre, |t, _| sum(t * tile, (t + 1) * tile).to_bits());
            let (got, _) = run(&cpu, &data, cfg, &status, pre as u32);
            let mut want = dynsmem_reference::exclusive_scan_f32(&data).0;
            want[..pre * tile].fill(f64::NAN);
            // Exact: integer-valued sums below 2^24.
            let what = format!("f32 look-back over {pre} published tiles, {cfg:?}");
            assert_close(&what, &got, &want, None, Tol::EXACT);
        }
    }
}

/// A prefix published `back` tiles before the first launched one, behind `back - 1`
/// aggregates: the walk must stop there. The tiles before it hold words that are wrong (an
/// aggregate flag on values that are not the tiles'), so a walk past the prefix shows.
#[test]
fn look_back_stops_at_the_nearest_prefix() {
    let cpu = cpu();
    let cfg = config(8, 4);
    let tile = cfg.tile().unwrap() as usize;
    // The prefix in the last slot of the first window, the first of the second, inside the
    // second, the last of the second.
    for back in [WINDOW, WINDOW + 1, WINDOW + 7, 2 * WINDOW] {
        let (back, garbage) = (back as usize, 5);
        let pre = back + garbage;
        let n = (pre + 2) * tile - 2;
        let data = wrapping(n, 3000 + back as u64);
        let aggregate = |t: usize| data[t * tile..((t + 1) * tile).min(n)].iter().fold(0u32, |s, &x| s.wrapping_add(x));
        let noise = below(garbage, 7 + back as u64, u32::MAX);
        let nearest = pre - back;
        let mut status = in_flight(pre + 2, pre, |t, _| if t < nearest { noise[t] } else { aggregate(t) });
        status[nearest] = word(FLAG_PREFIX, inclusive_u32(&data, tile, nearest));
        let (got, after) = run(&cpu, &data, cfg, &status, pre as u32);
        let what = format!("u32 look-back to a prefix {back} tiles back");
        assert_same(&what, &got, &expected_u32(&data, tile, pre));
        assert_same(&format!("{what}: status"), &after, &status_after(&status, pre, |t| inclusive_u32(&data, tile, t)));
    }
}

/// Tile 0's word left unpublished while the launch runs (its counter at 1): the first block
/// to run (tile 1) must publish its aggregate and wait in its look-back (reading an
/// unpublished word) until the test publishes tile 0's prefix; blocks after it, where a
/// second worker runs them, wait too, their aggregates published and none of them a prefix
/// (every walk reaches tile 0). Then every tile completes from that prefix.
#[test]
fn blocks_wait_at_an_unpublished_predecessor_with_their_aggregates_published() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, Instant};
    let cpu = cpu();
    let cfg = config(8, 4);
    let (tile, tiles) = (cfg.tile().unwrap() as usize, 6);
    let n = tiles * tile - 1;
    let data = wrapping(n, 77);
    let aggregate = |t: usize| data[t * tile..((t + 1) * tile).min(n)].iter().fold(0u32, |s, &x| s.wrapping_add(x));
    let (x, out) = (mem(&data), CpuMem::filled(4 * n, 0xFF).expect("host allocation"));
    let (status, counter) = (zeros::<u64>(tiles), mem(&[1u32]));
    // SAFETY: `status` holds `tiles` u64 (16-byte aligned) and outlives the scope; the kernel
    // reads and writes these words only atomically (acquire loads, release stores).
    let word_at = |t: usize| unsafe { AtomicU64::from_ptr(status.ptr().cast::<u64>().add(t)) };
    std::thread::scope(|s| {
        s.spawn(|| {
            let args = [
                Arg::Mem(&x),
                Arg::Mem(&out),
                Arg::U64(n as u64),
                Arg::Mem(&status),
                Arg::Mem(&counter),
                Arg::U32(cfg.items_per_thread),
            ];
            let dims = LaunchDims {
                grid: tiles as u32 - 1,
                block: cfg.block,
                shared_bytes: cfg.shared_bytes().unwrap(),
                cluster: 1,
            };
            launch(&cpu, entry(scan::KERNELS, <u32 as Elem>::ENTRY), dims, &args);
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        while word_at(1).load(Ordering::Acquire) == 0 {
            assert!(Instant::now() < deadline, "tile 1 never published its aggregate");
            std::thread::yield_now();
        }
        // Time for a second worker's block to publish and reach tile 0 too.
        std::thread::sleep(Duration::from_millis(20));
        let words: Vec<u64> = (0..tiles).map(|t| word_at(t).load(Ordering::Acquire)).collect();
        // Published before any check, so that a failing check does not leave the blocks
        // spinning.
        word_at(0).store(word(FLAG_PREFIX, aggregate(0)), Ordering::Release);
        assert_eq!(words[0], 0, "tile 0 published by the kernel");
        assert_eq!(words[1], word(FLAG_AGGREGATE, aggregate(1)), "tile 1 waiting for tile 0");
        for (t, &w) in words.iter().enumerate().skip(2) {
            assert!(w == 0 || w == word(FLAG_AGGREGATE, aggregate(t)), "tile {t} waiting for tile 0: {w:#x}");
        }
    });
    assert_same("u32 scan after a late tile 0", &out.to_vec::<u32>(), &expected_u32(&data, tile, 1));
    let published = in_flight(tiles, 1, |t, _| aggregate(t));
    let want = status_after(&published, 1, |t| inclusive_u32(&data, tile, t));
    assert_same("status after a late tile 0", &status.to_vec::<u64>(), &want);
}

/// The entries trap on a launch their contract refuses, before touching memory.
#[test]
fn refused_configs_trap() {
    let cpu = cpu();
    let refused = |name: &str, block: u32, ipt: u32, why: &str| {
        let (x, out, status, counter) = (zeros::<u32>(64), zeros::<u32>(64), zeros::<u64>(64), zeros::<u32>(1));
        let args = [Arg::Mem(&x), Arg::Mem(&out), Arg::U64(64), Arg::Mem(&status), Arg::Mem(&counter), Arg::U32(ipt)];
        let dims = LaunchDims { grid: 1, block, shared_bytes: 4096, cluster: 1 };
        match cpu.launch(entry(scan::KERNELS, name), dims, &args) {
            Err(LaunchError::Fault { fault, .. }) if matches!(fault.kind, FaultKind::Trap { .. }) => {}
            other => panic!("{name} with {why}: expected a trap, got {:?}", other.map_err(|e| e.to_string())),
        }
        assert_eq!(counter.to_vec::<u32>(), [0], "{name} with {why}: took a ticket");
    };
    for name in [<f32 as Elem>::ENTRY, <u32 as Elem>::ENTRY] {
        refused(name, 8, 6, "items per thread not whole vectors");
        refused(name, 8, 0, "no items per thread");
        refused(name, 8, 1 << 30, "a tile past u32 (no layout)");
    }
}
