#!/usr/bin/env bash
# First look at the pipelined forward: tests, old (d1baa84) vs new at the must-show shapes, sdpa.
set -u
cd .dev2 && xz -d -f *.xz 2>/dev/null; chmod +x *; cd ..
export RUST_BACKTRACE=0
L=$OUT/log.txt
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; python3 -c "import torch; print('torch', torch.__version__)"; } | tee $OUT/env.txt
echo "== tests" | tee -a $L
timeout 240 .dev2/test-attention --test-threads=1 > $OUT/test-attention.log 2>&1; echo "rc $?" | tee -a $L; tail -5 $OUT/test-attention.log | tee -a $L
shapes=("--batch 8 --heads 16 --seq 4096 --mask none" "--batch 8 --heads 16 --seq 4096 --mask causal" "--batch 2 --heads 16 --seq 16384 --mask none" "--batch 2 --heads 16 --seq 16384 --mask causal")
echo "== old vs new, ABBA" | tee -a $L
for sh in "${shapes[@]}"; do for b in dynsmem-old dynsmem dynsmem dynsmem-old; do
  printf "%s | %s | " "$sh" "$b" | tee -a $L; timeout 60 .dev2/$b run attention --backend cuda --autotune off $sh --repeats 30 --energy-ms 0 --json $OUT/abba-$b.jsonl 2>&1 | grep -E "^time|verified|rror" | tr '\n' ' ' | cut -c1-160 | tee -a $L; echo | tee -a $L
done; done
echo "== new, stages 3 and bq 64" | tee -a $L
for sh in "${shapes[@]}"; do for a in "--stages 3" "--bq 64"; do
  printf "%s | %s | " "$sh" "$a" | tee -a $L; timeout 60 .dev2/dynsmem run attention --backend cuda --autotune off $sh $a --repeats 30 --energy-ms 0 2>&1 | grep -E "^time|rror" | tr '\n' ' ' | cut -c1-160 | tee -a $L; echo | tee -a $L
done; done
echo "== sdpa" | tee -a $L
timeout 200 python3 host/src/families/attention/sdpa.py --rounds 5 8,16,4096,128,f16,0 8,16,4096,128,f16,1 2,16,16384,128,f16,0 2,16,16384,128,f16,1 | tee $OUT/sdpa.jsonl | python3 -c "
import sys,json
for l in sys.stdin:
    r=json.loads(l); print(r['anchor'], r['batch'], r['seq'], r['causal'], round(r.get('tflops',0),1))" | tee -a $L
