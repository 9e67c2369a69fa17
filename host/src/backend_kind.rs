//! The names of the backends, for devices, records and errors: a leaf that errors and
//! records name without depending on the backends themselves.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which backend a device, record or error belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// Rust kernels (PTX) through the CUDA driver, launch-sized shared memory.
    Cuda,
    /// WGSL kernels with static `var<workgroup>` arrays through wgpu (Vulkan).
    Wgsl,
    /// Rust kernels (HSA code objects) through HIP.
    Hip,
    /// Rust kernels run on the host, one OS thread per kernel thread.
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
