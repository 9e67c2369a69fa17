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

mod backend;
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
    /// The optional features the device was given (of timestamps, subgroups and f16).
    features: wgpu::Features,
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
        // Subgroups for the wgsl-subgroup twins, f16 for the f16 ones, where the adapter
        // has them; nothing else optional.
        let features = adapter.features()
            & (wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::SUBGROUP | wgpu::Features::SHADER_F16);
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
                "Vulkan via wgpu 30 ({:?}); runtime checks {}; subgroups {}; f16 {}{}",
                ainfo.device_type,
                if runtime_checks { "on" } else { "off" },
                if features.contains(wgpu::Features::SUBGROUP) {
                    format!("{}-{} lanes", ainfo.subgroup_min_size, ainfo.subgroup_max_size)
                } else {
                    "no".to_string()
                },
                if features.contains(wgpu::Features::SHADER_F16) { "yes" } else { "no" },
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
            features,
            pipeline_ms: Cell::new(0.0),
            pci_bus_id: ainfo.device_pci_bus_id.clone(),
            vendor: ainfo.vendor,
            _cuda_context: cuda_context,
            observer: std::cell::OnceCell::new(),
        })
    }

    /// Whether the device runs subgroup operations (wgpu's `SUBGROUP` feature): the
    /// wgsl-subgroup variant's twins.
    pub fn has_subgroups(&self) -> bool {
        self.features.contains(wgpu::Features::SUBGROUP)
    }

    /// Whether the device runs `enable f16;` shaders (wgpu's `SHADER_F16` feature).
    pub fn has_f16(&self) -> bool {
        self.features.contains(wgpu::Features::SHADER_F16)
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
