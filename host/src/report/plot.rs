//! SVG plots of bench records (plotters, SVG backend only, the tuner's style): one bar
//! chart per family, and TFLOP/s of GEMM against size. [`render`] is a pure function of
//! the records; [`write`] puts its plots in a folder. `dynsmem bench --plots DIR` and
//! `dynsmem plot RECORDS --out DIR` both call [`write`].
//!
//! A record file (`--json`) is appended to by every run, so it may hold several runs of
//! the same measurement: of records that measure the same thing (family, backend, device,
//! variant, kernel, problem, config) the last one is plotted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use super::Record;
use crate::error::{Error, Result};

mod gemm;

/// One plot: the file name it is written as, and its SVG text.
#[derive(Debug, Clone)]
pub struct Plot {
    pub file: String,
    pub svg: String,
}

/// The figure a family's chart shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metric {
    Gbps,
    Tflops,
}

impl Metric {
    fn of(self, r: &Record) -> Option<f64> {
        match self {
            Metric::Gbps => r.gbps,
            Metric::Tflops => r.tflops,
        }
    }
    fn anchor_of(self, r: &Record) -> Option<f64> {
        match self {
            Metric::Gbps => r.anchor_gbps,
            Metric::Tflops => r.anchor_tflops,
        }
    }
    fn unit(self) -> &'static str {
        match self {
            Metric::Gbps => "GB/s",
            Metric::Tflops => "TFLOP/s",
        }
    }
}

/// Colours of the series, in order (Tableau 10): distinct for the handful of
/// backend/variant series a chart has; past ten they repeat.
const PALETTE: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
];

pub(crate) fn series_colour(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

pub(crate) fn plot_error(what: &str) -> impl Fn(String) -> Error + '_ {
    move |reason| Error::Plot { what: what.into(), reason }
}

