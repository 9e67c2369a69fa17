"""A researcher's own families from Python: examples/own-kernel's module (`own_kernel_native`,
made with `dynsmem_python::init`), through this package. CI installs it
(DYNSMEM_REQUIRE_USER_MODULE=1 there: missing, these tests fail instead of skipping).

The planted sweep: 12 configs of the moving average, one writing 16 GiB past its output and one
never leaving a barrier, swept from Python. The caller (this process) must survive both, the
cache must hold both as failed with their reasons and the other 10 as verified."""

import importlib
import os

import pytest

import dynsmem


@pytest.fixture
def own():
    try:
        module = importlib.import_module("own_kernel_native")
    except ImportError:
        if os.environ.get("DYNSMEM_REQUIRE_USER_MODULE"):
            raise
        pytest.skip("SKIPPED: own_kernel_native is not installed (pip install examples/own-kernel/python)")
    before = dynsmem.native()
    dynsmem.use_native(module)
    yield module
    dynsmem.use_native(before)


def test_the_users_families_are_the_registry(own):
    assert dynsmem.families() == ["window_mean", "chunk_sums", "box_filter", "planted_faults"]
    rec = dynsmem.run("window_mean", config={"block": 64, "per_thread": 2}, backend="cpu", n=5003, window=7,
                      repeats=2, warmup=0, warmup_ms=0, energy_ms=0)
    assert rec["verified"] and rec["family"] == "window_mean"
    assert rec["problem"] == {"n": 5003, "window": 7}


def test_a_refusal_of_the_users_kernel(own):
    with pytest.raises(dynsmem.DynsmemError, match="window_mean"):
        dynsmem.run("window_mean", config={"block": 0, "per_thread": 2}, backend="cpu", n=5003, window=7)


FAR, HANG = {"block": 64, "per_thread": 4}, {"block": 128, "per_thread": 2}


def test_a_sweep_survives_a_fault_and_a_hang(own, tmp_path, capfd):
    entries = dynsmem.tune("planted_faults", cache=tmp_path / "planted.jsonl", backend="cpu", repeats=1, warmup=0,
                           warmup_ms=0, confirm_top=0, config_timeout=5, quiet=True)
    report = capfd.readouterr().out
    params = [e["tune"]["params"] for e in entries]
    assert len(params) == 12 and len({tuple(sorted(p.items())) for p in params}) == 12, params
    for e in entries:
        p, err = e["tune"]["params"], e.get("error") or ""
        if p == FAR:
            assert "outside the buffer" in err, err
        elif p == HANG:
            assert "did not finish within" in err and "killed" in err, err
        else:
            assert not err and e["verified"] and e["median_ms"] is not None, (p, err)
    assert "supervisor: block=128 per_thread=2 ran past" in report, report
