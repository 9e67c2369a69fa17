#!/usr/bin/env python3
"""Kernel line coverage from two lcov files (before, after): one row per file of
device-kernels/src with its instrumented lines and the share hit in each, then the lines
still not hit after, as ranges per file (each to be reached by a test or named with a reason).

    python3 ci/coverage_table.py BEFORE.lcov AFTER.lcov > coverage.md
"""
import sys


def read(path):
    """{file: {line: hits}} for the kernel files."""
    files, current = {}, None
    for raw in open(path):
        line = raw.strip()
        if line.startswith("SF:"):
            name = line[3:]
            at = name.find("device-kernels/src/")
            current = files.setdefault(name[at:], {}) if at >= 0 else None
        elif line.startswith("DA:") and current is not None:
            number, hits = line[3:].split(",")[:2]
            current[int(number)] = max(current.get(int(number), 0), int(hits))
    return files


def ranges(lines):
    out, start, prev = [], None, None
    for n in sorted(lines):
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append((start, prev))
            start = prev = n
    if start is not None:
        out.append((start, prev))
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out)


def main():
    before, after = read(sys.argv[1]), read(sys.argv[2])
    print("| file | lines | hit without the property test | hit with it |")
    print("| --- | ---: | ---: | ---: |")
    tot = [0, 0, 0]
    for name in sorted(after):
        lines = after[name]
        hit_b = sum(1 for n, h in before.get(name, {}).items() if h > 0)
        hit_a = sum(1 for h in lines.values() if h > 0)
        tot = [tot[0] + len(lines), tot[1] + hit_b, tot[2] + hit_a]
        print(f"| `{name}` | {len(lines)} | {hit_b} ({100 * hit_b / max(len(lines), 1):.1f}%) "
              f"| {hit_a} ({100 * hit_a / max(len(lines), 1):.1f}%) |")
    print(f"| all | {tot[0]} | {tot[1]} ({100 * tot[1] / max(tot[0], 1):.1f}%) "
          f"| {tot[2]} ({100 * tot[2] / max(tot[0], 1):.1f}%) |")
    print()
    print("Lines not hit with the property test:")
    print()
    for name in sorted(after):
        missed = [n for n, h in after[name].items() if h == 0]
        if missed:
            print(f"- `{name}` ({len(missed)}): {ranges(missed)}")


main()