/// A problem or config as a short label: `key=value` pairs, a `false` flag left out and
/// a `true` one as its name.
fn compact(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Object(m) => m
            .iter()
            .filter(|(_, v)| v.as_bool() != Some(false))
            .map(|(k, v)| match v {
                serde_json::Value::Bool(true) => k.clone(),
                serde_json::Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join(","),
        serde_json::Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// The last record of each measurement, in the order the measurements first appear.
pub(super) fn latest(records: &[Record]) -> Vec<&Record> {
    let key = |r: &Record| {
        (
            r.family.clone(),
            r.backend,
            r.device.clone(),
            r.variant.clone(),
            r.kernel.clone(),
            r.problem.to_string(),
            r.config.to_string(),
        )
    };
    let mut order = Vec::new();
    let mut last: BTreeMap<_, usize> = BTreeMap::new();
    for (i, r) in records.iter().enumerate() {
        let k = key(r);
        if last.insert(k.clone(), i).is_none() {
            order.push(k);
        }
    }
    order.iter().map(|k| &records[last[k]]).collect()
}

/// The series a record belongs to: backend and variant (an anchor: backend and what it
/// measures, e.g. `cuda cublasSgemm`), and the config keys that tell apart the family's
/// records of one problem, backend and variant (`distinct`).
fn series_name(r: &Record, distinct: &[String]) -> String {
    let mut name = if r.variant == "anchor" {
        format!("{} {}", r.backend, r.kernel)
    } else {
        format!("{} {}", r.backend, r.variant)
    };
    let parts: Vec<String> = distinct
        .iter()
        .filter_map(|k| r.config.get(k).map(|v| compact(&serde_json::json!({ k.clone(): v }))))
        .filter(|s| !s.is_empty())
        .collect();
    if !parts.is_empty() {
        name = format!("{name} {}", parts.join(","));
    }
    name
}

/// Config keys whose value differs between records of the same problem, backend and
/// variant (reduce's default and staged configs, transpose's padding): a series each.
fn distinguishing_keys(records: &[&Record]) -> Vec<String> {
    let mut values: BTreeMap<(String, String, String, String), BTreeMap<String, String>> = BTreeMap::new();
    let mut keys = std::collections::BTreeSet::new();
    for r in records {
        let group = (r.backend.to_string(), r.device.clone(), r.variant.clone(), r.problem.to_string());
        if let serde_json::Value::Object(m) = &r.config {
            let seen = values.entry(group).or_default();
            for (k, v) in m {
                let v = v.to_string();
                match seen.get(k) {
                    Some(old) if *old != v => {
                        keys.insert(k.clone());
                    }
                    None => {
                        seen.insert(k.clone(), v);
                    }
                    _ => {}
                }
            }
        }
    }
    keys.into_iter().collect()
}

/// A number with 3 significant digits.
fn short(v: f64) -> String {
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else if v >= 1.0 {
        2
    } else if v > 0.0 {
        (2 - v.log10().floor() as i32).max(3) as usize
    } else {
        1
    };
    format!("{v:.digits$}")
}

/// A value axis: linear, or log10 where the figures span more than [`LOG_SPREAD`] (a bench
/// on a GPU and on the CPU backend differs by 10^4, and a linear axis shows one of them as
/// nothing). plotters' own log coordinates are a different type per scale; drawing
/// `log10(v)` on a linear axis keeps one chart type, and the labels say the values.
#[derive(Debug, Clone, Copy)]
struct Scale {
    log: bool,
}

/// Largest over smallest figure above which an axis is logarithmic.
const LOG_SPREAD: f64 = 30.0;

impl Scale {
    fn for_values(values: impl Iterator<Item = f64>) -> Scale {
        let (lo, hi) = values.filter(|v| *v > 0.0).fold((f64::INFINITY, 0f64), |(l, h), v| (l.min(v), h.max(v)));
        Scale { log: hi > 0.0 && hi / lo > LOG_SPREAD }
    }
    fn to(self, v: f64) -> f64 {
        if self.log { v.max(f64::MIN_POSITIVE).log10() } else { v }
    }
    fn label(self, x: f64) -> String {
        if self.log { short(10f64.powf(x)) } else { short(x) }
    }
}

/// Draws a legend (a coloured mark and a name per entry; an entry flagged as a tick is
/// drawn as a black bar) in its own strip below a chart, so that it never covers a bar.
pub(crate) fn legend(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    entries: &[(String, RGBColor, bool)],
) -> std::result::Result<(), String> {
    let style = ("sans-serif", 12).into_font();
    for (i, (name, colour, tick)) in entries.iter().enumerate() {
        let y = 8 + 18 * i as i32;
        if *tick {
            area.draw(&PathElement::new(vec![(26, y), (26, y + 12)], colour.stroke_width(2)))
                .map_err(|e| e.to_string())?;
        } else {
            area.draw(&Rectangle::new([(20, y), (32, y + 12)], colour.filled())).map_err(|e| e.to_string())?;
        }
        area.draw(&Text::new(name.clone(), (40, y), style.clone())).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Height of the legend strip for `n` entries.
pub(crate) fn legend_px(n: usize) -> u32 {
    n as u32 * 18 + 16
}

/// One bar of a family chart.
struct Bar {
    label: String,
    series: usize,
    value: f64,
    anchor: Option<f64>,
    ratio: Option<f64>,
}

/// The bar chart of one family: a horizontal bar per verified record (rows grouped by
/// problem; colour by series, named in the legend), its figure in GB/s, or TFLOP/s where
/// the family counts flops. Where the record was compared with an anchor in the same run
/// (the copy bandwidth; cuBLAS), a black tick across the bar marks the anchor's figure and
/// the ratio is written after the bar (`0.852x`, 3 digits). Records that failed are counted in the
/// caption, not drawn.
pub fn family_chart(family: &str, records: &[&Record]) -> Result<String> {
    let err = plot_error("bench bar chart");
    let metric = if records.iter().any(|r| r.gbps.is_some()) { Metric::Gbps } else { Metric::Tflops };
    let distinct = distinguishing_keys(records);
    let drawn: Vec<&&Record> = records.iter().filter(|r| r.verified && metric.of(r).is_some()).collect();
    let failed = records.len() - drawn.len();
    if drawn.is_empty() {
        return Err(err(format!("{family}: no verified record with {}", metric.unit())));
    }
    // Problems in order of appearance; rows problem by problem, series in order within.
    let mut problems: Vec<String> = Vec::new();
    let mut series: Vec<String> = Vec::new();
    for r in &drawn {
        let p = compact(&r.problem);
        if !problems.contains(&p) {
            problems.push(p);
        }
        let s = series_name(r, &distinct);
        if !series.contains(&s) {
            series.push(s);
        }
    }
    let mut bars: Vec<(usize, Bar)> = drawn
        .iter()
        .map(|r| {
            let p = compact(&r.problem);
            let s = series_name(r, &distinct);
            let pi = problems.iter().position(|x| *x == p).expect("listed");
            let si = series.iter().position(|x| *x == s).expect("listed");
            let value = metric.of(r).expect("filtered");
            (pi, Bar { label: format!("{p} | {s}"), series: si, value, anchor: metric.anchor_of(r), ratio: r.ratio })
        })
        .collect();
    bars.sort_by_key(|(p, b)| (*p, b.series));
    let bars: Vec<Bar> = bars.into_iter().map(|(_, b)| b).collect();

    let n = bars.len() as i32;
    let scale = Scale::for_values(bars.iter().flat_map(|b| [Some(b.value), b.anchor]).flatten());
    let top = bars.iter().map(|b| scale.to(b.value.max(b.anchor.unwrap_or(0.0)))).fold(f64::NEG_INFINITY, f64::max);
    // Bars start at 0, or on a log axis a decade below the smallest figure.
    let x0 = if scale.log {
        bars.iter().map(|b| scale.to(b.value)).fold(f64::INFINITY, f64::min).floor() - 1.0
    } else {
        0.0
    };
    // Room after the longest bar for its ratio label.
    let xmax = if top > x0 { top + (top - x0) * 0.18 } else { x0 + 1.0 };
    let longest = bars.iter().map(|b| b.label.chars().count()).max().unwrap_or(10);
    let label_px = (longest as u32 * 7 + 20).clamp(120, 700);
    let mut anchors: Vec<&str> = drawn.iter().filter_map(|r| r.anchor.as_deref()).collect();
    anchors.sort();
    anchors.dedup();
    let mut entries: Vec<(String, RGBColor, bool)> =
        series.iter().enumerate().map(|(i, s)| (s.clone(), series_colour(i), false)).collect();
    if bars.iter().any(|b| b.anchor.is_some()) {
        entries.push((format!("anchor (same run): {}; ratio = bar / anchor", anchors.join("; ")), BLACK, true));
    }
    let chart_px = (n as u32 * 24 + 110).max(240);
    let mut caption = format!("{family}: {} per record{}", metric.unit(), if scale.log { " (log scale)" } else { "" });
    if failed > 0 {
        caption.push_str(&format!(" ({failed} failed or without a figure: not drawn)"));
    }
    let mut svg = String::new();
    {
        let size = (label_px + 760, chart_px + legend_px(entries.len()));
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let (upper, lower) = root.split_vertically(chart_px);
        let mut chart = ChartBuilder::on(&upper)
            .caption(caption, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(label_px)
            // A discrete i32 range includes its end: 0..n-1 is n segments.
            .build_cartesian_2d(x0..xmax, (0..n - 1).into_segmented())
            .map_err(|e| err(e.to_string()))?;
        // Row 0 at the bottom: label from the top, so the first record reads first.
        let row = |i: usize| n - 1 - i as i32;
        let label = |v: &SegmentValue<i32>| match v {
            SegmentValue::CenterOf(i) if *i >= 0 && *i < n => bars[(n - 1 - *i) as usize].label.clone(),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n as usize)
            .y_label_formatter(&label)
            .x_desc(metric.unit())
            .x_label_formatter(&|x| scale.label(*x))
            .draw()
            .map_err(|e| err(e.to_string()))?;
        let end = |v: i32| if v + 1 == n { SegmentValue::Last } else { SegmentValue::Exact(v + 1) };
        let rects = bars.iter().enumerate().map(|(i, b)| {
            let y = row(i);
            Rectangle::new(
                [(x0, SegmentValue::Exact(y)), (scale.to(b.value), end(y))],
                series_colour(b.series).filled(),
            )
        });
        chart.draw_series(rects).map_err(|e| err(e.to_string()))?;
        let ticks = bars.iter().enumerate().filter_map(|(i, b)| {
            let y = row(i);
            let x = scale.to(b.anchor?);
            Some(PathElement::new(vec![(x, SegmentValue::Exact(y)), (x, end(y))], BLACK.stroke_width(2)))
        });
        chart.draw_series(ticks).map_err(|e| err(e.to_string()))?;
        let texts = bars.iter().enumerate().filter_map(|(i, b)| {
            let x = scale.to(b.value.max(b.anchor.unwrap_or(0.0))) + (xmax - x0) * 0.01;
            Some(Text::new(format!("{}x", short(b.ratio?)), (x, SegmentValue::CenterOf(row(i))), ("sans-serif", 12)))
        });
        chart.draw_series(texts).map_err(|e| err(e.to_string()))?;
        legend(&lower, &entries).map_err(&err)?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    Ok(svg)
}

/// Every plot of `records` (the last of each measurement, see the module doc):
/// `<family>.svg` for each family with a verified figure (the copy anchor's own records
/// as the `copy` family), and `<family>-tflops.svg`, TFLOP/s against size, for each family
/// with verified TFLOP/s of `m x n x k` problems (by what the records carry, not by name).
/// A family with records but no verified figure gets no plot.
pub fn render(records: &[Record]) -> Result<Vec<Plot>> {
    use gemm::{gemm_chart, on_size_chart};
    let latest = latest(records);
    let mut families: Vec<&str> = Vec::new();
    for r in &latest {
        if !families.contains(&r.family.as_str()) {
            families.push(&r.family);
        }
    }
    let mut plots = Vec::new();
    for family in families {
        let of: Vec<&Record> = latest.iter().copied().filter(|r| r.family == family).collect();
        if !of.iter().any(|r| r.verified && (r.gbps.is_some() || r.tflops.is_some())) {
            continue;
        }
        plots.push(Plot { file: format!("{}.svg", file_stem(family)), svg: family_chart(family, &of)? });
        if of.iter().any(|r| on_size_chart(r)) {
            plots.push(Plot { file: format!("{}-tflops.svg", file_stem(family)), svg: gemm_chart(family, &of)? });
        }
    }
    Ok(plots)
}

/// A family name as a file name: anything but letters, digits, `-` and `_` becomes `_`
/// (names come from record files, which may be anyone's).
pub(crate) fn file_stem(family: &str) -> String {
    let s: String =
        family.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    if s.is_empty() { "_".into() } else { s }
}

/// Writes the plots of [`render`] into `dir` (created if missing), replacing files of the
/// same names; returns their paths.
pub fn write(records: &[Record], dir: &Path) -> Result<Vec<PathBuf>> {
    save(render(records)?, dir)
}

/// Writes `plots` into `dir` (created if missing), replacing files of the same names;
/// returns their paths.
pub(crate) fn save(plots: Vec<Plot>, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io { path: dir.into(), source })?;
    let mut paths = Vec::new();
    for p in plots {
        let path = dir.join(&p.file);
        std::fs::write(&path, p.svg).map_err(|source| Error::Io { path: path.clone(), source })?;
        paths.push(path);
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Backend, BackendKind, DeviceInfo};
    use crate::report::Provenance;

    fn device(backend: BackendKind, name: &str) -> DeviceInfo {
        let mut info = crate::backend::cpu::CpuBackend::new().info().clone();
        info.backend = backend;
        info.name = name.into();
        info
    }

    fn rec(family: &str, backend: BackendKind, variant: &str, problem: serde_json::Value) -> Record {
        let prov = Provenance { rustc: "r".into(), commit: "c".into(), command: "x".into(), image: "i".into() };
        let mut r = Record::new(family, variant, family, &device(backend, "GPU"), &prov);
        r.problem = problem;
        r.config = serde_json::json!({ "block": 256 });
        r.verified = true;
        r
    }

    /// The texts of an SVG's `<text>` elements.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| t.split_once('>'))
            .map(|(_, rest)| rest.split('<').next().unwrap().trim().to_string())
            .collect()
    }

    #[test]
    fn a_bar_per_record_with_its_anchor_tick_and_ratio() {
        let mut a = rec("reduce", BackendKind::Cuda, "launch-sized", serde_json::json!({ "n": 1024 }));
        a.gbps = Some(2500.0);
        a.anchor = Some("cuda device-to-device copy".into());
        a.anchor_gbps = Some(2990.0);
        a.ratio = Some(2500.0 / 2990.0);
        let mut b = rec("reduce", BackendKind::Wgsl, "wgsl-literal", serde_json::json!({ "n": 1024 }));
        b.gbps = Some(1000.0);
        let mut c = b.clone();
        c.variant = "wgsl-override".into();
        c.verified = false;
        c.gbps = None;
        c.error = Some("boom".into());
        let svg = family_chart("reduce", &[&a, &b, &c]).unwrap();
        let t = texts(&svg);
        assert!(t.iter().any(|s| s == "cuda launch-sized"), "{t:?}");
        assert!(t.iter().any(|s| s == "wgsl wgsl-literal"), "{t:?}");
        assert!(t.iter().any(|s| s == "0.836x"), "the ratio labelled: {t:?}");
        assert!(t.iter().any(|s| s == "n=1024 | cuda launch-sized"), "{t:?}");
        assert!(t.iter().any(|s| s.starts_with("anchor (same run): cuda device-to-device copy;")), "{t:?}");
        assert!(!t[0].contains("log scale"), "2500 and 1000 GB/s on a linear axis: {t:?}");
        assert!(t.iter().any(|s| s.contains("1 failed")), "{t:?}");
        assert!(!t.iter().any(|s| s.contains("wgsl-override")), "a failed record is not a series: {t:?}");
        // A CPU figure 10^5 times smaller: a log axis, labelled with values.
        let mut cpu = rec("reduce", BackendKind::Cpu, "launch-sized", serde_json::json!({ "n": 64 }));
        cpu.gbps = Some(0.025);
        let t = texts(&family_chart("reduce", &[&a, &b, &cpu]).unwrap());
        assert!(t[0].contains("(log scale)"), "{t:?}");
        assert!(t.iter().any(|s| s == "1000") && t.iter().any(|s| s == "0.0100"), "decade labels: {t:?}");
    }

    #[test]
    fn configs_that_tell_records_apart_name_their_series() {
        let mut a = rec("transpose", BackendKind::Wgsl, "wgsl-literal", serde_json::json!({ "rows": 64, "cols": 64 }));
        a.config = serde_json::json!({ "block": 256, "pad": 1 });
        a.gbps = Some(10.0);
        let mut b = a.clone();
        b.config = serde_json::json!({ "block": 256, "pad": 0 });
        b.gbps = Some(8.0);
        let svg = family_chart("transpose", &[&a, &b]).unwrap();
        let t = texts(&svg);
        assert!(
            t.iter().any(|s| s == "wgsl wgsl-literal pad=1") && t.iter().any(|s| s == "wgsl wgsl-literal pad=0"),
            "{t:?}"
        );
        assert!(!t.iter().any(|s| s.contains("block=")), "block is the same in both: {t:?}");
    }

    #[test]
    fn render_plots_each_family_and_gemm_against_size_from_the_last_run() {
        let gemm = |side: u32| serde_json::json!({ "m": side, "n": side, "k": side, "f16_inputs": false });
        let mut records = Vec::new();
        for side in [1024, 4096] {
            let mut cublas = rec("sgemm", BackendKind::Cuda, "anchor", gemm(side));
            cublas.kernel = "cublasSgemm".into();
            cublas.tflops = Some(50.0);
            let mut ours = rec("sgemm", BackendKind::Cuda, "launch-sized", gemm(side));
            ours.tflops = Some(40.0);
            ours.anchor = Some("cuda cublasSgemm".into());
            ours.anchor_tflops = Some(50.0);
            ours.ratio = Some(0.8);
            let mut wgsl = rec("sgemm", BackendKind::Wgsl, "wgsl-override", gemm(side));
            wgsl.tflops = Some(20.0);
            wgsl.anchor = Some("cuda cublasSgemm".into());
            wgsl.anchor_tflops = Some(50.0);
            wgsl.ratio = Some(0.4);
            records.extend([cublas, ours, wgsl]);
            let mut h = rec(
                "hgemm",
                BackendKind::Cuda,
                "launch-sized",
                serde_json::json!({ "m": side, "n": side, "k": side, "dtype": "bf16", "out": "f32" }),
            );
            h.tflops = Some(500.0);
            records.push(h);
        }
        let mut copy = rec("copy", BackendKind::Cuda, "anchor", serde_json::json!({ "bytes": 4096 }));
        copy.gbps = Some(2990.0);
        // An earlier run of the same measurement: replaced by the later one.
        let mut old = copy.clone();
        old.gbps = Some(1.0);
        records.insert(0, old);
        records.push(copy);
        let kept: Vec<Option<f64>> = latest(&records).iter().filter(|r| r.family == "copy").map(|r| r.gbps).collect();
        assert_eq!(kept, [Some(2990.0)], "the later copy record, in the place of the first");
        let plots = render(&records).unwrap();
        let files: Vec<&str> = plots.iter().map(|p| p.file.as_str()).collect();
        assert_eq!(files, ["copy.svg", "sgemm.svg", "sgemm-tflops.svg", "hgemm.svg", "hgemm-tflops.svg"]);
        let hgemm = texts(&plots[4].svg);
        assert!(hgemm.iter().any(|s| s == "cuda launch-sized dtype=bf16 out=f32"), "{hgemm:?}");
        assert!(hgemm.iter().any(|s| s.starts_with("hgemm: TFLOP/s against size")), "{hgemm:?}");
        let (copy, plots) = (&plots[0], &plots[1..]);
        let line = texts(&plots[1].svg);
        for name in ["cuda cublasSgemm", "cuda launch-sized", "wgsl wgsl-override"] {
            assert!(line.iter().any(|s| s == name), "{name}: {line:?}");
        }
        assert_eq!(plots[1].svg.matches("<circle").count(), 6, "a point per record");
        let bars = texts(&plots[0].svg);
        assert!(bars.iter().any(|s| s == "0.400x") && bars.iter().any(|s| s == "0.800x"), "{bars:?}");
        assert!(bars.iter().any(|s| s == "k=4096,m=4096,n=4096 | cuda cublasSgemm"), "{bars:?}");
        let copy_labels = texts(&copy.svg);
        assert!(copy_labels.iter().any(|s| s == "cuda copy"), "{copy_labels:?}");
    }

    #[test]
    fn nothing_to_plot_is_no_plot_and_names_are_safe_file_names() {
        let mut r = rec("../etc", BackendKind::Cpu, "launch-sized", serde_json::json!({ "n": 1 }));
        r.gbps = Some(1.0);
        let plots = render(&[r.clone()]).unwrap();
        assert_eq!(plots[0].file, "___etc.svg");
        r.verified = false;
        assert!(render(&[r]).unwrap().is_empty());
    }
}
