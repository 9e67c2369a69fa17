//! Plain-text and Markdown tables.

use crate::report::Record;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableStyle {
    Text,
    Markdown,
}

/// Rows of cells under a header; columns sized to fit.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table { header: header.iter().map(|s| s.to_string()).collect(), rows: Vec::new() }
    }

    /// Adds a row; it must have a cell per header (a missing header shifts every column
    /// after it under the wrong name, which a reader cannot see).
    pub fn push(&mut self, row: Vec<String>) {
        assert_eq!(row.len(), self.header.len(), "a row of {} cells under {} headers", row.len(), self.header.len());
        self.rows.push(row);
    }

    pub fn render(&self, style: TableStyle) -> String {
        let cols = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, c) in row.iter().enumerate().take(cols) {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let line = |cells: &[String]| -> String {
            let padded: Vec<String> = (0..cols)
                .map(|i| {
                    let c = cells.get(i).map(String::as_str).unwrap_or("");
                    format!("{c:<w$}", w = widths[i])
                })
                .collect();
            match style {
                TableStyle::Text => padded.join("  ").trim_end().to_string(),
                TableStyle::Markdown => format!("| {} |", padded.join(" | ")),
            }
        };
        let mut out = vec![line(&self.header)];
        out.push(match style {
            TableStyle::Text => widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "),
            TableStyle::Markdown => {
                format!("|{}|", widths.iter().map(|w| "-".repeat(w + 2)).collect::<Vec<_>>().join("|"))
            }
        });
        out.extend(self.rows.iter().map(|r| line(r)));
        out.join("\n") + "\n"
    }
}

/// `digits` decimals, more for small values so a CPU figure does not print as 0.0.
fn opt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| {
        let digits = if x != 0.0 && x.abs() < 1.0 { digits.max(3) } else { digits };
        format!("{x:.digits$}")
    })
    .unwrap_or_else(|| "-".into())
}

/// The comparison table of a set of records: one row per record.
pub fn records_table(records: &[Record]) -> Table {
    let mut t = Table::new(&[
        "family",
        "backend",
        "variant",
        "device",
        "problem",
        "config",
        "launch B",
        "static B",
        "median ms",
        "95% CI ms",
        "GB/s",
        "TFLOP/s",
        "anchor GB/s",
        "anchor TFLOP/s",
        "ratio",
        "SM MHz",
        "W",
        "J/run",
        "verified",
    ]);
    for r in records {
        let compact = |v: &serde_json::Value| match v {
            serde_json::Value::Object(m) => m
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())))
                .collect::<Vec<_>>()
                .join(","),
            serde_json::Value::Null => "-".into(),
            other => other.to_string(),
        };
        t.push(vec![
            r.family.clone(),
            r.backend.to_string(),
            r.variant.clone(),
            r.device.clone(),
            compact(&r.problem),
            compact(&r.config),
            r.shared_bytes.to_string(),
            r.static_shared_bytes.to_string(),
            opt(r.median_ms, 4),
            r.median_ci95_ms.map(|[a, b]| format!("{a:.4}-{b:.4}")).unwrap_or_default(),
            opt(r.gbps, 1),
            opt(r.tflops, 2),
            opt(r.anchor_gbps, 1),
            opt(r.anchor_tflops, 2),
            opt(r.ratio, 3) + r.ratio_mark(),
            opt(r.observed.as_ref().and_then(|o| o.sm_clock_mhz).map(|c| c.median), 0),
            opt(r.observed.as_ref().and_then(|o| o.energy).map(|e| e.watts), 0),
            r.observed.as_ref().and_then(|o| o.energy).map(|e| format!("{:.3e}", e.joules_per_run)).unwrap_or_default(),
            match (&r.error, r.verified) {
                (Some(e), _) => format!("ERROR: {e}"),
                (None, true) => "yes".into(),
                (None, false) => "no".into(),
            } + &r.note.as_ref().map(|n| format!(" (note: {n})")).unwrap_or_default(),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_in_both_styles() {
        let mut t = Table::new(&["a", "long header"]);
        t.push(vec!["wide cell".into(), "x".into()]);
        assert_eq!(t.render(TableStyle::Text), "a          long header\n---------  -----------\nwide cell  x\n");
        assert_eq!(
            t.render(TableStyle::Markdown),
            "| a         | long header |\n|-----------|-------------|\n| wide cell | x           |\n"
        );
    }

    #[test]
    fn a_records_row_puts_each_figure_under_its_header() {
        let info = crate::backend::cpu::CpuBackend::new();
        let prov =
            crate::report::Provenance { rustc: "r".into(), commit: "c".into(), command: "x".into(), image: "i".into() };
        let mut r = Record::new("sgemm", "launch-sized", "sgemm_f32", crate::backend::Backend::info(&info), &prov);
        r.tflops = Some(12.5);
        r.anchor_tflops = Some(50.0);
        r.ratio = Some(0.25);
        r.verified = true;
        r.median_ci95_ms = Some([1.25, 1.5]);
        let t = records_table(&[r]);
        let cell = |h: &str| t.rows[0][t.header.iter().position(|x| x == h).unwrap()].clone();
        assert_eq!(
            (cell("TFLOP/s"), cell("anchor TFLOP/s"), cell("ratio")),
            ("12.50".into(), "50.00".into(), "0.250".into())
        );
        assert_eq!(cell("verified"), "yes");
        assert_eq!(cell("95% CI ms"), "1.2500-1.5000");
    }
}
