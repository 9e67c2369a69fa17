//! WGSL backend: WGSL kernels with static `var<workgroup>` arrays through wgpu on Vulkan.
//!
//! WGSL has no launch-sized workgroup memory: every array size is fixed when the pipeline
//! is created (by a literal in the source, or by a pipeline `override` constant), so each
//! config is a pipeline of its own. Pipelines are cached, and the time to create one is
//! kept on the kernel ([`WgpuKernel::create_ms`]): it is the cost launch-time sizing removes.
//!
//! wgpu adds runtime checks to every shader (index clamping where the driver has no robust
//! access, and a counter in every loop so none can run forever). They are on by default, as
//! every wgpu user has them; `DYNSMEM_WGSL_RUNTIME_CHECKS=off` creates modules without them
//! (our kernels index only inside host-validated bounds and every loop is bounded), so
//! their cost can be measured. Records carry the setting in `api`.
//!
//! Kernel ABI: buffer arguments bind to `@group(0) @binding(0..k)` in order; scalar
//! arguments are packed, 4 bytes each (`u64` as lo, hi), into a uniform block bound at
//! `@binding(k)`.

pub mod spirv;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use wgpu::util::DeviceExt;

use super::{Arg, Backend, BackendKind, Buffer, DeviceInfo, KernelName, LaunchDims, Limits, Probe};
use crate::element::Element;
use crate::error::{Error, Result};

const COPY_WGSL: &str = include_str!("copy.wgsl");
/// PCI vendor id of NVIDIA adapters.
const NVIDIA: u32 = 0x10de;
/// Buffers are padded to this, so a WGSL kernel may view any buffer as `array<vec4<_>>`.
const ALLOC_GRANULE: u64 = 16;
/// Compute passes one [`Backend::time_ms`] scope may hold (two timestamps each).
const MAX_TIMED_PASSES: u32 = 256;

/// A compute pipeline: one WGSL entry point with every `override` fixed.
pub struct WgpuKernel {
    name: String,
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    /// Static workgroup bytes the kernel declares (as its family computes them).
    pub static_shared_bytes: u32,
    /// Threads per workgroup the pipeline was built with; launches must match it.
    pub workgroup_size: u32,
    /// Milliseconds it took to create the shader module (if new) and the pipeline.
    pub create_ms: f64,
    /// What the SPIR-V wgpu hands the driver for this pipeline holds
    /// ([`spirv::SpirvProfile`]), translated again with wgpu's options; `None` where naga
    /// could not translate it here.
    pub spirv: Option<spirv::SpirvProfile>,
}

impl KernelName for WgpuKernel {
    fn name(&self) -> &str {
        &self.name
    }
}

/// How to build a pipeline.
pub struct PipelineDesc<'a> {
    /// Kernel name for errors and records, e.g. `reduce_sum_f32[wgsl-literal,block=256]`.
    pub name: String,
    pub source: &'a str,
    pub entry: &'a str,
    /// Values of the shader's `override` constants.
    pub constants: &'a [(&'a str, f64)],
    pub workgroup_size: u32,
    pub static_shared_bytes: u32,
}

struct Timestamps {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    readback: wgpu::Buffer,
    period_ns: f64,
}

/// Work recorded while a [`Backend::time_ms`] scope is open.
struct Scope {
    encoder: wgpu::CommandEncoder,
    passes: u32,
}

type PipelineKey = (u64, String, Vec<(String, u64)>);

