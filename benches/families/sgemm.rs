//! SGEMM benches on CUDA (WGSL has no GEMM form yet): 1024^3 and 2048^3 at the default
//! config (throughput in flops).

use criterion::Criterion;
use dynsmem::host::backend::Probe;
use dynsmem::host::kernels::Variant;
use dynsmem::host::kernels::sgemm::{SgemmProblem, default_config, prepare};

use super::common;

pub fn bench(c: &mut Criterion) {
    let Probe::Ready(b) = dynsmem::cuda(0) else {
        eprintln!("SKIPPED: no CUDA device (sgemm/cuda benches)");
        return;
    };
    let mut g = common::group(c, "sgemm", &b);
    for side in [1024, 2048] {
        let p = SgemmProblem { m: side, n: side, k: side, f16_inputs: false };
        let w = prepare(&b, p, default_config(&b, &p), false, Variant::LaunchSized, 1).expect("prepare");
        common::bench(&mut g, &b, &format!("f32/{side}^3/launch-sized"), w);
    }
    g.finish();
}
