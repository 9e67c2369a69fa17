#!/usr/bin/env python3
"""Per-shape ratios to cuBLAS of one run folder: heuristic or database config (noauto), first
autotuned process (auto1), second process reading the autotune cache (auto2); geometric means;
the headline cubes' median over three processes (auto2, head2, head3).
Usage: python3 summarize.py c5a7a0d"""
import gzip, json, math, sys

d = sys.argv[1]
rows = {}
for f in ["noauto", "auto1", "auto2", "head2", "head3"]:
    for line in gzip.open(f"{d}/{f}.jsonl.gz", "rt"):
        r = json.loads(line)
        if r["variant"] != "anchor":
            rows.setdefault(r["shape"], {})[f] = r


def gm(v):
    return math.exp(sum(map(math.log, v)) / len(v))


print(f"{'shape':22s} {'m x n x k':17s} noauto auto1  auto2  | config (auto2), cuBLAS TFLOP/s")
for s, x in rows.items():
    p, c = x["noauto"]["problem"], x["auto2"]["config"]
    cfg = f"{c['bm']}x{c['bn']}x{c['bk']} s{c['stages']} tm{c.get('tm')} tma{int(c.get('tma', 0))} splits{c.get('splits', 1)}"
    ratios = " ".join(f"{x[f]['ratio']:.3f}" for f in ["noauto", "auto1", "auto2"])
    print(f"{s:22s} {p['m']:5d}x{p['n']:5d}x{p['k']:5d} {ratios} | {cfg}, {x['auto2']['anchor_tflops']:.1f}")
for f in ["noauto", "auto1", "auto2"]:
    every = [x[f]["ratio"] for x in rows.values()]
    rnd = [x[f]["ratio"] for s, x in rows.items() if s.startswith("random")]
    print(f"{f}: 33 shapes geomean {gm(every):.3f} min {min(every):.3f}; 30 random geomean {gm(rnd):.3f} min {min(rnd):.3f}")
for s in ["cube-1024", "cube-4096", "cube-8192"]:
    v = sorted(rows[s][f]["ratio"] for f in ["auto2", "head2", "head3"])
    print(f"{s}: three processes {', '.join(f'{r:.3f}' for r in v)}; median {v[1]:.3f}")
