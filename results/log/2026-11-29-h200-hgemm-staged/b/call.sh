#!/usr/bin/env bash
# Issue 75, call B on the H200 (same binaries as call A): 1. 12 random shapes (every side a
# multiple of 8, log-uniform in [1024, 16384], seed from `date +%s` here), f16 and bf16 each,
# tuning on first use (empty cache), interleaved with cuBLAS; 2. Nsight Compute at 2560^3,
# ours (the tuned config) beside cuBLAS; 3. racecheck, staged and not, at two shapes (the
# sanitizer's internal error in call A: which paths it follows); 4. a wider sweep at 2560^3.
set -u
for f in .device/bin/*.xz; do [ -e "$f" ] && xz -d -f "$f"; done; chmod +x .device/bin/*
D=./.device/bin/dynsmem; d=/tmp/r75b; rm -rf "$d"; mkdir -p "$d"; S=$SECONDS
left() { echo $(( 560 - (SECONDS - S) )); }
export RUST_BACKTRACE=0 DYNSMEM_AUTOTUNE_CACHE=$d/at
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$d/device.txt"
seed=$(date +%s); echo "seed $seed" | tee "$d/seed.txt"
python3 - "$seed" > "$d/shapes.txt" <<'PY'
import math, random, sys
r = random.Random(int(sys.argv[1]))
for i in range(12):
    print(*(int(math.exp(r.uniform(math.log(1024), math.log(16385)))) // 8 * 8 for _ in range(3)))
PY
cat "$d/shapes.txt" | tr '\n' ';'; echo
echo "== 1. random shapes"
while read -r m n k; do
  for dt in f16 bf16; do
    [ "$(left)" -gt 200 ] || { echo "skipped $m $n $k $dt: time"; continue; }
    timeout 90 $D run hgemm --backend cuda --m $m --n $n --k $k --dtype $dt --repeats 20 --energy-ms 0 --json "$d/random.jsonl" > "$d/one.txt" 2>&1 || { echo "$m $n $k $dt rc=$?"; tail -2 "$d/one.txt"; }
  done
done < "$d/shapes.txt"
echo "t=$((SECONDS-S))"
python3 - "$d" <<'PY' | tee "$d/summary.txt"
import json, sys, math
d = sys.argv[1]; rs = {}
for l in open(d + "/random.jsonl"):
    r = json.loads(l)
    if r.get("variant") != "launch-sized": continue
    p, c = r["problem"], r.get("config") or {}
    x = r.get("paired_ratio") or r.get("ratio")
    rs.setdefault(p["dtype"], []).append(x)
    print(p["m"], p["n"], p["k"], p["dtype"], r.get("kernel"), json.dumps(c, separators=(",", ":")), "%.4f ms" % r["median_ms"], "ratio %.3f" % x, "verified" if r.get("verified") else "NOT VERIFIED")
for dt, v in rs.items():
    print(dt, "geomean %.3f min %.3f of %d" % (math.exp(sum(map(math.log, v)) / len(v)), min(v), len(v)))
allv = [x for v in rs.values() for x in v]
if allv: print("all", "geomean %.3f min %.3f of %d" % (math.exp(sum(map(math.log, allv)) / len(allv)), min(allv), len(allv)))
PY
echo "== 2. ncu 2560^3"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SEC="--section SpeedOfLight --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis"
P="run hgemm --backend cuda --m 2560 --n 2560 --k 2560 --repeats 2 --warmup 1 --energy-ms 0"
timeout 100 $D $P > /dev/null 2>&1
[ "$(left)" -gt 120 ] && { timeout 80 $NCU $SEC -k regex:hgemm_wgmma -s 2 -c 1 --csv --page details $D $P > "$d/ncu-ours-2560.csv" 2> "$d/ncu.err"; echo "ncu ours rc=$?"; }
[ "$(left)" -gt 100 ] && { timeout 80 $NCU $SEC -k 'regex:^(?!hgemm).*(gemm|nvjet|sm90|xmma)' -s 2 -c 1 --csv --page details $D $P > "$d/ncu-cublas-2560.csv" 2>> "$d/ncu.err"; echo "ncu cublas rc=$?"; }
echo "t=$((SECONDS-S))"
echo "== 3. racecheck"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for s in "200 296 1000" "513 264 4104"; do for st in false true; do
  [ "$(left)" -gt 70 ] || continue
  read -r m n k <<< "$s"
  timeout 60 $CS --tool racecheck --kernel-name kns=hgemm_wgmma $D run hgemm --backend cuda --m $m --n $n --k $k --bm 128 --bn 256 --cluster 2 --stages 4 --pingpong false --streamk false --tma-store $st --autotune off --repeats 1 --warmup 0 --warmup-ms 0 --energy-ms 0 > "$d/cs.tmp" 2>&1
  echo "racecheck $s tma=$st: rc=$? $(grep -E 'RACECHECK SUMMARY|Internal' "$d/cs.tmp" | head -1 | cut -c1-90) $(grep -o 'verified: [a-z]*' "$d/cs.tmp" | head -1)"
  cat "$d/cs.tmp" >> "$d/racecheck.log"
done; done
echo "== 4. sweep at 2560^3 (f16)"
[ "$(left)" -gt 40 ] && timeout $(( $(left) - 15 )) $D tune hgemm --backend cuda --m 2560 --n 2560 --k 2560 --dtype f16 --cache "$d/sweep-2560.jsonl" \
    --values mma=0 --values group_m=8 --values depth=1 --values stages=4 --repeats 10 --confirm-top 3 > "$d/sweep-2560.txt" 2>&1
echo "sweep rc=$?"; grep -iE "best|fastest|confirm" "$d/sweep-2560.txt" | tail -5
tar czf "$OUT/r75b.tgz" -C /tmp r75b && echo "total t=$((SECONDS-S))"
