"""Independent figures on the same GPU, to hold dynsmem's numbers against: PyTorch's sum
and device-to-device copy of 2^28 f32, timed with CUDA events (median of 20 after 3 warm-ups)."""
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


x = torch.rand(N, device="cuda", dtype=torch.float32)
y = torch.empty_like(x)
bytes_ = N * 4
t_copy = median_ms(lambda: y.copy_(x))
t_sum = median_ms(lambda: torch.sum(x))
print(f"device: {torch.cuda.get_device_name()} torch {torch.__version__}")
print(f"torch copy_ f32 2^28: {t_copy:.4f} ms, {2 * bytes_ / t_copy / 1e6:.1f} GB/s (read + write)")
print(f"torch.sum f32 2^28: {t_sum:.4f} ms, {bytes_ / t_sum / 1e6:.1f} GB/s (read)")
print(f"torch.sum / copy: {(bytes_ / t_sum) / (2 * bytes_ / t_copy):.3f}")
