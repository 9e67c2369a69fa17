//! Row-wise RMSNorm forward, host side: problem, configs, the WGSL form beside it
//! (`rmsnorm.wgsl`), the CUDA C form (`rmsnorm.cu`), the CPU reference and the
//! [`Workload`]. The device algorithm is documented in `dynsmem_kernels::rmsnorm`.

use dynsmem_kernels::rmsnorm::RmsnormConfig;
use serde::{Deserialize, Serialize};

use crate::backend::Variant;
use crate::contract::{CudaSource, FamilyBackend, Launch, WgslFold, bytes_of, invalid_problem};
use crate::error::Result;
use crate::family::rows::{self, RowKernel};
use crate::rng::SplitMix64;
use crate::verify::{Tolerance, check_slice};

mod family;

pub use family::RMSNORM;

pub(crate) const WGSL_TEMPLATE: &str = include_str!("rmsnorm.wgsl");
/// The wgsl-subgroup form with the row in registers (`rows::wgsl_registers`).
const WGSL_REGISTERS: &str = include_str!("rmsnorm_registers.wgsl");
/// The cuda-static form: the same algorithm in CUDA C with static arrays.
pub const CUDA_SOURCE: &str = include_str!("rmsnorm.cu");

/// `rows` rows of `cols` floats, normalised by `1 / sqrt(mean square + eps)` and scaled by
/// a weight of `cols` floats.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RmsnormProblem {
    pub rows: u32,
    pub cols: u32,
    pub eps: f32,
}

/// RMSNorm's default for `rows` rows of `cols`: a block per row (which reads its weights from
/// device memory, holding none) wherever the row fits one block and the rows keep the
/// multiprocessors busy, with [`threads_per_row`] threads; else the row skeleton's
/// ([`rows::default_config`]). A row split over a cluster it does not need costs RMSNorm more
/// than softmax (`NOTES.md`).
pub fn default_config<B: FamilyBackend>(backend: &B, rows: u32, cols: u32) -> RmsnormConfig {
    default_for(&backend.info().limits, backend.small_configs(), (rows, cols))
}

/// [`default_config`] on a device of `limits` (`small`: the backend asks for small configs).
pub fn default_for(limits: &crate::backend::Limits, small: bool, (rows, cols): (u32, u32)) -> RmsnormConfig {
    let one = RmsnormConfig::blocks(threads_per_row(cols));
    let busy = rows as u64 >= limits.multiprocessors.unwrap_or(0) as u64 / 2;
    if !small && busy && one.shared_bytes(cols, one.holds(KERNEL.held)).is_ok_and(|b| b <= limits.launch_shared_max) {
        return one;
    }
    rows::default_config(&KERNEL, small, (rows, cols), limits)
}

/// Threads of the default block-per-row config: about [`FLOATS_PER_THREAD`] of the row each, a
/// power of two from 256 to 1024 (a longer row's weight reads need more threads in flight; a
/// shorter row's barriers cost more with more threads).
pub fn threads_per_row(cols: u32) -> u32 {
    (cols / FLOATS_PER_THREAD).next_power_of_two().clamp(256, 1024)
}

/// Floats of a row each thread of the default block-per-row config takes, about.
pub const FLOATS_PER_THREAD: u32 = 48;

pub(crate) static KERNEL: RowKernel = RowKernel {
    name: "rmsnorm_f32",
    table: dynsmem_kernels::rmsnorm::KERNELS,
    empty: "RMS",
    cuda: CUDA_SOURCE,
    cuda_file: "rmsnorm.cu",
    cuda_entry: "rmsnorm_static",
    wgsl: WGSL_TEMPLATE,
    wgsl_entry: "rmsnorm",
    wgsl_vectors: true,
    wgsl_registers: WGSL_REGISTERS,
    wgsl_folds: &[WgslFold::sum("fold_sum")],
    held: true,
};

/// The cuda-static kernel: `rmsnorm.cu` ([`rows::cuda_source`]).
pub fn cuda_source(problem: &RmsnormProblem, cfg: &RmsnormConfig) -> CudaSource {
    rows::cuda_source(&KERNEL, problem.cols, cfg)
}

