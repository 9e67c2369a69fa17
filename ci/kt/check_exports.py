#!/usr/bin/env python3
"""Check dynsmem's Kernel Tuner exports with Kernel Tuner and autotuning_methodology themselves.

usage: python3 ci/kt/check_exports.py DIR [--no-experiment] [--keep]

DIR holds, per sweep NAME (the layout and every field: ci/kt/SPEC.md):
  NAME.t4.json           T4 results      NAME.t4-metadata.json  T4 metadata
  NAME.kt-cache.json     KT cache file
  NAME.best.json         {"objective": KEY, "params": {...}, "value": v}, KEY one of
                         time_median (ms), energy (J per run), edp (J*s), time (mean, ms)

Per sweep it: validates both T4 files against Kernel Tuner's bundled T4 schemas and the
field rules of SPEC.md; checks the cache (every correct entry: time = mean(times),
time_median = median(times), KEY a float) and the cache against the T4 file; runs Kernel
Tuner's simulation-mode brute force (tune_kernel and tune_cache) over the cache, with no
GPU, with objective=KEY (minimised), and asserts KT's best config is NAME.best.json's
(value within 1e-9 relative); runs it again with KT's default objective "time" (the mean)
and only reports whether that best agrees (informational); builds
autotuning_methodology's SearchspaceStatistics with its default time keys and computes the
optimum, the mean time per function evaluation, the cutoff budget and the calculated
random-search baseline; and (unless --no-experiment) runs a small full
autotuning_methodology experiment (KT random_sample, simulated on the cache) in a temp dir,
when it can be meaningful (see experiment_plan: KT's replay must be able to spend AM's time
budget); otherwise it says "experiment skipped: <reason>" and runs it with the time keys that
KT's simulation replays instead, where that one can be meaningful.
Prints per sweep an "ok"/"FAIL" line and, on success, an "info" line (the mean-objective
best); exits 1 if any sweep fails, 2 on a usage or install problem.
Tested with kernel_tuner==1.5.0, autotuning_methodology==1.1.0.
"""
import contextlib
import hashlib
import io
import itertools
import json
import math
import shutil
import statistics
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

PINNED = {"kernel_tuner": "1.5.0", "autotuning_methodology": "1.1.0"}
ERRORS = {"InvalidConfig": "constraints", "CompilationFailedConfig": "compile", "RuntimeFailedConfig": "runtime"}
TIME_UNITS = {"seconds", "s", "milliseconds", "ms", "microseconds", "nanoseconds", "ns"}
REL = 1e-9
# NAME.best.json "objective": a float field of every correct KT-cache entry, minimised
OBJECTIVES = {"time_median": "ms", "energy": "J", "edp": "J*s", "time": "ms"}
EXTRA_KEYS = ("time_median", "energy", "edp")  # entry keys beyond KT's own "time"
# The T4 time keys that a KT 1.5 simulated run accrues per config: runners/simulation.py charges
# compile_time + verification_time + benchmark_time to its time limit, and overwrites
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


