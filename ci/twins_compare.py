#!/usr/bin/env python3
"""The cuda-static rows of two bench calls, nvcc cubins against NVRTC (issue 42's check).

    python3 ci/twins_compare.py DIR

DIR holds bench-{a,b}-{nvcc,nvrtc}.jsonl (`dynsmem bench --json`, with DYNSMEM_TWIN_COMPILER=nvcc
and =nvrtc, in the order nvcc, NVRTC for a and NVRTC, nvcc for b). Prints a Markdown table of the
medians and NVRTC / nvcc (mean of the two calls), and the largest |ratio - 1|.
"""
import json
import sys


def load(path):
    rows = {}
    for line in open(path):
        r = json.loads(line)
        if r["variant"] != "cuda-static":
            continue
        kernel = r["kernel"].replace(" (nvcc)", "").split(":")[0]
        rows[(r["family"], json.dumps(r["problem"], sort_keys=True), kernel)] = r
    return rows


def main(folder):
    runs = {(c, k): load(f"{folder}/bench-{c}-{k}.jsonl") for c in "ab" for k in ("nvcc", "nvrtc")}
    first = next(iter(runs[("a", "nvcc")].values()))
    print(f"commit {first['commit']}, {first['device']}, driver {first['driver']}\n")
    print("| family | problem | twin | nvcc ms (a, b) | NVRTC ms (a, b) | NVRTC / nvcc | verified |")
    print("|---|---|---|---:|---:|---:|---|")
    worst, within, rows = 0.0, 0, 0
    for key, nvcc_a in runs[("a", "nvcc")].items():
        family, problem, kernel = key
        if nvcc_a.get("error"):
            print(f"| {family} | `{problem}` | {kernel} | refused: static arrays over 48 KB | (same) | | |")
            continue
        nvrtc_a, nvcc_b, nvrtc_b = runs[("a", "nvrtc")][key], runs[("b", "nvcc")][key], runs[("b", "nvrtc")][key]
        assert nvcc_a["kernel"].endswith("(nvcc)") and nvcc_b["kernel"].endswith("(nvcc)"), key
        assert not nvrtc_a["kernel"].endswith("(nvcc)") and not nvrtc_b["kernel"].endswith("(nvcc)"), key
        nvcc = (nvcc_a["median_ms"] + nvcc_b["median_ms"]) / 2
        nvrtc = (nvrtc_a["median_ms"] + nvrtc_b["median_ms"]) / 2
        verified = all(r["verified"] for r in (nvcc_a, nvrtc_a, nvcc_b, nvrtc_b))
        ratio = nvrtc / nvcc
        worst = max(worst, abs(ratio - 1))
        rows += 1
        within += abs(ratio - 1) <= 0.02
        print(
            f"| {family} | `{problem}` | {kernel} | {nvcc_a['median_ms']:.4f}, {nvcc_b['median_ms']:.4f} "
            f"| {nvrtc_a['median_ms']:.4f}, {nvrtc_b['median_ms']:.4f} | {ratio:.4f} | {verified} |"
        )
    print(f"\nwithin 2%: {within} of {rows} rows; largest |NVRTC / nvcc - 1|: {worst:.4f}")


if __name__ == "__main__":
    main(sys.argv[1])
