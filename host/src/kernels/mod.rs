//! Host side of the kernel families: problems, configs, per-backend launchers, the WGSL
//! source beside each launcher, CPU references.

use serde::{Deserialize, Serialize};

pub mod reduce;

/// How a kernel gets its workgroup memory: the axis the project compares along.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// Rust kernel, tiles carved from launch-sized memory (CUDA dynamic shared memory).
    LaunchSized,
    /// WGSL with `var<workgroup>` arrays sized by literals in the source text.
    WgslLiteral,
    /// WGSL with `var<workgroup>` arrays sized by pipeline `override` constants.
    WgslOverride,
}

impl Variant {
    pub fn name(self) -> &'static str {
        match self {
            Variant::LaunchSized => "launch-sized",
            Variant::WgslLiteral => "wgsl-literal",
            Variant::WgslOverride => "wgsl-override",
        }
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Fills `{{KEY}}` slots of a WGSL template. Every slot must be filled: a slot left
/// over is a bug in the launcher, caught by the tests that build every pipeline.
pub(crate) fn fill_template(template: &str, slots: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (key, value) in slots {
        out = out.replace(&format!("{{{{{key}}}}}"), value);
    }
    debug_assert!(!out.contains("{{"), "unfilled template slot in:\n{out}");
    out
}