# ---------------------------------------------------------------------------------------- files
def check_t4_files(t4, meta, name):
    import jsonschema
    from kernel_tuner.file_utils import output_file_schema

    for doc, target, fname in ((t4, "results", f"{name}.t4.json"), (meta, "metadata", f"{name}.t4-metadata.json")):
        _, schema = output_file_schema(target)
        try:
            jsonschema.validate(doc, schema)
        except jsonschema.ValidationError as e:
            raise CheckError(f"{fname} fails KT's T4 {target} schema at {list(e.absolute_path)}: {e.message}") from None
        need(doc.get("schema_version") == "1.0.0", f"{fname}: schema_version must be \"1.0.0\"")

    # results: what autotuning_methodology reads
    unit = t4.get("metadata", {}).get("timeunit")
    need(unit in TIME_UNITS, f"{name}.t4.json: metadata.timeunit must be set (\"milliseconds\"); "
         f"autotuning_methodology assumes seconds without it (got {unit!r})")
    results = t4.get("results")
    need(isinstance(results, list) and results, f"{name}.t4.json: results must be a non-empty list")
    for i, r in enumerate(results):
        where = f"{name}.t4.json results[{i}] {r.get('configuration')}"
        need(r.get("invalidity") != "constraints",
             f"{where}: constraint-filtered configs must not be T4 results (list them in metadata.filtered and "
             "as InvalidConfig in the KT cache; see SPEC.md: at zero cost they drive autotuning_methodology's "
             "median time, hence its cutoff time budget, to 0)")
        need(r.get("objectives") == ["time"], f"{where}: objectives must be [\"time\"]")
        times = r["times"]
        for k in ("compilation", "framework", "search_algorithm", "validation"):
            need(is_num(times.get(k)) and times[k] >= 0, f"{where}: times.{k} must be a number >= 0 "
                 f"(autotuning_methodology's default time keys), got {times.get(k)!r}")
        rt = times.get("runtimes")
        need(isinstance(rt, list) and all(is_num(x) and x >= 0 for x in rt), f"{where}: times.runtimes must be a list of numbers")
        ms = r.get("measurements")
        need(isinstance(ms, list), f"{where}: measurements must be a list")
        tm = [m for m in ms if m.get("name") == "time"]
        need(len(tm) <= 1, f"{where}: more than one \"time\" measurement")
        if r["invalidity"] == "correct":
            need(r.get("correctness") == 1, f"{where}: correctness must be 1 for a correct config")
            need(rt, f"{where}: a correct config needs its runtimes")
            need(tm and is_num(tm[0]["value"]), f"{where}: a correct config needs a numeric \"time\" measurement")
            mean = statistics.fmean(rt)
            need(close(tm[0]["value"], mean), f"{where}: measurements.time must be the MEAN of times.runtimes "
                 f"(as KT's observers report), {tm[0]['value']} != {mean}")
        else:
            need(r.get("correctness") == 0, f"{where}: correctness must be 0 for an invalid config")
            need(not tm or tm[0]["value"] in ERRORS, f"{where}: an invalid config's \"time\" measurement, if any, "
                 f"must be an error name {sorted(ERRORS)}, got {tm[0]['value'] if tm else None!r}")

    # metadata: what Kernel Tuner's get_t4_metadata always writes
    md = meta.get("metadata")
    need(isinstance(md, dict), f"{name}.t4-metadata.json: metadata object missing")
    hw, env = md.get("hardware", {}), md.get("environment", {})
    need(isinstance(hw.get("hardware_description"), list) and hw["hardware_description"],
         f"{name}.t4-metadata.json: metadata.hardware.hardware_description must be a non-empty list")
    need(isinstance(env.get("device_query"), dict) and env["device_query"],
         f"{name}.t4-metadata.json: metadata.environment.device_query must be a non-empty object")
    need(isinstance(env.get("requirements"), list) and all(isinstance(x, str) for x in env["requirements"]),
         f"{name}.t4-metadata.json: metadata.environment.requirements must be a list of strings")
    return len(results)


