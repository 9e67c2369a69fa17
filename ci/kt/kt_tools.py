"""Kernel Tuner 1.5.0's own tools on an export: simulation-mode tuning (brute force, through
tune_kernel and tune_cache, and two more strategies), its time accounting,
integration.store_results and create_device_targets, and the Kernel Tuner dashboard's cache
loader (its parsing lines, pinned below by commit, since the dashboard is not on PyPI)."""
import hashlib
import json
import random
import tempfile
from pathlib import Path

from common import REL, close, need, quiet

# KernelTuner/dashboard, ktdashboard/ktdashboard.py at this commit: KTdashboard.__init__'s parsing
# lines, copied below into dashboard_load without edits but for `self.` and the demo option.
DASHBOARD = "https://github.com/KernelTuner/dashboard/blob/6b714cbf7805f0a34b4e2697ae34153073b26cd8/ktdashboard/ktdashboard.py#L23-L83"
STRATEGIES = (  # (name, strategy_options): seeded below, bounded so CI stays short
    ("random_sample", {"fraction": 0.5}),
    ("genetic_algorithm", {"maxiter": 10, "popsize": 10}),
)


def restrictions(c, filtered):
    """The sweep's filter as a Kernel Tuner restriction (the form of KT's own
    util.infer_restrictions_from_cache): a config is allowed unless T4 metadata.filtered lists it."""
    from constraint import FunctionConstraint

    return [FunctionConstraint(lambda *values: ",".join(str(v) for v in values) not in filtered)]


def simulate(cache_path, c, filtered, objective=None, strategy="brute_force", options=None):
    """Kernel Tuner's tune_kernel in simulation mode over the cache, minimising `objective`
    (None: KT's default, "time" = the mean). Returns (results, env)."""
    import kernel_tuner
    import numpy as np

    obj = {} if objective is None else dict(objective=objective, objective_higher_is_better=False)
    tune_params = {k: c["tune_params"][k] for k in c["tune_params_keys"]}
    random.seed(1)
    np.random.seed(1)
    with quiet():
        return kernel_tuner.tune_kernel(
            c["kernel_name"], "", c["problem_size"], [], tune_params, cache=str(cache_path), simulation_mode=True,
            restrictions=restrictions(c, filtered), strategy=strategy, strategy_options=options, quiet=True,
            verbose=False, **obj)


def pick(c, config):
    return {k: config[k] for k in c["tune_params_keys"]}


def kt_brute_force(cache_path, c, filtered, objective=None):
    """KT's simulated brute force, via tune_kernel (the filtered configs as restrictions) and via
    tune_cache (which infers them), minimising `objective`. Returns (best params, best value,
    #errors, the simulation's clock in ms, results, env)."""
    import kernel_tuner

    key = objective or "time"
    before = hashlib.sha256(cache_path.read_bytes()).hexdigest()
    results, env = simulate(cache_path, c, filtered, objective)
    obj = {} if objective is None else dict(objective=objective, objective_higher_is_better=False)
    with quiet():
        _, env2 = kernel_tuner.tune_cache(str(cache_path), quiet=True, verbose=False, **obj)
    need(hashlib.sha256(cache_path.read_bytes()).hexdigest() == before, "KT rewrote the cache file in simulation mode")
    need(len(results) == len(c["cache"]), f"KT brute force visited {len(results)} of {len(c['cache'])} configs "
         f"(the restrictions leave exactly the cache's)")
    best, best2 = env["best_config"], env2["best_config"]
    need("__error__" not in best and isinstance(best.get(key), float), f"KT found no valid config for {key!r}: {best}")
    need(pick(c, best) == pick(c, best2) and best[key] == best2[key],
         f"tune_kernel and tune_cache disagree on the best {key!r}: {pick(c, best)} vs {pick(c, best2)}")
    return pick(c, best), best[key], sum("__error__" in r for r in results), env["simulated_time"], results, env


def time_accounting(c, t4, clock_ms):
    """KT's simulation clock (compile + verification + benchmark of every config, runners/simulation.py)
    against the same sums from the cache, and against the sweep's whole time in the T4 results.
    Returns a line for the report."""
    want = sum(e["compile_time"] + e["verification_time"] + e["benchmark_time"] for e in c["cache"].values())
    need(close(clock_ms, want, 1e-9), f"KT's simulated clock {clock_ms} ms != the cache's compile + verification + "
         f"benchmark times {want} ms")
    whole = sum(r["times"]["compilation"] + r["times"]["validation"] + r["times"]["benchmark"] + r["times"]["framework"]
                + r["times"]["search_algorithm"] for r in t4["results"])
    kernels = sum(sum(r["times"]["runtimes"]) for r in t4["results"])
    return (f"KT's simulated clock {clock_ms / 1e3:.4g} s (compile + verification + benchmark wall) of the sweep's "
            f"{whole / 1e3:.4g} s (the rest is framework time: inputs and references, which KT's user makes once); "
            f"the timed kernel runs alone {kernels / 1e3:.4g} s")


