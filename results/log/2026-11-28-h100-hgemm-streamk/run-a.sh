#!/usr/bin/env bash
# Issue 58, call A on the H100: tests/hgemm.rs (every entry, stream-K, the 160- and 224-wide
# tiles), compute-sanitizer on the new paths, the must-show shapes with tuning on first use
# beside cuBLAS (interleaved).   Usage: bash run-a.sh BIN_DIR OUT_DIR
set -u
bin=$1; out=$2; mkdir -p "$out"
B=$bin/dynsmem
export RUST_BACKTRACE=0 DYNSMEM_AUTOTUNE_CACHE=$out/autotune
L=$out/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $out/env.txt
$B --version >> $out/env.txt
echo "== tests/hgemm.rs" | tee -a $L
timeout 400 $bin/test-hgemm --test-threads=1 > $out/test-hgemm.txt 2>&1; echo "rc $?" >> $out/test-hgemm.txt
grep -E "cases verified|test result|panicked|rc " $out/test-hgemm.txt | tee -a $L
echo "== compute-sanitizer" | tee -a $L
san() { # tool, args
  tool=$1; shift
  timeout 150 compute-sanitizer --tool $tool --kernel-name kns=hgemm_wgmma $B run hgemm "$@" --autotune off --backend cuda --repeats 1 > $out/san.tmp 2>&1
  echo "$tool $*: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^time|^Error' $out/san.tmp | tr '\n' ' ')" | tee -a $L
  cat $out/san.tmp >> $out/sanitize.txt
}
for tool in memcheck racecheck synccheck; do
  san $tool --m 1920 --n 2304 --k 192 --bm 128 --bn 224 --stages 4 --cluster 2 --pingpong false --streamk true
  san $tool --m 513 --n 250 --k 4104 --bm 128 --bn 224 --stages 4 --cluster 2 --pingpong false --streamk true
  san $tool --m 1920 --n 2304 --k 192 --bm 128 --bn 160 --stages 5 --cluster 2 --pingpong false
done
rm -f $out/san.tmp
r() { printf "%s: " "$*" | tee -a $L; timeout 100 $B run hgemm "$@" --backend cuda --json $out/$J.jsonl 2>&1 | grep -E "^(time|error|anchor|Error|config)" | tr '\n' ' ' | cut -c1-700 | tee -a $L; echo | tee -a $L; }
echo "== must-show shapes: tuning on first use, interleaved" | tee -a $L
J=mustshow
for shape in "4096 4096 4096" "2560 2560 2560" "5120 2048 8192" "8192 8192 8192"; do
  set -- $shape
  for d in f16 bf16; do r --m $1 --n $2 --k $3 --dtype $d --repeats 40; done
done
