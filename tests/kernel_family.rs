//! A kernel described on the contract joins the command line as a family of its own
//! (`dynsmem::host::family::kernel::KernelFamily`, what `dynsmem::cli::main(&[&MY])` takes):
//! the built-in transpose, described as a user would describe their own, parsed from a `run`
//! command line, resolved, prepared, run and checked on the CPU backend; its sizes and
//! parameters are options; a config that names a parameter wrongly or lacks one is refused
//! naming it; the tuner's space and `prepare` agree on every point; a family whose kernel is
//! wrong (its arguments swapped) fails its check.

use dynsmem::cli::{Parsed, try_parse_from};
use dynsmem::host::Error;
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::backend::{Erase, Variant};
use dynsmem::host::contract::{Data, Fill, Kernel, Params};
use dynsmem::host::device::transpose::TransposeConfig;
use dynsmem::host::family::kernel::{KernelFamily, Problem, Size};
use dynsmem::host::family::{DynFamily, PointVerdict, Sizes, probe_point};
use dynsmem::host::rng::SplitMix64;
use serde_json::json;

fn config(p: &Params) -> TransposeConfig {
    TransposeConfig { block: p["block"], tile: p["tile"], pad: p["pad"] }
}

/// `output = input^T` of a `rows x cols` matrix, checked against the exact transpose (an
/// f64 reference: the default check, the same kernel on the CPU backend, would share the
/// bug); `swapped` passes the sizes in the wrong order (a bug the check must catch where
/// rows != cols).
fn transpose(rows: u32, cols: u32, swapped: bool) -> Kernel {
    let n = (rows * cols) as usize;
    let (a, b) = if swapped { (cols, rows) } else { (rows, cols) };
    Kernel::new(dynsmem::host::device::transpose::KERNELS, "transpose_f32")
        .input("input", n, Fill::Random(7))
        .output("output", n)
        .scalar("rows", a)
        .scalar("cols", b)
        .param_arg("tile")
        .param_arg("pad")
        .params(&[("block", &[12, 32, 64]), ("tile", &[4, 8, 16]), ("pad", &[0, 1])])
        .restrict(|p| config(p).fits().is_ok())
        .block(|p| p["block"])
        .grid(move |p| config(p).grid(rows, cols))
        .shared_bytes(|p| config(p).shared_bytes())
        .reference(
            move |inputs: &[&Data]| {
                let x = inputs[0].to_f64();
                let (r, c) = (rows as usize, cols as usize);
                vec![(0..r * c).map(|i| x[(i % r) * c + i / r]).collect()]
            },
            0.0,
        )
}

fn sizes(p: &Problem) -> dynsmem::host::Result<(u32, u32)> {
    Ok((p.u32("rows")?, p.u32("cols")?))
}

static MY_TRANSPOSE: KernelFamily = KernelFamily {
    name: "my_transpose",
    about: "The built-in transpose kernel, described on the contract",
    sizes: &[Size::new("rows", 4096, 37, "Rows"), Size::new("cols", 4096, 45, "Columns")],
    build: |p| sizes(p).map(|(r, c)| transpose(r, c, false)),
    bench: &[&[("rows", 5)]],
    shapes: "[small]\nodd-13x7: --rows 13 --cols 7\n",
    ..KernelFamily::EMPTY
};

static SWAPPED: KernelFamily = KernelFamily {
    name: "swapped_transpose",
    about: "The transpose with its sizes passed in the wrong order",
    build: |p| sizes(p).map(|(r, c)| transpose(r, c, true)),
    ..MY_TRANSPOSE
};

fn registry() {
    dynsmem::set_families(&[&MY_TRANSPOSE, &SWAPPED]).unwrap();
}

/// `run <family>` parsed by the command line of that registry, resolved on the CPU backend.
fn resolve(args: &str) -> dynsmem::host::Result<dynsmem::host::family::Resolved> {
    registry();
    let argv = format!("dynsmem run {args}");
    let Ok(Parsed::Run { family, matches, .. }) = try_parse_from(argv.split(' ')) else { panic!("{argv} parses") };
    let cpu = CpuBackend::new();
    family.resolve(&matches, cpu.erase(), Variant::LaunchSized, &Sizes::cpu_backend(), None)
}

#[test]
fn a_run_command_line_names_the_sizes_and_the_parameters() {
    let r = resolve("my_transpose --rows 13 --cols 7 --block 32 --tile 8 --pad 1").unwrap();
    assert_eq!(r.problem, json!({"rows": 13, "cols": 7}));
    assert_eq!(r.config, json!({"block": 32, "tile": 8, "pad": 1}));
    assert_eq!(r.origin, "command line");
    let cpu = CpuBackend::new();
    let w = MY_TRANSPOSE.prepare(cpu.erase(), &r.problem, &r.config, Variant::LaunchSized, 1).unwrap();
    let want = TransposeConfig { block: 32, tile: 8, pad: 1 }.shared_bytes().unwrap();
    assert_eq!(w.kernel().shared_bytes, want, "the config's own launch-sized bytes");
    w.run().unwrap();
    w.check().unwrap();
}

