#!/usr/bin/env bash
# GPU: the profile behind issue 70 (launch-sized against cuda-static at the same config), on
# a staged binary (../shared/device/stage.sh, or any `dynsmem` given as $DYNSMEM):
#   1. Nsight Compute of the rows, transpose and histogram kernels, each variant;
#   2. short rows (128-2048 floats, 256 MB), softmax and RMSNorm, both variants;
#   3. the headline rows, both variants, in alternating processes.
# Writes under $OUT (default /tmp/rows-profile): device.txt, ncu.txt, runs.jsonl, runs.log.
#   OUT=DIR bash ci/rows_profile.sh [ncu|short|headline ...]   (default: all three)
set -uo pipefail
out="${OUT:-/tmp/rows-profile}"; mkdir -p "$out"
bin="${DYNSMEM:-.device/bin/dynsmem}"
parts="${*:-ncu short headline}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader > "$out/device.txt"
"$bin" devices >> "$out/device.txt" 2>&1
quick=(--warmup 1 --warmup-ms 0 --repeats 1 --energy-ms 0 --no-tuning-db)
run() { "$bin" run "$@" --no-tuning-db --json "$out/runs.jsonl" 2>&1 | grep -E "GB/s|error|refused|wrong" | sed "s|^|$* : |" | tee -a "$out/runs.log"; }
ncu_bin=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
if [[ " $parts " == *" ncu "* ]] && [ -n "$ncu_bin" ]; then
  for v in launch-sized cuda-static; do
    for args in "softmax --rows 65536 --cols 4096 --block 256" "rmsnorm --rows 65536 --cols 4096 --block 256" \
                "transpose --rows 16384 --cols 16384 --tile 64 --pad 1 --block 256" "histogram --bins 1024"; do
      echo "=== $args --variant $v" >> "$out/ncu.txt"
      timeout 120 "$ncu_bin" --clock-control none -k 'regex:softmax|rmsnorm|transpose|histogram' -s 1 -c 1 \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
        "$bin" run $args --variant "$v" "${quick[@]}" >> "$out/ncu.txt" 2>&1
    done
  done
fi
if [[ " $parts " == *" short "* ]]; then
  for cols in 128 512 1024 2048; do
    rows=$(( (1 << 26) / cols ))
    for f in softmax rmsnorm; do
      for v in launch-sized cuda-static; do run $f --rows $rows --cols $cols --variant $v; done
    done
  done
fi
if [[ " $parts " == *" headline "* ]]; then
  for round in 1 2; do
    for args in "softmax --rows 65536 --cols 4096 --block 256" "rmsnorm --rows 65536 --cols 4096 --block 256" \
                "rmsnorm --rows 8192 --cols 8192 --block 256" "transpose --rows 16384 --cols 16384 --pad 1" \
                "transpose --rows 16384 --cols 16384 --pad 0" "transpose --rows 8192 --cols 8192 --pad 1" \
                "histogram --bins 256" "histogram --bins 1024"; do
      for v in launch-sized cuda-static; do run $args --variant $v; done
    done
  done
fi
echo "done: $out"
