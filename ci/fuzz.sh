#!/usr/bin/env bash
# Runs every fuzz target of host/fuzz (cargo-fuzz, libFuzzer + AddressSanitizer, overflow
# checks and debug assertions on) for SECONDS seconds each, one after another, and fails
# on the first crash: a panic (a violated property included), an overflow, a sanitizer
# report, an input running past 10 s (a hang) or past 4 GiB. Not part of CI's test
# command: run it by hand or on a schedule.
#
#   bash ci/fuzz.sh [SECONDS] [TARGET...]     SECONDS defaults to 600; TARGETs to all
#
# The corpus grows in host/fuzz/corpus/<target> (ignored by git; seeds for `configs` are
# in host/fuzz/seeds). A crash leaves its input in host/fuzz/artifacts/<target>/; replay
# it with `cd host && cargo fuzz run <target> fuzz/artifacts/<target>/<file>`. Each run's
# log is in host/fuzz/logs/, and the last lines printed are the runs and executions.
#
# Without cargo-fuzz, the `layout` target's properties run on seeded random bytes:
#   cargo run --release --manifest-path host/fuzz/Cargo.toml --example replay [SEED] [INPUTS]
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-600}"
[ $# -gt 0 ] && shift
case "$secs" in ''|*[!0-9]*) echo "usage: bash ci/fuzz.sh [SECONDS] [TARGET...]" >&2; exit 2 ;; esac

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "cargo-fuzz is not installed: cargo install cargo-fuzz" >&2
  exit 2
fi

cd host
if [ $# -gt 0 ]; then targets=("$@"); else mapfile -t targets < <(cargo fuzz list); fi
mkdir -p fuzz/logs
cargo fuzz build

summary=()
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  seeds=()
  [ -d "fuzz/seeds/$t" ] && seeds=("fuzz/seeds/$t")
  log="fuzz/logs/$t-$(date +%Y%m%d-%H%M%S).log"
  echo "== $t: ${secs} s (log: host/$log)"
  set +e
  cargo fuzz run "$t" "fuzz/corpus/$t" "${seeds[@]}" -- \
    -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 >"$log" 2>&1
  status=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
  secs_run=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | tail -1 || true)
  line="$t: exit $status, ${execs:-?} executions (${secs_run:-no summary}), corpus $(ls "fuzz/corpus/$t" | wc -l) inputs"
  summary+=("$line")
  echo "$line"
  if [ "$status" -ne 0 ]; then
    echo "--- $t failed; the end of its log:" >&2
    tail -n 40 "$log" >&2
    printf '%s\n' "${summary[@]}"
    exit 1
  fi
done
echo "== all targets ran ${secs} s without a crash"
printf '%s\n' "${summary[@]}"
