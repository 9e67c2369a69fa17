//! `dynsmem bench --plots DIR` on this machine's backends (the CPU backend and lavapipe in
//! CI): a plot per family that has a verified figure, GEMM against size, and (with CUDA)
//! the decomposition, each naming the series of its records; `dynsmem plot` of the records
//! file it wrote makes the same files, byte for byte; and `dynsmem compare` of it prints
//! the bench's comparison table.

mod common;

use std::collections::BTreeSet;

use common::cli::run_ok;
use dynsmem::host::report::read_jsonl;

/// The texts of an SVG's `<text>` elements.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>'))
        .map(|(_, rest)| rest.split('<').next().unwrap().trim().to_string())
        .collect()
}

/// Whether a plot has a text (a legend entry) that starts with `series`.
fn names(svg: &str, series: &str) -> bool {
    texts(svg).iter().any(|t| t.starts_with(series))
}

fn svgs(dir: &std::path::Path) -> BTreeSet<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

#[test]
fn bench_plots_every_family_and_the_plot_command_redraws_them() {
    let dir = std::env::temp_dir().join(format!("dynsmem-plots-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (records, plots, again) = (dir.join("bench.jsonl"), dir.join("plots"), dir.join("again"));
    let out = run_ok(&[
        "bench",
        "--quick",
        "--n",
        "4096",
        "--repeats",
        "1",
        "--warmup",
        "0",
        "--warmup-ms",
        "0",
        "--json",
        records.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
    ]);
    let recs = read_jsonl(&records).unwrap().records;
    let figure = |r: &&dynsmem::host::report::Record| r.verified && (r.gbps.is_some() || r.tflops.is_some());
    let families: BTreeSet<&str> = recs.iter().filter(figure).map(|r| r.family.as_str()).collect();
    for f in ["copy", "reduce", "sgemm", "transpose"] {
        assert!(families.contains(f), "the bench measured {f}: {families:?}");
    }
    let mut expected: BTreeSet<String> = families.iter().map(|f| format!("{f}.svg")).collect();
    expected.insert("sgemm-tflops.svg".into());
    // The decomposition splits CUDA launch-sized against its static twins: drawn only where
    // CUDA ran both launch-sized and a twin (cuda-static or WGSL).
    let ran = |backend: &str, variant: Option<&str>| {
        recs.iter().filter(figure).any(|r| r.backend.to_string() == backend && variant.is_none_or(|v| r.variant == v))
    };
    let twin = ran("cuda", Some("cuda-static")) || ran("wgsl", None);
    if ran("cuda", Some("launch-sized")) && twin {
        expected.insert("decomposition.svg".into());
    }
    assert_eq!(svgs(&plots), expected);
    assert!(out.contains(&format!("{} plots written to", expected.len())), "{out}");
    if expected.contains("decomposition.svg") {
        let svg = std::fs::read_to_string(plots.join("decomposition.svg")).unwrap();
        assert!(names(&svg, "reduce ") && names(&svg, "static sizing"), "decomposition.svg names its rows");
    }
    for r in recs.iter().filter(figure) {
        let svg = std::fs::read_to_string(plots.join(format!("{}.svg", r.family))).unwrap();
        assert!(svg.starts_with("<svg"), "{}", r.family);
        let what = if r.variant == "anchor" { &r.kernel } else { &r.variant };
        let series = format!("{} {what}", r.backend);
        assert!(names(&svg, &series), "{}.svg names the series {series:?}", r.family);
        if r.family == "sgemm" {
            let line = std::fs::read_to_string(plots.join("sgemm-tflops.svg")).unwrap();
            assert!(names(&line, &series), "sgemm-tflops.svg names {series:?}");
        }
    }
    // Every WGSL GEMM row is verified and drawn: the WGSL form runs where WGSL does.
    if recs.iter().any(|r| r.backend.to_string() == "wgsl") {
        let gemm = std::fs::read_to_string(plots.join("sgemm.svg")).unwrap();
        assert!(names(&gemm, "wgsl wgsl-literal") && names(&gemm, "wgsl wgsl-override"), "WGSL GEMM series");
    }

    // The bench printed the comparison table that `compare` makes of its records.
    let cmp = dir.join("cmp");
    let table = run_ok(&["compare", records.to_str().unwrap()]);
    assert!(table.starts_with("family ") && table.contains("\nreduce "), "{table}");
    assert!(out.contains(table.trim_end()), "the bench's table:\n{out}\ncompare's:\n{table}");
    run_ok(&["compare", records.to_str().unwrap(), "--plots", cmp.to_str().unwrap()]);
    assert_eq!(cmp.join("decomposition.svg").exists(), expected.contains("decomposition.svg"));

    let out = run_ok(&["plot", records.to_str().unwrap(), "--out", again.to_str().unwrap()]);
    assert!(out.contains(&format!("{} plots of {} records", expected.len(), recs.len())), "{out}");
    assert_eq!(svgs(&again), expected);
    for f in &expected {
        assert_eq!(std::fs::read(plots.join(f)).unwrap(), std::fs::read(again.join(f)).unwrap(), "{f}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
