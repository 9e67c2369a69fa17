//! [`Backend`] for [`CudaBackend`]: buffers, copies, launches with their launch-sized bytes
//! (opted in past the default per function), device timing with CUDA events.

use super::*;

impl Backend for CudaBackend {
    type Raw = CudaSlice<u8>;
    type Kernel = Rc<CudaKernel>;

    fn device_id(&self) -> Option<String> {
        let u = self.ctx.uuid().ok()?.bytes.map(|b| b as u8);
        let hex = |r: std::ops::Range<usize>| u[r].iter().map(|b| format!("{b:02x}")).collect::<String>();
        Some(format!("GPU-{}-{}-{}-{}-{}", hex(0..4), hex(4..6), hex(6..8), hex(8..10), hex(10..16)))
    }

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn observer(&self) -> Option<&dyn crate::observe::Observer> {
        let nvml = self.observer.get_or_init(|| {
            let uuid = self.device_id()?;
            crate::observe::nvml::NvmlObserver::for_uuid(&uuid).ok().map(Box::new)
        });
        nvml.as_deref().map(|o| o as &dyn crate::observe::Observer)
    }

    fn alloc<T: Element>(&self, len: usize) -> Result<Buffer<Self::Raw, T>> {
        Ok(Buffer::from_raw(self.alloc_bytes(crate::backend::byte_len::<T>(&self.info, len)?)?, len))
    }

