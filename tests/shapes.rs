//! The shape suites (`dynsmem shapes`) on the CPU backend and the WGSL path (lavapipe in
//! CI): every family's small shapes verify, each beside its anchor where the family has
//! one, and a second run with the first run's records measures nothing again.

use dynsmem::host::backend::{BackendKind, Variant};
use dynsmem::host::families::FAMILIES;
use dynsmem::host::family::shapes::{self, Section};
use dynsmem::host::family::{DynFamily, Sizes};
use dynsmem::host::measure::TimingOptions;
use dynsmem::shapes::{ShapesOptions, run, summarize};

fn options(backend: BackendKind) -> ShapesOptions {
    ShapesOptions {
        families: Vec::new(),
        backends: vec![backend],
        variants: Vec::new(),
        section: Some(Section::Small),
        timing: TimingOptions { warmup: 1, warmup_ms: 0.0, repeats: 2, energy_ms: 0.0, back_to_back: true },
        seed: 7,
        command: "tests/shapes.rs".into(),
        db: None,
        labels: Vec::new(),
        random: None,
        done: Vec::new(),
    }
}

/// Each family's problems of its `[small]` section, as JSON.
fn small_problems(family: &dyn DynFamily) -> Vec<serde_json::Value> {
    let suite = shapes::parse(family.name(), family.shapes()).unwrap();
    let cmd = family.run_args(clap::Command::new(family.name()).no_binary_name(true));
    suite
        .small
        .iter()
        .map(|shape| {
            let m = cmd.clone().try_get_matches_from(&shape.args).unwrap();
            family.problem(&m, &Sizes::cpu_backend()).unwrap().0
        })
        .collect()
}

/// The (family, small shape, variant) cases a run measures: those of the variants each
/// family has a form in.
fn small_cases(variants: &[Variant]) -> usize {
    FAMILIES
        .iter()
        .map(|f| {
            let problems = small_problems(*f);
            variants.iter().map(|v| problems.iter().filter(|p| f.has_variant(p, *v).unwrap()).count()).sum::<usize>()
        })
        .sum()
}

fn check(backend: BackendKind, variants: &[Variant]) {
    let mut opts = options(backend);
    let report = run(&opts, &mut |_| {}, &mut |_| {});
    let measured: Vec<_> = report.records.iter().filter(|r| r.variant != "anchor").collect();
    assert_eq!(measured.len(), small_cases(variants), "{backend}: one record per shape and variant");
    for r in &measured {
        assert!(r.verified, "{backend} {} {:?}: {:?}", r.family, r.shape, r.error);
        assert!(r.shape.is_some());
    }
    // Every bandwidth family's shape has its copy anchor and a ratio; a compute-bound family
    // (no copy anchor) has none on these backends.
    let family = |name: &str| *FAMILIES.iter().find(|f| f.name() == name).unwrap();
    let anchored = measured.iter().filter(|r| r.ratio.is_some()).count();
    let no_anchor = measured.iter().filter(|r| family(&r.family).anchor_bytes(&r.problem).unwrap().is_none()).count();
    assert_eq!(anchored + no_anchor, measured.len(), "{backend}: a bandwidth shape without its anchor");
    let summaries = summarize(&report.records);
    // A summary per family and variant with small shapes there (none for hgemm: tensor
    // cores only; none for attention on WGSL: no twin).
    let with_small: usize = variants
        .iter()
        .map(|v| FAMILIES.iter().filter(|f| small_problems(**f).iter().any(|p| f.has_variant(p, *v).unwrap())).count())
        .sum();
    assert_eq!(summaries.len(), with_small);
    // Resumed: the second run keeps every shape and measures nothing.
    opts.done = report.records.clone();
    let mut made = 0;
    let again = run(&opts, &mut |_| {}, &mut |_| made += 1);
    assert_eq!((again.resumed, made), (small_cases(variants), 0), "{backend}: resumed run measured again");
}

#[test]
fn cpu_backend() {
    check(BackendKind::Cpu, &[Variant::LaunchSized]);
}

#[test]
fn wgsl() {
    match dynsmem::wgsl() {
        // Every variant the adapter runs (wgsl-subgroup too where it has subgroups, as
        // lavapipe does).
        dynsmem::host::backend::Probe::Ready(b) => {
            check(BackendKind::Wgsl, dynsmem::host::contract::FamilyBackend::variants(&b))
        }
        dynsmem::host::backend::Probe::Unavailable(_, why) => println!("SKIPPED: no Vulkan adapter ({why})"),
    }
}

/// `--random`: shapes drawn from SGEMM's `[random]` template, the same for one seed and
/// others for another, each verified, beside the suite shapes `--label` names.
#[test]
fn random_shapes_are_drawn_per_seed_and_verified() {
    let mut opts = options(BackendKind::Cpu);
    opts.families = vec!["sgemm".into()];
    opts.random = Some((3, 11));
    opts.labels = vec!["odd-67".into()];
    let problems = |opts: &ShapesOptions| -> Vec<(String, serde_json::Value)> {
        let report = run(opts, &mut |_| {}, &mut |_| {});
        let measured: Vec<_> = report.records.iter().filter(|r| r.variant != "anchor").collect();
        for r in &measured {
            assert!(r.verified, "{:?}: {:?}", r.shape, r.error);
        }
        measured.iter().map(|r| (r.shape.clone().unwrap(), r.problem.clone())).collect()
    };
    let first = problems(&opts);
    let labels: Vec<&str> = first.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["odd-67", "random-11-00", "random-11-01", "random-11-02"]);
    assert_eq!(problems(&opts), first, "one seed, one draw");
    opts.random = Some((3, 12));
    opts.labels.clear();
    let other = problems(&opts);
    assert_eq!(other.len(), 3, "no suite shape without --label");
    assert_ne!(other.iter().map(|(_, p)| p).collect::<Vec<_>>(), first[1..].iter().map(|(_, p)| p).collect::<Vec<_>>());
}
