//! `decomposition.svg`: per problem, how far plain WGSL (the best of WGSL literal and WGSL
//! override) is from launch-sized CUDA, split three ways: the cost of static sizing
//! (launch-sized over cuda-static: the same algorithm in CUDA C with static `__shared__`
//! arrays), the cost of the WGSL toolchain (cuda-static over the best WGSL, subgroup twins
//! included) and the cost of idiom (the best WGSL over plain WGSL: what subgroup
//! operations win back; absent where the family has no subgroup twin).
//!
//! The parts are log2 ratios of throughputs (GB/s or TFLOP/s, the best verified config of
//! each, as in [`super::compare`]), so they add up:
//! `log2(LS/plain) = log2(LS/CS) + log2(CS/best) + log2(best/plain)`. A horizontal bar per
//! problem (grouped by family) holds the parts end to end from 1x, each of either sign
//! (cuda-static can beat launch-sized), with a black tick at their sum; the axis is
//! labelled as factors (`0.5x`, `1x`, `2x`, ...). A problem missing one of the figures is
//! drawn with what it has (its label says what is missing); one with fewer than two is
//! listed as not drawn.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::Record;
use super::compare::Comparison;
use super::plot::{Plot, legend, legend_px, plot_error, series_colour};
use super::table::Table;
use crate::backend::BackendKind;
use crate::error::Result;

/// One problem's parts, in log2 units (positive: the first figure is the larger).
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    /// `family problem`.
    pub label: String,
    /// log2(launch-sized / cuda-static).
    pub static_sizing: Option<f64>,
    /// log2(cuda-static / best WGSL).
    pub toolchain: Option<f64>,
    /// log2(best WGSL / plain WGSL): `None` without a wgsl-subgroup figure.
    pub idiom: Option<f64>,
    /// log2(launch-sized / plain WGSL), computed from the two figures themselves.
    pub total: Option<f64>,
}

/// The problems drawn, and the labels of those that are not.
#[derive(Debug, Clone, PartialEq)]
pub struct Decomposition {
    pub splits: Vec<Split>,
    pub skipped: Vec<String>,
}

/// The decomposition of `records` (of repeated measurements the last counts).
pub fn decompose(records: &[Record]) -> Decomposition {
    let c = Comparison::new(records);
    let mut d = Decomposition { splits: Vec::new(), skipped: Vec::new() };
    for row in &c.rows {
        let label = format!("{} {}", row.family, row.problem);
        let ls = c.figure(row, BackendKind::Cuda, "launch-sized");
        let cs = c.figure(row, BackendKind::Cuda, "cuda-static");
        let best_of = |variants: &[&str]| {
            variants.iter().filter_map(|v| c.figure(row, BackendKind::Wgsl, v)).filter(|v| *v > 0.0).reduce(f64::max)
        };
        let plain = best_of(&["wgsl-literal", "wgsl-override"]);
        let subgroup = best_of(&["wgsl-subgroup"]);
        let best = best_of(&["wgsl-literal", "wgsl-override", "wgsl-subgroup"]);
        let part = |a: Option<f64>, b: Option<f64>| Some((a.filter(|v| *v > 0.0)? / b.filter(|v| *v > 0.0)?).log2());
        let split = Split {
            label: label.clone(),
            static_sizing: part(ls, cs),
            toolchain: part(cs, best),
            idiom: subgroup.and(part(best, plain)),
            total: part(ls, plain),
        };
        if split.static_sizing.is_none() && split.toolchain.is_none() && split.total.is_none() {
            d.skipped.push(label);
        } else {
            d.splits.push(split);
        }
    }
    d
}

