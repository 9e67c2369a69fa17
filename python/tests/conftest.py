"""Shared fixtures: a record file the command line wrote, and the command line itself
(``python -m dynsmem``, the same native module, in a child process) for comparisons."""

import json
import os
import subprocess
import sys

import pytest


def cli(*args, check=True):
    """``dynsmem ARGS`` in a child process: (exit code, stdout, stderr)."""
    p = subprocess.run([sys.executable, "-m", "dynsmem", *map(str, args)], capture_output=True, text=True,
                       env={**os.environ, "DYNSMEM_AUTOTUNE": "off"})
    if check and p.returncode != 0:
        raise AssertionError(f"dynsmem {' '.join(map(str, args))} exited {p.returncode}:\n{p.stderr}")
    return p.returncode, p.stdout, p.stderr


@pytest.fixture(scope="session")
def bench_file(tmp_path_factory):
    """Records of `dynsmem bench --quick` on the CPU backend for three families (written by the
    command line, not by this package)."""
    path = tmp_path_factory.mktemp("bench") / "bench.jsonl"
    cli("bench", "--quick", "--backend", "cpu", "--family", "reduce", "--family", "softmax",
        "--family", "transpose", "--repeats", "2", "--warmup", "0", "--warmup-ms", "0", "--energy-ms", "0",
        "--json", path)
    return path


def lines(path):
    return [json.loads(l) for l in open(path) if l.strip()]


@pytest.fixture(autouse=True)
def _no_autotune(monkeypatch):
    # The heuristic defaults, the same in this process and in the command line's.
    monkeypatch.setenv("DYNSMEM_AUTOTUNE", "off")
