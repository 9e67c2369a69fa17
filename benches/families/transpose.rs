//! Transpose benches: the default padded tile and the same tile without padding (the bank
//! conflicts the padding removes).

use criterion::Criterion;
use dynsmem::host::device::transpose::TransposeConfig;
use dynsmem::host::kernels::Kernels;
use dynsmem::host::kernels::transpose::{TransposeProblem, default_config, fit_config, prepare};

use super::common;

pub fn bench(c: &mut Criterion) {
    crate::each_backend!("transpose", |b| {
        let mut g = common::group(c, "transpose", &b);
        let side = common::sizes(&b).side;
        let p = TransposeProblem { rows: side, cols: side };
        let d = default_config(&b);
        for cfg in [d, TransposeConfig { pad: 0, ..d }] {
            for &v in b.variants() {
                let (cfg, _) = fit_config(&b, v, cfg);
                let w = prepare(&b, p, cfg, v, 1).expect("prepare");
                common::bench(&mut g, &b, &format!("pad={}/{side}x{side}/{v}", cfg.pad), w);
            }
        }
        g.finish();
    });
}
