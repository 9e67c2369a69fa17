//! The properties the fuzz targets check, shared by them: each family's layout against a
//! 64-bit model of the same carve (so "no overflow" means "the same answer as arithmetic
//! that cannot overflow", not only "no panic"), and the launch arithmetic in bounds.
//!
//! Everything here panics on a violated property: that is what libFuzzer reports.

use dynsmem_kernels::Dtype;
use dynsmem_kernels::gpu::REGION_ALIGN;
use dynsmem_kernels::layout::{Carve, LayoutError, Slice};

const U32_MAX: u64 = u32::MAX as u64;

/// One array of a carve in the model: `len` elements of `size` bytes aligned to `align`.
#[derive(Debug, Clone, Copy)]
pub struct Part {
    pub len: u64,
    pub size: u64,
    pub align: u64,
}

pub const fn part(len: u64, size: u64, align: u64) -> Part {
    Part { len, size, align }
}

/// The offsets and total of carving `parts` in order with u64 arithmetic, or `None` when
/// any offset or end passes `u32::MAX` (where the real carve must refuse).
pub fn model(parts: &[Part]) -> Option<(Vec<u64>, u64)> {
    let mut cursor = 0u64;
    let mut offsets = Vec::new();
    for p in parts {
        let start = cursor.next_multiple_of(p.align);
        let end = start.checked_add(p.len.checked_mul(p.size)?)?;
        if end > U32_MAX {
            return None;
        }
        offsets.push(start);
        cursor = end;
    }
    Some((offsets, cursor))
}

/// A carved slice agrees with the model's part: offset, length, aligned, inside `bytes`.
pub fn check_slice<T>(what: &str, s: Slice<T>, offset: u64, p: Part, bytes: u32) {
    assert_eq!(s.offset() as u64, offset, "{what}: offset");
    assert_eq!(s.len() as u64, p.len, "{what}: length");
    assert_eq!(s.offset() as u64 % p.align, 0, "{what}: alignment {}", p.align);
    assert_eq!(s.bytes() as u64, p.len * p.size, "{what}: bytes");
    assert!(s.end() <= bytes, "{what}: ends at {} past the layout's {bytes} bytes", s.end());
}

/// Element types a carve is fuzzed with: sizes 1, 2, 3, 4, 8, 12, 16 and alignments 1 to 16.
#[derive(Debug, Clone, Copy, arbitrary::Arbitrary)]
pub enum Elem {
    U8,
    U16,
    Bytes3,
    U32,
    U64,
    Words3,
    Vec4,
}

#[repr(C, align(16))]
pub struct Vec4(pub [f32; 4]);

/// One request of a carve sequence; `align: None` asks with the type's own alignment.
#[derive(Debug, Clone, Copy, arbitrary::Arbitrary)]
pub struct Ask {
    pub elem: Elem,
    pub len: u32,
    pub align: Option<u32>,
}

fn ask_one<T>(carve: &mut Carve, ask: &Ask) {
    let before = carve.bytes();
    let natural = align_of::<T>() as u32;
    let result = match ask.align {
        None => carve.array::<T>(ask.len),
        Some(a) => carve.array_aligned::<T>(ask.len, a),
    };
    let align = ask.align.map_or(natural, |a| a.max(natural));
    let size = size_of::<T>() as u64;
    let bad_align = !align.is_power_of_two() || align > REGION_ALIGN;
    let end = (before as u64).next_multiple_of(align.max(1) as u64) + ask.len as u64 * size;
    match result {
        Err(LayoutError::BadAlign { align: a }) => {
            assert!(bad_align, "{ask:?} after {before}: refused alignment {a}, which is good");
            assert_eq!(a, align);
            assert_eq!(carve.bytes(), before, "a refused carve moved the cursor");
        }
        Err(LayoutError::Overflow { offset, len, elem_bytes }) => {
            assert!(!bad_align, "{ask:?}: overflow reported for a bad alignment");
            assert!(end > U32_MAX, "{ask:?} after {before}: overflow reported, the model ends at {end}");
            assert_eq!((offset, len, elem_bytes as u64), (before, ask.len, size));
            assert_eq!(carve.bytes(), before, "a refused carve moved the cursor");
        }
        Ok(s) => {
            assert!(!bad_align, "{ask:?}: alignment {align} accepted");
            assert!(end <= U32_MAX, "{ask:?} after {before}: accepted, the model ends at {end}");
            let offset = (before as u64).next_multiple_of(align as u64);
            check_slice("carve", s, offset, part(ask.len as u64, size, align as u64), carve.bytes());
            assert!(s.offset() >= before, "overlaps the previous array");
            assert_eq!(s.end(), carve.bytes(), "the cursor is the end of the last array");
        }
    }
}

