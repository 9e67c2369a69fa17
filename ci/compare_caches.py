#!/usr/bin/env python3
"""Compare two `dynsmem tune` caches of one sweep (e.g. one process against merged shards).

Usage: compare_caches.py A.jsonl B.jsonl

Prints, for each cache: its entries, verified configs and best config; then whether the
config sets and each config's outcome (T4 validity class) are equal, where A's best ranks
in B and B's best in A, and the spread of B's median time over A's per config. Exits 1 when
the config sets or outcomes differ (the times may differ: they are measurements).
"""
import json
import statistics
import sys


def load(path):
    out = {}
    with open(path) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue  # a line a killed writer left unfinished
            key = tuple(sorted(e["tune"]["params"].items()))
            out.setdefault(key, e)
    return out


def show(key):
    return " ".join(f"{k}={v}" for k, v in key)


def time(e):
    ok = e.get("verified") and not e.get("error")
    return e.get("median_ms") if ok else None


def ranked(c):
    return sorted((k for k in c if time(c[k]) is not None), key=lambda k: time(c[k]))


def main(a_path, b_path):
    a, b = load(a_path), load(b_path)
    for name, c in (("A", a), ("B", b)):
        r = ranked(c)
        best = f"{show(r[0])} {time(c[r[0]]):.4f} ms" if r else "none"
        print(f"{name} {len(c)} entries, {len(r)} verified; best {best}")
    same_set = set(a) == set(b)
    print(f"config sets equal: {same_set} (only in A: {len(set(a) - set(b))}, only in B: {len(set(b) - set(a))})")
    outcome = [k for k in set(a) & set(b) if a[k]["tune"]["invalidity"] != b[k]["tune"]["invalidity"]]
    print(f"outcomes equal: {not outcome} ({len(outcome)} differ)")
    for k in outcome[:10]:
        print(f"  {show(k)}: A {a[k]['tune']['invalidity']}, B {b[k]['tune']['invalidity']}")
    ra, rb = ranked(a), ranked(b)
    if ra and rb:
        print(f"best equal: {ra[0] == rb[0]}; A's best is #{rb.index(ra[0]) + 1} in B "
              f"({time(b[ra[0]]):.4f} ms), B's best is #{ra.index(rb[0]) + 1} in A ({time(a[rb[0]]):.4f} ms)")
        ci = a[ra[0]].get("median_ci95_ms")
        if ci:
            tb = time(a[rb[0]])
            print(f"A's best's 95% interval of the median: [{ci[0]:.4f}, {ci[1]:.4f}] ms; B's best as A measured it: "
                  f"{tb:.4f} ms, {'inside' if tb <= ci[1] else 'outside'} it (the two are "
                  f"{'not told apart' if tb <= ci[1] else 'told apart'} by A's runs)")
        for name, c in (("A", a), ("B", b)):
            gpus = sorted({(e["tune"].get("worker") or {}).get("gpu") or e.get("device") for e in c.values()})
            print(f"{name} measured on: {', '.join(str(g) for g in gpus)}")
        for i in range(min(5, len(ra))):
            print(f"  A #{i + 1} {show(ra[i])} {time(a[ra[i]]):.4f} ms | B #{i + 1} {show(rb[i])} {time(b[rb[i]]):.4f} ms")
        ratios = sorted(time(b[k]) / time(a[k]) for k in set(ra) & set(rb))
        q = statistics.quantiles(ratios, n=10) if len(ratios) >= 10 else [ratios[0]] * 9
        print(f"B/A median time per config: median {statistics.median(ratios):.3f}, "
              f"p10 {q[0]:.3f}, p90 {q[8]:.3f}, min {ratios[0]:.3f}, max {ratios[-1]:.3f} over {len(ratios)} configs")
    return 0 if same_set and not outcome else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
