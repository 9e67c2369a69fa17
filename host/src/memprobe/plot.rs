//! SVG plots of probe records (`dynsmem probe --plots DIR`): per chart, one swept value of
//! the points along the x axis (in the order first measured), one figure up the y axis, a
//! line per series (the point's other values, the backend and variant). [`render`] is a
//! pure function of the records; of repeated records of one point the last counts.

use std::path::{Path, PathBuf};

use plotters::prelude::*;
use serde_json::Value;

use super::{ProbeKind, ProbeRecord};
use crate::error::Result;
use crate::report::plot::{Plot, legend, legend_px, plot_error, save, series_colour};

/// The figure a chart shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Figure {
    Cycles,
    Gbps,
    Gops,
    /// Occupancy: time over the time without padding.
    Slowdown,
    /// Occupancy: resident blocks per multiprocessor.
    Resident,
}

impl Figure {
    fn label(self, kind: ProbeKind) -> String {
        match self {
            Figure::Cycles => kind.cycles_unit().to_string(),
            Figure::Gbps => "GB/s (device time)".into(),
            Figure::Gops => "billion operations per second".into(),
            Figure::Slowdown => "time / time without padding".into(),
            Figure::Resident => "resident blocks per multiprocessor".into(),
        }
    }
}

/// One chart: the probe, its x value, its figure, the point values that tell series apart.
struct Chart {
    kind: ProbeKind,
    x: &'static str,
    figure: Figure,
    series: &'static [&'static str],
    file: &'static str,
}

const CHARTS: &[Chart] = &[
    Chart { kind: ProbeKind::SharedLatency, x: "bytes", figure: Figure::Cycles, series: &[], file: "shared-latency" },
    Chart {
        kind: ProbeKind::SharedStride,
        x: "stride",
        figure: Figure::Cycles,
        series: &["block"],
        file: "shared-stride-cycles",
    },
    Chart {
        kind: ProbeKind::SharedStride,
        x: "stride",
        figure: Figure::Gbps,
        series: &["block"],
        file: "shared-stride-gbps",
    },
    Chart { kind: ProbeKind::SharedWidth, x: "width", figure: Figure::Gbps, series: &["block"], file: "shared-width" },
    Chart { kind: ProbeKind::DsmemLatency, x: "cluster", figure: Figure::Cycles, series: &[], file: "dsmem-latency" },
    Chart { kind: ProbeKind::DsmemBandwidth, x: "cluster", figure: Figure::Gbps, series: &[], file: "dsmem-bandwidth" },
    Chart {
        kind: ProbeKind::GlobalLatency,
        x: "bytes",
        figure: Figure::Cycles,
        series: &["hint"],
        file: "global-latency",
    },
    Chart {
        kind: ProbeKind::GlobalBandwidth,
        x: "width",
        figure: Figure::Gbps,
        series: &["hint"],
        file: "global-bandwidth",
    },
    Chart {
        kind: ProbeKind::Atomics,
        x: "contention",
        figure: Figure::Gops,
        series: &["memory", "op"],
        file: "atomics",
    },
    Chart { kind: ProbeKind::Fences, x: "scope", figure: Figure::Cycles, series: &[], file: "fences" },
    Chart {
        // Padding, not the padded bytes: the families start from bytes of their own.
        kind: ProbeKind::Occupancy,
        x: "padding",
        figure: Figure::Slowdown,
        series: &["family"],
        file: "occupancy-time",
    },
    Chart {
        kind: ProbeKind::Occupancy,
        x: "padding",
        figure: Figure::Resident,
        series: &["family"],
        file: "occupancy-resident",
    },
];

/// A point value as a label: byte counts in KB or MB.
fn label(key: &str, v: &Value) -> String {
    match (key, v.as_u64()) {
        ("bytes" | "padding", Some(b)) if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        ("bytes" | "padding", Some(b)) if b >= 1 << 20 => format!("{:.1}M", b as f64 / (1u64 << 20) as f64),
        ("bytes" | "padding", Some(b)) if b >= 1024 => format!("{:.0}K", b as f64 / 1024.0),
        _ => match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        },
    }
}

/// The figure of a verified record (occupancy figures relative to `base`, the series'
/// first record).
fn figure(f: Figure, r: &ProbeRecord, base: Option<&ProbeRecord>) -> Option<f64> {
    match f {
        Figure::Cycles => r.cycles,
        Figure::Gbps => r.record.gbps,
        Figure::Gops => r.gops,
        Figure::Slowdown => r.record.median_ms.zip(base.and_then(|b| b.record.median_ms)).map(|(m, b)| m / b),
        Figure::Resident => r.resident_blocks.map(f64::from),
    }
}

