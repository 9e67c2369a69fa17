//! The one error type of the host library.

use std::path::PathBuf;

use dynsmem_kernels::layout::LayoutError;

use crate::backend::BackendKind;
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
    /// More blocks than the device allows in one dimension.
    #[error("{kernel}: a grid of {requested} blocks is over the {backend} maximum of {limit}")]
    GridTooLarge { kernel: String, backend: BackendKind, requested: u64, limit: u64 },
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
    /// The backend cannot be used on this machine (no driver library, no device, no adapter).
    #[error("{backend} unavailable: {reason}")]
    Unavailable { backend: BackendKind, reason: String },
    /// A driver call failed.
    #[error("{backend} {call}: {message}")]
    Driver { backend: BackendKind, call: &'static str, message: String },
    /// An allocation the device cannot satisfy.
    #[error("{backend}: cannot allocate {requested} bytes ({free} of {total} bytes free)")]
    OutOfMemory { backend: BackendKind, requested: u64, free: u64, total: u64 },
    /// A single buffer larger than the backend can bind or allocate.
    #[error("{backend}: a buffer of {requested} bytes is over the {limit_name} of {limit} bytes")]
    BufferTooLarge { backend: BackendKind, requested: u64, limit: u64, limit_name: &'static str },
    /// The operation exists, but not on this backend or not in this form.
    #[error("{backend}: {what} is not supported")]
    Unsupported { backend: BackendKind, what: String },
    /// The arguments of a launch do not match the kernel's parameters.
    #[error("{kernel}: launched with arguments {got}, the kernel takes {expected}")]
    ArgumentMismatch { kernel: String, expected: String, got: String },
    /// A kernel faulted: on the CPU backend an access outside its carve, a carve larger
    /// than the launch, a trap or a divergent barrier, with where it happened.
    #[error("{backend}: kernel fault: {detail}")]
    KernelFault {
        backend: BackendKind,
        kernel: String,
        workgroup: u32,
        thread: u32,
        detail: String,
        fault: Option<dynsmem_kernels::gpu::host::FaultKind>,
    },
    /// A result differs from the CPU reference beyond the tolerance.
    #[error(transparent)]
    Mismatch(#[from] Mismatch),
    /// Reading or writing a record file.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
