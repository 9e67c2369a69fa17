#!/usr/bin/env bash
# Plants, one at a time, the kernel bugs that once passed every test (each a patch in
# ci/planted-bugs/), runs the test named for it, and requires that test to FAIL; then
# reverts the patch. A plant the test does not catch fails this script.
#
# Outside CI's 90 minutes (each plant rebuilds the kernel crate and the test): run it
# after changing a kernel or a test that one of the plants covers. The CPU backend runs
# the tests, so no GPU is needed and none of the GPU images is built
# (DYNSMEM_DEVICE_IMAGES=none, in target/cpu-only or $DYNSMEM_PLANT_TARGET_DIR). Writes a
# markdown table to $1 (default: stdout).
#
#   bash ci/planted_bugs.sh results/log/<date>-cpu/planted-bugs.md
#   DYNSMEM_PLANTS="name ..." bash ci/planted_bugs.sh OUT     # only these plants
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-/dev/stdout}"

# patch name -> "test-binary test-name [VAR=value ...]": the test that must catch it, and the
# environment it runs in.
plants=(
  "scan-raking-loop-one-short registry_conformance gpu_shaped_configs_on_the_cpu_backend"
  "scan-look-back-ignores-aggregates suite cpu_backend"
  "conv1d-left-halo-not-written suite cpu_backend"
  # Reads one row past A where a tile runs off the matrix: the results are unchanged (the row
  # only meets C rows that are not stored), so only the CPU backend's bounds check sees it.
  "sgemm-edge-copy-reads-a-row-past-a sgemm cpu_backend"
  # Stream-K's fix-up leaves out the last block's piece of a split tile.
  "sgemm-streamk-fixup-drops-the-last-piece sgemm cpu_backend_tensor_map_kernels"
  # Split-K's sum leaves out the last group of slices (7, 15, 23, ...): the 40-way skinny split
  # of the CPU split-K test has terms there.
  "sgemm-split-sum-leaves-out-the-last-group sgemm cpu_backend_split_k"
  # The row padding writes rows `cols` apart instead of `ld`: the tensor map reads them `ld` apart.
  "sgemm-pack-writes-rows-unpadded sgemm cpu_backend_tensor_map_kernels"
  # Skips a row of the staged reduce's scalar tail: only a staged config with a 16-byte
  # aligned input and items per thread not a multiple of 4 runs it; the random configs of
  # the property test's long run reach it (its CI run draws 3 cases per family).
  # A kernel family described on the contract maps its config's values to the parameters in
  # the wrong order: every run would launch another config than the one recorded.
  "kernel-family-config-in-the-wrong-order kernel_family a_run_command_line_names_the_sizes_and_the_parameters"
  # A family's description names an entry its kernels! table lacks (conv1d's entries are
  # `_r4` / `_r8`): its cases must not vanish from the bench unseen, but fail naming it.
  "conv1d-description-entry-not-in-its-table registry_conformance gpu_shaped_configs_on_the_cpu_backend"
  "reduce-staged-tail-skips-a-row properties random_configs_at_random_problems_on_the_cpu_backend DYNSMEM_PROPERTY_CASES=100"
  # A race: the transpose reads its tile without the barrier after the tile's stores. The stress
  # schedule (OS threads, real barriers) must see it.
  "transpose-reads-the-tile-before-its-barrier suite cpu_backend DYNSMEM_CPU_SCHEDULE=stress"
  # The supervisor of a sweep never starts a second worker: a killed worker's configs are lost.
  "supervisor-never-restarts-a-worker tune a_killed_worker_is_restarted_and_nothing_is_measured_twice"
  # Attention backward's dK/dV kernel leaves out the diagonal pair (query i, key i) under the
  # causal mask: one term of each key's sums, which the per-entry bounds must see.
  "attention-backward-dkdv-skips-the-diagonal attention_backward cpu_backend_simt_entries_at_partial_tiles"
  # The any-radius stencil's rows for radii 3, 7, 11, ... take one of their three last taps.
  "stencil2d-any-radius-drops-two-taps suite cpu_backend"
  # RMSNorm reads its held weights one vector early where the row starts as aligned as them.
  "rmsnorm-held-weights-one-vector-off suite cpu_backend"
  # The row skeleton's fold over a row group narrower than a warp (short rows, several a
  # block) leaves out the group's last thread.
  "rows-group-fold-skips-the-last-slot suite cpu_backend"
  # The WGSL subgroup fold strides over the subgroups' partials by the subgroup's size, not by
  # its live lanes: a block that is not whole subgroups loses partials (lavapipe: 8 lanes).
  "subgroup-fold-strides-by-the-subgroup-size suite wgsl"
  # The WGSL look-back scan adds the totals of the subgroups before its own but one.
  "scan-subgroup-offset-skips-the-subgroup-before suite wgsl"
  # The WGSL look-back leaves out the value of the predecessor whose inclusive prefix ends it.
  "scan-look-back-drops-the-inclusive-tile suite wgsl"
  # The registers form of the WGSL rows does not guard a thread's last unit where the block
  # does not divide the row: it reads (and writes) the next row's first units.
  "rows-registers-last-unit-unguarded registry_conformance edge_cases_on_wgsl"
  # The registers form of softmax's WGSL twin takes a vec4's maximum of its first three lanes.
  "softmax-registers-max-skips-the-last-lane suite wgsl"
  # The registers form of RMSNorm's WGSL twin scales each unit by the next unit's weights.
  "rmsnorm-registers-weights-one-unit-off registry_conformance edge_cases_on_wgsl"
  # A caller's buffer (a torch tensor) one element shorter than the launch reads or writes
  # passes the check: the kernel would run past the caller's memory.
  "caller-buffers-one-element-short-passes caller_buffers the_callers_buffers_are_checked_before_anything_launches"
)