/// The chart `c` of `records`, or `None` when no record has its figure.
fn chart(c: &Chart, records: &[ProbeRecord]) -> Result<Option<String>> {
    let err = plot_error(c.file);
    let mut xs: Vec<String> = Vec::new();
    let mut series: Vec<(String, Vec<(usize, f64)>)> = Vec::new();
    let mut firsts: Vec<(String, ProbeRecord)> = Vec::new();
    for r in records.iter().filter(|r| r.probe == c.kind && r.record.verified) {
        let Some(xv) = r.point.get(c.x) else { continue };
        let xl = label(c.x, xv);
        let x = xs.iter().position(|s| *s == xl).unwrap_or_else(|| {
            xs.push(xl.clone());
            xs.len() - 1
        });
        let mut name: Vec<String> =
            c.series.iter().filter_map(|k| r.point.get(*k).map(|v| format!("{k} {}", label(k, v)))).collect();
        name.push(format!("{} {}", r.record.backend, r.record.variant));
        let name = name.join(", ");
        if !firsts.iter().any(|(n, _)| *n == name) {
            firsts.push((name.clone(), r.clone()));
        }
        let base = firsts.iter().find(|(n, _)| *n == name).map(|(_, b)| b);
        let Some(y) = figure(c.figure, r, base) else { continue };
        let i = series.iter().position(|(n, _)| *n == name).unwrap_or_else(|| {
            series.push((name.clone(), Vec::new()));
            series.len() - 1
        });
        series[i].1.retain(|p| p.0 != x);
        series[i].1.push((x, y));
    }
    series.retain(|(_, p)| !p.is_empty());
    if series.is_empty() {
        return Ok(None);
    }
    let ymax = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)).fold(0.0f64, f64::max).max(1e-9) * 1.1;
    let entries: Vec<(String, RGBColor, bool)> =
        series.iter().enumerate().map(|(i, (n, _))| (n.clone(), series_colour(i), false)).collect();
    let width = (240 + 26 * xs.len() as u32).max(640);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 480 + legend_px(entries.len()))).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let (upper, lower) = root.split_vertically(480);
        let mut chart = ChartBuilder::on(&upper)
            .caption(format!("{}: {} against {}", c.kind, c.figure.label(c.kind), c.x), ("sans-serif", 15))
            .margin(12)
            .x_label_area_size(70)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5f64..xs.len() as f64 - 0.5, 0.0..ymax)
            .map_err(|e| err(e.to_string()))?;
        chart
            .configure_mesh()
            .x_labels(xs.len())
            .x_label_style(("sans-serif", 11).into_font().transform(FontTransform::Rotate90))
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    xs.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .x_desc(c.x)
            .y_desc(c.figure.label(c.kind))
            .light_line_style(WHITE)
            .draw()
            .map_err(|e| err(e.to_string()))?;
        for (i, (_, pts)) in series.iter().enumerate() {
            let colour = series_colour(i);
            let mut pts = pts.clone();
            pts.sort_by_key(|p| p.0);
            chart
                .draw_series(std::iter::once(PathElement::new(
                    pts.iter().map(|&(x, y)| (x as f64, y)).collect::<Vec<_>>(),
                    colour.stroke_width(2),
                )))
                .map_err(|e| err(e.to_string()))?;
            chart
                .draw_series(pts.iter().map(|&(x, y)| Circle::new((x as f64, y), 3, colour.filled())))
                .map_err(|e| err(e.to_string()))?;
        }
        legend(&lower, &entries).map_err(&err)?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    Ok(Some(svg))
}

/// Every chart with at least one verified record: `probe-<chart>.svg`.
pub fn render(records: &[ProbeRecord]) -> Result<Vec<Plot>> {
    let mut plots = Vec::new();
    for c in CHARTS {
        if let Some(svg) = chart(c, records)? {
            plots.push(Plot { file: format!("probe-{}.svg", c.file), svg });
        }
    }
    Ok(plots)
}

/// Writes the plots of [`render`] into `dir` (created if missing); returns their paths.
pub fn write(records: &[ProbeRecord], dir: &Path) -> Result<Vec<PathBuf>> {
    save(render(records)?, dir)
}
