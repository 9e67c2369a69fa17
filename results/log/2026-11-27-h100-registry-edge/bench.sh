#!/usr/bin/env bash
# One CUDA bench of binary $1 (dynsmem = the head, dynsmem-base = a6f494a) into $OUT/bench-$2.jsonl.
# Binaries staged in .device/bin (stripped, xz); no Vulkan loader carried: CUDA rows only.
# --no-autotune: both binaries take their configs from the built-in tuning database or the
# heuristic, so that a rerun is not answered from the first run's autotune cache.
set -uo pipefail
cd "$(dirname "$0")/../../.."
for f in .device/bin/*.xz; do [ -e "$f" ] && xz -d "$f"; done
chmod +x .device/bin/*
nvidia-smi --query-gpu=name,driver_version,uuid --format=csv,noheader | tee "$OUT/device-$2.txt"
export XDG_RUNTIME_DIR=$(mktemp -d)
start=$(date +%s)
.device/bin/"$1" bench --no-autotune --json "$OUT/bench-$2.jsonl" --markdown > "$OUT/bench-$2.md" 2> "$OUT/bench-$2.err"
echo "rc=$? in $(( $(date +%s) - start )) s"
tail -n 40 "$OUT/bench-$2.md"