/// A sequence of arbitrary requests on one carve: each answered exactly as the model.
pub fn carve_sequence(asks: &[Ask]) {
    let mut carve = Carve::new();
    for ask in asks {
        match ask.elem {
            Elem::U8 => ask_one::<u8>(&mut carve, ask),
            Elem::U16 => ask_one::<u16>(&mut carve, ask),
            Elem::Bytes3 => ask_one::<[u8; 3]>(&mut carve, ask),
            Elem::U32 => ask_one::<u32>(&mut carve, ask),
            Elem::U64 => ask_one::<u64>(&mut carve, ask),
            Elem::Words3 => ask_one::<[u32; 3]>(&mut carve, ask),
            Elem::Vec4 => ask_one::<Vec4>(&mut carve, ask),
        }
    }
}

/// The arbitrary fields of one family's config and problem.
#[derive(Debug, Clone, Copy, arbitrary::Arbitrary)]
pub enum Family {
    Reduce { block: u32, ipt: u32, staged: bool, n: u64 },
    Histogram { block: u32, grid: u32, copies: u32, cluster: u32, held: u32, bits: u32, merge: bool, bins: u32 },
    Transpose { block: u32, tile: u32, pad: u32, rows: u32, cols: u32 },
    Softmax { block: u32, cluster: u32, rows: u32, cols: u32 },
    Nbody { block: u32, tile: u32, n: u32 },
    Scan { block: u32, ipt: u32, n: u64 },
    Conv1d { block: u32, outputs_per_thread: u32, taps: u32, n: u64 },
    Stencil2d { block: u32, tile_w: u32, tile_h: u32, radius: u32, width: u32, height: u32 },
    Sgemm { bm: u32, bn: u32, bk: u32, stages: u32, f16: bool, m: u32, n: u32 },
}

