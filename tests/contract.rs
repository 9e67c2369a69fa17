//! The kernel contract (`dynsmem::host::contract::Kernel`) on a built-in kernel, the
//! transpose, described as a user would describe their own: it tunes and exports on the CPU
//! backend, its default check (the same kernel on the CPU backend at a reference config)
//! and an f64 reference each fail on a single wrong term, a contract that does not match
//! the entry is refused before anything runs, and a kernel without a WGSL twin is a typed
//! refusal on WGSL, never a panic.

mod common;

use common::wgsl_or_skip;
use dynsmem::host::Error;
use dynsmem::host::backend::Variant;
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::contract::{Data, Fill, Kernel, Params, Workload};
use dynsmem::host::device::transpose::TransposeConfig;
use dynsmem::host::measure::TimingOptions;
use dynsmem::host::tune::{TuneOptions, tune_kernel_with};

const ROWS: u32 = 37;
const COLS: u32 = 45;

fn config(p: &Params) -> TransposeConfig {
    TransposeConfig { block: p["block"], tile: p["tile"], pad: p["pad"] }
}

/// `output = input^T` of a `ROWS x COLS` matrix, tuned over tile, block and padding.
fn transpose() -> Kernel {
    let n = (ROWS * COLS) as usize;
    Kernel::new(dynsmem::host::device::transpose::KERNELS, "transpose_f32")
        .input("input", n, Fill::Random(7))
        .output("output", n)
        .scalar("rows", ROWS)
        .scalar("cols", COLS)
        .param_arg("tile")
        .param_arg("pad")
        .params(&[("block", &[12, 32, 64]), ("tile", &[4, 8, 16]), ("pad", &[0, 1])])
        .restrict(|p| config(p).fits().is_ok())
        .block(|p| p["block"])
        .grid(|p| config(p).grid(ROWS, COLS))
        .shared_bytes(|p| config(p).shared_bytes())
}

fn quick() -> TuneOptions {
    TuneOptions {
        timing: TimingOptions { warmup: 0, warmup_ms: 0.0, repeats: 2, ..Default::default() },
        ..Default::default()
    }
}