# GPU-only plants, not run by this script (their tests skip without CUDA): build the test
# executable with the patch applied, run it on an H100 and require it to fail.
#   hgemm-streamk-fixup-drops-the-first-piece: tests/hgemm.rs cuda_every_entry_at_awkward_shapes
#     (the tensor-core GEMM's stream-K fix-up leaves out the first cluster's piece of a split tile)
#   hgemm-staged-store-writes-both-rows-to-the-second: tests/hgemm.rs
#     cuda_staged_stores_at_awkward_shapes (the staged store writes both rows of a thread's
#     fragment, `row` and `row + 8`, to the second: each warp's first 8 rows of C are never written)
#   attention-forward-skips-the-rescale-of-o: tests/attention.rs cuda_every_entry_at_odd_sequences
#     (the wgmma forward's pipeline issues `P V` without first rescaling `O` to the new row maxima)
#   attention-backward-wgmma-mask-keeps-keys-past-the-query: tests/attention_backward.rs
#     cuda_wgmma_at_odd_sequences (the wgmma backward's mask drops the causal rule: keys past a
#     query keep their weight in dK, dV and dQ)
# The regression gate's plant (a slowdown, not a wrong result): build the bench with it applied
# and run it against the card's baseline; the gate must fail (ci/gate.sh, docs/backends.md).
#   rows-load-waits-for-the-first-vector: `dynsmem bench --family softmax --against
#     results/baseline/h200.jsonl` (each thread of the row skeleton waits for its first vector's
#     copy before starting the others: softmax 65536 x 4096 ran 0.925x the baseline, re-measured
#     0.926x, on the H200; results/log/2026-11-28-h200-launch-vs-static/)

if ! git diff --quiet -- device-kernels; then
  echo "device-kernels/ has uncommitted changes: commit or stash them first" >&2
  exit 2
fi
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
export DYNSMEM_DEVICE_IMAGES=none
target_dir="${DYNSMEM_PLANT_TARGET_DIR:-target/cpu-only}"

rows=()
status=0
for p in "${plants[@]}"; do
  read -r name bin test envs <<<"$p"
  if [ -n "${DYNSMEM_PLANTS:-}" ] && [[ " $DYNSMEM_PLANTS " != *" $name "* ]]; then
    continue
  fi
  patch="ci/planted-bugs/$name.patch"
  git apply "$patch"
  # Reverted however this loop ends.
  trap 'git apply -R "$patch" 2>/dev/null || true' EXIT
  log=$(mktemp)
  start=$(date +%s)
  # A plant that does not build is not caught: build first, then run.
  if ! cargo test --release --target-dir "$target_dir" --test "$bin" --no-run >"$log" 2>&1; then
    verdict="BUILD FAILED"
    status=1
  # shellcheck disable=SC2086 # envs: zero or more VAR=value words
  elif env ${envs:-} cargo test --release --target-dir "$target_dir" --test "$bin" -- --exact "$test" >>"$log" 2>&1; then
    verdict="NOT CAUGHT"
    status=1
  else
    verdict="caught"
  fi
  secs=$(( $(date +%s) - start ))
  # The panic's message: the line after "panicked at".
  first=$(grep -m1 -A1 "panicked at" "$log" | tail -n1 | cut -c1-300 | tr '|' '/' || true)
  rows+=("| \`$name\` | \`tests/$bin.rs\` \`$test\`${envs:+ (\`$envs\`)} | $verdict | ${secs} s | $first |")
  git apply -R "$patch"
  trap - EXIT
  rm -f "$log"
done

{
  echo "| planted bug | test | result | build + test | the failing test's message |"
  echo "| --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
} >"$out"
exit $status
