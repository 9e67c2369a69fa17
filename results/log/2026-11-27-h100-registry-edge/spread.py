#!/usr/bin/env python3
"""Base (a6f494a) against the head (2734382) run twice, same H100 (by UUID), one after another:
per kernel row, the base figure beside the two head figures, and whether the base lies within
the head's own spread widened by 2% (a change the refactor made would show outside it).

    python3 spread.py   (from this folder)"""
import gzip, json

def load(p):
    rows = {}
    for l in gzip.open(p, "rt"):
        r = json.loads(l)
        if not r.get("verified") or r.get("variant") == "anchor":
            continue
        key = (r["family"], json.dumps(r["problem"], sort_keys=True), r["variant"], json.dumps(r["config"], sort_keys=True))
        rows[key] = r.get("gbps") or r.get("tflops")
    return rows

base, h1, h2 = (load(f"bench/bench-{n}.jsonl.gz") for n in ("base-1", "head-1", "head-2"))
outside, n, within2 = [], 0, 0
for k, b in base.items():
    if k not in h1 or k not in h2 or not b:
        continue
    n += 1
    lo, hi = min(h1[k], h2[k]), max(h1[k], h2[k])
    if min(abs(h1[k] / b - 1), abs(h2[k] / b - 1)) <= 0.02:
        within2 += 1
    if not (lo * 0.98 <= b <= hi * 1.02):
        outside.append((k, b, h1[k], h2[k]))
spread = max(abs(h1[k] / h2[k] - 1) for k in base if k in h1 and k in h2 and h2[k])
print(f"{n} kernel rows; {within2} with a head run within 2% of the base; head's own largest spread {spread:.2%}")
for k, b, x, y in outside:
    print("OUTSIDE", k[0], k[1], k[2], f"base {b:.4g} head {x:.4g} / {y:.4g}")
print(f"{len(outside)} rows outside the head's spread widened by 2%")
