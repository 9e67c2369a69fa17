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
