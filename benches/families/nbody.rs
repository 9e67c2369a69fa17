//! nbody benches: one step at the default tile (throughput in flops).

use criterion::Criterion;
use dynsmem::host::kernels::Kernels;
use dynsmem::host::kernels::nbody::{NbodyProblem, default_config, fit_config, prepare};

use super::common;

pub fn bench(c: &mut Criterion) {
    crate::each_backend!("nbody", |b| {
        let mut g = common::group(c, "nbody", &b);
        let n = common::sizes(&b).nbody;
        let p = NbodyProblem::new(n);
        let cfg = default_config(&b);
        for &v in b.variants() {
            let (cfg, _) = fit_config(&b, v, cfg);
            let w = prepare(&b, p, cfg, v, 1).expect("prepare");
            common::bench(&mut g, &b, &format!("n={n}/{v}"), w);
        }
        g.finish();
    });
}
