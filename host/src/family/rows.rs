//! The host side of the row skeleton (`dynsmem_kernels::rows`) that the row-wise families
//! (softmax, RMSNorm) share: the description of a row kernel ([`kernel`]: its space, its
//! one validation, its default, the static forms' fallbacks and the twins' builders). A
//! family's folder keeps what is its own (sizes, arguments, reference, tolerance).

use dynsmem_kernels::rows::RowConfig;

use super::kernel::{Case, Problem};
use super::{Footprint, Target};
use crate::backend::{AnyBackend, BackendKind, Limits, Variant};
use crate::contract::{
    CudaSource, FamilyBackend, Kernel, Launch, Param, Params, WgslFold, WgslSpec, Workload, check_footprint,
    check_index, fill_template, fit_static, halvings, invalid, invalid_problem, wgsl_fold, wgsl_ids, wgsl_sizing,
    wgsl_unroll,
};
use crate::error::Result;

/// A row-wise kernel: its entry's name, what a row of no elements lacks (for the refusal),
/// and its twins: the CUDA C text (defines `COLS` and `BLOCK`) and the WGSL template (slots
/// `SIZING`, declaring `BLOCK` and `COLS`, and `FOLDS`).
pub struct RowKernel {
    pub name: &'static str,
    /// The `kernels!` table of the entry (the CPU backend runs it).
    pub table: &'static [dynsmem_kernels::KernelEntry],
    pub empty: &'static str,
    pub cuda: &'static str,
    pub cuda_file: &'static str,
    pub cuda_entry: &'static str,
    pub wgsl: &'static str,
    pub wgsl_entry: &'static str,
    /// Whether the WGSL row is whole vectors (its `COLS` rounded up to a multiple of 4).
    pub wgsl_vectors: bool,
    /// The WGSL form with the row in registers (slots `SIZING`, declaring `BLOCK`, `UNITS`
    /// and `PER_THREAD`, `UNIT`, `UNIT_MAX`, `UNIT_SUM` and `FOLDS`; `@@` lines unrolled
    /// by [`crate::contract::wgsl_unroll`]): the wgsl-subgroup variant's, where a thread
    /// keeps at most [`WGSL_MAX_REGISTER_FLOATS`] floats.
    pub wgsl_registers: &'static str,
    /// The block folds the WGSL form calls (see [`crate::contract::wgsl_fold`]); with
    /// subgroup operations in the wgsl-subgroup variant.
    pub wgsl_folds: &'static [WgslFold],
    /// Whether the kernel can hold its part of a second vector of `cols` floats beside the
    /// row (`dynsmem_kernels::rows::Row::hold`, RMSNorm's weight; held where
    /// `RowConfig::holds` says).
    pub held: bool,
}

/// A row kernel's workload of one config: the family's own launch (its inputs from the seed,
/// its reference and tolerance).
pub trait RowWorkload: for<'b> Fn(AnyBackend<'b>, RowConfig, Variant, u64) -> Result<Box<dyn Workload + 'b>> {}
impl<F: for<'b> Fn(AnyBackend<'b>, RowConfig, Variant, u64) -> Result<Box<dyn Workload + 'b>>> RowWorkload for F {}

/// The description of row kernel `k` for `rows x cols`: the space ([`space`]), the one
/// validation ([`check`]), `default` the family's heuristic (given the limits, whether the
/// backend asks for small configs, and the shape), the twins' fallbacks ([`fit_config`]),
/// the twins, and `workload` the family's launch of one config.
pub fn kernel(
    k: &'static RowKernel,
    (rows, cols): (u32, u32),
    default: fn(&Limits, bool, (u32, u32)) -> RowConfig,
    workload: impl RowWorkload + 'static,
) -> Kernel {
    Kernel::new(k.table, k.name)
        .space(space)
        .footprint_by(move |p, t| check(k, (rows, cols), &config_of(p), t))
        .default_by(move |b| params_of(&default(&b.info().limits, b.small_configs(), (rows, cols))))
        .fit_by(move |p, v, limits| {
            let (c, note) = fit_config(limits, v, cols, config_of(p));
            (params_of(&c), note)
        })
        .twins_by(
            k.wgsl,
            move |p, v| wgsl_spec(k, cols, &config_of(p), v),
            move |p| cuda_source(k, cols, &config_of(p)),
        )
        // Every variant: the WGSL folds have a subgroup form.
        .forms(|_| true)
        .workload_by(move |b, p, v, seed| workload(b, config_of(p), v, seed))
}

