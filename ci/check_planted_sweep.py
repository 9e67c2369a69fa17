"""Checks the planted-faults sweep of ci/run step 3a (examples/own-kernel, `planted_faults`).

Usage: python3 ci/check_planted_sweep.py CACHE.jsonl REPORT.txt

Passes only if the cache holds each of the 12 configs once, the two planted ones failed with
their reasons (the far write named as such, the hang killed at its limit), and the other 10
verified with a time; and the report says the supervisor recorded both.
"""
import json
import sys

FAR, HANG = {"block": 64, "per_thread": 4}, {"block": 128, "per_thread": 2}


def main(cache, report):
    entries = [json.loads(line) for line in open(cache) if line.strip()]
    configs = [json.dumps(e["tune"]["params"], sort_keys=True) for e in entries]
    problems = []
    if len(configs) != 12 or len(set(configs)) != 12:
        problems.append(f"{len(configs)} entries, {len(set(configs))} distinct configs: want 12 and 12")
    for e in entries:
        p, err = e["tune"]["params"], e.get("error") or ""
        if p == FAR:
            if "outside the buffer" not in err:
                problems.append(f"the far write {p}: {err!r}")
        elif p == HANG:
            if "did not finish within" not in err or "killed" not in err:
                problems.append(f"the hang {p}: {err!r}")
        elif err or not e.get("verified") or e.get("median_ms") is None:
            problems.append(f"{p} should have verified: {err!r}")
    text = open(report).read()
    if "supervisor: block=128 per_thread=2 ran past" not in text:
        problems.append("the report does not say the supervisor killed the hang")
    for p in problems:
        print("planted sweep:", p)
    if problems:
        sys.exit(1)
    print(f"planted sweep: 10 verified, the far write and the hang recorded as failed ({cache})")


if __name__ == "__main__":
    main(*sys.argv[1:3])