/// The CPU reference, in f64: `x / sqrt(mean(x^2) + eps) * g` per row.
pub use dynsmem_reference::rmsnorm as reference;

/// Elementwise tolerance: a sum of `cols` squares in f32 (its error halved by the square
/// root), a correctly rounded (CUDA, CPU) or few-ulp (WGSL) `1 / sqrt`, and two products.
/// There is no hardware `exp` here, so the floor is 8 ulp, not a hardware-`exp` kernel's 1e-5:
/// dropping one average term of a 32768-float row's sum of squares moves every output
/// of the row by about 1.5e-5 relative, and must be caught.
pub fn tolerance(cols: u32) -> Tolerance {
    let eps = f32::EPSILON as f64;
    Tolerance { rtol: 8.0 * eps + 2.0 * (cols as f64).log2().max(1.0) * eps, atol: 1e-9 }
}

/// Validates the problem and config against the backend (nothing is generated,
/// uploaded or launched when a check fails) and builds the kernel.
fn validate<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: RmsnormProblem,
    config: RmsnormConfig,
    variant: Variant,
) -> Result<Launch<'b, B>> {
    let RmsnormProblem { rows, cols, eps } = problem;
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(invalid_problem(KERNEL.name, format!("eps must be finite and at least 0, got {eps}")));
    }
    // x, y and g on the device; x, g, the f64 reference, the NaN fill and the read-back
    // on the host.
    let elems = rows as u64 * cols as u64;
    let device = bytes_of(elems, 8).saturating_add(bytes_of(cols as u64, 4));
    let host = bytes_of(elems, 20).saturating_add(bytes_of(cols as u64, 4));
    rows::build(backend, &KERNEL, (rows, cols), &config, variant, (device, host))
}

/// RMSNorm of `rows x cols` inputs drawn from `seed`, uniform in [-4, 4), with weights
/// uniform in [-2, 2).
pub fn prepare<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: RmsnormProblem,
    config: RmsnormConfig,
    variant: Variant,
    seed: u64,
) -> Result<Launch<'b, B>> {
    let launch = validate(backend, problem, config, variant)?;
    let mut rng = SplitMix64::new(seed);
    let elems = problem.rows as u64 * problem.cols as u64;
    let x: Vec<f32> = (0..elems).map(|_| rng.next_f32() * 8.0 - 4.0).collect();
    let g: Vec<f32> = (0..problem.cols).map(|_| rng.next_f32() * 4.0 - 2.0).collect();
    upload(launch, problem, x, g)
}

/// RMSNorm of the given row-major inputs (`rows * cols` of them) and weights (`cols`):
/// for inputs the seeded generator does not make, such as NaN and infinities.
pub fn prepare_with<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: RmsnormProblem,
    config: RmsnormConfig,
    variant: Variant,
    x: Vec<f32>,
    g: Vec<f32>,
) -> Result<Launch<'b, B>> {
    let elems = problem.rows as u64 * problem.cols as u64;
    if x.len() as u64 != elems || g.len() as u64 != problem.cols as u64 {
        return Err(invalid_problem(
            KERNEL.name,
            format!(
                "{} inputs and {} weights given for {} x {} = {elems} and {}",
                x.len(),
                g.len(),
                problem.rows,
                problem.cols,
                problem.cols
            ),
        ));
    }
    let launch = validate(backend, problem, config, variant)?;
    upload(launch, problem, x, g)
}

fn upload<'b, B: FamilyBackend>(
    launch: Launch<'b, B>,
    problem: RmsnormProblem,
    x: Vec<f32>,
    g: Vec<f32>,
) -> Result<Launch<'b, B>> {
    let RmsnormProblem { rows, cols, eps } = problem;
    let expected = reference(&x, &g, rows as usize, cols as usize, eps);
    let check = move |name: &str, got: &[f32]| check_slice(name, &expected, got, |i| expected[i], tolerance(cols));
    Ok(launch.input(&x)?.input(&g)?.output(&vec![f32::NAN; x.len()], check)?.arg(rows).arg(cols).arg(eps))
}

#[cfg(test)]
mod tests {
    use super::{reference, threads_per_row, tolerance};

