#!/usr/bin/env bash
# Issue 75, call E on the H200: staged stores through 2, 3 or 4 buffers per warpgroup.
# 1. the CUDA hgemm tests; 2. the plant built from 4707f93 (must fail); 3. memcheck and
# synccheck on 3- and 4-buffer configs; 4. the same tiles with 2, 3 and 4 buffers, alternating
# processes; 5. tuning on first use at the must-show cubes (empty cache); 6. Nsight Compute
# at 2560^3 (the tuned config).
set -u
for f in .device/bin/*.xz; do xz -dkf "$f"; done; chmod +x .device/bin/*
D=./.device/bin/dynsmem; d=/tmp/r75e; rm -rf "$d"; mkdir -p "$d"; S=$SECONDS
left() { echo $(( 540 - (SECONDS - S) )); }
export RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$d/device.txt"
echo "== 1. tests"
timeout 200 ./.device/bin/test-hgemm --test-threads=1 > "$d/test.txt" 2>&1; echo "rc=$? t=$((SECONDS-S))"
grep -E "^test |test result|panicked|verified|differs" "$d/test.txt" | head -12
echo "== 2. plant (must fail)"
[ -e .device/bin/test-hgemm-planted ] && timeout 100 ./.device/bin/test-hgemm-planted cuda_staged_stores_at_awkward_shapes --test-threads=1 > "$d/planted.txt" 2>&1; echo "planted rc=$? (must be nonzero) t=$((SECONDS-S))"
grep -m2 -E "panicked|differs" "$d/planted.txt" | cut -c1-300
echo "== 3. sanitizer"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for q in "--bm 128 --bn 256 --cluster 2 --stages 3 --stage-buffers 4" "--bm 128 --bn 224 --cluster 1 --stages 4 --stage-buffers 3" "--bm 64 --bn 128 --cluster 1 --stages 2 --stage-buffers 4"; do
  for tool in memcheck synccheck; do
    timeout 60 $CS --tool $tool --kernel-name kns=hgemm_wgmma $D run hgemm --backend cuda --m 200 --n 296 --k 1000 $q --tma-store true --pingpong false --streamk false --out input --autotune off --repeats 1 --warmup 0 --warmup-ms 0 --energy-ms 0 > "$d/cs.tmp" 2>&1
    echo "$tool [$q]: rc=$? $(grep -E 'ERROR SUMMARY|Internal' "$d/cs.tmp" | head -1 | cut -c1-80) $(grep -o 'verified: [a-z]*' "$d/cs.tmp" | head -1)"
    cat "$d/cs.tmp" >> "$d/cs-all.log"
  done
done
echo "t=$((SECONDS-S))"
echo "== 4. 2, 3, 4 buffers, alternating processes"
r() { local tag=$1; shift; timeout 60 $D run hgemm --backend cuda "$@" --repeats 20 --energy-ms 0 --autotune off --pingpong false --streamk false --tma-store true --json "$d/ab.jsonl" > "$d/one.txt" 2>&1 || echo "rc=$? $tag $*"; echo "$tag $* :: $(grep -E '^time' "$d/one.txt" | cut -c1-60)" >> "$d/ab.txt"; }
for rep in 1 2; do
  r rep$rep --m 4096 --n 4096 --k 4096 --bm 128 --bn 256 --cluster 2 --stages 4 --stage-buffers 2
  r rep$rep --m 4096 --n 4096 --k 4096 --bm 128 --bn 256 --cluster 2 --stages 3 --stage-buffers 4
  r rep$rep --m 4096 --n 4096 --k 4096 --bm 128 --bn 256 --cluster 1 --stages 3 --stage-buffers 4
  r rep$rep --m 2560 --n 2560 --k 2560 --bm 128 --bn 224 --cluster 1 --stages 4 --stage-buffers 2
  r rep$rep --m 2560 --n 2560 --k 2560 --bm 128 --bn 224 --cluster 1 --stages 4 --stage-buffers 3
  r rep$rep --m 2560 --n 2560 --k 2560 --bm 128 --bn 224 --cluster 1 --stages 3 --stage-buffers 4
done
r f16out --m 4096 --n 4096 --k 4096 --out input --bm 128 --bn 256 --cluster 2 --stages 4 --stage-buffers 2
r f16out --m 4096 --n 4096 --k 4096 --out input --bm 128 --bn 256 --cluster 2 --stages 3 --stage-buffers 4
echo "t=$((SECONDS-S))"; cut -c1-200 "$d/ab.txt"
echo "== 5. tuning on first use (empty cache)"
for s in 2560 4096 8192; do for dt in f16 bf16; do
  [ "$(left)" -gt 100 ] || { echo "skipped $s $dt"; continue; }
  DYNSMEM_AUTOTUNE_CACHE=$d/at timeout 90 $D run hgemm --backend cuda --m $s --n $s --k $s --dtype $dt --repeats 20 --energy-ms 0 --json "$d/tuned.jsonl" > "$d/one.txt" 2>&1 || echo "rc=$?"
  echo "$s $dt :: $(grep -E '^(time|config)' "$d/one.txt" | tr '\n' ' ' | cut -c1-300)" | tee -a "$d/tuned.txt"
done; done
echo "t=$((SECONDS-S))"
echo "== 6. ncu 2560^3 (tuned)"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SEC="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section InstructionStats"
[ "$(left)" -gt 40 ] && { DYNSMEM_AUTOTUNE_CACHE=$d/at timeout 80 $NCU $SEC -k regex:hgemm_wgmma -s 2 -c 1 --csv --page details $D run hgemm --backend cuda --m 2560 --n 2560 --k 2560 --repeats 2 --warmup 1 --energy-ms 0 > "$d/ncu-2560.csv" 2> "$d/ncu.err"; echo "ncu rc=$?"; }
python3 - "$d" <<'PY' | tee "$d/summary.txt"
import json, sys
d = sys.argv[1]
for f in ["ab.jsonl", "tuned.jsonl"]:
    for l in open(f"{d}/{f}"):
        r = json.loads(l)
        if r.get("variant") != "launch-sized": continue
        p, c = r["problem"], r.get("config") or {}
        print(f, p["m"], p["n"], p["k"], p["dtype"], p["out"], json.dumps(c, separators=(",", ":")), "%.4f ms" % r["median_ms"], "ratio %.3f" % (r.get("paired_ratio") or r.get("ratio")), "verified" if r.get("verified") else "NOT VERIFIED")
PY
tar czf "$OUT/r75e.tgz" -C /tmp r75e && echo "total t=$((SECONDS-S))"
