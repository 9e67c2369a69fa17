#!/usr/bin/env bash
# Issue 58, call B on the H100: 12 random shapes (every side a multiple of 8, log-uniform in
# [1024, 16384], seed SEED drawn with `date +%s` after the code was built), f16 and bf16 each,
# tuning on first use, interleaved with cuBLAS.   Usage: SEED=<s> bash run-b.sh BIN_DIR OUT_DIR
set -u
bin=$1; out=$2; mkdir -p "$out"
B=$bin/dynsmem
export RUST_BACKTRACE=0 DYNSMEM_AUTOTUNE_CACHE=$out/autotune
L=$out/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $out/env.txt
python3 - "$SEED" > $out/shapes.txt <<'PY'
import math, random, sys
r = random.Random(int(sys.argv[1]))
for i in range(12):
    print(*(int(math.exp(r.uniform(math.log(1024), math.log(16385)))) // 8 * 8 for _ in range(3)))
PY
echo "seed $SEED" | tee -a $L; cat $out/shapes.txt | tee -a $L
r() { printf "%s: " "$*" | tee -a $L; timeout 100 $B run hgemm "$@" --backend cuda --json $out/random.jsonl 2>&1 | grep -E "^(time|error|anchor|Error|config)" | tr '\n' ' ' | cut -c1-700 | tee -a $L; echo | tee -a $L; }
while read -r m n k; do
  for d in f16 bf16; do r --m $m --n $n --k $k --dtype $d --repeats 20; done
done < $out/shapes.txt
echo "== racecheck: which paths the sanitizer's internal error follows (1920 x 2304 x 192)" | tee -a $L
for cfg in "--bn 224 --stages 4 --cluster 1 --streamk true" "--bn 256 --stages 4 --cluster 2 --streamk false" "--bn 192 --stages 5 --cluster 2 --streamk false"; do
  timeout 150 compute-sanitizer --tool racecheck --kernel-name kns=hgemm_wgmma $B run hgemm --m 1920 --n 2304 --k 192 --bm 128 $cfg --pingpong false --autotune off --backend cuda --repeats 1 > $out/san.tmp 2>&1
  echo "racecheck $cfg: rc $? $(grep -E 'RACECHECK SUMMARY|Internal|^time|^Error' $out/san.tmp | tr '\n' ' ')" | tee -a $L
  cat $out/san.tmp >> $out/sanitize.txt
done
rm -f $out/san.tmp
