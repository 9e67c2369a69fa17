//! The names of the backends, for devices, records and errors: a leaf that errors and
//! records name without depending on the backends themselves.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which backend a device, record or error belongs to; the command line's `--backend`
/// (each variant's line is its help).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// Rust kernels (PTX) on an NVIDIA GPU.
    Cuda,
    /// The static-WGSL kernels through wgpu on a Vulkan adapter.
    Wgsl,
    /// Rust kernels (HSA code objects) on an AMD GPU through HIP.
    Hip,
    /// Rust kernels on the host, every access checked: a workgroup's threads as coroutines
    /// (`--cpu-schedule fast`, the default) or as OS threads (`stress`: finds races).
    Cpu,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cuda => "cuda",
            BackendKind::Wgsl => "wgsl",
            BackendKind::Hip => "hip",
            BackendKind::Cpu => "cpu",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
