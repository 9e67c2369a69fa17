#!/usr/bin/env bash
# Issue 77 on the H200: the Python package from its wheels (8f427ed; unpacked, xz'd to fit the carry). Every step has its own time
# limit; logs under $OUT.
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cd "$(dirname "$0")/.."
mkdir -p /tmp/site && xz -dc .device/site.tar.xz | tar -xf - -C /tmp/site && export PYTHONPATH=/tmp/site || exit 1
xz -dc .device/bin/dynsmem.xz > /tmp/dynsmem && chmod +x /tmp/dynsmem
export DYNSMEM_CLI=/tmp/dynsmem
step() { local name=$1 limit=$2; shift 2; echo "=== $name ($(date +%T))"; local t0=$(date +%s)
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; local rc=$?; echo "=== $name: exit $rc in $(( $(date +%s) - t0 )) s"; tail -n 25 "$OUT/$name.log"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 --version
  python3 -c "import torch, pandas, matplotlib; print('torch', torch.__version__, 'pandas', pandas.__version__, 'matplotlib', matplotlib.__version__)"
  date -u; git log -1 --format=%H 2>/dev/null; } | tee "$OUT/device.txt"
step import 60 python3 -c "import dynsmem; print(dynsmem.families()); print('commit', dynsmem.native().COMMIT)"
# The package's tests: the CPU ones, the user family with its planted fault and hang (CPU), and
# the tensor kernels against torch with the record-fields check against the dynsmem binary.
step pytest 240 env DYNSMEM_REQUIRE_USER_MODULE=1 python3 -m pytest -v -rs -s python/tests
SEED=$(date +%s); echo "torch_beside seed $SEED"
step torch_beside 150 python3 examples/python/torch_beside.py --seed "$SEED" --json "$OUT/torch-beside.jsonl"
step notebook 200 env DYNSMEM_EXAMPLE_BACKEND=cuda DYNSMEM_EXAMPLE_OUT="$OUT/notebook" python3 examples/python/tune_and_plot.py
# The planted sweep on the GPU, from Python: a far write (an illegal address: the context is lost)
# and a hang, in a sweep of 12 configs; the caller must survive both.
step planted 150 python3 -c "
import json, dynsmem, own_kernel_native
dynsmem.use_native(own_kernel_native)
entries = dynsmem.tune('planted_faults', backend='cuda', cache='$OUT/planted-cuda.jsonl', repeats=3, warmup=1,
                       warmup_ms=0, confirm_top=0, config_timeout=10, quiet=True)
for e in entries:
    print(json.dumps(e['tune']['params']), 'verified' if e['verified'] else 'FAILED', e.get('median_ms'), (e.get('error') or '')[:200])
print('the caller survived:', len(entries), 'entries')
"
# compute-sanitizer on the tensor path (softmax, rmsnorm on torch tensors; small shapes).
cat > /tmp/tensors.py <<'PY'
import torch, dynsmem.cuda as dc
x = torch.randn(300, 1000, device="cuda"); w = torch.randn(1000, device="cuda")
y = dc.softmax(x, config={"block": 128}); z = dc.rmsnorm(x, w, config={"block": 64})
torch.cuda.synchronize(); print("softmax err", (y - torch.softmax(x, -1)).abs().max().item())
PY
for tool in memcheck racecheck synccheck; do
  step "sanitize-$tool" 120 compute-sanitizer --tool "$tool" --kernel-name regex:softmax\|rmsnorm --error-exitcode 9 python3 /tmp/tensors.py
done
ls -la "$OUT" "$OUT/notebook" 2>/dev/null