    #[test]
    fn the_default_block_grows_with_the_row_from_256_to_1024_threads() {
        let got: Vec<u32> = [1, 4096, 6146, 20000, 32768, 50000, 1 << 20].map(threads_per_row).to_vec();
        assert_eq!(got, [256, 256, 256, 512, 1024, 1024, 1024]);
    }

    use crate::rng::SplitMix64;
    use crate::verify::check_slice;

    #[test]
    fn reference_has_unit_rms_and_is_scale_invariant() {
        let x = [3.0f32, -4.0, 0.0, 30.0, -40.0, 0.0];
        let a = reference(&x, &[1.0, 1.0, 1.0], 2, 3, 0.0);
        // mean square 25/3: rms 5/sqrt(3).
        let rms = (25.0f64 / 3.0).sqrt();
        assert!((a[0] - 3.0 / rms).abs() < 1e-12 && (a[1] + 4.0 / rms).abs() < 1e-12 && a[2] == 0.0);
        let ms: f64 = a[..3].iter().map(|v| v * v).sum::<f64>() / 3.0;
        assert!((ms - 1.0).abs() < 1e-12);
        for i in 0..3 {
            assert!((a[i] - a[i + 3]).abs() < 1e-12, "scale invariant with eps = 0");
        }
        // The weight scales each column; eps bounds the output of a zero row.
        let w = reference(&x[..3], &[2.0, 0.5, 7.0], 1, 3, 0.0);
        assert!((w[0] - 2.0 * a[0]).abs() < 1e-12 && (w[1] - 0.5 * a[1]).abs() < 1e-12);
        assert_eq!(reference(&[0.0; 4], &[1.0; 4], 1, 4, 1e-5), vec![0.0; 4]);
    }

    /// The kernel's f32 arithmetic (`block` threads' partial sums of squares, folded as
    /// a tree), with one column of the sum of squares dropped or the weight read at a
    /// shifted index.
    fn emulate(
        x: &[f32],
        g: &[f32],
        cols: usize,
        block: usize,
        eps: f32,
        drop: Option<usize>,
        shift: usize,
    ) -> Vec<f32> {
        let mut out = Vec::with_capacity(x.len());
        for row in x.chunks(cols) {
            let mut partial = vec![0.0f32; block];
            for (c, &v) in row.iter().enumerate() {
                if Some(c) != drop {
                    partial[c % block] += v * v;
                }
            }
            let mut live = block;
            while live > 1 {
                let half = live.div_ceil(2);
                for t in 0..live - half {
                    partial[t] += partial[t + half];
                }
                live = half;
            }
            let inv = 1.0 / (partial[0] * (1.0 / cols as f32) + eps).sqrt();
            out.extend(row.iter().enumerate().map(|(c, &v)| v * inv * g[(c + shift) % cols]));
        }
        out
    }

    #[test]
    fn tolerance_passes_f32_and_catches_one_wrong_term() {
        for (rows, cols, block) in [(4, 4096, 16), (2, 32_768, 16), (2, 32_768, 256), (3, 1000, 1)] {
            let mut rng = SplitMix64::new(7);
            let x: Vec<f32> = (0..rows * cols).map(|_| rng.next_f32() * 8.0 - 4.0).collect();
            let g: Vec<f32> = (0..cols).map(|_| rng.next_f32() * 4.0 - 2.0).collect();
            let expected = reference(&x, &g, rows, cols, 1e-5);
            let tol = tolerance(cols as u32);
            let check = |got: &[f32]| check_slice("rmsnorm_f32", &expected, got, |i| expected[i], tol);
            check(&emulate(&x, &g, cols, block, 1e-5, None, 0)).expect("the kernel's f32 arithmetic passes");
            // A column whose square is about the mean square (the one nearest 4/sqrt(3)
            // in magnitude): a typical term.
            let typical = (0..cols)
                .min_by(|&a, &b| {
                    let d = |c: usize| (x[c].abs() - 4.0 / 3f32.sqrt()).abs();
                    d(a).total_cmp(&d(b))
                })
                .unwrap();
            assert!(check(&emulate(&x, &g, cols, block, 1e-5, Some(typical), 0)).is_err(), "{cols}: dropped term");
            assert!(check(&emulate(&x, &g, cols, block, 1e-5, None, 1)).is_err(), "{cols}: shifted weight");
        }
    }
}
