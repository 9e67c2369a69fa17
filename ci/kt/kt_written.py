#!/usr/bin/env python3
"""Write a cache file with Kernel Tuner itself, for the byte-for-byte layout test of our
exports (host/src/tune/kt/mod.rs, `kt_cache_text_is_kernel_tuners_layout`).

usage: python3 ci/kt/kt_written.py OUT.json

Kernel Tuner's C backend (g++, no GPU) tunes a chunked sum over CHUNK x UNROLL with a
restriction (CHUNK * UNROLL <= 64, so two configs are never stored), a config that fails to
compile (CHUNK 48: Kernel Tuner stores it with `__error__` only) and a metric (GB/s). The
C function returns its own time in ms, which Kernel Tuner's C backend takes as the runtime.
Tested with kernel_tuner==1.5.0.
"""
import os
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import kernel_tuner

SOURCE = r"""
#include <time.h>
extern "C" float sum_chunks(float *out, const float *x, int n) {
#if CHUNK == 48
#error "uses too much shared data"
#endif
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i += CHUNK) {
        float s = 0.0f;
        for (int j = i; j < i + CHUNK && j < n; ++j) s += x[j];
        out[i / CHUNK] = s;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (b.tv_sec - a.tv_sec) * 1e3f + (b.tv_nsec - a.tv_nsec) * 1e-6f;
}
"""


def main(out):
    out = Path(out).resolve()
    n = np.int32(1 << 16)
    x = np.random.default_rng(1).random(n).astype(np.float32)
    sums = np.zeros(n, dtype=np.float32)
    with tempfile.TemporaryDirectory() as work, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        os.chdir(work)  # the C backend compiles in the working directory
        cache = Path(work) / "cache.json"
        kernel_tuner.tune_kernel(
            "sum_chunks", SOURCE, int(n), [sums, x, n], {"CHUNK": [16, 32, 48, 64], "UNROLL": [1, 2]},
            lang="C", compiler_options=["-O2"], restrictions=["CHUNK * UNROLL <= 64"], cache=str(cache),
            metrics={"GB/s": lambda p: 4 * int(n) / 1e6 / p["time"]}, verbose=False, quiet=True)
        out.write_bytes(cache.read_bytes())
    print(f"wrote {out}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip())
    main(sys.argv[1])
