//! The conformance suite, written once over [`ReduceKernels`] and run per backend.

use dynsmem::host::kernels::reduce::{
    ReduceConfig, ReduceElement, ReduceKernels, ReduceOp, ReducePlan, ReduceProblem, reference,
};

use super::note;

/// Which sizes and configs to check.
pub struct ReduceMatrix {
    pub sizes: Vec<u64>,
    /// Each block size runs with the backend's default items per thread.
    pub blocks: Vec<u32>,
    /// Further configs, run at every size.
    pub extra: Vec<ReduceConfig>,
    pub seed: u64,
}

/// Runs every (size, config, op, dtype, variant) of the matrix; panics on the first
/// failure with the backend, problem, config and the error (index, expected, actual).
/// Returns the number of checked launches.
pub fn reduce<B: ReduceKernels>(backend: &B, m: &ReduceMatrix) -> usize {
    reduce_dtype::<B, f32>(backend, m) + reduce_dtype::<B, u32>(backend, m)
}

fn reduce_dtype<B: ReduceKernels, T: ReduceElement>(backend: &B, m: &ReduceMatrix) -> usize {
    let default = backend.reduce_default_config();
    let mut configs: Vec<ReduceConfig> = m
        .blocks
        .iter()
        .map(|&block| ReduceConfig { block, items_per_thread: default.items_per_thread, staged: false })
        .collect();
    configs.extend(m.extra.iter().copied());
    let mut checked = 0;
    for &n in &m.sizes {
        // One input and one reference per (size, op), shared by every config.
        let data = T::inputs(n as usize, m.seed ^ n);
        let input = backend.htod(&data).expect("upload");
        for op in ReduceOp::ALL {
            let r = reference(op, &data);
            let problem = ReduceProblem { n, op, dtype: T::DTYPE };
            for config in &configs {
                for &variant in backend.reduce_variants() {
                    let what = format!("{} {variant} n={n} {op:?} {:?} {config:?}", backend.kind(), T::DTYPE);
                    let plan =
                        ReducePlan::new(backend, problem, *config, variant).unwrap_or_else(|e| panic!("{what}: {e}"));
                    let got: T = plan.run(&input).unwrap_or_else(|e| panic!("{what}: {e}"));
                    plan.check(&r, got).unwrap_or_else(|e| panic!("{what}: {e}"));
                    checked += 1;
                }
            }
        }
    }
    note(&format!(
        "reduce conformance: {} {:?}: {checked} launches verified ({} sizes x {} configs x 3 ops x {} variants)",
        backend.kind(),
        T::DTYPE,
        m.sizes.len(),
        configs.len(),
        backend.reduce_variants().len()
    ));
    checked
}
