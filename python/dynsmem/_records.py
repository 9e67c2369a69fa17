"""Record files (``dynsmem bench --json``, ``run --json``, tuner caches) as pandas DataFrames,
and back.

A record is one JSON object per line. :func:`records` flattens each into one row: nested
objects become dotted columns (``problem.rows``, ``config.block``, ``tune.params.block``),
lists stay lists (``times_ms``). Columns take pandas' nullable types, so an integer field stays
an integer where other rows lack it. :func:`to_records` undoes the flattening: a field with no
value in a row is ``null`` (inside a nested object, left out), which the command line reads as
it reads the original's missing or ``null`` field.
"""

from __future__ import annotations

import glob
import json
import math
import os
import tempfile
import warnings
from pathlib import Path
from typing import Iterable

SEP = "."


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """The records of one file. A last line cut short (a run killed while writing) is skipped
    with a warning, as the command line skips it; any other line that does not parse is an
    error naming the file and line."""
    out = []
    lines = Path(path).read_bytes().split(b"\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as e:
            if i == len(lines) - 1 or e.msg.startswith("Unterminated") or e.msg.startswith("Expecting"):
                warnings.warn(f"{path}: line {i + 1} is torn ({len(line)} bytes): skipped")
                continue
            raise ValueError(f"{path}: line {i + 1}: {e}") from None
    return out


def _flatten(obj: dict, prefix: str = "", out: dict | None = None) -> dict:
    out = {} if out is None else out
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            _flatten(value, name + SEP, out)
        else:
            out[name] = value
    return out


def frame(lines: list[dict]):
    """A DataFrame of record dicts, one row each, fields flattened."""
    import pandas as pd

    rows = [_flatten(r) for r in lines]
    df = pd.DataFrame(rows)
    return df.convert_dtypes() if len(df) else df


def _paths(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out: list[Path] = []
    for p in paths:
        matched = sorted(glob.glob(str(p), recursive=True))
        if not matched and not Path(p).exists():
            raise FileNotFoundError(f"no record file matches {p}")
        out += [Path(m) for m in matched] or [Path(p)]
    return out


def records(paths, *, source: bool = False):
    """The records of ``paths`` (files or glob patterns, ``**`` included) as one DataFrame, a
    row per record, fields flattened (``problem.rows``, ``config.block``). With ``source``, a
    column ``source`` names each row's file."""
    import pandas as pd

    frames = []
    for path in _paths(paths):
        df = frame(read_jsonl(path))
        if source:
            df["source"] = str(path)
        frames.append(df)
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def _plain(value):
    """A cell as JSON has it: numpy and pandas scalars as Python's; NA and NaN as missing."""
    import numpy as np
    import pandas as pd

    if isinstance(value, (list, dict)):
        return value
    if isinstance(value, np.ndarray):
        return value.tolist()
    if value is None or value is pd.NA or value is pd.NaT:
        return _MISSING
    if isinstance(value, float) and math.isnan(value):
        return _MISSING
    if isinstance(value, np.generic):
        value = value.item()
        if isinstance(value, float) and math.isnan(value):
            return _MISSING
    return value


_MISSING = object()


def to_records(df) -> list[dict]:
    """The record dicts of a DataFrame made by :func:`records` (edited or not): dotted columns
    nested again, missing values left out."""
    out = []
    columns = [c for c in df.columns if c != "source"]
    fields = list(dict.fromkeys(str(c).split(SEP)[0] for c in columns))
    for row in df[columns].itertuples(index=False, name=None):
        rec: dict = {}
        for name, value in zip(columns, row):
            value = _plain(value)
            if value is _MISSING:
                continue
            *parents, leaf = str(name).split(SEP)
            node = rec
            for p in parents:
                node = node.setdefault(p, {})
            node[leaf] = value
        # A field with no value in this row is null (a record's optional fields, and a null
        # problem or config, read so); inside a nested object a missing value is left out.
        out.append({f: rec.get(f) for f in fields})
    return out


def to_jsonl(df, path: str | os.PathLike) -> Path:
    """Writes a DataFrame of records as a record file the command line reads (``dynsmem
    compare``, ``plot``, ``bench --against``): one JSON object per line."""
    path = Path(path)
    with open(path, "w") as f:
        for rec in to_records(df):
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")
    return path


def compare(df, *, wide: bool = False):
    """The comparison table of ``dynsmem compare`` for these records, as a DataFrame: a row per
    problem and column (``family``, ``problem``, ``unit``, ``column``, ``backend``, ``variant``,
    ``figure``, ``ratio`` to the same-run anchor, ``config``, ``cell`` as printed, ``anchor``).
    With ``wide``, the printed table: a row per problem, a column per backend and variant.
    ``attrs`` holds the footnotes and devices."""
    import pandas as pd

    from . import native

    with tempfile.TemporaryDirectory() as tmp:
        path = to_jsonl(df, Path(tmp) / "records.jsonl")
        table = native().comparison(str(path))
    rows = pd.DataFrame(table["rows"])
    if wide and len(rows):
        order = list(dict.fromkeys(rows["column"]))
        rows = rows.pivot_table(
            index=["family", "problem", "unit", "anchor"], columns="column", values="cell", aggfunc="first", sort=False
        )[order].reset_index()
        rows.columns.name = None
    rows.attrs["footnotes"] = list(table["footnotes"])
    rows.attrs["devices"] = list(table["devices"])
    return rows
