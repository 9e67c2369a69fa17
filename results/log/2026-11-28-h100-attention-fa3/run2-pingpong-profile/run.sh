#!/usr/bin/env bash
# Pipelined forward, second cut: tests, old (d1baa84) vs new with ping-pong on/off, profile.
set -u
cd .dev2 && xz -d -f *.xz 2>/dev/null; chmod +x *; cd ..
export RUST_BACKTRACE=0
L=$OUT/log.txt
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } | tee $OUT/env.txt
echo "== tests" | tee -a $L
timeout 240 .dev2/test-attention --test-threads=1 > $OUT/test-attention.log 2>&1; echo "rc $?" | tee -a $L; grep -E "verified|test result" $OUT/test-attention.log | tee -a $L
shapes=("--batch 8 --heads 16 --seq 4096 --mask none" "--batch 8 --heads 16 --seq 4096 --mask causal" "--batch 2 --heads 16 --seq 16384 --mask none" "--batch 2 --heads 16 --seq 16384 --mask causal")
echo "== old vs new pingpong true/false, A B C C B A" | tee -a $L
for sh in "${shapes[@]}"; do for v in "dynsmem-old|" "dynsmem|--pingpong true" "dynsmem|--pingpong false" "dynsmem|--pingpong false" "dynsmem|--pingpong true" "dynsmem-old|"; do
  b=${v%%|*}; a=${v#*|}
  printf "%s | %s %s | " "$sh" "$b" "$a" | tee -a $L; timeout 60 .dev2/$b run attention --backend cuda --autotune off $sh $a --repeats 30 --energy-ms 0 --json $OUT/runs.jsonl 2>&1 | grep -E "^time|rror" | sed -E 's/.*median ([0-9.]+) ms.*; ([0-9.]+) TFLOP.*verified: ([a-z]+).*/\1 ms \2 TFLOP\/s verified \3/' | tr '\n' ' ' | tee -a $L; echo | tee -a $L
done; done
echo "== profile" | tee -a $L
timeout 150 ncu --set full --import-source no -k regex:attention_wgmma -s 2 -c 1 -o $OUT/prof-new .dev2/dynsmem run attention --backend cuda --autotune off --batch 8 --heads 16 --seq 4096 --mask none --repeats 3 --warmup 1 --energy-ms 0 > $OUT/ncu.log 2>&1
cp .dev2/prof-dynsmem-old.ncu-rep $OUT/ 2>/dev/null
for r in $OUT/prof-new.ncu-rep .dev2/prof-dynsmem-old.ncu-rep; do echo "-- $r" | tee -a $L
  ncu -i $r --page details --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis --print-details all 2>&1 | grep -E "Duration|Stall|Warp Cycles Per Issued|Tensor|Pipe" | head -40 | tee -a $L
  ncu -i $r --page source --csv --print-source sass > $OUT/$(basename $r .ncu-rep)-sass.csv 2>&1
done
