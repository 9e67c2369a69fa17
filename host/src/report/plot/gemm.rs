//! The GEMM families' chart: TFLOP/s against the problem's size, a series per backend,
//! variant and problem kind, the anchor (cuBLAS) among them.

use super::*;

/// The size of a GEMM problem: the side of a cube (`m = n = k`), else `(m n k)^(1/3)`.
fn gemm_size(problem: &serde_json::Value) -> Option<f64> {
    let get = |k: &str| problem.get(k).and_then(serde_json::Value::as_f64);
    let (m, n, k) = (get("m")?, get("n")?, get("k")?);
    Some(if m == n && n == k { m } else { (m * n * k).cbrt() })
}

/// The problem's fields besides `m`, `n` and `k` that name a series of a size chart: a
/// string as `key=value`, a true flag by its key (`_` as spaces), a number as `key=value`.
fn problem_kind(problem: &serde_json::Value) -> String {
    let Some(fields) = problem.as_object() else { return String::new() };
    let mut out = String::new();
    for (k, v) in fields.iter().filter(|(k, _)| !["m", "n", "k"].contains(&k.as_str())) {
        match v {
            serde_json::Value::Bool(true) => out.push_str(&format!(" {}", k.replace('_', " "))),
            serde_json::Value::String(s) => out.push_str(&format!(" {k}={s}")),
            serde_json::Value::Number(n) => out.push_str(&format!(" {k}={n}")),
            _ => {}
        }
    }
    out
}

/// Whether `r` belongs on a size chart: verified, with TFLOP/s, of an `m x n x k` problem.
pub(super) fn on_size_chart(r: &Record) -> bool {
    r.verified && r.tflops.is_some() && gemm_size(&r.problem).is_some()
}

/// TFLOP/s of an `m x n x k` family (GEMM) against the problem size (log2 axis), a line
/// per series: each backend and variant, each kind of problem (its other fields: f16
/// inputs, dtype, output type) and the vendor anchor, so every variant is read against the
/// vendor library at each size.
pub fn gemm_chart(family: &str, records: &[&Record]) -> Result<String> {
    let err = plot_error("TFLOP/s against size");
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for r in records.iter().filter(|r| on_size_chart(r)) {
        let (Some(t), Some(size)) = (r.tflops, gemm_size(&r.problem)) else { continue };
        let name = series_name(r, &[]) + &problem_kind(&r.problem);
        match series.iter_mut().find(|(n, _)| *n == name) {
            Some((_, pts)) => pts.push((size, t)),
            None => series.push((name, vec![(size, t)])),
        }
    }
    if series.is_empty() {
        return Err(err(format!("{family}: no verified m x n x k record with TFLOP/s")));
    }
    for (_, pts) in &mut series {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let all = || series.iter().flat_map(|(_, p)| p.iter());
    let scale = Scale::for_values(all().map(|p| p.1));
    let (xmin, xmax) = all().fold((f64::INFINITY, 0f64), |(lo, hi), p| (lo.min(p.0), hi.max(p.0)));
    let (ylo, yhi) =
        all().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| (lo.min(scale.to(p.1)), hi.max(scale.to(p.1))));
    // A log axis over whole decades; a linear one from 0.
    let (ylo, yhi) =
        if scale.log { (ylo.floor(), yhi.ceil().max(ylo.floor() + 1.0)) } else { (0.0, (yhi * 1.15).max(1e-9)) };
    let entries: Vec<(String, RGBColor, bool)> =
        series.iter().enumerate().map(|(i, (name, _))| (name.clone(), series_colour(i), false)).collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 520 + legend_px(entries.len()))).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let (upper, lower) = root.split_vertically(520);
        let caption = format!("{family}: TFLOP/s against size{}", if scale.log { " (log scale)" } else { "" });
        let mut chart = ChartBuilder::on(&upper)
            .caption(caption, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d((xmin / 1.5..xmax * 1.5).log_scale().base(2.0), ylo..yhi)
            .map_err(|e| err(e.to_string()))?;
        chart
            .configure_mesh()
            .x_desc("m = n = k (or the cube root of m n k)")
            .y_desc("TFLOP/s")
            .light_line_style(WHITE)
            .x_label_formatter(&|x| format!("{}", x.round() as u64))
            .y_label_formatter(&|y| scale.label(*y))
            .draw()
            .map_err(|e| err(e.to_string()))?;
        for (i, (_, pts)) in series.iter().enumerate() {
            let colour = series_colour(i);
            let pts: Vec<(f64, f64)> = pts.iter().map(|&(x, y)| (x, scale.to(y))).collect();
            chart
                .draw_series(std::iter::once(PathElement::new(pts.clone(), colour.stroke_width(2))))
                .map_err(|e| err(e.to_string()))?;
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 4, colour.filled())))
                .map_err(|e| err(e.to_string()))?;
        }
        legend(&lower, &entries).map_err(&err)?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    Ok(svg)
}