def check_cache(path, name, objective):
    raw = path.read_text(encoding="utf-8").strip()
    # kernel_tuner.util.correct_open_cache appends "}\n}" to any file not ending so
    need(raw[-3:] in ("}\n}", "}}}"), f"{path.name}: must end with '}}\\n}}' or '}}}}}}' with \"cache\" as the "
         f"LAST top-level key (KT's correct_open_cache treats anything else as an unclosed cache); ends {raw[-20:]!r}")
    c = load_json(path)
    need(list(c)[-1:] == ["cache"], f"{path.name}: \"cache\" must be the last top-level key")
    for k, typ in (("device_name", str), ("kernel_name", str), ("problem_size", list), ("tune_params_keys", list),
                   ("tune_params", dict), ("objective", str), ("cache", dict)):
        need(isinstance(c.get(k), typ), f"{path.name}: top-level {k!r} must be a {typ.__name__}")
    need(all(isinstance(x, int) for x in c["problem_size"]), f"{path.name}: problem_size must be a list of ints")
    need(c["objective"] == "time", f"{path.name}: objective must be \"time\"")
    keys = c["tune_params_keys"]
    need(keys == list(c["tune_params"]), f"{path.name}: tune_params_keys {keys} must list tune_params' keys in "
         f"the file's order {list(c['tune_params'])} (KT's tune_cache takes tune_params as written)")
    product = [",".join(str(v) for v in p) for p in itertools.product(*(c["tune_params"][k] for k in keys))]
    missing = [k for k in product if k not in c["cache"]]
    need(not missing, f"{path.name}: {len(missing)} configs of the tune_params product are not in cache "
         f"(e.g. {missing[:3]}); simulation mode needs every one (filtered ones as InvalidConfig)")
    extra = set(c["cache"]) - set(product)
    need(not extra, f"{path.name}: cache keys outside the tune_params product: {sorted(extra)[:3]}")
    for key, e in c["cache"].items():
        where = f"{path.name} cache[{key!r}]"
        need(all(k in e for k in keys) and ",".join(str(e[k]) for k in keys) == key,
             f"{where}: must hold its parameters, which must join (str, ',') to its key")
        for k in ("compile_time", "verification_time", "benchmark_time"):
            need(is_num(e.get(k)), f"{where}: {k} (ms) must be a number (KT simulation with a time budget "
                 "and KT's T4 output both need it)")
        errs = {v for v in e.values() if isinstance(v, str) and v in ERRORS}
        need(len(errs) <= 1, f"{where}: more than one error name {errs}")
        if errs:
            err = e.get("__error__")
            need(err in ERRORS and e.get("time") == err,
                 f"{where}: an error entry needs \"__error__\" and \"time\" both set to its error name")
            for k in ("time_median", objective):
                need(e.get(k) == err, f"{where}: an error entry needs {k!r} set to its error name {err!r} "
                     f"(like \"time\"), got {e.get(k)!r}")
            for k in EXTRA_KEYS:
                need(e.get(k, err) == err, f"{where}: {k!r} of an error entry must be its error name {err!r}, "
                     f"got {e.get(k)!r}")
        else:
            times = e.get("times")
            need(isinstance(times, list) and times and all(is_num(x) for x in times),
                 f"{where}: a correct entry needs \"times\", a non-empty list of numbers, got {times!r}")
            for k in ("time", "time_median", objective):
                need(isinstance(e.get(k), float) and math.isfinite(e[k]),
                     f"{where}: {k!r} must be a finite float in every correct entry (KT's get_best_config "
                     f"ignores ints and strings), got {e.get(k)!r}")
            for k in EXTRA_KEYS:
                need(k not in e or (isinstance(e[k], float) and math.isfinite(e[k])),
                     f"{where}: {k!r}, where present on a correct entry, must be a finite float, got {e.get(k)!r}")
            mean, median = statistics.fmean(times), statistics.median(times)
            need(close(e["time"], mean), f"{where}: \"time\" {e['time']!r} must be the MEAN of \"times\" "
                 f"({mean!r}, KT's convention; rel diff {rel_diff(e['time'], mean):.3g} > {REL})")
            need(close(e["time_median"], median), f"{where}: \"time_median\" {e['time_median']!r} must be the "
                 f"MEDIAN of \"times\" ({median!r}, mean of the middle two for an even count; rel diff "
                 f"{rel_diff(e['time_median'], median):.3g} > {REL})")
    return c


def cross_check(t4, c, name):
    keys = c["tune_params_keys"]
    t4_by_key = {}
    for r in t4["results"]:
        need(list(r["configuration"]) == keys or set(r["configuration"]) == set(keys),
             f"{name}: T4 configuration {r['configuration']} has other parameters than the cache's {keys}")
        k = ",".join(str(r["configuration"][p]) for p in keys)
        need(k not in t4_by_key, f"{name}.t4.json: config {k} listed twice")
        t4_by_key[k] = r
    evaluated = {k for k, e in c["cache"].items() if e.get("__error__") != "InvalidConfig"}
    need(set(t4_by_key) == evaluated, f"{name}: T4 results must be exactly the cache's non-InvalidConfig entries "
         f"(T4 only: {sorted(set(t4_by_key) - evaluated)[:3]}, cache only: {sorted(evaluated - set(t4_by_key))[:3]})")
    for k, r in t4_by_key.items():
        e = c["cache"][k]
        want = ERRORS.get(e.get("__error__"), "correct")
        need(r["invalidity"] == want or (want == "runtime" and r["invalidity"] in ("runtime", "correctness", "timeout")),
             f"{name}: config {k}: T4 invalidity {r['invalidity']!r} but cache {e.get('__error__', 'valid')}")
        if want == "correct":
            t = next(m["value"] for m in r["measurements"] if m["name"] == "time")
            need(t == e["time"], f"{name}: config {k}: T4 time {t} != cache time {e['time']}")
            for m in r["measurements"]:  # optional T4 extras must agree with the cache
                if m["name"] in EXTRA_KEYS and is_num(m["value"]):
                    need(is_num(e.get(m["name"])) and close(m["value"], e[m["name"]]),
                         f"{name}: config {k}: T4 measurement {m['name']} {m['value']} != cache "
                         f"{m['name']} {e.get(m['name'])!r}")


