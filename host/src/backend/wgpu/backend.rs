//! [`Backend`] for [`WgpuBackend`]: storage buffers, copies, one compute pass per launch
//! (workgroups per dimension from the grid), and timestamp queries.

use super::*;

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
        crate::backend::check_copy_lengths("copy_vec4[wgsl]", src.len(), dst.len())?;
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
