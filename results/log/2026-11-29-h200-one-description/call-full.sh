#!/usr/bin/env bash
# The regression gate, whole bench of one backend ($1: cuda or wgsl), against the committed
# H200 baseline (83b3676).
set -uo pipefail
O=$OUT; B=.device/bin/dynsmem
xz -dkf $B.xz && chmod +x $B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
export XDG_RUNTIME_DIR=/tmp
for f in .gl/*.deb .device/*.deb; do dpkg -x "$f" /; done; ldconfig
[ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
s=$(date +%s)
timeout 570 $B bench --backend "$1" --markdown --json $O/bench.jsonl --against results/baseline/h200.jsonl > $O/bench.md 2> $O/bench.err; rc=$?
echo "bench --backend $1 and gate: $(( $(date +%s) - s )) s, exit $rc" | tee -a $O/bench.err
grep -vE "^\.\.\. " $O/bench.err | grep -E "gate|SLOWER|MISSING|re-measur|exit|wall" | tail -40
tail -45 $O/bench.md
