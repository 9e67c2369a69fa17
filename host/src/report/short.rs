//! The short texts of the comparison table ([`super::compare`]): figures, problem labels,
//! configs, and one-line footnotes made from a record's `note` or `error`. For footnotes
//! the long forms the families and backends write are recognised and rewritten, anything
//! else is kept with its kernel name dropped and cut to [`MAX_CHARS`].
//!
//! The texts recognised are those of `families::fit_static` (a static form ran a smaller
//! config), the SGEMM static forms' notes (`the cuda-static form has no split-K: ...`) and
//! [`crate::Error::SharedMemoryLimit`]: when one of those changes wording, the rewrite here
//! stops matching and the text is only cut, not lost (the tests below pin each form).

use std::collections::BTreeMap;

/// A figure: whole numbers from 100, two decimals from 1, three significant digits below.
pub fn figure(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 || v == 0.0 {
        format!("{v:.2}")
    } else {
        let digits = (2 - v.abs().log10().floor() as i32).max(2) as usize;
        format!("{v:.digits$}")
    }
}

/// A ratio: two decimals, three significant digits below 0.1.
pub fn ratio(v: f64) -> String {
    if v.abs() >= 0.1 || v == 0.0 { format!("{v:.2}") } else { figure(v) }
}

/// A problem's integer as written in its label: `2^k` for powers of two from 2^20.
fn int_text(v: u64) -> String {
    if v >= 1 << 20 && v.is_power_of_two() { format!("2^{}", v.trailing_zeros()) } else { v.to_string() }
}

/// A problem's float as written in its label: the shortest text of its f32 (the problems
/// hold f32 values), in exponent form below 0.001.
fn float_text(v: f64) -> String {
    let f = v as f32;
    if f != 0.0 && f.abs() < 1e-3 { format!("{f:e}") } else { f.to_string() }
}

/// A problem as a short label: its shape first (`MxNxK`, or `N^3` for a cube; `ROWSxCOLS`;
/// `HEIGHTxWIDTH`), then `n=...`, then the other keys sorted as `key=value` (a `true`
/// flag as its name; `false` flags and zero integers left out), the dtype last and bare.
/// E.g. `n=2^28 op=sum f32`, `16384x16384`, `4096^3 f16_inputs`.
pub fn problem_label(problem: &serde_json::Value) -> String {
    let serde_json::Value::Object(m) = problem else {
        return if problem.is_null() { "-".into() } else { problem.to_string() };
    };
    let mut rest: BTreeMap<&str, &serde_json::Value> = m.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut parts = Vec::new();
    let mut take = |keys: &[&str]| -> Option<Vec<u64>> {
        let vals: Option<Vec<u64>> = keys.iter().map(|k| rest.get(k).and_then(|v| v.as_u64())).collect();
        if vals.is_some() {
            rest.retain(|key, _| !keys.contains(key));
        }
        vals
    };
    if let Some(v) = take(&["m", "n", "k"]) {
        parts.push(if v[0] == v[1] && v[1] == v[2] {
            format!("{}^3", v[0])
        } else {
            format!("{}x{}x{}", v[0], v[1], v[2])
        });
    } else if let Some(v) = take(&["rows", "cols"]).or_else(|| take(&["height", "width"])) {
        parts.push(format!("{}x{}", v[0], v[1]));
    }
    let dtype = rest.remove("dtype").map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string));
    let mut keys: Vec<&str> = rest.keys().copied().collect();
    keys.sort_by_key(|k| (*k != "n", *k));
    for k in keys {
        match rest[k] {
            serde_json::Value::Bool(true) => parts.push(k.to_string()),
            serde_json::Value::Bool(false) => {}
            serde_json::Value::Number(n) if n.as_u64() == Some(0) => {}
            serde_json::Value::Number(n) => parts
                .push(format!("{k}={}", n.as_u64().map_or_else(|| float_text(n.as_f64().unwrap_or(0.0)), int_text))),
            serde_json::Value::String(s) => parts.push(format!("{k}={s}")),
            other => parts.push(format!("{k}={other}")),
        }
    }
    parts.extend(dtype);
    if parts.is_empty() { "-".into() } else { parts.join(" ") }
}

/// The longest footnote text; longer ones are cut at a word and end in `...`.
pub const MAX_CHARS: usize = 150;

/// Config field names as footnotes write them (the kernels' own short names).
fn short_key(k: &str) -> &str {
    match k {
        "items_per_thread" => "ipt",
        "outputs_per_thread" => "opt",
        other => other,
    }
}

