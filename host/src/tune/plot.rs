//! SVG plots of a sweep (plotters, SVG backend only): the time of every verified config
//! against the workgroup bytes it used, and a heatmap of the best time over two tunables.

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use super::runner::Evaluation;
use super::space::SearchSpace;
use crate::error::{Error, Result};

fn plot_error(what: &str) -> impl Fn(String) -> Error + '_ {
    move |reason| Error::Plot { what: what.into(), reason }
}

/// The colour of `t` between `lo` (fast: dark blue) and `hi` (slow: yellow) on a log
/// scale, through the viridis palette's anchors.
fn colour(t: f64, lo: f64, hi: f64) -> RGBColor {
    const STOPS: [(u8, u8, u8); 5] = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)];
    let x = if hi > lo { ((t.ln() - lo.ln()) / (hi.ln() - lo.ln())).clamp(0.0, 1.0) } else { 0.0 };
    let pos = x * (STOPS.len() - 1) as f64;
    let i = (pos.floor() as usize).min(STOPS.len() - 2);
    let f = pos - i as f64;
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * f).round() as u8;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// The objective (`y_label` names it: the median time, or energy) of every verified evaluation against the workgroup bytes per block its
/// config uses (launch-sized bytes of a Rust kernel, static bytes of a WGSL pipeline),
/// on a log time axis; the best config is drawn larger, in red. Returns the SVG text.
pub fn time_vs_shared_bytes(
    space: &SearchSpace,
    evaluations: &[Evaluation],
    title: &str,
    y_label: &str,
) -> Result<String> {
    let err = plot_error("time against shared bytes");
    let variant = space.target.variant;
    let pts: Vec<(f64, f64)> = evaluations
        .iter()
        .filter_map(|e| e.score.map(|t| (space.footprints[e.index].shared_bytes(variant) as f64, t)))
        .collect();
    if pts.is_empty() {
        return Err(err("no verified config to plot".into()));
    }
    // Bytes span orders of magnitude (a scratch of 16 B to tiles of 200 KB): a log axis,
    // with 0 B (no workgroup memory) drawn at 1 B.
    let pts: Vec<(f64, f64)> = pts.into_iter().map(|(x, y)| (x.max(1.0), y)).collect();
    let best = pts.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1)).expect("not empty");
    let (xmin, xmax, ymin, ymax) =
        pts.iter().fold((f64::INFINITY, 0f64, f64::INFINITY, 0f64), |(xl, xh, lo, hi), p| {
            (xl.min(p.0), xh.max(p.0), lo.min(p.1), hi.max(p.1))
        });
    let (xlo, xhi) = (xmin / 1.5, xmax * 1.5);
    let (ylo, yhi) = (ymin / 1.2, ymax * 1.2);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d((xlo..xhi).log_scale(), (ylo..yhi).log_scale())
            .map_err(|e| err(e.to_string()))?;
        let bytes_kind = if variant == crate::backend::Variant::LaunchSized { "launch-sized" } else { "static" };
        chart
            .configure_mesh()
            .x_desc(format!("{bytes_kind} workgroup bytes per block"))
            .y_desc(y_label)
            .light_line_style(WHITE)
            .y_labels(12)
            .x_label_formatter(&|x| format!("{}", x.round() as u64))
            .y_label_formatter(&|y| short(*y))
            .draw()
            .map_err(|e| err(e.to_string()))?;
        chart
            .draw_series(pts.iter().map(|&(x, y)| Circle::new((x, y), 3, BLUE.mix(0.6).filled())))
            .map_err(|e| err(e.to_string()))?;
        chart.draw_series(std::iter::once(Circle::new(best, 6, RED.filled()))).map_err(|e| err(e.to_string()))?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    Ok(svg)
}

/// A number with 3 significant digits.
fn short(v: f64) -> String {
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else if v >= 1.0 {
        2
    } else {
        (2 - v.log10().floor() as i32).max(3) as usize
    };
    format!("{v:.digits$}")
}

/// The first two parameters with more than one value: the default heatmap axes.
pub fn default_axes(space: &SearchSpace) -> Option<(usize, usize)> {
    let mut many = space.params.iter().enumerate().filter(|(_, p)| p.values.len() > 1).map(|(i, _)| i);
    Some((many.next()?, many.next()?))
}

/// The best (smallest) verified time over the other parameters for each pair of values
/// of parameters `px` (columns) and `py` (rows); `None` where no config of the pair was
/// verified (filtered, failed, or not evaluated).
pub fn heat_cells(space: &SearchSpace, evaluations: &[Evaluation], px: usize, py: usize) -> Vec<Vec<Option<f64>>> {
    let (nx, ny) = (space.params[px].values.len(), space.params[py].values.len());
    let mut cells = vec![vec![None::<f64>; nx]; ny];
    for e in evaluations {
        if let Some(t) = e.score {
            let (x, y) = (space.position(e.index, px), space.position(e.index, py));
            let c = &mut cells[y][x];
            *c = Some(c.map_or(t, |b: f64| b.min(t)));
        }
    }
    cells
}

