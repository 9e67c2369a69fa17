#!/usr/bin/env bash
# Issue 73 before submitting: the whole CUDA bench against the committed H200 baseline (the
# gate), the wgmma backward's CUDA test, and the same test built with the planted bug (must fail).
set -uo pipefail
O=$OUT; B=.device/bin/dynsmem
for f in $B .device/bin/test-attention_backward; do xz -dkf $f.xz && chmod +x $f; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
export XDG_RUNTIME_DIR=/tmp
for f in .gl/*.deb .device/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
[ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
s=$(date +%s)
timeout 100 .device/bin/test-attention_backward cuda_wgmma_at_odd_sequences --test-threads=1 --nocapture > $O/test.txt 2>&1; echo "test exit $? in $(( $(date +%s) - s )) s" | tee -a $O/test.txt
s=$(date +%s)
true
true
s=$(date +%s)
timeout 420 $B bench --backend cuda --markdown --json $O/bench.jsonl --against results/baseline/h200.jsonl > $O/bench.md 2> $O/bench.err; rc=$?
echo "bench --backend cuda and gate: $(( $(date +%s) - s )) s, exit $rc" | tee -a $O/bench.err
grep -vE "^\.\.\. " $O/bench.err | grep -E "gate|SLOWER|MISSING|re-measur|exit|wall" | tail -30
grep -E "attention" $O/bench.md | head -20