    fn htod<T: Element>(&self, data: &[T]) -> Result<Buffer<Self::Raw, T>> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let mut raw = self.alloc_bytes(bytes.len())?;
        if !bytes.is_empty() {
            self.stream.memcpy_htod(bytes, &mut raw.slice_mut(0..bytes.len())).map_err(driver_err("cuMemcpyHtoD"))?;
        }
        Ok(Buffer::from_raw(raw, data.len()))
    }

    fn dtoh<T: Element>(&self, buf: &Buffer<Self::Raw, T>) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); buf.len()];
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
        if !bytes.is_empty() {
            let n = bytes.len();
            self.stream.memcpy_dtoh(&buf.raw().slice(0..n), bytes).map_err(driver_err("cuMemcpyDtoH"))?;
        }
        self.synchronize()?;
        Ok(out)
    }

    fn copy<T: Element>(&self, src: &Buffer<Self::Raw, T>, dst: &mut Buffer<Self::Raw, T>) -> Result<()> {
        crate::backend::check_copy_lengths("copy", src.len(), dst.len())?;
        let n = src.bytes() as usize;
        self.stream
            .memcpy_dtod(&src.raw().slice(0..n), &mut dst.raw.slice_mut(0..n))
            .map_err(driver_err("cuMemcpyDtoD"))
    }

    fn fill_zero<T: Element>(&self, buf: &Buffer<Self::Raw, T>) -> Result<()> {
        let (ptr, _) = buf.raw().device_ptr(&self.stream);
        // SAFETY: the allocation holds at least `buf.bytes()` bytes; stream-ordered.
        unsafe { cudarc::driver::result::memset_d8_async(ptr, 0, buf.bytes() as usize, self.stream.cu_stream()) }
            .map_err(driver_err("cuMemsetD8Async"))
    }

    fn tensor_map_2d<T: Element>(
        &self,
        buf: &Buffer<Self::Raw, T>,
        elem_bytes: u32,
        dims: [u64; 2],
        row_bytes: u64,
        box_dims: [u32; 2],
        swizzle: TensorSwizzle,
    ) -> Result<Buffer<Self::Raw, u32>> {
        let (ptr, _sync) = buf.raw().device_ptr(&self.stream);
        self.tensor_map_2d_at(ptr, elem_bytes, dims, row_bytes, box_dims, swizzle)
    }

    fn tensor_map_2d_at(
        &self,
        ptr: u64,
        elem_bytes: u32,
        dims: [u64; 2],
        row_bytes: u64,
        box_dims: [u32; 2],
        swizzle: TensorSwizzle,
    ) -> Result<Buffer<Self::Raw, u32>> {
        use sys::CUtensorMapDataType as D;
        // The copy engine moves bytes; only the element size matters (zeros past the edges).
        let data_type = match elem_bytes {
            4 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            2 => D::CU_TENSOR_MAP_DATA_TYPE_UINT16,
            _ => {
                return Err(Error::Unsupported {
                    backend: BackendKind::Cuda,
                    what: format!("tensor maps of {elem_bytes}-byte elements"),
                });
            }
        };
        let swizzle_mode = match swizzle {
            TensorSwizzle::None => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
            TensorSwizzle::B64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
            TensorSwizzle::B128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
        };
        let mut map = sys::CUtensorMap { opaque: [0; 16] };
        let (strides, element_strides) = ([row_bytes], [1u32, 1]);
        // SAFETY: every array holds `rank` (2) entries, strides `rank - 1`; the map is
        // written in place; the address is the caller's to keep valid while the map is used.
        let status = unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                data_type,
                2,
                ptr as *mut std::ffi::c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                box_dims.as_ptr(),
                element_strides.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle_mode,
                sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        if status != sys::CUresult::CUDA_SUCCESS {
            return Err(Error::Driver {
                backend: BackendKind::Cuda,
                call: "cuTensorMapEncodeTiled",
                message: format!(
                    "{status:?} ({elem_bytes}-byte elements, dims {dims:?}, row bytes {row_bytes}, box {box_dims:?}, \
                     {swizzle:?})"
                ),
            });
        }
        let words: &[u32] = bytemuck::cast_slice(&map.opaque);
        self.htod(words)
    }

    fn set_launch_padding(&self, bytes: Option<u32>) -> Result<()> {
        self.launch_log.set(bytes);
        Ok(())
    }

    fn take_launches(&self) -> Vec<crate::backend::LaunchSeen> {
        self.launch_log.take()
    }

    fn launch(&self, kernel: &Self::Kernel, dims: LaunchDims, args: &[Arg<'_, Self::Raw>]) -> Result<()> {
        self.launch_in(kernel, dims, args, self.stream.cu_stream())
    }

    fn launch_on_stream(
        &self,
        kernel: &Self::Kernel,
        dims: LaunchDims,
        args: &[Arg<'_, Self::Raw>],
        stream: u64,
    ) -> Result<()> {
        // The caller's stream belongs to this device's primary context, which this backend
        // shares (cudarc retains the primary context, as the CUDA runtime and PyTorch do).
        self.ctx.bind_to_thread().map_err(driver_err("cuCtxSetCurrent"))?;
        self.launch_in(kernel, dims, args, stream as sys::CUstream)
    }

    fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(driver_err("cuStreamSynchronize"))
    }

    fn time_ms(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
        let (start, end) = &self.timer;
        start.record(&self.stream).map_err(driver_err("cuEventRecord"))?;
        work()?;
        end.record(&self.stream).map_err(driver_err("cuEventRecord"))?;
        end.synchronize().map_err(driver_err("cuEventSynchronize"))?;
        Ok(start.elapsed_ms(end).map_err(driver_err("cuEventElapsedTime"))? as f64)
    }

    fn time_runs(&self, runs: u32, work: &mut dyn FnMut() -> Result<()>) -> Result<Vec<f64>> {
        // An event before and after each run, all queued; one wait at the end.
        let event =
            || self.ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(driver_err("cuEventCreate"));
        let mut marks = Vec::with_capacity(runs as usize);
        for _ in 0..runs {
            let (start, end) = (event()?, event()?);
            start.record(&self.stream).map_err(driver_err("cuEventRecord"))?;
            work()?;
            end.record(&self.stream).map_err(driver_err("cuEventRecord"))?;
            marks.push((start, end));
        }
        self.stream.synchronize().map_err(driver_err("cuStreamSynchronize"))?;
        marks
            .iter()
            .map(|(start, end)| Ok(start.elapsed_ms(end).map_err(driver_err("cuEventElapsedTime"))? as f64))
            .collect()
    }

    fn timer_name(&self) -> &'static str {
        "cuda-events"
    }
}