/// One wgpu device (Vulkan adapter) and its queue.
pub struct WgpuBackend {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: DeviceInfo,
    timestamps: Option<Timestamps>,
    modules: RefCell<HashMap<u64, wgpu::ShaderModule>>,
    pipelines: RefCell<HashMap<PipelineKey, Rc<WgpuKernel>>>,
    scope: RefCell<Option<Scope>>,
    /// Errors wgpu reports outside an error scope (it would panic by default).
    uncaptured: Arc<Mutex<Vec<String>>>,
    /// wgpu's shader runtime checks (bounds, loop bounding) on?
    runtime_checks: bool,
    /// Milliseconds spent creating shader modules and pipelines so far (cache hits cost
    /// nothing): the tuner reads it around each config to report pipeline creation apart.
    pipeline_ms: Cell<f64>,
    /// The adapter's PCI bus id and vendor, for NVML on an NVIDIA adapter.
    pci_bus_id: String,
    vendor: u32,
    /// NVML for this adapter's GPU, opened at the first measurement (`None` inside: not an
    /// NVIDIA GPU, or no NVML).
    observer: std::cell::OnceCell<Option<Box<crate::observe::nvml::NvmlObserver>>>,
    /// Held, never used: it keeps the GPU's clocks up (see [`WgpuBackend::new`]).
    _cuda_context: Option<std::sync::Arc<cudarc::driver::CudaContext>>,
}

fn source_hash(source: &str) -> u64 {
    let mut h = DefaultHasher::new();
    source.hash(&mut h);
    h.finish()
}

impl WgpuBackend {
    /// Finds a Vulkan adapter: `DYNSMEM_WGPU_ADAPTER` (a substring of its name) if set,
    /// else the first discrete GPU, integrated GPU, virtual GPU, then CPU adapter.
    pub fn probe() -> Probe<WgpuBackend> {
        match WgpuBackend::new() {
            Ok(b) => Probe::Ready(b),
            Err(Error::Unavailable { reason, .. }) => Probe::Unavailable(BackendKind::Wgsl, reason),
            Err(e) => Probe::Unavailable(BackendKind::Wgsl, e.to_string()),
        }
    }

