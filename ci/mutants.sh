#!/usr/bin/env bash
# Mutation testing of the kernels (device-kernels/src) against the kernel tests
# (host/kernel-tests, on the CPU executor), with cargo-mutants: every mutant (an operator
# flipped, a body replaced, a comparison inverted) is built in the kernel-tests profile
# (incremental: seconds) and the kernel file's own test files run against it. A mutant
# they let pass is a bug the tests would miss: kill it with a test, or argue it equivalent
# in host/kernel-tests/MUTANTS.md.
#
#   bash ci/mutants.sh OUT                              # every kernel file
#   bash ci/mutants.sh OUT device-kernels/src/scan.rs   # some files
#   MUTANTS_ARGS="--in-diff change.diff" bash ci/mutants.sh OUT   # only a change's mutants
#   MUTANTS_ARGS="--shard 1/4" bash ci/mutants.sh OUT   # a quarter of each file's mutants
#
# Only mutants on lines the host build compiles are run: a mutant inside `#[cfg(gpu)]` code
# (or a generic no test instantiates) builds unchanged on the host, so no CPU test can see
# it. Those lines are read off a coverage run of the same tests (ci/kernel_coverage.sh), and
# the report counts the mutants left out that way per file. OUT/report.md is the summary
# (ci/mutants_report.py); OUT/<file>/mutants.out the raw outcomes.
#
# Mutates the tree in place (cargo-mutants restores each file, also when interrupted, and
# the incremental build is what makes a mutant cost seconds), so the tree must be clean.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bash ci/mutants.sh OUT [KERNEL FILE...]}
shift
if ! git diff --quiet -- device-kernels; then
  echo "device-kernels has uncommitted changes: commit or stash them first (mutants are applied in place)" >&2
  exit 2
fi
command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants
mkdir -p "$out"
out=$(cd "$out" && pwd)
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  # memprobe.rs: the probe's microbenchmarks, whose results are timings (tests/memprobe.rs in
  # the root package checks what they compute); gpu/: the primitives, GPU-only or the host's
  # stand-ins for them, tested by the executor's own tests.
  mapfile -t files < <(find device-kernels/src -name '*.rs' ! -name memprobe.rs ! -path '*/gpu/*' ! -name lib.rs | sort)
fi

# The test files of host/kernel-tests that run each kernel file's code; all of them for the
# files every family uses.
tests_of() {
  case "$1" in
    */rows.rs | */softmax.rs | */rmsnorm.rs) echo rows ;;
    */sgemm/* ) echo sgemm ;;
    */streamk.rs) echo sgemm hgemm ;;
    */attention.rs | */attention_backward.rs) echo attention ;;
    */layout.rs | */entry.rs | */stage.rs | */vector.rs) echo "" ;;
    *) basename "$1" .rs ;;
  esac
}

# Which lines the host build compiles: the coverage run's line records.
start=$(date +%s)
bash ci/kernel_coverage.sh "$out/coverage" >/dev/null 2>&1 || true
[ -s "$out/coverage/kernels.lcov" ] || { echo "the coverage run made no lcov: run ci/kernel_coverage.sh to see why" >&2; exit 1; }

for f in "${files[@]}"; do
  slug=${f#device-kernels/src/}
  slug=${slug//\//-}
  slug=${slug%.rs}
  re=$(python3 ci/mutants_report.py --lines "$out/coverage/kernels.lcov" "$f")
  if [ -z "$re" ]; then
    echo "== $f: no line compiled on the host by any test"
    continue
  fi
  targets=()
  for t in $(tests_of "$f"); do targets+=(-C "--test=$t"); done
  echo "== $f (tests: $(tests_of "$f" | sed 's/^$/all/'))"
  # Exit codes 2 (mutants missed) and 3 (timeouts) are results, not failures of the run.
  cargo mutants --in-place -p dynsmem-kernels --test-package dynsmem-kernel-tests --profile kernel-tests \
    --baseline skip --timeout 20 --build-timeout 600 -f "$f" --re "$re" "${targets[@]}" \
    --output "$out/$slug" ${MUTANTS_ARGS:-} || [ $? -eq 2 ] || [ $? -eq 3 ] || true
done
python3 ci/mutants_report.py "$out" "$out/coverage/kernels.lcov" >"$out/report.md"
echo "mutants: $out/report.md ($(( $(date +%s) - start )) s)" >&2