# ------------------------------------------------------------------------------ Kernel Tuner
def kt_brute_force(cache_path, c, objective=None):
    """KT's simulated brute force, via tune_kernel and via tune_cache, minimising `objective`
    (None: KT's default, "time" = the mean). Returns (best params, best value, #errors)."""
    import kernel_tuner

    key = objective or "time"
    obj = {} if objective is None else dict(objective=objective, objective_higher_is_better=False)
    tune_params = {k: c["tune_params"][k] for k in c["tune_params_keys"]}
    before = hashlib.sha256(cache_path.read_bytes()).hexdigest()
    with quiet():
        results, env = kernel_tuner.tune_kernel(
            c["kernel_name"], "", c["problem_size"], [], tune_params, cache=str(cache_path),
            simulation_mode=True, strategy="brute_force", quiet=True, verbose=False, **obj)
        results2, env2 = kernel_tuner.tune_cache(str(cache_path), quiet=True, verbose=False, **obj)
    need(hashlib.sha256(cache_path.read_bytes()).hexdigest() == before, "KT rewrote the cache file in simulation mode")
    need(len(results) == len(c["cache"]), f"KT brute force visited {len(results)} of {len(c['cache'])} configs")
    best, best2 = env["best_config"], env2["best_config"]
    need("__error__" not in best and isinstance(best.get(key), float), f"KT found no valid config for {key!r}: {best}")
    pick = lambda b: {k: b[k] for k in c["tune_params_keys"]}
    need(pick(best) == pick(best2) and best[key] == best2[key],
         f"tune_kernel and tune_cache disagree on the best {key!r}: {pick(best)} vs {pick(best2)}")
    return pick(best), best[key], sum("__error__" in r for r in results)