impl Decomposition {
    /// The parts as a table, a row per problem: each a factor (`1.31x`: the first figure
    /// over the second), `-` where a figure is missing. The columns multiply: launch-sized
    /// over plain WGSL = sizing x toolchain x idiom (idiom `-` counts as 1x: no subgroup twin).
    pub fn table(&self) -> Table {
        let mut t = Table::new(&[
            "problem",
            "launch-sized / plain WGSL",
            "sizing: launch-sized / cuda-static",
            "toolchain: cuda-static / best WGSL",
            "idiom: best WGSL / plain WGSL",
        ]);
        let cell = |l: Option<f64>| l.map(factor).unwrap_or_else(|| "-".into());
        for s in &self.splits {
            t.push(vec![s.label.clone(), cell(s.total), cell(s.static_sizing), cell(s.toolchain), cell(s.idiom)]);
        }
        t
    }
}

/// `2^l` as a factor: `1.31x`, `12.5x`.
fn factor(l: f64) -> String {
    let f = l.exp2();
    if f >= 10.0 { format!("{f:.1}x") } else { format!("{f:.2}x") }
}

/// An axis tick at an integer log2 as a factor (`0.25x`, `1x`, `8x`); other ticks unlabelled.
fn tick(x: f64) -> String {
    let i = x.round();
    if (x - i).abs() > 1e-9 {
        return String::new();
    }
    format!("{}x", i.exp2())
}

/// Which part of a problem's height a segment takes.
#[derive(Clone, Copy)]
enum Lane {
    Upper,
    Lower,
    Whole,
}

/// What a bar shows: its segments (start, end, lane, colour) from 1x, its total tick, its
/// label.
struct Bar {
    label: String,
    segments: Vec<(f64, f64, Lane, RGBColor)>,
    tick: Option<f64>,
}

const GREY: RGBColor = RGBColor(170, 170, 170);

fn bar(s: &Split) -> Bar {
    let (static_c, wgsl_c, idiom_c) = (series_colour(0), series_colour(1), series_colour(2));
    match (s.static_sizing, s.toolchain, s.total) {
        (Some(a), Some(b), total) => {
            let mut segments = vec![(0.0, a, Lane::Upper, static_c), (a, a + b, Lane::Lower, wgsl_c)];
            let idiom = s.idiom.map(|c| {
                segments.push((a + b, a + b + c, Lane::Lower, idiom_c));
                format!(" x {} idiom", factor(c))
            });
            let sum = a + b + s.idiom.unwrap_or(0.0);
            Bar {
                label: format!(
                    "{}: {} = {} static x {} WGSL{}",
                    s.label,
                    factor(sum),
                    factor(a),
                    factor(b),
                    idiom.unwrap_or_default()
                ),
                segments,
                tick: total,
            }
        }
        (None, None, Some(t)) => Bar {
            label: format!("{}: {} (no cuda-static: not split)", s.label, factor(t)),
            segments: vec![(0.0, t, Lane::Whole, GREY)],
            tick: Some(t),
        },
        (Some(a), None, _) => Bar {
            label: format!("{}: {} static (no WGSL)", s.label, factor(a)),
            segments: vec![(0.0, a, Lane::Upper, static_c)],
            tick: None,
        },
        (None, Some(b), _) => Bar {
            label: format!("{}: {} WGSL (no launch-sized)", s.label, factor(b)),
            segments: vec![(0.0, b, Lane::Lower, wgsl_c)],
            tick: None,
        },
        (None, None, None) => Bar { label: s.label.clone(), segments: Vec::new(), tick: None },
    }
}

/// `head` then `items` joined by `; `, in lines of at most `width` characters where the
/// items allow (an item is never split).
fn wrap(head: &str, items: &[String], width: usize) -> Vec<String> {
    let mut lines: Vec<String> = vec![head.to_string()];
    for (i, item) in items.iter().enumerate() {
        let last = lines.last_mut().expect("one line");
        let piece = if i + 1 < items.len() { format!("{item};") } else { item.clone() };
        if i > 0 && last.chars().count() + 1 + piece.chars().count() > width {
            lines.push(format!("  {piece}"));
        } else {
            last.push(' ');
            last.push_str(&piece);
        }
    }
    lines
}

