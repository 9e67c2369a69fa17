//! NaN and infinity in reduce and softmax: the semantics the README states ("NaN and
//! infinity"), checked on every backend present (the CPU backend always, WGSL on
//! lavapipe or a GPU's driver, CUDA when a device is there): each case asserts the value
//! the semantics give, and that the CPU reference (what `check` compares with) agrees.

mod common;

use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::contract::{FamilyBackend, Workload};
use dynsmem::host::device::Dtype;
use dynsmem::host::device::softmax::SoftmaxConfig;
use dynsmem::host::families::reduce::{ReduceConfig, ReduceElement, ReduceOp, ReducePlan, ReduceProblem, reference};
use dynsmem::host::families::softmax::{self, SoftmaxProblem, prepare_with};

const N: usize = 1000;
const NAN: f32 = f32::NAN;
const INF: f32 = f32::INFINITY;

/// What a reduce of one case must give: `None` where the order of evaluation decides
/// (only the check against the reference applies).
struct Case {
    name: String,
    data: Vec<f32>,
    sum: Option<f32>,
    min: Option<f32>,
    max: Option<f32>,
}

/// Inputs in [-1, 1) with a unique -4 and 4 planted (`f32::inputs`), then the
/// non-finite values put at the first element, one inside a full chunk and the last (the
/// partial-chunk path).
fn reduce_cases() -> Vec<Case> {
    let base = f32::inputs(N, 11);
    let with = |at: &[(usize, f32)]| {
        let mut d = base.clone();
        for &(i, v) in at {
            d[i] = v;
        }
        d
    };
    let mut cases = Vec::new();
    for at in [0, 517, N - 1] {
        // The planted extremes must survive: put the special value elsewhere.
        let at = if base[at].abs() == 4.0 { at + 1 } else { at };
        cases.push(Case {
            name: format!("NaN at {at}"),
            data: with(&[(at, NAN)]),
            sum: Some(NAN),
            min: Some(-4.0),
            max: Some(4.0),
        });
        cases.push(Case {
            name: format!("+inf at {at}"),
            data: with(&[(at, INF)]),
            sum: Some(INF),
            min: Some(-4.0),
            max: Some(INF),
        });
        cases.push(Case {
            name: format!("-inf at {at}"),
            data: with(&[(at, -INF)]),
            sum: Some(-INF),
            min: Some(-INF),
            max: Some(4.0),
        });
    }
    cases.push(Case {
        name: "+inf and -inf".into(),
        data: with(&[(3, INF), (900, -INF)]),
        sum: Some(NAN),
        min: Some(-INF),
        max: Some(INF),
    });
    cases.push(Case {
        name: "NaN and +inf".into(),
        data: with(&[(3, NAN), (900, INF)]),
        sum: Some(NAN),
        min: Some(-4.0),
        max: Some(INF),
    });
    cases.push(Case { name: "all NaN".into(), data: vec![NAN; N], sum: Some(NAN), min: Some(INF), max: Some(-INF) });
    cases.push(Case {
        name: "positive overflow".into(),
        data: vec![3e38; N],
        sum: Some(INF),
        min: Some(3e38),
        max: Some(3e38),
    });
    cases.push(Case {
        name: "negative overflow".into(),
        data: vec![-3e38; N],
        sum: Some(-INF),
        min: Some(-3e38),
        max: Some(-3e38),
    });
    // Exact sum 0; partial sums overflow one way, the other, both, or not at all
    // depending on the order: the check accepts +inf, -inf, NaN or a value near 0.
    let mixed: Vec<f32> = (0..N).map(|i| if i % 2 == 0 { 3e38 } else { -3e38 }).collect();
    cases.push(Case { name: "overflow both ways".into(), data: mixed, sum: None, min: Some(-3e38), max: Some(3e38) });
    cases
}

fn same(a: f32, b: f32) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

