#!/usr/bin/env bash
# Issue 73 before submitting, part 2: the wgmma backward's CUDA test built with the planted bug
# (must fail), then the whole WGSL bench against the committed H200 baseline.
set -uo pipefail
O=$OUT; B=.device/bin/dynsmem
for f in $B .device/bin/test-attention_backward-planted; do xz -dkf $f.xz && chmod +x $f; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
export XDG_RUNTIME_DIR=/tmp
for f in .gl/*.deb .device/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
[ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
s=$(date +%s)
timeout 60 .device/bin/test-attention_backward-planted cuda_wgmma_at_odd_sequences --test-threads=1 > $O/planted.txt 2>&1; echo "planted test exit $? in $(( $(date +%s) - s )) s (must fail)" | tee -a $O/planted.txt
grep -m2 -E "panicked|outside|error" $O/planted.txt | cut -c1-400
s=$(date +%s)
timeout 420 $B bench --backend wgsl --markdown --json $O/bench.jsonl --against results/baseline/h200.jsonl > $O/bench.md 2> $O/bench.err; rc=$?
echo "bench --backend wgsl and gate: $(( $(date +%s) - s )) s, exit $rc" | tee -a $O/bench.err
grep -E "^gate" $O/bench.md
