//! Histogram benches: 256 and 4096 bins of uniform keys at the default config.

use criterion::Criterion;
use dynsmem::host::kernels::Kernels;
use dynsmem::host::kernels::histogram::{HistogramProblem, default_config, fit_config, prepare};

use super::common;

pub fn bench(c: &mut Criterion) {
    crate::each_backend!("histogram", |b| {
        let mut g = common::group(c, "histogram", &b);
        for bins in [256, 4096] {
            let p = HistogramProblem { n: common::sizes(&b).n, bins, out_of_range_pct: 0 };
            let cfg = default_config(&b, &p);
            for &v in b.variants() {
                let (cfg, _) = fit_config(&b, v, &p, cfg);
                let w = prepare(&b, p, cfg, v, 1).expect("prepare");
                common::bench(&mut g, &b, &format!("bins={bins}/n={}/{v}", p.n), w);
            }
        }
        g.finish();
    });
}
