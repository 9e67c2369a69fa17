"""dynsmem from Python: GPU workgroup (shared) memory sized at launch.

The same library as the ``dynsmem`` command line, in this process::

    import dynsmem
    dynsmem.families()                                    # ['reduce', 'histogram', ...]
    rec = dynsmem.run("softmax", backend="cpu", rows=64, cols=1000, config={"block": 32})
    entries = dynsmem.tune("softmax", backend="cpu", rows=64, cols=1000, cache="softmax.jsonl")
    df = dynsmem.records(["results/log/**/*.jsonl"])     # a pandas DataFrame, fields flattened
    table = dynsmem.compare(df)                           # the comparison table, as a DataFrame
    dynsmem.plot(df, "plots/")                            # what `dynsmem plot` draws, with matplotlib

Keyword arguments are the command line's options of the family (``rows=64`` is ``--rows 64``,
``per_thread=2`` is ``--per-thread 2``, ``staged=True`` is ``--staged``); ``config`` is a dict
of the config's parameters. A refusal (a config over a limit, an unknown option) raises
:class:`DynsmemError` with the text the command line prints, before anything launches.

Sweeps (``tune``) run in supervised worker processes (``python -m dynsmem``), as the command
line's ``tune`` does: a config that faults or hangs is recorded as failed and the sweep goes on;
the caller is never taken down with it.

Kernels on a framework's tensors (PyTorch, CuPy, anything with ``__cuda_array_interface__``):
see :mod:`dynsmem.cuda`.

A researcher's own families: build a module of them with ``dynsmem_python::init`` (see
``examples/own-kernel/python``) and call :func:`use_native` with it.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable

from ._errors import DynsmemError
from . import _native as _builtin
from ._records import compare, read_jsonl, records, to_jsonl, to_records
from ._plot import plot

__all__ = [
    "DynsmemError",
    "bench",
    "cli",
    "compare",
    "families",
    "native",
    "options",
    "plot",
    "read_jsonl",
    "records",
    "run",
    "to_jsonl",
    "to_records",
    "tune",
    "use_native",
]

_current = _builtin


def native():
    """The native module whose families the calls use: ``dynsmem._native`` (the built-in
    families) unless :func:`use_native` gave another."""
    return _current


def use_native(module) -> None:
    """Use the families of ``module``, a native module made with ``dynsmem_python::init``
    (a researcher's own crate), for every call of this package from now on. Its workers are
    started with ``python -m dynsmem --native <module name>``, so the module must be importable
    by that name."""
    global _current
    for name in ("cli", "families", "options", "comparison", "prepare"):
        if not hasattr(module, name):
            raise TypeError(f"{module!r} is not a dynsmem native module (it has no {name}())")
    _current = module


def families() -> list[str]:
    """The names of the families, in the registry's order."""
    return list(_current.families())


def options(family: str, command: str = "run") -> list[dict]:
    """The options of ``dynsmem <command> <family>`` (``run`` or ``tune``): a dict per option
    with ``name``, ``takes_value``, ``default`` and ``help``."""
    return list(_current.options(command, family))


def _worker() -> list[str]:
    """The program that runs a sweep's worker: this interpreter, this package's entry."""
    cmd = [sys.executable, "-m", "dynsmem"]
    if _current is not _builtin:
        cmd += ["--native", _current.__name__]
    return cmd


def cli(*args: str) -> str | None:
    """Runs ``dynsmem ARGS...`` in this process (the command line's own output goes to the
    process's stdout). Returns the text of ``--help`` where it was asked for. Raises
    :class:`DynsmemError` on a refusal or failure."""
    return _current.cli(["dynsmem", *map(str, args)], _worker())


def _flags(command: str, family: str, values: dict[str, Any]) -> list[str]:
    """Keyword arguments as the options of ``command family``."""
    known = {o["name"]: o for o in _current.options(command, family)}
    out: list[str] = []
    for key, value in values.items():
        if value is None:
            continue
        name = key.replace("_", "-")
        opt = known.get(name)
        if opt is None:
            raise DynsmemError(
                f"{command} {family}: no option --{name} (from {key}=); its options are "
                + ", ".join(sorted(known))
            )
        if not opt["takes_value"]:
            if value is True:
                out.append(f"--{name}")
            elif value is not False:
                raise DynsmemError(f"{command} {family}: --{name} is a switch: give True or False, not {value!r}")
            continue
        if isinstance(value, bool):
            value = str(value).lower()
        elif isinstance(value, (list, tuple)):
            value = ",".join(map(str, value))
        out += [f"--{name}", str(value)]
    return out


def _new_lines(path: Path, offset: int) -> list[dict]:
    """The JSON lines of ``path`` written past ``offset`` bytes."""
    if not path.exists():
        return []
    with open(path, "rb") as f:
        f.seek(offset)
        return [json.loads(line) for line in f.read().splitlines() if line.strip()]


def run(family: str, config: dict | None = None, *, json_path: str | os.PathLike | None = None, **options) -> dict:
    """Runs one config of ``family`` as ``dynsmem run`` does (validate, anchor, verify, time)
    and returns its record as a dict, the record ``dynsmem run --json`` writes; the same-run
    anchor's record, where there is one, is under the key ``"anchor_record"``.

    ``config``: the config's parameters (others take the default the command line takes:
    the tuning database's, else the family's heuristic). ``options``: the problem's sizes and
    any other option of ``dynsmem run <family>`` (``backend``, ``variant``, ``repeats``, ...).
    ``json_path``: also append the records to this file.
    """
    args = ["run", family, *_flags("run", family, {**options, **(config or {})})]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(json_path) if json_path is not None else Path(tmp) / "run.jsonl"
        offset = path.stat().st_size if path.exists() else 0
        cli(*args, "--json", str(path))
        written = _new_lines(path, offset)
    if not written:
        raise DynsmemError(f"run {family}: no record was written")
    record = written[0]
    if len(written) > 1:
        record["anchor_record"] = written[1]
    return record


def tune(
    family: str,
    *,
    cache: str | os.PathLike | None = None,
    values: dict[str, Iterable] | None = None,
    **options,
) -> list[dict]:
    """Sweeps ``family``'s launch-time configs as ``dynsmem tune`` does, in supervised worker
    processes (a config that faults or hangs is recorded as failed, with its reason; the sweep
    goes on). Returns the sweep's cache entries (a dict per config: its ``tune.params``,
    ``median_ms``, ``verified``, ``error`` ...), as Kernel Tuner returns its results.

    ``cache``: the sweep's cache file (resumable; default: a temporary one). ``values``:
    candidate values per parameter (``{"block": [64, 128]}``). ``options``: the problem's
    sizes and any option of ``dynsmem tune <family>`` (``backend``, ``strategy``,
    ``config_timeout``, ``repeats`` ...).
    """
    args = ["tune", family, *_flags("tune", family, options)]
    for name, vals in (values or {}).items():
        args += ["--values", f"{name}={','.join(map(str, vals))}"]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(cache) if cache is not None else Path(tmp) / "tune.jsonl"
        cli(*args, "--cache", str(path))
        # A cache may hold other families' sweeps too: this family's entries.
        return [e for e in _new_lines(path, 0) if e.get("family") == family]


def bench(*, json_path: str | os.PathLike | None = None, **options):
    """Runs ``dynsmem bench`` (``family=[...]``, ``backend=[...]``, ``quick=True``, ``n=...``,
    any of its options) and returns its records as a DataFrame (:func:`records`)."""
    args: list[str] = ["bench"]
    for key in ("family", "backend"):
        for v in options.pop(key, None) or []:
            args += [f"--{key}", str(v)]
    for key, value in options.items():
        name = key.replace("_", "-")
        if value is True:
            args.append(f"--{name}")
        elif value not in (None, False):
            args += [f"--{name}", str(value)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(json_path) if json_path is not None else Path(tmp) / "bench.jsonl"
        offset = path.stat().st_size if path.exists() else 0
        cli(*args, "--json", str(path))
        return records([path]) if offset == 0 else records_from(_new_lines(path, offset))


def records_from(lines: list[dict]):
    """A DataFrame of record dicts (as :func:`records` makes of files)."""
    from ._records import frame

    return frame(lines)
