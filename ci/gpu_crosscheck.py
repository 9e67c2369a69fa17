"""Independent figures on the same GPU, to hold dynsmem's numbers against: PyTorch's copy,
sum, cumsum, bincount and transpose, timed with CUDA events (median of 20 after 3 warm-ups),
at the sizes `dynsmem bench` uses."""
import torch

N = 1 << 28


def median_ms(fn, reps=20, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def report(name, ms, nbytes):
    print(f"{name}: {ms:.4f} ms, {nbytes / ms / 1e6:.1f} GB/s")


x = torch.rand(N, device="cuda", dtype=torch.float32)
y = torch.empty_like(x)
nbytes = N * 4
print(f"device: {torch.cuda.get_device_name()} torch {torch.__version__}")
t_copy = median_ms(lambda: y.copy_(x))
report("torch copy_ f32 2^28 (read + write)", t_copy, 2 * nbytes)
report("torch.sum f32 2^28 (read)", median_ms(lambda: torch.sum(x)), nbytes)
report("torch.cumsum f32 2^28 (read + write)", median_ms(lambda: torch.cumsum(x, 0, out=y)), 2 * nbytes)
keys = torch.randint(0, 256, (N,), device="cuda", dtype=torch.int32)
report("torch.bincount 256 bins, 2^28 i32 keys (read)", median_ms(lambda: torch.bincount(keys, minlength=256)), nbytes)
m = x.view(16384, 16384)
out = torch.empty_like(m)
report("torch transpose 16384^2 f32 (read + write)", median_ms(lambda: out.copy_(m.t())), 2 * nbytes)

# GEMM: torch.matmul in f32 with TF32 off (cuBLAS SGEMM, as dynsmem's anchor runs it), and
# CuPy's matmul where CuPy is present: an independent figure for the anchor's TFLOP/s.
torch.backends.cuda.matmul.allow_tf32 = False
del x, y, keys, m, out
for s in (1024, 4096, 8192):
    a = torch.rand(s, s, device="cuda") * 2 - 1
    b = torch.rand(s, s, device="cuda") * 2 - 1
    c = torch.empty(s, s, device="cuda")
    ms = median_ms(lambda: torch.matmul(a, b, out=c), reps=10)
    print(f"torch.matmul f32 (TF32 off) {s}^3: {ms:.4f} ms, {2 * s**3 / ms / 1e9:.2f} TFLOP/s")
try:
    import cupy

    for s in (4096, 8192):
        a = cupy.random.rand(s, s, dtype=cupy.float32)
        b = cupy.random.rand(s, s, dtype=cupy.float32)
        ev0, ev1 = cupy.cuda.Event(), cupy.cuda.Event()
        for _ in range(3):
            a @ b
        times = []
        for _ in range(10):
            ev0.record()
            a @ b
            ev1.record()
            ev1.synchronize()
            times.append(cupy.cuda.get_elapsed_time(ev0, ev1))
        ms = sorted(times)[len(times) // 2]
        print(f"cupy matmul f32 {s}^3: {ms:.4f} ms, {2 * s**3 / ms / 1e9:.2f} TFLOP/s")
except ImportError:
    print("cupy: not installed")