#[test]
fn without_a_config_the_first_that_fits_runs_and_given_options_go_over_it() {
    let r = resolve("my_transpose").unwrap();
    assert_eq!(r.problem, json!({"rows": 37, "cols": 45}), "the CPU defaults");
    // block 12 with tile 4 is the first point of the space the restriction keeps.
    assert_eq!(r.config, json!({"block": 12, "tile": 4, "pad": 0}), "{}", r.origin);
    assert!(r.origin.contains("first config of the space that fits"), "{}", r.origin);
    let r = resolve("my_transpose --pad 1").unwrap();
    assert_eq!(r.config, json!({"block": 12, "tile": 4, "pad": 1}));
    assert!(r.origin.starts_with("command line, over the default"), "{}", r.origin);
}

#[test]
fn a_config_or_problem_that_names_a_wrong_or_missing_value_is_refused_naming_it() {
    let cpu = CpuBackend::new();
    let problem = json!({"rows": 13, "cols": 7});
    let prepare = |p: &serde_json::Value, c: serde_json::Value| {
        MY_TRANSPOSE.prepare(cpu.erase(), p, &c, Variant::LaunchSized, 1).err().expect("refused").to_string()
    };
    let e = prepare(&problem, json!({"block": 32, "tile": 8, "pad": 1, "tiles": 2}));
    assert!(e.contains("no parameter `tiles`"), "{e}");
    let e = prepare(&problem, json!({"block": 32, "tile": 8}));
    assert!(e.contains("gives no `pad`"), "{e}");
    let e = prepare(&json!({"rows": 13}), json!({"block": 32, "tile": 8, "pad": 1}));
    assert!(e.contains("lacks") && e.contains("cols"), "{e}");
    let e = prepare(&json!({"rows": 13, "cols": 1u64 << 40}), json!({"block": 32, "tile": 8, "pad": 1}));
    assert!(e.contains("cols") && e.contains(&u32::MAX.to_string()), "{e}");
}

/// The registry's property (`probe_point`, what the `registry` fuzz target drives) on the
/// family: the tuner's check and `prepare` agree at arbitrary points, in and out of the space.
#[test]
fn the_tuner_and_prepare_agree_on_every_point() {
    let cpu = CpuBackend::new();
    let mut rng = SplitMix64::new(11);
    let (mut accepted, mut refused) = (0, 0);
    for seed in 0..60 {
        let values: Vec<u32> = (0..3).map(|_| rng.below(40) as u32).collect();
        match probe_point(&MY_TRANSPOSE, &cpu, &values, seed) {
            Ok(PointVerdict::Accepted) => accepted += 1,
            Ok(PointVerdict::Refused(_)) => refused += 1,
            other => panic!("{values:?}: {other:?}"),
        }
    }
    assert!(accepted > 0 && refused > 0, "both kinds of points drawn: {accepted} accepted, {refused} refused");
}

#[test]
fn bench_cases_and_the_shape_suite_come_from_the_description() {
    let cpu = CpuBackend::new();
    let cases = MY_TRANSPOSE.bench_cases(cpu.erase(), Variant::LaunchSized, &Sizes::cpu_backend(), None);
    let problems: Vec<_> = cases.iter().map(|c| c.problem.clone()).collect();
    assert_eq!(problems, [json!({"rows": 37, "cols": 45}), json!({"rows": 5, "cols": 45})]);
    assert_eq!(MY_TRANSPOSE.anchor_bytes(&problems[1]).unwrap(), Some(2 * 5 * 45 * 4), "every buffer once");
    assert!(!MY_TRANSPOSE.has_variant(&problems[0], Variant::WgslLiteral).unwrap(), "no WGSL twin");
    let suite = dynsmem::host::family::shapes::parse(MY_TRANSPOSE.name(), MY_TRANSPOSE.shapes()).unwrap();
    assert_eq!(suite.section(dynsmem::host::family::shapes::Section::Small).len(), 1);
}

/// The same description with the sizes swapped: the check fails (rows != cols), where the
/// right one passes at the same config.
#[test]
fn a_wrong_kernel_fails_its_check() {
    let cpu = CpuBackend::new();
    let (problem, config) = (json!({"rows": 13, "cols": 7}), json!({"block": 32, "tile": 8, "pad": 1}));
    let w = SWAPPED.prepare(cpu.erase(), &problem, &config, Variant::LaunchSized, 1).unwrap();
    w.run().unwrap();
    let e = w.check().unwrap_err();
    assert!(matches!(e, Error::Mismatch(_)), "{e}");
}
