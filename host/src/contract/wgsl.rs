//! The WGSL side of a kernel: one pipeline's text, entry and sizing ([`WgslSpec`]), and
//! the template helpers the twins are written with. The binding convention every WGSL
//! kernel follows is [`crate::backend::wgpu`]'s: the buffer arguments in argument order at
//! bindings 0, 1, ... of group 0, then the scalars packed 4 bytes each into one uniform
//! block at the next binding.

use crate::backend::Variant;

/// One WGSL pipeline of a family's kernel: the text, its entry point, the `override`
/// values, and what it declares.
#[derive(Debug, Clone)]
pub struct WgslSpec {
    /// Kernel name for errors and records, e.g. `histogram_u32[wgsl-literal,bins=256]`.
    pub name: String,
    pub source: String,
    pub entry: &'static str,
    pub constants: Vec<(&'static str, f64)>,
    pub workgroup_size: u32,
    /// Bytes of the static `var<workgroup>` arrays the text declares.
    pub static_bytes: u32,
}

/// The struct an entry point takes its ids in (`fn entry(ids: Ids)`): the thread's index
/// in its workgroup, the workgroup's index and the grid's size, as the Rust kernels'
/// `thread_idx_x`, `block_idx_x` and `grid_dim_x` (`.x` of the last two).
pub const WGSL_IDS: &str = "struct Ids {
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
}";

/// Fills `{{KEY}}` slots of a WGSL template, and the slot `{{IDS}}`, wherever it stands,
/// with [`WGSL_IDS`]. Every slot must be filled: a slot left over is a bug in the
/// launcher, caught by the tests that build every pipeline.
pub fn fill_template(template: &str, slots: &[(&str, &str)]) -> String {
    let mut out = template.replace("{{IDS}}", WGSL_IDS);
    for (key, value) in slots {
        out = out.replace(&format!("{{{{{key}}}}}"), value);
    }
    debug_assert!(!out.contains("{{"), "unfilled template slot in:\n{out}");
    out
}

const BLOCK_FOLD_WGSL: &str = include_str!("block_fold.wgsl");

/// The WGSL text of `fn name(tid: u32, value: t) -> t`, a block-wide fold of every
/// thread's value with `combine` (an expression of `a` and `b`) through the workgroup
/// array `scratch` (`block_fold.wgsl`), for a kernel's template slot.
pub fn wgsl_block_fold(name: &str, t: &str, scratch: &str, combine: &str) -> String {
    fill_template(BLOCK_FOLD_WGSL, &[("NAME", name), ("T", t), ("SCRATCH", scratch), ("COMBINE", combine)])
}

/// The WGSL sizing declarations of a template: `const` lines for the literal variant,
/// `override` lines (values set at pipeline creation) for the override variant.
pub fn wgsl_sizing(
    variant: Variant,
    items: &[(&'static str, &'static str, f64)],
) -> (String, Vec<(&'static str, f64)>) {
    match variant {
        Variant::WgslOverride => (
            items.iter().map(|(name, ty, _)| format!("override {name}: {ty};")).collect::<Vec<_>>().join("\n"),
            items.iter().map(|(name, _, v)| (*name, *v)).collect(),
        ),
        _ => (
            items
                .iter()
                .map(|(name, ty, v)| match *ty {
                    "bool" => format!("const {name}: bool = {};", *v != 0.0),
                    "f32" => format!("const {name}: f32 = {v:?};"),
                    _ => format!("const {name}: {ty} = {}u;", *v as u64),
                })
                .collect::<Vec<_>>()
                .join("\n"),
            Vec::new(),
        ),
    }
}
