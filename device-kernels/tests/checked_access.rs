//! Every memory access of the kernel files goes through `gpu::*` or a `SharedArray`, so the
//! CPU backend checks it: a raw pointer's `.read()`, `.write(v)`, volatile or unaligned
//! access in a kernel file (anything outside `src/gpu/`) would be an access no test can see
//! run off a buffer. Device memory: `gpu::read_global` / `gpu::write_global` (and the
//! atomics and async copies); workgroup memory: `SharedArray` or `gpu::read_shared`.

use std::path::Path;

/// The raw accesses in `src`: `(line, text)` of each.
fn raw_accesses(src: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let line_of = |at: usize| src[..at].matches('\n').count() + 1;
    for banned in
        [".read_volatile(", ".write_volatile(", ".read_unaligned(", ".write_unaligned(", "ptr::read(", "ptr::write("]
    {
        found.extend(src.match_indices(banned).map(|(at, s)| (line_of(at), s.to_string())));
    }
    // `.read()` takes no argument only on a raw pointer (`SharedArray::read` takes an index).
    found.extend(src.match_indices(".read()").map(|(at, s)| (line_of(at), s.to_string())));
    // `.write(v)` with one argument: a raw pointer (`SharedArray::write` takes two).
    for (at, _) in src.match_indices(".write(") {
        let args = &src[at + ".write(".len()..];
        let (mut depth, mut commas) = (1, 0);
        for c in args.chars() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                ',' if depth == 1 => commas += 1,
                _ => {}
            }
            if depth == 0 {
                break;
            }
        }
        if commas == 0 {
            found.push((line_of(at), ".write(..)".into()));
        }
    }
    found
}

#[test]
fn kernel_files_access_memory_only_through_checked_accessors() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = 0;
    let mut raw = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            files += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            for (line, what) in raw_accesses(&text) {
                raw.push(format!("{}:{line}: {what}", path.display()));
            }
        }
    }
    assert!(files >= 10, "{files} kernel files in {}", src.display());
    assert!(raw.is_empty(), "raw memory accesses the CPU backend cannot check:\n{}", raw.join("\n"));
}

#[test]
fn the_scan_finds_each_kind_of_raw_access() {
    let planted = "let a = unsafe { p.add(1).read() };\nunsafe { q.write(a) };\nshared.write(i, a);\n\
                   unsafe { r.write_volatile(f(x, y)) };\nunsafe { s.write(g(x, y)) };";
    let lines: Vec<usize> = raw_accesses(planted).iter().map(|(l, _)| *l).collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(sorted, [1, 2, 4, 5], "{lines:?}: line 3 is a SharedArray write");
}
