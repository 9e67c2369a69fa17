"""autotuning_methodology (AM 1.1.0) on an export: search-space statistics per objective key,
and a full experiment (KT random_sample simulated on the cache) where one can be meaningful."""
import json
import math
import shutil
import statistics
from pathlib import Path

from common import CUTOFF_MARGIN, REPLAY_KEYS, am_statistics_settings, close, default_time_keys, need, quiet

def am_statistics(t4_path, name, key, optimum):
    """AM's SearchspaceStatistics over the T4 file with performance key `key` (time = the mean,
    time_median, energy) and its default time keys; its optimum must be `optimum`, the least
    `key` of the cache's correct entries (failed results carry the error name, which AM skips)."""
    import numpy as np
    from autotuning_methodology.baseline import RandomSearchCalculatedBaseline
    from autotuning_methodology.searchspace_statistics import SearchspaceStatistics

    keys = default_time_keys()
    with quiet():
        s = SearchspaceStatistics(application_name=name, device_name="device", minimization=True,
                                  objective_time_keys=keys, objective_performance_keys=[key],
                                  full_search_space_file_path=t4_path, full_validate=True)
        opt = float(s.total_performance_absolute_optimum())
        per_feval = float(s.get_time_per_feval("mean_per_feval"))
        ss = am_statistics_settings()
        f_start, f_end, t_start, t_end = s.cutoff_point_fevals_time_start_end(ss["cutoff_percentile_start"],
                                                                              ss["cutoff_percentile"])
        base = RandomSearchCalculatedBaseline(s)  # time_per_feval_operator="mean_per_feval"
        fevals = np.array([1, 10, 100])
        curve_f = base.get_curve_over_fevals(fevals)
        curve_t = base.get_curve_over_time(np.array([t_end / 2, t_end]))
    need(close(opt, optimum), f"AM optimum of {key} from the T4 file {opt} != the cache's least {key} {optimum}")
    need(math.isfinite(per_feval) and per_feval > 0, f"AM mean time per feval is {per_feval}")
    need(t_end > 0, f"AM cutoff time budget is {t_end} s (median total time per config is 0?)")
    need(np.all(np.isfinite(curve_f)) and np.all(np.isfinite(curve_t)), "AM random-search baseline has NaN")
    return dict(keys=keys, opt=opt, per_feval=per_feval, cutoff_fevals=f_end, cutoff_s=float(t_end),
                base10=float(curve_f[1]))


def experiment_plan(t4, t4_path, keys):
    """Whether a full AM experiment with objective_time_keys `keys` can be meaningful, by AM's
    and KT's own arithmetic; returns (ok, the numbers as text).

    AM runs KT random_sample (fraction 1.0: the time budget, not KT's default 10% sample, ends
    a run) with time_limit T = cutoff_fevals x median total time (over `keys`) x 1.1. KT's
    simulation charges each config q = compile + verification + benchmark (the benchmark's
    wall time: warm-up, timed runs, observer windows) against T. AM then counts each returned
    result a = compilation + runtimes + validation (the framework and strategy times of a
    simulated result are KT's own, near 0) and keeps those whose cumulative a lies in
    [t_start, T]; it needs >= 2 valid ones there (else "Could not find enough results ... in 20
    attempts"). When the stop comes, AM's clock stands near T x rho, rho = sum(a) / sum(q).
    Criterion:
      (1) >= 2 correct configs;
      (2) KT charges >= T for the whole space: a run can spend its budget;
      (3) T x rho - t_start holds >= 2 results at the mean a."""
    from autotuning_methodology.searchspace_statistics import SearchspaceStatistics

    ss = am_statistics_settings()
    with quiet():
        s = SearchspaceStatistics(application_name="plan", device_name="device", minimization=True,
                                  objective_time_keys=keys, objective_performance_keys=["time"],
                                  full_search_space_file_path=t4_path, full_validate=False)
        f_start, f_end, t_start, t_end = s.cutoff_point_fevals_time_start_end(ss["cutoff_percentile_start"],
                                                                              ss["cutoff_percentile"])
    unit = {"ms": 1e-3, "milliseconds": 1e-3, "microseconds": 1e-6, "ns": 1e-9, "nanoseconds": 1e-9}.get(
        t4["metadata"]["timeunit"], 1.0)
    res = t4["results"]
    charged = [unit * (r["times"]["compilation"] + r["times"]["benchmark"] + r["times"]["validation"]) for r in res]
    counted = [unit * (r["times"]["compilation"] + sum(r["times"]["runtimes"]) + r["times"]["validation"]) for r in res]
    good = sum(r["invalidity"] == "correct" for r in res)
    budget = t_end * (1 + CUTOFF_MARGIN)
    t_start = t_start if ss["cutoff_percentile_start"] > 0 else 0.0
    whole = sum(charged)
    rho = sum(counted) / max(whole, 1e-300)
    mean_a = statistics.fmean(counted) if counted else math.inf
    reach = budget * rho
    text = (f"time keys {'+'.join(keys)}: AM cutoff {f_start}->{f_end} fevals, window [{t_start:.4g}, {budget:.4g}] s; "
            f"KT charges compilation+benchmark+validation ({whole:.4g} s for the whole space, "
            f"{whole / budget:.1%} of the budget), AM counts compilation+runtimes+validation ({rho:.1%} of it): "
            f"at KT's stop AM's clock stands near {reach:.4g} s, {mean_a * 1e3:.4g} ms per result; {good} correct configs")
    if not float(f_end).is_integer():
        text += (f"; NOTE AM 1.1.0 cutoff_point_fevals_time_start_end took the cutoff end from cutoff_point(1.0)[0], "
                 f"the optimum's value {f_end:.6g}, not its fevals (it does when end - start < 2)")
    why = ([f"{good} < 2 correct configs"] if good < 2 else []) + (
        [f"KT charges {whole:.4g} s for the whole space < budget {budget:.4g} s: the random search runs out of "
         f"configs first"] if whole < budget else []) + (
        [f"AM's clock reaches {reach:.4g} s when KT's budget is spent, which leaves no 2 results in its window from "
         f"{t_start:.4g} s (KT charges the benchmark's wall time, AM counts only the runtimes within it)"]
        if reach - t_start < 2 * mean_a else [])
    return not why, "; ".join(why + [text]) if why else text