    pub fn new() -> Result<WgpuBackend> {
        let unavailable = |reason: String| Error::Unavailable { backend: BackendKind::Wgsl, reason };
        // wgpu reports a missing loader only as "no adapters"; say which it is.
        // SAFETY: loading the Vulkan loader runs its initialisers, which is what wgpu does next anyway.
        if unsafe { libloading::Library::new("libvulkan.so.1") }.is_err() {
            return Err(unavailable("no Vulkan loader (libvulkan.so.1 not found; install libvulkan1)".into()));
        }
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::VULKAN,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN));
        if adapters.is_empty() {
            return Err(unavailable(
                "Vulkan loader found but no adapter (no ICD: install the GPU's Vulkan driver, or mesa-vulkan-drivers for lavapipe)"
                    .into(),
            ));
        }
        let wanted = std::env::var("DYNSMEM_WGPU_ADAPTER").ok();
        let rank = |a: &wgpu::Adapter| match a.get_info().device_type {
            wgpu::DeviceType::DiscreteGpu => 0,
            wgpu::DeviceType::IntegratedGpu => 1,
            wgpu::DeviceType::VirtualGpu => 2,
            wgpu::DeviceType::Cpu => 3,
            wgpu::DeviceType::Other => 4,
        };
        let adapter = match &wanted {
            Some(w) => adapters.into_iter().find(|a| a.get_info().name.contains(w.as_str())).ok_or_else(|| {
                unavailable(format!("no Vulkan adapter whose name contains {w:?} (DYNSMEM_WGPU_ADAPTER)"))
            })?,
            None => adapters.into_iter().min_by_key(rank).expect("not empty"),
        };

        let ainfo = adapter.get_info();
        let alimits = adapter.limits();
        let features = adapter.features() & wgpu::Features::TIMESTAMP_QUERY;
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("dynsmem"),
            required_features: features,
            required_limits: alimits.clone(),
            ..Default::default()
        }))
        .map_err(|e| unavailable(format!("requesting a device on {}: {e}", ainfo.name)))?;

        let uncaptured = Arc::new(Mutex::new(Vec::new()));
        let sink = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            sink.lock().unwrap_or_else(|p| p.into_inner()).push(e.to_string());
        }));

        let timestamps = features.contains(wgpu::Features::TIMESTAMP_QUERY).then(|| {
            let bytes = 2 * MAX_TIMED_PASSES as u64 * 8;
            Timestamps {
                set: device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("dynsmem timestamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: 2 * MAX_TIMED_PASSES,
                }),
                resolve: device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("timestamp resolve"),
                    size: bytes,
                    usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                }),
                readback: device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("timestamp readback"),
                    size: bytes,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }),
                period_ns: queue.get_timestamp_period() as f64,
            }
        });

        let is_cpu = ainfo.device_type == wgpu::DeviceType::Cpu;
        let runtime_checks = !std::env::var("DYNSMEM_WGSL_RUNTIME_CHECKS").is_ok_and(|v| v == "off");
        // Vulkan reports no multiprocessor count; on an NVIDIA GPU the CUDA driver does
        // (without a context), so grids sized by it match the CUDA kernels'.
        let cuda_ordinal = (ainfo.vendor == NVIDIA && !is_cpu)
            .then(|| crate::backend::cuda::driver::ordinal_at_pci(&ainfo.device_pci_bus_id))
            .flatten();
        let sm_facts = cuda_ordinal.and_then(crate::backend::cuda::driver::multiprocessors);
        // A CUDA context held open for the backend's life: while any CUDA context exists
        // the driver keeps the GPU at full clocks; a process with Vulkan work only gets
        // the power-saving policy, which reads the gaps between submissions as idle and
        // may clock down. `DYNSMEM_WGSL_HOLD_CUDA=0` leaves it out (ci/variance.sh measures
        // both ways).
        let cuda_context = match (cuda_ordinal, std::env::var("DYNSMEM_WGSL_HOLD_CUDA").as_deref()) {
            (Some(_), Ok("0")) | (None, _) => None,
            (Some(ordinal), _) => cudarc::driver::CudaContext::new(ordinal).ok(),
        };
        let info = DeviceInfo {
            backend: BackendKind::Wgsl,
            name: ainfo.name.clone(),
            driver: if ainfo.driver_info.is_empty() {
                ainfo.driver.clone()
            } else {
                format!("{} {}", ainfo.driver, ainfo.driver_info)
            },
            api: format!(
                "Vulkan via wgpu 30 ({:?}); runtime checks {}{}",
                ainfo.device_type,
                if runtime_checks { "on" } else { "off" },
                if cuda_context.is_some() { "; CUDA context held" } else { "" }
            ),
            is_cpu,
            limits: Limits {
                max_threads_per_block: alimits
                    .max_compute_invocations_per_workgroup
                    .min(alimits.max_compute_workgroup_size_x),
                max_grid_x: alimits.max_compute_workgroups_per_dimension as u64,
                launch_shared_default: 0,
                launch_shared_max: 0,
                static_shared_max: alimits.max_compute_workgroup_storage_size,
                shared_per_multiprocessor: sm_facts.map(|f| f.1),
                multiprocessors: sm_facts.map(|f| f.0),
                max_buffer_bytes: alimits.max_storage_buffer_binding_size.min(alimits.max_buffer_size),
                memory_bytes: None,
                max_cluster: 1,
            },
        };
        Ok(WgpuBackend {
            device,
            queue,
            info,
            timestamps,
            modules: RefCell::new(HashMap::new()),
            pipelines: RefCell::new(HashMap::new()),
            scope: RefCell::new(None),
            uncaptured,
            runtime_checks,
            pipeline_ms: Cell::new(0.0),
            pci_bus_id: ainfo.device_pci_bus_id.clone(),
            vendor: ainfo.vendor,
            _cuda_context: cuda_context,
            observer: std::cell::OnceCell::new(),
        })
    }

    /// The pipeline for `desc`, created on first use (checked against the static
    /// workgroup-memory and workgroup-size limits before wgpu sees it).
    pub fn pipeline(&self, desc: PipelineDesc<'_>) -> Result<Rc<WgpuKernel>> {
        let l = &self.info.limits;
        if desc.static_shared_bytes > l.static_shared_max {
            return Err(Error::SharedMemoryLimit {
                kernel: desc.name,
                backend: BackendKind::Wgsl,
                kind: "static",
                requested: desc.static_shared_bytes as u64,
                limit: l.static_shared_max as u64,
                limit_name: "max_compute_workgroup_storage_size",
            });
        }
        if desc.workgroup_size == 0 || desc.workgroup_size > l.max_threads_per_block {
            return Err(Error::BlockTooLarge {
                kernel: desc.name,
                backend: BackendKind::Wgsl,
                requested: desc.workgroup_size,
                limit: l.max_threads_per_block,
            });
        }
        let hash = source_hash(desc.source);
        let key: PipelineKey =
            (hash, desc.entry.to_string(), desc.constants.iter().map(|(k, v)| (k.to_string(), v.to_bits())).collect());
        if let Some(k) = self.pipelines.borrow().get(&key) {
            return Ok(k.clone());
        }
        let started = Instant::now();
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = self
            .modules
            .borrow_mut()
            .entry(hash)
            .or_insert_with(|| {
                let module = wgpu::ShaderModuleDescriptor {
                    label: Some(&desc.name),
                    source: wgpu::ShaderSource::Wgsl(desc.source.into()),
                };
                if self.runtime_checks {
                    self.device.create_shader_module(module)
                } else {
                    // SAFETY: the kernels of this crate index only inside bounds their host
                    // launchers validate, and every loop is bounded by its arguments.
                    unsafe { self.device.create_shader_module_trusted(module, wgpu::ShaderRuntimeChecks::unchecked()) }
                }
            })
            .clone();
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(&desc.name),
            layout: None,
            module: &module,
            entry_point: Some(desc.entry),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: desc.constants,
                // The kernels initialise what they read; zeroing would add a pass over
                // workgroup memory that the CUDA path does not pay.
                zero_initialize_workgroup_memory: false,
            },
            cache: None,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            self.modules.borrow_mut().remove(&hash);
            return Err(Error::Driver {
                backend: BackendKind::Wgsl,
                call: "create_compute_pipeline",
                message: format!("{}: {e}", desc.name),
            });
        }
        let layout = pipeline.get_bind_group_layout(0);
        let create_ms = started.elapsed().as_secs_f64() * 1e3;
        self.pipeline_ms.set(self.pipeline_ms.get() + create_ms);
        // After the clock: the profile is ours, not part of what the pipeline costs.
        let spirv = spirv::profile(desc.source, desc.entry, desc.constants, self.runtime_checks).ok();
        let kernel = Rc::new(WgpuKernel {
            name: desc.name,
            pipeline,
            layout,
            static_shared_bytes: desc.static_shared_bytes,
            workgroup_size: desc.workgroup_size,
            create_ms,
            spirv,
        });
        self.pipelines.borrow_mut().insert(key, kernel.clone());
        Ok(kernel)
    }

    /// The SPIR-V profile of every pipeline created so far that has one, by kernel name,
    /// sorted by name.
    pub fn pipeline_profiles(&self) -> Vec<(String, spirv::SpirvProfile)> {
        let mut out: Vec<(String, spirv::SpirvProfile)> =
            self.pipelines.borrow().values().filter_map(|k| Some((k.name.clone(), k.spirv.clone()?))).collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Milliseconds this backend has spent creating shader modules and pipelines, over
    /// every pipeline made so far (a cached pipeline adds nothing).
    pub fn pipeline_ms_total(&self) -> f64 {
        self.pipeline_ms.get()
    }

    fn take_uncaptured(&self, call: &'static str) -> Result<()> {
        let mut errs = self.uncaptured.lock().unwrap_or_else(|p| p.into_inner());
        if errs.is_empty() {
            Ok(())
        } else {
            let message = errs.join("; ");
            errs.clear();
            Err(Error::Driver { backend: BackendKind::Wgsl, call, message })
        }
    }

    fn check_buffer(&self, bytes: u64) -> Result<u64> {
        // Saturated: a size past u64 (or one that rounding would wrap) is over any limit.
        let padded = bytes.max(1).checked_next_multiple_of(ALLOC_GRANULE).unwrap_or(u64::MAX);
        let limit = self.info.limits.max_buffer_bytes;
        if padded > limit {
            return Err(Error::BufferTooLarge {
                backend: BackendKind::Wgsl,
                requested: bytes,
                limit,
                limit_name: "adapter's max_storage_buffer_binding_size",
            });
        }
        Ok(padded)
    }

    /// A storage buffer of `padded` bytes. wgpu reports a failed allocation as an
    /// out-of-memory error scope, not a return value: it becomes [`Error::OutOfMemory`]
    /// here instead of a driver message the next call would find.
    fn new_buffer(&self, padded: u64, mapped: bool) -> Result<wgpu::Buffer> {
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: padded,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: mapped,
        });
        if pollster::block_on(scope.pop()).is_some() {
            return Err(Error::OutOfMemory { backend: BackendKind::Wgsl, requested: padded, free: None, total: None });
        }
        Ok(buffer)
    }

    fn wait(&self) -> Result<()> {
        self.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| Error::Driver {
            backend: BackendKind::Wgsl,
            call: "poll",
            message: e.to_string(),
        })?;
        self.take_uncaptured("queue")
    }

    /// Reads `len` bytes of a `MAP_READ` buffer.
    fn read_mapped(&self, buf: &wgpu::Buffer, len: u64) -> Result<Vec<u8>> {
        let slice = buf.slice(0..len);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.wait()?;
        rx.recv()
            .map_err(|e| Error::Driver { backend: BackendKind::Wgsl, call: "map_async", message: e.to_string() })?
            .map_err(|e| Error::Driver { backend: BackendKind::Wgsl, call: "map_async", message: e.to_string() })?;
        let bytes = slice
            .get_mapped_range()
            .map_err(|e| Error::Driver {
                backend: BackendKind::Wgsl,
                call: "get_mapped_range",
                message: e.to_string(),
            })?
            .to_vec();
        buf.unmap();
        Ok(bytes)
    }

    fn copy_kernel(&self) -> Result<Rc<WgpuKernel>> {
        self.pipeline(PipelineDesc {
            name: "copy_vec4[wgsl]".into(),
            source: COPY_WGSL,
            entry: "copy",
            constants: &[],
            workgroup_size: 256,
            static_shared_bytes: 0,
        })
    }
}

