#!/usr/bin/env bash
# Issue 77 on the H200, second call (8f427ed's wheels): the tensor kernels beside torch, the
# example notebook on CUDA, compute-sanitizer on the tensor path. Everything into one archive
# ($OUT/77b.tar.xz: the machine returns few files).
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cd "$(dirname "$0")/.."
mkdir -p /tmp/site && xz -dc .device/site.tar.xz | tar -xf - -C /tmp/site && export PYTHONPATH=/tmp/site || exit 1
R=/tmp/77b; mkdir -p $R
step() { local name=$1 limit=$2; shift 2; echo "=== $name ($(date +%T))"; local t0=$(date +%s)
  timeout "$limit" "$@" > "$R/$name.log" 2>&1; local rc=$?; echo "=== $name: exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$R/$name.log"; tail -n 30 "$R/$name.log"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 --version; date -u; } | tee "$R/device.txt"
SEED=$(date +%s); echo "torch_beside seed $SEED" | tee -a "$R/device.txt"
step torch_beside 170 python3 examples/python/torch_beside.py --seed "$SEED" --json "$R/torch-beside.jsonl"
step notebook 200 env DYNSMEM_EXAMPLE_BACKEND=cuda DYNSMEM_EXAMPLE_OUT="$R/notebook" python3 examples/python/tune_and_plot.py
cat > /tmp/tensors.py <<'PY'
import torch, dynsmem.cuda as dc
x = torch.randn(300, 1000, device="cuda"); w = torch.randn(1000, device="cuda")
y = dc.softmax(x, config={"block": 128}); z = dc.rmsnorm(x, w, config={"block": 64})
torch.cuda.synchronize()
print("softmax err", (y - torch.softmax(x, -1)).abs().max().item())
print("rmsnorm err", (z - torch.nn.functional.rms_norm(x, (1000,), w, dc.kernel("rmsnorm", rows=300, cols=1000, config={"block": 64}).problem["eps"])).abs().max().item())
PY
for tool in memcheck racecheck synccheck; do
  step "sanitize-$tool" 120 compute-sanitizer --tool "$tool" --error-exitcode 9 python3 /tmp/tensors.py
done
tar -cJf "$OUT/77b.tar.xz" -C "$R" .
ls -la "$OUT"