/// A JSON config as `k=v,k=v` (keys sorted, short names); `false` flags left out and a
/// `true` one as its name, unless `flags_as_values`.
pub fn config_text(config: &serde_json::Value, flags_as_values: bool) -> String {
    let serde_json::Value::Object(m) = config else {
        return if config.is_null() { "-".into() } else { config.to_string() };
    };
    let sorted: BTreeMap<&String, &serde_json::Value> = m.iter().collect();
    sorted
        .into_iter()
        .filter_map(|(k, v)| {
            let k = short_key(k);
            match v {
                serde_json::Value::Bool(b) if !flags_as_values => b.then(|| k.to_string()),
                serde_json::Value::String(s) => Some(format!("{k}={s}")),
                other => Some(format!("{k}={other}")),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The fields of a Rust `Debug` struct, `Name { a: 1, b: true }`, in order; `None` for
/// anything else (nested structs included).
fn debug_fields(s: &str) -> Option<Vec<(String, String)>> {
    let (name, rest) = s.trim().split_once(" { ")?;
    let body = rest.strip_suffix(" }")?;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || body.contains('{') {
        return None;
    }
    body.split(", ").map(|f| f.split_once(": ").map(|(k, v)| (short_key(k).to_string(), v.to_string()))).collect()
}

fn fields_text(fields: &[&(String, String)]) -> String {
    fields.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// `static arrays of A would be N B, over the L B static limit: ran B (M B), the best that
/// fits` as `static arrays of A' need N B > L B: ran B' (M B)`, where A' and B' are the
/// fields in which the asked and the run config differ.
fn fallback_clause(c: &str) -> Option<String> {
    let rest = c.strip_prefix("static arrays of ")?;
    let (asked, rest) = rest.split_once(" would be ")?;
    let (over, rest) = rest.split_once(", over the ")?;
    let (limit, rest) = rest.split_once(" static limit: ran ")?;
    let rest = rest.strip_suffix(", the best that fits").unwrap_or(rest);
    let (ran, ran_bytes) = rest.rsplit_once(" (")?;
    let ran_bytes = ran_bytes.strip_suffix(')')?;
    let (asked, ran) = (debug_fields(asked)?, debug_fields(ran)?);
    let differ = |a: &[(String, String)], b: &[(String, String)]| -> Vec<usize> {
        (0..a.len()).filter(|&i| b.get(i) != a.get(i)).collect()
    };
    let mut idx = differ(&asked, &ran);
    if idx.is_empty() || asked.len() != ran.len() {
        idx = (0..asked.len().max(ran.len())).collect();
    }
    let pick = |f: &[(String, String)]| fields_text(&idx.iter().filter_map(|&i| f.get(i)).collect::<Vec<_>>());
    Some(format!("static arrays of {} need {over} > {limit}: ran {} ({ran_bytes})", pick(&asked), pick(&ran)))
}

/// One `; `-separated clause of a note.
fn note_clause(c: &str) -> String {
    if let Some(s) = fallback_clause(c) {
        return s;
    }
    // `the cuda-static form has no split-K: ...` -> `no split-K: ...` (the column says
    // which form).
    if let Some(rest) = c.strip_prefix("the ")
        && let Some((form, rest)) = rest.split_once(" form ")
        && !form.contains(' ')
    {
        return rest.strip_prefix("has ").unwrap_or(rest).to_string();
    }
    c.to_string()
}

/// A record's `note` (a fallback config, a form without a feature) as one short line.
pub fn note(text: &str) -> String {
    cut(&text.split("; ").map(note_clause).collect::<Vec<_>>().join("; "))
}

/// Drops a leading `kernel_name[...]: ` (a token without spaces before `: `).
fn drop_kernel(text: &str) -> &str {
    match text.split_once(": ") {
        Some((head, rest)) if !head.is_empty() && !head.contains(' ') => rest,
        _ => text,
    }
}

/// [`crate::Error::SharedMemoryLimit`] without its kernel: `asks for N bytes of KIND
/// workgroup memory, over the BACKEND limit of L bytes (NAME)`.
fn shared_limit(text: &str) -> Option<String> {
    let rest = text.strip_prefix("asks for ")?;
    let (requested, rest) = rest.split_once(" bytes of ")?;
    let (kind, rest) = rest.split_once(" workgroup memory, over the ")?;
    let (backend, rest) = rest.split_once(" limit of ")?;
    let (limit, _) = rest.split_once(" bytes")?;
    let what = if kind == "static" { "static arrays need".to_string() } else { format!("{kind} memory needs") };
    Some(format!("{what} {requested} B > {limit} B ({backend} limit)"))
}

/// A failed record's `error` as one short line: `WRONG: ...` for a wrong result (a kernel
/// that ran and was wrong), else why it did not run.
pub fn failure(error: Option<&str>, wrong_result: bool) -> String {
    let text = drop_kernel(error.unwrap_or("not verified"));
    let text = shared_limit(text).unwrap_or_else(|| text.to_string());
    cut(&if wrong_result { format!("WRONG: {text}") } else { text })
}

/// `text` on one line, at most [`MAX_CHARS`] characters (cut at a space, then `...`).
pub fn cut(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= MAX_CHARS {
        return one_line;
    }
    let head: String = one_line.chars().take(MAX_CHARS - 3).collect();
    let head = match head.rfind(' ') {
        Some(i) if i > MAX_CHARS / 2 => &head[..i],
        _ => &head,
    };
    format!("{}...", head.trim_end_matches([',', ';', ':']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fallback_note_names_only_the_fields_that_changed() {
        let n = "static arrays of ScanConfig { block: 512, items_per_thread: 48 } would be 100752 B, over the \
                 49152 B static limit: ran ScanConfig { block: 512, items_per_thread: 20 } (43408 B), the best that fits";
        assert_eq!(note(n), "static arrays of ipt=48 need 100752 B > 49152 B: ran ipt=20 (43408 B)");
        let sgemm = "the cuda-static form has no split-K: 2 splits ran as 1; static arrays of SgemmConfig { bm: 128, \
                     bn: 64, bk: 32, stages: 3, tm: 8, tma: false, splits: 1 } would be 76032 B, over the 49152 B \
                     static limit: ran SgemmConfig { bm: 128, bn: 64, bk: 16, stages: 3, tm: 8, tma: false, splits: 1 } \
                     (39168 B), the best that fits";
        assert_eq!(
            note(sgemm),
            "no split-K: 2 splits ran as 1; static arrays of bk=32 need 76032 B > 49152 B: ran bk=16 (39168 B)"
        );
        // A size past u32 and a note of another form stay readable.
        let past = "static arrays of C { a: 1 } would be past u32, over the 49152 B static limit: ran C { a: 2 } \
                    (4 B), the best that fits";
        assert_eq!(note(past), "static arrays of a=1 need past u32 > 49152 B: ran a=2 (4 B)");
        assert_eq!(note("something else  entirely"), "something else entirely");
    }

    #[test]
    fn a_refusal_drops_the_kernel_and_keeps_bytes_and_limit() {
        let e = "histogram_u32[cuda-static,bins=49152,copies=1,block=1024]: asks for 196608 bytes of static \
                 workgroup memory, over the cuda limit of 49152 bytes (MAX_SHARED_MEMORY_PER_BLOCK: static \
                 __shared__ arrays cannot opt in past it)";
        assert_eq!(failure(Some(e), false), "static arrays need 196608 B > 49152 B (cuda limit)");
        let l = "k: asks for 300000 bytes of launch-sized workgroup memory, over the cuda limit of 232448 bytes (X)";
        assert_eq!(failure(Some(l), false), "launch-sized memory needs 300000 B > 232448 B (cuda limit)");
        let w = "transpose_f32: result differs from the CPU reference at index 3: expected 1, got 0";
        assert_eq!(
            failure(Some(w), true),
            "WRONG: result differs from the CPU reference at index 3: expected 1, got 0"
        );
        assert_eq!(failure(None, false), "not verified");
    }

    #[test]
    fn long_texts_are_cut_at_a_word() {
        let long = "word ".repeat(60);
        let c = cut(&long);
        assert!(c.ends_with("word...") && c.chars().count() <= MAX_CHARS, "{c}");
        assert_eq!(cut("a\nb"), "a b");
    }

    #[test]
    fn problem_labels_are_short() {
        use serde_json::json;
        let l = |v: serde_json::Value| problem_label(&v);
        assert_eq!(l(json!({ "n": 1u64 << 28, "op": "sum", "dtype": "f32" })), "n=2^28 op=sum f32");
        assert_eq!(l(json!({ "rows": 16384, "cols": 16384 })), "16384x16384");
        assert_eq!(l(json!({ "m": 4096, "n": 4096, "k": 4096, "f16_inputs": true })), "4096^3 f16_inputs");
        assert_eq!(l(json!({ "m": 6144, "n": 768, "k": 3072, "f16_inputs": false })), "6144x768x3072");
        assert_eq!(
            l(json!({ "blur": "gaussian", "height": 16384, "radius": 1, "width": 8192 })),
            "16384x8192 blur=gaussian radius=1"
        );
        assert_eq!(l(json!({ "bins": 256, "n": 1u64 << 28, "out_of_range_pct": 0 })), "n=2^28 bins=256");
        assert_eq!(l(json!({ "rows": 8, "cols": 8, "eps": 1e-5f32 as f64 })), "8x8 eps=1e-5");
    }

    #[test]
    fn figures_keep_three_significant_digits_below_one() {
        assert_eq!([figure(2982.2), figure(27.2749), figure(0.025), figure(0.0)], ["2982", "27.27", "0.0250", "0.00"]);
        assert_eq!([ratio(0.985), ratio(0.0215)], ["0.98", "0.0215"]);
    }

    #[test]
    fn configs_are_sorted_with_short_names() {
        let c = serde_json::json!({ "staged": false, "items_per_thread": 32, "block": 512, "tma": true });
        assert_eq!(config_text(&c, false), "block=512,ipt=32,tma");
        assert_eq!(config_text(&c, true), "block=512,ipt=32,staged=false,tma=true");
    }
}
