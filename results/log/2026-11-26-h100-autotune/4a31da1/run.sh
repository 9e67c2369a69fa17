#!/usr/bin/env bash
# GPU call (issue 35, final 5): random seed 1795718455, drawn (date +%s) after the autotune code was done.
cd "$(dirname "$0")"; for f in *.xz; do [ -e "$f" ] && xz -d -f "$f"; done; chmod +x dynsmem* 2>/dev/null; cd ..
d="$OUT/final5"; mkdir -p "$d"; S=$SECONDS
nvidia-smi --query-gpu=name,driver_version,uuid --format=csv,noheader > "$d/device.txt"
trap 'tar czf "$OUT/final5.tar.gz" -C "$OUT" final5' EXIT
left() { echo $(( 530 - (SECONDS - S) )); }
B="shapes sgemm --backend cuda --variant launch-sized --repeats 10 --energy-ms 0"
H="--label cube-1024 --label cube-4096 --label cube-8192"
R="--random 30 --random-seed 1795718455"
cnt() { echo "measured=$(cat $d/at/measurements.jsonl 2>/dev/null | wc -l) winners=$(cat $d/at/winners.jsonl 2>/dev/null | wc -l)"; }
shp() { # label args...
  local label=$1; shift; local t0=$SECONDS
  timeout $(left) ./.dev2/dynsmem $B "$@" --json "$d/$label.jsonl" > "$d/$label.txt" 2>&1
  echo "$label rc=$? t=$((SECONDS-t0)) $(cnt)"; grep -A3 "^family  backend  variant       shapes" "$d/$label.txt" | tail -1
}
shp noauto $R $H --no-autotune
shp auto1 $R $H --autotune-cache "$d/at"
shp auto2 $R $H --autotune-cache "$d/at"
shp head2 $H --autotune-cache "$d/at"
shp head3 $H --autotune-cache "$d/at"
# Earlier runs' shapes with this binary (seeds of c5a7a0d, bf47ff1 and 4fc5d67): same shapes, this code.
shp seed-1795715236 --random 30 --random-seed 1795715236 --autotune-cache "$d/at-1795715236"
shp seed-1795715853 --random 30 --random-seed 1795715853 --autotune-cache "$d/at-1795715853"
shp seed-1795716476 --random 30 --random-seed 1795716476 --autotune-cache "$d/at-1795716476"
# kill -9 mid-autotune, on the GPU: a fresh cache, killed after its first measured candidate.
k="$d/kill"; mkdir -p "$k"
./.dev2/dynsmem run sgemm --backend cuda --m 3001 --n 2999 --k 1001 --autotune-cache "$k" > "$k/run1.txt" 2>&1 &
pid=$!; t0=$SECONDS
while [ ! -s "$k/measurements.jsonl" ] && [ $((SECONDS-t0)) -lt 60 ]; do sleep 0.01; done
kill -9 $pid; wait $pid 2>/dev/null; echo "killed: measured=$(wc -l < $k/measurements.jsonl) winners=$(cat $k/winners.jsonl 2>/dev/null | wc -l)"
./.dev2/dynsmem run sgemm --backend cuda --m 3001 --n 2999 --k 1001 --autotune-cache "$k" > "$k/run2.txt" 2>&1; echo "run2 rc=$? $(grep '^config' $k/run2.txt | cut -c1-300)"
./.dev2/dynsmem run sgemm --backend cuda --m 3001 --n 2999 --k 1001 --autotune-cache "$k" > "$k/run3.txt" 2>&1; echo "run3 rc=$? $(grep '^config' $k/run3.txt | cut -c1-300) measured=$(wc -l < $k/measurements.jsonl) winners=$(wc -l < $k/winners.jsonl)"
CS=/usr/local/cuda/bin/compute-sanitizer
timeout $(left) $CS --tool memcheck ./.dev2/dynsmem run sgemm --m 121 --n 310 --k 6128 --bm 32 --bn 32 --bk 16 --stages 3 --splits 32 --backend cuda --repeats 1 --warmup 0 --warmup-ms 0 > "$d/memcheck-splits32.txt" 2>&1; echo "memcheck rc=$? $(grep 'ERROR SUMMARY' $d/memcheck-splits32.txt) $(grep -o 'verified: [a-z]*' $d/memcheck-splits32.txt)"
echo "total t=$((SECONDS-S))"
