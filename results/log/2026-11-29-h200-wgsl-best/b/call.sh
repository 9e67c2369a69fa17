#!/usr/bin/env bash
# Issue 76, call B on the H200: the new best-WGSL forms (wgsl-subgroup: one-pass look-back scan,
# rows in registers) at the bench sizes with runtime checks on and off, then each twin's WGSL
# configs swept by the tuner (exhaustive over the listed values, checks on) for the defaults.
set -uo pipefail
O=${O:-/tmp/r76b}; rm -rf $O; mkdir -p $O; B=${B:-.device/bin/dynsmem}
SMALL=${SMALL:-0}
if [ "$SMALL" = 0 ]; then
  for f in .device/bin/*.xz; do xz -dkf "$f"; done; chmod +x .device/bin/*
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
  export XDG_RUNTIME_DIR=/tmp
  for f in .gl/*.deb .device/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
  [ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  R=65536; N=268435456; S=16384; TB=45; REP=10
else
  R=64; N=65536; S=256; TB=6; REP=2
fi
t0=$(date +%s)
one() { # file, args...
  local f=$1; shift
  timeout 90 $B run "$@" --backend wgsl --repeats $REP --warmup-ms 100 --energy-ms 0 --json $O/$f > $O/last.txt 2>&1 || { echo "FAIL rc=$? $*"; tail -3 $O/last.txt; }
}
for checks in on off; do
  export DYNSMEM_WGSL_RUNTIME_CHECKS=$checks
  f=checks-$checks.jsonl
  one $f softmax --rows $R --cols 4096 --variant wgsl-subgroup
  one $f rmsnorm --rows $R --cols 4096 --variant wgsl-subgroup
  one $f scan --n $N --variant wgsl-subgroup
  echo "checks $checks done at $(( $(date +%s) - t0 )) s"
done
unset DYNSMEM_WGSL_RUNTIME_CHECKS
tune() { # name, variant, args...
  local f=$1 v=$2; shift 2
  timeout $((TB + 40)) $B tune "$@" --backend wgsl --variant $v --strategy exhaustive --budget-seconds $TB --repeats $REP --warmup-ms 50 --energy-ms 0 --in-process --quiet --top 12 --cache $O/tune-$f.jsonl > $O/tune-$f.txt 2>&1 || echo "tune $f rc=$?"
  echo "tune $f done at $(( $(date +%s) - t0 )) s"
}
tune softmax wgsl-subgroup softmax --rows $R --cols 4096 --values block=128,256,512,1024
tune rmsnorm wgsl-subgroup rmsnorm --rows $R --cols 4096 --values block=128,256,512,1024
tune scan wgsl-subgroup scan --n $N --values block=128,256,512 --values items_per_thread=8,16,24,32
tune transpose wgsl-literal transpose --rows $S --cols $S --values block=128,256,512 --values tile=16,32,64 --values pad=1
tune stencil2d wgsl-literal stencil2d --width $S --height $S --radius 2 --values block=64,128,256 --values tile_w=32,64,128 --values tile_h=8,16
tune conv1d wgsl-literal conv1d --n $N --taps 33 --values block=64,128,256,512 --values outputs_per_thread=4,8
[ -n "${OUT:-}" ] && tar cJf "$OUT/r76b.txz" -C $(dirname $O) $(basename $O) && ls -la "$OUT"
echo "total $(( $(date +%s) - t0 )) s"
