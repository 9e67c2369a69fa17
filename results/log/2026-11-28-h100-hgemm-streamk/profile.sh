#!/usr/bin/env bash
# Nsight Compute: ours (the heuristic default, --autotune off: 128 x 256, 4 stages, clusters of 2)
# beside cuBLAS's kernel at 4096^3 and 2560^3, f16, f32 out, --set full, one launch each.
# Binary: `cargo build --release` at 1df2df6.   Usage: bash profile.sh BIN OUT
set -u
B=$1/dynsmem; OUT=$2
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/env.txt
for s in 4096 2560; do
  timeout 120 $B run hgemm --m $s --n $s --k $s --autotune off --backend cuda --repeats 4 --json $OUT/plain-$s.jsonl > $OUT/plain-$s.txt 2>&1
  ncu --set full -k regex:hgemm_wgmma -s 3 -c 1 -o $OUT/ours-$s $B run hgemm --m $s --n $s --k $s --autotune off --backend cuda --repeats 2
  ncu --set full -k 'regex:^(?!hgemm).*(gemm|nvjet|sm90|xmma)' -s 3 -c 1 -o $OUT/cublas-$s $B run hgemm --m $s --n $s --k $s --autotune off --backend cuda --repeats 2
  for w in ours cublas; do
    ncu --import $OUT/$w-$s.ncu-rep --page details --csv > $OUT/$w-$s-details.csv
    ncu --import $OUT/$w-$s.ncu-rep --page raw --csv > $OUT/$w-$s-raw.csv
  done
done
