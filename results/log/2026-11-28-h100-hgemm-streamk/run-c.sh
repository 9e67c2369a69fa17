#!/usr/bin/env bash
# Issue 58 follow-up on the H100: does the tuning-on-first-use shortlist (12 configs) miss a
# faster config at the two worst random shapes of run-b (seed 1795829002)? A sweep over
# bm x bn x stages x cluster x schedule x stream-K (group_m 8, depth 1), f16, then the
# shortlist's choice (`run`) for comparison.   Usage: bash run-c.sh BIN_DIR OUT_DIR
set -u
bin=$1; out=$2; mkdir -p "$out"
B=$bin/dynsmem
export RUST_BACKTRACE=0 DYNSMEM_AUTOTUNE_CACHE=$out/autotune
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $out/env.txt
for shape in "3512 1136 5664" "1488 3504 2280"; do
  set -- $shape
  tag=$1x$2x$3
  timeout 280 $B tune hgemm --m $1 --n $2 --k $3 --dtype f16 --backend cuda --cache $out/sweep-$tag.jsonl \
    --values mma=0 --values group_m=8 --values depth=1 --repeats 10 --confirm-top 3 > $out/sweep-$tag.txt 2>&1
  echo "== $tag sweep rc $?"; grep -iE "best|fastest|confirm|evaluat|failed" $out/sweep-$tag.txt | tail -8
  timeout 100 $B run hgemm --m $1 --n $2 --k $3 --dtype f16 --backend cuda --repeats 20 --json $out/run-$tag.jsonl 2>&1 | grep -E "^(config|time|anchor)" | tee -a $out/run-$tag.txt
done