/// A heatmap of [`heat_cells`]: one cell per pair of values, coloured by its best time
/// (log scale, dark is fast) and labelled with it; grey where nothing verified.
pub fn heatmap(space: &SearchSpace, evaluations: &[Evaluation], px: usize, py: usize, title: &str) -> Result<String> {
    let err = plot_error("heatmap");
    if px >= space.params.len() || py >= space.params.len() || px == py {
        return Err(err(format!("parameters {px} and {py}: two different parameters of the space")));
    }
    let cells = heat_cells(space, evaluations, px, py);
    let all: Vec<f64> = cells.iter().flatten().flatten().copied().collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(0.0, f64::max);
    let (xs, ys) = (&space.params[px], &space.params[py]);
    let (nx, ny) = (xs.values.len() as i32, ys.values.len() as i32);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let others: Vec<&str> =
            space.params.iter().enumerate().filter(|(i, _)| *i != px && *i != py).map(|(_, p)| p.name).collect();
        let caption =
            if others.is_empty() { title.to_string() } else { format!("{title} (best over {})", others.join(", ")) };
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            // A discrete i32 range includes its end: 0..n-1 is n segments.
            .build_cartesian_2d((0..nx - 1).into_segmented(), (0..ny - 1).into_segmented())
            .map_err(|e| err(e.to_string()))?;
        let label = |values: &[u32], v: &SegmentValue<i32>| match v {
            SegmentValue::CenterOf(i) if *i >= 0 && (*i as usize) < values.len() => values[*i as usize].to_string(),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(nx as usize)
            .y_labels(ny as usize)
            .x_desc(xs.name)
            .y_desc(ys.name)
            .x_label_formatter(&|v| label(&xs.values, v))
            .y_label_formatter(&|v| label(&ys.values, v))
            .draw()
            .map_err(|e| err(e.to_string()))?;
        let mut rects = Vec::new();
        let mut texts = Vec::new();
        for (y, row) in cells.iter().enumerate() {
            for (x, cell) in row.iter().enumerate() {
                let (x, y) = (x as i32, y as i32);
                let end = |v: i32, n: i32| if v + 1 == n { SegmentValue::Last } else { SegmentValue::Exact(v + 1) };
                let corners = [(SegmentValue::Exact(x), SegmentValue::Exact(y)), (end(x, nx), end(y, ny))];
                let fill = match cell {
                    Some(t) => colour(*t, lo, hi),
                    None => RGBColor(210, 210, 210),
                };
                rects.push(Rectangle::new(corners, fill.filled()));
                if let Some(t) = cell {
                    texts.push(Text::new(
                        short(*t),
                        (SegmentValue::CenterOf(x), SegmentValue::CenterOf(y)),
                        ("sans-serif", 11).into_font().color(&if *t < (lo * hi).sqrt() { WHITE } else { BLACK }),
                    ));
                }
            }
        }
        chart.draw_series(rects).map_err(|e| err(e.to_string()))?;
        chart.draw_series(texts).map_err(|e| err(e.to_string()))?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use crate::tune::strategies::tests::{BowlRunner, bowl_space};
    use crate::tune::strategies::{Budget, exhaustive};

    #[test]
    fn plots_draw_one_mark_per_verified_config_and_one_cell_per_pair() {
        let space = bowl_space();
        let mut runner = BowlRunner { calls: Vec::new() };
        let r = exhaustive::search(&space, &mut runner, Budget::evaluations(100), &mut SplitMix64::new(1));
        let verified = r.evaluations.iter().filter(|e| e.score.is_some()).count();
        let svg = time_vs_shared_bytes(&space, &r.evaluations, "bowl", "median time (ms)").unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        // Every verified config a circle, plus the best drawn again.
        assert_eq!(svg.matches("<circle").count(), verified + 1);

        let (px, py) = default_axes(&space).unwrap();
        let cells = heat_cells(&space, &r.evaluations, px, py);
        // The first 100 configs in order: x = 0..6 fully (minus filtered), part of x = 6.
        assert_eq!(cells[5][0], Some(1.0 + 0.05 * (121.0 + 0.0)));
        assert_eq!(cells[0][15], None, "x = 15 was not evaluated");
        assert_eq!(cells[3][3], None, "(3, 3) failed");
        assert_eq!(cells[3][4], None, "(4, 3) is filtered");
        let svg = heatmap(&space, &r.evaluations, px, py, "bowl").unwrap();
        let labelled = cells.iter().flatten().filter(|c| c.is_some()).count();
        // Cell labels are the only texts with a decimal point (ticks are integers).
        let texts: Vec<&str> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| t.split_once('>'))
            .map(|(_, rest)| rest.split('<').next().unwrap().trim())
            .collect();
        let cell_labels: Vec<&&str> = texts.iter().filter(|t| t.contains('.')).collect();
        assert_eq!(cell_labels.len(), labelled, "a label per verified cell: {texts:?}");
        assert!(cell_labels.contains(&&"7.05"), "cell (0, 5) is labelled with its time: {texts:?}");
        assert_eq!(svg.matches("<rect").count(), 1 + 256, "the background and one rectangle per cell");
        assert!(heatmap(&space, &r.evaluations, 0, 0, "bowl").is_err());
    }
}
