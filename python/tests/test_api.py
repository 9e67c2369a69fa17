"""The package over the library, on the CPU backend (no GPU needed): families, run, tune and
bench, refusals, records to DataFrames and back, the comparison and the plots."""

import json
import math

import pytest

import dynsmem
from conftest import cli, lines

BUILTIN = {"reduce", "histogram", "transpose", "scan", "stencil2d", "conv1d", "softmax", "rmsnorm", "sgemm",
           "hgemm", "nbody", "attention"}


def test_families_are_the_command_lines():
    names = dynsmem.families()
    assert BUILTIN <= set(names), names
    _, out, _ = cli("families")
    assert out.split() == names


RUN = dict(backend="cpu", rows=8, cols=100, repeats=2, warmup=0, warmup_ms=0, energy_ms=0)


def test_run_writes_the_command_lines_record(tmp_path):
    rec = dynsmem.run("softmax", config={"block": 4}, **RUN)
    path = tmp_path / "cli.jsonl"
    cli("run", "softmax", "--backend", "cpu", "--rows", 8, "--cols", 100, "--block", 4, "--repeats", 2,
        "--warmup", 0, "--warmup-ms", 0, "--energy-ms", 0, "--json", path)
    theirs = lines(path)
    assert rec["verified"] is True and rec["error"] is None
    anchor = rec.pop("anchor_record", None)
    assert set(rec) == set(theirs[0]), set(rec) ^ set(theirs[0])
    for field in ("family", "backend", "variant", "kernel", "problem", "config", "shared_bytes", "device", "commit"):
        assert rec[field] == theirs[0][field], field
    assert rec["problem"] == {"rows": 8, "cols": 100}
    assert rec["config"]["block"] == 4
    assert len(rec["times_ms"]) == 2
    if anchor is not None:
        assert set(anchor) == set(theirs[1])


def test_a_refusal_is_raised_with_the_command_lines_text():
    with pytest.raises(dynsmem.DynsmemError) as e:
        dynsmem.run("softmax", config={"block": 0}, **RUN)
    code, _, err = cli("run", "softmax", "--backend", "cpu", "--rows", 8, "--cols", 100, "--block", 0, check=False)
    assert code != 0
    # The command line prints `Error: CONTEXT\n\nCaused by:\n    CAUSE`; Python gets `CONTEXT: CAUSE`.
    chain = [l.strip() for l in err.replace("Error:", "").replace("Caused by:", "").splitlines() if l.strip()]
    assert chain, err
    assert str(e.value) == ": ".join(chain)
    assert "block must be at least 1 thread" in str(e.value)
    assert "refused, nothing launched" in str(e.value)


def test_an_unknown_option_names_itself_and_the_options():
    with pytest.raises(dynsmem.DynsmemError, match=r"no option --blok .*block"):
        dynsmem.run("softmax", config={"blok": 4}, **RUN)
    with pytest.raises(dynsmem.DynsmemError, match="the families are"):
        dynsmem.options("no_such_family")


def test_a_usage_error_is_an_exception_not_an_exit():
    with pytest.raises(dynsmem.DynsmemError, match="--rows"):
        dynsmem.cli("run", "softmax", "--rows", "many")
    assert "Usage" in dynsmem.cli("run", "softmax", "--help")


def test_tune_runs_a_supervised_sweep(tmp_path):
    cache = tmp_path / "tune.jsonl"
    space = {"block": [4, 8], "cluster": [1]}
    entries = dynsmem.tune("softmax", cache=cache, values=space, backend="cpu", rows=8, cols=100,
                           repeats=1, warmup=0, warmup_ms=0, confirm_top=0, quiet=True)
    assert sorted(e["tune"]["params"]["block"] for e in entries) == [4, 8]
    assert all(e["verified"] and e["median_ms"] > 0 for e in entries)
    # Measured in a worker process (`python -m dynsmem tune ... --worker`), not in this one.
    assert all(e["command"].startswith("dynsmem tune softmax") and e["command"].endswith("--worker")
               for e in entries), entries[0]["command"]
    # The cache is the command line's: a second sweep answers every config from it.
    again = dynsmem.tune("softmax", cache=cache, values=space, backend="cpu", rows=8, cols=100,
                         repeats=1, warmup=0, warmup_ms=0, confirm_top=0, quiet=True)
    assert len(again) == 2


def test_bench_returns_its_records():
    df = dynsmem.bench(quick=True, backend=["cpu"], family=["reduce"], repeats=2, warmup=0, warmup_ms=0,
                       energy_ms=0)
    # The family's records and the same-run anchor's (a device-to-device copy).
    assert set(df["family"]) == {"reduce", "copy"}
    ours = df[df["family"] == "reduce"]
    assert len(ours) == 2 and ours["verified"].all()
    assert "problem.n" in df.columns and "config.block" in df.columns


def _without_nulls(v):
    if isinstance(v, dict):
        return {k: _without_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_without_nulls(x) for x in v]
    return v


def test_records_round_trip(bench_file, tmp_path):
    df = dynsmem.records(bench_file)
    original = lines(bench_file)
    assert len(df) == len(original)
    # Integers stay integers where other rows lack the field (nullable columns).
    assert str(df["shared_bytes"].dtype) in ("Int64", "int64")
    back = tmp_path / "back.jsonl"
    dynsmem.to_jsonl(df, back)
    assert [_without_nulls(r) for r in lines(back)] == [_without_nulls(r) for r in original]
    # The command line reads the file back to the same table.
    assert cli("compare", back)[1] == cli("compare", bench_file)[1]
    # And so does this package.
    assert dynsmem.compare(dynsmem.records(back)).equals(dynsmem.compare(df))


def test_an_edited_frame_is_what_the_command_line_reads(bench_file, tmp_path):
    df = dynsmem.records(bench_file)
    slower = df.copy()
    slower["median_ms"] = slower["median_ms"] * 2
    path = dynsmem.to_jsonl(slower, tmp_path / "slower.jsonl")
    got = [r["median_ms"] for r in lines(path)]
    want = [r["median_ms"] * 2 for r in lines(bench_file)]
    assert all(math.isclose(g, w) for g, w in zip(got, want))


def test_compare_is_the_command_lines_table(bench_file):
    table = dynsmem.compare(dynsmem.records(bench_file))
    assert {"family", "problem", "column", "figure", "ratio", "cell"} <= set(table.columns)
    _, text, _ = cli("compare", bench_file)
    # Every printed cell of the command line's table is a cell of the frame.
    shown = table[table["figure"].notna()]
    assert len(shown)
    for cell in shown["cell"]:
        assert cell in text, cell
    wide = dynsmem.compare(dynsmem.records(bench_file), wide=True)
    assert len(wide) == table[["family", "problem"]].drop_duplicates().shape[0]


def test_plot_writes_a_figure_per_family(bench_file, tmp_path):
    figs = dynsmem.plot(dynsmem.records(bench_file), tmp_path / "plots")
    assert {"reduce", "softmax", "transpose"} <= set(figs)
    for name in figs:
        png = tmp_path / "plots" / f"{name}.png"
        assert png.stat().st_size > 1000, png


def test_a_torn_last_line_is_skipped(bench_file, tmp_path):
    text = open(bench_file).read()
    torn = tmp_path / "torn.jsonl"
    torn.write_text(text + text.splitlines()[0][:40])
    with pytest.warns(UserWarning, match="torn"):
        df = dynsmem.records(torn)
    assert len(df) == len(lines(bench_file))
