//! Scan benches: f32 exclusive prefix sum at the backend's default config (for cuda-static the
//! best that fits its 48 KB of static arrays).

use criterion::Criterion;
use dynsmem::host::kernels::Kernels;
use dynsmem::host::kernels::scan::{ScanProblem, default_config, fit_config, prepare};
use dynsmem_kernels::Dtype;

use super::common;

pub fn bench(c: &mut Criterion) {
    crate::each_backend!("scan", |b| {
        let p = ScanProblem { n: common::sizes(&b).n, dtype: Dtype::F32 };
        let cfg = default_config(&b);
        let mut g = common::group(c, "scan", &b);
        for &v in b.variants() {
            let (cfg, _) = fit_config(&b, v, cfg);
            let w = prepare::<_, f32>(&b, p, cfg, v, 1).expect("prepare");
            common::bench(&mut g, &b, &format!("f32/n={}/{v}", p.n), w);
        }
        g.finish();
    });
}
