//! [`Launch`]: one prepared launch of one kernel — its buffers uploaded, its arguments in
//! order, each output with the check of its values — and the [`Workload`] of it. A
//! contract [`super::Kernel`] prepares one per point; a family with a single launch per
//! run builds one in its `prepare`:
//!
//! ```ignore
//! Launch::new(backend, kernel, grid, block)
//!     .input(&data)?
//!     .output(&vec![f32::NAN; n], move |name, got: &[f32]| check_slice(name, &expected, got, scale, tol))?
//!     .arg(rows)
//!     .arg(cols)
//! ```

use dynsmem_kernels::layout::LayoutError;

use super::builder::{Data, Scalar};
use super::{BufferArg, CudaSource, FamilyBackend, KernelInfo, Prepared, WgslSpec, Workload};
use crate::backend::{Arg, Backend, Buffer, LaunchDims, Variant};
use crate::element::Element;
use crate::error::{Error, Result};

/// How one output is checked: the kernel's name (for the error) and the values read back.
pub(super) type OutputCheck = Box<dyn Fn(&str, &Data) -> Result<()>>;
/// A check of every output together: the kernel's name and the outputs in argument order.
type JointCheck = Box<dyn Fn(&str, &[Data]) -> Result<()>>;

/// A prepared launch (see the module documentation).
pub struct Launch<'b, B: Backend> {
    backend: &'b B,
    kernel: Prepared<B::Kernel>,
    dims: LaunchDims,
    /// The arguments, in order.
    args: Vec<Slot<B::Raw>>,
    outputs: Vec<Output>,
    /// A check over every output at once (after their own checks).
    joint: Option<JointCheck>,
    /// Bytes one run moves (`None`: every buffer once).
    bytes: Option<u64>,
    flops: f64,
}

struct Output {
    name: &'static str,
    /// Index of its buffer in the arguments.
    arg: usize,
    /// Zeroed before every run (an output the kernel accumulates into).
    zeroed: bool,
    check: Option<OutputCheck>,
}

/// One argument of a prepared launch.
enum Slot<R> {
    Buffer(DeviceData<R>),
    Scalar(Scalar),
}

/// A device buffer of either element type.
pub enum DeviceData<R> {
    F32(Buffer<R, f32>),
    U32(Buffer<R, u32>),
}

impl<R> DeviceData<R> {
    fn bytes(&self) -> u64 {
        match self {
            DeviceData::F32(b) => b.bytes(),
            DeviceData::U32(b) => b.bytes(),
        }
    }
    fn arg(&self) -> Arg<'_, R> {
        match self {
            DeviceData::F32(b) => b.arg(),
            DeviceData::U32(b) => b.arg(),
        }
    }
}

/// `check` of an output's values of type `T`, as a [`Launch`] keeps it.
fn typed_check<T: LaunchElement, E: Into<Error>>(
    check: impl Fn(&str, &[T]) -> std::result::Result<(), E> + 'static,
) -> OutputCheck {
    Box::new(move |name, data| check(name, T::values(data)).map_err(Into::into))
}

/// The element types a [`Launch`] holds buffers of.
pub trait LaunchElement: Element {
    fn device<R>(buffer: Buffer<R, Self>) -> DeviceData<R>;
    /// The values of `data`, which holds this type.
    fn values(data: &Data) -> &[Self];
}

impl LaunchElement for f32 {
    fn device<R>(buffer: Buffer<R, f32>) -> DeviceData<R> {
        DeviceData::F32(buffer)
    }
    fn values(data: &Data) -> &[f32] {
        match data {
            Data::F32(v) => v,
            Data::U32(_) => &[],
        }
    }
}

impl LaunchElement for u32 {
    fn device<R>(buffer: Buffer<R, u32>) -> DeviceData<R> {
        DeviceData::U32(buffer)
    }
    fn values(data: &Data) -> &[u32] {
        match data {
            Data::U32(v) => v,
            Data::F32(_) => &[],
        }
    }
}

/// The launch-sized bytes (a layout's result), the grid and the block of a launch.
pub type Geometry = (std::result::Result<u32, LayoutError>, u32, u32);

impl<'b, B: FamilyBackend> Launch<'b, B> {
    /// Builds `entry` for `variant` with its twins ([`Prepared::new`]: the launch checked
    /// against the backend's limits first) and starts its launch over `geometry`.
    pub fn prepare(
        backend: &'b B,
        entry: &'static str,
        (layout_bytes, grid, block): Geometry,
        variant: Variant,
        wgsl: &dyn Fn(Variant) -> WgslSpec,
        cuda: &dyn Fn() -> CudaSource,
    ) -> Result<Launch<'b, B>> {
        let kernel = Prepared::new(backend, entry, layout_bytes, grid, block, variant, Some(wgsl), Some(cuda))?;
        Ok(Launch::new(backend, kernel, grid, block))
    }
}

