//! The kernel definition form: one source, three builds.
//!
//! [`kernels!`](crate::kernels) turns each `pub fn name(args) { body }` into
//! - on a GPU target, the entry point `#[unsafe(no_mangle)] pub unsafe extern "gpu-kernel" fn`;
//! - on the host, a plain `pub unsafe fn` the CPU backend calls once per thread,
//!
//! and adds a table of [`KernelEntry`]s naming each kernel and its parameters, which the
//! CPU backend launches by name and against which every backend's argument packing is
//! checked. Kernel parameters are raw pointers and the scalars of [`ParamKind`]; a kernel
//! reads and writes the memory they point to through [`gpu::read_global`](crate::gpu::read_global)
//! and [`gpu::write_global`](crate::gpu::write_global) (or the atomics and async copies of
//! [`gpu`](crate::gpu)), which the CPU backend checks against each buffer's bounds.
//!
//! After the parameter list an entry may name what PTX needs and Rust has no attribute for:
//! `[max_registers = 128]` (ptxas keeps the entry's registers per thread at or under it:
//! `.maxnreg`), `[cluster = 2]` (it is launched as thread-block clusters of that many
//! blocks: `.reqnctapercluster`) and `[spills = "why"]` (ptxas may spill its registers, for
//! the reason given; any other entry's spill fails `tests/ptxas.rs`). The build helper (`dynsmem-build`) writes them into the
//! PTX from the table ([`KernelEntry::max_registers`], [`KernelEntry::cluster`]).
//!
//! ```
//! dynsmem_kernels::kernels! { EXAMPLES;
//!     /// Writes each thread's index.
//!     pub fn write_ids(out: *mut u32, n: u32) {
//!         let t = dynsmem_kernels::gpu::block_idx_x() * dynsmem_kernels::gpu::block_dim_x()
//!             + dynsmem_kernels::gpu::thread_idx_x();
//!         if t < n {
//!             unsafe { dynsmem_kernels::gpu::write_global(out.add(t as usize), t) };
//!         }
//!     }
//! }
//! assert_eq!(EXAMPLES[0].name, "write_ids");
//! assert_eq!(EXAMPLES[0].params, &[dynsmem_kernels::ParamKind::Ptr, dynsmem_kernels::ParamKind::U32]);
//! ```

/// How one kernel parameter is passed: a device address, or a scalar by value. Every
/// backend packs arguments in this order and these sizes (HSA kernargs: naturally aligned).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// A pointer to device memory (8 bytes).
    Ptr,
    U32,
    U64,
    F32,
}

impl ParamKind {
    /// Size in bytes as the kernel receives it.
    pub const fn bytes(self) -> u32 {
        match self {
            ParamKind::Ptr | ParamKind::U64 => 8,
            ParamKind::U32 | ParamKind::F32 => 4,
        }
    }
}

/// Where each parameter sits in an HSA kernarg segment: `(offset, size)` in bytes, each
/// naturally aligned after the previous one (the AMDGPU code-object ABI; the HIP backend
/// packs its argument buffer with exactly this, and CI checks it against every code
/// object's metadata).
pub fn kernarg_layout(params: &[ParamKind]) -> impl Iterator<Item = (u32, u32)> + '_ {
    let mut end = 0u32;
    params.iter().map(move |p| {
        let size = p.bytes();
        let offset = end.next_multiple_of(size);
        end = offset + size;
        (offset, size)
    })
}

/// Bytes of the kernarg segment of `params` (the end of the last parameter).
pub fn kernarg_size(params: &[ParamKind]) -> u32 {
    kernarg_layout(params).last().map(|(o, s)| o + s).unwrap_or(0)
}

/// The grid, block, launch-sized shared bytes (per block) and cluster of one launch (1-D),
/// as every backend (the CPU executor among them) takes it.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LaunchDims {
    pub grid: u32,
    pub block: u32,
    pub shared_bytes: u32,
    /// Blocks per thread-block cluster: consecutive blocks `c * cluster ..` form cluster `c`
    /// and may read each other's launch-sized memory. 1: plain blocks. `grid` is a multiple.
    #[cfg_attr(feature = "serde", serde(default = "one"))]
    pub cluster: u32,
}

#[cfg(feature = "serde")]
fn one() -> u32 {
    1
}

impl LaunchDims {
    /// Plain blocks (no clusters).
    pub fn new(grid: u32, block: u32, shared_bytes: u32) -> LaunchDims {
        LaunchDims { grid, block, shared_bytes, cluster: 1 }
    }
}

