//! stencil2d benches: 3x3 and 5x5 Gaussian blur at the default tile.

use criterion::Criterion;
use dynsmem::host::kernels::Kernels;
use dynsmem::host::kernels::stencil2d::{Blur, Stencil2dProblem, default_config, fit_config, prepare};

use super::common;

pub fn bench(c: &mut Criterion) {
    crate::each_backend!("stencil2d", |b| {
        let mut g = common::group(c, "stencil2d", &b);
        let side = common::sizes(&b).side;
        for radius in [1, 2] {
            let p = Stencil2dProblem { width: side, height: side, radius, blur: Blur::Gaussian };
            let cfg = default_config(&b);
            for &v in b.variants() {
                let (cfg, _) = fit_config(&b, v, &p, cfg);
                let w = prepare(&b, p, cfg, v, 1).expect("prepare");
                common::bench(&mut g, &b, &format!("r={radius}/{side}x{side}/{v}"), w);
            }
        }
        g.finish();
    });
}
