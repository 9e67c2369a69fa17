#!/usr/bin/env bash
# Issue 76, call A on the H200: where the static-WGSL twins lose. Every run verified.
# 1. each weak twin at its bench size with wgpu's runtime checks on and off (literal and subgroup);
# 2. the tuner over each twin's WGSL configs (exhaustive, time-boxed), checks on;
# 3. the SPIR-V the NVIDIA driver receives (`dynsmem spirv`).
set -uo pipefail
O=${O:-/tmp/r76a}; rm -rf $O; mkdir -p $O; B=${B:-.device/bin/dynsmem}
SMALL=${SMALL:-0}
if [ "$SMALL" = 0 ]; then
  for f in .device/bin/*.xz; do xz -dkf "$f"; done; chmod +x .device/bin/*
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
  export XDG_RUNTIME_DIR=/tmp
  for f in .gl/*.deb .device/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
  [ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  R=65536; N=268435456; S=16384; TB=35; REP=10
else
  R=64; N=65536; S=256; TB=4; REP=2
fi
$B devices > $O/devices.txt 2>&1
t0=$(date +%s)
one() { # file, args...
  local f=$1; shift
  timeout 90 $B run "$@" --backend wgsl --repeats $REP --warmup-ms 100 --energy-ms 0 --json $O/$f > $O/last.txt 2>&1 || { echo "FAIL rc=$? $*"; tail -3 $O/last.txt; }
}
for checks in on off; do
  export DYNSMEM_WGSL_RUNTIME_CHECKS=$checks
  f=checks-$checks.jsonl
  for v in wgsl-literal wgsl-subgroup; do
    one $f softmax --rows $R --cols 4096 --variant $v
    one $f rmsnorm --rows $R --cols 4096 --variant $v
    one $f scan --n $N --variant $v
  done
  one $f stencil2d --width $S --height $S --radius 1 --variant wgsl-literal
  one $f stencil2d --width $S --height $S --radius 2 --variant wgsl-literal
  one $f transpose --rows $S --cols $S --variant wgsl-literal
  one $f conv1d --n $N --taps 33 --variant wgsl-literal
  one $f histogram --n $N --bins 4096 --variant wgsl-literal
  one $f reduce --n $N --variant wgsl-literal
  echo "checks $checks done at $(( $(date +%s) - t0 )) s"
done
unset DYNSMEM_WGSL_RUNTIME_CHECKS
tune() { # name, args...
  local f=$1; shift
  timeout $((TB + 40)) $B tune "$@" --backend wgsl --variant wgsl-literal --strategy exhaustive --budget-seconds $TB --repeats $REP --warmup-ms 50 --energy-ms 0 --in-process --quiet --top 8 --cache $O/tune-$f.jsonl > $O/tune-$f.txt 2>&1 || echo "tune $f rc=$?"
  echo "tune $f done at $(( $(date +%s) - t0 )) s"
}
tune softmax softmax --rows $R --cols 4096
tune scan scan --n $N
tune stencil2d stencil2d --width $S --height $S --radius 2
tune transpose transpose --rows $S --cols $S
tune conv1d conv1d --n $N --taps 33
timeout 60 $B spirv > $O/spirv.txt 2>&1; echo "spirv rc=$?"
[ -n "${OUT:-}" ] && tar cJf "$OUT/r76a.txz" -C $(dirname $O) $(basename $O) && ls -la "$OUT"
