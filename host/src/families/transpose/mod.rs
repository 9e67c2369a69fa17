//! Transpose of f32 matrices, host side: problem, configs, the WGSL form beside it
//! (`transpose.wgsl`), the CPU reference and the [`Workload`]. The device algorithm is
//! documented in `dynsmem_kernels::transpose`.

use dynsmem_kernels::transpose::{TransposeConfig, TransposeRefusal};
use serde::{Deserialize, Serialize};

use crate::backend::BackendKind;
use crate::backend::Variant;
use crate::contract::{
    CudaSource, FamilyBackend, Footprint, Launch, Target, WgslSpec, fill_template, invalid, wgsl_sizing,
};
use crate::error::{Error, Result};
use crate::rng::SplitMix64;
use crate::verify::{Tolerance, check_slice};

mod family;

pub use family::TRANSPOSE;

pub(crate) const WGSL_TEMPLATE: &str = include_str!("transpose.wgsl");
pub(crate) const KERNEL: &str = "transpose_f32";
/// The thin-matrix entry (slabs), launched where [`TransposeConfig::slab`] cuts the matrix.
const KERNEL_THIN: &str = "transpose_thin_f32";

/// The entry `config` runs for a `rows x cols` matrix: slabs where the config cuts it so.
pub fn entry(config: &TransposeConfig, rows: u32, cols: u32) -> &'static str {
    if config.slab(rows, cols).is_some() { KERNEL_THIN } else { KERNEL }
}
/// The cuda-static form: the same algorithm in CUDA C with static arrays.
pub const CUDA_SOURCE: &str = include_str!("transpose.cu");

/// A row-major `rows x cols` matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TransposeProblem {
    pub rows: u32,
    pub cols: u32,
}

/// 64 x 64 tiles padded by one float (no bank conflicts), 256 threads (16 rows each), tuned
/// on the H100; the WGSL twin's 32 x 32 tiles of 256 threads (8 rows each), tuned on the
/// H200 (provenance of both in `NOTES.md`); on the CPU backend 8 x 8 tiles of 16 threads.
pub fn default_config<B: FamilyBackend>(backend: &B) -> TransposeConfig {
    default_for(backend.kind(), backend.small_configs())
}

/// [`default_config`] on a backend of `kind` that asks for small configs (`small`) or not.
pub fn default_for(kind: BackendKind, small: bool) -> TransposeConfig {
    if small {
        TransposeConfig { block: 16, tile: 8, pad: 1 }
    } else if kind == BackendKind::Wgsl {
        TransposeConfig { block: 256, tile: 32, pad: 1 }
    } else {
        TransposeConfig { block: 256, tile: 64, pad: 1 }
    }
}

pub(crate) fn wgsl_spec(cfg: &TransposeConfig, variant: Variant) -> WgslSpec {
    let (sizing, constants) = wgsl_sizing(
        variant,
        &[("BLOCK", "u32", cfg.block as f64), ("TILE", "u32", cfg.tile as f64), ("PAD", "u32", cfg.pad as f64)],
    );
    WgslSpec {
        name: format!("{KERNEL}[{variant},tile={},pad={},block={}]", cfg.tile, cfg.pad, cfg.block),
        source: fill_template(WGSL_TEMPLATE, &[("SIZING", &sizing)]),
        entry: "transpose",
        constants,
        workgroup_size: cfg.block,
        static_bytes: ((cfg.tile as u64 * (cfg.tile as u64 + cfg.pad as u64)) * 4).min(u32::MAX as u64) as u32,
        subgroups: false,
        f16: false,
    }
}

/// The cuda-static kernel: `transpose.cu` with the tile, padding and block as defines; its
/// static array is the Rust kernel's layout (`tile x (tile + pad)` floats).
pub fn cuda_source(cfg: &TransposeConfig) -> CudaSource {
    CudaSource {
        name: format!("{KERNEL}[cuda-static,tile={},pad={},block={}]", cfg.tile, cfg.pad, cfg.block),
        source: CUDA_SOURCE,
        file: "transpose.cu",
        entry: "transpose_static",
        defines: vec![("TILE", cfg.tile.to_string()), ("PAD", cfg.pad.to_string()), ("BLOCK", cfg.block.to_string())],
        static_bytes: cfg.shared_bytes().unwrap_or(u32::MAX),
    }
}

