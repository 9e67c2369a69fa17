#!/usr/bin/env bash
# call 2: CUDA bench (no Vulkan: WGSL rows in call 3), gate pass and plant, short rows.
set -uo pipefail
O=$OUT; B=.device/bin/dynsmem; P=.device/bin/dynsmem-plant
for b in $B $P; do xz -dkf $b.xz && chmod +x $b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader > $O/device.txt
s=$(date +%s)
timeout 420 $B bench --backend cuda --markdown --json $O/bench.jsonl > $O/bench.md 2> $O/bench.err
echo "bench cuda: $(( $(date +%s) - s )) s, exit $?" | tee -a $O/device.txt
# the gate: the final binary against this run passes; the plant fails
{ for bin in $B $P; do s=$(date +%s); echo "=== $bin bench --family softmax --family rmsnorm --against bench.jsonl";
  $bin bench --backend cuda --family softmax --family rmsnorm --json $O/gate-runs.jsonl --against $O/bench.jsonl 2>&1 | grep -vE "^\.\.\. " | tail -14
  echo "exit ${PIPESTATUS[0]}, $(( $(date +%s) - s )) s"; done; } > $O/gate.txt 2>&1
cat $O/gate.txt
for cols in 128 512 1024 2048; do rows=$(( (1 << 26) / cols ))
  for f in softmax rmsnorm; do $B run $f --rows $rows --cols $cols --no-tuning-db --json $O/short.jsonl 2>&1 | grep -E "ratio|error|wrong" | sed "s|^|$f $rows x $cols: |"; done
done | tee $O/short.log
tail -3 $O/bench.err
