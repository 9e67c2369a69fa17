"""Plots of records with matplotlib: what ``dynsmem plot`` draws as SVG, as figures a notebook
shows or saves.

- ``bars`` (one figure per family): per problem, the best verified figure of each backend and
  variant (GB/s, or TFLOP/s for compute-bound families), the ratio to the same-run anchor over
  each bar, the anchor as a dashed line;
- ``gemm`` (one figure): TFLOP/s of the GEMM families against problem, a line per column.
"""

from __future__ import annotations

import os
from pathlib import Path


def _figures_bars(table, plt):
    figs = {}
    shown = table.dropna(subset=["figure"])
    for family, rows in shown.groupby("family", sort=False):
        problems = list(dict.fromkeys(rows["problem"]))
        columns = list(dict.fromkeys(rows["column"]))
        fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(problems) * max(1, len(columns)) / 2), 3.6))
        width = 0.8 / max(1, len(columns))
        for k, column in enumerate(columns):
            part = rows[rows["column"] == column].set_index("problem")
            xs, ys, ratios = [], [], []
            for i, p in enumerate(problems):
                if p in part.index:
                    xs.append(i + (k - (len(columns) - 1) / 2) * width)
                    ys.append(float(part.loc[p, "figure"]))
                    r = part.loc[p, "ratio"]
                    ratios.append(None if r is None or r != r else float(r))
            bars = ax.bar(xs, ys, width, label=column)
            for bar, r in zip(bars, ratios):
                if r is not None:
                    ax.annotate(f"{r:.2f}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                                ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(problems)), problems, rotation=20, ha="right", fontsize=8)
        unit = rows["unit"].iloc[0]
        ax.set_ylabel(unit)
        ax.set_title(f"{family}: best verified config per backend and variant\n(over each bar: its ratio to the "
                     "same-run anchor)", fontsize=9)
        ax.legend(fontsize=7)
        fig.tight_layout()
        figs[family] = fig
    return figs


def _figure_gemm(table, plt):
    gemm = table[table["family"].str.contains("gemm") & table["figure"].notna()]
    if gemm.empty:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for (family, column), rows in gemm.groupby(["family", "column"], sort=False):
        ax.plot(list(rows["problem"]), [float(v) for v in rows["figure"]], marker="o", label=f"{family} {column}")
    ax.set_ylabel("TFLOP/s")
    ax.set_title("GEMM: TFLOP/s against problem", fontsize=9)
    ax.tick_params(axis="x", labelrotation=20, labelsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot(df, out: str | os.PathLike | None = None, *, fmt: str = "png") -> dict:
    """Draws the records of ``df`` (:func:`dynsmem.records`): a bar chart per family and the
    GEMM chart. Returns ``{name: Figure}``; with ``out`` (a folder, created if missing) also
    writes each as ``<name>.<fmt>`` there."""
    import matplotlib.pyplot as plt

    from ._records import compare

    table = compare(df)
    figs = _figures_bars(table, plt)
    gemm = _figure_gemm(table, plt)
    if gemm is not None:
        figs["gemm"] = gemm
    if out is not None:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        for name, fig in figs.items():
            fig.savefig(folder / f"{name}.{fmt}", dpi=120)
    return figs
