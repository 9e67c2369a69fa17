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
    /// Whether the text uses subgroup operations: the form the wgsl-subgroup variant runs.
    /// A twin built for that variant without them is refused (it would be wgsl-literal's).
    pub subgroups: bool,
    /// Whether the text has `enable f16;` (wgpu's SHADER_F16 feature): refused, with that
    /// reason, on an adapter without it.
    pub f16: bool,
}

/// The struct an entry point takes its ids in (`fn entry(ids: Ids)`): the thread's index
/// in its workgroup, the workgroup's index and the grid's size, as the Rust kernels'
/// `thread_idx_x`, `block_idx_x` and `grid_dim_x` (`.x` of the last two).
pub const WGSL_IDS: &str = "struct Ids {
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
}";

/// [`WGSL_IDS`] with the thread's subgroup: its lane and the subgroup's size, the
/// subgroup's index in the workgroup and their number (the wgsl-subgroup variant's ids).
pub const WGSL_IDS_SUBGROUP: &str = "struct Ids {
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) lanes: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(num_subgroups) sgs: u32,
}";

/// The ids struct of `variant`'s templates: [`WGSL_IDS_SUBGROUP`] for wgsl-subgroup.
pub fn wgsl_ids(variant: Variant) -> &'static str {
    if variant == Variant::WgslSubgroup { WGSL_IDS_SUBGROUP } else { WGSL_IDS }
}

/// Fills `{{KEY}}` slots of a WGSL template; the slot `{{IDS}}`, where `slots` leaves it,
/// with [`WGSL_IDS`]. Every slot must be filled: a slot left over is a bug in the
/// launcher, caught by the tests that build every pipeline.
pub fn fill_template(template: &str, slots: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (key, value) in slots {
        out = out.replace(&format!("{{{{{key}}}}}"), value);
    }
    let out = out.replace("{{IDS}}", WGSL_IDS);
    debug_assert!(!out.contains("{{"), "unfilled template slot in:\n{out}");
    out
}

const BLOCK_FOLD_WGSL: &str = include_str!("block_fold.wgsl");
const SUBGROUP_FOLD_WGSL: &str = include_str!("subgroup_fold.wgsl");

/// A block-wide fold a WGSL twin uses: `fn name(ids: Ids, value: T) -> T` folds every
/// thread's value; every thread gets the result.
#[derive(Debug, Clone, Copy)]
pub struct WgslFold {
    pub name: &'static str,
    /// The fold of two values, an expression of `a` and `b` (associative and commutative).
    pub combine: &'static str,
    /// `combine`'s identity, a WGSL expression of type T.
    pub identity: &'static str,
    /// The subgroup builtin that folds the same way (`subgroupAdd`, `subgroupMax`, ...).
    pub subgroup: &'static str,
}

impl WgslFold {
    pub const fn sum(name: &'static str) -> WgslFold {
        WgslFold { name, combine: "a + b", identity: "T(0)", subgroup: "subgroupAdd" }
    }
    /// The f32 maximum (identity -inf).
    pub const fn max_f32(name: &'static str) -> WgslFold {
        WgslFold { name, combine: "max(a, b)", identity: "bitcast<f32>(0xff800000u)", subgroup: "subgroupMax" }
    }
}

/// The WGSL text of `fold` over elements of type `t` for `variant`: in the wgsl-subgroup
/// variant `subgroup_fold.wgsl` (the subgroup builtin, then one partial per subgroup
/// through `scratch`, at least as many elements as subgroups); otherwise
/// `block_fold.wgsl` (a tree through `scratch`, at least BLOCK elements).
pub fn wgsl_fold(variant: Variant, fold: &WgslFold, t: &str, scratch: &str) -> String {
    let template = if variant == Variant::WgslSubgroup { SUBGROUP_FOLD_WGSL } else { BLOCK_FOLD_WGSL };
    let identity = fold.identity.replace("T(", &format!("{t}("));
    fill_template(
        template,
        &[
            ("NAME", fold.name),
            ("T", t),
            ("SCRATCH", scratch),
            ("COMBINE", fold.combine),
            ("IDENTITY", &identity),
            ("SUBGROUP_OP", fold.subgroup),
        ],
    )
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

/// Writes each line of a template that starts, after its indentation, with `@@ ` once per
/// unit a thread keeps: `per_thread` copies, in which `$k` is the copy's index and `$u` its
/// unit, `(ids.tid + k * BLOCK)`. Where `last_partial`, the last copy is guarded by
/// `if ($u < UNITS)` (BLOCK does not divide the units). The copies of one line come
/// together, so a template line of loads issues all of a thread's loads before the next
/// line uses them; the indices are constants, so a private array needs no index clamp.
pub fn wgsl_unroll(text: &str, per_thread: u32, last_partial: bool) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for line in text.lines() {
        let Some(stmt) = line.trim_start().strip_prefix("@@ ") else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let indent = &line[..line.len() - line.trim_start().len()];
        for k in 0..per_thread {
            let unit = format!("(ids.tid + {k}u * BLOCK)");
            let copy = stmt.replace("$k", &k.to_string()).replace("$u", &unit);
            if last_partial && k + 1 == per_thread {
                out.push_str(&format!("{indent}if ({unit} < UNITS) {{ {copy} }}\n"));
            } else {
                out.push_str(&format!("{indent}{copy}\n"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::wgsl_unroll;

    #[test]
    fn unroll_writes_each_marked_line_once_per_unit_and_guards_only_the_last() {
        let text = "fn f() {\n    let a = 1u;\n    @@ x[$k] = input[base + $u];\n    @@ s += x[$k];\n}\n";
        let whole = wgsl_unroll(text, 3, false);
        let want = "fn f() {\n    let a = 1u;\n\
            \x20   x[0] = input[base + (ids.tid + 0u * BLOCK)];\n\
            \x20   x[1] = input[base + (ids.tid + 1u * BLOCK)];\n\
            \x20   x[2] = input[base + (ids.tid + 2u * BLOCK)];\n\
            \x20   s += x[0];\n    s += x[1];\n    s += x[2];\n}\n";
        assert_eq!(whole, want);
        let partial = wgsl_unroll(text, 2, true);
        assert!(partial.contains("    x[0] = input[base + (ids.tid + 0u * BLOCK)];\n"), "{partial}");
        assert!(
            partial
                .contains("    if ((ids.tid + 1u * BLOCK) < UNITS) { x[1] = input[base + (ids.tid + 1u * BLOCK)]; }\n"),
            "{partial}"
        );
        assert!(partial.contains("    if ((ids.tid + 1u * BLOCK) < UNITS) { s += x[1]; }\n"), "{partial}");
        assert_eq!(partial.matches("if (").count(), 2, "only the last copy of each line is guarded: {partial}");
        assert!(!partial.contains("@@") && !partial.contains('$'), "{partial}");
    }
}