/// The row families' edge case: 65537 rows of 5, one block each at 4 threads: past the
/// 65535-block grid.
pub fn edge_cases() -> Vec<Case> {
    vec![Case::with(serde_json::json!({"rows": 65_537, "cols": 5}), serde_json::json!({"block": 4, "cluster": 1}))]
}

/// The row families' copy anchor: the `rows x cols` floats once.
pub fn anchor_bytes(p: &Problem) -> u64 {
    crate::contract::bytes_of(p["rows"] * p["cols"], 4)
}

/// The row skeleton's parameters on `target`: a CPU device sweeps fewer threads; clusters
/// only where the backend runs them, and only for the Rust kernel.
pub fn space(target: &Target) -> Vec<Param> {
    let clusters: Vec<u32> = CLUSTERS
        .into_iter()
        .filter(|&c| c <= target.limits.max_cluster && (c == 1 || target.variant == Variant::LaunchSized))
        .collect();
    let block: &[u32] = if target.is_cpu { &[4, 8, 16, 32] } else { &[32, 64, 128, 256, 512, 1024] };
    // Caches recorded before clusters existed read as clusters of 1.
    vec![Param::new("block", block), Param::new("cluster", &clusters).absent_as(1)]
}

/// The row config of a point.
pub fn config_of(p: &Params) -> RowConfig {
    RowConfig { block: p["block"], cluster: p["cluster"] }
}

/// The point of a row config.
pub fn params_of(c: &RowConfig) -> Params {
    Params([("block", c.block), ("cluster", c.cluster)].into_iter().collect())
}

/// The row skeleton's one validation: `k` for `rows x cols` at `config` on `target`, and what
/// it asks for. `build` (every prepare) calls it first and the tuner filters with it: a
/// block of at least one thread, rows of at least one element, the cluster (a power of two,
/// within the backend's; 1 for the twins), the u32 row counter (both forms step it by the
/// grid past the last row), WGSL's u32 indices and the layout.
pub fn check(k: &RowKernel, (rows, cols): (u32, u32), config: &RowConfig, target: &Target) -> Result<Footprint> {
    if config.block == 0 {
        return Err(invalid(k.name, "block must be at least 1 thread"));
    }
    if cols == 0 {
        return Err(invalid_problem(k.name, format!("rows of 0 elements have no {}", k.empty)));
    }
    check_cluster(config, target.variant, target.limits.max_cluster).map_err(|reason| invalid(k.name, reason))?;
    // The Rust kernel holds several short rows a block; the twins a row a workgroup.
    let (grid, step) = if target.variant == Variant::LaunchSized {
        (config.grid(rows, cols), config.step(rows, cols))
    } else {
        let grid = rows.clamp(1, dynsmem_kernels::rows::MAX_GRID);
        (grid, grid as u64)
    };
    check_index(k.name, "rows + grid x rows per block", rows as u64 + step, u32::MAX as u64, "u32 (row counter)")?;
    if target.backend == BackendKind::Wgsl {
        check_index(k.name, "rows * cols", rows as u64 * cols as u64, u32::MAX as u64, "WGSL u32")?;
    }
    let launch_bytes = config
        .shared_bytes(cols, config.holds(k.held))
        .map_err(|source| crate::error::Error::Layout { kernel: k.name.into(), source })?;
    let static_bytes = match target.variant {
        Variant::LaunchSized => 0,
        Variant::CudaStatic => static_bytes(cols, config),
        Variant::WgslLiteral | Variant::WgslOverride | Variant::WgslSubgroup => {
            wgsl_static_bytes(k, cols, config, target.variant)
        }
    };
    Ok(Footprint { threads: config.block, grid, launch_bytes, static_bytes })
}

/// The cluster sizes the search space offers (where the backend runs them; 16 is past the
/// portable size, which CUDA runs on compute capability 9.0 by opting in).
pub const CLUSTERS: [u32; 5] = [1, 2, 4, 8, 16];

