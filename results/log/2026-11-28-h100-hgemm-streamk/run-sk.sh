#!/usr/bin/env bash
# Stream-K on the H100: conformance (tests/hgemm.rs), compute-sanitizer on the stream-K path,
# and data-parallel against stream-K at the same tile, interleaved with cuBLAS.
set -u
cd .device/bin && for f in *.xz; do xz -d -f "$f"; done; chmod +x *; cd ../..
B=.device/bin/dynsmem
export RUST_BACKTRACE=0 DYNSMEM_AUTOTUNE_CACHE=$OUT/autotune
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/env.txt
$B --version >> $OUT/env.txt
echo "== tests/hgemm.rs" | tee -a $L
for t in .device/bin/test-hgemm-*; do timeout 400 $t --test-threads=1 > $OUT/test-hgemm.txt 2>&1; echo "rc $?" >> $OUT/test-hgemm.txt; done
grep -E "cases verified|test result|panicked|rc " $OUT/test-hgemm.txt | tee -a $L
echo "== compute-sanitizer, stream-K (1920 x 2304 x 192 and 513 x 250 x 4104, clusters of 2)" | tee -a $L
for tool in memcheck racecheck synccheck; do
  for shape in "--m 1920 --n 2304 --k 192" "--m 513 --n 250 --k 4104"; do
    timeout 150 compute-sanitizer --tool $tool --kernel-name kns=hgemm_wgmma $B run hgemm $shape --autotune off --bm 128 --bn 256 --stages 4 --cluster 2 --streamk true --backend cuda --repeats 1 > $OUT/san.tmp 2>&1
    echo "$tool $shape: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^time|^error' $OUT/san.tmp | tr '\n' ' ')" | tee -a $L
    cat $OUT/san.tmp >> $OUT/sanitize.txt
  done
done
rm -f $OUT/san.tmp
r() { printf "%s: " "$*" | tee -a $L; timeout 90 $B run hgemm "$@" --backend cuda --json $OUT/$J.jsonl 2>&1 | grep -E "^(time|error|anchor|Error|config)" | tr '\n' ' ' | cut -c1-600 | tee -a $L; echo | tee -a $L; }
echo "== data-parallel against stream-K, 128 x 256 x 4 stages, clusters of 2, f16, interleaved" | tee -a $L
J=dp-sk
for shape in "2560 2560 2560" "5120 2048 8192" "3072 3072 3072" "4096 4096 4096" "1536 1664 1024" "8192 8192 8192"; do
  set -- $shape
  for sk in false true; do r --m $1 --n $2 --k $3 --autotune off --bm 128 --bn 256 --stages 4 --cluster 2 --streamk $sk --repeats 20; done
done
echo "== tuning on first use at the must-show shapes" | tee -a $L
J=mustshow
for shape in "4096 4096 4096" "2560 2560 2560" "5120 2048 8192" "8192 8192 8192"; do
  set -- $shape
  for d in f16 bf16; do r --m $1 --n $2 --k $3 --dtype $d --repeats 40; done
done