# ------------------------------------------------------------------- autotuning_methodology
def am_statistics(t4_path, name, kt_best_time):
    """kt_best_time: KT's best mean ("time"), which is what AM's optimum over the T4 file is."""
    import numpy as np
    from autotuning_methodology.baseline import RandomSearchCalculatedBaseline
    from autotuning_methodology.searchspace_statistics import SearchspaceStatistics

    keys = default_time_keys()
    with quiet():
        s = SearchspaceStatistics(application_name=name, device_name="device", minimization=True,
                                  objective_time_keys=keys, objective_performance_keys=["time"],
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
    need(close(opt, kt_best_time), f"AM optimum from the T4 file {opt} != KT best mean time from the cache {kt_best_time}")
    need(math.isfinite(per_feval) and per_feval > 0, f"AM mean time per feval is {per_feval}")
    need(t_end > 0, f"AM cutoff time budget is {t_end} s (median total time per config is 0?)")
    need(np.all(np.isfinite(curve_f)) and np.all(np.isfinite(curve_t)), "AM random-search baseline has NaN")
    return dict(keys=keys, opt=opt, per_feval=per_feval, cutoff_fevals=f_end, cutoff_s=float(t_end),
                base10=float(curve_f[1]))


def experiment_plan(t4, t4_path, keys):
    """Whether a full AM experiment with objective_time_keys `keys` can be meaningful, by AM's
    and KT's own arithmetic; returns (ok, the numbers as text).

    AM runs KT random_sample (fraction 1.0: the time budget, not KT's default 10% sample, ends
    a run) with time_limit T = cutoff_fevals x median total time (over `keys`) x 1.1, and keeps
    only the results whose cumulative time (as the replay accrues it: REPLAY_KEYS, see
    there) lies in [t_start, T]; it needs >= 2 valid ones there (else "Could not find enough
    results ... in 20 attempts"). Criterion:
      (1) >= 2 correct configs;
      (2) replaying the whole space accrues >= T: a run can spend its budget (sampling without
          replacement, it cannot accrue more);
      (3) the window T - t_start holds >= 2 evaluations at the correct configs' median replay cost."""
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
    replay = [unit * (r["times"]["compilation"] + sum(r["times"]["runtimes"]) + r["times"]["validation"]) for r in res]
    full = [unit * sum(sum(v) if isinstance(v, list) else v for k, v in r["times"].items()
                       if k in default_time_keys()) for r in res]
    good = [x for x, r in zip(replay, res) if r["invalidity"] == "correct"]
    budget = t_end * (1 + CUTOFF_MARGIN)
    t_start = t_start if ss["cutoff_percentile_start"] > 0 else 0.0
    whole, med = sum(replay), (statistics.median(good) if good else math.inf)
    text = (f"time keys {'+'.join(keys)}: AM cutoff {f_start}->{f_end} fevals, window [{t_start:.4g}, {budget:.4g}] s; "
            f"KT's replay accrues {'+'.join(REPLAY_KEYS)}, median {med * 1e3:.4g} ms per correct config "
            f"({sum(replay) / max(sum(full), 1e-300):.1%} of the T4 total time), {whole:.4g} s for the whole space "
            f"(= {whole / budget:.1%} of the budget); {len(good)} correct configs")
    if not float(f_end).is_integer():
        text += (f"; NOTE AM 1.1.0 cutoff_point_fevals_time_start_end took the cutoff end from cutoff_point(1.0)[0], "
                 f"the optimum's value {f_end:.6g}, not its fevals (it does when end - start < 2)")
    why = ([f"{len(good)} < 2 correct configs"] if len(good) < 2 else []) + (
        [f"replaying the whole space accrues {whole:.4g} s < budget {budget:.4g} s: the random search runs out of "
         f"configs at {whole / budget:.1%} of the budget"] if whole < budget else []) + (
        [f"window {budget - t_start:.4g} s < 2 x median replay cost {med:.4g} s"] if budget - t_start < 2 * med else [])
    return not why, "; ".join(why + [text]) if why else text


def am_experiment(t4_path, cache_path, c, work, time_keys=None, repeats=3):
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
                                                      for k in c["tune_params_keys"]], "Conditions": []},
          "KernelSpecification": {"Language": "CUDA", "KernelName": c["kernel_name"], "KernelFile": str(work / "kernel.cu"),
                                  "ProblemSize": c["problem_size"], "GlobalSize": {"X": "1"}, "LocalSize": {"X": "1"},
                                  "Arguments": []}}
    need(all(isinstance(v, int) and not isinstance(v, bool) for vs in c["tune_params"].values() for v in vs),
         "the AM experiment check handles int tune_params only")
    (work / "t1.json").write_text(json.dumps(t1))
    defaults = json.loads((Path(autotuning_methodology.__file__).parent / "experiments_defaults.json").read_text())
    exp = {"version": "1.2.0", "name": "dynsmem-kt-check", "parent_folder": str(work),
           "experimental_groups_defaults": {
               "applications": [{"name": app, "folder": str(work), "input_file": "t1.json", "objective_performance_keys": ["time"]}],
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


# ------------------------------------------------------------------------------------- driver
def check_sweep(d, name, work, experiment):
    t4_path, meta_path = d / f"{name}.t4.json", d / f"{name}.t4-metadata.json"
    cache_src, best_path = d / f"{name}.kt-cache.json", d / f"{name}.best.json"
    t4, meta = load_json(t4_path), load_json(meta_path)
    best = load_json(best_path)
    shape = (f"{best_path.name} must be {{\"objective\": KEY, \"params\": {{...}}, \"value\": number}} "
             f"with KEY one of {sorted(OBJECTIVES)}")
    need(isinstance(best, dict) and set(best) == {"objective", "params", "value"}, f"{shape}; has keys "
         f"{sorted(best) if isinstance(best, dict) else type(best).__name__}")
    need(best["objective"] in OBJECTIVES, f"{shape}; objective is {best['objective']!r}")
    need(isinstance(best["params"], dict) and is_num(best["value"]), shape)
    key, unit = best["objective"], OBJECTIVES[best["objective"]]
    n_t4 = check_t4_files(t4, meta, name)
    need(cache_src.is_file(), f"{cache_src.name} is missing")
    cache_path = work / cache_src.name  # KT gets a copy: a non-simulation run would rewrite it
    shutil.copy(cache_src, cache_path)
    c = check_cache(cache_path, name, key)
    cross_check(t4, c, name)
    ours = ",".join(str(best["params"].get(k)) for k in c["tune_params_keys"])
    need(set(best["params"]) == set(c["tune_params_keys"]) and ours in c["cache"],
         f"{best_path.name} params {best['params']} are not a config of the cache {c['tune_params_keys']}")

    # the contract: KT's argmin of KEY is best.json's
    kt_params, kt_value, n_err = kt_brute_force(cache_path, c, key)
    if kt_params != best["params"]:
        ov = c["cache"][ours].get(key)
        tie = (f"; a TIE: best.json's config has the same {key} {ov!r}, and on ties KT keeps the first in "
               f"tune_params product order (tune_params_keys, values as listed)") if ov == kt_value else (
               f" (best.json's config has {key} {ov!r})")
        raise CheckError(f"KT brute force (objective={key!r}, minimised) best {kt_params} = {kt_value} {unit} != "
                         f"{best_path.name} params {best['params']}{tie}")
    need(close(best["value"], kt_value), f"{best_path.name} value {best['value']!r} != KT's best {key} {kt_value!r} "
         f"(rel diff {rel_diff(best['value'], kt_value):.3g} > {REL})")

    # informational: KT's default objective, "time" = the mean
    mean_params, mean_time, _ = kt_brute_force(cache_path, c) if key != "time" else (kt_params, kt_value, n_err)
    info = (f"  info {name}: KT default objective \"time\" (mean) best {mean_params} = {mean_time:.6g} ms: "
            + ("same config as best.json" if mean_params == best["params"] else
               f"DIFFERS from best.json's {key} best (whose mean is {c['cache'][ours]['time']:.6g} ms); "
               "not a failure"))

    st = am_statistics(t4_path, name, mean_time)
    msg = (f"ok {name}: T4 results ({n_t4}) + metadata valid (KT schemas, SPEC rules); KT cache "
           f"{len(c['cache'])} configs ({n_err} errors; time=mean, time_median=median of times), simulated brute "
           f"force objective={key} best {kt_params} = {kt_value:.6g} {unit} = best.json; AM stats (time keys "
           f"{'+'.join(st['keys'])}): optimum (mean) "
           f"{st['opt']:.6g} ms, mean time/feval {st['per_feval']:.4g} s, cutoff {st['cutoff_fevals']} fevals/"
           f"{st['cutoff_s']:.3g} s, random-search baseline @10 fevals {st['base10']:.6g} ms")
    if experiment:
        ok, plan = experiment_plan(t4, t4_path, st["keys"])
        if ok:
            exp_dir = work / "am"
            exp_dir.mkdir()
            msg += (f"; AM experiment (objective time, KT random_sample x3, budget "
                    f"{am_experiment(t4_path, cache_path, c, exp_dir)}) ok\n  info {name}: experiment plan: {plan}")
        else:
            msg += f"\n  experiment skipped: {plan}"
            ok2, plan2 = experiment_plan(t4, t4_path, REPLAY_KEYS)
            if ok2:
                exp_dir = work / "am-replay-keys"
                exp_dir.mkdir()
                msg += (f"\n  instead, AM experiment with time keys {'+'.join(REPLAY_KEYS)} (what KT's simulation "
                        f"replays; objective time, KT random_sample x3, budget "
                        f"{am_experiment(t4_path, cache_path, c, exp_dir, REPLAY_KEYS)}) ok: {plan2}")
            else:
                msg += f"\n  experiment with time keys {'+'.join(REPLAY_KEYS)} skipped too: {plan2}"
    return msg + "\n" + info


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    flags = {a for a in argv if a.startswith("--")}
    unknown = flags - {"--no-experiment", "--keep", "--help", "-h"}
    if len(args) != 1 or unknown or flags & {"--help", "-h"}:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    d = Path(args[0])
    try:
        import autotuning_methodology  # noqa: F401
        import jsonschema  # noqa: F401
        import kernel_tuner
        from importlib.metadata import version
    except ImportError as e:
        print(f"FAIL: {e}; install with: pip install kernel_tuner==1.5.0 autotuning_methodology==1.1.0", file=sys.stderr)
        return 2
    vers = {p: version(p) for p in PINNED}
    off = {p: v for p, v in vers.items() if v != PINNED[p]}
    print(f"kernel_tuner {vers['kernel_tuner']}, autotuning_methodology {vers['autotuning_methodology']}"
          + (f" (NOTE: tested with {PINNED})" if off else ""))
    names = sorted(p.name[: -len(".t4.json")] for p in d.glob("*.t4.json")) if d.is_dir() else []
    if not names:
        print(f"FAIL: no NAME.t4.json in {d}", file=sys.stderr)
        return 2
    failed = 0
    for name in names:
        work = Path(tempfile.mkdtemp(prefix="ktcheck-"))
        try:
            print(check_sweep(d, name, work, "--no-experiment" not in flags), flush=True)
        except CheckError as e:
            failed += 1
            print(f"FAIL {name}: {e}", flush=True)
        except Exception:  # a bug here, or a library's, rather than a bad export
            failed += 1
            print(f"FAIL {name}: unexpected error\n{traceback.format_exc()}", flush=True)
        finally:
            if "--keep" in flags:
                print(f"  (kept {work})")
            else:
                shutil.rmtree(work, ignore_errors=True)
    print(f"{len(names) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
