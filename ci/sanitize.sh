#!/usr/bin/env bash
# Runs every kernel family's CUDA path under compute-sanitizer (memcheck, racecheck,
# synccheck, initcheck) at small sizes, for several configs each, including configs past
# the 48 KB a block gets without opt-in (staged reduce 205824 B, histogram 49152 bins
# 196608 B, softmax rows of 32768 floats 132096 B, scan 512 x 48 ~98 KB, sgemm 128 x 128 x 32
# with two stages 67584 B). Each case is
# `dynsmem run <family> --backend cuda`, which verifies the result against the CPU
# reference, so a case also fails when the kernel computes a wrong answer.
#
#   bash ci/sanitize.sh [DYNSMEM_BINARY]      (default: .device/bin/dynsmem, else target/release/dynsmem)
#
# SANITIZE_FAMILIES (space-separated family names) keeps only those families' cases.
#
# Logs go to $OUT (default /tmp/dynsmem-sanitize): one per tool with every case's output, and
# summary.txt. Exits 0 only if every case of every tool reports zero errors and hazards and
# verifies; exits 2 where compute-sanitizer or a CUDA device is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/dynsmem-sanitize}
mkdir -p "$OUT"
B=${1:-}
if [ -z "$B" ]; then
  if [ -x .device/bin/dynsmem ]; then B=.device/bin/dynsmem; else B=target/release/dynsmem; fi
fi
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [ -z "$CS" ]; then echo "compute-sanitizer not found (it comes with the CUDA toolkit)"; exit 2; fi
if ! "$B" devices 2>/dev/null | grep -q '^cuda: NVIDIA'; then echo "no CUDA device: nothing to sanitize"; exit 2; fi

T=(--backend cuda --warmup 1 --warmup-ms 0 --repeats 1)
cases=(
  "reduce --n 1000003 --block 256 --ipt 8"
  "reduce --n 4097 --block 64 --ipt 4 --op min --dtype u32"
  "reduce --n 1000003 --staged --block 256 --ipt 200"
  "scan --n 100003"
  "scan --n 100003 --block 96 --ipt 8 --dtype u32"
  "histogram --n 1000003 --bins 256"
  "histogram --n 100003 --bins 49152"
  "conv1d --n 100003 --taps 33"
  "conv1d --n 100003 --taps 3 --block 64 --outputs-per-thread 4"
  "conv1d --n 10007 --taps 129"
  "stencil2d --width 1000 --height 77 --radius 1"
  "stencil2d --width 333 --height 129 --radius 2 --block 8 --tile-w 16 --tile-h 6"
  "transpose --rows 1000 --cols 1003"
  "transpose --rows 333 --cols 4100 --tile 64 --pad 1"
  "softmax --rows 7 --cols 1000"
  "softmax --rows 3 --cols 32768"
  "rmsnorm --rows 7 --cols 1000"
  "rmsnorm --rows 3 --cols 32768"
  "rmsnorm --rows 5 --cols 1001 --block 96"
  "nbody --n 1001"
  "nbody --n 4096 --tile 256"
  "sgemm --m 17 --n 33 --k 65"
  "sgemm --m 256 --bm 128 --bn 128 --bk 32 --stages 2"
  "sgemm --m 200 --n 136 --k 72 --f16 --bm 64 --bn 64 --bk 16 --stages 3"
  "sgemm --m 300 --n 260 --k 100 --bm 64 --bn 128 --bk 24 --stages 3"
  "sgemm --m 1000 --n 1004 --k 996 --tma --bm 256 --bk 32 --stages 3"
  "sgemm --m 300 --n 260 --k 1000 --tma --bm 64 --bk 64 --stages 2"
  # Predicated edge copies (rows past m, columns past k; B by chunks and, n odd, by words)
  # and split-K (atomic adds after the k = 0 scaling launch).
  "sgemm --m 97 --n 61 --k 301 --bm 64 --bn 64 --bk 32 --stages 3"
  "sgemm --m 97 --n 64 --k 301 --bm 128 --bn 64 --bk 32 --stages 3"
  "sgemm --m 200 --n 131 --k 999 --bm 256 --bn 128 --bk 32 --stages 3 --tm 16"
  "sgemm --m 97 --n 61 --k 2000 --bm 64 --bn 64 --bk 32 --stages 3 --splits 8"
  "sgemm --m 300 --n 260 --k 1000 --tma --bm 128 --bk 32 --stages 3 --splits 4"
  # Tensor cores: every entry (wgmma n128 / n256, one and two math warpgroups, the fixed
  # tile, mma.sync), edges in m, n and k, rings longer than the k-tiles, 16-bit output,
  # persistent blocks over more tiles than SMs (m 1000 x n 2000 in 128 x 256: 32 tiles on
  # fewer blocks when --group-m walks them).
  "hgemm --m 200 --n 300 --k 1000"
  "hgemm --m 131 --n 67 --k 72 --bm 64 --bn 128 --stages 3 --dtype bf16"
  "hgemm --m 1000 --n 2000 --k 200 --bm 128 --bn 256 --stages 4 --cluster 1 --out input"
  "hgemm --m 1000 --n 2000 --k 200 --bm 128 --bn 256 --stages 2 --cluster 2 --dtype bf16"
  "hgemm --m 1100 --n 2100 --k 520 --bm 128 --bn 256 --stages 5 --cluster 2 --pingpong true"
  "hgemm --m 1000 --n 2000 --k 200 --bm 128 --bn 192 --stages 5 --cluster 1 --pingpong true --dtype bf16 --out input"
  "hgemm --m 1000 --n 600 --k 264 --bm 128 --bn 256 --stages 3 --cluster 1 --dtype bf16"
  "hgemm --m 300 --n 200 --k 136 --bm 128 --bn 128 --stages 4"
  "hgemm --m 520 --n 700 --k 328 --bm 64 --bn 256 --stages 3 --cluster 2"
  "hgemm --m 256 --n 512 --k 512 --fixed"
  "hgemm --m 256 --n 512 --k 512 --fixed --cluster 1"
  "hgemm --m 200 --n 300 --k 1000 --mma --bm 128 --stages 3"
  "hgemm --m 67 --n 131 --k 72 --mma --bm 64 --stages 6 --dtype bf16 --out input"
  # Attention: both kernels, one and two math warpgroups, rings of 2 to 5 slots, partial query
  # and key tiles (odd sequences), causal and not, D 64 and 128, both types, the fixed tile.
  "attention --batch 1 --heads 2 --seq 300 --mask causal"
  "attention --batch 1 --heads 2 --seq 257 --d 64 --dtype bf16 --bq 64 --stages 3"
  "attention --batch 1 --heads 3 --seq 129 --dtype bf16 --bq 64 --stages 3 --mask causal"
  "attention --batch 1 --heads 3 --seq 129 --d 64 --bq 64 --stages 5 --mask causal"
  "attention --batch 1 --heads 2 --seq 300 --fixed"
  "attention --batch 1 --heads 2 --seq 300 --pingpong false --mask causal"
  "attention --batch 1 --heads 2 --seq 77 --d 64 --simt --bq 32 --bk 16 --mask causal"
  # Attention backward: partial query and key tiles, causal and not, both head dimensions.
  "attention-backward --batch 1 --heads 2 --seq 300 --mask causal"
  "attention-backward --batch 1 --heads 3 --seq 129 --d 64 --dtype bf16 --bq 32 --bk 24"
)
# Every registry family has a case (tests/registry.rs checks the same without a GPU).
for f in $("$B" families); do
  printf '%s\n' "${cases[@]}" | grep -q "^$f " || { echo "ci/sanitize.sh: no case for the registry family $f" >&2; exit 1; }
