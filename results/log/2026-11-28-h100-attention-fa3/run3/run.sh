#!/usr/bin/env bash
# Attention forward, FA3 pipeline with the one-instruction softmax: tests, old (d1baa84) vs new
# (ping-pong on/off), launch-sized vs compiled-in (ABBA), random shapes + SDPA, sanitizer.
# SEED=<s> bash .dev2/gpu3.sh
set -u
cd .dev2 && xz -d -f *.xz 2>/dev/null; chmod +x dynsmem dynsmem-old test-* 2>/dev/null; cd ..
export RUST_BACKTRACE=0
B=.dev2/dynsmem
L=$OUT/log.txt
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; python3 -c "import torch; print('torch', torch.__version__)"; echo "commit $(cat .dev2/COMMIT)"; } | tee $OUT/env.txt
echo "== tests" | tee -a $L
timeout 240 .dev2/test-attention --test-threads=1 > $OUT/test-attention.log 2>&1; echo "rc $?" | tee -a $L; grep -E "verified|test result" $OUT/test-attention.log | tee -a $L
shapes=("--batch 8 --heads 16 --seq 4096 --mask none" "--batch 8 --heads 16 --seq 4096 --mask causal" "--batch 2 --heads 16 --seq 16384 --mask none" "--batch 2 --heads 16 --seq 16384 --mask causal")
short() { sed -E 's/.*median ([0-9.]+) ms.*; ([0-9.]+) TFLOP.*verified: ([a-z]+).*/\1 ms \2 TFLOP\/s verified \3/' | tr '\n' ' '; }
echo "== old (d1baa84) vs new pingpong true/false, A B C C B A" | tee -a $L
for sh in "${shapes[@]}"; do for v in "dynsmem-old|" "dynsmem|--pingpong true" "dynsmem|--pingpong false" "dynsmem|--pingpong false" "dynsmem|--pingpong true" "dynsmem-old|"; do
  b=${v%%|*}; a=${v#*|}
  printf "%s | %s %s | " "$sh" "$b" "$a" | tee -a $L; timeout 60 .dev2/$b run attention --backend cuda --autotune off $sh $a --repeats 30 --energy-ms 0 --json $OUT/old-vs-new-$b.jsonl 2>&1 | grep -E "^time|rror" | short | tee -a $L; echo | tee -a $L
done; done
echo "== launch-sized vs compiled-in, ABBA, 4 rounds" | tee -a $L
for i in 1 2 3 4; do for m in none causal; do for a in "" "--fixed" "--fixed" ""; do
  printf "%s %s [%s] " "$i" "$m" "$a" | tee -a $L; timeout 60 $B run attention --backend cuda --autotune off --mask $m $a --repeats 30 --energy-ms 0 --json $OUT/ls-vs-fixed.jsonl 2>&1 | grep -E "^time|rror" | short | tee -a $L; echo | tee -a $L
done; done; done
echo "== random, seed $SEED" | tee -a $L
timeout 300 $B shapes attention --backend cuda --variant launch-sized --repeats 20 --energy-ms 0 --random 8 --random-seed $SEED --json $OUT/random.jsonl --markdown 2>&1 | tail -14 | tee -a $L
echo "== sdpa (must-show shapes and the random ones), forward" | tee -a $L
specs=$(python3 -c "
import json
seen=['8,16,4096,128,f16,0','8,16,4096,128,f16,1','2,16,16384,128,f16,0','2,16,16384,128,f16,1']
for l in open('$OUT/random.jsonl'):
    r=json.loads(l); p=r['problem']
    if not p: continue
    s='%d,%d,%d,%d,%s,%d'%(p['batch'],p['heads'],p['seq'],p['d'],p['dtype'],int(p['causal']))
    if s not in seen: seen.append(s)
print(' '.join(seen))")
timeout 300 python3 host/src/families/attention/sdpa.py --rounds 5 $specs > $OUT/sdpa.jsonl 2>>$L
echo "== sdpa backward anchors" | tee -a $L
timeout 200 python3 host/src/families/attention/sdpa.py --backward --rounds 3 8,16,4096,128,f16,0 8,16,4096,128,f16,1 2,16,16384,128,f16,0 2,16,16384,128,f16,1 8,16,4096,128,bf16,0 > $OUT/sdpa-backward.jsonl 2>>$L
python3 - "$OUT" <<'PY' | tee -a $L
import json, sys, math
out = sys.argv[1]
sdpa = {}
for f in ['sdpa', 'sdpa-backward']:
    for l in open(f'{out}/{f}.jsonl'):
        r = json.loads(l)
        sdpa[(r['anchor'], r['batch'], r['heads'], r['seq'], r['d'], r['dtype'], r['causal'])] = r.get('tflops')
        if 'backward' in r['anchor']: print(r['anchor'], r['batch'], r['heads'], r['seq'], r['d'], r['dtype'], r['causal'], r.get('tflops') and round(r['tflops'], 1), r.get('error', ''))
def key(p): return (p['batch'], p['heads'], p['seq'], p['d'], p['dtype'], p['causal'])
rows = []
for l in open(f'{out}/old-vs-new-dynsmem.jsonl'):
    r = json.loads(l); rows.append(('must-show', r))
for l in open(f'{out}/random.jsonl'):
    r = json.loads(l)
    if r['variant'] == 'launch-sized' and r['problem']: rows.append(('random', r))
ratios = {}
for tag, r in rows:
    p = r['problem']; k = key(p)
    cu = sdpa.get(('torch-sdpa-cudnn',) + k); fl = sdpa.get(('torch-sdpa-flash',) + k)
    cfg = r.get('config', {})
    print(f"{tag} {k} pingpong {cfg.get('pingpong')} ours {r['tflops']:.1f} flash {fl and round(fl,1)} cudnn {cu and round(cu,1)} x cudnn {cu and round(r['tflops']/cu,3)} verified {r['verified']}")
    if tag == 'random' and cu: ratios.setdefault('random', []).append(r['tflops'] / cu)
for n, v in ratios.items():
    print(f"{n}: geomean x cuDNN {math.exp(sum(map(math.log, v))/len(v)):.3f} min {min(v):.3f} over {len(v)}")
PY
echo "== sanitizer" | tee -a $L
for tool in memcheck racecheck synccheck; do
  for a in "--batch 1 --heads 2 --seq 300 --mask causal" "--batch 1 --heads 2 --seq 300 --pingpong false" "--batch 1 --heads 3 --seq 129 --d 64 --dtype bf16 --bq 64 --stages 3 --mask causal" "--batch 1 --heads 2 --seq 300 --fixed"; do
    r=$(timeout 120 compute-sanitizer --tool $tool $B run attention --backend cuda --autotune off --repeats 1 --warmup 0 $a 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|verified" | tr '\n' ' ' | cut -c1-200)
    echo "$tool | attention $a | $r" | tee -a $OUT/sanitize.txt
  done
done
