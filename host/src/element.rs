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

/// A 16-bit floating-point type of the tensor-core families, carried as its bits (`u16`)
/// on the device; values through the `half` crate on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Half {
    F16,
    Bf16,
}

impl Half {
    /// Bits of `v` (exactly representable: the inputs are made so).
    pub fn bits(self, v: f32) -> u16 {
        match self {
            Half::F16 => half::f16::from_f32(v).to_bits(),
            Half::Bf16 => half::bf16::from_f32(v).to_bits(),
        }
    }
    pub fn value(self, bits: u16) -> f32 {
        match self {
            Half::F16 => half::f16::from_bits(bits).to_f32(),
            Half::Bf16 => half::bf16::from_bits(bits).to_f32(),
        }
    }
    /// The first `n` values of `words`, two 16-bit values per word, low half first (as
    /// [`pack_halves`] makes them).
    pub fn unpack(self, words: &[u32], n: usize) -> Vec<f32> {
        (0..n).map(|i| self.value((words[i / 2] >> (16 * (i % 2))) as u16)).collect()
    }
    /// Unit roundoff (half an ulp at 1): 2^-11 (f16), 2^-8 (bf16).
    pub fn unit_roundoff(self) -> f64 {
        match self {
            Half::F16 => 2f64.powi(-11),
            Half::Bf16 => 2f64.powi(-8),
        }
    }
}

/// 16-bit values two per word, low half first (the backends move 4-byte words); an odd
/// count leaves the last word's high half zero.
pub fn pack_halves(h: &[u16]) -> Vec<u32> {
    h.chunks(2).map(|p| p[0] as u32 | (p.get(1).copied().unwrap_or(0) as u32) << 16).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_pack_two_per_word_low_first_and_unpack_back() {
        assert_eq!(pack_halves(&[1, 2, 3]), vec![1 | 2 << 16, 3]);
        let bits = [Half::F16.bits(1.5), Half::F16.bits(-2.0), Half::F16.bits(0.25)];
        assert_eq!(Half::F16.unpack(&pack_halves(&bits), 3), vec![1.5, -2.0, 0.25]);
    }
}
