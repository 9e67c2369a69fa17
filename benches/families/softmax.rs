//! Softmax benches: rows of 4096 floats at the default config.

use criterion::Criterion;
use dynsmem::host::kernels::Kernels;
use dynsmem::host::kernels::softmax::{SoftmaxProblem, default_config, fit_config, prepare};

use super::common;

pub fn bench(c: &mut Criterion) {
    crate::each_backend!("softmax", |b| {
        let mut g = common::group(c, "softmax", &b);
        let p = SoftmaxProblem { rows: common::sizes(&b).softmax_rows, cols: 4096 };
        let cfg = default_config(&b);
        for &v in b.variants() {
            let (cfg, _) = fit_config(&b, v, &p, cfg);
            let w = prepare(&b, p, cfg, v, 1).expect("prepare");
            common::bench(&mut g, &b, &format!("{}x4096/{v}", p.rows), w);
        }
        g.finish();
    });
}