/// The CPU reference, as the check compares it (f64), gathered on every core: the bench's
/// matrices are 2^28 elements.
pub use dynsmem_reference::transpose as reference;

/// The transpose's one validation: `config` for `problem` on `target`, and what it asks for.
/// `prepare` calls it first and the tuner filters with it: the tile rules and layout
/// (`TransposeConfig::fits`), sides within one tile of 2^32 (both forms compute a tile's rows
/// and columns as u32: `r0 + j` with `j < tile`, and WGSL's `cols + TILE - 1`; a side that
/// wraps would overwrite valid rows), and on WGSL its u32 element index and tile counter.
pub fn check(problem: &TransposeProblem, config: &TransposeConfig, target: &Target) -> Result<Footprint> {
    let TransposeProblem { rows, cols } = *problem;
    let launch_bytes = match config.fits() {
        Err(TransposeRefusal::Layout(source)) => return Err(Error::Layout { kernel: KERNEL.into(), source }),
        Err(why) => return Err(invalid(KERNEL, why.to_string())),
        Ok(bytes) => bytes,
    };
    let side_limit = u32::MAX as u64 - config.tile as u64;
    crate::contract::check_index(KERNEL, "rows", rows as u64, side_limit, "u32 (tile row)")?;
    crate::contract::check_index(KERNEL, "cols", cols as u64, side_limit, "u32 (tile column)")?;
    if target.backend == BackendKind::Wgsl {
        crate::contract::check_index(KERNEL, "rows * cols", rows as u64 * cols as u64, u32::MAX as u64, "WGSL u32")?;
        let tiles_plus_grid = config.square_tiles(rows, cols) + config.grid(rows, cols) as u64;
        crate::contract::check_index(
            KERNEL,
            "tiles + grid",
            tiles_plus_grid,
            u32::MAX as u64,
            "WGSL u32 (tile counter)",
        )?;
    }
    Footprint::of_variant(
        target.variant,
        (config.block, config.grid(rows, cols)),
        || Ok(launch_bytes),
        || Ok(cuda_source(config).static_bytes),
        |v| Ok(wgsl_spec(config, v).static_bytes),
    )
}

/// Transpose of a `rows x cols` matrix drawn from `seed` (uniform in [-1, 1)), checked exactly.
pub fn prepare<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: TransposeProblem,
    config: TransposeConfig,
    variant: Variant,
    seed: u64,
) -> Result<Launch<'b, B>> {
    let TransposeProblem { rows, cols } = problem;
    // The one validation (the tuner's filter too), before anything is generated or uploaded.
    let footprint = check(&problem, &config, &Target::of(backend, variant))?;
    let elems = rows as u64 * cols as u64;
    // Input and output on the device; the input, the reference, the NaN fill and, in
    // the check, the read-back and the reference as f64 on the host.
    crate::contract::check_footprint(
        backend,
        KERNEL,
        crate::contract::bytes_of(elems, 8),
        crate::contract::bytes_of(elems, 24),
    )?;
    let wgsl = |v: Variant| wgsl_spec(&config, v);
    let cuda = || cuda_source(&config);
    let geometry = (Ok(footprint.launch_bytes), footprint.grid, footprint.threads);
    let launch = Launch::prepare(backend, entry(&config, rows, cols), geometry, variant, &wgsl, &cuda)?;
    // One draw an element, on every core (the stream of `seed`, element by element).
    let data: Vec<f32> = crate::par::map(elems as usize, |i| SplitMix64::after(seed, i as u64).next_f32() * 2.0 - 1.0);
    let expected = reference(&data, rows as usize, cols as usize);
    let check = move |name: &str, got: &[f32]| check_slice(name, &expected, got, |_| 0.0, Tolerance::EXACT);
    Ok(launch
        .input(&data)?
        .output(&vec![f32::NAN; elems as usize], check)?
        .arg(rows)
        .arg(cols)
        .arg(config.tile)
        .arg(config.pad)
        .bytes(2 * elems * 4))
}

#[cfg(test)]
mod tests {
    #[test]
    fn reference_transposes() {
        assert_eq!(super::reference(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    }
}
