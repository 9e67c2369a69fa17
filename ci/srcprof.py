#!/usr/bin/env python3
"""Summarise Nsight Compute source counters (`ncu -i REPORT --page source --csv --print-source
sass`, optionally gzipped): warp-state samples by stall reason, by opcode, and the
instructions with the most samples of one reason, with the instructions before them.

Usage: ci/srcprof.py FILE.csv[.gz] [REASON [CONTEXT [TOP]]]   (REASON e.g. stall_long_sb)
"""
import collections
import csv
import gzip
import re
import sys


def rows(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        data = list(csv.reader(f))
    return data[1], data[2:]


def main():
    path = sys.argv[1]
    hdr, data = rows(path)
    ix = {h: i for i, h in enumerate(hdr)}

    def num(r, h):
        try:
            return float(r[ix[h]])
        except (KeyError, ValueError):
            return 0.0

    reasons = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    total = collections.Counter()
    by_op = collections.defaultdict(collections.Counter)
    executed = collections.Counter()
    for r in data:
        src = r[ix["Source"]].strip()
        op = re.sub(r"^@!?U?P\w+\s+", "", src).split(" ")[0] if src else "?"
        executed[op] += num(r, "Instructions Executed")
        for h in reasons:
            v = num(r, h)
            total[h] += v
            by_op[op][h] += v
    all_samples = sum(total.values()) or 1
    print(f"{path}: {all_samples:.0f} samples")
    for h, v in total.most_common():
        if v:
            print(f"  {h:28s} {v:9.0f} {100 * v / all_samples:5.1f}%")
    print("by opcode (samples, reasons):")
    for op, c in sorted(by_op.items(), key=lambda kv: -sum(kv[1].values()))[:14]:
        s = sum(c.values())
        top = ", ".join(f"{k[6:]}={v:.0f}" for k, v in c.most_common() if v > 0)[:150]
        print(f"  {op:22s} {s:8.0f} {100 * s / all_samples:5.1f}% executed={executed[op]:.3g} | {top}")
    if len(sys.argv) > 2:
        reason = sys.argv[2]
        context = int(sys.argv[3]) if len(sys.argv) > 3 else 2
        top = int(sys.argv[4]) if len(sys.argv) > 4 else 8
        print(f"the {top} instructions with the most {reason} samples:")
        picks = sorted(range(len(data)), key=lambda i: -num(data[i], reason))[:top]
        for i in sorted(picks):
            print("-----")
            for j in range(max(0, i - context), min(len(data), i + 2)):
                r = data[j]
                mark = ">" if j == i else " "
                print(f"{mark} {j:5d} {r[ix['Source']].strip()[:70]:70s} executed={num(r, 'Instructions Executed'):.3g} "
                      f"{reason}={num(r, reason):.0f} all={num(r, 'Warp Stall Sampling (All Samples)'):.0f}")


if __name__ == "__main__":
    main()
