//! Histogram (device-kernels/src/histogram.rs): 32-, 16- and 8-bit counters, one copy of the
//! bins or several (a copy per warp), every bin held in shared memory or only the first ones
//! (the rest counted with device atomics: the launch's bytes say how many fit), bins split
//! over clusters of 2 and 4 (adds to a peer's shared memory) or merged over clusters of 2, 4
//! and 8 (each block holds every bin, the cluster sums them), keys past the last bin, key
//! counts that are not whole vectors and keys that do not start on a 16-byte boundary, grids
//! that walk the keys in several strides (the four-vectors-in-flight loop, the remaining
//! vectors, the keys past the last vector), packed counters that wrap and carry into their
//! neighbours (the carry's corrections, chained, into a word's padding).

use dynsmem_kernel_tests::*;
use dynsmem_kernels::histogram::{HistogramConfig, KERNELS};

/// One launch: `held` 0 holds every bin (else the launch's bytes hold the first `held`);
/// `shift`: keys the input starts past a 16-byte boundary; `hot`: every other key is one of
/// the first three bins (counters that wrap).
#[derive(Debug, Clone, Copy)]
struct Draw {
    n: usize,
    bins: u32,
    block: u32,
    grid: u32,
    copies: u32,
    bits: u32,
    cluster: u32,
    merge: bool,
    held: u32,
    shift: usize,
    hot: bool,
}

const BASE: Draw = Draw {
    n: 1000,
    bins: 7,
    block: 32,
    grid: 2,
    copies: 1,
    bits: 32,
    cluster: 1,
    merge: false,
    held: 0,
    shift: 0,
    hot: false,
};

/// The draws: each names the path it is there for. Grids are smaller than the keys need
/// (`grid * block * 4` keys a stride): every draw walks the keys in several strides.
const DRAWS: &[Draw] = &[
    // One key, one bin: no whole vector, the key past the last one.
    Draw { n: 1, bins: 1, grid: 1, ..BASE },
    // 250 vectors in strides of 64: four in flight for the first threads, then one at a time.
    BASE,
    // Two warps, two copies; 3001 keys: one past the last vector.
    Draw { n: 3001, bins: 300, block: 64, grid: 3, copies: 2, hot: true, ..BASE },
    // A block of 96 threads, three copies, 8 strides of four vectors.
    Draw { n: 12_290, bins: 1000, block: 96, grid: 4, copies: 3, ..BASE },
    // 16-bit counters, 257 bins: a copy padded to 258 counters; two copies.
    Draw { n: 2503, bins: 257, block: 64, grid: 2, copies: 2, bits: 16, hot: true, ..BASE },
    // 8-bit counters, 5 bins padded to 8: hot bins wrap many times (the carry).
    Draw { n: 5003, bins: 5, grid: 1, bits: 8, hot: true, ..BASE },
    // 8-bit counters, three copies, 1001 bins: wraps in each warp's copy.
    Draw { n: 6002, bins: 1001, block: 96, grid: 1, copies: 3, bits: 8, hot: true, ..BASE },
    // 16-bit counters that wrap: more than 65535 keys of a bin in one block.
    Draw { n: 300_001, bins: 2, grid: 1, bits: 16, hot: true, ..BASE },
    // Only the first 256 of 1000 bins in shared memory: device atomics for the others.
    Draw { n: 4000, bins: 1000, block: 64, grid: 2, copies: 2, held: 256, ..BASE },
    // One bin in shared memory, 39 in device memory.
    Draw { n: 2000, bins: 40, held: 1, ..BASE },
    // Clusters of 2 splitting 2 held bins (a word a block), 38 in device memory.
    Draw { n: 2000, bins: 40, grid: 2, cluster: 2, held: 2, ..BASE },
    // 8-bit counters holding 600 of 2000 bins, hot: carries and device atomics.
    Draw { n: 4001, bins: 2000, grid: 2, bits: 8, held: 600, hot: true, ..BASE },
    // 16-bit counters holding 301 (rounded up to 302) of 700 bins.
    Draw { n: 3003, bins: 700, block: 64, grid: 2, copies: 2, bits: 16, held: 301, ..BASE },
    // Split over clusters of 2: remote adds, two copies.
    Draw { n: 4002, bins: 301, block: 64, grid: 4, copies: 2, cluster: 2, hot: true, ..BASE },
    // Split over clusters of 4, 3 bins: one a block, rank 3 holds none.
    Draw { n: 1001, bins: 3, grid: 4, cluster: 4, ..BASE },
    // Split over clusters of 4 holding 400 of 900 bins (100 a block), the rest in device memory.
    Draw { n: 5000, bins: 900, grid: 8, cluster: 4, held: 400, ..BASE },
    // Merged over clusters of 2: each rank merges half of the words.
    Draw { n: 4000, bins: 513, block: 64, grid: 4, copies: 2, cluster: 2, merge: true, ..BASE },
    // Merged over clusters of 4, 8-bit counters of 3 bins: one word, ranks with no share.
    Draw { n: 3000, bins: 3, grid: 4, cluster: 4, merge: true, bits: 8, hot: true, ..BASE },
    // Merged over clusters of 8, 16-bit counters holding 1000 of 3000 bins.
    Draw { n: 6000, bins: 3000, grid: 8, cluster: 8, merge: true, bits: 16, held: 1000, ..BASE },
    // Merge asked without a cluster: each block merges its own counters.
    Draw { n: 2000, bins: 100, merge: true, ..BASE },
    // Keys 4 bytes off a 16-byte boundary: every key one at a time.
    Draw { n: 777, bins: 50, shift: 1, ..BASE },
    // 12 bytes off, split over clusters of 2.
    Draw { n: 2222, bins: 60, grid: 2, cluster: 2, shift: 3, ..BASE },
    // 8 bytes off, 8-bit counters that wrap.
    Draw { n: 3000, bins: 9, grid: 1, bits: 8, shift: 2, hot: true, ..BASE },
];

