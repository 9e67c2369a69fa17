//! cuBLAS on the same inputs: the anchor an SGEMM is measured against (TF32 off: the
//! default math mode), and the reference for shapes too large for the CPU. cuBLAS is
//! column-major; a row-major `C = A B` is the column-major `C^T = B^T A^T`, so it is called
//! with the operands swapped and no transposes.

use cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::{CudaSlice, CudaView};

use super::{ALPHA, BETA, SgemmProblem, SgemmWorkload, inputs};
use crate::backend::BackendKind;
use crate::backend::cuda::CudaBackend;
use crate::backend::cuda::driver::driver_err;
use crate::backend::{time, time_paired};
use crate::error::{Error, Result};
use crate::measure::{Paired, Timing, TimingOptions};
use crate::verify::Mismatch;

fn blas_err(call: &'static str) -> impl FnOnce(cudarc::cublas::result::CublasError) -> Error {
    move |e| Error::Driver { backend: BackendKind::Cuda, call, message: format!("{e:?}") }
}

/// Row-major `c = alpha * a * b + beta * c` through cuBLAS SGEMM.
fn gemm(
    blas: &CudaBlas,
    p: &SgemmProblem,
    a: &CudaView<'_, f32>,
    b: &CudaView<'_, f32>,
    c: &mut CudaSlice<f32>,
    alpha: f32,
    beta: f32,
) -> Result<()> {
    let (m, n, k) = (p.m as i32, p.n as i32, p.k as i32);
    let cfg = GemmConfig {
        transa: CUBLAS_OP_N,
        transb: CUBLAS_OP_N,
        m: n,
        n: m,
        k,
        alpha,
        lda: n.max(1),
        ldb: k.max(1),
        beta,
        ldc: n.max(1),
    };
    // SAFETY: the views hold k * n, m * k and m * n elements, as cfg describes.
    unsafe { blas.gemm(cfg, b, a, c) }.map_err(blas_err("cublasSgemm"))
}

/// What cuBLAS did on the workload's inputs.
pub struct CublasReport {
    /// cuBLAS timed alone: the anchor's own record.
    pub timing: Timing,
    pub warmup: u32,
    /// Entries of `C` compared with ours (all of them).
    pub compared: usize,
    /// Our run and cuBLAS timed interleaved ([`time_paired`]): the kernel row's ratio.
    pub paired: Paired,
}

/// Times cuBLAS SGEMM on the workload's `A` and `B` (f32 inputs only), alone and then
/// interleaved with our run ([`time_paired`]: ABBA rounds of equal batches, the ratio the
/// median of the rounds' cuBLAS ms / ours ms), and compares all of `ours` (the workload's `C`
/// from one run on the initial `C`) with cuBLAS's result. The
/// error scale of each entry, `|ALPHA| sum |a b| + |BETA c|`, is itself computed by cuBLAS
/// on `|A|`, `|B|` and `|C|`, so the tolerance is per entry, not a guess.
pub fn anchor(
    backend: &CudaBackend,
    w: &SgemmWorkload<'_, CudaBackend>,
    ours: &[f32],
    seed: u64,
    opts: TimingOptions,
) -> Result<CublasReport> {
    let p = w.problem();
    if p.f16_inputs {
        return Err(Error::Unsupported {
            backend: BackendKind::Cuda,
            what: "a cuBLAS anchor for f16 inputs with an f32 result".into(),
        });
    }
    let stream = backend.stream().clone();
    let blas = CudaBlas::new(stream.clone()).map_err(blas_err("cublasCreate"))?;
    let (mk, kn, mn) = (p.m as usize * p.k as usize, p.k as usize * p.n as usize, p.m as usize * p.n as usize);
    let (a_raw, b_raw) = (w.a(), w.b());
    // SAFETY: the buffers hold f32 bits (f32 inputs) of these lengths.
    let a = unsafe { a_raw.raw().transmute::<f32>(mk) }.expect("A holds m * k floats");
    let b = unsafe { b_raw.raw().transmute::<f32>(kn) }.expect("B holds k * n floats");

    let mut c = stream.clone_htod(w.c_initial()).map_err(driver_err("cuMemcpyHtoD"))?;
    gemm(&blas, &p, &a, &b, &mut c, ALPHA, BETA)?;
    let theirs: Vec<f32> = stream.clone_dtoh(&c).map_err(driver_err("cuMemcpyDtoH"))?;

    // The scale of each entry's rounding error, by the same GEMM on absolute values.
    let (ha, hb, hc) = inputs(&p, seed);
    let abs = |v: Vec<f32>| v.into_iter().map(f32::abs).collect::<Vec<f32>>();
    let abs_a = stream.clone_htod(&abs(ha)).map_err(driver_err("cuMemcpyHtoD"))?;
    let abs_b = stream.clone_htod(&abs(hb)).map_err(driver_err("cuMemcpyHtoD"))?;
    let mut scale = stream.clone_htod(&abs(hc)).map_err(driver_err("cuMemcpyHtoD"))?;
    gemm(&blas, &p, &abs_a.as_view(), &abs_b.as_view(), &mut scale, ALPHA.abs(), BETA.abs())?;
    let scale: Vec<f32> = stream.clone_dtoh(&scale).map_err(driver_err("cuMemcpyDtoH"))?;
    drop((abs_a, abs_b));

    // Exact inputs: both results are exact. Otherwise both are within (k + 2) eps scale
    // of the exact value, and the doubled bound of `summation` covers their difference.
    let tol = super::tolerance(p.k);
    let mut first = None;
    let mut count = 0;
    for i in 0..mn {
        if !tol.allows(theirs[i] as f64, ours[i] as f64, scale[i] as f64) {
            count += 1;
            first.get_or_insert(i);
        }
    }
    if let Some(i) = first {
        return Err(Mismatch {
            kernel: format!("{} against cuBLAS", w.kernel_name()),
            index: i,
            expected: format!("{} (cuBLAS, C[{}][{}])", theirs[i], i / p.n as usize, i % p.n as usize),
            actual: ours[i].to_string(),
            allowed: tol.bound(scale[i] as f64),
            count,
            len: mn,
            against: Some("cuBLAS".into()),
        }
        .into());
    }

    let mut work = || gemm(&blas, &p, &a, &b, &mut c, ALPHA, BETA);
    let (timing, warmup) = time(backend, opts, &mut work)?;
    // Interleaved with ours, as hgemm's anchor is: cuBLAS's speed moves between processes
    // (up to 5x at the smallest shapes), and each round's two batches share the conditions.
    // Each writes its own C.
    let paired = time_paired(backend, opts, &mut || w.launch_into(&w.c), &mut work)?;
    Ok(CublasReport { timing, warmup, compared: mn, paired })
}
