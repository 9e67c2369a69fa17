//! Reduce: block, items per thread, staged (0/1).

use std::cell::RefCell;
use std::rc::Rc;

use dynsmem_kernels::Dtype;

use super::layout_reason;
use crate::backend::Buffer;
use crate::error::Result;
use crate::kernels::reduce::{
    ReduceConfig, ReduceElement, ReduceKernels, ReducePlan, ReduceProblem, Reference, reference, wgsl_static_bytes,
};
use crate::kernels::{KernelInfo, Variant, Workload};
use crate::tune::{Footprint, Param, Target, Tunable, TuneBackend};

/// Inputs and reference of one seed, generated once and shared by every config.
enum Inputs {
    F32(Vec<f32>, Reference),
    U32(Vec<u32>, Reference),
}

pub struct ReduceTunable {
    problem: ReduceProblem,
    inputs: RefCell<Option<(u64, Rc<Inputs>)>>,
}

impl ReduceTunable {
    pub fn new(problem: ReduceProblem) -> ReduceTunable {
        ReduceTunable { problem, inputs: RefCell::new(None) }
    }

    fn inputs(&self, seed: u64) -> Rc<Inputs> {
        let mut slot = self.inputs.borrow_mut();
        if let Some((s, i)) = slot.as_ref()
            && *s == seed
        {
            return i.clone();
        }
        let n = self.problem.n as usize;
        let inputs = Rc::new(match self.problem.dtype {
            Dtype::F32 => {
                let d = f32::inputs(n, seed);
                let r = reference(self.problem.op, &d);
                Inputs::F32(d, r)
            }
            Dtype::U32 => {
                let d = u32::inputs(n, seed);
                let r = reference(self.problem.op, &d);
                Inputs::U32(d, r)
            }
        });
        *slot = Some((seed, inputs.clone()));
        inputs
    }
}

impl Tunable for ReduceTunable {
    type Problem = ReduceProblem;
    type Config = ReduceConfig;

    fn config(&self, point: &[u32]) -> ReduceConfig {
        ReduceConfig { block: point[0], items_per_thread: point[1], staged: point[2] != 0 }
    }

    fn family(&self) -> &'static str {
        "reduce"
    }

    fn problem(&self) -> &ReduceProblem {
        &self.problem
    }

    fn params(&self, target: &Target) -> Vec<Param> {
        if target.backend == crate::backend::BackendKind::Cpu {
            vec![
                Param::new("block", &[4, 8, 16, 32, 64]),
                Param::new("ipt", &[4, 8, 16, 32, 64, 128]),
                Param::new("staged", &[0, 1]),
            ]
        } else {
            vec![
                Param::new("block", &[32, 64, 128, 256, 512, 1024]),
                Param::new("ipt", &[1, 2, 4, 8, 16, 32, 64, 128]),
                Param::new("staged", &[0, 1]),
            ]
        }
    }

    fn check(&self, point: &[u32], _: &Target) -> std::result::Result<Footprint, String> {
        let cfg = self.config(point);
        if cfg.block == 0 || cfg.items_per_thread == 0 {
            return Err("block and items per thread must be at least 1".into());
        }
        if cfg.chunk().is_none_or(|c| c > u32::MAX as u64) {
            return Err("block * items per thread does not fit the kernel's u32 chunk index".into());
        }
        if cfg.pass_count(self.problem.n).is_none() {
            return Err("a chunk of one element: the passes never reach one value".into());
        }
        let launch_bytes = cfg.shared_bytes(self.problem.dtype).map_err(layout_reason)?;
        let static_bytes = wgsl_static_bytes(self.problem.dtype, &cfg).ok_or("static arrays over 4 GiB")?;
        Ok(Footprint { threads: cfg.block, grid: cfg.grid(self.problem.n), launch_bytes, static_bytes })
    }

    fn prepare<'b, B: TuneBackend>(
        &self,
        backend: &'b B,
        variant: Variant,
        point: &[u32],
        seed: u64,
    ) -> Result<Box<dyn Workload + 'b>> {
        let plan = ReducePlan::new(backend, self.problem, self.config(point), variant)?;
        let inputs = self.inputs(seed);
        Ok(match &*inputs {
            Inputs::F32(d, r) => Box::new(ReduceWork::new(backend, plan, d, *r)?),
            Inputs::U32(d, r) => Box::new(ReduceWork::new(backend, plan, d, *r)?),
        })
    }
}

/// A reduce plan with its input uploaded and its partial buffers allocated: one run is
/// every pass; the check reads the final partial and holds it to the reference.
struct ReduceWork<'b, B: ReduceKernels, T: ReduceElement> {
    backend: &'b B,
    plan: ReducePlan<'b, B>,
    input: Buffer<B::Raw, T>,
    partials: [Buffer<B::Raw, T>; 2],
    reference: Reference,
}

impl<'b, B: ReduceKernels, T: ReduceElement> ReduceWork<'b, B, T> {
    fn new(backend: &'b B, plan: ReducePlan<'b, B>, data: &[T], reference: Reference) -> Result<Self> {
        let input = backend.htod(data)?;
        let partials = plan.alloc_partials::<T>()?;
        Ok(ReduceWork { backend, plan, input, partials, reference })
    }
}

impl<B: ReduceKernels, T: ReduceElement> Workload for ReduceWork<'_, B, T> {
    fn kernel(&self) -> KernelInfo {
        KernelInfo {
            name: self.plan.kernel_name().to_string(),
            shared_bytes: self.plan.shared_bytes,
            static_shared_bytes: self.plan.static_shared_bytes,
        }
    }

    fn bytes(&self) -> u64 {
        self.plan.problem.n * size_of::<T>() as u64
    }

    fn run(&self) -> Result<()> {
        self.plan.launch(&self.input, &self.partials).map(|_| ())
    }

    fn check(&self) -> Result<()> {
        let out = &self.partials[(self.plan.passes.len() - 1) % 2];
        let got = self.backend.dtoh(out)?[0];
        self.plan.check(&self.reference, got)
    }
}