impl Draw {
    fn config(&self) -> HistogramConfig {
        let Draw { block, grid, copies, cluster, held, bits, merge, .. } = *self;
        HistogramConfig { block, grid, copies, cluster, held, bits, merge }
    }

    /// Keys from `seed`: uniform below `bins + bins / 4 + 5` (some past the last bin), every
    /// other one in the first three bins when `hot`.
    fn keys(&self, seed: u64) -> Vec<u32> {
        let mut keys = below(self.n, seed, self.bins + self.bins / 4 + 5);
        if self.hot {
            keys.iter_mut().step_by(2).for_each(|k| *k %= 3.min(self.bins));
        }
        keys
    }
}

/// Launches `histogram_u32` over `keys` placed `shift` keys past a 16-byte boundary, with
/// `shared` launch-sized bytes, and returns the bins. The keys ahead of the input are 0:
/// counting one shows in bin 0.
fn histogram(cpu: &Cpu, keys: &[u32], bins: u32, c: HistogramConfig, shared: u32, shift: usize) -> Vec<u32> {
    let padded: Vec<u32> = std::iter::repeat_n(0, shift).chain(keys.iter().copied()).collect();
    let (input, out) = (mem(&padded), zeros::<u32>(bins as usize));
    let args = [
        Arg::At(&input, 4 * shift),
        Arg::U64(keys.len() as u64),
        Arg::Mem(&out),
        Arg::U32(bins),
        Arg::U32(c.copies),
        Arg::U32(c.bits),
        Arg::U32(c.merge as u32),
    ];
    let dims = LaunchDims { grid: c.grid, block: c.block, shared_bytes: shared, cluster: c.cluster };
    launch(cpu, entry(KERNELS, "histogram_u32"), dims, &args);
    out.to_vec()
}

#[test]
fn every_draw_counts_every_key_once() {
    let cpu = cpu();
    for (k, d) in DRAWS.iter().enumerate() {
        let c = d.config();
        let shared = c.shared_bytes(d.bins).expect("layout");
        // The launch's bytes hold `held` bins (rounded up to whole words), not all of them.
        if d.held > 0 {
            let all = HistogramConfig { held: 0, ..c }.shared_bytes(d.bins).unwrap();
            assert!(shared < all, "{d:?}: the launch holds every bin");
        }
        let keys = d.keys(10 + k as u64);
        let got = histogram(&cpu, &keys, d.bins, c, shared, d.shift);
        // Counts are exact: every key counted once, keys past the last bin never.
        assert_same(&format!("{d:?}"), &got, &dynsmem_reference::histogram(&keys, d.bins));
    }
}

/// Keys in the order one thread counts them: `runs` of `(key, count)`.
fn runs(runs: &[(u32, usize)]) -> Vec<u32> {
    runs.iter().flat_map(|&(key, count)| std::iter::repeat_n(key, count)).collect()
}

