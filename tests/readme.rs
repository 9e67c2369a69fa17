//! The figures tables of `README.md` and `results/README.md` are generated from the records
//! they name, so they cannot go stale: each table stands between
//!
//! ```text
//! <!-- table: `dynsmem compare RECORDS --markdown` -->
//! ...
//! <!-- end of table -->
//! ```
//!
//! and must equal what `dynsmem compare RECORDS --markdown` prints for that record file
//! (a path from the project root); a marker reading `--decomposition --markdown` names the
//! decomposition table of the same records. Both files must name the same records: they agree.
//! `DYNSMEM_BLESS=1 cargo test --test readme` rewrites the tables instead of comparing.

use std::path::{Path, PathBuf};

use dynsmem::host::report::{Comparison, TableStyle, decompose_plot, read_jsonl};

const FILES: [&str; 2] = ["README.md", "results/README.md"];
const START: &str = "<!-- table: `dynsmem compare ";
const START_END: &str = " --markdown` -->";
const DECOMPOSITION_END: &str = " --decomposition --markdown` -->";
const END: &str = "<!-- end of table -->";

/// One generated table of a file: the record file it names, the byte range of its text
/// (between the markers' lines) and that text.
#[derive(Debug)]
struct Block {
    records: String,
    /// The decomposition table (`--decomposition`), not the comparison.
    decomposition: bool,
    range: std::ops::Range<usize>,
    text: String,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The generated tables of `text`; panics on a start marker without its end.
fn blocks(file: &str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(START).map(|i| from + i) {
        let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
        let marker = &text[at..line_end];
        let named = &marker[START.len()..];
        let decomposition = named.ends_with(DECOMPOSITION_END);
        let records = named
            .strip_suffix(DECOMPOSITION_END)
            .or_else(|| named.strip_suffix(START_END))
            .unwrap_or_else(|| panic!("{file}: a table marker must read {START}RECORDS{START_END}: {marker}"))
            .to_string();
        let body = (line_end + 1).min(text.len());
        let end = text[body..].find(END).map(|i| body + i).unwrap_or_else(|| panic!("{file}: no {END} after {marker}"));
        out.push(Block { records, decomposition, range: body..end, text: text[body..end].to_string() });
        from = end + END.len();
    }
    out
}

/// What `dynsmem compare RECORDS [--decomposition] --markdown` prints, with the newline that
/// ends it.
fn generated(records: &Path, decomposition: bool) -> String {
    let contents = read_jsonl(records).unwrap_or_else(|e| panic!("{}: {e}", records.display()));
    assert!(!contents.records.is_empty(), "{}: no records", records.display());
    let table = if decomposition {
        decompose_plot::decompose(&contents.records).table().render(TableStyle::Markdown)
    } else {
        Comparison::new(&contents.records).render(TableStyle::Markdown)
    };
    format!("{}\n", table.trim_end())
}

/// The blocks of `text` whose table is not what their records give: `(records, generated)`.
fn stale(file: &str, text: &str, root: &Path) -> Vec<(String, String)> {
    blocks(file, text)
        .into_iter()
        .filter_map(|b| {
            let want = generated(&root.join(&b.records), b.decomposition);
            (b.text != want).then_some((b.records, want))
        })
        .collect()
}

#[test]
fn the_readme_tables_are_the_records_they_name() {
    let root = root();
    let bless = std::env::var("DYNSMEM_BLESS").is_ok_and(|v| v == "1");
    let mut named = Vec::new();
    for file in FILES {
        let path = root.join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        let found = blocks(file, &text);
        assert!(!found.is_empty(), "{file}: no generated table ({START}RECORDS{START_END} ... {END})");
        named.extend(found.iter().map(|b| b.records.clone()));
        if bless {
            let mut out = text.clone();
            for b in found.iter().rev() {
                out.replace_range(b.range.clone(), &generated(&root.join(&b.records), b.decomposition));
            }
            std::fs::write(&path, out).unwrap_or_else(|e| panic!("{file}: {e}"));
            continue;
        }
        if let Some((records, want)) = stale(file, &text, &root).into_iter().next() {
            panic!(
                "{file}: the table from {records} is not what the records give; \
                 `DYNSMEM_BLESS=1 cargo test --test readme` rewrites it. It should read:\n{want}"
            );
        }
    }
    named.sort();
    named.dedup();
    assert_eq!(named.len(), 1, "README.md and results/README.md name different records: {named:?}");
}

/// The check fails on one wrong figure: a table whose first figure is changed in its last
/// digit (one cell of one row) is stale.
#[test]
fn one_changed_figure_makes_the_table_stale() {
    let root = root();
    let text = std::fs::read_to_string(root.join(FILES[0])).expect("README.md");
    let b = &blocks(FILES[0], &text)[0];
    // The first cell with a figure and its ratio in brackets (`figure (ratio)`).
    let cell = b.text.find(" (").expect("a figure with its ratio");
    let digit = b.text[..cell].rfind(|c: char| c.is_ascii_digit()).expect("a digit before it");
    let mut wrong = text.clone();
    let at = b.range.start + digit;
    let d = wrong.as_bytes()[at];
    let changed = if d == b'9' { '0' } else { (d + 1) as char };
    wrong.replace_range(at..at + 1, &changed.to_string());
    assert_eq!(stale(FILES[0], &text, &root).len(), 0, "README.md's table as committed");
    assert_eq!(stale(FILES[0], &wrong, &root).len(), 1, "one figure changed at byte {at}");
}
