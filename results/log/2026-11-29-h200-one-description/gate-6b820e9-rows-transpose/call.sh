#!/usr/bin/env bash
# The regression gate over transpose, softmax and rmsnorm after the case-resolution mend, CUDA and WGSL, against the
# committed H200 baseline (83b3676).
O=$OUT; B=.device/bin/dynsmem
xz -dkf $B.xz && chmod +x $B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
export XDG_RUNTIME_DIR=/tmp
for f in .gl/*.deb .device/*.deb; do dpkg -x "$f" /; done; ldconfig
[ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
s=$(date +%s)
timeout 480 $B bench --family transpose --family softmax --family rmsnorm --markdown --json $O/bench.jsonl --against results/baseline/h200.jsonl > $O/bench.md 2> $O/bench.err; rc=$?
echo "bench --family transpose --family softmax --family rmsnorm and gate: $(( $(date +%s) - s )) s, exit $rc" | tee -a $O/bench.err
tail -25 $O/bench.md
