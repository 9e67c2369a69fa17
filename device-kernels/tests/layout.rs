//! Layout math, on the host: the same code the kernels run to find their offsets.

use dynsmem_kernels::Dtype;
use dynsmem_kernels::layout::{Carve, LayoutError};
use dynsmem_kernels::reduce::{MAX_GRID, ReduceConfig, ReduceLayout};

#[test]
fn arrays_are_aligned_and_packed() {
    let mut c = Carve::new();
    let a = c.array::<u8>(3).unwrap();
    let b = c.array::<u32>(5).unwrap();
    let v = c.array_aligned::<f32>(4, 16).unwrap();
    let d = c.array::<u64>(1).unwrap();
    assert_eq!((a.offset(), a.len(), a.bytes()), (0, 3, 3));
    assert_eq!((b.offset(), b.end()), (4, 24));
    assert_eq!((v.offset(), v.end()), (32, 48));
    assert_eq!((d.offset(), d.end()), (48, 56));
    assert_eq!(c.bytes(), 56);
    // Alignment never shrinks below the type's own.
    let mut c = Carve::new();
    c.array::<u8>(1).unwrap();
    assert_eq!(c.array_aligned::<u64>(1, 1).unwrap().offset(), 8);
    // Empty arrays take no space but keep their alignment.
    let mut c = Carve::new();
    c.array::<u8>(1).unwrap();
    let e = c.array_aligned::<f32>(0, 16).unwrap();
    assert_eq!((e.offset(), e.len(), c.bytes()), (16, 0, 16));
}

#[test]
fn overflow_and_bad_alignment_are_errors() {
    let mut c = Carve::new();
    assert_eq!(
        c.array::<u32>(u32::MAX / 2),
        Err(LayoutError::Overflow { offset: 0, len: u32::MAX / 2, elem_bytes: 4 })
    );
    assert_eq!(c.bytes(), 0, "a failed carve does not move the cursor");
    let mut c = Carve::new();
    c.array::<u8>(u32::MAX - 2).unwrap();
    assert!(matches!(c.array::<u32>(1), Err(LayoutError::Overflow { .. })), "aligning up past u32::MAX");
    // Past the region's own alignment: the carve cannot promise it.
    let past = 2 * dynsmem_kernels::gpu::REGION_ALIGN;
    assert_eq!(Carve::new().array_aligned::<u8>(1, past), Err(LayoutError::BadAlign { align: past }));
    assert!(Carve::new().array_aligned::<u8>(1, dynsmem_kernels::gpu::REGION_ALIGN).is_ok());
    assert_eq!(Carve::new().array_aligned::<u8>(1, 3), Err(LayoutError::BadAlign { align: 3 }));
    assert!(LayoutError::BadAlign { align: 3 }.to_string().contains("power of two"));
}

#[test]
fn reduce_layout_totals() {
    // Unstaged: one element of scratch per thread.
    let l = ReduceLayout::new::<f32>(256, 0).unwrap();
    assert_eq!((l.tile_len, l.scratch_offset, l.bytes), (0, 0, 1024));
    // Staged: the tile first (16-aligned), then the scratch.
    let cfg = ReduceConfig { block: 256, items_per_thread: 200, staged: true };
    let l = cfg.layout(Dtype::F32).unwrap();
    assert_eq!((l.tile_offset, l.tile_len, l.scratch_offset, l.bytes), (0, 51_200, 204_800, 205_824));
    assert_eq!(cfg.shared_bytes(Dtype::U32), Ok(205_824));
    // The H100's opt-in limit exactly, and 4 bytes past it.
    assert_eq!(ReduceConfig { block: 256, items_per_thread: 226, staged: true }.shared_bytes(Dtype::F32), Ok(232_448));
    assert_eq!(ReduceConfig { block: 9, items_per_thread: 6456, staged: true }.shared_bytes(Dtype::F32), Ok(232_452));
    // block * ipt past u32 is an error, not a wrapped size.
    assert!(ReduceConfig { block: 1 << 16, items_per_thread: 1 << 16, staged: true }.layout(Dtype::F32).is_err());
}

