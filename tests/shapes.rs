//! The shape suites (`dynsmem shapes`) on the CPU backend and the WGSL path (lavapipe in
//! CI): every family's small shapes verify, each beside its anchor where the family has
//! one, and a second run with the first run's records measures nothing again.

use dynsmem::host::backend::BackendKind;
use dynsmem::host::families::FAMILIES;
use dynsmem::host::family::shapes::{self, Section};
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

/// Small shapes: the count of every family's `[small]` section.
fn small_shapes() -> usize {
    FAMILIES.iter().map(|f| shapes::parse(f.name(), f.shapes()).unwrap().small.len()).sum()
}

fn check(backend: BackendKind, variants: usize) {
    let mut opts = options(backend);
    let report = run(&opts, &mut |_| {}, &mut |_| {});
    let measured: Vec<_> = report.records.iter().filter(|r| r.variant != "anchor").collect();
    assert_eq!(measured.len(), small_shapes() * variants, "{backend}: one record per shape and variant");
    for r in &measured {
        assert!(r.verified, "{backend} {} {:?}: {:?}", r.family, r.shape, r.error);
        assert!(r.shape.is_some());
    }
    // Every bandwidth family's shape has its copy anchor and a ratio.
    let anchored = measured.iter().filter(|r| r.ratio.is_some()).count();
    let no_anchor = measured.iter().filter(|r| r.family == "sgemm" || r.family == "nbody").count();
    assert_eq!(anchored + no_anchor, measured.len(), "{backend}: a bandwidth shape without its anchor");
    let summaries = summarize(&report.records);
    // Families with no small shapes (hgemm: tensor cores only) have no summary here.
    let with_small = FAMILIES.iter().filter(|f| !shapes::parse(f.name(), f.shapes()).unwrap().small.is_empty()).count();
    assert_eq!(summaries.len(), with_small * variants);
    // Resumed: the second run keeps every shape and measures nothing.
    opts.done = report.records.clone();
    let mut made = 0;
    let again = run(&opts, &mut |_| {}, &mut |_| made += 1);
    assert_eq!((again.resumed, made), (small_shapes() * variants, 0), "{backend}: resumed run measured again");
}

#[test]
fn cpu_backend() {
    check(BackendKind::Cpu, 1);
}

#[test]
fn wgsl() {
    match dynsmem::wgsl() {
        dynsmem::host::backend::Probe::Ready(_) => check(BackendKind::Wgsl, 2),
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