def condition(c, filtered):
    """The sweep's filter as a T1 condition (a Kernel Tuner restriction string): the configs T4
    metadata.filtered lists are excluded. None when nothing was filtered."""
    if not filtered:
        return None
    keys = c["tune_params_keys"]
    points = sorted(tuple(int(v) for v in k.split(",")) for k in filtered)
    lhs = f"({', '.join(keys)},)"
    return {"Parameters": keys, "Expression": f"{lhs} not in {{{', '.join(repr(p) for p in points)}}}"}


def am_experiment(t4_path, cache_path, c, work, filtered, time_keys=None, repeats=3, key="time"):
    """A full autotuning_methodology experiment: KT random_sample simulated on our cache,
    with our T4 file as the full search space. AM finds the KT cache by deleting "_T4" from
    the T4 path, hence the copies named APP_GPU_T4.json / APP_GPU.json."""
    import autotuning_methodology
    from autotuning_methodology.experiments import execute_experiment

    need("_T4" not in str(work), f"temp dir {work} contains '_T4', which AM would strip")
    app, gpu = "app", "gpu"
    shutil.copy(t4_path, work / f"{app}_{gpu}_T4.json")
    shutil.copy(cache_path, work / f"{app}_{gpu}.json")
    (work / "kernel.cu").write_text(f"__global__ void {c['kernel_name']}() {{}}\n")  # never compiled
    t1 = {"General": {"FormatVersion": 1, "OutputFormat": "JSON", "TimeUnit": "Milliseconds"},
          "ConfigurationSpace": {"TuningParameters": [{"Name": k, "Type": "int", "Values": json.dumps(c["tune_params"][k])}
                                                      for k in c["tune_params_keys"]],
                                 "Conditions": [x for x in [condition(c, filtered)] if x]},
          "KernelSpecification": {"Language": "CUDA", "KernelName": c["kernel_name"], "KernelFile": str(work / "kernel.cu"),
                                  "ProblemSize": c["problem_size"], "GlobalSize": {"X": "1"}, "LocalSize": {"X": "1"},
                                  "Arguments": []}}
    need(all(isinstance(v, int) and not isinstance(v, bool) for vs in c["tune_params"].values() for v in vs),
         "the AM experiment check handles int tune_params only")
    (work / "t1.json").write_text(json.dumps(t1))
    defaults = json.loads((Path(autotuning_methodology.__file__).parent / "experiments_defaults.json").read_text())
    exp = {"version": "1.2.0", "name": "dynsmem-kt-check", "parent_folder": str(work),
           "experimental_groups_defaults": {
               "applications": [{"name": app, "folder": str(work), "input_file": "t1.json", "objective_performance_keys": [key],
                               "minimization": True}],
               "gpus": [gpu], "pattern_for_full_search_space_filenames": {"regex": str(work / "${applications}_${gpus}_T4.json")},
               "stochastic": True, "repeats": repeats, "samples": 1, "minimum_fraction_of_budget_valid": 0.1,
               "minimum_number_of_valid_search_iterations": 2, "ignore_cache": True},
           "search_strategies": [{"name": "random_sample", "search_method": "random_sample", "display_name": "Random",
                                  "autotuner": "KernelTuner",
                                  # KT's default fraction 0.1 would end each run after 10% of the space,
                                  # whatever the time budget (AM passes only time_limit)
                                  "search_method_hyperparameters": [{"name": "fraction", "value": 1.0}]}],
           "statistics_settings": dict(defaults["statistics_settings"]),  # cutoff_type "time", time keys ["all"]
           "visualization_settings": defaults["visualization_settings"]}
    if time_keys is not None:
        exp["statistics_settings"]["objective_time_keys"] = time_keys
    (work / "experiment.json").write_text(json.dumps(exp, indent=1))
    with quiet():
        _, groups, _, rds = execute_experiment(str(work / "experiment.json"))
    rd = rds[gpu][app]["random_sample"]
    need(rd.has_results(), "AM experiment produced no results")
    budget = groups[0]["budget"]
    return f"{budget.get('time_limit', 0):.3g} s" if "time_limit" in budget else f"{budget['max_fevals']} fevals"


