#!/usr/bin/env bash
# Where the D 64 backward's time goes: ncu stall sampling per reason and per SASS line.
set -uo pipefail
O=$OUT; B=.device/bin/dynsmem
xz -dkf $B.xz && chmod +x $B
timeout 150 ncu --set full --import-source yes -k regex:attention_bwd_wgmma -c 1 -o $O/d64 $B run attention-backward --batch 4 --heads 16 --seq 4096 --d 64 --dtype bf16 --repeats 1 --warmup 0 --warmup-ms 0 --energy-ms 0 --no-autotune > $O/ncu.txt 2>&1; echo "ncu exit $?"
ncu --import $O/d64.ncu-rep --page raw --csv > $O/raw.csv 2>&1
python3 - $O/raw.csv <<'PY' | tee $O/stalls.txt
import csv,sys
rows=list(csv.reader(open(sys.argv[1])))
h,u,v=rows[0],rows[1],rows[2]
st=[(h[i],v[i]) for i in range(len(h)) if h[i].startswith("smsp__pcsamp_warps_issue_stalled_") and not h[i].endswith("_not_issued")]
tot=sum(float(x.replace(",","") or 0) for _,x in st)
for k,x in sorted(st,key=lambda t:-float(t[1].replace(",","") or 0))[:14]:
    print(f"{k[len('smsp__pcsamp_warps_issue_stalled_'):]:40s} {float(x.replace(',','') or 0)/tot*100:5.1f}%")
PY
ncu --import $O/d64.ncu-rep --page source --csv --print-source sass > $O/source.csv 2>&1; echo "source exit $? $(wc -l < $O/source.csv) lines"
python3 - $O/source.csv <<'PY' | tee $O/hot.txt
import csv,sys
r=list(csv.reader(open(sys.argv[1])))
hi=[i for i,row in enumerate(r) if any("Warp Stall Sampling (All" in c for c in row)]
if not hi: print("no header"); print(r[:3]); sys.exit()
h=r[hi[0]]; c=[j for j,x in enumerate(h) if x.startswith("Warp Stall Sampling (All")][0]
src=[j for j,x in enumerate(h) if x=="Source"][0]
body=[row for row in r[hi[0]+1:] if len(row)>c]
def f(x):
    try: return float(x.replace(",",""))
    except: return 0
tot=sum(f(row[c]) for row in body)
for row in sorted(body,key=lambda row:-f(row[c]))[:25]:
    print(f"{f(row[c])/tot*100:5.1f}%  {row[src][:110]}")
PY
