#!/usr/bin/env bash
# Runs on the GPU machine, from the project root, after `../shared/device/stage.sh` staged
# .device/ here: the steps named on the command line, outputs under $OUT.
#   tests       every test executable (.device/run.sh), logs packed into test-logs.tgz
#   devices     nvidia-smi + `dynsmem devices`
#   gate        the regression gate (ci/gate.sh): the bench against results/baseline/<card>.jsonl,
#               failing on a row over 3% slower after re-measuring it -> gate/bench.{md,err,jsonl}
#   bench       `dynsmem bench --markdown --json --plots` -> bench.md (the comparison table; `dynsmem bench
#               --wide` or bench.jsonl for every record), bench.jsonl, plots/*.svg (decomposition.svg too)
#   rmsnorm     RMSNorm at 8192 x 8192 and rows past 48 KB (32768 and 50000 floats), every
#               variant, beside the same-run copy -> rmsnorm.jsonl, rmsnorm.txt
#   sweep       reduce configs at 2^28 on CUDA -> sweep.jsonl
#   wgsl-sweep  reduce configs at 2^28 on WGSL, runtime checks on and off -> wgsl-sweep.jsonl
#   limits      200 KB of launch-sized memory runs; 232452 B is refused before launch -> limits.txt
#   suite-sweep configs of scan, conv1d, stencil2d, transpose at GPU sizes on CUDA -> suite-sweep.jsonl
#   crosscheck  PyTorch's sum and copy on the same GPU -> crosscheck.txt
#   sanitize    compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on every family
#               (ci/sanitize.sh) -> sanitize-*.log, sanitize-summary.txt
#   gemm        SGEMM configs at 1024^3, 4096^3 and 8192^3 beside cuBLAS (same inputs, same
#               process), the compiled-in tile against the same tile at launch, f16 inputs -> gemm.jsonl
#   hgemm       tensor-core GEMM beside cuBLAS (same inputs, same process) at 2048, 4096 and 8192
#               cubed, f16 and bf16: the default, HGEMM_CONFIGS (kind:bm x bn x stages x cluster), the
#               compiled-in tile against the same tile at launch, the mma.sync kernel; each
#               case HGEMM_PASSES (3) times in fresh processes -> hgemm.jsonl, hgemm.txt
#   profile     Nsight Compute on one launch each of scan, conv1d K=33, stencil2d -> profile.txt
#   profile-gemm Nsight Compute on the SGEMM at 4096^3 (and 1024^3): stall reasons per issued
#               instruction, instruction mix, and cuBLAS's own kernels (name, block, registers,
#               shared memory) from the same process -> profile-gemm.txt
#   shards      the exhaustive SGEMM sweep (1024^3, then 4096^3) in one process, then as two
#               shards in two concurrent workers on the one GPU (`--devices 0,0`), merged; the
#               two caches compared (ci/compare_caches.py) -> shards.txt, shards.tgz (caches, logs)
#   tunedb      tuner sweeps with the NVML observer (clocks, power, temperature, energy): SGEMM
#               4096^3 by time then by energy (same measurements), SGEMM 2048^3, reduce at 2^28,
#               softmax; each with its Kernel Tuner files and top-3 re-measurement -> tunedb/
#               (packed: tunedb.tgz); `dynsmem db build` turns its caches into host/data/tuning-db.jsonl
#   shapes      `dynsmem shapes` on CUDA launch-sized (SHAPES_FAMILIES, SHAPES_ARGS) -> shapes.md,
#               shapes.jsonl, shapes.err, shape-plots.tgz
#   twins       the shape suites of the families with WGSL twins, every variant (TWINS_FAMILIES,
#               TWINS_VARIANTS, TWINS_ARGS; DYNSMEM_WGSL_RUNTIME_CHECKS passes through) ->
#               twins${TWINS_TAG}.md, twins${TWINS_TAG}.jsonl
#   sgemm-twins the WGSL SGEMM's best tile at 4096^3 (a random sweep of SGEMM_TWIN_SECONDS),
#               then that tile on WGSL, cuda-static and launch-sized CUDA beside cuBLAS ->
#               sgemm-twins.tgz (sweep cache, table), sgemm-twins.jsonl
#   variance    the between-process experiment (ci/variance.sh): fresh processes of WGSL and
#               CUDA reduce under conditions that separate clocks, placement and compilation
#               -> variance.jsonl, variance.txt
#   tune-shapes random SGEMM sweeps at shapes standing for the shape suite's classes
#               (TUNE_SECONDS each) -> tune-shapes.tgz (caches for `dynsmem db build`)
#   db-runs     `run` at tuned and untuned shapes, defaults from the built-in tuning database
#               beside the heuristic's -> db-runs.jsonl, db-runs.txt
set -uo pipefail
OUT=${OUT:-/tmp/dynsmem-out}
mkdir -p "$OUT"
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
B=.device/bin/dynsmem
# The NVIDIA Vulkan ICD needs the glvnd libraries and the Vulkan loader: bring them when the
# image lacks them (carried as .debs in .gl/, see the device tool's README).
if [ -d .gl ]; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
[ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e /usr/share/glvnd/egl_vendor.d/10_nvidia.json ] || export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
status=0
for step in "$@"; do
  echo "=== $step"
  case $step in
    tests)
      logs=$(mktemp -d)
      OUT=$logs bash .device/run.sh > "$logs/tests.txt" 2>&1 || status=1
      tar czf "$OUT/test-logs.tgz" -C "$logs" .
      grep -hE "^test result|FAILED|panicked|SKIPPED" "$logs"/*.log | sort | uniq -c | head -40
      ;;
    tunedb)
      d="$OUT/tunedb"; mkdir -p "$d"
      sweep() {  # NAME, then the tune arguments
        local name=$1; shift
        local start; start=$(date +%s)
        $B tune "$@" --quiet --cache "$d/$name.jsonl" --kt "$d/$name" > "$d/$name.txt" 2>&1 || status=1
        echo "wall time: $(( $(date +%s) - start )) s" >> "$d/$name.txt"
        grep -E "^(space|exhaustive|best|confirmed|wall)" "$d/$name.txt"
      }
      sweep sgemm-4096 sgemm --m 4096 --n 4096 --k 4096 --energy-ms 100
      # The same space and measurements ranked by energy (answered from the cache), and its
      # top 3 re-measured for energy.
      cp "$d/sgemm-4096.jsonl" "$d/sgemm-4096-energy.jsonl"
      sweep sgemm-4096-energy sgemm --m 4096 --n 4096 --k 4096 --energy-ms 100 --objective energy
      sweep sgemm-2048 sgemm --m 2048 --n 2048 --k 2048
      sweep reduce-2p28 reduce --n 268435456 --energy-ms 200
      sweep softmax softmax
      tar czf "$OUT/tunedb.tgz" -C "$OUT" tunedb
      ;;
    db-runs)
      for args in "sgemm --m 4096 --n 4096 --k 4096" "sgemm --m 3000 --n 3000 --k 3000" \
                  "sgemm --m 2500 --n 1800 --k 2222" "reduce --n 100000000" "reduce --n 268435456" "softmax"; do
        for db in "" "--no-tuning-db"; do
          # shellcheck disable=SC2086
          $B run $args $db --json "$OUT/db-runs.jsonl" 2>&1 \
            | grep -E "^(config|kernel|time|observed|anchor|verified)" | tee -a "$OUT/db-runs.txt" || status=1
        done
      done
      ;;
    shapes)
      # The shape suites on CUDA (launch-sized), each shape beside its same-run anchor;
      # SHAPES_FAMILIES narrows the families (default: all), SHAPES_ARGS adds options.
      start=$(date +%s)
      # shellcheck disable=SC2086
      $B shapes ${SHAPES_FAMILIES:-} --backend cuda --variant launch-sized --energy-ms 0 ${SHAPES_ARGS:-} \
        --markdown --json "$OUT/shapes.jsonl" --plots "$OUT/shape-plots" > "$OUT/shapes.md" 2> "$OUT/shapes.err" || status=1
      echo "wall time of the shape suites: $(( $(date +%s) - start )) s" | tee -a "$OUT/shapes.err"
      tar czf "$OUT/shape-plots.tgz" -C "$OUT" shape-plots && rm -rf "$OUT/shape-plots"
      sed -n '/^| family *| backend *| variant *| shapes/,$p' "$OUT/shapes.md"
      ;;
    twins)
      start=$(date +%s)
      variants=""
      for v in ${TWINS_VARIANTS:-launch-sized cuda-static wgsl-literal wgsl-override}; do variants="$variants --variant $v"; done
      tag=${TWINS_TAG:-}
      # shellcheck disable=SC2086
      # Default: every registry family with a WGSL twin but SGEMM (its own step, sgemm-twins).
      $B shapes ${TWINS_FAMILIES:-$($B families --wgsl | grep -vx sgemm)} --backend cuda --backend wgsl \
        $variants --energy-ms 0 ${TWINS_ARGS:-} --markdown --json "$OUT/twins$tag.jsonl" \
        > "$OUT/twins$tag.md" 2> "$OUT/twins$tag.err" || status=1
      echo "wall time of the twin suites: $(( $(date +%s) - start )) s" | tee -a "$OUT/twins$tag.err"
      sed -n '/^| family *| backend *| variant *| shapes/,$p' "$OUT/twins$tag.md"
      ;;
    variance)
      bash ci/variance.sh "$B" "$OUT" || status=1
      ;;
    sgemm-twins)
      d="$OUT/sgemm-twins"; mkdir -p "$d"
      P="--m 4096 --n 4096 --k 4096"
      # shellcheck disable=SC2086
      $B tune sgemm $P --backend wgsl --variant wgsl-literal --strategy random \
        --budget-seconds "${SGEMM_TWIN_SECONDS:-90}" --energy-ms 0 --quiet --cache "$d/wgsl-sweep.jsonl" > "$d/wgsl-sweep.txt" 2>&1 || status=1
      grep -E "^(space|random|best|confirmed)" "$d/wgsl-sweep.txt"
      # The fastest verified config of the sweep, as `run` options.
      best=$(python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if r.get("verified") and r.get("median_ms")]
c = min(rows, key=lambda r: r["median_ms"])["config"]
print(" ".join(f"--{k} {v}" for k, v in sorted(c.items())))' "$d/wgsl-sweep.jsonl")
      echo "WGSL best: $best"
      for bv in "wgsl wgsl-literal" "cuda cuda-static" "cuda launch-sized"; do
        read -r backend variant <<< "$bv"
        # shellcheck disable=SC2086
        $B run sgemm $P $best --backend "$backend" --variant "$variant" --energy-ms 0 --json "$OUT/sgemm-twins.jsonl" 2>&1 \
          | grep -E "^(config|kernel|time|anchor|verified|note)" | tee -a "$d/runs.txt" || status=1
      done
      tar czf "$OUT/sgemm-twins.tgz" -C "$OUT" sgemm-twins && rm -rf "$d"
      ;;
    tune-shapes)
      # Random-order SGEMM sweeps of TUNE_SECONDS (default 35) each at shapes that stand for
      # the suite's classes without being its shapes (the database answers within 1.5x on
      # every side): small cubes, mid cubes, rectangles, tall and wide, deep, shallow.
      d="$OUT/tune-shapes"; mkdir -p "$d"
      for shape in "384 384 384" "1536 1536 1536" "2560 1536 2048" "768 6144 3072" "6144 768 3072" \
                   "6144 1280 6144" "6144 320 1280" "320 6144 1280" "384 384 6144" "768 768 6144" "6144 6144 320"; do
        read -r m n k <<< "$shape"
        name="sgemm-${m}x${n}x${k}"
        $B tune sgemm --m "$m" --n "$n" --k "$k" --strategy random --budget-seconds "${TUNE_SECONDS:-35}" \
          --repeats 10 --energy-ms 0 --quiet --cache "$d/$name.jsonl" > "$d/$name.txt" 2>&1 || status=1
        grep -E "^(space|random|best)" "$d/$name.txt" | head -3
      done
      tar czf "$OUT/tune-shapes.tgz" -C "$OUT" tune-shapes && rm -rf "$d"
      ;;
    devices)
      { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv; $B devices; } 2>&1 | tee "$OUT/devices.txt"
      ;;
    gate)
      # The regression gate (ci/gate.sh): the bench against results/baseline/<card>.jsonl.
      OUT="$OUT/gate" DYNSMEM="$B" bash ci/gate.sh || status=1
      tail -20 "$OUT/gate/bench.md"
      ;;
    bench)
      start=$(date +%s)
      $B bench --markdown --json "$OUT/bench.jsonl" --plots "$OUT/plots" > "$OUT/bench.md" 2> "$OUT/bench.err" || status=1
      echo "wall time of the bench: $(( $(date +%s) - start )) s" | tee -a "$OUT/bench.err"
      cat "$OUT/bench.md"
      ;;
    rmsnorm)
      for shape in "8192 8192" "65536 4096" "8192 32768" "4096 50000" "777 12345"; do
        read -r rows cols <<< "$shape"
        for bv in "cuda launch-sized" "cuda cuda-static" "wgsl wgsl-literal" "wgsl wgsl-override"; do
          read -r backend variant <<< "$bv"
          echo "### dynsmem run rmsnorm --rows $rows --cols $cols --backend $backend --variant $variant"
          $B run rmsnorm --rows "$rows" --cols "$cols" --backend "$backend" --variant "$variant" \
            --json "$OUT/rmsnorm.jsonl" 2>&1 | grep -E "^(kernel|time|anchor|note|verified|error)|refused"
        done
      done 2>&1 | tee "$OUT/rmsnorm.txt"
      ;;
    sweep)
      for block in 256 512 1024; do
        for ipt in 8 16 32 64; do
          $B run reduce --backend cuda --n 268435456 --block $block --ipt $ipt --repeats 10 \
            --json "$OUT/sweep.jsonl" 2>&1 | grep -E "^(kernel|time|anchor|verified)" | tr '\n' ' '; echo
        done
      done
      ;;
    wgsl-sweep)
      for checks in on off; do
        for cfg in "128 16" "256 16" "256 32" "512 16" "512 32" "1024 8" "1024 16"; do
          read -r block ipt <<< "$cfg"
          for variant in wgsl-literal wgsl-override; do
            echo -n "checks=$checks block=$block ipt=$ipt $variant: "
            DYNSMEM_WGSL_RUNTIME_CHECKS=$checks $B run reduce --backend wgsl --variant $variant --n 268435456 \
              --block "$block" --ipt "$ipt" --repeats 10 --json "$OUT/wgsl-sweep.jsonl" 2>&1 | grep -E "^time" ; echo
          done
        done
      done
      ;;
    limits)
      {
        echo "\$ dynsmem run reduce --backend cuda --staged --block 256 --ipt 200 --n 268435456"
        $B run reduce --backend cuda --staged --block 256 --ipt 200 --n 268435456 --json "$OUT/limits.jsonl"; echo "exit code $?"
        echo "\$ dynsmem run reduce --backend cuda --staged --block 256 --ipt 226 --n 268435456"
        $B run reduce --backend cuda --staged --block 256 --ipt 226 --n 268435456 --json "$OUT/limits.jsonl"; echo "exit code $?"
        echo "\$ dynsmem run reduce --backend cuda --staged --block 9 --ipt 6456 --n 268435456"
        RUST_BACKTRACE=0 $B run reduce --backend cuda --staged --block 9 --ipt 6456 --n 268435456; echo "exit code $?"
      } 2>&1 | tee "$OUT/limits.txt"
      ;;
    suite-sweep)
      r() { $B run "$@" --backend cuda --repeats 10 --json "$OUT/suite-sweep.jsonl" 2>&1 | grep -E "^(time|error)" | sed "s|^|$* : |"; }
      for c in "512 16" "256 32" "512 32" "384 32" "256 64" "1024 16" "512 48" "1024 32"; do read -r b i <<< "$c"; r scan --block "$b" --ipt "$i"; done
      for c in "64 8" "128 8" "256 8" "64 4" "128 4"; do read -r b o <<< "$c"; r conv1d --taps 33 --block "$b" --outputs-per-thread "$o"; done
      r conv1d --taps 3 --block 128 --outputs-per-thread 4; r conv1d --taps 3 --block 64 --outputs-per-thread 8
      for c in "256 128 64" "128 64 64" "128 128 64" "128 128 32" "64 64 64"; do
        read -r b w h <<< "$c"
        for rad in 1 2; do r stencil2d --radius $rad --block "$b" --tile-w "$w" --tile-h "$h"; done
      done
      [ -n "${TRANSPOSE_SWEEP:-}" ] && for c in "256 32" "512 32" "256 64" "512 64"; do read -r b t <<< "$c"; r transpose --block "$b" --tile "$t" --pad 1; done
      ;;
    crosscheck)
      python3 ci/gpu_crosscheck.py 2>&1 | tee "$OUT/crosscheck.txt"
      ;;
    hgemm)
      h() {
        $B run hgemm "$@" --backend cuda --repeats 20 --json "$OUT/hgemm.jsonl" 2>&1 |
          grep -E "^(time|error|anchor|Error|registers|kernel|throughput)" | tr '\n' ' ' | sed "s|^|$* : |"; echo
      }
      {
        for pass in $(seq "${HGEMM_PASSES:-3}"); do
          for s in ${HGEMM_SIZES:-2048 4096 8192}; do
            for t in f16 bf16; do
              h --m $s --dtype $t
              for c in ${HGEMM_CONFIGS:-wgmma:128x256x4x1 wgmma:128x256x3x2 wgmma:128x128x6x1 mma:128x128x4x1}; do
                IFS=x read -r bm bn st cl <<< "${c#*:}"
                h --m $s --dtype $t $([ "${c%%:*}" = mma ] && echo --mma) --bm $bm --bn $bn --stages $st --cluster $cl
              done
            done
            # The compiled-in tiles against the same tiles at launch.
            h --m $s --fixed
            h --m $s --bm 128 --bn 256 --stages 4 --cluster 2
            h --m $s --fixed --cluster 1
            h --m $s --bm 128 --bn 256 --stages 4 --cluster 1
            h --m $s --out input
          done
        done
      } | tee "$OUT/hgemm.txt"
      ;;
    gemm)
      # GEMM_SIZES / GEMM_CONFIGS narrow it (e.g. GEMM_SIZES=4096 for a quick look); a
      # config is bm x bn x bk x stages, with an optional x tm (rows per thread).
      g() { $B run sgemm "$@" --backend cuda --repeats 10 --json "$OUT/gemm.jsonl" 2>&1 | grep -E "^(time|error|cuBLAS|Error|registers)" | tr '\n' ' ' | sed "s|^|$* : |"; echo; }
      for s in ${GEMM_SIZES:-1024 4096 8192}; do
        # The default, then the tensor-map kernel's tiles (bm x bk x stages; bn is 128).
        g --m $s
        for c in ${GEMM_TMA_CONFIGS:-256x32x3 256x32x2 256x32x4 256x64x2 128x32x2}; do
          IFS=x read -r bm bk st <<< "$c"; g --m $s --tma --bm $bm --bk $bk --stages $st
        done
        for c in ${GEMM_CONFIGS:-256x128x32x3x16 256x128x32x2x16 256x128x16x3x16 128x256x32x3x16 256x128x32x3 128x128x32x2 128x128x32x3 128x128x16x3 128x64x32x3 64x128x32x3 64x64x32x3}; do
          IFS=x read -r bm bn bk st tm <<< "$c"; g --m $s --bm $bm --bn $bn --bk $bk --stages $st ${tm:+--tm $tm}
        done
      done
      if [ -z "${GEMM_SIZES:-}" ]; then
      # The unroll ablations (16 rows: the whole k-tile against 8 and 16 k; 8 rows: 8 k
      # against 4), bk at launch, the compiled-in tile against the same tile at launch,
      # and f16 inputs.
      for s in 1024 4096; do
        DYNSMEM_SGEMM_ENTRY=sgemm_f32_tm16_bk32_u8 g --m $s --bm 256 --bn 128 --bk 32 --stages 3 --tm 16
        DYNSMEM_SGEMM_ENTRY=sgemm_f32_tm16_bk32_u16 g --m $s --bm 256 --bn 128 --bk 32 --stages 3 --tm 16
        DYNSMEM_SGEMM_ENTRY=sgemm_f32_tm16 g --m $s --bm 256 --bn 128 --bk 32 --stages 3 --tm 16
        DYNSMEM_SGEMM_ENTRY=sgemm_f32 g --m $s --bm 128 --bn 128 --bk 32 --stages 2
        DYNSMEM_SGEMM_ENTRY=sgemm_f32_unroll4 g --m $s --bm 128 --bn 128 --bk 32 --stages 2
        g --m $s --fixed --bm 128 --bn 128 --bk 16 --stages 2
        g --m $s --bm 128 --bn 128 --bk 16 --stages 2
        DYNSMEM_SGEMM_ENTRY=sgemm_f32 g --m $s --bm 128 --bn 128 --bk 16 --stages 2
        g --m $s --variant cuda-static --bm 128 --bn 128 --bk 16 --stages 2
      done
      g --m 4096 --f16 --bm 128 --bn 128 --bk 16 --stages 3
      g --m 8192 --f16 --bm 128 --bn 128 --bk 16 --stages 3
      fi
      ;;
    tune-sgemm)
      # Exhaustive SGEMM sweeps at 4096^3 and 1024^3: every config verified, then timed;
      # wall time. Everything packed into tune-sgemm.tgz (the device tool returns few files).
      d=$(mktemp -d)
      for s in ${TUNE_SIZES:-4096 1024}; do
        start=$(date +%s.%N)
        $B tune sgemm --m $s --backend cuda --strategy exhaustive --repeats 5 --warmup 2 --warmup-ms 20 --quiet \
          --cache "$d/tune-sgemm-$s.jsonl" --t4 "$d/tune-sgemm-$s.t4.json" --plot "$d/tune-sgemm-$s.svg" \
          --top 20 > "$d/tune-sgemm-$s.txt" 2>&1 || status=1
        end=$(date +%s.%N)
        echo "wall time of the sweep: $(python3 -c "print(round($end - $start, 1))") s" >> "$d/tune-sgemm-$s.txt"
        grep -E "^(best|space)|^[0-9]+ " "$d/tune-sgemm-$s.txt" | head -12; tail -1 "$d/tune-sgemm-$s.txt"
      done
      tar czf "$OUT/tune-sgemm.tgz" -C "$d" .
      ;;
    kernel-limit)
      # 256 x 256 tiles: 1024 threads, over what the kernel's registers allow: refused before launch.
      RUST_BACKTRACE=0 $B run sgemm --m 1024 --bm 256 --bn 256 --backend cuda > "$OUT/kernel-limit.txt" 2>&1
      echo "exit code $?" >> "$OUT/kernel-limit.txt"; cat "$OUT/kernel-limit.txt"
      ;;
    sanitize)
      mkdir -p "$OUT/sanitize"
      OUT="$OUT/sanitize" bash ci/sanitize.sh "$B" || status=1
      for f in "$OUT"/sanitize/*; do mv "$f" "$OUT/sanitize-$(basename "$f")"; done
      rmdir "$OUT/sanitize"
      ;;
    profile-gemm)
      NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
      if [ -z "$NCU" ]; then echo "no ncu"; status=1; continue; fi
      {
        # PROFILE_GEMM: "size:bm x bn x bk x stages[x tm]" items (default: 4096^3 and 1024^3
        # at 128 x 128 x 32, two stages).
        for item in ${PROFILE_GEMM:-4096:128x128x32x2 1024:128x128x32x2}; do
          s=${item%%:*}; IFS=x read -r bm bn bk st tm <<< "${item#*:}"
          echo "### dynsmem run sgemm --m $s --bm $bm --bn $bn --bk $bk --stages $st ${tm:+--tm $tm}: ours, then cuBLAS's kernels"
          # Launch 0 is ours; cuBLAS's follow (the anchor runs after our timed launches).
          "$NCU" --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
            --section SchedulerStats --section InstructionStats \
            --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed_op_.*\.sum,sm__sass_thread_inst_executed_op_ffma_pred_on.sum" \
            --launch-count "${PROFILE_LAUNCHES:-2}" $B run sgemm --m $s --bm $bm --bn $bn --bk $bk --stages $st ${tm:+--tm $tm} \
            --backend cuda --warmup 0 --warmup-ms 0 --repeats 1 2>&1 | grep -vE "^==PROF==|^$"
        done
      } > "$OUT/profile-gemm.txt" 2>&1
      grep -E "^###|^  [a-zA-Z_0-9]+.*\(|Duration|Registers Per|Block Size|Grid Size|Dynamic Shared|Static Shared|Issue Slots Busy|No Eligible|stalled_(barrier|short_scoreboard|mio_throttle|math_pipe|not_selected|wait|long_scoreboard|dispatch|no_instruction|lg_throttle|branch)[a-z_]*_per_issue_active|Executed Instructions  " "$OUT/profile-gemm.txt" | head -150
      ;;
    profile)
      NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
      if [ -z "$NCU" ]; then echo "no ncu"; status=1; continue; fi
      p() {
        echo "### dynsmem run $*"
        "$NCU" --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
          --section LaunchStats --section WarpStateStats --section SchedulerStats \
          --section ComputeWorkloadAnalysis --section InstructionStats \
          -k "regex:^(scan|conv1d|stencil2d|sgemm)" --launch-skip 2 --launch-count 1 \
          $B run "$@" --backend cuda --warmup 3 --warmup-ms 0 --repeats 1 2>&1 | grep -vE "^==PROF==|^$"
      }
      {
        [ -n "${PROFILE_GEMM_ONLY:-}" ] || {
        p scan --block 512 --ipt 32
        p conv1d --taps 33 --block 128 --outputs-per-thread 8
        p stencil2d --radius 1 --block 256 --tile-w 128 --tile-h 64
        p stencil2d --radius 2 --block 256 --tile-w 128 --tile-h 64
        }
        p sgemm --m 4096 --bm 128 --bn 128 --bk 32 --stages 2
      } > "$OUT/profile.txt" 2>&1
      grep -E "^###|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\)|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Issue Slots Busy|No Eligible|Stall|Executed Ipc A" "$OUT/profile.txt" | head -120
      ;;
    shards)
      d=$(mktemp -d)
      for m in ${SHARD_SIZES:-1024 4096}; do
        for how in one two; do
          # SHARD_DEVICES=0,1 on a host with two GPUs (default: two workers on GPU 0).
          extra=(); [ "$how" = two ] && extra=(--devices "${SHARD_DEVICES:-0,0}")
          t0=$(date +%s.%N)
          $B tune sgemm --m "$m" --backend cuda --cache "$d/$m-$how.jsonl" --quiet "${extra[@]}" > "$d/$m-$how.txt" 2>&1 || status=1
          echo "sgemm $m^3 $how process(es): wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}') s" | tee -a "$d/summary.txt"
          grep -E "^(space|exhaustive|worker|merged|best|  [0-9]+ of)" "$d/$m-$how.txt" | tee -a "$d/summary.txt"
        done
        echo "--- compare sgemm $m^3: A = one process, B = two workers merged" | tee -a "$d/summary.txt"
        python3 ci/compare_caches.py "$d/$m-one.jsonl" "$d/$m-two.jsonl" 2>&1 | tee -a "$d/summary.txt" || status=1
      done
      cp "$d/summary.txt" "$OUT/shards.txt"
      tar czf "$OUT/shards.tgz" -C "$d" .
      ;;
    *) echo "unknown step $step"; status=1 ;;
  esac
done
exit $status
