#!/usr/bin/env python3
"""Check dynsmem's Kernel Tuner exports with Kernel Tuner and autotuning_methodology themselves.

usage: python3 ci/kt/check_exports.py DIR [--no-experiment] [--keep]

DIR holds, per sweep NAME (the layout and every field: ci/kt/SPEC.md; any of them may be
committed xz-compressed as FILE.xz):
  NAME.t4.json           T4 results      NAME.t4-metadata.json  T4 metadata
  NAME.kt-cache.json     KT cache file
  NAME.best.json         {"objective": KEY, "params": {...}, "value": v}, KEY one of
                         time_median (ms), energy (J per run), edp (J*s), time (mean, ms)

Per sweep, with no GPU and no edit to the files:
- the files: both T4 files against Kernel Tuner's bundled T4 schemas and SPEC.md's rules; the
  cache's text equal to what Kernel Tuner's process_cache / store_cache / close_cache write for
  its content; its entries (time = mean(times), time_median = median(times), failures with
  __error__ and KT's error value 1e20, benchmark_time >= the timed runs) and the T4 file's;
- Kernel Tuner (kt_tools.py): simulation-mode brute force (tune_kernel, with the filtered
  configs as restrictions, and tune_cache) minimising KEY must name NAME.best.json's config;
  its simulated clock against the cache's times; random_sample and genetic_algorithm over the
  cache; integration.store_results and create_device_targets naming the best; the Kernel
  Tuner dashboard's loader (its lines, pinned by commit) keeping the correct entries; then
  KT's default objective "time" (the mean), reported beside KEY;
- autotuning_methodology (am_tools.py): SearchspaceStatistics with each of time, time_median
  and energy (where the sweep measured it), whose optimum must be the cache's; and (unless
  --no-experiment) a small full experiment (KT random_sample simulated on the cache) per key,
  where its arithmetic lets one be meaningful (experiment_plan), else the reason.
Prints per sweep an "ok"/"FAIL" line with what ran and "info" lines; exits 1 if any sweep
fails, 2 on a usage or install problem. Tested with kernel_tuner==1.5.0,
autotuning_methodology==1.1.0 (and pandas, which the dashboard's lines use).
"""
import itertools
import json
import lzma
import math
import shutil
import statistics
import sys
import tempfile
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import am_tools as am  # noqa: E402
import kt_tools as kt  # noqa: E402
from common import *  # noqa: E402,F401,F403 (constants and helpers shared with the tool modules)


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
             f"{where}: constraint-filtered configs must not be T4 results (list them in metadata.filtered; "
             "see SPEC.md: at zero cost they drive autotuning_methodology's median time, hence its cutoff time "
             "budget, to 0)")
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


HEADER_KEYS = ["device_name", "kernel_name", "problem_size", "tune_params_keys", "tune_params", "objective", "cache"]


def kt_text(c):
    """The text Kernel Tuner writes for the cache c (util.process_cache's header, store_cache's
    entries, close_cache's ending), from c's parsed content in its order."""
    header = {k: v for k, v in c.items() if k != "cache"}
    header["cache"] = {}
    text = json.dumps(header, indent="")[:-3]  # process_cache: except the last "}\n}"
    for key, entry in c["cache"].items():
        text += "\n" + json.dumps({key: entry})[1:-1] + ","  # store_cache
    return (text[:-1] if text.endswith(",") else text) + "}\n}"  # close_cache


