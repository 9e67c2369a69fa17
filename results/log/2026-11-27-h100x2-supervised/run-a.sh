#!/usr/bin/env bash
# Call A on a 2-GPU machine: the planted-faults sweep (a far write and a hang among 12
# configs), the same with kill -9 of the worker and of the whole sweep, the cost of the
# supervision, and `tune reduce` on one GPU against `--devices 0,1`.
# Usage: bash run-a.sh BIN_DIR OUT_DIR
set -u
bin=$1; out=$2; mkdir -p "$out"; cd "$out"
now() { date +%s.%N; }
took() { python3 -c "print(f'{$2 - $1:.1f}')"; }
nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader > machine.txt
"$bin/dynsmem" --version >> machine.txt
quick="--repeats 5 --warmup 1 --warmup-ms 0 --confirm-top 0 --quiet"

echo "== 1. planted faults, supervised, GPU 0"
t0=$(now); CUDA_VISIBLE_DEVICES=0 "$bin/own-cli" tune planted_faults --backend cuda --cache pf.jsonl $quick > pf.txt 2>&1; rc=$?; t1=$(now)
echo "rc $rc wall $(took $t0 $t1) s" | tee -a pf.txt; grep -E "failed|supervisor|evaluations" pf.txt

echo "== 2. kill -9 of the worker mid-sweep"
CUDA_VISIBLE_DEVICES=0 "$bin/own-cli" tune planted_faults --backend cuda --n 16777213 --cache kill-worker.jsonl $quick > kill-worker.txt 2>&1 &
sup=$!
sleep 2; pkill -9 -f "own-cli tune planted_faults.*kill-worker.jsonl.*--worker" && echo "killed the worker at 2 s" | tee -a kill-worker.txt
wait $sup; echo "rc $?" | tee -a kill-worker.txt; grep -E "failed|supervisor|evaluations" kill-worker.txt

echo "== 3. kill -9 of the whole sweep, then a rerun"
( exec setsid env CUDA_VISIBLE_DEVICES=0 "$bin/own-cli" tune planted_faults --backend cuda --n 16777213 --cache kill-all.jsonl $quick > kill-all-1.txt 2>&1 ) &
sleep 2; pkill -9 -f "kill-all.jsonl"; sleep 1; echo "lines after the kill: $(wc -l < kill-all.jsonl)" | tee kill-all-2.txt
CUDA_VISIBLE_DEVICES=0 "$bin/own-cli" tune planted_faults --backend cuda --n 16777213 --cache kill-all.jsonl $quick >> kill-all-2.txt 2>&1; echo "rc $?" >> kill-all-2.txt
grep -E "failed|supervisor|evaluations|lines after" kill-all-2.txt
python3 - <<'PY'
import json
for f in ["pf.jsonl", "kill-worker.jsonl", "kill-all.jsonl"]:
    keys, ok, bad = [], 0, 0
    for line in open(f):
        try: e = json.loads(line)
        except Exception: continue
        keys.append(json.dumps(e["tune"]["params"], sort_keys=True))
        if e.get("verified") and not e.get("error"): ok += 1
        else: bad += 1
    print(f"{f}: {len(keys)} entries, {len(set(keys))} distinct configs, {ok} verified, {bad} failed")
PY

echo "== 4. the supervision's cost: reduce on GPU 0, in-process then supervised"
for mode in --in-process ""; do
  rm -f cost.jsonl; t0=$(now); CUDA_VISIBLE_DEVICES=0 "$bin/dynsmem" tune reduce --backend cuda --cache cost.jsonl --confirm-top 0 --quiet $mode > "cost${mode:-supervised}.txt" 2>&1; t1=$(now)
  echo "reduce ${mode:-supervised}: wall $(took $t0 $t1) s; $(grep evaluations cost${mode:-supervised}.txt)"
done

echo "== 5. startup: one run on each GPU, alone then both at once"
for d in 0 1; do t0=$(now); CUDA_VISIBLE_DEVICES=$d "$bin/dynsmem" run reduce --backend cuda --n 1024 > /dev/null 2>&1; echo "run on GPU $d alone: $(took $t0 $(now)) s"; done
t0=$(now); CUDA_VISIBLE_DEVICES=0 "$bin/dynsmem" run reduce --backend cuda --n 1024 >/dev/null 2>&1 & CUDA_VISIBLE_DEVICES=1 "$bin/dynsmem" run reduce --backend cuda --n 1024 >/dev/null 2>&1; wait; echo "both at once: $(took $t0 $(now)) s"

echo "== 6. tune reduce: one GPU, then --devices 0,1"
rm -f r1.jsonl r2*.jsonl
t0=$(now); "$bin/dynsmem" tune reduce --backend cuda --cache r1.jsonl --confirm-top 0 > r1.txt 2>&1; t1=$(now); echo "one GPU: wall $(took $t0 $t1) s; $(grep evaluations r1.txt)"
t0=$(now); "$bin/dynsmem" tune reduce --backend cuda --cache r2.jsonl --devices 0,1 --confirm-top 0 > r2.txt 2>&1; t1=$(now); echo "two GPUs: wall $(took $t0 $t1) s"; grep -E "worker .*evaluations" r2.txt
python3 - <<'PY'
import json, glob
for f in ["r1.jsonl"] + sorted(glob.glob("r2.shard-*.jsonl")):
    es = [json.loads(l) for l in open(f) if l.strip()]
    w = sum(e["tune"]["wall_ms"] for e in es) / 1e3
    v = sum(e["tune"]["verify_ms"] for e in es) / 1e3
    b = sum(e["tune"].get("bench_ms") or 0 for e in es) / 1e3
    print(f"{f}: {len(es)} configs; sum wall {w:.1f} s = verify {v:.1f} + bench {b:.1f} + prepare/other {w-v-b:.1f}; first config {es[0]['tune']['wall_ms']/1e3:.1f} s")
PY
