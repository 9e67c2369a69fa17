#!/usr/bin/env bash
# Issue 73, second look: dQ through shared memory and bulk reductions, registers 240/24.
set -uo pipefail
O=$OUT; B=.device/bin/dynsmem
xz -dkf $B.xz && chmod +x $B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
s0=$(date +%s)
step() { echo "== $*" | tee -a $O/log.txt; }
R="$B run attention-backward --no-autotune --energy-ms 0"
for shape in "--seq 1000 --d 128 --dtype f16 --mask none" "--seq 1000 --d 128 --dtype f16 --mask causal" \
             "--seq 4097 --d 128 --dtype bf16 --mask causal" "--seq 4097 --d 64 --dtype f16 --mask none" \
             "--seq 1000 --d 64 --dtype bf16 --mask causal" "--seq 1000 --d 128 --mask causal --kind wgmma --bq 64 --bk 64 --stages 3" \
             "--seq 1000 --d 64 --kind wgmma --bq 64 --bk 64 --stages 4"; do
  step "run B1 H3 $shape"
  timeout 60 $R --batch 1 --heads 3 $shape --json $O/checks.jsonl >> $O/log.txt 2>&1; echo "exit $?" >> $O/log.txt
done
echo "checks: $(( $(date +%s) - s0 )) s" | tee -a $O/log.txt
for shape in "--d 128 --dtype f16 --mask none" "--d 128 --dtype f16 --mask causal" "--d 64 --dtype bf16 --mask none" "--d 64 --dtype bf16 --mask causal" \
             "--d 128 --dtype f16 --mask none --kind wgmma --bq 64 --bk 128 --stages 3" "--d 128 --dtype f16 --mask none --kind wgmma --bq 64 --bk 64 --stages 2" \
             "--d 64 --dtype bf16 --mask none --kind wgmma --bq 64 --bk 64 --stages 2" "--d 64 --dtype bf16 --mask none --kind wgmma --bq 64 --bk 128 --stages 4"; do
  step "run B4 H16 S4096 $shape"
  timeout 90 $R --batch 4 --heads 16 --seq 4096 $shape --json $O/timed.jsonl >> $O/log.txt 2>&1; echo "exit $?" >> $O/log.txt
done
echo "timed: $(( $(date +%s) - s0 )) s" | tee -a $O/log.txt
for tool in memcheck racecheck synccheck; do
  step "compute-sanitizer $tool"
  timeout 90 compute-sanitizer --tool $tool --print-limit 20 $B run attention-backward --batch 1 --heads 2 --seq 300 --d 128 --mask causal --repeats 1 --warmup 0 --warmup-ms 0 --energy-ms 0 --no-autotune > $O/sanitize-$tool.txt 2>&1; echo "exit $?" | tee -a $O/sanitize-$tool.txt >> $O/log.txt
  tail -3 $O/sanitize-$tool.txt >> $O/log.txt
done
step ncu
timeout 150 ncu --set full -k regex:attention_bwd_wgmma -c 1 -o $O/bwd-d128 $B run attention-backward --batch 4 --heads 16 --seq 4096 --d 128 --repeats 1 --warmup 0 --warmup-ms 0 --energy-ms 0 --no-autotune > $O/ncu.txt 2>&1; echo "exit $?" >> $O/log.txt
[ -f $O/bwd-d128.ncu-rep ] && ncu --import $O/bwd-d128.ncu-rep --page details > $O/ncu-details.txt 2>&1
grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L1/TEX Cache|Local Memory Spilling Requests  |Issue Slots Busy|No Eligible|Warp Cycles Per Issued|stalled|Est. Speedup" $O/ncu-details.txt | head -24 >> $O/log.txt
echo "total: $(( $(date +%s) - s0 )) s" | tee -a $O/log.txt
grep -E "^==|exit [1-9]|TFLOP|rror|Duration|Throughput|Spilling|Issue|Eligible|Warp Cycles|stalled|Speedup|total" $O/log.txt | grep -v "exit 0" | head -100