/// A type a kernel may take as a parameter.
pub trait KernelParam {
    const KIND: ParamKind;
    /// Rebuilds the value from the 8-byte slot the host packed it in (the CUDA backend's
    /// packing: addresses and `u64` whole, `u32` in the low half, `f32` as its bits).
    fn from_slot(slot: u64) -> Self;
}

impl<T> KernelParam for *const T {
    const KIND: ParamKind = ParamKind::Ptr;
    fn from_slot(slot: u64) -> Self {
        slot as usize as *const T
    }
}
impl<T> KernelParam for *mut T {
    const KIND: ParamKind = ParamKind::Ptr;
    fn from_slot(slot: u64) -> Self {
        slot as usize as *mut T
    }
}
impl KernelParam for u32 {
    const KIND: ParamKind = ParamKind::U32;
    fn from_slot(slot: u64) -> Self {
        slot as u32
    }
}
impl KernelParam for u64 {
    const KIND: ParamKind = ParamKind::U64;
    fn from_slot(slot: u64) -> Self {
        slot
    }
}
impl KernelParam for f32 {
    const KIND: ParamKind = ParamKind::F32;
    fn from_slot(slot: u64) -> Self {
        f32::from_bits(slot as u32)
    }
}

/// One kernel of an image: its name and parameters, and on the host the function the CPU
/// backend runs for each thread.
#[derive(Debug, Clone, Copy)]
pub struct KernelEntry {
    pub name: &'static str,
    pub params: &'static [ParamKind],
    /// The parameters' names, as in the source (faults name the buffer by them).
    pub param_names: &'static [&'static str],
    /// Registers per thread ptxas may use at most (`[max_registers = N]`); 0: no cap.
    pub max_registers: u32,
    /// Blocks per thread-block cluster (`[cluster = N]`); 1: launched as plain blocks.
    pub cluster: u32,
    /// Why ptxas may spill this entry's registers to local memory (`[spills = "why"]`);
    /// empty: a spill is a regression (`tests/ptxas.rs` fails on it).
    pub spills: &'static str,
    /// Runs the kernel body for the calling thread (the CPU backend has installed the
    /// thread's context). `slots` holds one packed argument per parameter.
    ///
    /// # Safety
    /// `slots` must match `params` and point to memory valid for the kernel's accesses.
    #[cfg(not(gpu))]
    pub run: unsafe fn(slots: &[u64]),
}

/// Defines kernels once for every build: see the [module documentation](crate::entry).
/// `kernels! { TABLE; pub fn a(..) {..} pub fn b(..) {..} }` also defines
/// `pub const TABLE: &[KernelEntry]`.
#[macro_export]
macro_rules! kernels {
    ($table:ident; $( $(#[$attr:meta])* pub fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? )
        $([max_registers = $regs:literal])? $([cluster = $cluster:literal])? $([spills = $spills:literal])?
        $body:block )*) => {
        $(
            $(#[$attr])*
            ///
            /// # Safety
            /// Launched with arguments valid for the kernel and its launch-sized layout.
            #[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
            #[allow(clippy::too_many_arguments)]
            #[unsafe(no_mangle)]
            pub unsafe extern "gpu-kernel" fn $name($($arg: $ty),*) $body

            $(#[$attr])*
            ///
            /// On the host: runs the kernel body for the calling thread of a CPU-backend launch.
            ///
            /// # Safety
            /// Only the CPU backend may call it, with arguments valid for the kernel.
            #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
            #[allow(clippy::too_many_arguments)]
            pub unsafe fn $name($($arg: $ty),*) $body
        )*

        /// Every kernel this module defines, with its parameters.
        pub const $table: &[$crate::KernelEntry] = &[$(
            $crate::KernelEntry {
                name: stringify!($name),
                params: &[$(<$ty as $crate::KernelParam>::KIND),*],
                param_names: &[$(stringify!($arg)),*],
                max_registers: 0 $(+ $regs)?,
                cluster: 1 $(* $cluster)?,
                spills: concat!("" $(, $spills)?),
                #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
                run: {
                    unsafe fn run(slots: &[u64]) {
                        #[allow(unused_mut, unused_variables)]
                        let mut slots = slots.iter().copied();
                        $(let $arg = <$ty as $crate::KernelParam>::from_slot(slots.next().unwrap_or(0));)*
                        unsafe { $name($($arg),*) }
                    }
                    run
                },
            }
        ),*];
    };
}
