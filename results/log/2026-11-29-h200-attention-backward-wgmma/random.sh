#!/usr/bin/env bash
# Issue 73: the wgmma backward at 6 random shapes (seed 1795937408, drawn after the code was
# done) beside PyTorch SDPA's flash and cuDNN backward, same call.
set -uo pipefail
O=$OUT; B=.device/bin/dynsmem
xz -dkf $B.xz && chmod +x $B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
specs=""
while read b h s d dt c; do
  m=none; [ "$c" = 1 ] && m=causal
  echo "== B$b H$h S$s D$d $dt $m" >> $O/log.txt
  timeout 90 $B run attention-backward --no-autotune --energy-ms 0 --batch $b --heads $h --seq $s --d $d --dtype $dt --mask $m --json $O/ours.jsonl >> $O/log.txt 2>&1; echo "exit $?" >> $O/log.txt
  specs="$specs $b,$h,$s,$d,$dt,$c"
done < .device/shapes-random.txt
timeout 200 python3 host/src/families/attention/sdpa.py --backward $specs > $O/sdpa.jsonl 2>> $O/log.txt
grep -E "^==|verified|TFLOP|exit [1-9]|rror" $O/log.txt
python3 - $O/sdpa.jsonl <<'PY'
import json,sys
for l in open(sys.argv[1]):
    r=json.loads(l); print(r["anchor"], r["seq"], r["d"], r["dtype"], r["causal"], round(r.get("tflops",0),1), r.get("error",""))
PY