fn reduce_nonfinite<B: FamilyBackend>(backend: &B) -> usize {
    let configs = [
        dynsmem::host::families::reduce::default_config(backend),
        ReduceConfig { block: 32, items_per_thread: 4, staged: true },
        ReduceConfig { block: 7, items_per_thread: 3, staged: false },
    ];
    let mut checked = 0;
    for case in reduce_cases() {
        let input = backend.htod(&case.data).expect("upload");
        for (op, want) in [(ReduceOp::Sum, case.sum), (ReduceOp::Min, case.min), (ReduceOp::Max, case.max)] {
            let r = reference(op, &case.data);
            if let Some(w) = want {
                assert!(
                    same(r.value as f32, w),
                    "{} {op:?}: the CPU reference gives {}, the semantics {w}",
                    case.name,
                    r.value
                );
            }
            for config in configs {
                let json = serde_json::json!({"n": N, "op": "sum", "dtype": "f32"});
                for variant in
                    common::conformance::variants_in(&dynsmem::host::families::reduce::REDUCE, &json, backend)
                {
                    let what = format!("{} {variant} {config:?} {op:?} over {}", backend.kind(), case.name);
                    let problem = ReduceProblem { n: N as u64, op, dtype: Dtype::F32 };
                    let plan =
                        ReducePlan::new(backend, problem, config, variant).unwrap_or_else(|e| panic!("{what}: {e}"));
                    let got: f32 = plan.run(&input).unwrap_or_else(|e| panic!("{what}: {e}"));
                    if let Some(w) = want {
                        assert!(same(got, w), "{what}: got {got}, the semantics give {w}");
                    }
                    plan.check(&r, got).unwrap_or_else(|e| panic!("{what}: {e}"));
                    checked += 1;
                }
            }
        }
    }
    common::note(&format!("reduce NaN/inf: {}: {checked} launches match the stated semantics", backend.kind()));
    checked
}

/// Rows of 37 (not a multiple of 4 or of the blocks): finite; with a NaN; with +inf;
/// with two +inf; with a -inf; all -inf; all 3e38 (no overflow: the max is subtracted).
fn softmax_nonfinite<B: FamilyBackend>(backend: &B) -> usize {
    let cols = 37usize;
    let finite: Vec<f32> = (0..cols).map(|i| (i as f32 * 0.37).sin() * 4.0).collect();
    let with = |at: &[(usize, f32)]| {
        let mut r = finite.clone();
        for &(i, v) in at {
            r[i] = v;
        }
        r
    };
    let rows = [
        finite.clone(),
        with(&[(5, NAN)]),
        with(&[(5, INF)]),
        with(&[(5, INF), (30, INF)]),
        with(&[(5, -INF)]),
        vec![-INF; cols],
        vec![3e38; cols],
    ];
    let data: Vec<f32> = rows.concat();
    let problem = SoftmaxProblem { rows: rows.len() as u32, cols: cols as u32 };
    let expected = softmax::reference(&data, rows.len(), cols);
    let row = |v: &[f64], r: usize| v[r * cols..(r + 1) * cols].to_vec();
    // The reference states the semantics: NaN rows, a 0 for -inf, 1/cols for equal values.
    for r in [1, 2, 3, 5] {
        assert!(row(&expected, r).iter().all(|v| v.is_nan()), "reference row {r}");
    }
    assert_eq!(row(&expected, 4)[5], 0.0);
    assert!((row(&expected, 4).iter().sum::<f64>() - 1.0).abs() < 1e-12);
    assert!(row(&expected, 6).iter().all(|&v| v == 1.0 / cols as f64));

    let mut checked = 0;
    for config in [SoftmaxConfig::blocks(8), SoftmaxConfig::blocks(33)] {
        for &variant in backend.variants() {
            let what = format!("{} {variant} {config:?}", backend.kind());
            let w =
                prepare_with(backend, problem, config, variant, data.clone()).unwrap_or_else(|e| panic!("{what}: {e}"));
            w.run().unwrap_or_else(|e| panic!("{what}: {e}"));
            let out = w.output_values::<f32>(0).unwrap_or_else(|e| panic!("{what}: {e}"));
            let got = |r: usize| &out[r * cols..(r + 1) * cols];
            for (r, name) in [(1, "a NaN"), (2, "+inf"), (3, "two +inf"), (5, "all -inf")] {
                assert!(got(r).iter().all(|v| v.is_nan()), "{what}: a row with {name} must be all NaN: {:?}", got(r));
            }
            assert_eq!(got(4)[5], 0.0, "{what}: exp(-inf - max) is 0");
            assert!(
                got(4).iter().enumerate().all(|(i, v)| i == 5 || (v.is_finite() && *v > 0.0)),
                "{what}: {:?}",
                got(4)
            );
            assert!(got(6).iter().all(|&v| (v - 1.0 / cols as f32).abs() < 1e-6), "{what}: {:?}", got(6));
            // Every element against the reference, the finite rows within tolerance.
            w.check().unwrap_or_else(|e| panic!("{what}: {e}"));
            checked += 1;
        }
    }
    common::note(&format!("softmax NaN/inf: {}: {checked} launches match the stated semantics", backend.kind()));
    checked
}

