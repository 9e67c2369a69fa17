//! The kernel families: one folder each (problem, config, launcher, CPU reference, WGSL
//! and CUDA C twins, its description in `family.rs`, notes), and the registry [`FAMILIES`]
//! that lists them. What their launchers share is [`crate::contract`].

pub mod attention;
pub mod conv1d;
pub mod hgemm;
pub mod histogram;
pub mod nbody;
pub mod reduce;
pub mod rmsnorm;
pub mod scan;
pub mod sgemm;
pub mod softmax;
pub mod stencil2d;
pub mod transpose;

use crate::family::{DynFamily, Entry};

/// Every kernel family of dynsmem, once: `run`, `bench`, `tune`, the conformance suites,
/// the criterion benches and the fuzz targets iterate this table. A family is its folder
/// here, its `mod` line above and its line below: its description (a `KernelFamily`), or,
/// for the three not yet moved onto it, `Entry` of its typed `Family`.
pub static FAMILIES: &[&dyn DynFamily] = &[
    &reduce::REDUCE,
    &scan::SCAN,
    &histogram::HISTOGRAM,
    &conv1d::CONV1D,
    &stencil2d::STENCIL2D,
    &transpose::TRANSPOSE,
    &softmax::SOFTMAX,
    &rmsnorm::RMSNORM,
    &nbody::NBODY,
    &Entry::<sgemm::Sgemm>::NEW,
    &Entry::<hgemm::Hgemm>::NEW,
    &Entry::<attention::Attention>::NEW,
    &attention::backward::ATTENTION_BACKWARD,
];

#[cfg(test)]
mod tests {
    use super::FAMILIES;
    use crate::backend::Erase;
    use crate::backend::cpu::CpuBackend;
    use crate::contract::FamilyBackend;
    use crate::family::Sizes;

    /// Every bench and edge case a family has on the CPU backend resolves to a config: a
    /// description that cannot build its kernel (an entry not in its table, a default that
    /// names no parameter) shows here, not as a bench with a row missing.
    #[test]
    fn every_bench_and_edge_case_resolves_on_the_cpu_backend() {
        let cpu = CpuBackend::new();
        for f in FAMILIES {
            let cases: Vec<_> = cpu
                .variants()
                .iter()
                .flat_map(|&v| {
                    f.bench_cases(cpu.erase(), v, &Sizes::cpu_backend(), None)
                        .into_iter()
                        .chain(f.edge_cases(cpu.erase(), v))
                })
                .collect();
            for c in cases {
                assert!(!c.config.is_null(), "{} {}: {:?}", f.name(), c.problem, c.note);
            }
        }
    }
}