impl<'b, B: Backend> Launch<'b, B> {
    /// A launch of `kernel` over `grid` blocks of `block` threads, with no arguments yet.
    pub fn new(backend: &'b B, kernel: Prepared<B::Kernel>, grid: u32, block: u32) -> Launch<'b, B> {
        let dims = kernel.dims(grid, block);
        Launch { backend, kernel, dims, args: Vec::new(), outputs: Vec::new(), joint: None, bytes: None, flops: 0.0 }
    }

    /// Uploads `data` as the next argument.
    pub fn input<T: LaunchElement>(mut self, data: &[T]) -> Result<Launch<'b, B>> {
        self.args.push(Slot::Buffer(T::device(self.backend.htod(data)?)));
        Ok(self)
    }

    /// Uploads `init` (a poison, such as NaN, that a missed element keeps) as the next
    /// argument, an output checked by `check(kernel name, values read back)`.
    pub fn output<T: LaunchElement, E: Into<Error>>(
        self,
        init: &[T],
        check: impl Fn(&str, &[T]) -> std::result::Result<(), E> + 'static,
    ) -> Result<Launch<'b, B>> {
        self.output_named("output", init, Some(typed_check(check)), false)
    }

    /// Uploads `init` as the next argument, an output checked with the others by
    /// [`Launch::check_outputs`].
    pub fn output_unchecked<T: LaunchElement>(self, init: &[T]) -> Result<Launch<'b, B>> {
        self.output_named("output", init, None, false)
    }

    /// Checks every output together: `check(kernel name, outputs in argument order)`.
    pub fn check_outputs<E: Into<Error>>(
        mut self,
        check: impl Fn(&str, &[Data]) -> std::result::Result<(), E> + 'static,
    ) -> Launch<'b, B> {
        self.joint = Some(Box::new(move |name, outputs| check(name, outputs).map_err(Into::into)));
        self
    }

    /// The next argument, `len` elements zeroed before every run: an output the kernel
    /// accumulates into (a histogram's bins), checked by `check`.
    pub fn accumulator<T: LaunchElement, E: Into<Error>>(
        mut self,
        len: usize,
        check: impl Fn(&str, &[T]) -> std::result::Result<(), E> + 'static,
    ) -> Result<Launch<'b, B>> {
        let buffer = self.backend.alloc::<T>(len)?;
        self.outputs.push(Output {
            name: "output",
            arg: self.args.len(),
            zeroed: true,
            check: Some(typed_check(check)),
        });
        self.args.push(Slot::Buffer(T::device(buffer)));
        Ok(self)
    }

    pub(super) fn output_named<T: LaunchElement>(
        mut self,
        name: &'static str,
        init: &[T],
        check: Option<OutputCheck>,
        zeroed: bool,
    ) -> Result<Launch<'b, B>> {
        self.outputs.push(Output { name, arg: self.args.len(), zeroed, check });
        self.input(init)
    }

    /// The next argument, a scalar.
    pub fn arg(mut self, value: impl Into<Scalar>) -> Launch<'b, B> {
        self.args.push(Slot::Scalar(value.into()));
        self
    }

    /// Launches the grid as thread-block clusters of `cluster` consecutive blocks, checked
    /// against the backend first (a typed error names the kernel and the backend's limit).
    pub fn clustered(mut self, cluster: u32) -> Result<Launch<'b, B>> {
        let dims = crate::backend::LaunchDims { cluster, ..self.dims };
        let info = self.backend.info();
        crate::backend::check_cluster(&self.kernel.name, info.backend, &info.limits, dims)?;
        self.dims = dims;
        Ok(self)
    }

    /// Bytes one run must move (default: every buffer once).
    pub fn bytes(mut self, bytes: u64) -> Launch<'b, B> {
        self.bytes = Some(bytes);
        self
    }

    /// Floating-point operations of one run (default 0: a bandwidth-bound kernel).
    pub fn flops(mut self, flops: f64) -> Launch<'b, B> {
        self.flops = flops;
        self
    }

    /// The outputs' names and their values as they are on the device now.
    pub fn read_outputs(&self) -> Result<Vec<(&'static str, Data)>> {
        self.outputs.iter().map(|o| Ok((o.name, self.read(o.arg)?))).collect()
    }

    /// The values of the `i`-th output (in argument order) as they are on the device now
    /// (empty where it holds another type).
    pub fn output_values<T: LaunchElement>(&self, i: usize) -> Result<Vec<T>> {
        Ok(T::values(&self.read(self.outputs[i].arg)?).to_vec())
    }

    fn read(&self, arg: usize) -> Result<Data> {
        Ok(match &self.args[arg] {
            Slot::Buffer(DeviceData::F32(b)) => Data::F32(self.backend.dtoh(b)?),
            Slot::Buffer(DeviceData::U32(b)) => Data::U32(self.backend.dtoh(b)?),
            Slot::Scalar(_) => unreachable!("outputs index buffer arguments"),
        })
    }
}