#[test]
fn packed_counters_that_wrap_carry_exactly() {
    let cpu = cpu();
    // One thread counts the keys in order, so each word's fields are known at each add.
    let one = |bits| HistogramConfig { block: 1, grid: 1, copies: 1, cluster: 1, held: 0, bits, merge: false };
    let m8 = 255;
    let cases: &[(u32, u32, Vec<u32>, &str)] = &[
        (8, 4, runs(&[(0, 1000)]), "one field wrapping three times, nothing above it at its maximum"),
        (8, 4, runs(&[(1, m8), (0, m8 + 1)]), "bin 0 wraps while bin 1 is full: the carry wraps bin 1, reaches 2"),
        (8, 4, runs(&[(2, m8), (1, m8), (0, m8 + 1), (3, 2)]), "a carry through three full fields into the last"),
        (8, 4, runs(&[(3, m8 + 1), (2, 300)]), "the last field of a word wraps: its carry leaves the word"),
        (8, 6, runs(&[(4, m8), (5, m8 + 1), (4, 3)]), "bin 5 wraps into padding lane 6 (6 bins padded to 8)"),
        (8, 5, runs(&[(4, 2 * m8 + 3), (1, 7)]), "bin 4, the last of 5, wraps twice into padding"),
        (16, 2, runs(&[(1, 65_535), (0, 65_536)]), "16-bit: bin 0 wraps while bin 1 is full"),
        (16, 3, runs(&[(1, 65_536), (2, 65_537)]), "16-bit: the high field wraps; bin 2 in the next word"),
    ];
    for (bits, bins, keys, what) in cases {
        let c = one(*bits);
        let shared = c.shared_bytes(*bins).unwrap();
        let got = histogram(&cpu, keys, *bins, c, shared, 0);
        assert_same(&format!("{bits}-bit, {bins} bins: {what}"), &got, &dynsmem_reference::histogram(keys, *bins));
    }
}

/// The launch of `c` over 64 keys must trap in histogram.rs.
fn assert_traps(c: HistogramConfig, shared: u32, why: &str) {
    let keys = below(64, 1, 8);
    let (input, out) = (mem(&keys), zeros::<u32>(8));
    let args = [
        Arg::Mem(&input),
        Arg::U64(64),
        Arg::Mem(&out),
        Arg::U32(8),
        Arg::U32(c.copies),
        Arg::U32(c.bits),
        Arg::U32(c.merge as u32),
    ];
    let dims = LaunchDims { grid: c.grid, block: c.block, shared_bytes: shared, cluster: c.cluster };
    match cpu().launch(entry(KERNELS, "histogram_u32"), dims, &args) {
        Err(LaunchError::Fault { fault: f, .. }) => match f.kind {
            dynsmem_cpu::FaultKind::Trap { at } => assert!(at.file().ends_with("histogram.rs"), "{why}: {at}"),
            other => panic!("{why}: {other:?}, not a trap"),
        },
        other => panic!("{why}: {:?}, not a trap", other.err()),
    }
}

#[test]
fn invalid_launches_trap() {
    let c = HistogramConfig { block: 32, grid: 2, copies: 1, cluster: 1, held: 0, bits: 32, merge: false };
    assert_traps(HistogramConfig { bits: 7, ..c }, 64, "7-bit counters");
    assert_traps(HistogramConfig { copies: 0, ..c }, 64, "no copy of the bins");
    // Packed counters split over a cluster: a peer's add cannot see the word it wraps.
    let split = HistogramConfig { bits: 16, cluster: 2, ..c };
    assert!(split.shared_bytes(8).is_err());
    assert_traps(split, 64, "16-bit counters split over a cluster of 2");
}

#[test]
fn layouts_of_every_width_and_the_ones_refused() {
    let c = HistogramConfig { block: 32, grid: 1, copies: 3, cluster: 1, held: 0, bits: 32, merge: false };
    // Words: copies x (bins a block, rounded up to whole words) / counters a word.
    for (bits, cluster, merge, held, bins, words) in [
        (32, 1, false, 0, 10, 3 * 10),
        (16, 1, false, 0, 11, 3 * 12 / 2),
        (8, 1, false, 0, 10, 3 * 12 / 4),
        (8, 1, false, 5, 10, 3 * 8 / 4),
        (32, 4, false, 0, 10, 3 * 3),
        (8, 4, true, 0, 10, 3 * 12 / 4),
    ] {
        let c = HistogramConfig { bits, cluster, merge, held, ..c };
        assert_eq!(c.shared_bytes(bins), Ok(4 * words), "{c:?}, {bins} bins");
    }
    assert!(HistogramConfig { bits: 7, ..c }.layout(10).is_err(), "7-bit counters");
    assert!(HistogramConfig { bits: 8, cluster: 2, ..c }.layout(10).is_err(), "packed counters split");
    assert!(c.layout(u32::MAX).is_err(), "3 copies of 2^32 - 1 counters: past a u32 count");
}
