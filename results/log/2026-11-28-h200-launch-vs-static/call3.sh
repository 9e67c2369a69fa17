#!/usr/bin/env bash
# call 3: the gate on a plant, compute-sanitizer on the new paths, Nsight Compute after, WGSL bench.
set -uo pipefail
O=$OUT; B=.device/bin/dynsmem; P=.device/bin/dynsmem-plant
for b in $B $P; do xz -dkf $b.xz && chmod +x $b; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
{ for bin in $B $P; do s=$(date +%s); echo "=== $bin bench --backend cuda --family softmax --against baseline-cuda.jsonl";
  $bin bench --backend cuda --family softmax --json $O/gate-runs.jsonl --against .device/baseline-cuda.jsonl > $O/gate.out 2>&1; rc=$?
  grep -vE "^\.\.\. (cuda|wgsl|cpu)" $O/gate.out | grep -E "gate|SLOWER|MISSING|re-measured|measuring it again|failed|pass" ; echo "exit $rc, $(( $(date +%s) - s )) s"; done; } > $O/gate.txt 2>&1
cat $O/gate.txt
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for tool in memcheck racecheck synccheck; do
  for args in "softmax --rows 1000 --cols 128" "softmax --rows 333 --cols 300" "rmsnorm --rows 999 --cols 700" \
              "rmsnorm --rows 257 --cols 4096" "transpose --rows 7 --cols 100003" "transpose --rows 1001 --cols 999"; do
    r=$(timeout 60 $CS --tool $tool $B run $args --warmup 0 --warmup-ms 0 --repeats 1 --energy-ms 0 --no-tuning-db 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|wrong|rror:" | head -2 | tr '\n' ' ')
    echo "$tool $args: $r" >> $O/sanitize.txt
  done
done
cat $O/sanitize.txt
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
q=(--warmup 1 --warmup-ms 0 --repeats 1 --energy-ms 0 --no-tuning-db --variant launch-sized)
for args in "softmax --rows 65536 --cols 4096 --block 256" "rmsnorm --rows 65536 --cols 4096 --block 256" \
            "transpose --rows 16384 --cols 16384 --tile 64 --pad 1 --block 256" "softmax --rows 524288 --cols 128"; do
  echo "=== $args" >> $O/ncu.txt
  timeout 60 $NCU --clock-control none -k 'regex:softmax|rmsnorm|transpose' -s 1 -c 1 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis $B run $args "${q[@]}" >> $O/ncu.txt 2>&1
done
grep -E "^===|DRAM Throughput|Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|Local Memory Spilling Req" $O/ncu.txt
export XDG_RUNTIME_DIR=/tmp
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
[ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
s=$(date +%s)
timeout ${WGSL_SECONDS:-280} $B bench --backend wgsl --markdown --json $O/bench-wgsl.jsonl > $O/bench-wgsl.md 2> $O/bench-wgsl.err
echo "bench wgsl: $(( $(date +%s) - s )) s, exit $?" | tee -a $O/device.txt
tail -3 $O/bench-wgsl.err
