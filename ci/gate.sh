#!/usr/bin/env bash
# GPU: the regression gate (issue 70). Runs the whole bench against the committed baseline of
# this card and fails on a row more than 3% slower (after re-measuring it interleaved), or on
# a row no longer made. Run it before every submission that touches device code or a default.
#   OUT=DIR bash ci/gate.sh [BASELINE]     (default: results/baseline/<card>.jsonl)
# On a staged machine (../shared/device/stage.sh): .device/bin/dynsmem, or $DYNSMEM. Vulkan
# loaders in .gl/ (see ci/gpu.sh) give the WGSL rows too. Writes bench.jsonl, bench.md,
# bench.err (progress, per-case times and the gate's report) under $OUT.
set -uo pipefail
out="${OUT:-/tmp/dynsmem-gate}"; mkdir -p "$out"
bin="${DYNSMEM:-.device/bin/dynsmem}"
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
if [ -d .gl ]; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
[ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print tolower($2)}')
baseline="${1:-results/baseline/$card.jsonl}"
[ -f "$baseline" ] || { echo "ci/gate.sh: no baseline $baseline for this card ($card)" >&2; exit 2; }
start=$(date +%s)
"$bin" bench --markdown --json "$out/bench.jsonl" --against "$baseline" > "$out/bench.md" 2> "$out/bench.err"
rc=$?
echo "bench and gate: $(( $(date +%s) - start )) s, exit $rc" | tee -a "$out/bench.err"
exit $rc
