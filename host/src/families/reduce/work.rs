//! Reduce's workload: a plan's passes over inputs generated once per problem and seed.

use std::cell::RefCell;
use std::rc::Rc;

use dynsmem_kernels::Dtype;

use crate::backend::Buffer;
use crate::backend::Variant;
use crate::contract::{FamilyBackend, KernelInfo, Workload};
use crate::error::Result;
use crate::families::reduce::{ReduceConfig, ReduceElement, ReducePlan, ReduceProblem, Reference, reference};

/// Inputs and reference of one seed, generated once and shared by every config.
enum Inputs {
    F32(Vec<f32>, Reference),
    U32(Vec<u32>, Reference),
}

thread_local! {
    /// The inputs and reference of the last problem and seed prepared on this thread:
    /// every config of a sweep or a bench reduces the same inputs, generated once.
    static INPUTS: RefCell<Option<(ReduceProblem, u64, Rc<Inputs>)>> = const { RefCell::new(None) };
}

fn shared_inputs(problem: &ReduceProblem, seed: u64) -> Rc<Inputs> {
    INPUTS.with_borrow_mut(|slot| {
        if let Some((p, s, i)) = slot.as_ref()
            && p == problem
            && *s == seed
        {
            return i.clone();
        }
        // Drop the last inputs before making the next (they can be gigabytes).
        *slot = None;
        let n = problem.n as usize;
        let inputs = Rc::new(match problem.dtype {
            Dtype::F32 => {
                let d = f32::inputs(n, seed);
                let r = reference(problem.op, &d);
                Inputs::F32(d, r)
            }
            Dtype::U32 => {
                let d = u32::inputs(n, seed);
                let r = reference(problem.op, &d);
                Inputs::U32(d, r)
            }
        });
        *slot = Some((*problem, seed, inputs.clone()));
        inputs
    })
}

/// One reduce config, validated, with its inputs (shared, see [`shared_inputs`]) uploaded.
pub fn prepare<'b, B: FamilyBackend>(
    backend: &'b B,
    problem: ReduceProblem,
    config: ReduceConfig,
    variant: Variant,
    seed: u64,
) -> Result<Box<dyn Workload + 'b>> {
    let plan = ReducePlan::new(backend, problem, config, variant)?;
    let inputs = shared_inputs(&problem, seed);
    Ok(match &*inputs {
        Inputs::F32(d, r) => Box::new(ReduceWork::new(backend, plan, d, *r)?),
        Inputs::U32(d, r) => Box::new(ReduceWork::new(backend, plan, d, *r)?),
    })
}

/// A reduce plan with its input uploaded and its partial buffers allocated: one run is
/// every pass; the check reads the final partial and holds it to the reference.
struct ReduceWork<'b, B: FamilyBackend, T: ReduceElement> {
    backend: &'b B,
    plan: ReducePlan<'b, B>,
    input: Buffer<B::Raw, T>,
    partials: [Buffer<B::Raw, T>; 2],
    reference: Reference,
}

impl<'b, B: FamilyBackend, T: ReduceElement> ReduceWork<'b, B, T> {
    fn new(backend: &'b B, plan: ReducePlan<'b, B>, data: &[T], reference: Reference) -> Result<Self> {
        let input = backend.htod(data)?;
        let partials = plan.alloc_partials::<T>()?;
        Ok(ReduceWork { backend, plan, input, partials, reference })
    }
}

impl<B: FamilyBackend, T: ReduceElement> Workload for ReduceWork<'_, B, T> {
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