#[test]
fn reduce_grid_and_passes() {
    let cfg = ReduceConfig { block: 512, items_per_thread: 32, staged: false };
    assert_eq!(cfg.chunk(), Some(16_384));
    assert_eq!(cfg.grid(0), 1, "n = 0 still launches one block, which writes the identity");
    assert_eq!(cfg.grid(1), 1);
    assert_eq!(cfg.grid(16_384), 1);
    assert_eq!(cfg.grid(16_385), 2);
    assert_eq!(cfg.grid(1 << 28), 16_384);
    assert_eq!(cfg.pass_count(1 << 28), Some(2));
    assert_eq!(cfg.pass_count(1), Some(1));
    let tiny = ReduceConfig { block: 32, items_per_thread: 1, staged: false };
    assert_eq!(tiny.grid(1 << 28), MAX_GRID, "blocks loop over chunks past the grid limit");
    assert_eq!(tiny.pass_count(1 << 28), Some(5)); // 2^28 -> 65535 -> 2048 -> 64 -> 2 -> 1
    // A chunk of one element: a pass writes as many partials as it reads, forever.
    let one = ReduceConfig { block: 1, items_per_thread: 1, staged: false };
    assert_eq!(one.pass_count(100), None);
    assert_eq!(one.pass_count(1), Some(1), "one element needs no second pass");
}

/// Sizes near u32::MAX are refused by the layouts, not wrapped (or, with overflow checks,
/// panicked on): found by the `layout` fuzz target (`host/fuzz`).
#[test]
fn layouts_refuse_sizes_that_would_wrap() {
    use dynsmem_kernels::{conv1d::Conv1dConfig, scan::ScanConfig, stencil2d::Stencil2dConfig};
    // conv1d: taps rounded up to a multiple of the outputs per thread, past u32.
    assert!(Conv1dConfig { block: 1, outputs_per_thread: 8 }.layout(u32::MAX).is_err());
    // conv1d and scan: tiles of 16-byte vectors near 2^32 bytes.
    assert!(Conv1dConfig { block: 1 << 30, outputs_per_thread: 4 }.layout(3).is_err());
    assert!(ScanConfig { block: 1 << 16, items_per_thread: (1 << 16) - 1 }.layout().is_err());
    // stencil2d: 2 * radius + 1 and its square.
    assert!(Stencil2dConfig { block: 64, tile_w: 8, tile_h: 8 }.layout(1 << 31).is_err());
    assert!(Stencil2dConfig { block: 64, tile_w: 8, tile_h: 8 }.layout(1 << 16).is_err());
    // Ordinary sizes are unchanged.
    // 1024 outputs and 40 taps (33 rounded up to 8s), as vectors.
    assert_eq!(Conv1dConfig { block: 128, outputs_per_thread: 8 }.shared_bytes(33), Ok((1064 + 40) * 4));
    assert!(ScanConfig { block: 512, items_per_thread: 16 }.layout().is_ok());
    assert!(Stencil2dConfig { block: 64, tile_w: 8, tile_h: 8 }.layout(2).is_ok());
}

/// The sgemm carve of three u32 fields whose product passes u64 is refused, not wrapped
/// (found by the `layout` fuzz target).
#[test]
fn sgemm_layout_refuses_products_past_u64() {
    use dynsmem_kernels::sgemm::SgemmConfig;
    let huge = SgemmConfig::new(102_399, 0, 3_187_671_040, 4_294_907_904);
    assert!(huge.layout(4).is_err());
    assert!(huge.layout(2).is_err());
    let ok = SgemmConfig::new(128, 128, 32, 2);
    // f32, k-groups: 128 / 4 groups of A and of B, each 32 + 1 16-byte slots, per stage.
    assert_eq!(ok.shared_bytes(4), Ok(2 * (32 * 33 + 32 * 33) * 16));
    // f16, row-major: A rows of 32 + 8 halves, B rows of 128.
    assert_eq!(ok.shared_bytes(2), Ok(2 * (128 * 40 + 32 * 128) * 2));
}
