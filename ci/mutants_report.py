#!/usr/bin/env python3
"""ci/mutants.sh's helpers.

    python3 ci/mutants_report.py --lines KERNELS.lcov FILE
        the --re regex that keeps FILE's mutants on lines the host build compiles
    python3 ci/mutants_report.py OUT KERNELS.lcov
        the report: per kernel file, mutants caught / missed / timed out / unviable, the
        mutants left out (lines not compiled on the host), and every missed mutant
"""
import json
import pathlib
import re
import subprocess
import sys


def compiled_lines(lcov, file):
    lines, cur = set(), False
    for raw in open(lcov):
        line = raw.strip()
        if line.startswith("SF:"):
            cur = line[3:].endswith(file)
        elif cur and line.startswith("DA:"):
            lines.add(int(line[3:].split(",")[0]))
    return lines


def regex(lcov, file):
    lines = compiled_lines(lcov, file)
    if not lines:
        return ""
    return "^" + re.escape(file) + ":(" + "|".join(str(n) for n in sorted(lines)) + "):"


def listed(file):
    out = subprocess.run(["cargo", "mutants", "--list", "-p", "dynsmem-kernels", "-f", file],
                         capture_output=True, text=True, check=True).stdout
    return [l for l in out.splitlines() if l.startswith(file)]


def report(out, lcov):
    out = pathlib.Path(out)
    rows, missed, totals = [], [], [0] * 6
    for outcomes in sorted(out.glob("*/mutants.out/outcomes.json")):
        data = json.load(open(outcomes))
        counts = {"CaughtMutant": 0, "MissedMutant": 0, "Timeout": 0, "Unviable": 0}
        file = None
        for o in data["outcomes"]:
            scenario = o["scenario"]
            if not isinstance(scenario, dict):
                continue
            m = scenario["Mutant"]
            file = m["file"]
            counts[o["summary"]] = counts.get(o["summary"], 0) + 1
            if o["summary"] == "MissedMutant":
                missed.append(m["name"])
        if file is None:
            continue
        left_out = len(listed(file)) - sum(counts.values())
        tested = counts["CaughtMutant"] + counts["MissedMutant"] + counts["Timeout"]
        share = (counts["CaughtMutant"] + counts["Timeout"]) / tested if tested else 0
        rows.append(f"| {file} | {counts['CaughtMutant']} | {counts['MissedMutant']} | {counts['Timeout']} | "
                    f"{counts['Unviable']} | {left_out} | {share:.1%} |")
        for i, k in enumerate(["CaughtMutant", "MissedMutant", "Timeout", "Unviable"]):
            totals[i] += counts[k]
        totals[4] += left_out
    tested = totals[0] + totals[1] + totals[2]
    print("| kernel file | caught | missed | timed out | unviable | not on the host | caught share |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    share = (totals[0] + totals[2]) / tested if tested else 0
    print(f"| **all** | **{totals[0]}** | **{totals[1]}** | **{totals[2]}** | **{totals[3]}** | **{totals[4]}** | **{share:.1%}** |")
    print("\nA timed-out mutant counts as caught (it hangs or slows the kernel past the test's bound);")
    print("an unviable one does not build; 'not on the host': mutants on lines the host build does")
    print("not compile (`#[cfg(gpu)]` code, generics no test instantiates), which no CPU test can see.")
    print("\n## Missed\n")
    print("\n".join(f"- `{m}`" for m in missed) or "None.")


if __name__ == "__main__":
    if sys.argv[1] == "--lines":
        print(regex(sys.argv[2], sys.argv[3]))
    else:
        report(sys.argv[1], sys.argv[2])