impl Backend for WgpuBackend {
    type Raw = wgpu::Buffer;
    type Kernel = Rc<WgpuKernel>;

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn observer(&self) -> Option<&dyn crate::observe::Observer> {
        let nvml = self.observer.get_or_init(|| {
            (self.vendor == NVIDIA)
                .then(|| crate::observe::nvml::NvmlObserver::for_pci_bus_id(&self.pci_bus_id).ok().map(Box::new))
                .flatten()
        });
        nvml.as_deref().map(|o| o as &dyn crate::observe::Observer)
    }

    fn alloc<T: Element>(&self, len: usize) -> Result<Buffer<Self::Raw, T>> {
        let bytes = (len as u64).saturating_mul(size_of::<T>() as u64);
        let padded = self.check_buffer(bytes)?;
        // wgpu zero-initialises new buffers.
        let raw = self.new_buffer(padded, false)?;
        self.take_uncaptured("create_buffer")?;
        Ok(Buffer::from_raw(raw, len))
    }

    fn htod<T: Element>(&self, data: &[T]) -> Result<Buffer<Self::Raw, T>> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let padded = self.check_buffer(bytes.len() as u64)?;
        let raw = self.new_buffer(padded, true)?;
        if !bytes.is_empty() {
            raw.slice(..)
                .get_mapped_range_mut()
                .map_err(|e| Error::Driver {
                    backend: BackendKind::Wgsl,
                    call: "get_mapped_range_mut",
                    message: e.to_string(),
                })?
                .slice(..bytes.len())
                .copy_from_slice(bytes);
        }
        raw.unmap();
        self.take_uncaptured("create_buffer")?;
        Ok(Buffer::from_raw(raw, data.len()))
    }

    fn dtoh<T: Element>(&self, buf: &Buffer<Self::Raw, T>) -> Result<Vec<T>> {
        let bytes = buf.bytes();
        if bytes == 0 {
            return Ok(Vec::new());
        }
        let padded = bytes.next_multiple_of(ALLOC_GRANULE);
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: padded,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(buf.raw(), 0, &staging, 0, padded);
        self.queue.submit([enc.finish()]);
        let raw = self.read_mapped(&staging, padded)?;
        Ok(bytemuck::pod_collect_to_vec(&raw[..bytes as usize]))
    }

    fn copy<T: Element>(&self, src: &Buffer<Self::Raw, T>, dst: &mut Buffer<Self::Raw, T>) -> Result<()> {
        super::check_copy_lengths("copy_vec4[wgsl]", src.len(), dst.len())?;
        let n_vec4 = src.bytes().div_ceil(16);
        let n_vec4 = u32::try_from(n_vec4).map_err(|_| Error::InvalidProblem {
            kernel: "copy_vec4[wgsl]".into(),
            reason: format!("{} bytes is past the kernel's u32 indexing", src.bytes()),
        })?;
        let kernel = self.copy_kernel()?;
        let grid = n_vec4.div_ceil(256).clamp(1, self.info.limits.max_grid_x.min(65_535) as u32);
        self.launch(
            &kernel,
            LaunchDims::new(grid, 256, 0),
            &[Arg::Buffer(src.raw()), Arg::Buffer(&dst.raw), Arg::U32(n_vec4)],
        )
    }

    fn fill_zero<T: Element>(&self, buf: &Buffer<Self::Raw, T>) -> Result<()> {
        let mut scope = self.scope.borrow_mut();
        match scope.as_mut() {
            // Recorded in the timed encoder, between the passes around it.
            Some(s) => s.encoder.clear_buffer(buf.raw(), 0, None),
            None => {
                let mut enc = self.device.create_command_encoder(&Default::default());
                enc.clear_buffer(buf.raw(), 0, None);
                self.queue.submit([enc.finish()]);
            }
        }
        drop(scope);
        self.take_uncaptured("clear_buffer")
    }

    fn launch(&self, kernel: &Self::Kernel, dims: LaunchDims, args: &[Arg<'_, Self::Raw>]) -> Result<()> {
        self.check_launch(&kernel.name, dims)?;
        if dims.block != kernel.workgroup_size {
            return Err(Error::InvalidConfig {
                kernel: kernel.name.clone(),
                reason: format!(
                    "launched with blocks of {} threads, but the pipeline's @workgroup_size is {} (fixed when the pipeline is created)",
                    dims.block, kernel.workgroup_size
                ),
            });
        }
        let mut words: Vec<u32> = Vec::new();
        let mut entries: Vec<wgpu::BindGroupEntry<'_>> = Vec::new();
        for a in args {
            match *a {
                Arg::Buffer(b) => entries
                    .push(wgpu::BindGroupEntry { binding: entries.len() as u32, resource: b.as_entire_binding() }),
                Arg::U32(v) => words.push(v),
                Arg::U64(v) => words.extend([v as u32, (v >> 32) as u32]),
                Arg::F32(v) => words.push(v.to_bits()),
            }
        }
        let params;
        if !words.is_empty() {
            words.resize(words.len().next_multiple_of(4), 0);
            params = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("params"),
                contents: bytemuck::cast_slice(&words),
                usage: wgpu::BufferUsages::UNIFORM,
            });
            entries.push(wgpu::BindGroupEntry { binding: entries.len() as u32, resource: params.as_entire_binding() });
        }
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &kernel.layout,
            entries: &entries,
        });

        let mut scope = self.scope.borrow_mut();
        let timed = scope.is_some() && self.timestamps.is_some();
        let mut own = None;
        let (encoder, pass_index) = match scope.as_mut() {
            Some(s) => {
                if timed && s.passes >= MAX_TIMED_PASSES {
                    return Err(Error::Unsupported {
                        backend: BackendKind::Wgsl,
                        what: format!("timing more than {MAX_TIMED_PASSES} launches in one scope"),
                    });
                }
                s.passes += 1;
                (&mut s.encoder, s.passes - 1)
            }
            None => (own.insert(self.device.create_command_encoder(&Default::default())), 0),
        };
        {
            let timestamp_writes = match (&self.timestamps, timed) {
                (Some(ts), true) => Some(wgpu::ComputePassTimestampWrites {
                    query_set: &ts.set,
                    beginning_of_pass_write_index: Some(2 * pass_index),
                    end_of_pass_write_index: Some(2 * pass_index + 1),
                }),
                _ => None,
            };
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes });
            pass.set_pipeline(&kernel.pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(dims.grid, 1, 1);
        }
        if let Some(enc) = own {
            self.queue.submit([enc.finish()]);
        }
        self.take_uncaptured("dispatch")
    }

    fn synchronize(&self) -> Result<()> {
        self.wait()
    }

    fn time_ms(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
        if self.timestamps.is_none() {
            // No timestamp queries on this adapter: host wall clock around submit + wait.
            self.wait()?;
            let started = Instant::now();
            work()?;
            self.wait()?;
            return Ok(started.elapsed().as_secs_f64() * 1e3);
        }
        // One run's passes, from the first's start to the last's end.
        Ok(self.time_runs(1, work)?[0])
    }

    fn time_runs(&self, runs: u32, work: &mut dyn FnMut() -> Result<()>) -> Result<Vec<f64>> {
        let Some(ts) = &self.timestamps else {
            return (0..runs).map(|_| self.time_ms(work)).collect();
        };
        let mut times = Vec::with_capacity(runs as usize);
        // Runs go into one encoder (one submission) while the scope's timestamps last; the
        // pass range of each run gives its time, from its first pass's start to its last
        // pass's end.
        while (times.len() as u32) < runs {
            *self.scope.borrow_mut() =
                Some(Scope { encoder: self.device.create_command_encoder(&Default::default()), passes: 0 });
            let passes = || self.scope.borrow().as_ref().map_or(0, |s| s.passes);
            let mut bounds = Vec::new();
            let mut result = Ok(());
            while ((times.len() + bounds.len()) as u32) < runs {
                let before = passes();
                if let Err(e) = work() {
                    result = Err(e);
                    break;
                }
                let after = passes();
                bounds.push((before, after));
                // Stop where another run as long as this one would not fit.
                if after + (after - before) > MAX_TIMED_PASSES {
                    break;
                }
            }
            let Scope { mut encoder, passes } = self.scope.borrow_mut().take().expect("scope set above");
            result?;
            if passes == 0 {
                times.extend(bounds.iter().map(|_| 0.0));
                continue;
            }
            let bytes = 2 * passes as u64 * 8;
            encoder.resolve_query_set(&ts.set, 0..2 * passes, &ts.resolve, 0);
            encoder.copy_buffer_to_buffer(&ts.resolve, 0, &ts.readback, 0, bytes);
            self.queue.submit([encoder.finish()]);
            let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&self.read_mapped(&ts.readback, bytes)?);
            times.extend(bounds.iter().map(|&(a, b)| {
                if b == a {
                    0.0
                } else {
                    ticks[2 * b as usize - 1].saturating_sub(ticks[2 * a as usize]) as f64 * ts.period_ns / 1e6
                }
            }));
        }
        Ok(times)
    }

    fn timer_name(&self) -> &'static str {
        if self.timestamps.is_some() { "timestamp-query" } else { "host-wallclock" }
    }
}