impl CudaBackend {
    /// [`Backend::launch`] on `stream`: the backend's own, or a caller's
    /// ([`Backend::launch_on_stream`]).
    fn launch_in(
        &self,
        kernel: &<Self as Backend>::Kernel,
        dims: LaunchDims,
        args: &[Arg<'_, <Self as Backend>::Raw>],
        stream: sys::CUstream,
    ) -> Result<()> {
        let dims = self.launch_log.pad(dims);
        self.check_launch(&kernel.name, dims)?;
        // A kernel's own ceiling can be below the device's: its registers times the block
        // must fit the register file (`CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES` otherwise).
        let kernel_max = kernel.max_threads.get_or_init(|| {
            let _ = self.ctx.bind_to_thread();
            kernel.func.max_threads_per_block().ok().map(|t| t as u32)
        });
        if let Some(max) = *kernel_max
            && dims.block > max
        {
            let regs = kernel.func.num_regs().map(|r| format!("{r} registers per thread")).unwrap_or_default();
            return Err(Error::KernelBlockLimit {
                kernel: kernel.name.clone(),
                requested: dims.block,
                limit: max,
                why: regs,
            });
        }
        if dims.shared_bytes > kernel.optin_bytes.get() {
            // Above 48 KB the launch fails with CUDA_ERROR_INVALID_VALUE unless the
            // function was opted in first.
            self.ctx.bind_to_thread().map_err(driver_err("cuCtxSetCurrent"))?;
            kernel
                .func
                .set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dims.shared_bytes as i32,
                )
                .map_err(driver_err("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)"))?;
            kernel.optin_bytes.set(dims.shared_bytes);
        }
        if dims.cluster > crate::backend::cuda::PORTABLE_CLUSTER {
            self.ctx.bind_to_thread().map_err(driver_err("cuCtxSetCurrent"))?;
            kernel.allow_cluster(dims.cluster)?;
        }
        self.launch_log.note(&kernel.name, dims, || {
            let f = &kernel.func;
            let blocks = f.occupancy_max_active_blocks_per_multiprocessor(dims.block, dims.shared_bytes as usize, None);
            let config = cudarc::driver::LaunchConfig {
                grid_dim: (dims.grid, 1, 1),
                block_dim: (dims.block, 1, 1),
                shared_mem_bytes: dims.shared_bytes,
            };
            let clusters = if dims.cluster > 1 {
                let geometry = (dims.grid, dims.block, dims.shared_bytes);
                driver::max_active_clusters(f.cu_function(), geometry, dims.cluster, self.stream.cu_stream()).ok()
            } else {
                f.occupancy_max_active_clusters(config, &self.stream).ok()
            };
            (blocks.ok(), clusters)
        });
        // Every argument gets an 8-byte slot; the driver reads each parameter's size
        // from the kernel's signature, so a u32 in the low half of a slot is right on
        // this little-endian ABI.
        let mut slots: Vec<u64> = Vec::with_capacity(args.len());
        for a in args {
            slots.push(match *a {
                Arg::Buffer(raw) => raw.device_ptr(&self.stream).0,
                Arg::U32(v) => v as u64,
                Arg::U64(v) => v,
                Arg::F32(v) => v.to_bits() as u64,
            });
        }
        let mut params: Vec<*mut c_void> = slots.iter_mut().map(|s| s as *mut u64 as *mut c_void).collect();
        // SAFETY: the function belongs to this context; `params` matches the kernel's
        // signature (the family launchers pass the documented arguments in order), and
        // the buffers outlive the launch because the caller holds them until sync.
        if dims.cluster > 1 {
            let geometry = (dims.grid, dims.block, dims.shared_bytes);
            // SAFETY: as below; `check_launch` checked the cluster against the device.
            return unsafe {
                driver::launch_clustered(kernel.func.cu_function(), geometry, dims.cluster, stream, &mut params)
            };
        }
        unsafe {
            cudarc::driver::result::launch_kernel(
                kernel.func.cu_function(),
                (dims.grid, 1, 1),
                (dims.block, 1, 1),
                dims.shared_bytes,
                stream,
                &mut params,
            )
        }
        .map_err(driver_err("cuLaunchKernel"))
    }
}
