#!/usr/bin/env bash
# The property tests' long run (tests/properties.rs): CASES random problems, each with a random
# config of the family's search space, per family, backend and variant (default 200), on the CPU
# backend and, where a Vulkan adapter is found, on WGSL; seeded by SEED (default: the time, printed
# so that a failure replays). A failure prints the case shrunk to its smallest failing dimensions
# and the `dynsmem run` options that replay it. The README's test command runs 24 cases per family
# on the CPU backend (plus those that cover every parameter value) and 3 on WGSL.
#
#   bash ci/properties.sh [CASES] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
cases="${1:-200}"
seed="${2:-$(date +%s)}"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
echo "properties: $cases cases per family, backend and variant, seed $seed" >&2
start=$(date +%s)
DYNSMEM_PROPERTY_CASES="$cases" DYNSMEM_PROPERTY_SEED="$seed" \
  cargo test --release -p dynsmem --test properties -- --nocapture --test-threads 1
echo "properties: passed in $(( $(date +%s) - start )) s" >&2
