"""A family's CUDA kernel on a framework's memory: PyTorch tensors, CuPy arrays, anything with
``__cuda_array_interface__``, launched on the framework's current stream with a launch-sized
config given per call::

    import torch, dynsmem.cuda as dc
    x = torch.randn(4096, 4096, device="cuda")
    y = dc.softmax(x, config={"block": 256})            # torch.softmax(x, -1), launch-sized
    k = dc.kernel("rmsnorm", rows=4096, cols=4096)        # prepare once ...
    k(x, w, y)                                            # ... launch many times

A kernel is prepared once per family, problem and config (validated against the device, built,
its launch-sized bytes opted in past 48 KB where needed) and kept; a call checks each array (on
CUDA device 0, C-contiguous, the element type and at least the length the launch reads or
writes) and queues one launch, asynchronous like any framework op. The kernel's arguments are
its buffers in order (``kernel(...).buffers``): softmax ``x, y``; rmsnorm ``x, weight, y``;
hgemm ``a, b, c`` with ``c = a @ b.T``.
"""

from __future__ import annotations

import json
from functools import lru_cache

from . import DynsmemError, _flags, native

_TYPESTR = {"f32": "<f4", "u32": "<u4", "f16": "<f2", "bf16": None}
_TORCH = {"f32": "float32", "u32": "uint32", "f16": "float16", "bf16": "bfloat16"}


def _describe(array, element: str):
    """(address, bytes, stream or None) of a CUDA array, checked."""
    mod = type(array).__module__
    if mod.startswith("torch"):
        import torch

        if not array.is_cuda or (array.device.index or 0) != 0:
            raise DynsmemError(f"a tensor on {array.device}: the kernels run on cuda:0")
        if not array.is_contiguous():
            raise DynsmemError("a non-contiguous tensor: give .contiguous()")
        if str(array.dtype).removeprefix("torch.") != _TORCH[element]:
            raise DynsmemError(f"a {array.dtype} tensor where the kernel takes {element}")
        stream = torch.cuda.current_stream(array.device).cuda_stream
        return array.data_ptr(), array.numel() * array.element_size(), stream
    cai = getattr(array, "__cuda_array_interface__", None)
    if cai is None:
        raise DynsmemError(f"{type(array).__name__} is not a CUDA array (no __cuda_array_interface__)")
    if _TYPESTR[element] is None or cai["typestr"] != _TYPESTR[element]:
        raise DynsmemError(f"an array of {cai['typestr']} where the kernel takes {element}")
    if cai.get("strides") is not None:
        raise DynsmemError("a strided array: give a C-contiguous one")
    n = int(cai["typestr"][2:])
    for d in cai["shape"]:
        n *= d
    return cai["data"][0], n, cai.get("stream")


class Kernel:
    """One family's kernel for one problem and config on CUDA device 0 (see the module)."""

    def __init__(self, family: str, config: dict | None = None, **options):
        args = ["dynsmem", "run", family, "--backend", "cuda",
                *_flags("run", family, {**options, **(config or {})})]
        self._prepared = native().prepare(args)
        self.family = family
        self.problem = json.loads(self._prepared.problem)
        self.config = json.loads(self._prepared.config)
        self.origin = self._prepared.origin
        self.buffers = list(self._prepared.buffers())
        if not self.buffers:
            raise DynsmemError(f"{family}: its run is not one launch over buffers; it cannot run on a caller's")

    @property
    def name(self) -> str:
        return self._prepared.kernel

    @property
    def shared_bytes(self) -> int:
        return self._prepared.shared_bytes

    def __call__(self, *arrays, stream: int | None = None):
        if len(arrays) != len(self.buffers):
            names = ", ".join(b["name"] for b in self.buffers)
            raise DynsmemError(f"{self.name}: {len(arrays)} arrays given, the kernel takes {len(self.buffers)} ({names})")
        pointers, streams = [], set()
        for a, b in zip(arrays, self.buffers):
            address, nbytes, s = _describe(a, b["element"])
            if b["zeroed"]:
                a.zero_() if hasattr(a, "zero_") else a.fill(0)
            pointers.append((address, nbytes))
            if s is not None:
                streams.add(int(s))
        if stream is None:
            stream = streams.pop() if len(streams) == 1 else 0
        self._prepared.run_on(pointers, int(stream))

    def self_check(self) -> None:
        """One run on the kernel's own inputs, checked against its reference (as ``run``)."""
        self._prepared.self_check()

    def __repr__(self) -> str:
        return f"<dynsmem.cuda.Kernel {self.name} {self.problem} config {self.config} ({self.origin})>"


@lru_cache(maxsize=64)
def _kernel(family: str, config: str, options: str) -> Kernel:
    return Kernel(family, json.loads(config), **json.loads(options))


def kernel(family: str, config: dict | None = None, **options) -> Kernel:
    """The prepared kernel of ``family`` for these sizes and config (made once, then reused)."""
    return _kernel(family, json.dumps(config or {}, sort_keys=True), json.dumps(options, sort_keys=True))


def softmax(x, config: dict | None = None, out=None):
    """Row-wise softmax of a 2-D float32 CUDA array (``torch.softmax(x, -1)``), launch-sized."""
    rows, cols = x.shape
    y = out if out is not None else _empty_like(x)
    kernel("softmax", config, rows=rows, cols=cols)(x, y)
    return y


def rmsnorm(x, weight, eps: float | None = None, config: dict | None = None, out=None):
    """RMSNorm of the rows of a 2-D float32 CUDA array, scaled by ``weight`` (``cols``
    floats): ``x / sqrt(mean(x^2) + eps) * weight``, launch-sized."""
    rows, cols = x.shape
    y = out if out is not None else _empty_like(x)
    options = {"rows": rows, "cols": cols}
    if eps is not None:
        options["eps"] = eps
    kernel("rmsnorm", config, **options)(x, weight, y)
    return y


def hgemm(a, b, out=None, out_dtype: str = "f32", config: dict | None = None):
    """``a @ b.T`` on the tensor cores: ``a`` row-major ``m x k``, ``b`` row-major ``n x k``,
    both float16 or both bfloat16; ``c`` (``m x n``) in float32 (``out_dtype="f32"``) or the
    inputs' type (``"input"``). Accumulation in f32."""
    import torch

    (m, k), (n, kb) = a.shape, b.shape
    if kb != k or a.dtype != b.dtype:
        raise DynsmemError(f"hgemm: a {tuple(a.shape)} {a.dtype} and b {tuple(b.shape)} {b.dtype}: "
                           "want m x k and n x k of one type")
    dtype = {torch.float16: "f16", torch.bfloat16: "bf16"}.get(a.dtype)
    if dtype is None:
        raise DynsmemError(f"hgemm: {a.dtype} inputs; the kernels take float16 or bfloat16")
    c = out if out is not None else torch.empty(m, n, device=a.device,
                                                dtype=torch.float32 if out_dtype == "f32" else a.dtype)
    kernel("hgemm", config, m=m, n=n, k=k, dtype=dtype, out=out_dtype)(a, b, c)
    return c


def _empty_like(x):
    if type(x).__module__.startswith("torch"):
        import torch

        return torch.empty_like(x)
    import cupy

    return cupy.empty_like(x)
