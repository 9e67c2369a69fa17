//! SGEMM benches on CUDA and WGSL: 1024^3 and 2048^3 at the default config on a GPU,
//! 128^3 and 256^3 on a CPU Vulkan adapter (throughput in flops), every variant.

use criterion::Criterion;
use dynsmem::host::backend::Backend;
use dynsmem::host::kernels::Kernels;
use dynsmem::host::kernels::sgemm::{SgemmProblem, default_config, prepare};

use super::common;

pub fn bench(c: &mut Criterion) {
    crate::each_backend!("sgemm", |b| {
        let mut g = common::group(c, "sgemm", &b);
        let sides: &[u32] = if b.info().is_cpu { &[128, 256] } else { &[1024, 2048] };
        for &side in sides {
            let p = SgemmProblem { m: side, n: side, k: side, f16_inputs: false };
            for &v in b.variants() {
                let w = prepare(&b, p, default_config(&b, &p), false, v, 1).expect("prepare");
                common::bench(&mut g, &b, &format!("f32/{side}^3/{v}"), w);
            }
        }
        g.finish();
    });
}
