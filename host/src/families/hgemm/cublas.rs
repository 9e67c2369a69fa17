//! cuBLAS on the same inputs (`cublasGemmEx`, f16 or bf16 inputs, f32 compute, `C` in the
//! problem's output type): the anchor the tensor-core GEMM is measured against and a second
//! reference. cuBLAS is column-major: the row-major `C (m x n) = A B^T`, with `A` row-major
//! `m x k` and `B` row-major `n x k`, is the column-major `C^T (n x m) = op(B) op(A)` where
//! `B`'s storage read column-major is `B^T` (`k x n`, transposed: `CUBLAS_OP_T`) and `A`'s is
//! `A^T` (`k x m`, `CUBLAS_OP_N`); both leading dimensions are `k`. This is cuBLAS's "TN".

use std::ffi::c_void;

use cudarc::cublas::CudaBlas;
use cudarc::cublas::sys::{cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType};
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};

use super::{Half, HgemmProblem, HgemmWorkload, OutType, tolerance};
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

/// Queues `C = A B^T` through cuBLAS.
fn gemm(
    blas: &CudaBlas,
    backend: &CudaBackend,
    p: &HgemmProblem,
    a: &CudaSlice<u8>,
    b: &CudaSlice<u8>,
    c: &mut CudaSlice<u8>,
) -> Result<()> {
    let input = match p.dtype {
        Half::F16 => cudaDataType::CUDA_R_16F,
        Half::Bf16 => cudaDataType::CUDA_R_16BF,
    };
    let output = if p.out == OutType::F32 { cudaDataType::CUDA_R_32F } else { input };
    let (alpha, beta) = (1f32, 0f32);
    let stream = backend.stream();
    let (a_ptr, _ga) = a.device_ptr(stream);
    let (b_ptr, _gb) = b.device_ptr(stream);
    let (c_ptr, _gc) = c.device_ptr_mut(stream);
    let (m, n, k) = (p.m as i32, p.n as i32, p.k as i32);
    // SAFETY: the buffers hold m k and n k 16-bit inputs and m n outputs of the type named;
    // alpha and beta are f32 host values (f32 compute).
    unsafe {
        cudarc::cublas::result::gemm_ex(
            *blas.handle(),
            cublasOperation_t::CUBLAS_OP_T,
            cublasOperation_t::CUBLAS_OP_N,
            n,
            m,
            k,
            &alpha as *const f32 as *const c_void,
            b_ptr as *const c_void,
            input,
            k,
            a_ptr as *const c_void,
            input,
            k,
            &beta as *const f32 as *const c_void,
            c_ptr as *mut c_void,
            output,
            n,
            cublasComputeType_t::CUBLAS_COMPUTE_32F,
            cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    }
    .map_err(blas_err("cublasGemmEx"))
}

/// What cuBLAS did on the workload's inputs.
pub struct CublasReport {
    /// cuBLAS timed alone: the anchor's own record.
    pub timing: Timing,
    pub warmup: u32,
    /// Our kernel and cuBLAS timed interleaved: the kernel row's ratio.
    pub paired: Paired,
}

/// Runs cuBLAS on the workload's A and B, compares every entry of its `C` with `ours` (the
/// workload's `C`, already checked against the CPU reference) within the problem's
/// tolerance relative to cuBLAS's entry, then times cuBLAS alone (the anchor's own record,
/// as every anchor is timed) and then our kernel and cuBLAS interleaved
/// ([`time_paired`]): after a warm-up of both, rounds of one batch of back-to-back
/// launches of each (equal size, at least about a millisecond of the faster one), the
/// order alternating ABBA and one wait per round; the ratio is the median of the rounds'
/// `cuBLAS ms / ours ms`. Interleaving, because cuBLAS's own speed moves between processes
/// and with the clocks within one: two separate timings would carry that into the ratio,
/// while each round's two batches run under the same conditions. Each operation writes
/// its own `C`.
pub fn anchor(w: &HgemmWorkload<'_, CudaBackend>, ours: &[f32], opts: TimingOptions) -> Result<CublasReport> {
    let backend = w.backend;
    let p = w.problem();
    let stream = backend.stream().clone();
    let blas = CudaBlas::new(stream.clone()).map_err(blas_err("cublasCreate"))?;
    let mn = p.m as usize * p.n as usize;
    let mut c = stream.alloc_zeros::<u8>(mn * p.out_bytes() as usize).map_err(driver_err("cuMemAlloc"))?;
    let (a, b) = w.inputs();
    gemm(&blas, backend, &p, a.raw(), b.raw(), &mut c)?;
    let bytes: Vec<u8> = stream.clone_dtoh(&c).map_err(driver_err("cuMemcpyDtoH"))?;
    let theirs: Vec<f32> = match p.out {
        OutType::F32 => bytes.as_chunks::<4>().0.iter().map(|q| f32::from_le_bytes(*q)).collect(),
        OutType::Input => bytes.as_chunks::<2>().0.iter().map(|q| p.dtype.value(u16::from_le_bytes(*q))).collect(),
    };
    // Both are within the tolerance of the exact result (relative to its magnitude, which
    // cuBLAS's entry stands for); twice that covers their difference.
    let tol = tolerance(&p);
    let (mut first, mut count) = (None, 0);
    for i in 0..mn {
        let scale = 2.0 * (theirs[i].abs() as f64).max(ours[i].abs() as f64);
        if !tol.allows(theirs[i] as f64, ours[i] as f64, scale) {
            count += 1;
            first.get_or_insert(i);
        }
    }
    if let Some(i) = first {
        let scale = 2.0 * (theirs[i].abs() as f64).max(ours[i].abs() as f64);
        return Err(Mismatch {
            kernel: format!("{} against cuBLAS", w.kernel_name()),
            index: i,
            expected: format!("{} (cuBLAS, C[{}][{}])", theirs[i], i / p.n as usize, i % p.n as usize),
            actual: ours[i].to_string(),
            allowed: tol.bound(scale),
            count,
            len: mn,
            against: Some("cuBLAS".into()),
        }
        .into());
    }
    let mut work = || gemm(&blas, backend, &p, a.raw(), b.raw(), &mut c);
    let (timing, warmup) = time(backend, opts, &mut work)?;
    let paired = time_paired(backend, opts, &mut || w.launch(), &mut work)?;
    Ok(CublasReport { timing, warmup, paired })
}
