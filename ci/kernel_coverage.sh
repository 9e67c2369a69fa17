#!/usr/bin/env bash
# Branch and line coverage of the kernel files (device-kernels/src) under the kernel tests
# (host/kernel-tests on the CPU executor): rustc's instrumentation with branch coverage
# (nightly: -Zcoverage-options=branch), merged and exported with the toolchain's own
# llvm-profdata and llvm-cov (the llvm-tools component). Writes OUT/kernels.lcov and
# OUT/coverage.md: reached / total branches and lines per kernel file, then every branch not
# reached, each either named in host/kernel-tests/unreachable.txt with why the CPU cannot take
# it, or a gap a test must close. Exits 1 when a branch is neither reached nor named there.
#
#   bash ci/kernel_coverage.sh OUT                 # every kernel test
#   bash ci/kernel_coverage.sh OUT --test scan     # one test file of host/kernel-tests
#
# No GPU and no GPU image. The instrumented build has a target directory of its own
# (target/kernel-coverage): minutes the first time, incremental (seconds) after.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bash ci/kernel_coverage.sh OUT [cargo test target options]}
shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
start=$(date +%s)
bin="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
export CARGO_TARGET_DIR=target/kernel-coverage
export RUSTFLAGS="-Cinstrument-coverage -Zcoverage-options=branch"
profiles="$CARGO_TARGET_DIR/profraw"
rm -rf "$profiles"
mkdir -p "$profiles"
# Every instrumented process (build scripts and doctests among them) writes here, not into
# the tree.
export LLVM_PROFILE_FILE="$PWD/$profiles/%p-%m.profraw"
cargo test --profile kernel-tests -p dynsmem-kernel-tests "$@"
mapfile -t objects < <(cargo test --profile kernel-tests -p dynsmem-kernel-tests "$@" --no-run --message-format=json |
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable"): print(m["executable"])')
"$bin/llvm-profdata" merge -sparse "$profiles"/*.profraw -o "$out/kernels.profdata"
"$bin/llvm-cov" export -format=lcov -instr-profile="$out/kernels.profdata" \
  "${objects[@]/#/--object=}" --ignore-filename-regex='/(rustc|\.cargo|host)/' >"$out/kernels.lcov"
status=0
python3 ci/kernel_coverage.py "$out/kernels.lcov" host/kernel-tests/unreachable.txt >"$out/coverage.md" || status=$?
echo "kernel coverage: $out/coverage.md ($(( $(date +%s) - start )) s)" >&2
exit $status
