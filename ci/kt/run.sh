#!/usr/bin/env bash
# Kernel Tuner interop with the real Python packages (ci/run step 3c; needs the release build):
#   1. a CPU sweep exported with `tune --kt`, checked by ci/kt/check_exports.py: both T4 files
#      against Kernel Tuner's schemas, Kernel Tuner's simulation-mode brute force reproducing
#      our best config, autotuning_methodology's SearchspaceStatistics with its default keys,
#      and a small autotuning_methodology experiment;
#   2. the committed H100 exports (results/log/*/kt/), energy objective included;
#   3. the other way: our strategies replaying the Kernel Tuner cache (`dynsmem replay-kt`).
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 -m pip install -q --disable-pip-version-check kernel_tuner==1.5.0 autotuning_methodology==1.1.0
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cargo run --release -q -- tune reduce --backend cpu --n 16384 --repeats 5 --warmup 1 --warmup-ms 0 \
  --cache "$out/cache.jsonl" --kt "$out/reduce-cpu" --quiet
python3 ci/kt/check_exports.py "$out"
for dir in results/log/*/kt; do
  [ -d "$dir" ] && python3 ci/kt/check_exports.py "$dir"
done
cargo run --release -q -- replay-kt "$out/reduce-cpu.kt-cache.json" --objective time_median --strategy anneal \
  --budget-evals 20 --repeats 5
