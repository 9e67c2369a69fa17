//! Element types the host moves to and from devices.

use std::fmt::{Debug, Display};

use dynsmem_kernels::Dtype;

/// A plain-data element type with a device-side [`Dtype`]. Buffers of any backend hold
/// these as raw bytes, so one trait serves CUDA, HIP and wgpu alike.
pub trait Element: bytemuck::Pod + PartialEq + PartialOrd + Debug + Display + Send + Sync + 'static {
    const DTYPE: Dtype;
    /// Machine epsilon for floating-point types, 0 for integers (exact comparison).
    const EPSILON: f64;
    /// The largest finite value: a float sum whose partial sums can pass it may overflow
    /// to infinity.
    const MAX: f64;
    /// Widening conversion for references and tolerances.
    fn to_f64(self) -> f64;
    /// A value no kernel writes by accident: outputs are filled with it before a run,
    /// so an element a kernel forgot to write is caught.
    fn poison() -> Self;
}

impl Element for f32 {
    const DTYPE: Dtype = Dtype::F32;
    const EPSILON: f64 = f32::EPSILON as f64;
    const MAX: f64 = f32::MAX as f64;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn poison() -> Self {
        f32::NAN
    }
}

impl Element for u32 {
    const DTYPE: Dtype = Dtype::U32;
    const EPSILON: f64 = 0.0;
    const MAX: f64 = u32::MAX as f64;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn poison() -> Self {
        0xDEAD_BEEF
    }
}