#[test]
fn a_kernel_in_a_few_lines_tunes_and_exports() {
    let cpu = CpuBackend::new();
    let k = transpose();
    let sweep = tune_kernel_with(&cpu, &k, &quick()).unwrap();
    println!("{}", sweep.summary());
    assert!(sweep.failures().is_empty(), "{:?}", sweep.failures());
    assert!(!sweep.space.filtered.is_empty(), "the restriction filters configs before launch");
    assert_eq!(sweep.result.evaluations.len(), sweep.space.len());
    assert!(sweep.best().is_some());
    let dir = std::env::temp_dir().join(format!("dynsmem-contract-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (t4, kt) = (dir.join("t.t4.json"), dir.join("t.kt-cache.json"));
    sweep.export_t4(&t4).unwrap();
    sweep.export_kt_cache(&kt).unwrap();
    let t4: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(t4).unwrap()).unwrap();
    let kt: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(kt).unwrap()).unwrap();
    assert_eq!(t4["results"].as_array().unwrap().len(), sweep.space.len());
    assert_eq!(
        kt["cache"].as_object().unwrap().len() + sweep.space.filtered.len(),
        3 * 3 * 2,
        "every point of the product ran or was filtered; filtered ones are not entries"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// An argument off by one at some configs (`cols` passed as a parameter): the default
/// check compares those configs with the CPU run at the first config and names the output.
#[test]
fn the_cpu_run_check_fails_on_a_wrong_argument() {
    let cpu = CpuBackend::new();
    let n = (ROWS * COLS) as usize;
    let k = Kernel::new(dynsmem::host::device::transpose::KERNELS, "transpose_f32")
        .input("input", n, Fill::Random(7))
        .output("output", n)
        .scalar("rows", ROWS)
        .param_arg("cols")
        .param_arg("tile")
        .param_arg("pad")
        .params(&[("cols", &[COLS, COLS - 1]), ("tile", &[8]), ("pad", &[1])])
        .block(|_| 64)
        .grid(|p| config(&Params([("block", 64), ("tile", p["tile"]), ("pad", p["pad"])].into())).grid(ROWS, COLS))
        .shared_bytes(|p| TransposeConfig { block: 64, tile: p["tile"], pad: p["pad"] }.shared_bytes());
    let good = k.prepare(&cpu, Variant::LaunchSized, &[COLS, 8, 1]).unwrap();
    good.run().unwrap();
    good.check().unwrap();
    let bad = k.prepare(&cpu, Variant::LaunchSized, &[COLS - 1, 8, 1]).unwrap();
    bad.run().unwrap();
    let e = bad.check().unwrap_err();
    assert!(matches!(e, Error::Mismatch(_)) && e.to_string().contains("output"), "{e}");
}

/// An f64 reference that is the transpose but for one element, one input term off: the
/// check fails at that element; the exact reference passes.
#[test]
fn an_f64_reference_fails_on_a_single_wrong_term() {
    let cpu = CpuBackend::new();
    let reference = |wrong: Option<usize>| {
        move |inputs: &[&Data]| {
            let x = inputs[0].to_f64();
            let mut t: Vec<f64> = (0..(ROWS * COLS) as usize)
                .map(|i| x[(i % ROWS as usize) * COLS as usize + i / ROWS as usize])
                .collect();
            if let Some(i) = wrong {
                t[i] = x[(i % ROWS as usize) * COLS as usize + i / ROWS as usize + 1];
            }
            vec![t]
        }
    };
    for (wrong, ok) in [(None, true), (Some(17), false)] {
        let k = transpose().reference(reference(wrong), 1e-6);
        let w = k.prepare(&cpu, Variant::LaunchSized, &[64, 8, 1]).unwrap();
        w.run().unwrap();
        match (w.check(), ok) {
            (Ok(()), true) => {}
            (Err(Error::Mismatch(m)), false) => assert_eq!(m.index, 17, "{m}"),
            (r, _) => panic!("wrong term {wrong:?}: {r:?}"),
        }
    }
}

/// Two sweeps of one kernel in one process, the second against an f64 reference of zeros:
/// the second must fail every config (its check is another cache key), not be answered
/// from the first sweep's entries; and its failures name the check that failed. The same
/// with one cache file kept between them.
#[test]
fn two_checks_in_one_process_are_two_sweeps() {
    let cpu = CpuBackend::new();
    let zeros = |_: &[&Data]| vec![vec![0.0; (ROWS * COLS) as usize]];
    let kept = std::env::temp_dir().join(format!("dynsmem-two-checks-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&kept);
    for cache in [None, Some(kept.clone())] {
        let opts = TuneOptions { cache: cache.clone(), ..quick() };
        let first = tune_kernel_with(&cpu, &transpose(), &opts).unwrap();
        assert!(first.failures().is_empty(), "{:?}", first.failures());
        let second = tune_kernel_with(&cpu, &transpose().reference(zeros, 1e-6), &opts).unwrap();
        let failures = second.failures();
        assert_eq!(failures.len(), second.space.len(), "{cache:?}: {}", second.summary());
        assert!(
            failures.iter().all(|(_, e)| e.contains("the kernel's f64 reference")),
            "the failure names its check: {:?}",
            failures[0]
        );
        assert!(second.result.evaluations.iter().all(|e| !e.cached), "nothing answered from the first sweep");
        drop((first, second));
    }
    let _ = std::fs::remove_file(&kept);
}

/// What does not match the entry is refused before anything is uploaded or launched.
#[test]
fn a_contract_that_does_not_match_its_entry_is_refused() {
    let missing = transpose().scalar("extra", 1u32);
    let e = missing.validate().unwrap_err().to_string();
    assert!(e.contains("transpose_f32") && e.contains("takes") && e.contains("U32"), "{e}");
    let unknown = Kernel::new(dynsmem::host::device::transpose::KERNELS, "transpose_f64").params(&[("block", &[1])]);
    assert!(matches!(unknown.validate(), Err(Error::MissingKernel { .. })));
    let no_geometry = Kernel::new(dynsmem::host::device::transpose::KERNELS, "transpose_f32");
    assert!(no_geometry.validate().is_err());
}

/// No WGSL twin: the sweep on WGSL is refused with a typed error naming the kernel.
#[test]
fn a_kernel_without_a_wgsl_twin_is_a_refusal_on_wgsl() {
    let Some(wgsl) = wgsl_or_skip("a_kernel_without_a_wgsl_twin_is_a_refusal_on_wgsl") else { return };
    let e = tune_kernel_with(&wgsl, &transpose(), &quick()).err().expect("refused");
    assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains("no WGSL twin"), "{e}");
    let Err(e) = transpose().prepare(&wgsl, Variant::WgslOverride, &[64, 8, 1]) else { panic!("built") };
    assert!(e.to_string().contains("no WGSL twin"), "{e}");
}
