"""The fast-against-stress table of measure.sh's records: per bench row and per box-filter
config, the median ms of each schedule (same problem, same config) and their ratio."""
import json
import sys
from pathlib import Path

here = Path(sys.argv[1])


def load(path, key):
    rows = {}
    for line in open(path):
        r = json.loads(line)
        if r.get("backend") == "cpu" and r.get("variant") == "launch-sized" and r.get("median_ms"):
            rows[key(r)] = r
    return rows


def bench_key(r):
    return (r["family"], json.dumps(r["problem"], sort_keys=True), json.dumps(r.get("config"), sort_keys=True))


def cache_key(r):
    return json.dumps(r.get("config"), sort_keys=True)


def show(d):
    return ",".join(f"{k}={v}" for k, v in sorted(d.items())) if isinstance(d, dict) else str(d)


fast, stress = load(here / "bench-fast.jsonl", bench_key), load(here / "bench-stress.jsonl", bench_key)
print("| family | problem | config | fast ms | stress ms | stress / fast |")
print("| --- | --- | --- | ---: | ---: | ---: |")
for k, f in fast.items():
    s = stress.get(k)
    if s is None:
        print(f"| {k[0]} | {show(f['problem'])} | {show(f.get('config'))} | {f['median_ms']:.3f} | - | - |")
        continue
    ratio = s["median_ms"] / f["median_ms"]
    print(f"| {k[0]} | {show(f['problem'])} | {show(f.get('config'))} | {f['median_ms']:.3f} | {s['median_ms']:.3f} | {ratio:.1f} |")


def cache(path):
    rows = {}
    for line in open(path):
        r = json.loads(line)
        rec = r.get("record", r)
        if rec.get("median_ms"):
            rows[json.dumps(rec.get("config"), sort_keys=True)] = rec["median_ms"]
    return rows


print()
print("Box filter 1000 x 1777, radius 3 (one launch per config):")
print()
print("| config | fast ms | stress ms | stress / fast |")
print("| --- | ---: | ---: | ---: |")
bf, bs = cache(here / "box-check-fast.jsonl"), cache(here / "box-check-stress.jsonl")
for k, f in bf.items():
    s = bs.get(k)
    print(f"| {show(json.loads(k))} | {f:.1f} | {s:.1f} | {s / f:.1f} |" if s else f"| {show(json.loads(k))} | {f:.1f} | - | - |")
