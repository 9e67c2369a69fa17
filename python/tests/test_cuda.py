"""Kernels on PyTorch tensors (dynsmem.cuda), on the GPU: each result against torch's own, on
torch's current stream, and the typed refusals of arrays that do not fit. Without a CUDA
device (or without torch) they print SKIPPED and pass."""

import pytest

import dynsmem

torch = pytest.importorskip("torch", reason="SKIPPED: no torch")
if not torch.cuda.is_available():
    pytest.skip("SKIPPED: no CUDA device", allow_module_level=True)

import dynsmem.cuda as dc  # noqa: E402


def logits(rows, cols, seed=1):
    g = torch.Generator(device="cuda").manual_seed(seed)
    # Rows far apart in scale: a kernel that skips the max subtraction overflows.
    offset = (torch.rand(rows, 1, device="cuda", generator=g) - 0.5) * 2000
    return offset + torch.randn(rows, cols, device="cuda", generator=g) * 10


@pytest.mark.parametrize("rows,cols,block", [(4096, 4096, 256), (1000, 1537, 128), (3, 65536, 1024), (20000, 7, 32)])
def test_softmax_is_torchs(rows, cols, block):
    x = logits(rows, cols)
    y = dc.softmax(x, config={"block": block})
    want = torch.softmax(x.double(), -1).float()
    torch.testing.assert_close(y, want, rtol=2e-5, atol=1e-9)


@pytest.mark.parametrize("rows,cols", [(4096, 4096), (777, 3001)])
def test_rmsnorm_is_torchs(rows, cols):
    x = torch.randn(rows, cols, device="cuda") * 4
    w = torch.randn(cols, device="cuda")
    k = dc.kernel("rmsnorm", rows=rows, cols=cols)
    eps = k.problem["eps"]
    y = dc.rmsnorm(x, w)
    xd = x.double()
    want = (xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * w.double()).float()
    torch.testing.assert_close(y, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("m,n,k,dtype,out", [(4096, 4096, 4096, torch.float16, "f32"), (2560, 2560, 2560, torch.bfloat16, "f32"),
                                             (1000, 1536, 520, torch.float16, "f32"), (2048, 1024, 4096, torch.float16, "input")])
def test_hgemm_is_torchs(m, n, k, dtype, out):
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", dtype=dtype, generator=g)
    b = torch.randn(n, k, device="cuda", dtype=dtype, generator=g)
    c = dc.hgemm(a, b, out_dtype=out)
    want = a.double() @ b.double().T
    # The same 16-bit inputs on both sides; f32 accumulation (in the tensor cores' order)
    # against f64: within 1e-4 of the entries' scale (sqrt(k): 6.4e-3 at k 4096, where one
    # dropped product a_i b_i is 0.8 on average); a 16-bit C within its own rounding.
    if out == "f32":
        assert c.dtype == torch.float32
        torch.testing.assert_close(c.double(), want, rtol=1e-5, atol=1e-4 * k**0.5)
    else:
        assert c.dtype == dtype
        torch.testing.assert_close(c, want.to(dtype), rtol=1e-2, atol=1e-2 * k**0.5)


def test_on_torchs_current_stream():
    x = logits(2048, 2048)
    s = torch.cuda.Stream()
    y = torch.empty_like(x)
    with torch.cuda.stream(s):
        # Queued on s behind a long op: launched on the default stream instead, it would read x early.
        x.mul_(1.0).add_(0.0)
        dc.softmax(x, out=y)
    s.synchronize()
    torch.testing.assert_close(y, torch.softmax(x.double(), -1).float(), rtol=2e-5, atol=1e-9)


def test_the_kernel_checks_itself_first():
    k = dc.kernel("softmax", rows=512, cols=1000)
    k.self_check()
    assert k.shared_bytes > 0 and "softmax" in k.name


def test_arrays_that_do_not_fit_are_refused():
    k = dc.kernel("softmax", rows=64, cols=128)
    x = logits(64, 128)
    with pytest.raises(dynsmem.DynsmemError, match=r"buffer 1 \(output\) holds 16 bytes; the launch writes 32768"):
        k(x, torch.empty(4, device="cuda"))
    with pytest.raises(dynsmem.DynsmemError, match="float64"):
        k(x.double(), x)
    with pytest.raises(dynsmem.DynsmemError, match="non-contiguous"):
        k(x.t(), x)
    with pytest.raises(dynsmem.DynsmemError, match="takes 2"):
        k(x)
    with pytest.raises(dynsmem.DynsmemError, match="block must be at least 1"):
        dc.kernel("softmax", config={"block": 0}, rows=64, cols=128)
    a = torch.randn(256, 64, device="cuda", dtype=torch.float16)
    with pytest.raises(dynsmem.DynsmemError, match="want m x k and n x k"):
        dc.hgemm(a, a.float())
    with pytest.raises(dynsmem.DynsmemError, match="not a 16-byte aligned device address"):
        dc.hgemm(a, torch.randn(256 * 64 + 1, device="cuda", dtype=torch.float16)[1:].view(256, 64))


def test_run_on_cuda_writes_the_command_lines_record(tmp_path):
    """`dynsmem.run` on the GPU against the command line's `run --json` at the same options: the
    same fields, problem, config and kernel. DYNSMEM_CLI names the `dynsmem` binary to compare
    with (default: `python -m dynsmem`)."""
    import json
    import os
    import subprocess
    import sys

    opts = ["--rows", "16384", "--cols", "4096", "--block", "256", "--repeats", "10"]
    rec = dynsmem.run("softmax", config={"block": 256}, backend="cuda", rows=16384, cols=4096, repeats=10)
    cli = os.environ.get("DYNSMEM_CLI")
    cmd = [cli] if cli else [sys.executable, "-m", "dynsmem"]
    path = tmp_path / "cli.jsonl"
    subprocess.run([*cmd, "run", "softmax", "--backend", "cuda", *opts, "--json", str(path)], check=True)
    theirs = [json.loads(l) for l in open(path) if l.strip()]
    anchor = rec.pop("anchor_record")
    assert set(rec) == set(theirs[0]), set(rec) ^ set(theirs[0])
    assert set(anchor) == set(theirs[1])
    for field in ("family", "backend", "variant", "kernel", "problem", "config", "shared_bytes", "device", "driver",
                  "verified"):
        assert rec[field] == theirs[0][field], field
    assert rec["verified"] is True and rec["gbps"] > 0
    print(f"python run: {rec['median_ms']:.4f} ms, {rec['gbps']:.0f} GB/s (ratio {rec['ratio']:.3f}); "
          f"command line: {theirs[0]['median_ms']:.4f} ms, {theirs[0]['gbps']:.0f} GB/s (ratio {theirs[0]['ratio']:.3f})")