/// The family's layout equals the model (refused exactly when the model overflows), and
/// its grid and tile counts are in bounds.
pub fn family(f: Family) {
    use dynsmem_kernels::*;
    match f {
        Family::Reduce { block, ipt, staged, n } => {
            let cfg = reduce::ReduceConfig { block, items_per_thread: ipt, staged };
            for dtype in Dtype::ALL {
                let tile = if staged { block as u64 * ipt as u64 } else { 0 };
                let parts = [part(tile, 4, 16), part(block as u64, 4, 4)];
                match (cfg.layout(dtype), model(&parts)) {
                    (Ok(l), Some((off, bytes))) => {
                        assert_eq!(l.bytes as u64, bytes, "{cfg:?}");
                        assert_eq!((l.tile_offset as u64, l.scratch_offset as u64), (off[0], off[1]), "{cfg:?}");
                        assert_eq!((l.tile_len as u64, l.scratch_len), (tile, block));
                        assert_eq!(cfg.shared_bytes(dtype), Ok(l.bytes));
                    }
                    (Err(_), None) => {}
                    (got, want) => panic!("{cfg:?}: layout {got:?}, model {want:?}"),
                }
            }
            let grid = cfg.grid(n);
            assert!((1..=reduce::MAX_GRID).contains(&grid), "{cfg:?} grid({n}) = {grid}");
            let chunk = cfg.chunk().unwrap_or(u64::MAX).max(1);
            assert!(
                grid as u64 >= n.div_ceil(chunk).min(reduce::MAX_GRID as u64),
                "{cfg:?}: grid({n}) covers too little"
            );
            match cfg.pass_count(n) {
                Some(p) => assert!((1..=64).contains(&p), "{cfg:?}: {p} passes for {n}"),
                None => assert!(chunk == 1 && grid > 1, "{cfg:?}: no pass count for {n} with a chunk of {chunk}"),
            }
        }
        Family::Histogram { block, grid, copies, cluster, held, bits, merge, bins } => {
            // Half the cases at a valid width (arbitrary u32s are rarely 8, 16 or 32).
            let bits = if bits % 2 == 0 { [32, 16, 8][(bits / 2 % 3) as usize] } else { bits };
            let cfg = histogram::HistogramConfig { block, grid, copies, cluster, held, bits, merge };
            // Each block holds its share of the held bins (all of them where the cluster
            // merges), in every copy, rounded up to whole words of 32 / bits counters.
            let split = if merge { 1 } else { cluster.max(1) as u64 };
            let held_bins = if held == 0 { bins } else { held.min(bins) };
            let per = (held_bins as u64).div_ceil(split);
            let valid = [8, 16, 32].contains(&bits) && (bits == 32 || split == 1);
            let k = 32 / bits.clamp(8, 32) as u64;
            let lanes = per.next_multiple_of(k) * copies as u64;
            let p = part(lanes / k, 4, 4);
            let modelled = if valid && lanes <= U32_MAX { model(&[p]) } else { None };
            match (cfg.layout(bins), modelled) {
                (Ok(s), Some((off, bytes))) => {
                    check_slice("counters", s, off[0], p, bytes as u32);
                    assert_eq!(cfg.shared_bytes(bins), Ok(bytes as u32));
                }
                (Err(_), None) => {}
                (got, want) => panic!("{cfg:?} bins {bins}: layout {got:?}, model {want:?}"),
            }
        }
        Family::Transpose { block, tile, pad, rows, cols } => {
            let cfg = transpose::TransposeConfig { block, tile, pad };
            let p = part((tile as u64).saturating_mul(tile as u64 + pad as u64), 4, 4);
            match (cfg.layout(), model(&[p])) {
                (Ok(s), Some((off, bytes))) => check_slice("tile", s, off[0], p, bytes as u32),
                (Err(_), None) => {}
                (got, want) => panic!("{cfg:?}: layout {got:?}, model {want:?}"),
            }
            let t = tile.max(1) as u64;
            assert_eq!(cfg.tiles(rows, cols), (rows as u64).div_ceil(t) * (cols as u64).div_ceil(t));
            assert!((1..=transpose::MAX_GRID).contains(&cfg.grid(rows, cols)));
        }
        Family::Softmax { block, cluster, rows, cols } => {
            // Softmax and RMSNorm share this layout: each block of a cluster holds its share
            // of the `cols + 3` slots a row may take (whole vectors) for each row it holds
            // (several where rows are short: threads of a power-of-two block, at most four
            // vectors each, a row), RMSNorm's held weights where the row is split (its share
            // and 8 floats of shift), then two lanes of a float per thread (rounded up to
            // whole vectors) and a partial per lane.
            let cfg = softmax::SoftmaxConfig { block, cluster };
            let size = cluster.max(1) as u64;
            let slots = (cols as u64 + 3).div_ceil(size).next_multiple_of(4);
            let lanes = dynsmem_kernels::rows::FOLD_LANES as u64;
            let per_row = (cols as u64).div_ceil(16).max(1).next_power_of_two();
            let rows_per_block = if cluster > 1 || !block.is_power_of_two() || per_row >= block as u64 {
                1
            } else {
                block as u64 / per_row
            };
            assert_eq!(cfg.rows_per_block(cols) as u64, rows_per_block, "{cfg:?} cols {cols}");
            for can in [false, true] {
                let held = if cfg.holds(can) { slots + 8 } else { 0 };
                let parts = [
                    part(slots * rows_per_block, 4, 16),
                    part(held, 4, 16),
                    part((block as u64).next_multiple_of(4) * lanes, 4, 16),
                    part(lanes, 4, 4),
                ];
                let modelled = if (block as u64).next_multiple_of(4) > U32_MAX { None } else { model(&parts) };
                match (cfg.layout(cols, cfg.holds(can)), modelled) {
                    (Ok(l), Some((off, bytes))) => {
                        assert_eq!(l.bytes as u64, bytes);
                        check_slice("part", l.part, off[0], parts[0], l.bytes);
                        check_slice("held", l.held, off[1], parts[1], l.bytes);
                        check_slice("scratch", l.scratch, off[2], parts[2], l.bytes);
                        check_slice("partials", l.partials, off[3], parts[3], l.bytes);
                    }
                    (Err(_), None) => {}
                    (got, want) => panic!("{cfg:?} cols {cols} can {can}: layout {got:?}, model {want:?}"),
                }
            }
            let grid = cfg.grid(rows, cols);
            assert!((1..=softmax::MAX_GRID.max(size as u32)).contains(&grid), "{cfg:?} grid({rows}) = {grid}");
            let blocks = (rows as u64).div_ceil(rows_per_block).clamp(1, (softmax::MAX_GRID as u64 / size).max(1));
            assert_eq!(grid as u64, blocks * size, "{cfg:?} grid({rows}, {cols})");
            assert_eq!(grid as u64 % size, 0, "{cfg:?}: the grid is whole clusters");
        }
        Family::Nbody { block, tile, n } => {
            let cfg = nbody::NbodyConfig { block, tile };
            let p = part(tile as u64, 16, 16);
            match (cfg.layout(), model(&[p])) {
                (Ok(s), Some((off, bytes))) => check_slice("bodies", s, off[0], p, bytes as u32),
                (Err(_), None) => {}
                (got, want) => panic!("{cfg:?}: layout {got:?}, model {want:?}"),
            }
            assert_eq!(cfg.grid(n) as u64, (n as u64).div_ceil(block.max(1) as u64).max(1));
        }
        Family::Scan { block, ipt, n } => {
            let cfg = scan::ScanConfig { block, items_per_thread: ipt };
            let t = block as u64 * ipt as u64;
            let parts = [
                part(t.div_ceil(4).next_multiple_of(8), 16, 16),
                part((block as u64).div_ceil(4), 16, 16),
                part(scan::RAKE as u64 / 4, 16, 16),
                part(scan::WINDOW as u64, 8, 8),
                part(4, 4, 4),
            ];
            let modelled = if t > U32_MAX { None } else { model(&parts) };
            match (cfg.layout(), modelled) {
                (Ok(l), Some((off, bytes))) => {
                    assert_eq!(l.bytes as u64, bytes);
                    check_slice("tile", l.tile, off[0], parts[0], l.bytes);
                    check_slice("scratch", l.scratch, off[1], parts[1], l.bytes);
                    check_slice("rake", l.rake, off[2], parts[2], l.bytes);
                    check_slice("window", l.window, off[3], parts[3], l.bytes);
                    check_slice("misc", l.misc, off[4], parts[4], l.bytes);
                }
                (Err(_), None) => {}
                (got, want) => panic!("{cfg:?}: layout {got:?}, model {want:?}"),
            }
            // The swizzle permutes within the carved tile.
            if let Ok(l) = cfg.layout() {
                let v = (t / 4).min(u32::MAX as u64) as u32;
                if v > 0 {
                    assert!(scan::tile_vec(v - 1) < l.tile.len());
                }
            }
            assert!(cfg.tiles(n) >= 1);
        }
        Family::Conv1d { block, outputs_per_thread, taps, n } => {
            let cfg = conv1d::Conv1dConfig { block, outputs_per_thread };
            let half = taps as u64 / 2;
            let shift = half.next_multiple_of(4) - half;
            let kp = (taps as u64 + shift).next_multiple_of(outputs_per_thread.max(4) as u64);
            let inputs = (block as u64 * outputs_per_thread as u64).saturating_add(kp);
            let parts = [part(inputs.div_ceil(4), 16, 16), part(kp.div_ceil(4), 16, 16)];
            let modelled = if kp > U32_MAX || inputs > U32_MAX { None } else { model(&parts) };
            match (cfg.layout(taps), modelled) {
                (Ok(l), Some((off, bytes))) => {
                    assert_eq!(l.bytes as u64, bytes);
                    check_slice("tile", l.tile, off[0], parts[0], l.bytes);
                    check_slice("weights", l.weights, off[1], parts[1], l.bytes);
                }
                (Err(_), None) => {}
                (got, want) => panic!("{cfg:?} taps {taps}: layout {got:?}, model {want:?}"),
            }
            assert!((1..=conv1d::MAX_GRID).contains(&cfg.grid(n)));
            let _ = conv1d::entry_name(outputs_per_thread);
        }
        Family::Stencil2d { block, tile_w, tile_h, radius, width, height } => {
            // The tile: `tile_h + 2r` rows of the outputs' vectors and a halo of the radius
            // (whole vectors, at least one) each side, then TILE_SPARE vectors; the weights:
            // `2r + 1` rows of the taps rounded up to whole vectors. Past MAX_RADIUS: refused.
            let cfg = stencil2d::Stencil2dConfig { block, tile_w, tile_h };
            let r = radius as u64;
            let halo = r.max(1).next_multiple_of(4);
            let k = 2 * r + 1;
            let pitch = tile_w as u64 / 4 + 2 * halo / 4;
            let rows = tile_h as u64 + 2 * r;
            let vectors = pitch.saturating_mul(rows).saturating_add(stencil2d::TILE_SPARE as u64);
            let weights = k.saturating_mul(k.next_multiple_of(4));
            let parts = [part(vectors, 16, 16), part(weights, 4, 16)];
            let fits_u32 = [rows, k, vectors, weights].iter().all(|&v| v <= U32_MAX);
            let modelled = if fits_u32 && radius <= stencil2d::MAX_RADIUS { model(&parts) } else { None };
            match (cfg.layout(radius), modelled) {
                (Ok(l), Some((off, bytes))) => {
                    assert_eq!(l.bytes as u64, bytes);
                    check_slice("tile", l.tile, off[0], parts[0], l.bytes);
                    check_slice("weights", l.weights, off[1], parts[1], l.bytes);
                }
                (Err(_), None) => {}
                (got, want) => panic!("{cfg:?} radius {radius}: layout {got:?}, model {want:?}"),
            }
            let _ = cfg.fits();
            assert!((1..=stencil2d::MAX_GRID).contains(&cfg.grid(width, height)));
            // Radii of their own name their entry; every radius to MAX_RADIUS has the other.
            assert_eq!(stencil2d::const_entry(radius).is_some(), stencil2d::RADII.contains(&radius));
        }
        Family::Sgemm { bm, bn, bk, stages, f16, m, n } => {
            let cfg = sgemm::SgemmConfig::new(bm, bn, bk, stages);
            let eb: u64 = if f16 { 2 } else { 4 };
            let chunks = |elems: u64| (elems * eb).div_ceil(16);
            let (a, b) = if f16 {
                // Row-major tiles: rows of A padded by one chunk.
                let a = (chunks(bk as u64) + 1).saturating_mul(bm as u64).saturating_mul(stages as u64);
                (a, chunks(bn as u64).saturating_mul(bk as u64).saturating_mul(stages as u64))
            } else {
                // k-groups: ceil(rows / 4) groups of bk + 1 16-byte slots per stage.
                let group = bk as u64 + 1;
                let tile = |rows: u32| (rows as u64).div_ceil(4).saturating_mul(group).saturating_mul(stages as u64);
                (tile(bm), tile(bn))
            };
            let parts = [part(a, 16, 16), part(b, 16, 16)];
            let modelled = if a > U32_MAX || b > U32_MAX { None } else { model(&parts) };
            match (cfg.layout(eb as u32), modelled) {
                (Ok(l), Some((off, bytes))) => {
                    assert_eq!(l.bytes as u64, bytes);
                    check_slice("a", l.a, off[0], parts[0], l.bytes);
                    check_slice("b", l.b, off[1], parts[1], l.bytes);
                }
                (Err(_), None) => {}
                (got, want) => panic!("{cfg:?} f16 {f16}: layout {got:?}, model {want:?}"),
            }
            if cfg.fits(eb as u32) {
                assert_eq!(cfg.threads() as u64, (bm / 8) as u64 * (bn / 8) as u64);
            }
            assert!(cfg.grid(m, n) >= 1);
        }
    }
}

