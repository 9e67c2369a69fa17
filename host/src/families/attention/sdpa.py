#!/usr/bin/env python3
"""PyTorch SDPA anchor of the attention family: times the flash and cuDNN backends of
torch.nn.functional.scaled_dot_product_attention on the shapes given, on the same GPU the
CLI runs on, and prints one JSON line per (shape, backend).

  python3 sdpa.py [--reps 30] [--rounds 5] [--backward] B,H,S,D,dtype,causal ...
  e.g. python3 sdpa.py 8,16,4096,128,f16,0 2,16,16384,128,f16,1

With --backward it times the backward pass alone: `torch.autograd.grad` of one forward's
output (kept with `retain_graph`) for a fixed dO uniform in [-1, 1], giving dQ, dK, dV; FLOPs
as FlashAttention counts them: 2.5 times the forward's (five products against two).

Inputs are uniform like the family's (Q, K in [-2, 2], V in [-1, 1]), [B, H, S, D]. Each
round times every backend once (CUDA events around `reps` back-to-back calls, after a
warm-up), backends alternating, and the figure is the median over rounds of the per-call
time. FLOPs as FlashAttention counts them: 4 B H S^2 D, halved when causal. A backend that
refuses the shape is reported with its error.
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--backward", action="store_true")
    ap.add_argument("shapes", nargs="+")
    args = ap.parse_args()
    dev = torch.cuda.get_device_name(0)
    for spec in args.shapes:
        b, h, s, d, dt, causal = spec.split(",")
        b, h, s, d, causal = int(b), int(h), int(s), int(d), causal in ("1", "true", "causal")
        dtype = DTYPES[dt]
        gen = torch.Generator(device="cuda").manual_seed(0)
        q = (torch.rand(b, h, s, d, device="cuda", generator=gen) * 4 - 2).to(dtype)
        k = (torch.rand(b, h, s, d, device="cuda", generator=gen) * 4 - 2).to(dtype)
        v = (torch.rand(b, h, s, d, device="cuda", generator=gen) * 2 - 1).to(dtype)
        flops = 4.0 * b * h * s * s * d / (2 if causal else 1) * (2.5 if args.backward else 1.0)
        if args.backward:
            q, k, v = (x.requires_grad_() for x in (q, k, v))
            do = (torch.rand(b, h, s, d, device="cuda", generator=gen) * 2 - 1).to(dtype)
        times = {name: [] for name in BACKENDS}
        errors = {}
        for _ in range(args.rounds):
            for name, backend in BACKENDS.items():
                if name in errors:
                    continue
                try:
                    with sdpa_kernel([backend]):
                        if args.backward:
                            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                            def call():
                                torch.autograd.grad(out, (q, k, v), do, retain_graph=True)
                        else:

                            def call():
                                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                        for _ in range(3):
                            call()
                        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        start.record()
                        for _ in range(args.reps):
                            call()
                        end.record()
                        torch.cuda.synchronize()
                        times[name].append(start.elapsed_time(end) / args.reps)
                except RuntimeError as e:
                    errors[name] = str(e).splitlines()[0]
        for name in BACKENDS:
            rec = {"anchor": f"torch-sdpa-{name}" + ("-backward" if args.backward else ""), "device": dev, "torch": torch.__version__,
                   "batch": b, "heads": h, "seq": s, "d": d, "dtype": dt, "causal": causal}
            if name in errors:
                rec["error"] = errors[name]
            else:
                ms = statistics.median(times[name])
                rec.update({"ms": ms, "tflops": flops / ms / 1e9, "rounds": args.rounds, "reps": args.reps})
            print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    sys.exit(main())
