#!/usr/bin/env bash
# Issue 75 before submitting, part 1: the whole CUDA bench against the committed H200 baseline
# (the regression gate; this submission touches device code and the hgemm default).
set -uo pipefail
O=/tmp/r75c; rm -rf $O; mkdir -p $O; B=.device/bin/dynsmem
xz -dkf .device/bin/dynsmem.xz; chmod +x $B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
export XDG_RUNTIME_DIR=/tmp
s=$(date +%s)
timeout 540 $B bench --backend cuda --markdown --json $O/bench.jsonl --against results/baseline/h200.jsonl > $O/bench.md 2> $O/bench.err; rc=$?
echo "bench --backend cuda and gate: $(( $(date +%s) - s )) s, exit $rc" | tee -a $O/bench.err
grep -vE "^\.\.\. " $O/bench.err | grep -E "gate|SLOWER|MISSING|re-measur|exit|wall" | tail -30
grep -E "hgemm" $O/bench.md | head -20
tar czf "$OUT/r75c.tgz" -C /tmp r75c
