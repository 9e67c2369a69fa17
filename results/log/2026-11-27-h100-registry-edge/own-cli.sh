#!/usr/bin/env bash
# The example's kernels through dynsmem's own command line on CUDA (examples/own-kernel,
# src/bin/cli.rs: dynsmem::cli::main(&[&WINDOW_MEAN, &CHUNK_SUMS]), its PTX loaded beside none of
# ours), then compute-sanitizer on that path (a second image loaded by CudaBackend::with_module,
# the user's kernel launched from the registry), and on a row-family run (rows::check first).
set -uo pipefail
cd "$(dirname "$0")/../../.."
for f in .device/bin/*.xz; do [ -e "$f" ] && xz -d "$f"; done
chmod +x .device/bin/*
export XDG_RUNTIME_DIR=$(mktemp -d)
o=.device/bin/own-cli
step() { echo "== $*"; "$@"; echo "rc=$?"; }
{
  step $o devices
  # Sizes the CPU-run check (the same kernel on the CPU backend, one OS thread per GPU thread)
  # finishes in seconds: at 10^8 floats and a window of 129 it did not finish in 5 minutes.
  step $o run window_mean --backend cuda --n 4000037 --json "$OUT/own-cli.jsonl"
  step $o run window_mean --backend cuda --n 4000037 --window 129 --block 256 --per-thread 4 --json "$OUT/own-cli.jsonl"
  step $o run chunk_sums --backend cuda --n 4000037 --block 64 --chunk 8 --json "$OUT/own-cli.jsonl"
  step $o tune window_mean --backend cuda --n 1000003 --cache "$OUT/own-tune.jsonl" --quiet
  san=/usr/local/cuda/bin/compute-sanitizer; command -v compute-sanitizer >/dev/null && san=compute-sanitizer
  for tool in memcheck racecheck synccheck; do
    step $san --tool $tool --error-exitcode 9 $o run window_mean --backend cuda --n 100003 --repeats 1 --warmup 0 --warmup-ms 0 --energy-ms 0
  done
  step $san --tool memcheck --error-exitcode 9 .device/bin/dynsmem run softmax --backend cuda --rows 64 --cols 5000 --repeats 1 --warmup 0 --warmup-ms 0 --energy-ms 0
} 2>&1 | tee "$OUT/own-cli.log" | grep -E "^== |^rc=|verified|ERROR SUMMARY|best:|config:" 
