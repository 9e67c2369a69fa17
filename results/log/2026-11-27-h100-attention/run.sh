#!/usr/bin/env bash
# Attention on the H100 (records): tests, launch-sized vs compiled-in, the suite, seeded random
# shapes, PyTorch SDPA on the same shapes, sanitizer.  SEED=<s> bash .dev2/gpu2.sh
set -u
cd .dev2 && xz -d *.xz 2>/dev/null; chmod +x dynsmem test-attention; cd ..
export RUST_BACKTRACE=0
B=.dev2/dynsmem
L=$OUT/log.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version 2>/dev/null | tail -1; python3 -c "import torch; print('torch', torch.__version__)"; } | tee $OUT/env.txt
[ "${TESTS:-1}" = 1 ] && { echo "== tests" | tee -a $L; timeout 200 .dev2/test-attention --test-threads=1 2>&1 | tail -6 | tee -a $L; }
echo "== launch-sized vs compiled-in, ABBA order, 4 rounds of 2 pairs" | tee -a $L
for i in 1 2 3 4; do for m in none causal; do for a in "" "--fixed" "--fixed" ""; do
  printf "%s %s [%s] " "$i" "$m" "$a" | tee -a $L; $B run attention --backend cuda --autotune off --mask $m $a --repeats 30 --energy-ms 0 --json $OUT/ls-vs-fixed.jsonl 2>&1 | grep -E "^time" | cut -c1-100 | tee -a $L
done; done; done
echo "== suite" | tee -a $L
timeout 400 $B shapes attention --backend cuda --variant launch-sized --repeats 20 --energy-ms 0 --json $OUT/shapes.jsonl --markdown 2>&1 | tail -25 | tee -a $L
echo "== random, seed $SEED" | tee -a $L
timeout 400 $B shapes attention --backend cuda --variant launch-sized --repeats 20 --energy-ms 0 --random 8 --random-seed $SEED --json $OUT/random.jsonl --markdown 2>&1 | tail -15 | tee -a $L
echo "== sdpa" | tee -a $L
specs=$(python3 -c "
import json
seen=[]
for f in ['$OUT/shapes.jsonl','$OUT/random.jsonl']:
    for l in open(f):
        r=json.loads(l); p=r['problem']
        if not p: continue
        s='%d,%d,%d,%d,%s,%d'%(p['batch'],p['heads'],p['seq'],p['d'],p['dtype'],int(p['causal']))
        if s not in seen: seen.append(s)
print(' '.join(seen))")
timeout 400 python3 host/src/families/attention/sdpa.py --rounds 5 $specs > $OUT/sdpa.jsonl 2>>$L
python3 - "$OUT" <<'PY' | tee -a $L
import json, sys
out = sys.argv[1]
sdpa = {}
for l in open(f'{out}/sdpa.jsonl'):
    r = json.loads(l)
    sdpa[(r['anchor'], r['batch'], r['heads'], r['seq'], r['d'], r['dtype'], r['causal'])] = r.get('tflops')
import math
for f in ['shapes', 'random']:
    ratios = {'flash': [], 'cudnn': []}
    for l in open(f'{out}/{f}.jsonl'):
        r = json.loads(l); p = r['problem']
        if r['variant'] != 'launch-sized' or not p: continue
        k = (p['batch'], p['heads'], p['seq'], p['d'], p['dtype'], p['causal'])
        fl, cu = sdpa.get(('torch-sdpa-flash',) + k), sdpa.get(('torch-sdpa-cudnn',) + k)
        ours = r['tflops']
        rf = ours / fl if fl else None; rc = ours / cu if cu else None
        if rf: ratios['flash'].append(rf)
        if rc: ratios['cudnn'].append(rc)
        print(f"{f} {r['shape']:<22} {k} ours {ours:.1f} flash {fl and round(fl,1)} cudnn {cu and round(cu,1)} x{rf and round(rf,3)} / x{rc and round(rc,3)} verified {r['verified']}")
    for n, v in ratios.items():
        if v: print(f"{f}: geomean vs {n} {math.exp(sum(map(math.log, v))/len(v)):.3f} min {min(v):.3f} over {len(v)}")
PY
[ "${SANITIZE:-1}" = 1 ] || exit 0
echo "== sanitizer" | tee -a $L
for tool in memcheck racecheck synccheck; do
  for a in "--batch 1 --heads 2 --seq 300 --mask causal" "--batch 1 --heads 2 --seq 257 --d 64 --dtype bf16 --bq 64 --stages 3" "--batch 1 --heads 2 --seq 300 --fixed" "--batch 1 --heads 3 --seq 129 --d 128 --dtype bf16 --bq 64 --stages 5 --mask causal"; do
    r=$(timeout 120 compute-sanitizer --tool $tool $B run attention --backend cuda --autotune off --repeats 1 --warmup 0 $a 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|verified" | tr '\n' ' ')
    echo "$tool | attention $a | $r" | tee -a $OUT/sanitize.txt
  done
done
