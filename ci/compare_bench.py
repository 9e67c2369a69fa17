#!/usr/bin/env python3
"""Two bench record files, row by row: every verified record of NEW beside the record of OLD
with the same family, problem, variant and config; prints each change past the tolerance and
the largest ones, and exits 1 when a kernel row (not an anchor) moved past it.

    python3 ci/compare_bench.py OLD.jsonl NEW.jsonl [--tolerance 0.02]

Anchors (the device copy, cuBLAS) are listed but do not fail the check: they are the vendor's
figures, which move between processes by more than ours (results/README.md)."""

import gzip
import json
import sys


def load(path):
    rows = {}
    for line in (gzip.open(path, "rt") if path.endswith(".gz") else open(path)):
        r = json.loads(line)
        if not r.get("verified"):
            continue
        key = (r["family"], json.dumps(r["problem"], sort_keys=True), r["variant"], json.dumps(r["config"], sort_keys=True))
        rows[key] = r.get("gbps") or r.get("tflops")
    return rows


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    tol = float(sys.argv[sys.argv.index("--tolerance") + 1]) if "--tolerance" in sys.argv else 0.02
    args = [a for a in args if a != str(tol)]
    old, new = load(args[0]), load(args[1])
    changes = sorted((new[k] / old[k] - 1, k) for k in new if k in old and old[k] and new[k])
    print(f"{len(changes)} rows matched ({len(new)} verified in new, {len(old)} in old)")
    failed = False
    for d, (family, problem, variant, config) in changes:
        anchor = variant == "anchor"
        if abs(d) > tol:
            failed |= not anchor
            print(f"{'ANCHOR' if anchor else 'MOVED '} {d * 100:+.2f}% {family} {problem} {variant} {config}")
    kernels = [abs(d) for d, k in changes if k[2] != "anchor"]
    print(f"largest change of a kernel row: {max(kernels) * 100:.2f}%" if kernels else "no kernel rows")
    print("FAILED" if failed else f"every kernel row within {tol * 100:.1f}%")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
