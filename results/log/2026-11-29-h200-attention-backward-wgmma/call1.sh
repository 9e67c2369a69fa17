#!/usr/bin/env bash
# Issue 73, first look: the wgmma attention backward on the H200. Checks at sequences 1000 and
# 4097, the bench's backward cases, PyTorch SDPA backward anchors, sanitizers at a small shape.
set -uo pipefail
O=$OUT; B=.device/bin/dynsmem
xz -dkf $B.xz && chmod +x $B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
s0=$(date +%s)
step() { echo "== $*" | tee -a $O/log.txt; }
# 1. Checks (run verifies against the f64 bounds before timing).
for shape in "--seq 1000 --d 128 --dtype f16 --mask none" "--seq 1000 --d 128 --dtype f16 --mask causal" \
             "--seq 4097 --d 128 --dtype bf16 --mask causal" "--seq 4097 --d 64 --dtype f16 --mask none" \
             "--seq 1000 --d 64 --dtype bf16 --mask causal"; do
  step "run $shape"
  timeout 60 $B run attention-backward --no-autotune --energy-ms 0 --batch 1 --heads 3 $shape --json $O/checks.jsonl >> $O/log.txt 2>&1; echo "exit $?" >> $O/log.txt
done
step "run bk 64 stages 3"
timeout 60 $B run attention-backward --no-autotune --energy-ms 0 --batch 1 --heads 3 --seq 1000 --d 128 --mask causal --kind wgmma --bq 64 --bk 64 --stages 3 --json $O/checks.jsonl >> $O/log.txt 2>&1; echo "exit $?" >> $O/log.txt
step "run d64 bk 64 stages 4"
timeout 60 $B run attention-backward --no-autotune --energy-ms 0 --batch 1 --heads 3 --seq 1000 --d 64 --kind wgmma --bq 64 --bk 64 --stages 4 --json $O/checks.jsonl >> $O/log.txt 2>&1; echo "exit $?" >> $O/log.txt
echo "checks: $(( $(date +%s) - s0 )) s" | tee -a $O/log.txt
# 2. Timed: the must-show shapes.
for shape in "--d 128 --dtype f16 --mask none" "--d 128 --dtype f16 --mask causal" "--d 64 --dtype bf16 --mask none" "--d 64 --dtype bf16 --mask causal"; do
  step "run B4 H16 S4096 $shape"
  timeout 90 $B run attention-backward --no-autotune --energy-ms 0 --batch 4 --heads 16 --seq 4096 $shape --json $O/timed.jsonl >> $O/log.txt 2>&1; echo "exit $?" >> $O/log.txt
done
echo "timed: $(( $(date +%s) - s0 )) s" | tee -a $O/log.txt
# 3. PyTorch SDPA backward, same shapes.
step sdpa
timeout 120 python3 host/src/families/attention/sdpa.py --backward 4,16,4096,128,f16,0 4,16,4096,128,f16,1 4,16,4096,64,bf16,0 4,16,4096,64,bf16,1 > $O/sdpa.jsonl 2>> $O/log.txt
cat $O/sdpa.jsonl | tee -a $O/log.txt
echo "sdpa: $(( $(date +%s) - s0 )) s" | tee -a $O/log.txt
# 4. Sanitizers at a small shape.
for tool in memcheck racecheck synccheck; do
  step "compute-sanitizer $tool"
  timeout 90 compute-sanitizer --tool $tool --print-limit 20 $B run attention-backward --batch 1 --heads 1 --seq 200 --d 128 --mask causal --repeats 1 --warmup 0 --warmup-ms 0 --energy-ms 0 --no-autotune > $O/sanitize-$tool.txt 2>&1; echo "exit $?" | tee -a $O/sanitize-$tool.txt >> $O/log.txt
  tail -3 $O/sanitize-$tool.txt >> $O/log.txt
done
# 5. One profile of the D 128 kernel.
step ncu
timeout 150 ncu --set full -k regex:attention_bwd_wgmma -c 1 -o $O/bwd-d128 $B run attention-backward --batch 4 --heads 16 --seq 4096 --d 128 --repeats 1 --warmup 0 --warmup-ms 0 --energy-ms 0 --no-autotune > $O/ncu.txt 2>&1; echo "exit $?" >> $O/log.txt
[ -f $O/bwd-d128.ncu-rep ] && ncu --import $O/bwd-d128.ncu-rep --page details > $O/ncu-details.txt 2>&1
grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Warp Cycles Per Issued" $O/ncu-details.txt | head -20 >> $O/log.txt
echo "total: $(( $(date +%s) - s0 )) s" | tee -a $O/log.txt
grep -E "^==|exit|TFLOP|error|Error|rror:|Duration|Throughput|Occupancy|Issue|Eligible|Warp Cycles|total" $O/log.txt | head -100
