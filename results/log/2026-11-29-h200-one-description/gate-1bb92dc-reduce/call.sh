#!/usr/bin/env bash
# The regression gate over reduce (moved onto the description), CUDA and WGSL, and the run of
# `--staged` fitted for cuda-static, against the committed H200 baseline (83b3676).
set -uo pipefail
O=$OUT; B=.device/bin/dynsmem
xz -dkf $B.xz && chmod +x $B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
export XDG_RUNTIME_DIR=/tmp
for f in .gl/*.deb .device/*.deb; do dpkg -x "$f" /; done; ldconfig
[ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
s=$(date +%s)
timeout 400 $B bench --family reduce --markdown --json $O/bench.jsonl --against results/baseline/h200.jsonl > $O/bench.md 2> $O/bench.err; rc=$?
echo "bench --family reduce and gate: $(( $(date +%s) - s )) s, exit $rc" | tee -a $O/bench.err
tail -25 $O/bench.md
{ echo "\$ dynsmem run reduce --backend cuda --variant cuda-static --staged"
  $B run reduce --backend cuda --variant cuda-static --staged --json $O/run.jsonl 2>&1 | grep -E "^(kernel|time|note|verified|config)|refused|rror"; echo "exit $?"; } | tee $O/run.txt
