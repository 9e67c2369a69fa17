//! SVG plots of shape-suite records (`dynsmem shapes --plots DIR`): per family, each
//! shape's ratio to its same-run anchor, shapes along the x axis in suite order and a
//! series per backend and variant, with a black line at 1.0 (the anchor) and a thin one
//! at each series' geometric mean.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::Record;
use super::plot::{Plot, file_stem, legend, legend_px, plot_error, series_colour};
use crate::error::Result;

/// One series: its name and its points (shape index, ratio).
type Series = (String, Vec<(usize, f64)>);

/// The ratio chart of `family`'s records (those with a shape label and a verified ratio;
/// anchors left out). Of repeated records of one shape and series the last counts.
pub fn ratio_chart(family: &str, records: &[&Record]) -> Result<String> {
    let err = plot_error("ratio against shape");
    let mut shapes: Vec<String> = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    for r in records.iter().filter(|r| r.family == family && r.variant != "anchor") {
        let Some(label) = &r.shape else { continue };
        let x = match shapes.iter().position(|s| s == label) {
            Some(x) => x,
            None => {
                shapes.push(label.clone());
                shapes.len() - 1
            }
        };
        let Some(ratio) = r.ratio.filter(|_| r.verified) else { continue };
        let name = format!("{} {}", r.backend, r.variant);
        let i = match series.iter().position(|(n, _)| *n == name) {
            Some(i) => i,
            None => {
                series.push((name, Vec::new()));
                series.len() - 1
            }
        };
        series[i].1.retain(|(px, _)| *px != x);
        series[i].1.push((x, ratio));
    }
    if series.iter().all(|(_, p)| p.is_empty()) {
        return Err(err(format!("no verified {family} record with a ratio and a shape")));
    }
    let ymax = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)).fold(1.0f64, f64::max) * 1.1;
    // Each series' geometric mean (a series has at least one point: it was made for one).
    let means: Vec<f64> =
        series.iter().map(|(_, pts)| crate::measure::geometric_mean(pts.iter().map(|p| p.1)).unwrap_or(1.0)).collect();
    let entries: Vec<(String, RGBColor, bool)> = series
        .iter()
        .zip(&means)
        .enumerate()
        .map(|(i, ((name, _), g))| (format!("{name} (geometric mean {g:.3}: the thin line)"), series_colour(i), false))
        .collect();
    let width = (240 + 34 * shapes.len() as u32).max(640);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 560 + legend_px(entries.len()))).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let (upper, lower) = root.split_vertically(560);
        let mut chart = ChartBuilder::on(&upper)
            .caption(format!("{family}: ratio to the same-run anchor, per shape"), ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(150)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5f64..shapes.len() as f64 - 0.5, 0.0..ymax)
            .map_err(|e| err(e.to_string()))?;
        chart
            .configure_mesh()
            .x_labels(shapes.len())
            .x_label_style(("sans-serif", 11).into_font().transform(FontTransform::Rotate90))
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    shapes.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("ratio to anchor")
            .light_line_style(WHITE)
            .draw()
            .map_err(|e| err(e.to_string()))?;
        let span = (-0.5, shapes.len() as f64 - 0.5);
        chart
            .draw_series(std::iter::once(PathElement::new(vec![(span.0, 1.0), (span.1, 1.0)], BLACK.stroke_width(1))))
            .map_err(|e| err(e.to_string()))?;
        for (i, ((_, pts), &g)) in series.iter().zip(&means).enumerate() {
            let colour = series_colour(i);
            chart
                .draw_series(std::iter::once(PathElement::new(vec![(span.0, g), (span.1, g)], colour.stroke_width(1))))
                .map_err(|e| err(e.to_string()))?;
            chart
                .draw_series(pts.iter().map(|&(x, r)| Circle::new((x as f64, r), 5, colour.filled())))
                .map_err(|e| err(e.to_string()))?;
        }
        legend(&lower, &entries).map_err(&err)?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    Ok(svg)
}

/// A ratio chart per family of `records` with at least one verified ratio:
/// `<family>-shapes.svg`.
pub fn render(records: &[Record]) -> Result<Vec<Plot>> {
    let mut families: Vec<&str> = Vec::new();
    for r in records.iter().filter(|r| r.shape.is_some() && r.variant != "anchor" && r.verified && r.ratio.is_some()) {
        if !families.contains(&r.family.as_str()) {
            families.push(&r.family);
        }
    }
    let refs: Vec<&Record> = records.iter().collect();
    families
        .into_iter()
        .map(|f| Ok(Plot { file: format!("{}-shapes.svg", file_stem(f)), svg: ratio_chart(f, &refs)? }))
        .collect()
}

/// Writes the plots of [`render`] into `dir` (created if missing); returns their paths.
pub fn write(records: &[Record], dir: &Path) -> Result<Vec<PathBuf>> {
    super::plot::save(render(records)?, dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Backend, BackendKind};
    use crate::report::Provenance;

    fn rec(shape: &str, variant: &str, ratio: Option<f64>) -> Record {
        let prov = Provenance { rustc: "r".into(), commit: "c".into(), command: "x".into(), image: "i".into() };
        let mut info = crate::backend::cpu::CpuBackend::new().info().clone();
        info.backend = BackendKind::Cuda;
        let mut r = Record::new("softmax", variant, "softmax", &info, &prov);
        r.shape = Some(shape.into());
        r.ratio = ratio;
        r.verified = ratio.is_some();
        r
    }

    #[test]
    fn a_point_per_shape_and_series_labelled_by_shape_with_each_series_geomean() {
        let records = vec![
            rec("aligned-4096", "anchor", Some(1.0)),
            rec("aligned-4096", "launch-sized", Some(0.98)),
            rec("odd-4095", "launch-sized", Some(0.5)),
            rec("odd-4097", "launch-sized", None),
        ];
        let plots = render(&records).unwrap();
        assert_eq!(plots.len(), 1);
        assert_eq!(plots[0].file, "softmax-shapes.svg");
        let svg = &plots[0].svg;
        for label in ["aligned-4096", "odd-4095", "odd-4097"] {
            assert!(svg.contains(label), "{label} on the x axis");
        }
        // Two verified points; the anchor record is not one.
        assert_eq!(svg.matches("<circle").count(), 2, "{svg}");
        let g = (0.98f64.ln() / 2.0 + 0.5f64.ln() / 2.0).exp();
        assert!(svg.contains(&format!("geometric mean {g:.3}")), "{svg}");
    }
}