#[test]
fn reduce_nan_and_infinity_cpu() {
    assert!(reduce_nonfinite(&CpuBackend::new()) > 0);
}

#[test]
fn softmax_nan_and_infinity_cpu() {
    assert!(softmax_nonfinite(&CpuBackend::new()) > 0);
}

#[test]
fn reduce_nan_and_infinity_wgsl() {
    if let Some(b) = common::wgsl_or_skip("reduce_nan_and_infinity_wgsl") {
        assert!(reduce_nonfinite(&b) > 0);
    }
}

#[test]
fn softmax_nan_and_infinity_wgsl() {
    if let Some(b) = common::wgsl_or_skip("softmax_nan_and_infinity_wgsl") {
        assert!(softmax_nonfinite(&b) > 0);
    }
}

#[test]
fn reduce_nan_and_infinity_cuda() {
    if let Some(b) = common::cuda_or_skip("reduce_nan_and_infinity_cuda") {
        assert!(reduce_nonfinite(&b) > 0);
    }
}

#[test]
fn softmax_nan_and_infinity_cuda() {
    if let Some(b) = common::cuda_or_skip("softmax_nan_and_infinity_cuda") {
        assert!(softmax_nonfinite(&b) > 0);
    }
}

/// The check accepts an overflowed float sum only where the inputs can overflow it, and
/// still rejects a wrong value: a test of the checker, so the cases above cannot pass by
/// a check that accepts anything.
#[test]
fn sum_check_accepts_overflow_only_where_it_can_happen() {
    let cpu = CpuBackend::new();
    let plan = |n: usize| {
        let problem = ReduceProblem { n: n as u64, op: ReduceOp::Sum, dtype: Dtype::F32 };
        ReducePlan::new(
            &cpu,
            problem,
            ReduceConfig { block: 4, items_per_thread: 2, staged: false },
            dynsmem::host::backend::Variant::LaunchSized,
        )
        .unwrap()
    };
    let pos = vec![3e38f32; 4];
    let p = plan(pos.len());
    let r = reference(ReduceOp::Sum, &pos);
    assert!(p.check(&r, INF).is_ok());
    assert!(p.check(&r, -INF).is_err(), "no negative input: -inf is wrong");
    assert!(p.check(&r, NAN).is_err(), "only one sign can overflow: NaN is wrong");
    assert!(p.check(&r, 3e38).is_err(), "a finite value far from 1.2e39 is wrong");
    let both: Vec<f32> = vec![3e38, -3e38, 3e38, -3e38];
    let r = reference(ReduceOp::Sum, &both);
    for ok in [INF, -INF, NAN, 0.0] {
        assert!(plan(4).check(&r, ok).is_ok(), "{ok}");
    }
    // Within depth * eps * 1.2e39 of 0 is rounding; 1e37 is not.
    assert!(plan(4).check(&r, 1e37).is_err());
    let small = vec![1.0f32, 2.0, 3.0];
    let r = reference(ReduceOp::Sum, &small);
    assert!(plan(3).check(&r, INF).is_err(), "no overflow is possible");
    assert!(plan(3).check(&r, 6.0).is_ok());
    // min over a NaN: the exact check holds although the magnitude sum is NaN.
    let problem = ReduceProblem { n: 3, op: ReduceOp::Min, dtype: Dtype::F32 };
    let min = ReducePlan::new(
        &cpu,
        problem,
        ReduceConfig { block: 4, items_per_thread: 2, staged: false },
        dynsmem::host::backend::Variant::LaunchSized,
    )
    .unwrap();
    let r = reference(ReduceOp::Min, &[NAN, 2.0, -1.0]);
    assert!(min.check(&r, -1.0f32).is_ok());
    assert!(min.check(&r, NAN).is_err());
    assert!(min.check(&r, 2.0f32).is_err());
}
