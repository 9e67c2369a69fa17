#!/usr/bin/env bash
# Line coverage of the kernel files (device-kernels/src) on the CPU backend, which runs the same
# kernel source as the GPU images: cargo-llvm-cov over the CPU-backend suites, reported once
# without and once with the property test (tests/properties.rs at DYNSMEM_PROPERTY_CASES, default
# 3, as in CI), so the table shows what the random configs add. Lines compiled only for a GPU
# (`#[cfg(gpu)]`, the inline PTX paths) are not in it: the host build has no such lines.
#
#   bash ci/coverage.sh OUT    writes OUT/{without,with}-properties.lcov and OUT/coverage.md
#
# No GPU is needed and none of the GPU images is built (DYNSMEM_DEVICE_IMAGES=none).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bash ci/coverage.sh OUT}
mkdir -p "$out"
command -v cargo-llvm-cov >/dev/null || cargo install --locked cargo-llvm-cov
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
export DYNSMEM_DEVICE_IMAGES=none
# Every suite that launches the Rust kernels on the CPU backend.
tests=(--test suite --test registry_conformance --test registry --test registry_points --test sgemm --test cpu_reduce
  --test histogram --test nonfinite --test cpu_faults --test memprobe --test shapes --test contract --test hgemm)
start=$(date +%s)
cargo llvm-cov clean --workspace --profraw-only
cargo llvm-cov --no-report --release -p dynsmem "${tests[@]}"
cargo llvm-cov report --release --workspace --lcov --output-path "$out/without-properties.lcov"
cargo llvm-cov --no-report --release -p dynsmem --test properties
cargo llvm-cov report --release --workspace --lcov --output-path "$out/with-properties.lcov"
python3 ci/coverage_table.py "$out/without-properties.lcov" "$out/with-properties.lcov" >"$out/coverage.md"
echo "coverage: $out/coverage.md ($(( $(date +%s) - start )) s)" >&2