def check_cache(path, name, objective):
    raw = path.read_text(encoding="utf-8")
    c = load_json(path)
    need(list(c) == HEADER_KEYS, f"{path.name}: top-level keys must be {HEADER_KEYS} in this order (process_cache's "
         f"header, `cache` last), got {list(c)}")
    kt = kt_text(c)
    if raw != kt:
        i = next((i for i, (a, b) in enumerate(zip(raw, kt)) if a != b), min(len(raw), len(kt)))
        raise CheckError(f"{path.name}: not the text Kernel Tuner writes for this content, first difference at char "
                         f"{i}: file {raw[max(0, i - 30):i + 30]!r}, KT {kt[max(0, i - 30):i + 30]!r}")
    for k, typ in (("device_name", str), ("kernel_name", str), ("problem_size", list), ("tune_params_keys", list),
                   ("tune_params", dict), ("objective", str), ("cache", dict)):
        need(isinstance(c.get(k), typ), f"{path.name}: top-level {k!r} must be a {typ.__name__}")
    need(all(isinstance(x, int) for x in c["problem_size"]), f"{path.name}: problem_size must be a list of ints")
    need(c["objective"] == "time", f"{path.name}: objective must be the string \"time\" (the dashboard indexes "
         f"entries with it; KT 1.5's own list [\"time\"] breaks it)")
    keys = c["tune_params_keys"]
    need(keys == list(c["tune_params"]), f"{path.name}: tune_params_keys {keys} must list tune_params' keys in "
         f"the file's order {list(c['tune_params'])} (KT's tune_cache takes tune_params as written)")
    product = [",".join(str(v) for v in p) for p in itertools.product(*(c["tune_params"][k] for k in keys))]
    extra = set(c["cache"]) - set(product)
    need(not extra, f"{path.name}: cache keys outside the tune_params product: {sorted(extra)[:3]}")
    order = [k for k in product if k in c["cache"]]
    need(list(c["cache"]) == order, f"{path.name}: entries must follow the tune_params product order")
    measured = {k for e in c["cache"].values() if "__error__" not in e for k in EXTRA_KEYS if k in e}
    for key, e in c["cache"].items():
        where = f"{path.name} cache[{key!r}]"
        need(all(k in e for k in keys) and ",".join(str(e[k]) for k in keys) == key,
             f"{where}: must hold its parameters, which must join (str, ',') to its key")
        for k in ("compile_time", "verification_time", "benchmark_time"):
            need(is_num(e.get(k)) and e[k] >= 0 and not str(e[k]).startswith("-"),
                 f"{where}: {k} (ms) must be a number >= 0, not -0.0 (KT's simulation charges it), got {e.get(k)!r}")
        named = sorted(k for k, v in e.items() if isinstance(v, str) and v in ERRORS)
        need(named in ([], ["__error__"]), f"{where}: an error name belongs in \"__error__\" only (store_results "
             f"orders the objective's values, a string among floats raises TypeError), found in {named}")
        err = e.get("__error__")
        if err is not None:
            need(err in ERRORS, f"{where}: __error__ {err!r} is not one of KT's error names {sorted(ERRORS)}")
            need("times" not in e, f"{where}: a failed entry has no runtimes")
            for k in sorted({"time", "time_median", objective} | measured):
                need(e.get(k) == KT_ERROR_VALUE, f"{where}: a failed entry's {k!r} must be {KT_ERROR_VALUE:g}, "
                     f"KT's error value (the dashboard drops it, AM counts it as no result; AM's experiment needs "
                     f"the objective on every result), got {e.get(k)!r}")
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
            need(e["benchmark_time"] >= sum(times) * (1 - REL), f"{where}: benchmark_time {e['benchmark_time']!r} "
                 f"is the benchmark's wall time (KT's meaning), so it holds the timed runs ({sum(times)!r} ms)")
    return c


def filtered_keys(t4, c):
    """The configs the sweep filtered before launch (T4 metadata.filtered), as cache keys."""
    keys = c["tune_params_keys"]
    return {",".join(str(f["configuration"][k]) for k in keys) for f in t4["metadata"].get("filtered", [])}