/// Blocks per row: a power of two up to the backend's clusters, and 1 for the twins, which
/// hold a whole row in one workgroup (WGSL has no clusters; the CUDA C twin keeps the
/// one-block form).
fn check_cluster(config: &RowConfig, variant: Variant, max_cluster: u32) -> std::result::Result<(), String> {
    let c = config.cluster;
    if c == 0 || !c.is_power_of_two() {
        return Err(format!("cluster must be a power of two blocks, not {c}"));
    }
    if c > 1 && variant != Variant::LaunchSized {
        return Err(format!(
            "clusters of {c} blocks: the {variant} twin holds a whole row in one workgroup (no cluster form)"
        ));
    }
    if c > max_cluster {
        return Err(format!("clusters of {c} blocks: this backend runs clusters of at most {max_cluster}"));
    }
    Ok(())
}

/// The default config on a GPU: 256 threads, rows split over the smallest cluster (up to
/// `limits.max_cluster`) whose blocks fit [`RESIDENT_BLOCKS`] to a multiprocessor's shared
/// memory, so that one block's reads overlap the others' folds and writes. Where the rows
/// leave most multiprocessors idle (fewer clusters than half of them), a row is split
/// further, while each thread keeps at least [`MIN_VECTORS`] vectors of it: a single long
/// row is read by 16 multiprocessors, not 8. `small`: the CPU backend's (16 threads, a block
/// per row).
pub fn default_config(k: &RowKernel, small: bool, (rows, cols): (u32, u32), limits: &Limits) -> RowConfig {
    if small {
        return RowConfig::blocks(16);
    }
    let per_sm = limits.shared_per_multiprocessor.unwrap_or(RESIDENT_BLOCKS * 64 * 1024);
    let fits = |c: &RowConfig| {
        // The driver reserves 1 KB of each block's shared memory.
        c.shared_bytes(cols, c.holds(k.held)).is_ok_and(|b| RESIDENT_BLOCKS as u64 * (b as u64 + 1024) <= per_sm as u64)
    };
    let mut config = RowConfig::blocks(256);
    while !fits(&config) && config.cluster * 2 <= limits.max_cluster {
        config.cluster *= 2;
    }
    let idle = |c: &RowConfig| (rows as u64 * c.cluster as u64) < limits.multiprocessors.unwrap_or(0) as u64 / 2;
    let wide = |c: &RowConfig| c.part(cols) >= (4 * MIN_VECTORS * c.block) as u64;
    loop {
        let next = RowConfig { cluster: config.cluster * 2, ..config };
        if !(idle(&config) && next.cluster <= limits.max_cluster && wide(&next)) {
            return config;
        }
        config = next;
    }
}

/// Vectors of a row each thread keeps at least where the default splits a row further to
/// use idle multiprocessors.
pub const MIN_VECTORS: u32 = 4;

/// Blocks the default config leaves room for on one multiprocessor.
pub const RESIDENT_BLOCKS: u32 = 3;

/// The config `variant` runs for `asked` on rows of `cols`: `asked` for the Rust kernels; for
/// the twins, a block per row (they have no cluster form), then the static forms' fallbacks
/// where its arrays pass the static limit, with a note for each change.
pub fn fit_config(limits: &Limits, variant: Variant, cols: u32, asked: RowConfig) -> (RowConfig, Option<String>) {
    let (config, note) = if variant == Variant::LaunchSized || asked.cluster == 1 {
        (asked, None)
    } else {
        let fitted = RowConfig::blocks(asked.block);
        (fitted, Some(format!("the {variant} twin holds a whole row in one workgroup: ran {fitted:?}, not {asked:?}")))
    };
    let limit = limits.static_shared_max;
    let fallbacks = static_fallbacks(&config);
    let (config, fitted) = fit_static(variant, limit, config, fallbacks, |c| Some(static_bytes(cols, c)));
    (config, note.into_iter().chain(fitted).reduce(|a, b| format!("{a}; {b}")))
}

/// The static forms' fallbacks: smaller blocks, down to 32. The row itself must fit beside
/// the scratch (12032 floats with 256 threads): rows of 32768 floats (128 KB) have no
/// static config, and their cuda-static row is refused with the bytes and the limit.
pub fn static_fallbacks(config: &RowConfig) -> Vec<RowConfig> {
    halvings(config.block, 32).map(RowConfig::blocks).collect()
}

