#!/usr/bin/env bash
# Issue 76, call C on the H200: the whole WGSL bench against the committed H200 baseline (the
# regression gate's WGSL rows, and the decomposition's WGSL side); each bandwidth twin's best
# WGSL variant at 3 random odd sizes (seed from `date +%s` here), runtime checks on, beside the
# copy in the same process; then the scan's WGSL configs swept, passes and look-back.
set -uo pipefail
O=${O:-/tmp/r76c}; rm -rf $O; mkdir -p $O; B=${B:-.device/bin/dynsmem}
SMALL=${SMALL:-0}
if [ "$SMALL" = 0 ]; then
  for f in .device/bin/*.xz; do xz -dkf "$f"; done; chmod +x .device/bin/*
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
  export XDG_RUNTIME_DIR=/tmp
  for f in .gl/*.deb .device/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
  [ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  SCALE=1; TB=35; REP=10; BT=330
else
  SCALE=4096; TB=5; REP=2; BT=200
fi
t0=$(date +%s)
timeout $BT $B bench --backend wgsl --markdown --json $O/bench.jsonl --against results/baseline/h200.jsonl > $O/bench.md 2> $O/bench.err; rc=$?
echo "bench --backend wgsl and gate: $(( $(date +%s) - t0 )) s, exit $rc" | tee -a $O/bench.err
grep -vE "^\.\.\. " $O/bench.err | grep -E "gate|SLOWER|MISSING|FASTER|exit|wall" | tail -20
seed=$(date +%s); echo "seed $seed" | tee $O/seed.txt
python3 - "$seed" "$SCALE" > $O/shapes.txt <<'PY'
import random, sys
r = random.Random(int(sys.argv[1])); s = int(sys.argv[2])
odd = lambda lo, hi: r.randrange(lo, hi) | 1
for i in range(3):
    n = odd(2**26 // s, 2**28 // s)
    side = lambda: odd(int(4097 / s ** 0.5) + 1, int(16383 / s ** 0.5) + 2)
    print("reduce --n", n, "--variant wgsl-literal")
    print("scan --n", odd(2**26 // s, 2**28 // s), "--variant wgsl-subgroup")
    print("histogram --bins 4096 --n", odd(2**26 // s, 2**28 // s), "--variant wgsl-literal")
    print("conv1d --taps 33 --n", odd(2**26 // s, 2**28 // s), "--variant wgsl-literal")
    print("stencil2d --radius", 1 + i % 2, "--width", int(side()), "--height", int(side()), "--variant wgsl-literal")
    print("transpose --rows", int(side()), "--cols", int(side()), "--variant wgsl-literal")
    cols = odd(1001, 8191); rows = max(1, (2**28 // s) // cols // r.choice([1, 2, 4]))
    print("softmax --rows", rows, "--cols", cols, "--variant wgsl-subgroup")
    cols = odd(1001, 8191); rows = max(1, (2**28 // s) // cols // r.choice([1, 2, 4]))
    print("rmsnorm --rows", rows, "--cols", cols, "--variant wgsl-subgroup")
PY
while read -r line; do
  timeout 60 $B run $line --backend wgsl --repeats $REP --warmup-ms 50 --energy-ms 0 --json $O/random.jsonl > $O/last.txt 2>&1 || { echo "FAIL rc=$? $line"; tail -2 $O/last.txt; }
done < $O/shapes.txt
echo "random shapes done at $(( $(date +%s) - t0 )) s"
tune() { # name, variant, args...
  local f=$1 v=$2; shift 2
  timeout $((TB + 40)) $B tune "$@" --backend wgsl --variant $v --strategy exhaustive --budget-seconds $TB --repeats $REP --warmup-ms 50 --energy-ms 0 --in-process --quiet --top 12 --cache $O/tune-$f.jsonl > $O/tune-$f.txt 2>&1 || echo "tune $f rc=$?"
  echo "tune $f done at $(( $(date +%s) - t0 )) s"
}
N=$((268435456 / SCALE))
tune scan-lookback wgsl-subgroup scan --n $N --values block=64,128,256,512 --values items_per_thread=8,16,32
tune scan-passes wgsl-literal scan --n $N --values block=64,128 --values items_per_thread=8,16
[ -n "${OUT:-}" ] && tar cJf "$OUT/r76c.txz" -C $(dirname $O) $(basename $O) && ls -la "$OUT"
echo "total $(( $(date +%s) - t0 )) s"
