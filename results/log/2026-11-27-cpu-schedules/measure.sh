#!/usr/bin/env bash
# The CPU backend's fast schedule against its stress schedule, at the same problems, on this
# machine (2 cores): every registry family's CPU bench case (`dynsmem bench`, CPU backend
# only: the Vulkan loader hidden) and a 1000 x 1777 box filter of radius 3 (the example
# crate's `box_filter`), its full CPU-run check (every config run once and checked against the
# reference config's run) on each schedule. Writes into this folder; `table.py` reads it.
#
#   bash results/log/2026-11-27-cpu-schedules/measure.sh DYNSMEM OWN_CLI
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dynsmem="${1:-target/cpu-only/release/dynsmem}"
own_cli="${2:-target/release/own-cli}"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git rev-parse HEAD)$(git diff --quiet || echo -dirty)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) x $(nproc)"
} > "$here/machine.txt"
for s in fast stress; do
  rm -f "$here/bench-$s.jsonl"
  start=$(date +%s.%N)
  bash ci/no-vulkan.sh env DYNSMEM_CPU_SCHEDULE=$s "$dynsmem" bench --json "$here/bench-$s.jsonl" \
    --repeats 5 --warmup 1 --warmup-ms 0 > "$here/bench-$s.txt" 2>&1
  echo "bench $s: $(echo "$(date +%s.%N) - $start" | bc) s" >> "$here/machine.txt"
done
for s in fast stress; do
  rm -f "$here/box-check-$s.jsonl"
  start=$(date +%s.%N)
  "$own_cli" tune box_filter --backend cpu --width 1777 --height 1000 --radius 3 --cpu-schedule $s \
    --repeats 1 --warmup 0 --warmup-ms 0 --confirm-top 0 --cache "$here/box-check-$s.jsonl" \
    > "$here/box-check-$s.txt" 2>&1
  echo "box filter check $s: $(echo "$(date +%s.%N) - $start" | bc) s" >> "$here/machine.txt"
done
python3 "$here/table.py" "$here" > "$here/table.md"
cat "$here/table.md"