fn wgsl_row(k: &RowKernel, cols: u32) -> u32 {
    let cols = cols.max(1);
    if k.wgsl_vectors { cols.next_multiple_of(4) } else { cols }
}

/// Most floats of a row a thread of the registers form keeps (16 vec4s, or 64 floats where
/// the row is not whole vectors): within the registers a 1024-thread workgroup leaves.
pub const WGSL_MAX_REGISTER_FLOATS: u32 = 64;

/// The registers form's unit for rows of `cols` (vec4 where the rows are whole vectors,
/// else f32), units a row and units a thread keeps; `None` where `variant` is not
/// wgsl-subgroup or a thread would keep more than [`WGSL_MAX_REGISTER_FLOATS`] (the row then
/// goes through workgroup memory, as in the other twins).
pub fn wgsl_registers(cols: u32, cfg: &RowConfig, variant: Variant) -> Option<(&'static str, u32, u32)> {
    let cols = cols.max(1);
    let (unit, units, floats) = if cols.is_multiple_of(4) { ("vec4<f32>", cols / 4, 4) } else { ("f32", cols, 1) };
    let per_thread = units.div_ceil(cfg.block.max(1));
    (variant == Variant::WgslSubgroup && per_thread * floats <= WGSL_MAX_REGISTER_FLOATS)
        .then_some((unit, units, per_thread))
}

/// Bytes of the WGSL form's static arrays: the row and a float per thread (the registers
/// form: the float per thread only).
pub fn wgsl_static_bytes(k: &RowKernel, cols: u32, config: &RowConfig, variant: Variant) -> u32 {
    let row = if wgsl_registers(cols, config, variant).is_some() { 0 } else { wgsl_row(k, cols) as u64 };
    ((row + config.block as u64) * 4).min(u32::MAX as u64) as u32
}

/// The WGSL form of `k` for rows of `cols`: the registers form ([`wgsl_registers`]) where it
/// applies, else the row in workgroup memory.
pub fn wgsl_spec(k: &RowKernel, cols: u32, cfg: &RowConfig, variant: Variant) -> WgslSpec {
    let folds: Vec<String> = k.wgsl_folds.iter().map(|fold| wgsl_fold(variant, fold, "f32", "scratch")).collect();
    let registers = wgsl_registers(cols, cfg, variant);
    let (source, constants) = if let Some((unit, units, per_thread)) = registers {
        let sizes = [
            ("BLOCK", "u32", cfg.block as f64),
            ("UNITS", "u32", units as f64),
            ("PER_THREAD", "u32", per_thread as f64),
        ];
        let (sizing, constants) = wgsl_sizing(variant, &sizes);
        let vector = unit != "f32";
        let filled = fill_template(
            k.wgsl_registers,
            &[
                ("SIZING", &sizing),
                ("FOLDS", &folds.join("\n")),
                ("IDS", wgsl_ids(variant)),
                ("UNIT", unit),
                ("UNIT_MAX", if vector { "return max(max(v.x, v.y), max(v.z, v.w));" } else { "return v;" }),
                ("UNIT_SUM", if vector { "return (v.x + v.y) + (v.z + v.w);" } else { "return v;" }),
            ],
        );
        (wgsl_unroll(&filled, per_thread, !units.is_multiple_of(cfg.block.max(1))), constants)
    } else {
        let sizes = [("BLOCK", "u32", cfg.block as f64), ("COLS", "u32", wgsl_row(k, cols) as f64)];
        let (sizing, constants) = wgsl_sizing(variant, &sizes);
        let slots = [("SIZING", sizing.as_str()), ("FOLDS", &folds.join("\n")), ("IDS", wgsl_ids(variant))];
        (fill_template(k.wgsl, &slots), constants)
    };
    WgslSpec {
        name: format!(
            "{}[{variant},cols={},block={}{}]",
            k.name,
            cols.max(1),
            cfg.block,
            if registers.is_some() { ",registers" } else { "" }
        ),
        source,
        entry: k.wgsl_entry,
        constants,
        workgroup_size: cfg.block,
        static_bytes: wgsl_static_bytes(k, cols, cfg, variant),
        subgroups: variant == Variant::WgslSubgroup,
        f16: false,
    }
}

