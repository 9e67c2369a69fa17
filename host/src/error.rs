//! The one error type of the host library.

use std::path::PathBuf;

use dynsmem_kernels::layout::LayoutError;

use crate::backend_kind::BackendKind;
use crate::verify::Mismatch;

/// Everything that can go wrong between asking for a launch and reading its result.
/// Every variant that concerns a launch names the kernel, what was asked and the limit,
/// and is raised before anything is launched.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The workgroup memory a launch asks for is over what the backend can give.
    #[error(
        "{kernel}: asks for {requested} bytes of {kind} workgroup memory, over the {backend} limit of {limit} bytes ({limit_name})"
    )]
    SharedMemoryLimit {
        kernel: String,
        backend: BackendKind,
        /// "launch-sized" or "static".
        kind: &'static str,
        requested: u64,
        limit: u64,
        /// Where the limit comes from, e.g. `MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`.
        limit_name: &'static str,
    },
    /// A block (workgroup) larger than the device allows.
    #[error("{kernel}: a block of {requested} threads is over the {backend} maximum of {limit}")]
    BlockTooLarge { kernel: String, backend: BackendKind, requested: u32, limit: u32 },
    /// A block larger than this kernel can run: its registers per thread times the block
    /// exceed the register file (the device's own maximum may be higher).
    #[error("{kernel}: a block of {requested} threads is over this kernel's maximum of {limit} ({why})")]
    KernelBlockLimit { kernel: String, requested: u32, limit: u32, why: String },
    /// More blocks than the device allows in one dimension.
    #[error("{kernel}: a grid of {requested} blocks is over the {backend} maximum of {limit}")]
    GridTooLarge { kernel: String, backend: BackendKind, requested: u64, limit: u64 },
    /// A thread-block cluster larger than the backend runs (1 where it has none).
    #[error(
        "{kernel}: clusters of {requested} blocks asked; {backend} runs clusters of at most {limit} \
         (CUDA: compute capability 9.0 or later, 8 portable, 16 opted in; HIP and WGSL have none)"
    )]
    ClusterTooLarge { kernel: String, backend: BackendKind, requested: u32, limit: u32 },
    /// A config the kernel cannot run with (zero sizes, unsupported combinations).
    #[error("{kernel}: invalid config: {reason}")]
    InvalidConfig { kernel: String, reason: String },
    /// A problem the kernel cannot take (sizes past its indexing, mismatched buffers).
    #[error("{kernel}: invalid problem: {reason}")]
    InvalidProblem { kernel: String, reason: String },
    /// The shared-memory carve of a config cannot be made (overflow, bad alignment).
    #[error("{kernel}: shared-memory layout: {source}")]
    Layout { kernel: String, source: LayoutError },
    /// A kernel the image does not contain.
    #[error("kernel `{name}` is not in the {backend} image: {detail}")]
    MissingKernel { name: String, backend: BackendKind, detail: String },
    /// Configs of a sweep ran and failed (build, launch or check against the reference).
    #[error("{kernel}: {failed} of {run} configs failed; the first, {config}: {error}")]
    SweepFailed { kernel: String, failed: usize, run: usize, config: String, error: String },
    /// A sweep that could not go on (its device context lost, its cache unwritable); what
    /// it measured before is in its cache.
    #[error("{kernel}: the sweep stopped: {reason}")]
    SweepStopped { kernel: String, reason: String },
    /// The backend cannot be used on this machine (no driver library, no device, no adapter).
    #[error("{backend} unavailable: {reason}")]
    Unavailable { backend: BackendKind, reason: String },
    /// libnvrtc (CUDA's run-time compiler) cannot be loaded: the cuda-static variant
    /// compiles its CUDA C through it, so it cannot run (the launch-sized kernels can).
    #[error("libnvrtc not found: {reason}")]
    NvrtcUnavailable { reason: String },
    /// NVRTC rejected a kernel's CUDA C: `log` is NVRTC's program log (line numbers are
    /// those of the family's `.cu` file), `options` the command line it was given.
    #[error("{kernel}: NVRTC compile failed with options [{options}]:\n{log}")]
    NvrtcCompile { kernel: String, options: String, log: String },
    /// A driver call failed.
    #[error("{backend} {call}: {message}")]
    Driver { backend: BackendKind, call: &'static str, message: String },
    /// An allocation the device cannot satisfy. `free` and `total` are the device's memory
    /// where the backend can tell (CUDA, HIP, the CPU backend's host memory), else `None`.
    #[error("{backend}: cannot allocate {requested} bytes{}", memory_note(*free, *total))]
    OutOfMemory { backend: BackendKind, requested: u64, free: Option<u64>, total: Option<u64> },
    /// A problem whose buffers cannot fit the memory that would hold them, refused before
    /// any input is generated or uploaded (generating them would abort the process).
    #[error(
        "{kernel}: the problem needs {requested} bytes of {memory} memory, over the {limit} bytes there are ({limit_name})"
    )]
    ProblemTooLarge {
        kernel: String,
        /// "device" or "host".
        memory: &'static str,
        requested: u64,
        limit: u64,
        /// Where the limit comes from, e.g. `cuDeviceTotalMem` or `/proc/meminfo MemTotal`.
        limit_name: &'static str,
    },
    /// A size past what the kernel's index arithmetic can address: refused, because the
    /// kernel would wrap its indices (wrong results or an endless loop), not fault.
    #[error("{kernel}: {what} = {requested} is past the kernel's {index} indexing (at most {limit})")]
    IndexOverflow {
        kernel: String,
        /// What was too large, e.g. `n`, `rows + grid`.
        what: String,
        requested: u64,
        limit: u64,
        /// e.g. "u32": the index type the kernel (or its WGSL form) computes with.
        index: &'static str,
    },
    /// A single buffer larger than the backend can bind or allocate.
    #[error("{backend}: a buffer of {requested} bytes is over the {limit_name} of {limit} bytes")]
    BufferTooLarge { backend: BackendKind, requested: u64, limit: u64, limit_name: &'static str },
    /// The operation exists, but not on this backend or not in this form.
    #[error("{backend}: {what} is not supported")]
    Unsupported { backend: BackendKind, what: String },
    /// A run on a caller's buffers ([`crate::contract::Workload::run_on`]) that cannot be
    /// made: the wrong number of buffers, one too small, a workload of several launches.
    #[error("{kernel}: on the caller's buffers: {reason}")]
    CallerBuffers { kernel: String, reason: String },
    /// The arguments of a launch do not match the kernel's parameters.
    #[error("{kernel}: launched with arguments {got}, the kernel takes {expected}")]
    ArgumentMismatch { kernel: String, expected: String, got: String },
    /// A kernel faulted: on the CPU backend an access outside its carve or its buffers, a
    /// carve larger than the launch, a trap or a divergent barrier, with where it happened
    /// (`fault`, boxed: the largest kind would make every `Result` of the crate larger).
    #[error("{backend}: kernel fault: {detail}")]
    KernelFault {
        backend: BackendKind,
        kernel: String,
        workgroup: u32,
        thread: u32,
        detail: String,
        fault: Option<Box<dynsmem_kernels::gpu::host::FaultKind>>,
    },
    /// A launch on a GPU faulted (an illegal or misaligned address, a trap, a launch
    /// failure), found by the synchronisation right after it: the kernel and config named
    /// are the ones that faulted. The device context is lost with it (CUDA's sticky errors):
    /// every later call in this process fails, so a sweep stops here, and a supervised
    /// sweep starts a new worker process.
    #[error(
        "{backend}: {kernel} at {config} faulted: {message} (found by {call} right after its launch; the device context is lost with it)"
    )]
    DeviceFault { backend: BackendKind, kernel: String, config: String, call: &'static str, message: String },
    /// A result differs from the CPU reference beyond the tolerance.
    #[error(transparent)]
    Mismatch(#[from] Mismatch),
    /// Drawing a plot failed (the tuner's and the bench's SVG plots), or there was nothing
    /// to draw.
    #[error("plot {what}: {reason}")]
    Plot { what: String, reason: String },
    /// Reading or writing a record file.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// An embedded kernel image that does not read as its format says (a code object
    /// without its metadata note, for example).
    #[error("{what}: {why}")]
    InvalidImage { what: String, why: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The kernel ran and was wrong: its result differs from the reference, or it faulted.
    /// Not a refusal before launch, nor an unavailable backend: what makes `bench` fail.
    pub fn is_wrong_result(&self) -> bool {
        matches!(self, Error::Mismatch(_) | Error::KernelFault { .. } | Error::DeviceFault { .. })
    }

    /// Whether the device context is lost after this error: a [`Error::DeviceFault`], or a
    /// driver call that reported one of the errors after which CUDA (and HIP) refuse every
    /// later call of the context ("sticky" errors). Only a new context, in practice a new
    /// process, runs kernels again.
    pub fn context_lost(&self) -> bool {
        match self {
            Error::DeviceFault { .. } => true,
            Error::Driver { message, .. } => STICKY.iter().any(|s| message.contains(s)),
            _ => false,
        }
    }
}

/// The error names (CUDA driver API, HIP runtime) after which a context is unusable.
const STICKY: &[&str] = &[
    "CUDA_ERROR_ILLEGAL_ADDRESS",
    "CUDA_ERROR_MISALIGNED_ADDRESS",
    "CUDA_ERROR_LAUNCH_FAILED",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE",
    "CUDA_ERROR_HARDWARE_STACK_ERROR",
    "CUDA_ERROR_ASSERT",
    "CUDA_ERROR_LAUNCH_TIMEOUT",
    "CUDA_ERROR_ECC_UNCORRECTABLE",
    "CUDA_ERROR_CONTEXT_IS_DESTROYED",
    "hipErrorIllegalAddress",
    "hipErrorLaunchFailure",
    "hipErrorAssert",
];

impl Error {
    /// `self` as the fault of `kernel` at `config` when it lost the context (see
    /// [`Error::context_lost`]); any other error unchanged.
    pub fn as_fault_of(self, kernel: &str, config: &str) -> Error {
        match self {
            Error::Driver { backend, call, message } if STICKY.iter().any(|s| message.contains(s)) => {
                Error::DeviceFault { backend, kernel: kernel.into(), config: config.into(), call, message }
            }
            other => other,
        }
    }
}

/// The "(F of T bytes free)" tail of [`Error::OutOfMemory`], with whatever the backend knows.
fn memory_note(free: Option<u64>, total: Option<u64>) -> String {
    match (free, total) {
        (Some(f), Some(t)) => format!(" ({f} of {t} bytes free)"),
        (None, Some(t)) => format!(" (the device has {t} bytes)"),
        (Some(f), None) => format!(" ({f} bytes free)"),
        (None, None) => String::new(),
    }
}