thread_local! {
    static CPU: dynsmem_host::backend::cpu::CpuBackend = dynsmem_host::backend::cpu::CpuBackend::new();
}

/// `ReducePlan::new` on the CPU backend (validation and the pass chain; nothing is
/// allocated or launched): it ends, and an accepted plan's passes shrink to one block
/// in exactly `pass_count` passes, each within the backend's limits.
pub fn reduce_plan(block: u32, ipt: u32, staged: bool, n: u64) {
    use dynsmem_host::backend::Backend;
    use dynsmem_host::backend::Variant;
    use dynsmem_host::families::reduce::{ReduceConfig, ReduceOp, ReducePlan, ReduceProblem};
    let cfg = ReduceConfig { block, items_per_thread: ipt, staged };
    CPU.with(|cpu| {
        let problem = ReduceProblem { n, op: ReduceOp::Max, dtype: Dtype::F32 };
        if let Ok(plan) = ReducePlan::new(cpu, problem, cfg, Variant::LaunchSized) {
            let limits = cpu.info().limits;
            assert_eq!(plan.passes.last().map(|p| p.dims.grid), Some(1), "{cfg:?} n {n}");
            assert_eq!(Some(plan.passes.len() as u32), cfg.pass_count(n), "{cfg:?} n {n}");
            for p in &plan.passes {
                assert!(p.dims.block >= 1 && p.dims.block <= limits.max_threads_per_block);
                assert!(p.dims.shared_bytes <= limits.launch_shared_max);
            }
            assert!(plan.depth() >= 1);
        }
    });
}
