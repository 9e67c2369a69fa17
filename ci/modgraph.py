#!/usr/bin/env python3
"""The module graph of a crate's source folder, from its `crate::` paths, and the layering
rules of dynsmem's host crate.

    python3 ci/modgraph.py            # check host/src and src/, exit 1 on a cycle or a broken rule
    python3 ci/modgraph.py --print    # also print every edge with the files that make it

A node is a top-level module: `host/src/tune/` (with all its files) is `tune`,
`host/src/error.rs` is `error`. An edge A -> B is any `crate::B` path in a file of A
(`use` lines and paths in code; comments and strings are left out). Edges inside one
top-level module are not drawn: a parent declaring its children and the children using
`super::` is how Rust modules are built. A file's unit tests (from a top-level
`#[cfg(test)]` to the end) are left out: tests may use any layer.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (crate folder, rules). A rule (A, B, why) forbids the edge A -> B.
CONTRACT = "contract"
HOST_RULES = [
    *[(m, "families", "the layers below the families never name them") for m in
      ["backend", "tune", CONTRACT, "error", "measure", "observe", "verify", "report", "element", "rng", "par"]],
    *[(m, "family", "the typed family abstraction sits above the tuner and the contract") for m in
      ["backend", "tune", CONTRACT, "error", "measure", "observe", "verify", "element", "rng", "par"]],
    (CONTRACT, "tune", "the kernel contract does not depend on the tuner"),
    ("error", "backend", "errors name backends by BackendKind (backend_kind.rs), not the backend module"),
    ("measure", "backend", "timing statistics know no backend; backend::timed runs them"),
    ("backend", "tune", "backends know nothing of tuning"),
]
CRATES = [("host/src", HOST_RULES), ("src", [])]


def strip(text: str) -> str:
    """The text without comments and string literals (kept as empty strings)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def top_module(folder: Path, file: Path) -> str:
    rel = file.relative_to(folder)
    name = rel.parts[0]
    return name[:-3] if name.endswith(".rs") else name


def graph(folder: Path):
    """{module: {module it uses: set of files}}, and the set of modules."""
    modules = {top_module(folder, f) for f in folder.rglob("*.rs")} - {"lib", "main"}
    edges = {}
    for f in sorted(folder.rglob("*.rs")):
        a = top_module(folder, f)
        body = strip(f.read_text()).split("\n#[cfg(test)]", 1)[0]
        used = set(re.findall(r"\$?crate::(\w+)", body))
        # `use crate::{a, b::c}` groups at the top level
        for group in re.findall(r"use\s+crate::\{([^;]*)\}", body, flags=re.S):
            used.update(re.findall(r"(?:^|[,{\s])(\w+)(?=\s*(?:::|,|\}|$))", group))
        for b in used & modules:
            if b != a:
                edges.setdefault(a, {}).setdefault(b, set()).add(str(f.relative_to(ROOT)))
    return modules, edges


def cycles(modules, edges):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(modules):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    show = "--print" in sys.argv
    failed = False
    for folder_name, rules in CRATES:
        folder = ROOT / folder_name
        modules, edges = graph(folder)
        n_edges = sum(len(v) for v in edges.values())
        print(f"{folder_name}: {len(modules)} modules, {n_edges} edges")
        if show:
            for a in sorted(edges):
                for b in sorted(edges[a]):
                    print(f"  {a} -> {b}    ({', '.join(sorted(edges[a][b]))})")
        for comp in cycles(modules, edges):
            failed = True
            print(f"  CYCLE: {' <-> '.join(comp)}")
            for a in comp:
                for b in comp:
                    if b in edges.get(a, {}):
                        print(f"    {a} -> {b}: {', '.join(sorted(edges[a][b]))}")
        for a, b, why in rules:
            if b in edges.get(a, {}):
                failed = True
                print(f"  FORBIDDEN {a} -> {b} ({why}): {', '.join(sorted(edges[a][b]))}")
    print("module graph: FAILED" if failed else "module graph: acyclic, every layering rule holds")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
