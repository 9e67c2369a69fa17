#!/usr/bin/env bash
# Issue 73, third look: dQ in two pieces of D/2 over all keys (m64n32 at D 64), registers by D.
# Checks at sequences 1000 and 4097, the must-show shapes beside PyTorch SDPA (same run),
# sanitizers at D 64 and D 128.
set -uo pipefail
O=$OUT; B=.device/bin/dynsmem
xz -dkf $B.xz && chmod +x $B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
s0=$(date +%s)
step() { echo "== $*" | tee -a $O/log.txt; }
R="$B run attention-backward --no-autotune --energy-ms 0"
for shape in "--seq 1000 --d 128 --dtype f16 --mask none" "--seq 4097 --d 128 --dtype bf16 --mask causal" \
             "--seq 4097 --d 64 --dtype f16 --mask none" "--seq 1000 --d 64 --dtype bf16 --mask causal" \
             "--seq 1000 --d 64 --dtype f16 --mask causal --kind wgmma --bq 64 --bk 64 --stages 3" \
             "--seq 4097 --d 128 --dtype f16 --kind wgmma --bq 64 --bk 64 --stages 2"; do
  step "run B1 H3 $shape"
  timeout 60 $R --batch 1 --heads 3 $shape --json $O/checks.jsonl >> $O/log.txt 2>&1; echo "exit $?" >> $O/log.txt
done
echo "checks: $(( $(date +%s) - s0 )) s" | tee -a $O/log.txt
for shape in "--d 128 --dtype f16 --mask none" "--d 128 --dtype f16 --mask causal" "--d 64 --dtype bf16 --mask none" "--d 64 --dtype bf16 --mask causal" \
             "--d 64 --dtype bf16 --mask none --kind wgmma --bq 64 --bk 128 --stages 4"; do
  step "run B4 H16 S4096 $shape"
  timeout 90 $R --batch 4 --heads 16 --seq 4096 $shape --json $O/timed.jsonl >> $O/log.txt 2>&1; echo "exit $?" >> $O/log.txt
done
step sdpa
timeout 120 python3 host/src/families/attention/sdpa.py --backward 4,16,4096,128,f16,0 4,16,4096,128,f16,1 4,16,4096,64,bf16,0 4,16,4096,64,bf16,1 > $O/sdpa.jsonl 2>> $O/log.txt
echo "timed and sdpa: $(( $(date +%s) - s0 )) s" | tee -a $O/log.txt
for d in 64 128; do for tool in memcheck racecheck synccheck; do
  step "compute-sanitizer $tool d $d"
  timeout 90 compute-sanitizer --tool $tool --print-limit 20 $B run attention-backward --batch 1 --heads 2 --seq 300 --d $d --mask causal --repeats 1 --warmup 0 --warmup-ms 0 --energy-ms 0 --no-autotune > $O/sanitize-$tool-d$d.txt 2>&1; echo "exit $?" | tee -a $O/sanitize-$tool-d$d.txt >> $O/log.txt
  tail -2 $O/sanitize-$tool-d$d.txt >> $O/log.txt
done; done
echo "total: $(( $(date +%s) - s0 )) s" | tee -a $O/log.txt
grep -E "^==|exit [1-9]|TFLOP|rror|SUMMARY|total" $O/log.txt | head -80
python3 - $O/sdpa.jsonl <<'PY'
import json,sys
for l in open(sys.argv[1]):
    r=json.loads(l); print(r["anchor"], r["d"], r["dtype"], r["causal"], round(r.get("tflops",0),1))
PY
