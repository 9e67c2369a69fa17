//! Row-wise softmax, host side: problem, configs, the WGSL form beside it
//! (`softmax.wgsl`), the CPU reference and the [`Workload`]. The device algorithm is
//! documented in `dynsmem_kernels::softmax`.

use dynsmem_kernels::softmax::SoftmaxConfig;
use serde::{Deserialize, Serialize};

use super::{
    KernelInfo, Kernels, Prepared, Variant, WgslSpec, Workload, fill_template, invalid, invalid_problem, wgsl_sizing,
};
use crate::backend::{Arg, BackendKind, Buffer};
use crate::error::Result;
use crate::rng::SplitMix64;
use crate::verify::{Tolerance, check_slice};

const WGSL_TEMPLATE: &str = include_str!("softmax.wgsl");
const KERNEL: &str = "softmax_f32";

/// `rows` rows of `cols` floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SoftmaxProblem {
    pub rows: u32,
    pub cols: u32,
}

/// 256 threads per row (16 on the CPU backend).
pub fn default_config<B: Kernels>(backend: &B) -> SoftmaxConfig {
    SoftmaxConfig { block: if backend.kind() == BackendKind::Cpu { 16 } else { 256 } }
}

fn wgsl_spec(problem: &SoftmaxProblem, cfg: &SoftmaxConfig, variant: Variant) -> WgslSpec {
    let cols = problem.cols.max(1);
    let (sizing, constants) = wgsl_sizing(variant, &[("BLOCK", "u32", cfg.block as f64), ("COLS", "u32", cols as f64)]);
    WgslSpec {
        name: format!("{KERNEL}[{variant},cols={cols},block={}]", cfg.block),
        source: fill_template(WGSL_TEMPLATE, &[("SIZING", &sizing)]),
        entry: "softmax",
        constants,
        workgroup_size: cfg.block,
        static_bytes: ((cols as u64 + cfg.block as u64) * 4).min(u32::MAX as u64) as u32,
    }
}

/// The CPU reference, in f64: `exp(x - max) / sum exp(x - max)` per row.
pub fn reference(input: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    let per_row = crate::par::map(rows, |r| {
        let row = &input[r * cols..(r + 1) * cols];
        let m = row.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x as f64));
        let e: Vec<f64> = row.iter().map(|&x| (x as f64 - m).exp()).collect();
        let s: f64 = e.iter().sum();
        e.into_iter().map(|v| v / s).collect::<Vec<f64>>()
    });
    per_row.into_iter().flatten().collect()
}

/// Elementwise tolerance: the hardware exp (about 2 ulp) and a sum of `cols` terms.
pub fn tolerance(cols: u32) -> Tolerance {
    Tolerance { rtol: 1e-5 + 2.0 * (cols as f64).log2().max(1.0) * f32::EPSILON as f64, atol: 1e-9 }
}

pub struct SoftmaxWorkload<'b, B: Kernels> {
    backend: &'b B,
    kernel: Prepared<B::Kernel>,
    problem: SoftmaxProblem,
    config: SoftmaxConfig,
    input: Buffer<B::Raw, f32>,
    output: Buffer<B::Raw, f32>,
    expected: Vec<f64>,
}

pub fn prepare<'b, B: Kernels>(
    backend: &'b B,
    problem: SoftmaxProblem,
    config: SoftmaxConfig,
    variant: Variant,
    seed: u64,
) -> Result<SoftmaxWorkload<'b, B>> {
    let SoftmaxProblem { rows, cols } = problem;
    if config.block == 0 {
        return Err(invalid(KERNEL, "block must be at least 1 thread"));
    }
    if cols == 0 {
        return Err(invalid_problem(KERNEL, "rows of 0 elements have no softmax"));
    }
    let elems = rows as u64 * cols as u64;
    if backend.kind() == BackendKind::Wgsl && elems > u32::MAX as u64 {
        return Err(invalid_problem(KERNEL, format!("{rows} x {cols}: the WGSL path indexes with u32")));
    }
    let wgsl = |v: Variant| wgsl_spec(&problem, &config, v);
    let kernel =
        Prepared::new(backend, KERNEL, config.shared_bytes(cols), config.grid(rows), config.block, variant, &wgsl)?;
    let mut rng = SplitMix64::new(seed);
    // Logits in [-8, 8): exp spans 7 decades, so the max subtraction matters.
    let data: Vec<f32> = (0..elems).map(|_| rng.next_f32() * 16.0 - 8.0).collect();
    let expected = reference(&data, rows as usize, cols as usize);
    let input = backend.htod(&data)?;
    let output = backend.htod(&vec![f32::NAN; elems as usize])?;
    Ok(SoftmaxWorkload { backend, kernel, problem, config, input, output, expected })
}

impl<B: Kernels> Workload for SoftmaxWorkload<'_, B> {
    fn kernel(&self) -> KernelInfo {
        self.kernel.info()
    }
    fn bytes(&self) -> u64 {
        2 * self.problem.rows as u64 * self.problem.cols as u64 * 4
    }
    fn run(&self) -> Result<()> {
        let SoftmaxProblem { rows, cols } = self.problem;
        let dims = self.kernel.dims(self.config.grid(rows), self.config.block);
        self.backend.launch(
            &self.kernel.built.kernel,
            dims,
            &[self.input.arg(), self.output.arg(), Arg::U32(rows), Arg::U32(cols)],
        )
    }
    fn check(&self) -> Result<()> {
        let got = self.backend.dtoh(&self.output)?;
        let tol = tolerance(self.problem.cols);
        check_slice(&self.kernel.name, &self.expected, &got, |i| self.expected[i], tol)?;
        Ok(())
    }
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
