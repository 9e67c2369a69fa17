export XDG_RUNTIME_DIR=/tmp
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
B=.device/bin/dynsmem
nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv -lms 100 > $OUT/smi.csv &
smi=$!
for i in 1 2 3; do echo "wgsl-only process $i"; $B run reduce --backend wgsl --n 268435456 --repeats 30 2>&1 | grep -E "^time|^anchor"; done
for i in 1 2; do echo "bench process $i (cuda + wgsl)"; $B bench --wide --repeats 30 2>/dev/null | grep -E "wgsl|cuda" | grep -E "reduce|copy" | grep -v ERROR | cut -c1-200; done
kill $smi
python3 - <<'PY'
import csv,collections,os
rows=list(csv.reader(open(os.environ['OUT']+'/smi.csv')))
c=collections.Counter((r[1].strip(), r[2].strip(), r[3].strip()) for r in rows[1:] if len(r)>3)
for k,v in c.most_common(12): print(v,k)
PY
