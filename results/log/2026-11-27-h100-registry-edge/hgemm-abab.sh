#!/usr/bin/env bash
# The one bench row whose base figure fell outside the head's own spread (+-2%): hgemm 4096^3
# f16, f16 output, the bench's config, base and head alternating in 4 rounds (ABAB...), each a
# `run` of 100 timed launches; the last line per run is its median TFLOP/s.
set -uo pipefail
cd "$(dirname "$0")/../../.."
for f in .device/bin/*.xz; do [ -e "$f" ] && xz -d "$f"; done
chmod +x .device/bin/*
export XDG_RUNTIME_DIR=$(mktemp -d)
args="run hgemm --backend cuda --m 4096 --n 4096 --k 4096 --dtype f16 --out input --bm 128 --bn 256 --cluster 2 --group-m 8 --stages 4 --repeats 100 --no-autotune"
for round in 1 2 3 4; do
  for b in dynsmem-base dynsmem; do
    .device/bin/$b $args --json "$OUT/hgemm-abab.jsonl" > "$OUT/hgemm-$b-$round.log" 2>&1
    echo "$round $b rc=$? $(grep -m1 '^time:' "$OUT/hgemm-$b-$round.log" | cut -c1-140)"
  done
done
