//! JSON as Python's `json.dumps` spells it, so that a file Kernel Tuner's tools parse by
//! its text (the cache's closing `}\n}`, the dashboard's loader) reads as one Kernel Tuner
//! wrote: `", "` and `": "` between items inline, one item per line with `indent=""`,
//! floats as Python's `repr` (`1e-05`, `1e+20`, `100.0`), non-ASCII escaped
//! (`ensure_ascii`). Objects are written in the order given ([`Fields`]); a
//! [`Value::Object`] nested in a value in its own (sorted) key order.

use std::fmt::Write;

use serde_json::Value;

/// An object's fields in the order they are written.
pub type Fields = Vec<(String, Value)>;

/// Python's `repr` of a float: the shortest digits that read back to `x`, in positional
/// notation for decimal exponents -4 to 15 and in exponent notation (`1.5e-07`, `1e+20`,
/// at least two exponent digits) outside them.
pub fn float(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust's `{:e}` gives the shortest round-trip digit count; of the strings of that many
    // digits Python writes the one nearest `x`, ties to even, which is what Rust's exact
    // `{:.Ne}` gives (an f32 widened to f64 can sit exactly between two 17-digit strings).
    let shortest = format!("{x:e}");
    let count = shortest.split('e').next().map_or(1, |m| m.chars().filter(char::is_ascii_digit).count());
    let e = format!("{x:.*e}", count.saturating_sub(1));
    let (mantissa, exp) = e.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e}'s exponent is an integer");
    let sign = if x < 0.0 { "-" } else { "" };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-4..16).contains(&exp) {
        let body = if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                format!("{digits}{}.0", "0".repeat(int_len - digits.len()))
            } else {
                format!("{}.{}", &digits[..int_len], &digits[int_len..])
            }
        } else {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        };
        format!("{sign}{body}")
    } else {
        let m = if digits.len() == 1 { digits } else { format!("{}.{}", &digits[..1], &digits[1..]) };
        format!("{sign}{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.unsigned_abs())
    }
}

/// A string as `json.dumps` writes it with `ensure_ascii`: everything outside space to `~`
/// escaped, as `\n`-style short escapes where JSON has them, else `\uXXXX` (UTF-16).
pub fn string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                for unit in c.encode_utf16(&mut [0; 2]) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// `v` as `json.dumps(v, indent=indent)` writes it, at nesting `level`.
pub fn value(v: &Value, indent: Option<&str>, level: usize, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => {
                let _ = write!(out, "{i}");
            }
            (None, Some(u)) => {
                let _ = write!(out, "{u}");
            }
            _ => out.push_str(&float(n.as_f64().unwrap_or(f64::NAN))),
        },
        Value::String(s) => string(s, out),
        Value::Array(items) => {
            container(('[', ']'), items.iter().map(|x| (None, x)), indent, level, out);
        }
        Value::Object(m) => {
            container(('{', '}'), m.iter().map(|(k, x)| (Some(k.as_str()), x)), indent, level, out);
        }
    }
}

/// An object of `fields`, in their order.
pub fn object(fields: &[(String, Value)], indent: Option<&str>, level: usize, out: &mut String) {
    container(('{', '}'), fields.iter().map(|(k, x)| (Some(k.as_str()), x)), indent, level, out);
}

fn container<'a>(
    (open, close): (char, char),
    items: impl ExactSizeIterator<Item = (Option<&'a str>, &'a Value)>,
    indent: Option<&str>,
    level: usize,
    out: &mut String,
) {
    out.push(open);
    if items.len() == 0 {
        out.push(close);
        return;
    }
    // Python's separators: ", " inline, "," before a newline with an indent.
    let (sep, newline) = match indent {
        None => (", ", None),
        Some(ind) => (",", Some(ind)),
    };
    let line = |out: &mut String, level: usize| {
        if let Some(ind) = newline {
            out.push('\n');
            out.push_str(&ind.repeat(level));
        }
    };
    for (i, (key, item)) in items.enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        line(out, level + 1);
        if let Some(k) = key {
            string(k, out);
            out.push_str(": ");
        }
        value(item, indent, level + 1, out);
    }
    line(out, level);
    out.push(close);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_as_python_repr() {
        // Each pair checked against CPython 3.11's repr.
        for (x, py) in [
            (1e20, "1e+20"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123.0, "123.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (-2.5e-300, "-2.5e-300"),
            (0.1, "0.1"),
            (1234.5678, "1234.5678"),
            (-0.0, "-0.0"),
            (0.031019143228019987, "0.031019143228019987"),
            // Exactly halfway between two 17-digit strings (an f32 time widened): ties to even.
            (f64::from(21.222_977_f32), "21.222976684570312"),
            (10.160_415_649_414_062, "10.160415649414062"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
        ] {
            assert_eq!(float(x), py, "{x:e}");
        }
    }

    #[test]
    fn layouts_inline_and_indented() {
        let v = json!({"b": [1, 2.5, "x\u{e9}\n"], "a": {}, "c": []});
        let mut s = String::new();
        value(&v, None, 0, &mut s);
        assert_eq!(s, r#"{"a": {}, "b": [1, 2.5, "x\u00e9\n"], "c": []}"#);
        let mut s = String::new();
        object(&[("k".into(), json!([1, 2])), ("o".into(), json!("t"))], Some(""), 0, &mut s);
        assert_eq!(s, "{\n\"k\": [\n1,\n2\n],\n\"o\": \"t\"\n}");
    }
}
