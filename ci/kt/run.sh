#!/usr/bin/env bash
# Kernel Tuner interop with the real Python packages (ci/run step 3c; needs the release build):
#   1. a fresh CPU sweep (with filtered configs) exported with `tune --kt`, checked by ci/kt/check_exports.py: the files
#      against Kernel Tuner's schemas and its cache layout byte for byte; Kernel Tuner's own
#      tools on them (simulation-mode brute force with the filtered configs as restrictions,
#      tune_cache, random_sample and genetic_algorithm, store_results, create_device_targets,
#      the dashboard's loader); autotuning_methodology with the time, time_median and energy
#      keys (statistics, and full experiments where they can be meaningful);
#   2. the committed H100 exports (results/log/*/kt/: failures, filtered configs, energy);
#   3. the other way: our strategies replaying the Kernel Tuner cache (`dynsmem replay-kt`),
#      by time and by a rate (higher is better), whose optimum must be the file's greatest.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 -m pip install -q --disable-pip-version-check kernel_tuner==1.5.0 autotuning_methodology==1.1.0
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# block=2048 is over the CPU backend's 1024 threads: 12 configs filtered before launch, which the
# export leaves out of the cache and Kernel Tuner's simulation takes as restrictions.
cargo run --release -q -- tune reduce --backend cpu --n 16384 --repeats 5 --warmup 1 --warmup-ms 0 \
  --values block=4,8,16,32,64,2048 --cache "$out/cache.jsonl" --kt "$out/reduce-cpu" --quiet
python3 ci/kt/check_exports.py "$out"
python3 ci/kt/check_exports.py ci/kt/example --no-experiment
for dir in results/log/*/kt; do
  [ -d "$dir" ] && python3 ci/kt/check_exports.py "$dir"
done
cargo run --release -q -- replay-kt "$out/reduce-cpu.kt-cache.json" --objective time_median --strategy anneal \
  --budget-evals 20 --repeats 5
cargo run --release -q -- replay-kt "$out/reduce-cpu.kt-cache.json" --objective GB/s --strategy exhaustive \
  --repeats 1 | tee "$out/replay-rate.txt"
python3 - "$out/reduce-cpu.kt-cache.json" "$out/replay-rate.txt" <<'PY'
import json, re, sys
cache = json.load(open(sys.argv[1]))
keys = cache["tune_params_keys"]
best = max((e for e in cache["cache"].values() if "__error__" not in e), key=lambda e: e["GB/s"])
text = open(sys.argv[2]).read()
m = re.search(r"optimum (\S+) at \[([^\]]*)\]", text)
assert m, f"replay-kt named no optimum:\n{text}"
assert float(m.group(1)) == best["GB/s"], f"replay-kt's optimum {m.group(1)} GB/s != the file's greatest {best['GB/s']}"
assert [int(v) for v in m.group(2).split(",")] == [best[k] for k in keys], f"replay-kt's optimum at [{m.group(2)}]"
assert "found the optimum in 1 of 1 runs" in text, text
print(f"replay-kt GB/s: the optimum is the file's greatest, {best['GB/s']} GB/s at {[best[k] for k in keys]}")
PY