done
if [ -n "${SANITIZE_FAMILIES:-}" ]; then
  kept=()
  for c in "${cases[@]}"; do
    for f in $SANITIZE_FAMILIES; do [ "${c%% *}" = "$f" ] && kept+=("$c"); done
  done
  cases=("${kept[@]}")
fi

{
  echo "compute-sanitizer: $("$CS" --version | tail -1)"
  echo "binary: $B ($("$B" devices 2>/dev/null | grep '^cuda:'))"
} > "$OUT/summary.txt"
status=0
for tool in memcheck racecheck synccheck initcheck; do
  log="$OUT/sanitize-$tool.log"
  : > "$log"
  for c in "${cases[@]}"; do
    # shellcheck disable=SC2086
    out=$("$CS" --tool "$tool" --error-exitcode 99 --print-limit 20 "$B" run $c "${T[@]}" 2>&1)
    rc=$?
    { echo "\$ compute-sanitizer --tool $tool dynsmem run $c ${T[*]}"; echo "$out"; echo "exit code $rc"; echo; } >> "$log"
    if [ "$tool" = racecheck ]; then
      clean=$(echo "$out" | grep -c "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)")
    else
      clean=$(echo "$out" | grep -c "ERROR SUMMARY: 0 errors")
    fi
    verified=$(echo "$out" | grep -c "^verified: yes")
    if [ "$rc" -eq 0 ] && [ "$clean" -ge 1 ] && [ "$verified" -ge 1 ]; then
      verdict=clean
    else
      verdict="FINDINGS OR FAILURE (exit $rc)"
      status=1
    fi
    echo "$tool | $c | $verdict" | tee -a "$OUT/summary.txt"
  done
done
[ "$status" -eq 0 ] && echo "all clean" | tee -a "$OUT/summary.txt"
exit $status
