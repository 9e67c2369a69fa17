# %% [markdown]
# # Tune a family, load its records, plot them
#
# A notebook (`tune_and_plot.ipynb`, the same cells) and a script (`python tune_and_plot.py`).
# It sweeps softmax's launch-time configs (threads per block, cluster) over one compiled image,
# loads the sweep as a pandas DataFrame, plots time against the config, then benches the best
# config beside the static twins and draws the comparison.
#
# `DYNSMEM_EXAMPLE_BACKEND`: `cuda` (a GPU; the default when one is found) or `cpu` (the CPU
# backend: small sizes, a check that everything runs). `DYNSMEM_EXAMPLE_OUT`: the folder the
# records and figures go to (default `example-out`).

# %%
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import dynsmem

OUT = Path(os.environ.get("DYNSMEM_EXAMPLE_OUT", "example-out"))
OUT.mkdir(parents=True, exist_ok=True)


def has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


BACKEND = os.environ.get("DYNSMEM_EXAMPLE_BACKEND") or ("cuda" if has_cuda() else "cpu")
# A GPU shape past the L2 (16384 rows of 4096 floats, 256 MiB each way); on the CPU backend a
# small one (every kernel thread there is an OS thread).
ROWS, COLS = (16384, 4096) if BACKEND == "cuda" else (32, 1000)
TIMING = {} if BACKEND == "cuda" else {"repeats": 2, "warmup": 0, "warmup_ms": 0}
print(f"backend {BACKEND}: softmax of {ROWS} x {COLS}")

# %% [markdown]
# ## The sweep
# Every config of the space, verified against the CPU reference, then timed; the cache file
# makes it resumable. It runs in supervised worker processes: a config that faulted or hung
# would be recorded as failed, and the sweep would go on.

# %%
cache = OUT / f"softmax-{BACKEND}-tune.jsonl"
entries = dynsmem.tune("softmax", cache=cache, backend=BACKEND, rows=ROWS, cols=COLS, strategy="exhaustive",
                       confirm_top=0, quiet=True, **TIMING)
print(f"{len(entries)} configs, {sum(e['verified'] for e in entries)} verified")

# %% [markdown]
# ## The records as a DataFrame
# Nested fields are dotted columns: `config.block`, `tune.params.cluster`, `problem.rows`.

# %%
df = dynsmem.records(cache)
table = df[["config.block", "config.cluster", "shared_bytes", "median_ms", "gbps", "verified"]]
table = table.sort_values("median_ms")
print(table.to_string(index=False))

# %% [markdown]
# ## Time against the config

# %%
fig, ax = plt.subplots(figsize=(6, 3.6))
for cluster, part in df[df["verified"]].groupby("config.cluster"):
    part = part.sort_values("config.block")
    ax.plot(part["config.block"], part["gbps"], marker="o", label=f"cluster {cluster}")
ax.set_xscale("log", base=2)
ax.set_xlabel("threads per block")
ax.set_ylabel("GB/s")
ax.set_title(f"softmax {ROWS} x {COLS} on {df['device'].iloc[0]}: one image, configs at launch", fontsize=9)
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(OUT / "softmax-sweep.png", dpi=120)

# %% [markdown]
# ## The best config beside the static twins
# `run` at the sweep's best config, then the bench of the family on this backend, and the
# comparison table and its plot (what `dynsmem compare` and `dynsmem plot` give).

# %%
best = df[df["verified"]].sort_values("median_ms").iloc[0]
config = {"block": int(best["config.block"]), "cluster": int(best["config.cluster"])}
record = dynsmem.run("softmax", config=config, backend=BACKEND, rows=ROWS, cols=COLS, **TIMING)
print(f"best {config}: {record['median_ms']:.4f} ms, {record['gbps']:.1f} GB/s, ratio to the copy {record['ratio']}")

bench = dynsmem.bench(family=["softmax"], backend=[BACKEND], quick=BACKEND != "cuda",
                      json_path=OUT / f"softmax-{BACKEND}-bench.jsonl", **TIMING)
print(dynsmem.compare(bench, wide=True).to_string(index=False))
figures = dynsmem.plot(bench, OUT)
print("figures:", ", ".join(str(OUT / f"{name}.png") for name in ["softmax-sweep", *figures]))
