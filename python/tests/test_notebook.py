"""The example notebook (examples/python/): its .ipynb is its script's cells."""

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python"


def test_the_notebook_is_the_scripts_cells():
    p = subprocess.run([sys.executable, EXAMPLE / "make_notebook.py", "--check"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
