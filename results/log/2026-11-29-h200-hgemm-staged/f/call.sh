#!/usr/bin/env bash
# Issue 75, call F on the H200: where the fixed cost per tile goes. Nsight Compute's source-level
# warp-stall sampling (SourceCounters, WarpStateStats) of the staged 128 x 224 kernel at 2560^3
# (the tuned f16 config, 4 stages, 2 buffers), exported per SASS instruction.
set -u
xz -dkf .device/bin/dynsmem.xz; chmod +x .device/bin/dynsmem
D=./.device/bin/dynsmem; d=/tmp/r75f; rm -rf "$d"; mkdir -p "$d"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$d/device.txt"
P="run hgemm --backend cuda --m 2560 --n 2560 --k 2560 --bm 128 --bn 224 --cluster 1 --stages 4 --pingpong false --streamk false --tma-store true --stage-buffers 2 --autotune off --repeats 2 --warmup 1 --energy-ms 0"
timeout 150 $NCU --section SourceCounters --section WarpStateStats -k regex:hgemm_wgmma -s 2 -c 1 -o "$d/src" $D $P > "$d/ncu.txt" 2>&1; echo "ncu rc=$?"
timeout 60 $NCU --import "$d/src.ncu-rep" --page source --csv --print-source sass > "$d/source-sass.csv" 2>> "$d/ncu.txt"; echo "export rc=$? $(wc -l < "$d/source-sass.csv") lines"
timeout 30 $NCU --import "$d/src.ncu-rep" --page details --csv > "$d/details.csv" 2>> "$d/ncu.txt"
rm -f "$d/src.ncu-rep"
tar cJf "$OUT/r75f.txz" -C /tmp r75f && ls -la "$OUT"
