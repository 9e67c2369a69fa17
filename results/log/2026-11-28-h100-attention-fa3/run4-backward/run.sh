#!/usr/bin/env bash
# Merged tree: forward and backward tests on the H100, the SIMT backward's runs, sanitizer on
# the backward, the forward's launch-sized vs compiled-in once more.
set -u
cd .dev2 && xz -d -f *.xz 2>/dev/null; chmod +x dynsmem test-* 2>/dev/null; cd ..
export RUST_BACKTRACE=0
B=.dev2/dynsmem
L=$OUT/log.txt
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit $(cat .dev2/COMMIT)"; } | tee $OUT/env.txt
for t in attention attention_backward; do
  echo "== tests $t" | tee -a $L
  timeout 200 .dev2/test-$t --test-threads=1 > $OUT/test-$t.txt 2>&1; echo "rc $?" | tee -a $L; grep -E "verified|test result|SKIPPED|panicked|FAILED" $OUT/test-$t.txt | tee -a $L
done
short() { sed -E 's/.*median ([0-9.]+) ms.*; ([0-9.]+) TFLOP.*verified: ([a-z]+).*/\1 ms \2 TFLOP\/s verified \3/' | tr '\n' ' '; }
echo "== backward (SIMT) runs" | tee -a $L
for a in "--batch 1 --heads 4 --seq 4096 --mask none" "--batch 1 --heads 4 --seq 4096 --mask causal" "--batch 1 --heads 4 --seq 4097 --d 64 --dtype bf16 --mask causal" "--batch 1 --heads 4 --seq 4096 --bq 32 --bk 32"; do
  printf "%s | " "$a" | tee -a $L; timeout 90 $B run attention-backward --backend cuda --autotune off $a --repeats 3 --warmup 1 --energy-ms 0 --json $OUT/backward.jsonl 2>&1 | grep -E "^time|rror|verified" | short | tee -a $L; echo | tee -a $L
done
timeout 120 python3 host/src/families/attention/sdpa.py --backward --rounds 3 1,4,4096,128,f16,0 1,4,4096,128,f16,1 > $OUT/sdpa-backward-small.jsonl 2>>$L; cat $OUT/sdpa-backward-small.jsonl | cut -c1-200 | tee -a $L
echo "== sanitizer (backward)" | tee -a $L
for tool in memcheck racecheck synccheck; do
  for a in "--batch 1 --heads 2 --seq 300 --mask causal" "--batch 1 --heads 3 --seq 129 --d 64 --dtype bf16 --bq 32 --bk 24"; do
    r=$(timeout 120 compute-sanitizer --tool $tool $B run attention-backward --backend cuda --autotune off --repeats 1 --warmup 0 $a 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|verified" | tr '\n' ' ' | cut -c1-200)
    echo "$tool | attention-backward $a | $r" | tee -a $OUT/sanitize.txt
  done
done