def other_strategies(cache_path, c, filtered, key, optimum):
    """Two more of Kernel Tuner's strategies over the cache; every config they return is one of
    the cache's, and none beats the brute force's optimum. Returns a line for the report."""
    out = []
    for name, options in STRATEGIES:
        results, env = simulate(cache_path, c, filtered, key, name, dict(options))
        need(results, f"KT {name} returned no results")
        for r in results:
            k = ",".join(str(r[p]) for p in c["tune_params_keys"])
            need(k in c["cache"], f"KT {name} returned config {k}, which the cache does not hold")
        best = env["best_config"]
        need("__error__" not in best and best[key] >= optimum * (1 - REL),
             f"KT {name} best {best.get(key)!r} beats the brute-force optimum {optimum!r}")
        out.append(f"{name} {len(results)} evals, best {best[key]:.6g} ({best[key] / optimum:.3f}x the optimum)")
    return "; ".join(out)


def store_results(c, results, env, key, want):
    """kernel_tuner.integration.store_results on the simulation's results, then
    create_device_targets from its file: both must name `want` (the best config) as the best."""
    from kernel_tuner import integration

    tune_params = {k: c["tune_params"][k] for k in c["tune_params_keys"]}
    with tempfile.TemporaryDirectory() as work, quiet():
        path, header = Path(work) / "results.json", Path(work) / "targets.h"
        integration.store_results(str(path), c["kernel_name"], "", tune_params, c["problem_size"], results, env,
                                  objective=key, objective_higher_is_better=False)
        integration.create_device_targets(str(header), str(path), objective=key, objective_higher_is_better=False)
        stored = json.loads(path.read_text())
        text = header.read_text()
    rows = stored["data"]
    need(rows, "store_results stored no result")
    top = min(rows, key=lambda r: r[key])["tunable_parameters"]
    need(top == want, f"store_results' best by {key} {top} != {want}")
    defines = {k: v for k, v in want.items() if f"#define {k} {v}" in text}
    need(defines == want, f"create_device_targets' header does not define the best config {want}:\n{text[:400]}")
    return f"store_results kept {len(rows)} top configs by {key}, create_device_targets defines the best"


def dashboard_load(cache_file):
    """The Kernel Tuner dashboard's loader (DASHBOARD above), its lines as they are; returns
    (rows kept, the data frame's columns)."""
    import pandas as pd

    # read in the cachefile
    cache_file_handle = open(cache_file, "r")
    filestr = cache_file_handle.read().strip()
    # if file was not properly closed, pretend it was properly closed
    if not filestr[-3:] == "}\n}":
        # remove the trailing comma if any, and append closing brackets
        if filestr[-1] == ",":
            filestr = filestr[:-1]
        filestr = filestr + "}\n}"

    cached_data = json.loads(filestr)
    kernel_name = cached_data["kernel_name"]  # noqa: F841
    device_name = cached_data["device_name"]  # noqa: F841
    if "objective" in cached_data:
        objective = cached_data["objective"]
    else:
        objective = "time"

    # get the performance data
    data = list(cached_data["cache"].values())
    data = [d for d in data if d[objective] != 1e20 and not isinstance(d[objective], str)]

    # use all data or just the first 1000 records in demo mode
    index = len(data)

    all_tune_param_keys = cached_data["tune_params_keys"]
    all_tune_params = dict()

    for key in all_tune_param_keys:
        values = cached_data["tune_params"][key]
        for row in data:
            if row[key] not in values:
                values = sorted(values + [row[key]])

        all_tune_params[key] = values

    # figure out which keys are interesting
    single_value_tune_param_keys = [key for key in all_tune_param_keys if len(all_tune_params[key]) == 1]
    tune_param_keys = [key for key in all_tune_param_keys if key not in single_value_tune_param_keys]
    scalar_value_keys = [key for key in data[0].keys() if not isinstance(data[0][key],list) and key not in single_value_tune_param_keys]
    output_keys = [key for key in scalar_value_keys if key not in tune_param_keys]
    float_keys = [key for key in output_keys if isinstance(data[0][key], float)]  # noqa: F841

    # Convert to a data frame
    data_df = pd.DataFrame(data[:index])[scalar_value_keys]

    # Replace all column that are objects by categorical
    for column, dtype in data_df.dtypes.items():
        if column in tune_param_keys and dtype == "object":
            data_df[column] = pd.Categorical(
                    data_df[column],
                    categories=all_tune_params[column],
                    ordered=True)
    cache_file_handle.close()
    return len(data), list(data_df.columns)


def dashboard(cache_path, c):
    """The dashboard loads the cache and keeps exactly its correct entries. A line for the report."""
    with quiet():
        kept, columns = dashboard_load(cache_path)
    correct = sum("__error__" not in e for e in c["cache"].values())
    need(kept == correct, f"the dashboard kept {kept} entries, the cache has {correct} correct ones")
    need("time" in columns, f"the dashboard's table has no time column: {columns}")
    return f"dashboard loader ({DASHBOARD.split('/blob/')[1][:12]}) keeps the {kept} correct entries"
