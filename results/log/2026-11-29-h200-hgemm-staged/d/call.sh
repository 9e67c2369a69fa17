#!/usr/bin/env bash
# Issue 75 before submitting, part 2: the hgemm CUDA tests built with the planted bug in the
# staged store from d5e1889's tree (must fail); 12 random shapes (sides multiples of 8, log-uniform in
# [1024, 16384], seed from `date +%s` here), f16 and bf16, tuning on first use, interleaved with
# cuBLAS; then the whole WGSL bench against the committed H200 baseline (the regression gate's
# WGSL rows; the sgemm tuner's default changed in issue 74).
set -uo pipefail
O=/tmp/r75d; rm -rf $O; mkdir -p $O; B=.device/bin/dynsmem
for f in .device/bin/*.xz; do xz -dkf "$f"; done; chmod +x .device/bin/*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
export XDG_RUNTIME_DIR=/tmp
for f in .gl/*.deb .device/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
[ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
s=$(date +%s)
timeout 100 .device/bin/test-hgemm-planted cuda_staged_stores_at_awkward_shapes --test-threads=1 > $O/planted.txt 2>&1; echo "planted test exit $? in $(( $(date +%s) - s )) s (must fail)" | tee -a $O/planted.txt
grep -m2 -E "panicked|differs" $O/planted.txt | cut -c1-400
s=$(date +%s)
export DYNSMEM_AUTOTUNE_CACHE=$O/at
seed=$(date +%s); echo "seed $seed" | tee $O/seed.txt
python3 - "$seed" > $O/shapes.txt <<'PY'
import math, random, sys
r = random.Random(int(sys.argv[1]))
for i in range(12):
    print(*(int(math.exp(r.uniform(math.log(1024), math.log(16385)))) // 8 * 8 for _ in range(3)))
PY
while read -r m n k; do for dt in f16 bf16; do
  timeout 60 $B run hgemm --backend cuda --m $m --n $n --k $k --dtype $dt --repeats 20 --energy-ms 0 --json $O/random.jsonl > $O/one.txt 2>&1 || { echo "$m $n $k $dt rc=$?"; tail -2 $O/one.txt; }
done; done < $O/shapes.txt
python3 - $O <<'PY' | tee $O/summary.txt
import json, sys, math
d = sys.argv[1]; rs = {}
for l in open(d + "/random.jsonl"):
    r = json.loads(l)
    if r.get("variant") != "launch-sized": continue
    p, c = r["problem"], r.get("config") or {}
    x = r.get("paired_ratio") or r.get("ratio")
    rs.setdefault(p["dtype"], []).append(x)
    print(p["m"], p["n"], p["k"], p["dtype"], json.dumps(c, separators=(",", ":")), "%.4f ms" % r["median_ms"], "ratio %.3f" % x, "verified" if r.get("verified") else "NOT VERIFIED")
for dt, v in rs.items():
    print(dt, "geomean %.3f min %.3f of %d" % (math.exp(sum(map(math.log, v)) / len(v)), min(v), len(v)))
PY
echo "random: $(( $(date +%s) - s )) s"
unset DYNSMEM_AUTOTUNE_CACHE
s=$(date +%s)
timeout 330 $B bench --backend wgsl --markdown --json $O/bench.jsonl --against results/baseline/h200.jsonl > $O/bench.md 2> $O/bench.err; rc=$?
echo "bench --backend wgsl and gate: $(( $(date +%s) - s )) s, exit $rc" | tee -a $O/bench.err
grep -vE "^\.\.\. " $O/bench.err | grep -E "gate|SLOWER|MISSING|re-measur|exit|wall" | tail -30
tar czf "$OUT/r75d.tgz" -C /tmp r75d
