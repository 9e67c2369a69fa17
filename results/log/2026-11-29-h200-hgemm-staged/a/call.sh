#!/usr/bin/env bash
# Issue 75, call A on the H200: the staged (TMA-store) epilogue. 1. the CUDA hgemm tests (new
# staged cases and every earlier entry); 2. compute-sanitizer on staged runs; 3. the same config
# from registers and staged, interleaved processes, each against cuBLAS in its own process;
# 4. tuning on first use at the must-show cubes (empty cache); 5. Nsight Compute at 4096^3:
# registers, staged, cuBLAS.
set -u
for f in .device/bin/*.xz; do [ -e "$f" ] && xz -d -f "$f"; done; chmod +x .device/bin/*
D=./.device/bin/dynsmem; d=/tmp/r75a; rm -rf "$d"; mkdir -p "$d"; S=$SECONDS
left() { echo $(( 560 - (SECONDS - S) )); }
export RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$d/device.txt"
echo "== 1. tests"
timeout 200 ./.device/bin/test-hgemm --test-threads=1 > "$d/test.txt" 2>&1; echo "rc=$? t=$((SECONDS-S))"
grep -E "^test |test result|panicked|verified|SKIPPED|differs" "$d/test.txt" | head -20
echo "== 2. sanitizer"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for q in "--bm 128 --bn 256 --cluster 2 --stages 4" "--bm 128 --bn 224 --cluster 2 --stages 4 --pingpong true" "--bm 128 --bn 192 --cluster 1 --stages 3 --streamk true"; do
  for tool in memcheck synccheck racecheck; do
    [ "$(left)" -gt 330 ] || { echo "skipped $tool: time"; continue; }
    timeout 60 $CS --tool $tool --kernel-name kns=hgemm_wgmma $D run hgemm --backend cuda --m 200 --n 296 --k 1000 $q --tma-store true --out input --autotune off --repeats 1 --warmup 0 --warmup-ms 0 --energy-ms 0 > "$d/cs.tmp" 2>&1
    echo "$tool [$q]: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Internal' "$d/cs.tmp" | head -1 | cut -c1-100) $(grep -o 'verified: [a-z]*' "$d/cs.tmp" | head -1)"
    cat "$d/cs.tmp" >> "$d/cs-all.log"
  done
done
echo "t=$((SECONDS-S))"
echo "== 3. registers vs staged, same tile (128 x 256, 4 stages, clusters of 2), alternating processes"
r() { local tag=$1; shift; timeout 60 $D run hgemm --backend cuda "$@" --repeats 20 --energy-ms 0 --json "$d/ab.jsonl" > "$d/one.txt" 2>&1 || echo "rc=$? $tag"; echo "$tag $* :: $(grep -E '^(time|anchor|config)' "$d/one.txt" | tr '\n' ' ' | cut -c1-400)" >> "$d/ab.txt"; }
for s in "4096 4096 4096" "2560 2560 2560" "8192 8192 8192"; do
  read -r m n k <<< "$s"
  for rep in 1 2; do for st in false true; do
    [ "$(left)" -gt 230 ] || continue
    r "rep$rep" --m $m --n $n --k $k --bm 128 --bn 256 --cluster 2 --stages 4 --pingpong false --streamk false --autotune off --tma-store $st
  done; done
done
for st in false true; do r "f16out" --m 4096 --n 4096 --k 4096 --out input --bm 128 --bn 256 --cluster 2 --stages 4 --pingpong false --streamk false --autotune off --tma-store $st; done
echo "t=$((SECONDS-S))"; cut -c1-260 "$d/ab.txt"
echo "== 4. tuning on first use (empty cache)"
for s in 4096 2560 8192; do for dt in f16 bf16; do
  [ "$(left)" -gt 110 ] || { echo "skipped $s $dt"; continue; }
  DYNSMEM_AUTOTUNE_CACHE=$d/at timeout 90 $D run hgemm --backend cuda --m $s --n $s --k $s --dtype $dt --repeats 20 --energy-ms 0 --json "$d/tuned.jsonl" > "$d/one.txt" 2>&1 || echo "rc=$?"
  echo "$s $dt :: $(grep -E '^(time|anchor|config)' "$d/one.txt" | tr '\n' ' ' | cut -c1-400)" | tee -a "$d/tuned.txt"
done; done
echo "t=$((SECONDS-S))"
echo "== 5. ncu 4096^3"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SEC="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis"
P="run hgemm --backend cuda --m 4096 --n 4096 --k 4096 --bm 128 --bn 256 --cluster 2 --stages 4 --pingpong false --streamk false --autotune off --repeats 2 --warmup 1 --energy-ms 0"
for st in false true; do
  [ "$(left)" -gt 30 ] || continue
  timeout 80 $NCU $SEC -k regex:hgemm_wgmma -s 2 -c 1 --csv --page details $D $P --tma-store $st > "$d/ncu-ours-tma-$st.csv" 2> "$d/ncu.err"; echo "ncu tma=$st rc=$?"
done
[ "$(left)" -gt 25 ] && { timeout 80 $NCU $SEC -k 'regex:^(?!hgemm).*(gemm|nvjet|sm90|xmma)' -s 2 -c 1 --csv --page details $D $P > "$d/ncu-cublas.csv" 2>> "$d/ncu.err"; echo "ncu cublas rc=$?"; }
tail -3 "$d/ncu.err"
tar czf "$OUT/r75a.tgz" -C /tmp r75a && echo "total t=$((SECONDS-S))"
