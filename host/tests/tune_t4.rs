//! The tuner's T4 export validates against Kernel Tuner's published T4 results schema
//! (`tests/data/t4-results-schema.json`, a copy of
//! `kernel_tuner/schema/T4/1.0.0/results-schema.json`; `tests/data/README.md` names its
//! commit), checked with the `jsonschema` crate (draft 2020-12, as the schema declares).
//! The validator is shown to reject documents that break the schema, so a pass means
//! something.

use std::path::Path;

use dynsmem_host::families::reduce::REDUCE;
use dynsmem_host::family::DynFamily;
use dynsmem_host::report::parse_jsonl_as;
use dynsmem_host::rng::SplitMix64;
use dynsmem_host::tune::{Budget, CacheEntry, ErasedTunable, ReplayRunner, SearchSpace, Strategy, TuneCache, t4};
use serde_json::{Value, json};

const SCHEMA: &str = include_str!("data/t4-results-schema.json");
/// A sweep with filtered configs (static arrays over lavapipe's 32 KB) and pipeline
/// creation times.
const CACHE: &str = include_str!("data/tune-reduce-lavapipe.jsonl");

/// The T4 document of a replayed annealing search over the committed lavapipe sweep,
/// plus one evaluation of a config the cache does not hold.
fn document() -> (Value, SearchSpace) {
    let path = Path::new("tune-reduce-lavapipe.jsonl");
    let (entries, _) = parse_jsonl_as::<CacheEntry>(CACHE.as_bytes(), path).unwrap();
    let cache = TuneCache::from_entries(path, entries);
    let (group, target, _) = cache.groups().into_iter().next().unwrap();
    let problem: Value = serde_json::from_str(&group.problem).unwrap();
    let tunable = ErasedTunable::new(REDUCE.tunable(&problem).unwrap().expect("reduce has a space"));
    let space = SearchSpace::build(&tunable, &target, &cache.group_values(&group)).unwrap();
    assert!(!space.filtered.is_empty(), "the sweep has filtered configs to export");
    let mut runner = ReplayRunner::new(&cache, &group);
    let r = Strategy::Anneal.search(&space, &mut runner, Budget::evaluations(30), &mut SplitMix64::new(3));
    let mut evaluations = r.evaluations;
    // A replay of a config the cache lacks (an empty cache for that group): nothing
    // measured, exported with its error.
    let empty = TuneCache::from_entries(path, Vec::new());
    let mut missing = ReplayRunner::new(&empty, &group);
    evaluations.push(dynsmem_host::tune::Runner::evaluate(&mut missing, &space, 0).unwrap());
    let meta = t4::Metadata { family: "reduce".into(), strategy: "anneal".into(), ..Default::default() };
    (t4::export(&space, &evaluations, &meta), space)
}

fn validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc).map(|e| format!("{} at {}", e, e.instance_path())).collect()
}

#[test]
fn t4_export_validates_against_kernel_tuners_schema() {
    let (doc, space) = document();
    let v = validator();
    let errs = errors(&v, &doc);
    assert!(errs.is_empty(), "{errs:#?}");

    // And carries what Kernel Tuner's own writer (file_utils.get_t4_results) puts there.
    assert_eq!(doc["schema_version"], "1.0.0");
    assert_eq!(doc["metadata"]["timeunit"], "milliseconds");
    let results = doc["results"].as_array().unwrap();
    // The evaluated configs are results; the filtered ones are listed in the metadata (Kernel
    // Tuner never evaluates what its restrictions exclude).
    assert_eq!(results.len(), 30 + 1);
    for r in results {
        let config = r["configuration"].as_object().unwrap();
        assert_eq!(config.len(), space.params.len(), "{r}");
        assert_eq!(r["objectives"], json!(["time"]));
        assert!(r["times"]["runtimes"].is_array());
        // autotuning_methodology's default time keys, numbers on every result.
        for k in ["compilation", "framework", "search_algorithm", "validation"] {
            assert!(r["times"][k].as_f64().is_some_and(|v| v >= 0.0), "{k} in {r}");
        }
    }
    let correct: Vec<&Value> = results.iter().filter(|r| r["invalidity"] == "correct").collect();
    assert_eq!(correct.len(), 30, "every replayed config verified");
    for r in &correct {
        assert_eq!(r["correctness"], 1);
        let runtimes = r["times"]["runtimes"].as_array().unwrap();
        assert_eq!(runtimes.len(), 5, "the sweep's 5 raw times per config");
        let m = |name: &str| r["measurements"].as_array().unwrap().iter().find(|m| m["name"] == name).unwrap().clone();
        let time = m("time");
        assert_eq!(time["unit"], "ms");
        // Kernel Tuner's `time` is the mean of the runtimes; our median is beside it.
        let rt: Vec<f64> = runtimes.iter().map(|v| v.as_f64().unwrap()).collect();
        assert_eq!(time["value"].as_f64().unwrap(), rt.iter().sum::<f64>() / rt.len() as f64);
        let mut sorted = rt.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(m("time_median")["value"].as_f64().unwrap(), sorted[2]);
        assert!(r["timestamp"].as_str().unwrap().ends_with('Z'));
    }
    assert!(!results.iter().any(|r| r["invalidity"] == "constraints"));
    let filtered = doc["metadata"]["filtered"].as_array().unwrap();
    assert_eq!(filtered.len(), space.filtered.len(), "every filtered config, with its reason");
    assert!(filtered.iter().all(|f| f["reason"].as_str().is_some_and(|r| !r.is_empty())));
    assert!(results.iter().any(|r| r["invalidity"] == "runtime" && r["correctness"] == 0), "the missing config");
}

#[test]
fn the_validator_rejects_what_breaks_the_schema() {
    let (doc, _) = document();
    let v = validator();
    type Breaks = fn(&mut Value);
    let broken: [(&str, Breaks); 5] = [
        ("an invalidity outside the enum", |d| d["results"][0]["invalidity"] = json!("slow")),
        ("no correctness", |d| {
            d["results"][0].as_object_mut().unwrap().remove("correctness");
        }),
        ("no times", |d| {
            d["results"][1].as_object_mut().unwrap().remove("times");
        }),
        ("a compilation time that is not a number", |d| d["results"][0]["times"]["compilation_time"] = json!("3 ms")),
        ("a schema version that is not major.minor.patch", |d| d["schema_version"] = json!("1.0")),
    ];
    for (what, breaks) in broken {
        let mut d = doc.clone();
        breaks(&mut d);
        assert!(!errors(&v, &d).is_empty(), "{what}: accepted");
    }
}
