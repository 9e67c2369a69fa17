#!/usr/bin/env python3
"""Carries host/kernel-tests/unreachable.txt's `path:line` names across an edit of the kernel
files: each named line is followed through `git diff BASE` (renames too) to where it is now,
and the list is rewritten in place. A named line that the edit changed or removed is kept as
it was and printed, for a person to name again (ci/kernel_coverage.sh then says which
branches are unnamed).

    python3 ci/unreachable_renumber.py BASE [LIST]      (LIST: host/kernel-tests/unreachable.txt)
"""
import re
import subprocess
import sys


def git(*args):
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def renames(base):
    """{old path: new path} of the files git sees renamed since `base` (working tree)."""
    out = {}
    for line in git("diff", "-M", "--name-status", base, "--", "device-kernels/src").splitlines():
        parts = line.split("\t")
        if parts[0].startswith("R") and len(parts) == 3:
            out[parts[1]] = parts[2]
    return out


def line_map(base, old, new):
    """A function from `old`'s line numbers at `base` to `new`'s in the working tree: None for
    a line the diff changed or removed."""
    hunks = []
    diff = git("diff", "-M", "-U0", base, "--", old, new) if old != new else git("diff", "-U0", base, "--", old)
    for h in re.finditer(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", diff, re.M):
        o, oc, n, nc = int(h[1]), int(h[2] or 1), int(h[3]), int(h[4] or 1)
        hunks.append((o, oc, n, nc))

    def f(line):
        delta = 0
        for o, oc, n, nc in hunks:
            if oc > 0 and o <= line < o + oc:
                return None
            # A hunk before the line: `oc` old lines from `o` became `nc` (an insertion, `oc` 0,
            # comes after old line `o`).
            if (oc > 0 and line >= o + oc) or (oc == 0 and line > o):
                delta += nc - oc
        return line + delta

    return f


def main():
    base = sys.argv[1]
    path = sys.argv[2] if len(sys.argv) > 2 else "host/kernel-tests/unreachable.txt"
    moved = renames(base)
    maps, out, lost = {}, [], []
    for raw in open(path):
        m = re.match(r"^(device-kernels/src/\S+):(\d+)(\s.*)?$", raw.rstrip("\n"))
        if not m:
            out.append(raw)
            continue
        old, n, rest = m[1], int(m[2]), m[3] or ""
        new = moved.get(old, old)
        if (old, new) not in maps:
            maps[(old, new)] = line_map(base, old, new)
        to = maps[(old, new)](n)
        if to is None:
            lost.append(f"{old}:{n}")
            out.append(raw)
        else:
            out.append(f"{new}:{to}{rest}\n")
    open(path, "w").writelines(out)
    for name in lost:
        print(f"changed by the edit, name it again: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
