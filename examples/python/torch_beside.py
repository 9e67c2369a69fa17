"""dynsmem's launch-sized kernels on PyTorch tensors, beside PyTorch's own: softmax
(`torch.softmax`), RMSNorm (`torch.nn.functional.rms_norm`) and the tensor-core GEMM (`a @ b.T`,
cuBLAS through torch; f16 in, f32 out), each verified against a float64 torch result, then timed
with CUDA events, interleaved (dynsmem, torch, dynsmem, ...: both see the same clocks), median of
the rounds. Shapes: the bench's, then random ones.

    python examples/python/torch_beside.py [--seed S] [--json OUT.jsonl]

The config is dynsmem's default for each shape (the tuning database's, else the heuristic);
each line gives it, and where it came from."""

import argparse
import json
import random
import statistics
import time

import torch
import torch.nn.functional as F

import dynsmem.cuda as dc


def timed(fn, rounds=30, per_round=5):
    """Median milliseconds of one call, over `rounds` events of `per_round` calls each."""
    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(per_round):
            fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) / per_round)
    return out


def interleaved(a, b, rounds=15):
    """Medians of a and b timed in alternation, and the median of their per-round ratio."""
    ta, tb = [], []
    for _ in range(rounds):
        ta.append(statistics.median(timed(a, rounds=3)))
        tb.append(statistics.median(timed(b, rounds=3)))
    return statistics.median(ta), statistics.median(tb), statistics.median(x / y for x, y in zip(tb, ta))


def gemm_case(m, n, k):
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(n, k, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda")
    kern = dc.kernel("hgemm", m=m, n=n, k=k, dtype="f16", out="f32")
    ours = lambda: kern(a, b, c)  # noqa: E731
    theirs = lambda: torch.mm(a, b.T, out_dtype=torch.float32) if _OUT_DTYPE else (a @ b.T).float()  # noqa: E731
    ours()
    torch.cuda.synchronize()
    want = a.double() @ b.double().T
    err = ((c.double() - want).abs().max() / k**0.5).item()
    torch.testing.assert_close(c.double(), want, rtol=1e-5, atol=1e-4 * k**0.5)
    t_ours, t_torch, speedup = interleaved(ours, theirs)
    flops = 2.0 * m * n * k
    return {
        "family": "hgemm", "m": m, "n": n, "k": k, "kernel": kern.name, "config": kern.config,
        "origin": kern.origin, "shared_bytes": kern.shared_bytes, "verified": True, "max_abs_err_over_sqrt_k": err,
        "dynsmem_ms": t_ours, "torch_ms": t_torch, "torch_over_dynsmem": speedup,
        "dynsmem_tflops": flops / t_ours / 1e9, "torch_tflops": flops / t_torch / 1e9,
        "torch_op": "torch.mm(a, b.T, out_dtype=float32)" if _OUT_DTYPE else "(a @ b.T).float()",
    }


def _has_out_dtype():
    try:
        x = torch.ones(16, 16, device="cuda", dtype=torch.float16)
        return torch.mm(x, x, out_dtype=torch.float32).dtype == torch.float32
    except (TypeError, RuntimeError):
        return False


_OUT_DTYPE = False


def case(family, rows, cols):
    x = torch.randn(rows, cols, device="cuda") * 4
    y = torch.empty_like(x)
    if family == "softmax":
        k = dc.kernel("softmax", rows=rows, cols=cols)
        ours = lambda: k(x, y)  # noqa: E731
        theirs = lambda: torch.softmax(x, -1)  # noqa: E731
        ours()
        torch.cuda.synchronize()
        want = torch.softmax(x.double(), -1)
        tol = dict(rtol=2e-5, atol=1e-9)
    else:
        w = torch.randn(cols, device="cuda")
        k = dc.kernel("rmsnorm", rows=rows, cols=cols)
        eps = k.problem["eps"]
        ours = lambda: k(x, w, y)  # noqa: E731
        theirs = lambda: F.rms_norm(x, (cols,), w, eps)  # noqa: E731
        ours()
        torch.cuda.synchronize()
        xd = x.double()
        want = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * w.double()
        tol = dict(rtol=1e-5, atol=1e-6)
    err = ((y.double() - want).abs() / (want.abs() + tol["atol"] / tol["rtol"])).max().item()
    torch.testing.assert_close(y.double(), want, **tol)
    t_ours, t_torch, speedup = interleaved(ours, theirs)
    moved = 2 * rows * cols * 4 + (cols * 4 if family == "rmsnorm" else 0)
    return {
        "family": family, "rows": rows, "cols": cols, "kernel": k.name, "config": k.config, "origin": k.origin,
        "shared_bytes": k.shared_bytes, "verified": True, "max_rel_err": err,
        "dynsmem_ms": t_ours, "torch_ms": t_torch, "torch_over_dynsmem": speedup,
        "dynsmem_gbps": moved / t_ours / 1e6, "torch_gbps": moved / t_torch / 1e6,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--random", type=int, default=3, help="random shapes per family")
    ap.add_argument("--json")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    shapes = [(4096, 4096), (65536, 4096), (16384, 8192)]
    shapes += [(rng.randint(1000, 40000), rng.randint(500, 12000)) for _ in range(args.random)]
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, seed {args.seed}")
    print(f"{'family':8} {'shape':>13} {'dynsmem ms':>10} {'torch ms':>9} {'torch/dyn':>9}  config (origin)")
    out = open(args.json, "a") if args.json else None
    global _OUT_DTYPE
    _OUT_DTYPE = _has_out_dtype()
    gemms = [(4096, 4096, 4096), (8192, 8192, 8192), (2560, 2560, 2560)]
    gemms += [tuple(8 * rng.randint(64, 1024) for _ in range(3)) for _ in range(args.random)]
    for m, n, k in gemms:
        r = gemm_case(m, n, k)
        r["seed"] = args.seed
        print(f"{'hgemm':8} {m}x{n}x{k:<6} {r['dynsmem_ms']:>10.4f} {r['torch_ms']:>9.4f} "
              f"{r['torch_over_dynsmem']:>9.2f}  {r['config']} ({r['origin'][:80]}); "
              f"{r['dynsmem_tflops']:.0f} vs {r['torch_tflops']:.0f} TFLOP/s ({r['torch_op']})", flush=True)
        if out:
            out.write(json.dumps(r) + "\n")
            out.flush()
    for family in ("softmax", "rmsnorm"):
        for rows, cols in shapes:
            r = case(family, rows, cols)
            r["seed"] = args.seed
            print(f"{family:8} {rows:>6}x{cols:<6} {r['dynsmem_ms']:>10.4f} {r['torch_ms']:>9.4f} "
                  f"{r['torch_over_dynsmem']:>9.2f}  {r['config']} ({r['origin']})", flush=True)
            if out:
                out.write(json.dumps(r) + "\n")
                out.flush()


if __name__ == "__main__":
    main()
