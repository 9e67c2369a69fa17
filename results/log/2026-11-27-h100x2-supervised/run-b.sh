#!/usr/bin/env bash
# Call B on a 2-GPU machine: the exhaustive SGEMM sweep at 4096^3 on one GPU, then with
# `--devices 0,1` (supervised workers, one per GPU). Usage: bash run-b.sh BIN_DIR OUT_DIR
set -u
bin=$1; out=$2; mkdir -p "$out"; cd "$out"
now() { date +%s.%N; }
took() { python3 -c "print(f'{$2 - $1:.1f}')"; }
nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader > machine-b.txt
rm -f s1.jsonl s2*.jsonl
t0=$(now); "$bin/dynsmem" tune sgemm --m 4096 --n 4096 --k 4096 --backend cuda --cache s1.jsonl --confirm-top 0 --energy-ms 0 --quiet > s1.txt 2>&1; t1=$(now)
echo "sgemm 4096^3 one GPU: wall $(took $t0 $t1) s; $(grep evaluations s1.txt)"
t0=$(now); "$bin/dynsmem" tune sgemm --m 4096 --n 4096 --k 4096 --backend cuda --cache s2.jsonl --devices 0,1 --confirm-top 0 --energy-ms 0 --quiet > s2.txt 2>&1; t1=$(now)
echo "sgemm 4096^3 two GPUs: wall $(took $t0 $t1) s"; grep -E "worker .*evaluations|best:" s2.txt | head -4; grep -E "best:" s1.txt | head -2
echo "== the supervision's cost, warm (after call A on the same machine): reduce on GPU 0, alternating"
for mode in --in-process "" --in-process ""; do
  rm -f cost.jsonl; t0=$(now); CUDA_VISIBLE_DEVICES=0 "$bin/dynsmem" tune reduce --backend cuda --cache cost.jsonl --confirm-top 0 --quiet $mode > "cost-b${mode:-supervised}.txt" 2>&1; t1=$(now)
  echo "reduce ${mode:-supervised}: wall $(took $t0 $t1) s; $(grep evaluations cost-b${mode:-supervised}.txt | sed 's/.* in /strategy /')"
done
echo "== the planted-faults sweep again (its cache and report kept)"
t0=$(now); CUDA_VISIBLE_DEVICES=0 "$bin/own-cli" tune planted_faults --backend cuda --cache pf-b.jsonl --repeats 5 --warmup 1 --warmup-ms 0 --confirm-top 0 --quiet > pf-b.txt 2>&1; echo "rc $? wall $(took $t0 $(now)) s" >> pf-b.txt; tail -8 pf-b.txt
cd .. && tar czf records-b.tgz "$(basename "$out")" && rm -rf "$out"
