//! Row-wise softmax, host side: problem, configs, the WGSL form beside it
//! (`softmax.wgsl`), the CPU reference and the [`Workload`]. The device algorithm is
//! documented in `dynsmem_kernels::softmax`.

use dynsmem_kernels::softmax::SoftmaxConfig;
use serde::{Deserialize, Serialize};

use crate::backend::Variant;
use crate::contract::{CudaSource, FamilyBackend, Launch, WgslFold, bytes_of, invalid_problem};
use crate::error::Result;
use crate::family::rows::{self, RowKernel};
use crate::rng::SplitMix64;
use crate::verify::{Tolerance, check_slice};

mod family;

pub use family::SOFTMAX;

pub(crate) const WGSL_TEMPLATE: &str = include_str!("softmax.wgsl");
/// The wgsl-subgroup form with the row in registers (`rows::wgsl_registers`).
const WGSL_REGISTERS: &str = include_str!("softmax_registers.wgsl");
/// The cuda-static form: the same algorithm in CUDA C with static arrays.
pub const CUDA_SOURCE: &str = include_str!("softmax.cu");

/// `rows` rows of `cols` floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SoftmaxProblem {
    pub rows: u32,
    pub cols: u32,
}

/// The row skeleton's default for `rows` rows of `cols` on `backend` ([`default_for`]).
pub fn default_config<B: FamilyBackend>(backend: &B, rows: u32, cols: u32) -> SoftmaxConfig {
    default_for(&backend.info().limits, backend.small_configs(), (rows, cols))
}

/// The row skeleton's default on a device of `limits` ([`rows::default_config`]).
pub fn default_for(limits: &crate::backend::Limits, small: bool, shape: (u32, u32)) -> SoftmaxConfig {
    rows::default_config(&KERNEL, small, shape, limits)
}

pub(crate) static KERNEL: RowKernel = RowKernel {
    name: "softmax_f32",
    table: dynsmem_kernels::softmax::KERNELS,
    empty: "softmax",
    cuda: CUDA_SOURCE,
    cuda_file: "softmax.cu",
    cuda_entry: "softmax_static",
    wgsl: WGSL_TEMPLATE,
    wgsl_entry: "softmax",
    wgsl_vectors: true,
    wgsl_registers: WGSL_REGISTERS,
    wgsl_folds: &[WgslFold::max_f32("fold_max"), WgslFold::sum("fold_sum")],
    held: false,
};

/// The cuda-static kernel: `softmax.cu` ([`rows::cuda_source`]).
pub fn cuda_source(problem: &SoftmaxProblem, cfg: &SoftmaxConfig) -> CudaSource {
    rows::cuda_source(&KERNEL, problem.cols, cfg)
}

/// The CPU reference, in f64: `exp(x - max) / sum exp(x - max)` per row.
pub use dynsmem_reference::softmax as reference;

/// Elementwise tolerance: the hardware exp (about 2 ulp) and a sum of `cols` terms.
pub fn tolerance(cols: u32) -> Tolerance {
    Tolerance { rtol: 1e-5 + 2.0 * (cols as f64).log2().max(1.0) * f32::EPSILON as f64, atol: 1e-9 }
}

/// Validates the problem and config against the backend (nothing is generated,
/// uploaded or launched when a check fails) and builds the kernel.
fn validate<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: SoftmaxProblem,
    config: SoftmaxConfig,
    variant: Variant,
) -> Result<Launch<'b, B>> {
    let SoftmaxProblem { rows, cols } = problem;
    // Input and output on the device; the input, the f64 reference, the NaN fill and the
    // read-back on the host.
    let elems = rows as u64 * cols as u64;
    rows::build(backend, &KERNEL, (rows, cols), &config, variant, (bytes_of(elems, 8), bytes_of(elems, 20)))
}

/// Softmax of `rows x cols` logits drawn from `seed` ([`logits`]).
pub fn prepare<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: SoftmaxProblem,
    config: SoftmaxConfig,
    variant: Variant,
    seed: u64,
) -> Result<Launch<'b, B>> {
    let launch = validate(backend, problem, config, variant)?;
    let data = logits(problem.rows, problem.cols, seed);
    upload(launch, problem, data)
}

/// Row-major logits from `seed`, built so that the check sees a wrong row maximum and a
/// dropped term. Each row has its own offset, uniform in [-1000, 1000), so `exp` of a
/// logit minus anything but a maximum within 88 of the true one overflows or underflows
/// (a kernel that skips the subtraction, or starts its maximum at 0, gives NaN or inf).
/// Rows cycle through three spreads around the offset:
/// - width 2: every term is at least `e^-2 / cols` of the row's sum, so a dropped or
///   doubled term moves every output by more than the tolerance (to about 10^4 columns);
/// - width 40 with one spike 120 above the offset at a seeded column: a maximum that
///   misses the spike is 100 or more too small, and `exp` of the spike overflows f32
///   (e^100 > 3.4e38; a spike 100 above left e^80, and a maximum that missed it passed);
/// - width 60: outputs over 26 decades.
pub fn logits(rows: u32, cols: u32, seed: u64) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    let mut data = Vec::with_capacity(rows as usize * cols as usize);
    for r in 0..rows {
        let offset = rng.next_f32() * 2000.0 - 1000.0;
        let width = [2.0, 40.0, 60.0][r as usize % 3];
        let start = data.len();
        data.extend((0..cols).map(|_| offset + (rng.next_f32() - 0.5) * width));
        if r % 3 == 1 && cols > 0 {
            data[start + rng.below(cols as u64) as usize] = offset + 120.0;
        }
    }
    data
}

/// Softmax of the given row-major logits (`rows * cols` of them): for inputs the seeded
/// generator does not make, such as NaN and infinities.
pub fn prepare_with<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: SoftmaxProblem,
    config: SoftmaxConfig,
    variant: Variant,
    data: Vec<f32>,
) -> Result<Launch<'b, B>> {
    let elems = problem.rows as u64 * problem.cols as u64;
    if data.len() as u64 != elems {
        return Err(invalid_problem(
            KERNEL.name,
            format!("{} logits given for {} x {} = {elems}", data.len(), problem.rows, problem.cols),
        ));
    }
    let launch = validate(backend, problem, config, variant)?;
    upload(launch, problem, data)
}

fn upload<'b, B: FamilyBackend>(
    launch: Launch<'b, B>,
    problem: SoftmaxProblem,
    data: Vec<f32>,
) -> Result<Launch<'b, B>> {
    let SoftmaxProblem { rows, cols } = problem;
    let expected = reference(&data, rows as usize, cols as usize);
    let check = move |name: &str, got: &[f32]| check_slice(name, &expected, got, |i| expected[i], tolerance(cols));
    Ok(launch.input(&data)?.output(&vec![f32::NAN; data.len()], check)?.arg(rows).arg(cols))
}

#[cfg(test)]
mod tests {
    #[test]
    fn reference_rows_sum_to_one_and_are_shift_invariant() {
        let a = super::reference(&[1.0, 2.0, 3.0, 1000.0, 1001.0, 1002.0], 2, 3);
        assert!((a[0] + a[1] + a[2] - 1.0).abs() < 1e-12);
        for i in 0..3 {
            assert!((a[i] - a[i + 3]).abs() < 1e-12, "max-subtracted: no overflow at 1000");
        }
    }
}
