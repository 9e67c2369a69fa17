#!/usr/bin/env bash
# The between-process experiment (issue 20): fresh processes of `dynsmem run reduce` (2^27
# floats, past L2), the same config every time, under conditions that separate the causes
# of a spread between processes:
#   clocks       timed runs waited one by one (the device idles while the host submits
#                the next) against runs queued back to back; with no CUDA context
#                (DYNSMEM_WGSL_HOLD_CUDA=0), one held in the WGSL process (the default on
#                NVIDIA), and one held by another, idle, process; the observer's SM clock
#                and throttle reasons are in every record
#   compilation  __GL_SHADER_DISK_CACHE=0: the driver compiles the pipeline afresh in each
#                process instead of taking its disk cache
#   placement    every process allocates its buffers anew: what is left once clocks and
#                compilation are held is placement (and the run-to-run floor)
# Conditions alternate process by process, so a drift over the experiment hits each alike.
# Usage: ci/variance.sh BINARY OUT -> OUT/variance.tgz (a JSON-lines file per condition),
# OUT/variance.txt
set -uo pipefail
B=$1
OUT=$2
ROUNDS=${VARIANCE_ROUNDS:-4}
D="$OUT/variance"
mkdir -p "$D"
status=0
one() {  # CONDITION, then the run arguments
  local cond=$1; shift
  $B run reduce --energy-ms 0 --json "$D/$cond.jsonl" "$@" > /dev/null 2>> "$D/errors.txt" || status=1
}
N=${VARIANCE_N:-134217728}
for i in $(seq 1 "$ROUNDS"); do
  DYNSMEM_WGSL_HOLD_CUDA=0 one wgsl-back-to-back --backend wgsl --n "$N"
  DYNSMEM_WGSL_HOLD_CUDA=0 one wgsl-waited --backend wgsl --n "$N" --wait-each-run
  one wgsl-cuda-context-held --backend wgsl --n "$N"
  # Another process holds an idle CUDA context meanwhile.
  python3 -c "import cupy, time; cupy.zeros(1); time.sleep(60)" & holder=$!
  sleep 3
  DYNSMEM_WGSL_HOLD_CUDA=0 one wgsl-beside-idle-cuda-process --backend wgsl --n "$N"
  kill $holder 2>/dev/null; wait $holder 2>/dev/null
  one cuda-back-to-back --backend cuda --n "$N"
  one cuda-waited --backend cuda --n "$N" --wait-each-run
  if [ "$i" -le 2 ]; then
    DYNSMEM_WGSL_HOLD_CUDA=0 __GL_SHADER_DISK_CACHE=0 one wgsl-no-shader-cache --backend wgsl --n "$N"
  fi
done
python3 - "$D" > "$OUT/variance.txt" <<'PY' || status=1
import glob, json, os, statistics, sys
rows = {}
for path in glob.glob(os.path.join(sys.argv[1], "*.jsonl")):
  for line in open(path):
    r = json.loads(line)
    if r.get("family") != "reduce" or r.get("gbps") is None:
        continue
    key = (os.path.basename(path)[:-6], r["backend"])
    obs = r.get("observed") or {}
    sm = (obs.get("sm_clock_mhz") or {}).get("median")
    reasons = ",".join(sorted(set(obs.get("throttle_reasons") or [])))
    rows.setdefault(key, []).append((r["gbps"], sm, reasons))
print("| condition | processes | GB/s min | GB/s median | GB/s max | max/min | SM MHz (median per process) | throttle reasons |")
print("|---|---|---|---|---|---|---|---|")
for (tag, backend), v in sorted(rows.items()):
    g = [x[0] for x in v]
    sms = " ".join(str(int(x[1])) if x[1] else "-" for x in v)
    reasons = " ".join(sorted({x[2] for x in v if x[2]})) or "-"
    print(f"| {tag} | {len(v)} | {min(g):.0f} | {statistics.median(g):.0f} | {max(g):.0f} | {max(g)/min(g):.3f} | {sms} | {reasons} |")
PY
tar czf "$OUT/variance.tgz" -C "$OUT" variance && rm -rf "$D"
cat "$OUT/variance.txt"
exit $status