/// The SVG of a decomposition with at least one problem drawn.
pub fn chart(d: &Decomposition) -> Result<String> {
    let err = plot_error("decomposition");
    if d.splits.is_empty() {
        return Err(err("no problem with two of launch-sized CUDA, cuda-static and WGSL verified".into()));
    }
    let bars: Vec<Bar> = d.splits.iter().map(bar).collect();
    let n = bars.len() as i32;
    let ends = bars.iter().flat_map(|b| b.segments.iter().flat_map(|s| [s.0, s.1]).chain(b.tick));
    let (lo, hi) = ends.fold((0f64, 0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let (x0, x1) = (lo.floor().min(-1.0), hi.ceil().max(1.0));
    let mut entries: Vec<(String, RGBColor, bool)> = vec![
        ("static sizing: CUDA launch-sized over cuda-static".into(), series_colour(0), false),
        ("WGSL toolchain: cuda-static over the best WGSL (subgroup twins included)".into(), series_colour(1), false),
    ];
    if d.splits.iter().any(|s| s.idiom.is_some()) {
        entries.push((
            "idiom: the best WGSL over the best of WGSL literal and override (subgroups)".into(),
            series_colour(2),
            false,
        ));
    }
    if bars.iter().any(|b| b.segments.iter().any(|s| s.3 == GREY)) {
        entries.push(("launch-sized over WGSL, not split: no verified cuda-static figure".into(), GREY, false));
    }
    entries.push((
        "total: launch-sized over WGSL literal/override (right of 1x: launch-sized is faster)".into(),
        BLACK,
        true,
    ));
    if !d.skipped.is_empty() {
        let head = "not drawn (fewer than two of the three figures):";
        entries.extend(wrap(head, &d.skipped, 110).into_iter().map(|l| (l, WHITE, false)));
    }
    let longest = bars.iter().map(|b| b.label.chars().count()).max().unwrap_or(10);
    let label_px = (longest as u32 * 7 + 20).clamp(160, 760);
    let chart_px = (n as u32 * 26 + 110).max(240);
    let mut svg = String::new();
    {
        let size = (label_px + 640, chart_px + legend_px(entries.len()));
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let (upper, lower) = root.split_vertically(chart_px);
        // Problem i is centred on y = n - 1 - i (the first at the top): static sizing in the
        // upper half, the WGSL toolchain in the lower half starting where static sizing
        // ends, so parts of opposite signs never cover each other.
        let mut chart = ChartBuilder::on(&upper)
            .caption("launch-sized CUDA over plain WGSL: sizing, toolchain, idiom (log2 axis)", ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(label_px)
            .build_cartesian_2d(x0..x1, -0.5..n as f64 - 0.5)
            .map_err(|e| err(e.to_string()))?;
        let centre = |i: usize| (n - 1 - i as i32) as f64;
        let label = |y: &f64| {
            let r = y.round();
            let i = n - 1 - r as i32;
            if (y - r).abs() < 1e-9 && i >= 0 && i < n { bars[i as usize].label.clone() } else { String::new() }
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(WHITE)
            .y_labels(n as usize)
            .y_label_formatter(&label)
            .x_labels((x1 - x0) as usize + 1)
            .x_label_formatter(&|x| tick(*x))
            .x_desc("factor (log2 axis)")
            .draw()
            .map_err(|e| err(e.to_string()))?;
        let rects = bars.iter().enumerate().flat_map(|(i, b)| {
            let y = centre(i);
            b.segments.iter().map(move |&(a, z, lane, colour)| {
                let (lo, hi) = match lane {
                    Lane::Upper => (y, y + 0.38),
                    Lane::Lower => (y - 0.38, y),
                    Lane::Whole => (y - 0.38, y + 0.38),
                };
                Rectangle::new([(a.min(z), lo), (a.max(z), hi)], colour.filled())
            })
        });
        chart.draw_series(rects).map_err(|e| err(e.to_string()))?;
        let one = PathElement::new(vec![(0.0, -0.5), (0.0, n as f64 - 0.5)], BLACK.stroke_width(1));
        chart.draw_series(std::iter::once(one)).map_err(|e| err(e.to_string()))?;
        let ticks = bars.iter().enumerate().filter_map(|(i, b)| {
            let (x, y) = (b.tick?, centre(i));
            Some(PathElement::new(vec![(x, y - 0.44), (x, y + 0.44)], BLACK.stroke_width(3)))
        });
        chart.draw_series(ticks).map_err(|e| err(e.to_string()))?;
        legend(&lower, &entries).map_err(&err)?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    Ok(svg)
}

/// `decomposition.svg` of `records`, or `None` where no problem can be drawn (no CUDA
/// launch-sized or cuda-static record with a twin: a machine without CUDA).
pub fn render(records: &[Record]) -> Result<Option<Plot>> {
    let d = decompose(records);
    if d.splits.is_empty() {
        return Ok(None);
    }
    Ok(Some(Plot { file: "decomposition.svg".into(), svg: chart(&d)? }))
}

/// Writes [`render`]'s plot into `dir` (created if missing); its path, or `None` when
/// there is nothing to draw (nothing is written then).
pub fn write(records: &[Record], dir: &Path) -> Result<Option<PathBuf>> {
    match render(records)? {
        Some(p) => Ok(super::plot::save(vec![p], dir)?.pop()),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Backend;
    use crate::report::Provenance;

    fn rec(family: &str, backend: BackendKind, variant: &str, n: u64, gbps: Option<f64>) -> Record {
        let prov = Provenance { rustc: "r".into(), commit: "c".into(), command: "x".into(), image: "i".into() };
        let mut info = crate::backend::cpu::CpuBackend::new().info().clone();
        info.backend = backend;
        let mut r = Record::new(family, variant, family, &info, &prov);
        r.problem = serde_json::json!({ "n": n });
        r.config = serde_json::json!({ "block": 256 });
        r.gbps = gbps;
        r.verified = gbps.is_some();
        if gbps.is_none() {
            r.error = Some(
                "k: asks for 99999 bytes of static workgroup memory, over the cuda limit of 49152 bytes (X)".into(),
            );
        }
        r
    }

    fn records() -> Vec<Record> {
        use BackendKind::{Cuda, Wgsl};
        vec![
            // Every figure: the best WGSL variant is the override one.
            rec("reduce", Cuda, "launch-sized", 1024, Some(3000.0)),
            rec("reduce", Cuda, "cuda-static", 1024, Some(2400.0)),
            rec("reduce", Wgsl, "wgsl-literal", 1024, Some(600.0)),
            rec("reduce", Wgsl, "wgsl-override", 1024, Some(610.0)),
            // cuda-static beats launch-sized: a negative static part.
            rec("scan", Cuda, "launch-sized", 1024, Some(2000.0)),
            rec("scan", Cuda, "cuda-static", 1024, Some(2500.0)),
            rec("scan", Wgsl, "wgsl-literal", 1024, Some(500.0)),
            // cuda-static refused: the total only.
            rec("softmax", Cuda, "launch-sized", 1024, Some(1400.0)),
            rec("softmax", Cuda, "cuda-static", 1024, None),
            rec("softmax", Wgsl, "wgsl-literal", 1024, Some(700.0)),
            // A subgroup twin: the idiom part.
            rec("rmsnorm", Cuda, "launch-sized", 1024, Some(3200.0)),
            rec("rmsnorm", Cuda, "cuda-static", 1024, Some(3000.0)),
            rec("rmsnorm", Wgsl, "wgsl-literal", 1024, Some(1000.0)),
            rec("rmsnorm", Wgsl, "wgsl-subgroup", 1024, Some(2000.0)),
            // Launch-sized alone: not drawn.
            rec("histogram", Cuda, "launch-sized", 1024, Some(2600.0)),
            rec("histogram", Cuda, "cuda-static", 1024, None),
        ]
    }

    #[test]
    fn the_two_parts_add_up_to_launch_sized_over_the_best_wgsl() {
        let d = decompose(&records());
        let labels: Vec<&str> = d.splits.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["reduce n=1024", "scan n=1024", "softmax n=1024", "rmsnorm n=1024"]);
        assert_eq!(d.skipped, ["histogram n=1024"]);
        let r = &d.splits[0];
        let (a, b, t) = (r.static_sizing.unwrap(), r.toolchain.unwrap(), r.total.unwrap());
        assert!((a - (3000.0f64 / 2400.0).log2()).abs() < 1e-12, "{a}");
        assert!((b - (2400.0f64 / 610.0).log2()).abs() < 1e-12, "the best WGSL variant: {b}");
        assert!((t - (3000.0f64 / 610.0).log2()).abs() < 1e-12, "{t}");
        assert!((a + b - t).abs() < 1e-12, "{a} + {b} != {t}");
        let s = &d.splits[1];
        assert!(s.static_sizing.unwrap() < 0.0, "cuda-static is faster here");
        assert!((s.static_sizing.unwrap() + s.toolchain.unwrap() - s.total.unwrap()).abs() < 1e-12);
        let p = &d.splits[2];
        assert_eq!((p.static_sizing, p.toolchain), (None, None));
        assert!((p.total.unwrap() - 1.0).abs() < 1e-12, "1400 over 700 is 2x: {p:?}");
        assert_eq!((r.idiom, s.idiom, p.idiom), (None, None, None), "no subgroup twin, no idiom part");
        let q = &d.splits[3];
        let (a, b, c, t) = (q.static_sizing.unwrap(), q.toolchain.unwrap(), q.idiom.unwrap(), q.total.unwrap());
        assert!((b - 1.5f64.log2()).abs() < 1e-12, "cuda-static over the subgroup twin: {b}");
        assert!((c - 1.0).abs() < 1e-12, "the subgroup twin is 2x the literal one: {c}");
        assert!((t - 3.2f64.log2()).abs() < 1e-12, "launch-sized over the literal twin: {t}");
        assert!((a + b + c - t).abs() < 1e-12, "{a} + {b} + {c} != {t}");
    }

    #[test]
    fn the_svg_labels_each_problem_with_its_factors_and_is_written() {
        let plot = render(&records()).unwrap().unwrap();
        assert_eq!(plot.file, "decomposition.svg");
        let svg = &plot.svg;
        assert!(svg.starts_with("<svg") && svg.len() > 1000, "{svg}");
        assert!(svg.contains("reduce n=1024: 4.92x = 1.25x static x 3.93x WGSL"), "{svg}");
        assert!(svg.contains("scan n=1024: 4.00x = 0.80x static x 5.00x WGSL"), "{svg}");
        assert!(svg.contains("softmax n=1024: 2.00x (no cuda-static: not split)"), "{svg}");
        assert!(svg.contains("rmsnorm n=1024: 3.20x = 1.07x static x 1.50x WGSL x 2.00x idiom"), "{svg}");
        assert!(svg.contains("not drawn (fewer than two of the three figures): histogram n=1024"), "{svg}");
        for t in ["0.5x", "1x", "2x", "4x"] {
            assert!(svg.contains(&format!(">{t}<")) || svg.contains(&format!(">\n{t}")), "tick {t}: {svg}");
        }
        let dir = std::env::temp_dir().join(format!("dynsmem-decompose-{}", std::process::id()));
        let path = write(&records(), &dir).unwrap().unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() > 1000);
        let _ = std::fs::remove_dir_all(&dir);
        // Without CUDA there is nothing to split: no plot, no file.
        let wgsl_only: Vec<Record> = records().into_iter().filter(|r| r.backend == BackendKind::Wgsl).collect();
        assert!(render(&wgsl_only).unwrap().is_none());
    }

    #[test]
    fn ticks_are_factors_at_whole_log2_steps() {
        assert_eq!([tick(-2.0), tick(-1.0), tick(0.0), tick(3.0), tick(0.5)], ["0.25x", "0.5x", "1x", "8x", ""]);
        assert_eq!([factor(0.0), factor(-1.0), factor(4.0)], ["1.00x", "0.50x", "16.0x"]);
    }
}