def cross_check(t4, c, name):
    keys = c["tune_params_keys"]
    t4_by_key = {}
    for r in t4["results"]:
        need(list(r["configuration"]) == keys or set(r["configuration"]) == set(keys),
             f"{name}: T4 configuration {r['configuration']} has other parameters than the cache's {keys}")
        k = ",".join(str(r["configuration"][p]) for p in keys)
        need(k not in t4_by_key, f"{name}.t4.json: config {k} listed twice")
        t4_by_key[k] = r
    need(set(t4_by_key) == set(c["cache"]), f"{name}: T4 results must be exactly the cache's entries "
         f"(T4 only: {sorted(set(t4_by_key) - set(c['cache']))[:3]}, cache only: "
         f"{sorted(set(c['cache']) - set(t4_by_key))[:3]})")
    filtered = filtered_keys(t4, c)
    product = {",".join(str(v) for v in p) for p in itertools.product(*(c["tune_params"][k] for k in keys))}
    need(not filtered & set(c["cache"]), f"{name}: configs both filtered and in the cache: {sorted(filtered & set(c['cache']))[:3]} "
         "(KT never stores what its restrictions exclude)")
    missing = product - filtered - set(c["cache"])
    need(not missing, f"{name}: {len(missing)} configs of the tune_params product neither ran nor were filtered "
         f"(e.g. {sorted(missing)[:3]}); KT's simulation needs every config its restrictions allow")
    for k, r in t4_by_key.items():
        e = c["cache"][k]
        want = ERRORS.get(e.get("__error__"), "correct")
        need(r["invalidity"] == want or (want == "runtime" and r["invalidity"] in ("runtime", "correctness", "timeout")),
             f"{name}: config {k}: T4 invalidity {r['invalidity']!r} but cache {e.get('__error__', 'valid')}")
        need(close(r["times"]["benchmark"], e["benchmark_time"]), f"{name}: config {k}: T4 times.benchmark "
             f"{r['times']['benchmark']} != cache benchmark_time {e['benchmark_time']}")
        if want == "correct":
            t = next(m["value"] for m in r["measurements"] if m["name"] == "time")
            need(t == e["time"], f"{name}: config {k}: T4 time {t} != cache time {e['time']}")
            for m in r["measurements"]:  # optional T4 extras must agree with the cache
                if m["name"] in EXTRA_KEYS and is_num(m["value"]):
                    need(is_num(e.get(m["name"])) and close(m["value"], e[m["name"]]),
                         f"{name}: config {k}: T4 measurement {m['name']} {m['value']} != cache "
                         f"{m['name']} {e.get(m['name'])!r}")
        else:
            names = {m["name"]: m["value"] for m in r["measurements"]}
            for key in ("time", "time_median") + tuple(x for x in EXTRA_KEYS if x in e):
                need(names.get(key) in ERRORS, f"{name}: config {k}: a failed T4 result needs the measurement "
                     f"{key!r} holding its error name (AM reads every objective key on every result), got "
                     f"{names.get(key)!r}")
    return filtered


# ------------------------------------------------------------------------------------- driver
def plain(d, fname, work):
    """A copy of d/fname in work, from d/fname.xz where only that is committed (large exports)."""
    src, out = d / fname, work / fname
    if src.is_file():
        shutil.copy(src, out)
    elif (d / f"{fname}.xz").is_file():
        out.write_bytes(lzma.decompress((d / f"{fname}.xz").read_bytes()))
    else:
        raise CheckError(f"{fname} is missing (nor {fname}.xz)")
    return out


