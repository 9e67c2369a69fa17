#!/usr/bin/env bash
# Issue 74 baseline (26b1d4f's binary; SGEMM unchanged since 2b6e388): skinny deep-K and small
# shapes with tuning on first use into an empty cache, beside cuBLAS; then every kernel's device
# time (ncu) at two of them with the tuned config.
set -u
for f in .device/bin/*.xz; do [ -e "$f" ] && xz -d -f "$f"; done; chmod +x .device/bin/*
D=./.device/bin/dynsmem; d="$OUT/b"; mkdir -p "$d"; S=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$d/device.txt"
export DYNSMEM_AUTOTUNE_CACHE=$d/at
for shape in "32 32 100000" "64 64 50000" "48 17 80000" "64 40 131072" "16 64 65536" \
             "162 271 99" "512 512 512" "1603 66 66" "300 200 1000" "128 1024 256" "700 545 717"; do
  read -r m n k <<< "$shape"
  echo "== $m $n $k"
  timeout 60 $D run sgemm --backend cuda --m $m --n $n --k $k --repeats 10 --energy-ms 0 --json "$d/runs.jsonl" 2>&1 | grep -v "^$" | tail -6
done
echo "t=$((SECONDS-S))"
for shape in "64 64 50000 --bm 64 --bn 64 --bk 32 --stages 3 --splits 32" "64 64 50000 --bm 64 --bn 64 --bk 32 --stages 3 --splits 8" \
             "32 32 100000 --bm 32 --bn 64 --bk 32 --stages 3 --splits 32"; do
  read -r m n k rest <<< "$shape"
  echo "== forced $shape"
  timeout 60 $D run sgemm --backend cuda --m $m --n $n --k $k $rest --repeats 10 --energy-ms 0 --autotune off --json "$d/forced.jsonl" 2>&1 | tail -4
done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for shape in "64 64 50000" "162 271 99" "512 512 512"; do
  read -r m n k <<< "$shape"
  echo "== ncu $m $n $k"
  timeout 90 $NCU --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    $D run sgemm --backend cuda --m $m --n $n --k $k --repeats 1 --warmup 0 --warmup-ms 0 --energy-ms 0 2>&1 | grep -E '^\s+[a-z_]+[0-9_]*.*\(|gpu__time|launch__|throughput|cublas|Kernel|sgemm' | head -60
done
echo "total t=$((SECONDS-S))"
