//! conv1d benches: 3 and 33 taps at the default config.

use criterion::Criterion;
use dynsmem::host::kernels::Kernels;
use dynsmem::host::kernels::conv1d::{Conv1dProblem, default_config, fit_config, prepare};

use super::common;

pub fn bench(c: &mut Criterion) {
    crate::each_backend!("conv1d", |b| {
        let mut g = common::group(c, "conv1d", &b);
        for taps in [3, 33] {
            let p = Conv1dProblem { n: common::sizes(&b).n, taps };
            let cfg = default_config(&b, taps);
            for &v in b.variants() {
                let (cfg, _) = fit_config(&b, v, &p, cfg);
                let w = prepare(&b, p, cfg, v, 1).expect("prepare");
                common::bench(&mut g, &b, &format!("taps={taps}/n={}/{v}", p.n), w);
            }
        }
        g.finish();
    });
}