def check_sweep(d, name, work, experiment):
    # Every file is read from a copy in `work` (an .xz one decompressed there): KT gets a copy of
    # the cache, since a non-simulation run would rewrite it.
    t4_path, meta_path, cache_path, best_path = (
        plain(d, f"{name}{suffix}", work) for suffix in (".t4.json", ".t4-metadata.json", ".kt-cache.json", ".best.json"))
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
    c = check_cache(cache_path, name, key)
    filtered = cross_check(t4, c, name)
    ours = ",".join(str(best["params"].get(k)) for k in c["tune_params_keys"])
    need(set(best["params"]) == set(c["tune_params_keys"]) and ours in c["cache"],
         f"{best_path.name} params {best['params']} are not a config of the cache {c['tune_params_keys']}")

    # the contract: KT's argmin of KEY is best.json's
    kt_params, kt_value, n_err, clock, results, env = kt.kt_brute_force(cache_path, c, filtered, key)
    if kt_params != best["params"]:
        ov = c["cache"][ours].get(key)
        tie = (f"; a TIE: best.json's config has the same {key} {ov!r}, and on ties KT keeps the first in "
               f"tune_params product order (tune_params_keys, values as listed)") if ov == kt_value else (
               f" (best.json's config has {key} {ov!r})")
        raise CheckError(f"KT brute force (objective={key!r}, minimised) best {kt_params} = {kt_value} {unit} != "
                         f"{best_path.name} params {best['params']}{tie}")
    need(close(best["value"], kt_value), f"{best_path.name} value {best['value']!r} != KT's best {key} {kt_value!r} "
         f"(rel diff {rel_diff(best['value'], kt_value):.3g} > {REL})")
    lines = [f"KT simulated brute force (restrictions: the {len(filtered)} filtered configs) and tune_cache, "
             f"objective={key}: best {kt_params} = {kt_value:.6g} {unit} = best.json",
             kt.time_accounting(c, t4, clock),
             "other strategies: " + kt.other_strategies(cache_path, c, filtered, key, kt_value),
             kt.store_results(c, results, env, key, kt_params),
             kt.dashboard(cache_path, c)]

    # KT's default objective, "time" = the mean: the same tools, reported (best.json is by KEY)
    mean_params, mean_time, _, _, mean_results, mean_env = (
        kt.kt_brute_force(cache_path, c, filtered) if key != "time" else (kt_params, kt_value, n_err, clock, results, env))
    lines.append(kt.store_results(c, mean_results, mean_env, "time", mean_params))
    info = (f"  info {name}: KT default objective \"time\" (mean) best {mean_params} = {mean_time:.6g} ms: "
            + ("same config as best.json" if mean_params == best["params"] else
               f"DIFFERS from best.json's {key} best (whose mean is {c['cache'][ours]['time']:.6g} ms); "
               "not a failure"))

    # AM: every objective key the correct entries carry
    correct = [e for e in c["cache"].values() if "__error__" not in e]
    am_keys = [k for k in ("time", "time_median", "energy") if all(k in e for e in correct)]
    stats = {k: am.am_statistics(t4_path, name, k, min(e[k] for e in correct)) for k in am_keys}
    st = stats["time"]
    lines.append(f"AM statistics (time keys {'+'.join(st['keys'])}) for " + ", ".join(
        f"{k} (optimum {v['opt']:.6g})" for k, v in stats.items()) + f": mean time/feval {st['per_feval']:.4g} s, "
        f"cutoff {st['cutoff_fevals']} fevals/{st['cutoff_s']:.3g} s, random-search baseline @10 fevals "
        f"{st['base10']:.6g} ms")
    if experiment:
        ok, plan = am.experiment_plan(t4, t4_path, st["keys"])
        time_keys = None
        if not ok:
            lines.append(f"experiment with AM's default time keys skipped: {plan}")
            ok, plan = am.experiment_plan(t4, t4_path, REPLAY_KEYS)
            time_keys = REPLAY_KEYS
        if ok:
            for k in am_keys:
                exp_dir = work / f"am-{k}"
                exp_dir.mkdir()
                budget = am.am_experiment(t4_path, cache_path, c, exp_dir, filtered, time_keys, key=k)
                lines.append(f"AM experiment, objective {k}, time keys {'+'.join(time_keys or st['keys'])} "
                             f"(KT random_sample x3, budget {budget}) ok")
            info += f"\n  info {name}: experiment plan: {plan}"
        else:
            lines.append(f"experiment with time keys {'+'.join(REPLAY_KEYS)} skipped too: {plan}")
    return (f"ok {name}: T4 results ({n_t4}) + metadata valid (KT schemas, SPEC rules); KT cache {len(c['cache'])} "
            f"configs ({n_err} failed), Kernel Tuner's layout byte for byte\n" + "\n".join(f"  {x}" for x in lines)
            + "\n" + info)


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
    names = sorted({p.name.split(".t4.json")[0] for p in d.glob("*.t4.json*")}) if d.is_dir() else []
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