/// The one check of a caller's buffers against a workload's ([`Workload::run_on`]): as many as
/// it takes, each holding at least the bytes the launch reads or writes, at a nonzero address
/// aligned to `align` bytes. A typed refusal names the kernel, the buffer and both sizes.
pub fn check_caller_buffers(kernel: &str, wanted: &[BufferArg], given: &[(u64, u64)], align: u64) -> Result<()> {
    let refuse = |reason: String| Error::CallerBuffers { kernel: kernel.to_string(), reason };
    if given.len() != wanted.len() {
        let names: Vec<&str> = wanted.iter().map(|b| b.name).collect();
        return Err(refuse(format!(
            "{} buffers given, the kernel takes {} ({})",
            given.len(),
            wanted.len(),
            names.join(", ")
        )));
    }
    for (k, ((addr, bytes), w)) in given.iter().zip(wanted).enumerate() {
        if *bytes < w.bytes {
            return Err(refuse(format!(
                "buffer {k} ({}) holds {bytes} bytes; the launch {} {} ({} {} values)",
                w.name,
                if w.output { "writes" } else { "reads" },
                w.bytes,
                w.len,
                w.element
            )));
        }
        if *addr == 0 || addr % align != 0 {
            return Err(refuse(format!(
                "buffer {k} ({}) is at address {addr:#x}: not a {align}-byte aligned device address",
                w.name
            )));
        }
    }
    Ok(())
}

impl<B: Backend> Launch<'_, B> {
    /// The launch's arguments, each buffer from `buffer(index among the buffers, its slot)`.
    fn args_with<'a>(
        &'a self,
        mut buffer: impl FnMut(usize, &'a DeviceData<B::Raw>) -> Arg<'a, B::Raw>,
    ) -> Vec<Arg<'a, B::Raw>> {
        let mut k = 0;
        self.args
            .iter()
            .map(|s| match s {
                Slot::Buffer(b) => {
                    k += 1;
                    buffer(k - 1, b)
                }
                Slot::Scalar(Scalar::U32(v)) => Arg::U32(*v),
                Slot::Scalar(Scalar::U64(v)) => Arg::U64(*v),
                Slot::Scalar(Scalar::F32(v)) => Arg::F32(*v),
                Slot::Scalar(Scalar::Param(_)) => unreachable!("parameters are resolved when prepared"),
            })
            .collect()
    }
}

impl<B: Backend> Workload for Launch<'_, B> {
    fn kernel(&self) -> KernelInfo {
        self.kernel.info()
    }
    fn bytes(&self) -> u64 {
        let buffers = self.args.iter().map(|a| if let Slot::Buffer(b) = a { b.bytes() } else { 0 });
        self.bytes.unwrap_or_else(|| buffers.sum())
    }
    fn flops(&self) -> f64 {
        self.flops
    }
    fn run(&self) -> Result<()> {
        for o in self.outputs.iter().filter(|o| o.zeroed) {
            match &self.args[o.arg] {
                Slot::Buffer(DeviceData::F32(b)) => self.backend.fill_zero(b)?,
                Slot::Buffer(DeviceData::U32(b)) => self.backend.fill_zero(b)?,
                Slot::Scalar(_) => unreachable!("outputs index buffer arguments"),
            }
        }
        let args = self.args_with(|_, b| b.arg());
        self.backend.launch(&self.kernel.built.kernel, self.dims, &args)
    }
    fn buffers(&self) -> Vec<BufferArg> {
        let mut out = Vec::new();
        for (i, slot) in self.args.iter().enumerate() {
            let Slot::Buffer(b) = slot else { continue };
            let output = self.outputs.iter().find(|o| o.arg == i);
            let (element, len) = match b {
                DeviceData::F32(b) => ("f32", b.len() as u64),
                DeviceData::U32(b) => ("u32", b.len() as u64),
            };
            out.push(BufferArg {
                name: output.map_or("input", |o| o.name),
                element,
                len,
                bytes: len * 4,
                output: output.is_some(),
                zeroed: output.is_some_and(|o| o.zeroed),
            });
        }
        out
    }
    fn run_on(&self, buffers: &[(u64, u64)], stream: u64) -> Result<()> {
        check_caller_buffers(&self.kernel.name, &Workload::buffers(self), buffers, 4)?;
        let args = self.args_with(|k, _| Arg::U64(buffers[k].0));
        self.backend.launch_on_stream(&self.kernel.built.kernel, self.dims, &args, stream)
    }
    /// Every output through its check, then all of them through the joint check.
    fn check(&self) -> Result<()> {
        for o in &self.outputs {
            if let Some(check) = &o.check {
                check(&self.kernel.name, &self.read(o.arg)?)?;
            }
        }
        if let Some(joint) = &self.joint {
            let outputs: Vec<Data> = self.read_outputs()?.into_iter().map(|(_, d)| d).collect();
            joint(&self.kernel.name, &outputs)?;
        }
        Ok(())
    }
}
