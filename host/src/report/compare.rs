//! The comparison people read (`dynsmem bench`, `dynsmem compare`): one row per problem
//! (family and problem), a column per backend and variant holding the best verified figure
//! and its ratio to the anchor measured in the same run, e.g. `2921 (0.98)`, and an anchor
//! column. What a cell cannot say in a number (a static form that ran a smaller config, a
//! config refused before launch, a wrong result, which of several configs is shown) is a
//! numbered footnote under the table, one short line each, identical texts sharing a
//! number. The per-record table with every field is [`super::records_table`].
//!
//! The columns are CUDA launch-sized, cuda-static, WGSL literal and WGSL override, always
//! there (`-` where the run had no such record), then a column per other backend and
//! variant the records hold (HIP, the CPU backend), in order of appearance.
//!
//! Of repeated measurements (a record file appended to by several runs) the last counts,
//! as in the plots ([`super::plot`]).

use super::short::{self, figure, problem_label, ratio};
use super::{Record, Table, TableStyle};
use crate::backend::BackendKind;

/// The figure a family is compared by: GB/s where its records have it, else TFLOP/s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Gbps,
    Tflops,
}

impl Unit {
    pub fn of(self, r: &Record) -> Option<f64> {
        match self {
            Unit::Gbps => r.gbps,
            Unit::Tflops => r.tflops,
        }
    }
    fn anchor_of(self, r: &Record) -> Option<f64> {
        match self {
            Unit::Gbps => r.anchor_gbps,
            Unit::Tflops => r.anchor_tflops,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Unit::Gbps => "GB/s",
            Unit::Tflops => "TFLOP/s",
        }
    }
}

/// A column: the records of one backend and variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub backend: BackendKind,
    pub variant: String,
    pub header: String,
}

/// The columns every table has, in this order.
const FIXED: [(BackendKind, &str, &str); 4] = [
    (BackendKind::Cuda, "launch-sized", "CUDA launch-sized"),
    (BackendKind::Cuda, "cuda-static", "cuda-static"),
    (BackendKind::Wgsl, "wgsl-literal", "WGSL literal"),
    (BackendKind::Wgsl, "wgsl-override", "WGSL override"),
];

/// The footnote of a cell whose ratio is the median of interleaved rounds against its
/// vendor anchor ([`Record::paired_ratio`]) rather than the figure over the anchor column's.
const INTERLEAVED: &str = "ratio: median of rounds interleaved with the anchor in one process";

/// The best verified record of a cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Best {
    pub figure: f64,
    pub ratio: Option<f64>,
    pub config: serde_json::Value,
}

/// One problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub family: String,
    /// The problem, short: its shape first, e.g. `n=2^28 op=sum f32`, `4096^3`.
    pub problem: String,
    pub unit: Unit,
    /// Per column: the best verified record, if any.
    pub best: Vec<Option<Best>>,
    /// Per column: the cell as printed.
    pub cells: Vec<String>,
    pub anchor: String,
}

/// The comparison of a set of records: [`Comparison::new`], then [`Comparison::render`].
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
    /// Footnote `i + 1`'s text.
    pub footnotes: Vec<String>,
    /// `backend: device` for each backend and device the records come from.
    pub devices: Vec<String>,
    /// Whether any record was measured on a CPU ([`Record::on_cpu`]).
    pub on_cpu: bool,
}

/// Footnote texts, numbered from 1 in order of first use; a text used again gets its number.
#[derive(Default)]
struct Footnotes(Vec<String>);

impl Footnotes {
    fn number(&mut self, text: String) -> usize {
        match self.0.iter().position(|t| *t == text) {
            Some(i) => i + 1,
            None => {
                self.0.push(text);
                self.0.len()
            }
        }
    }
}