/// Bytes of the CUDA C twin's static arrays: the row, then `block` floats of scratch.
pub fn static_bytes(cols: u32, cfg: &RowConfig) -> u32 {
    ((cols as u64 + cfg.block as u64) * 4).min(u32::MAX as u64) as u32
}

/// The cuda-static form of `k`: the row length and block as defines; its static arrays are
/// the row, 16-byte aligned, then `block` floats of scratch.
pub fn cuda_source(k: &RowKernel, cols: u32, cfg: &RowConfig) -> CudaSource {
    CudaSource {
        name: format!("{}[cuda-static,cols={cols},block={}]", k.name, cfg.block),
        source: k.cuda,
        file: k.cuda_file,
        entry: k.cuda_entry,
        defines: vec![("COLS", cols.to_string()), ("BLOCK", cfg.block.to_string())],
        static_bytes: static_bytes(cols, cfg),
    }
}

/// Checks `k` for `rows x cols` before anything is uploaded ([`check`], then the footprint:
/// `device` and `host` bytes in all), builds it for `variant` and starts its launch.
pub fn build<'b, B: FamilyBackend>(
    backend: &'b B,
    k: &RowKernel,
    (rows, cols): (u32, u32),
    config: &RowConfig,
    variant: Variant,
    (device, host): (u64, u64),
) -> Result<Launch<'b, B>> {
    let footprint = check(k, (rows, cols), config, &Target::of(backend, variant))?;
    check_footprint(backend, k.name, device, host)?;
    let wgsl = |v: Variant| wgsl_spec(k, cols, config, v);
    let cuda = || cuda_source(k, cols, config);
    Launch::prepare(
        backend,
        k.name,
        (Ok(footprint.launch_bytes), footprint.grid, footprint.threads),
        variant,
        &wgsl,
        &cuda,
    )?
    .clustered(config.cluster)
}

#[cfg(test)]
mod tests {
    use dynsmem_kernels::rows::RowConfig;

    use super::{WGSL_MAX_REGISTER_FLOATS, wgsl_registers};
    use crate::backend::Variant;

    #[test]
    fn the_registers_form_holds_at_most_its_floats_a_thread_and_only_in_wgsl_subgroup() {
        let at = |cols, block| wgsl_registers(cols, &RowConfig::blocks(block), Variant::WgslSubgroup);
        // Whole vectors: 4096 floats are 1024 vec4s, 16 a thread at 64 threads (64 floats).
        assert_eq!(at(4096, 64), Some(("vec4<f32>", 1024, 16)));
        assert_eq!(at(4096, 32), None, "32 vec4s a thread: 128 floats");
        // Rows that are not whole vectors are floats: 4097 at 64 threads is 65 a thread.
        assert_eq!(at(4097, 64), None);
        assert_eq!(at(4097, 128), Some(("f32", 4097, 33)));
        assert_eq!(at(4 * WGSL_MAX_REGISTER_FLOATS, 4), Some(("vec4<f32>", WGSL_MAX_REGISTER_FLOATS, 16)));
        for v in [Variant::WgslLiteral, Variant::WgslOverride, Variant::LaunchSized, Variant::CudaStatic] {
            assert_eq!(wgsl_registers(4096, &RowConfig::blocks(256), v), None, "{v}");
        }
    }

    #[test]
    fn the_registers_form_declares_no_row_array() {
        let k = &crate::families::softmax::KERNEL;
        let cfg = RowConfig::blocks(256);
        let registers = super::wgsl_spec(k, 4096, &cfg, Variant::WgslSubgroup);
        assert!(registers.name.ends_with(",registers]"), "{}", registers.name);
        assert_eq!(registers.static_bytes, 256 * 4, "the fold's scratch only");
        let marked = registers.source.lines().any(|l| l.trim_start().starts_with("@@"));
        assert!(!marked && !registers.source.contains("{{"), "{}", registers.source);
        let plain = super::wgsl_spec(k, 4096, &cfg, Variant::WgslLiteral);
        assert_eq!(plain.static_bytes, (4096 + 256) * 4);
    }
}
