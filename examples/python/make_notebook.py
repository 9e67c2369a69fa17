"""Writes tune_and_plot.ipynb from tune_and_plot.py (its `# %%` cells; no outputs), so that the
notebook and the script CI runs are one text. `python make_notebook.py --check` fails where the
committed notebook differs (python/tests/test_notebook.py runs it)."""

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).parent


def notebook(script: str) -> str:
    cells = []
    for chunk in re.split(r"^# %%", script, flags=re.M)[1:]:
        head, _, body = chunk.partition("\n")
        lines = body.strip("\n").splitlines(True)
        if head.strip() == "[markdown]":
            text = [l[2:] if l.startswith("# ") else l.lstrip("#") for l in lines]
            cells.append({"cell_type": "markdown", "metadata": {}, "source": text})
        else:
            cells.append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                          "source": lines})
    nb = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(nb, indent=1) + "\n"


def main(check: bool) -> int:
    want = notebook((HERE / "tune_and_plot.py").read_text())
    path = HERE / "tune_and_plot.ipynb"
    if check:
        if not path.exists() or path.read_text() != want:
            print(f"{path} differs from tune_and_plot.py: run python {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    path.write_text(want)
    return 0


if __name__ == "__main__":
    sys.exit(main("--check" in sys.argv[1:]))
