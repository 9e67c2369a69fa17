#!/usr/bin/env bash
# Mutation testing with cargo-mutants over the kernels (device-kernels/src) and the host's
# references and checks (host/src/verify.rs, each family's mod.rs): every mutant (an operator
# flipped, a body replaced, a comparison inverted) is built and the CPU-backend suites run
# against it. A mutant they let pass is a bug the tests would miss: kill it with a test, or
# list it as equivalent with the reason in the committed report.
#
# Outside CI's 90 minutes: each mutant costs an incremental release build and the suites
# (minutes on 2 cores), and the kernel files alone hold several hundred. A mutant that makes
# a loop endless runs into the 300 s test timeout. Shard the run over
# machines with `--shard k/n` and commit the `mutants.out/outcomes.json` of each shard.
#
#   bash ci/mutants.sh OUT                                  # every file above
#   bash ci/mutants.sh OUT --shard 1/8                      # one shard of them
#   bash ci/mutants.sh OUT -f device-kernels/src/scan.rs    # one file (replaces the list)
#
# Mutates the tree in place (cargo-mutants restores each file, also when interrupted), so the
# tree must be clean. No GPU is needed, and none of the GPU images is built
# (DYNSMEM_DEVICE_IMAGES=none): the CPU backend runs the kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bash ci/mutants.sh OUT [cargo-mutants options]}
shift
if ! git diff --quiet; then
  echo "the tree has uncommitted changes: commit or stash them first (mutants are applied in place)" >&2
  exit 2
fi
command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
export DYNSMEM_DEVICE_IMAGES=none

files=()
if [[ " $* " != *" -f "* && " $* " != *" --file "* ]]; then
  files=(-f 'device-kernels/src/*.rs' -f 'device-kernels/src/gpu/host.rs' -f host/src/verify.rs
    -f 'host/src/families/*/mod.rs' -f 'host/src/families/*/check.rs' -f 'host/src/families/*/workload.rs'
    -f host/src/backend/cpu/mod.rs -f host/src/backend/cpu/execute.rs)
fi

# The suites that run the Rust kernels on the CPU backend, and the checks' own tests
# (test names containing "cpu", and the dropped-term test), all in the root package.
tests=(--test suite --test registry_conformance --test sgemm --test cpu_reduce --test histogram --test nonfinite
  -- cpu one_k_term)
# The baseline, here: cargo-mutants (27.1) runs its own baseline on the mutated packages'
# tests, not on --test-package's, so it is skipped there.
cargo test --profile release --package dynsmem "${tests[@]}"
cargo mutants --in-place --workspace --test-package dynsmem --profile release --baseline skip \
  --timeout 300 --build-timeout 1800 --output "$out" "${files[@]}" "$@" -- "${tests[@]}"
