"""Shared by the Kernel Tuner export checks (ci/kt/check_exports.py and its tool modules):
constants, the failure type and small helpers."""
import contextlib
import io
import json
import math
import warnings
from pathlib import Path

PINNED = {"kernel_tuner": "1.5.0", "autotuning_methodology": "1.1.0"}
ERRORS = {"InvalidConfig": "constraints", "CompilationFailedConfig": "compile", "RuntimeFailedConfig": "runtime"}
TIME_UNITS = {"seconds", "s", "milliseconds", "ms", "microseconds", "nanoseconds", "ns"}
REL = 1e-9
KT_ERROR_VALUE = 1e20  # a failed config's objective values: AM's kernel_tuner_error_value, the dashboard's filter
# NAME.best.json "objective": a float field of every correct KT-cache entry, minimised
OBJECTIVES = {"time_median": "ms", "energy": "J", "edp": "J*s", "time": "ms"}
EXTRA_KEYS = ("time_median", "energy", "edp")  # entry keys beyond KT's own "time"
# The AM time keys nearest to what a KT 1.5 simulated run accrues per config: runners/simulation.py
# charges compile_time + verification_time + benchmark_time (the benchmark's wall time, which AM
# has no key for: "runtimes" is the timed runs within it) to its time limit, and overwrites
# framework_time and strategy_time with its own (sub-ms) simulation overhead; AM's
# cumulative_time_taken then sums compilation + runtimes + framework + search_algorithm + validation.
REPLAY_KEYS = ["compilation", "runtimes", "validation"]
CUTOFF_MARGIN = 0.1  # AM experiments.calculate_budget: group.get("cutoff_margin", 0.1)


class CheckError(Exception):
    pass


def need(cond, msg):
    if not cond:
        raise CheckError(msg)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def close(a, b, rel=REL):
    return math.isclose(a, b, rel_tol=rel, abs_tol=0.0)


def rel_diff(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def load_json(path):
    need(path.is_file(), f"{path.name} is missing")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise CheckError(f"{path.name} is not JSON: {e}") from None


@contextlib.contextmanager
def quiet():
    """Silence the libraries' prints, progress bars and warnings; keep the text for errors."""
    buf = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        warnings.simplefilter("ignore")
        try:
            yield buf
        except CheckError:
            raise
        except Exception as e:
            tail = buf.getvalue().strip().splitlines()[-5:]
            raise CheckError(f"{type(e).__name__}: {e}" + (f" [output: {' | '.join(tail)}]" if tail else "")) from e


def am_statistics_settings():
    import autotuning_methodology

    path = Path(autotuning_methodology.__file__).parent / "experiments_defaults.json"
    return json.loads(path.read_text(encoding="utf-8"))["statistics_settings"]


def default_time_keys():
    """autotuning_methodology's default objective_time_keys: "all" expanded from its experiments schema."""
    from autotuning_methodology.validators import get_experiment_schema_filepath

    schema = json.loads(get_experiment_schema_filepath().read_text(encoding="utf-8"))
    enum = schema["properties"]["statistics_settings"]["properties"]["objective_time_keys"]["items"]["enum"]
    return [k for k in enum if k != "all"]