/// Config keys whose values differ between `records`, shown for the chosen one.
fn distinguishing(chosen: &Record, records: &[&Record]) -> String {
    let keys: Vec<String> = match &chosen.config {
        serde_json::Value::Object(m) => m
            .keys()
            .filter(|k| records.iter().any(|r| r.config.get(k.as_str()) != m.get(k.as_str())))
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    let sub: serde_json::Map<String, serde_json::Value> =
        keys.iter().filter_map(|k| chosen.config.get(k).map(|v| (k.clone(), v.clone()))).collect();
    short::config_text(&serde_json::Value::Object(sub), true)
}

/// One cell: the best verified record of `records` (highest ratio, else highest figure)
/// and the footnotes it needs.
fn cell(records: &[&Record], unit: Unit, notes: &mut Footnotes) -> (String, Option<Best>) {
    if records.is_empty() {
        return ("-".into(), None);
    }
    let verified: Vec<&Record> = records.iter().copied().filter(|r| r.verified && unit.of(r).is_some()).collect();
    let key = |r: &Record| (r.ratio.is_some(), r.ratio.unwrap_or(0.0), unit.of(r).unwrap_or(0.0));
    let chosen =
        verified.iter().copied().max_by(|a, b| key(a).partial_cmp(&key(b)).unwrap_or(std::cmp::Ordering::Equal));
    let mut marks: Vec<usize> = Vec::new();
    let several = records.len() > 1;
    if let Some(c) = chosen {
        if verified.len() > 1 {
            let which = distinguishing(c, &verified);
            marks.push(notes.number(format!("best of {} configs: {which}", verified.len())));
        }
        if let Some(n) = &c.note {
            marks.push(notes.number(short::note(n)));
        }
        if c.paired_ratio.is_some() {
            marks.push(notes.number(INTERLEAVED.into()));
        }
    }
    // (A verified record without a figure has nothing to compare and nothing wrong.)
    for r in records.iter().filter(|r| !r.verified) {
        let text = short::failure(r.error.as_deref(), r.wrong_result);
        let text = if several { format!("{}: {text}", short::config_text(&r.config, false)) } else { text };
        marks.push(notes.number(short::cut(&text)));
    }
    let mut unique: Vec<usize> = Vec::new();
    for m in marks {
        if !unique.contains(&m) {
            unique.push(m);
        }
    }
    let best = chosen.map(|c| Best {
        figure: unit.of(c).expect("verified with a figure"),
        ratio: c.ratio,
        config: c.config.clone(),
    });
    // A CPU timing's ratio to the copy is not a GPU figure's: left out (see `render`).
    let on_cpu = chosen.is_some_and(|c| c.on_cpu());
    let mut text = match &best {
        Some(b) => match b.ratio {
            Some(q) if !on_cpu => format!("{} ({})", figure(b.figure), ratio(q)),
            _ => figure(b.figure),
        },
        None if records.iter().any(|r| r.wrong_result) => "WRONG".into(),
        None => "-".into(),
    };
    for m in unique {
        text.push_str(&format!(" [{m}]"));
    }
    (text, best)
}

/// What an anchor is, from its name (`cuda device-to-device copy`, `cuda cublasSgemm`).
fn anchor_kind(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    if lower.contains("copy") {
        "copy".into()
    } else if lower.contains("cublas") {
        "cuBLAS".into()
    } else {
        name.split_once(' ').map_or(name, |(_, rest)| rest).to_string()
    }
}

/// The anchor cell of a row: each distinct anchor its records were compared with (or,
/// where none was, the row's own anchor records): `cuBLAS 51.00` for one, `copy: cuda
/// 2982, wgsl 2978` for one per backend.
fn anchor_cell(rows: &[&Record], anchors: &[&Record], unit: Unit) -> String {
    let mut seen: Vec<(String, String, String)> = Vec::new();
    let add = |seen: &mut Vec<_>, backend: String, kind: String, v: f64| {
        let entry = (backend, kind, figure(v));
        if !seen.contains(&entry) {
            seen.push(entry);
        }
    };
    for r in rows {
        if let (Some(name), Some(v)) = (&r.anchor, unit.anchor_of(r)) {
            let backend = name.split(' ').next().unwrap_or_default().to_string();
            add(&mut seen, backend, anchor_kind(name), v);
        }
    }
    if seen.is_empty() {
        for a in anchors.iter().filter(|a| a.verified) {
            if let Some(v) = unit.of(a) {
                add(&mut seen, a.backend.to_string(), anchor_kind(&format!("{} {}", a.backend, a.kernel)), v);
            }
        }
    }
    match seen.as_slice() {
        [] => "-".into(),
        [(_, kind, v)] => format!("{kind} {v}"),
        [(_, kind, _), ..] if seen.iter().all(|(_, k, _)| k == kind) => {
            format!("{kind}: {}", seen.iter().map(|(b, _, v)| format!("{b} {v}")).collect::<Vec<_>>().join(", "))
        }
        _ => seen.iter().map(|(b, k, v)| format!("{b} {k} {v}")).collect::<Vec<_>>().join(", "),
    }
}

impl Comparison {
    /// The comparison of `records` (see the module doc).
    pub fn new(records: &[Record]) -> Comparison {
        let latest = super::plot::latest(records);
        let mut columns: Vec<Column> = FIXED
            .iter()
            .map(|&(backend, variant, header)| Column { backend, variant: variant.into(), header: header.into() })
            .collect();
        let mut devices: Vec<String> = Vec::new();
        // Rows: families in order of appearance, problems in order within a family.
        let mut families: Vec<&str> = Vec::new();
        let mut problems: Vec<(&str, &serde_json::Value)> = Vec::new();
        for r in &latest {
            let d = format!("{}: {}", r.backend, r.device);
            if !devices.contains(&d) {
                devices.push(d);
            }
            if r.variant == "anchor" {
                continue;
            }
            if !columns.iter().any(|c| c.backend == r.backend && c.variant == r.variant) {
                columns.push(Column {
                    backend: r.backend,
                    variant: r.variant.clone(),
                    header: format!("{} {}", r.backend, r.variant),
                });
            }
            if !families.contains(&r.family.as_str()) {
                families.push(&r.family);
            }
            let p = (r.family.as_str(), &r.problem);
            if !problems.contains(&p) {
                problems.push(p);
            }
        }
        problems.sort_by_key(|(f, _)| families.iter().position(|x| x == f));
        let labels = labels(&problems);
        let mut notes = Footnotes::default();
        let mut rows = Vec::new();
        for ((family, problem), label) in problems.iter().zip(labels) {
            let of_family = || latest.iter().copied().filter(|r| r.family == *family && r.variant != "anchor");
            let unit = if of_family().any(|r| r.gbps.is_some()) { Unit::Gbps } else { Unit::Tflops };
            let of_problem: Vec<&Record> = of_family().filter(|r| r.problem == **problem).collect();
            let anchors: Vec<&Record> = latest
                .iter()
                .copied()
                .filter(|r| r.family == *family && r.variant == "anchor" && r.problem == **problem)
                .collect();
            let (mut cells, mut best) = (Vec::new(), Vec::new());
            for c in &columns {
                let of: Vec<&Record> =
                    of_problem.iter().copied().filter(|r| r.backend == c.backend && r.variant == c.variant).collect();
                let (text, b) = cell(&of, unit, &mut notes);
                cells.push(text);
                best.push(b);
            }
            let anchor = anchor_cell(&of_problem, &anchors, unit);
            rows.push(Row { family: family.to_string(), problem: label, unit, best, cells, anchor });
        }
        let on_cpu = latest.iter().any(|r| r.variant != "anchor" && r.on_cpu());
        Comparison { columns, rows, footnotes: notes.0, devices, on_cpu }
    }

    /// The best verified figure of `row` in the column of `backend` and `variant`.
    pub fn figure(&self, row: &Row, backend: BackendKind, variant: &str) -> Option<f64> {
        let i = self.columns.iter().position(|c| c.backend == backend && c.variant == variant)?;
        row.best.get(i)?.as_ref().map(|b| b.figure)
    }

    /// The table, a row per problem.
    pub fn table(&self) -> Table {
        let mut header = vec!["family", "problem", "unit"];
        header.extend(self.columns.iter().map(|c| c.header.as_str()));
        header.push("anchor");
        let mut t = Table::new(&header);
        for r in &self.rows {
            let mut row = vec![r.family.clone(), r.problem.clone(), r.unit.name().to_string()];
            row.extend(r.cells.iter().cloned());
            row.push(r.anchor.clone());
            t.push(row);
        }
        t
    }

    /// The table, a line saying how to read a cell, the footnotes (a list item each in
    /// Markdown, so that each stays a line) and the devices.
    pub fn render(&self, style: TableStyle) -> String {
        let mut out = self.table().render(style);
        let item = if style == TableStyle::Markdown { "- " } else { "" };
        out.push_str(
            "\nEach cell: the figure of the best verified config, in brackets its ratio to the anchor measured \
             in the same run (last column); -: no record.\n",
        );
        if self.on_cpu {
            out.push_str(
                "Rows measured on a CPU (the CPU backend, a CPU Vulkan adapter such as lavapipe) are CPU timings: \
                 they show that each kernel runs and verifies, not how fast a GPU is, and have no ratio.\n",
            );
        }
        if !self.footnotes.is_empty() {
            out.push('\n');
        }
        for (i, f) in self.footnotes.iter().enumerate() {
            out.push_str(&format!("{item}[{}] {f}\n", i + 1));
        }
        if !self.devices.is_empty() {
            out.push_str(&format!("\nDevices: {}.\n", self.devices.join("; ")));
        }
        out
    }
}

/// The rows' problem labels; problems of one family whose short labels coincide are
/// labelled in full (`key=value`, every key) instead.
fn labels(problems: &[(&str, &serde_json::Value)]) -> Vec<String> {
    let short: Vec<String> = problems.iter().map(|(_, p)| problem_label(p)).collect();
    problems
        .iter()
        .enumerate()
        .map(|(i, (f, p))| {
            let clash = problems.iter().enumerate().any(|(j, (g, _))| j != i && g == f && short[j] == short[i]);
            if clash { short::config_text(p, true) } else { short[i].clone() }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Backend;
    use crate::report::Provenance;
    use serde_json::json;

    fn rec(family: &str, backend: BackendKind, variant: &str, problem: serde_json::Value) -> Record {
        let prov = Provenance { rustc: "r".into(), commit: "c".into(), command: "x".into(), image: "i".into() };
        let mut info = crate::backend::cpu::CpuBackend::new().info().clone();
        info.backend = backend;
        info.name = "GPU".into();
        let mut r = Record::new(family, variant, family, &info, &prov);
        r.problem = problem;
        r
    }

    /// A verified bandwidth record compared with `backend`'s copy.
    fn gbps(mut r: Record, config: serde_json::Value, v: f64, copy: f64) -> Record {
        r.config = config;
        r.gbps = Some(v);
        r.anchor = Some(format!("{} device-to-device copy", r.backend));
        r.anchor_gbps = Some(copy);
        r.ratio = Some(v / copy);
        r.verified = true;
        r
    }

    fn refused(mut r: Record, config: serde_json::Value, bytes: u32) -> Record {
        r.config = config;
        r.error = Some(format!(
            "k[{}]: asks for {bytes} bytes of static workgroup memory, over the {} limit of 49152 bytes (X)",
            r.variant, r.backend
        ));
        r
    }

    fn records() -> Vec<Record> {
        use BackendKind::{Cuda, Wgsl};
        let reduce = json!({ "n": 1u64 << 28, "op": "sum", "dtype": "f32" });
        let plain = json!({ "block": 512, "items_per_thread": 32, "staged": false });
        let staged = json!({ "block": 256, "items_per_thread": 200, "staged": true });
        let fitted = json!({ "block": 256, "items_per_thread": 44, "staged": true });
        let softmax = json!({ "rows": 8192, "cols": 32768 });
        let gemm = json!({ "m": 1024, "n": 1024, "k": 1024, "f16_inputs": false });
        let mut fallback = gbps(rec("reduce", Cuda, "cuda-static", reduce.clone()), fitted, 3062.0, 2982.0);
        fallback.note = Some(
            "static arrays of ReduceConfig { block: 256, items_per_thread: 200, staged: true } would be 205824 B, \
             over the 49152 B static limit: ran ReduceConfig { block: 256, items_per_thread: 44, staged: true } \
             (46080 B), the best that fits"
                .into(),
        );
        let mut cublas = rec("sgemm", Cuda, "anchor", gemm.clone());
        (cublas.kernel, cublas.tflops, cublas.verified) = ("cublasSgemm".into(), Some(30.46), true);
        let mut ours = rec("sgemm", Cuda, "launch-sized", gemm.clone());
        (ours.tflops, ours.anchor, ours.anchor_tflops) = (Some(19.96), Some("cuda cublasSgemm".into()), Some(30.46));
        (ours.ratio, ours.verified, ours.config) = (Some(19.96 / 30.46), true, json!({ "bm": 128 }));
        let mut wrong = rec("sgemm", Wgsl, "wgsl-literal", gemm);
        wrong.error =
            Some("sgemm_f32[wgsl]: result differs from the CPU reference at index 7: expected 1, got 0".into());
        wrong.wrong_result = true;
        let mut nbody = rec("nbody", Cuda, "launch-sized", json!({ "n": 65536, "dt": 0.01f32 as f64 }));
        (nbody.tflops, nbody.verified) = (Some(27.2749), true);
        let mut copy = rec("copy", Cuda, "anchor", json!({ "bytes": 1u64 << 30 }));
        (copy.gbps, copy.verified) = (Some(2982.0), true);
        // An earlier run of the launch-sized reduce: the later record of it counts.
        let old = gbps(rec("reduce", Cuda, "launch-sized", reduce.clone()), plain.clone(), 100.0, 2982.0);
        vec![
            old,
            gbps(rec("reduce", Cuda, "launch-sized", reduce.clone()), plain.clone(), 3071.0, 2982.0),
            gbps(rec("reduce", Cuda, "launch-sized", reduce.clone()), staged.clone(), 1655.0, 2982.0),
            gbps(rec("reduce", Cuda, "cuda-static", reduce.clone()), plain.clone(), 2352.0, 2982.0),
            fallback,
            gbps(rec("softmax", Cuda, "launch-sized", softmax.clone()), json!({ "block": 256 }), 1352.0, 2982.0),
            refused(rec("softmax", Cuda, "cuda-static", softmax.clone()), json!({ "block": 256 }), 132096),
            nbody,
            ours,
            cublas,
            copy,
            gbps(rec("reduce", Wgsl, "wgsl-literal", reduce.clone()), plain.clone(), 2854.0, 2978.0),
            refused(rec("reduce", Wgsl, "wgsl-literal", reduce.clone()), staged.clone(), 205824),
            gbps(rec("reduce", Wgsl, "wgsl-override", reduce.clone()), plain, 2851.0, 2978.0),
            refused(rec("reduce", Wgsl, "wgsl-override", reduce), staged, 205824),
            refused(rec("softmax", Wgsl, "wgsl-literal", softmax.clone()), json!({ "block": 256 }), 132096),
            wrong,
        ]
    }

    #[test]
    fn a_row_per_problem_with_the_best_config_and_numbered_footnotes() {
        let c = Comparison::new(&records());
        let t = c.table();
        assert_eq!(
            t.header,
            [
                "family",
                "problem",
                "unit",
                "CUDA launch-sized",
                "cuda-static",
                "WGSL literal",
                "WGSL override",
                "anchor"
            ]
        );
        let rows: Vec<Vec<&str>> = t.rows.iter().map(|r| r.iter().map(String::as_str).collect()).collect();
        assert_eq!(
            rows,
            [
                vec![
                    "reduce",
                    "n=2^28 op=sum f32",
                    "GB/s",
                    "3071 (1.03) [1]",
                    "3062 (1.03) [2] [3]",
                    "2854 (0.96) [4]",
                    "2851 (0.96) [4]",
                    "copy: cuda 2982, wgsl 2978",
                ],
                vec!["softmax", "8192x32768", "GB/s", "1352 (0.45)", "- [5]", "- [6]", "-", "copy 2982"],
                vec!["nbody", "n=65536 dt=0.01", "TFLOP/s", "27.27", "-", "-", "-", "-"],
                vec!["sgemm", "1024^3", "TFLOP/s", "19.96 (0.66)", "-", "WRONG [7]", "-", "cuBLAS 30.46"],
            ]
        );
        assert_eq!(
            c.footnotes,
            [
                "best of 2 configs: block=512,ipt=32,staged=false",
                "best of 2 configs: block=256,ipt=44,staged=true",
                "static arrays of ipt=200 need 205824 B > 49152 B: ran ipt=44 (46080 B)",
                "block=256,ipt=200,staged: static arrays need 205824 B > 49152 B (wgsl limit)",
                "static arrays need 132096 B > 49152 B (cuda limit)",
                "static arrays need 132096 B > 49152 B (wgsl limit)",
                "WRONG: result differs from the CPU reference at index 7: expected 1, got 0",
            ]
        );
        let best = c.rows[0].best[0].as_ref().unwrap();
        assert_eq!((best.figure, best.config["staged"].as_bool()), (3071.0, Some(false)), "not the earlier run's 100");
        assert_eq!(c.figure(&c.rows[1], BackendKind::Cuda, "cuda-static"), None);
        assert_eq!(c.devices, ["cuda: GPU", "wgsl: GPU"]);
    }

    #[test]
    fn footnotes_are_lines_under_the_table_in_both_styles() {
        let c = Comparison::new(&records());
        let md = c.render(TableStyle::Markdown);
        assert!(md.starts_with("| family "), "{md}");
        assert!(md.contains("\n- [4] block=256,ipt=200,staged: static arrays need 205824 B > 49152 B (wgsl limit)\n"));
        assert!(md.contains("\nDevices: cuda: GPU; wgsl: GPU.\n"), "{md}");
        let text = c.render(TableStyle::Text);
        assert!(text.contains("\n[7] WRONG: result differs"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() < 200), "every line short:\n{text}");
    }

    #[test]
    fn other_backends_get_a_column_only_when_present() {
        let p = json!({ "n": 4096 });
        let hip = gbps(rec("reduce", BackendKind::Hip, "launch-sized", p.clone()), json!({}), 900.0, 1000.0);
        let cpu = gbps(rec("reduce", BackendKind::Cpu, "launch-sized", p), json!({}), 0.0123, 0.05);
        let c = Comparison::new(&[hip, cpu]);
        let headers: Vec<&str> = c.columns.iter().map(|c| c.header.as_str()).collect();
        assert_eq!(&headers[4..], ["hip launch-sized", "cpu launch-sized"]);
        // The CPU timing has no ratio (a GPU's has), and the table says why.
        assert_eq!(c.rows[0].cells, ["-", "-", "-", "-", "900 (0.90)", "0.0123"]);
        assert_eq!(c.rows[0].anchor, "copy: hip 1000, cpu 0.0500");
        assert!(c.render(TableStyle::Text).contains("are CPU timings"));
        assert_eq!(Comparison::new(&records()).columns.len(), 4);
        assert!(!Comparison::new(&records()).render(TableStyle::Text).contains("CPU timings"), "GPU records only");
    }

    #[test]
    fn problems_whose_short_labels_coincide_are_labelled_in_full() {
        let a = gbps(rec("h", BackendKind::Cuda, "launch-sized", json!({ "n": 64 })), json!({}), 1.0, 2.0);
        let b = gbps(rec("h", BackendKind::Cuda, "launch-sized", json!({ "n": 64, "z": 0 })), json!({}), 1.0, 2.0);
        let c = Comparison::new(&[a, b]);
        assert_eq!([c.rows[0].problem.as_str(), c.rows[1].problem.as_str()], ["n=64", "n=64,z=0"]);
    }

    #[test]
    fn an_interleaved_ratio_is_footnoted_and_a_separate_one_is_not() {
        let p = json!({ "m": 1024, "n": 1024, "k": 1024 });
        let mut ours = rec("hgemm", BackendKind::Cuda, "launch-sized", p.clone());
        (ours.tflops, ours.anchor_tflops, ours.verified) = (Some(500.0), Some(520.0), true);
        ours.set_paired(&crate::measure::Paired::new(vec![[1.0, 0.99]], 64, 3).unwrap());
        let plain = gbps(rec("reduce", BackendKind::Cuda, "launch-sized", json!({ "n": 64 })), json!({}), 1.0, 2.0);
        let c = Comparison::new(&[ours, plain]);
        assert_eq!(c.rows[0].cells[0], "500 (0.99) [1]", "the rounds' median, not 500 / 520");
        assert_eq!(c.rows[1].cells[0], "1.00 (0.50)");
        assert_eq!(c.footnotes, [INTERLEAVED]);
    }
}
