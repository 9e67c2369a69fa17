#!/usr/bin/env python3
"""The kernel coverage table from an lcov file with branch records (BRDA), and the branches
no test reaches, checked against the list of those the CPU cannot take.

    python3 ci/kernel_coverage.py KERNELS.lcov UNREACHABLE.txt > coverage.md

UNREACHABLE.txt: one `path:line  reason` a line (`#` starts a comment); a line named there
covers every branch on it. Exits 1 when a branch is neither reached nor named (the table
still printed), 0 otherwise. A named line whose branches are all reached is reported as
stale (a test reaches it now: drop it from the list).
"""
import sys
from collections import defaultdict


def read(path):
    """{file: (lines {n: hits}, branches {(n, block, branch): hits})} for device-kernels/src."""
    files, cur = {}, None
    for raw in open(path):
        line = raw.strip()
        if line.startswith("SF:"):
            name = line[3:]
            at = name.find("device-kernels/src/")
            cur = files.setdefault(name[at:], ({}, {})) if at >= 0 else None
        elif cur is None:
            continue
        elif line.startswith("DA:"):
            n, hits = line[3:].split(",")[:2]
            cur[0][int(n)] = max(cur[0].get(int(n), 0), int(hits))
        elif line.startswith("BRDA:"):
            n, block, branch, hits = line[5:].split(",")
            key = (int(n), block, branch)
            h = 0 if hits == "-" else int(hits)
            cur[1][key] = max(cur[1].get(key, 0), h)
    return files


def read_unreachable(path):
    named = {}
    for raw in open(path):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where, _, why = line.partition(" ")
        file, _, n = where.rpartition(":")
        named[(file, int(n))] = why.strip()
    return named


def main():
    files = read(sys.argv[1])
    # Files no test instantiates (generic or inline code never monomorphised) have no
    # records: listed with nothing reached.
    import pathlib
    for p in sorted(pathlib.Path("device-kernels/src").rglob("*.rs")):
        files.setdefault(str(p), ({}, {}))
    named = read_unreachable(sys.argv[2]) if len(sys.argv) > 2 else {}
    print("| kernel file | branches reached | lines reached |")
    print("| --- | --- | --- |")
    missed = defaultdict(list)
    totals = [0, 0, 0, 0]
    for f in sorted(files):
        lines, branches = files[f]
        br_hit = sum(1 for h in branches.values() if h > 0)
        ln_hit = sum(1 for h in lines.values() if h > 0)
        totals = [totals[0] + br_hit, totals[1] + len(branches), totals[2] + ln_hit, totals[3] + len(lines)]
        if not lines and not branches:
            print(f"| {f} | not instantiated by any test | |")
            continue
        print(f"| {f} | {br_hit} / {len(branches)} | {ln_hit} / {len(lines)} |")
        for (n, _, _), h in branches.items():
            if h == 0 and n not in missed[f]:
                missed[f].append(n)
    print(f"| **all** | **{totals[0]} / {totals[1]}** | **{totals[2]} / {totals[3]}** |")
    gaps, excused = [], []
    for f in sorted(missed):
        for n in sorted(missed[f]):
            (excused if (f, n) in named else gaps).append((f, n))
    print("\n## Branches the CPU cannot take\n")
    for f, n in excused:
        print(f"- `{f}:{n}`: {named[(f, n)]}")
    stale = [k for k in named if k not in set(excused)]
    if stale:
        print("\n## Named as unreachable, but reached (drop them from the list)\n")
        for f, n in sorted(stale):
            print(f"- `{f}:{n}`")
    print("\n## Branches no test reaches\n")
    for f, n in gaps:
        print(f"- `{f}:{n}`")
    if not gaps:
        print("None.")
    return 1 if gaps else 0


if __name__ == "__main__":
    sys.exit(main())
