//! The tuner's cache: append-only JSON lines, one per finished config (measured, or
//! failed with its error), written through [`JsonlWriter`] (one synced `O_APPEND` write
//! of a whole line each, a torn last line closed off by the next writer). A rerun answers
//! every config already in the file from it; a sweep killed at any point (Ctrl-C,
//! `kill -9`) loses no config whose line was written, and resumes where it stopped.
//!
//! Each line is a [`Record`] (the same fields `run --json` and `bench --json` write, so
//! [`crate::report::read_jsonl`] and the tables read a cache file as records) with one
//! more object, `tune`, holding what the tuner adds: the kernel-image hash, the config as
//! named parameters, the target the space was filtered for, the T4 validity class and the
//! time spent building and verifying.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Footprint, Target, canonical_json};
use crate::backend::BackendKind;
use crate::error::{Error, Result};
use crate::report::{JsonlWriter, Record, TornLine, parse_jsonl_as};

/// What the tuner adds to a [`Record`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneFields {
    /// Hash of the kernel image the config ran from (PTX text for CUDA, the code objects
    /// for HIP, the WGSL templates for WGSL, the host build for the CPU backend), as the
    /// CLI computes it ([`super::image_hash`]).
    pub image_hash: String,
    /// The config, as parameter name -> value.
    pub params: BTreeMap<String, u32>,
    /// The backend, variant and limits the space was filtered for, and the candidate
    /// values of every parameter of the sweep's space: a replay rebuilds the same space
    /// from them, with no device.
    pub target: Target,
    pub values: BTreeMap<String, Vec<u32>>,
    /// What the config asks for, as computed before launch.
    pub footprint: Footprint,
    /// Kernel Tuner's T4 validity class: `correct`, `constraints` (refused before
    /// launch), `compile` (kernel or pipeline build failed), `runtime` (launch or timing
    /// failed), `correctness` (the result differs from the CPU reference).
    pub invalidity: String,
    /// Milliseconds spent building the kernel of this config: the WGSL pipeline creation
    /// that launch-time sizing removes; 0 on the Rust backends (one image, loaded once).
    pub build_ms: f64,
    /// Milliseconds of the first run and its check against the reference.
    pub verify_ms: f64,
    /// Wall-clock milliseconds spent on this config in all (inputs, reference, build,
    /// verification, warm-up and timed runs).
    pub wall_ms: f64,
    /// Wall-clock milliseconds of the benchmark: warm-up, timed runs and any observer's
    /// window, what Kernel Tuner's `benchmark_time` holds. Absent in caches written before
    /// it was recorded (their exports fall back to the sum of the timed runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bench_ms: Option<f64>,
    /// The strategy that measured it.
    pub strategy: String,
    /// What the config's outputs were checked against: the reference's identity (the
    /// family's CPU reference and its inputs seed, or a [`crate::contract::Kernel`]'s
    /// check, reference data hash and tolerance). Part of the cache key: a sweep with
    /// another check is another sweep. Empty in caches written before it was recorded.
    #[serde(default)]
    pub check: String,
    /// The shard, host and device that measured it, when a sharded sweep did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<super::shard::Worker>,
}

/// One line of a cache file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheEntry {
    #[serde(flatten)]
    pub record: Record,
    pub tune: TuneFields,
}

/// Everything a cached result depends on but the config: one sweep's worth of entries.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupKey {
    pub device: String,
    pub driver: String,
    pub backend: BackendKind,
    pub image_hash: String,
    pub family: String,
    pub variant: String,
    /// The problem as [`canonical_json`].
    pub problem: String,
    /// What results are checked against ([`TuneFields::check`]).
    pub check: String,
}

impl std::fmt::Display for GroupKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {} on {} ({}; driver {}; image {}; checked against {})",
            self.family,
            self.problem,
            self.variant,
            self.backend,
            self.device,
            self.driver,
            self.image_hash,
            if self.check.is_empty() { "an unrecorded check" } else { &self.check }
        )
    }
}

/// The key of one cached result.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey {
    pub group: GroupKey,
    pub params: BTreeMap<String, u32>,
}

impl CacheEntry {
    pub fn group(&self) -> GroupKey {
        let r = &self.record;
        GroupKey {
            device: r.device.clone(),
            driver: r.driver.clone(),
            backend: r.backend,
            image_hash: self.tune.image_hash.clone(),
            family: r.family.clone(),
            variant: r.variant.clone(),
            problem: canonical_json(&r.problem),
            check: self.tune.check.clone(),
        }
    }

    pub fn key(&self) -> CacheKey {
        CacheKey { group: self.group(), params: self.tune.params.clone() }
    }

    /// The objective: the median time of a verified config, in milliseconds.
    pub fn time_ms(&self) -> Option<f64> {
        if self.record.verified && self.record.error.is_none() { self.record.median_ms } else { None }
    }
}

/// A cache file, read and (unless opened read-only) open for appending.
pub struct TuneCache {
    path: PathBuf,
    entries: Vec<CacheEntry>,
    index: HashMap<CacheKey, usize>,
    /// Lines a killed writer left unfinished (skipped; their configs run again).
    pub torn: Vec<TornLine>,
    /// Entries whose key an earlier line already had (two sweeps appending to one file
    /// at once): the first is kept.
    pub duplicates: usize,
    writer: Option<JsonlWriter>,
}

impl TuneCache {
    /// Opens `path` for appending (creating it and its directory), closing off a line a
    /// killed writer left unfinished, then reads every entry in it.
    pub fn open(path: &Path) -> Result<TuneCache> {
        let writer = JsonlWriter::append(path)?;
        let mut cache = TuneCache::read(path)?;
        cache.writer = Some(writer);
        Ok(cache)
    }

    /// Reads `path` without writing to it (a replay). A missing file is an error.
    pub fn read(path: &Path) -> Result<TuneCache> {
        let bytes = std::fs::read(path).map_err(|source| Error::Io { path: path.into(), source })?;
        let (entries, torn) = parse_jsonl_as::<CacheEntry>(&bytes, path)?;
        let mut cache = TuneCache::from_entries(path, Vec::new());
        cache.torn = torn;
        for e in entries {
            cache.insert(e);
        }
        Ok(cache)
    }

    /// A cache of `entries` with no file behind it (tests, replays of data in memory).
    pub fn from_entries(path: &Path, entries: Vec<CacheEntry>) -> TuneCache {
        let mut cache = TuneCache {
            path: path.into(),
            entries: Vec::new(),
            index: HashMap::new(),
            torn: Vec::new(),
            duplicates: 0,
            writer: None,
        };
        for e in entries {
            cache.insert(e);
        }
        cache
    }

    fn insert(&mut self, e: CacheEntry) {
        let key = e.key();
        if self.index.contains_key(&key) {
            self.duplicates += 1;
            return;
        }
        self.index.insert(key, self.entries.len());
        self.entries.push(e);
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn entries(&self) -> &[CacheEntry] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, key: &CacheKey) -> Option<&CacheEntry> {
        self.index.get(key).map(|&i| &self.entries[i])
    }

    /// Appends `entry` to the file (one synced line) and to the index. A cache opened
    /// read-only refuses.
    pub fn append(&mut self, entry: CacheEntry) -> Result<()> {
        let Some(w) = self.writer.as_mut() else {
            return Err(Error::Io {
                path: self.path.clone(),
                source: std::io::Error::new(std::io::ErrorKind::PermissionDenied, "cache opened read-only"),
            });
        };
        w.write(&entry)?;
        self.insert(entry);
        Ok(())
    }

    /// Every group of the cache (one per device, driver, image, family, variant and
    /// problem), with the target of its first entry and its entry count, sorted.
    pub fn groups(&self) -> Vec<(GroupKey, Target, usize)> {
        let mut groups: BTreeMap<GroupKey, (Target, usize)> = BTreeMap::new();
        for e in &self.entries {
            groups.entry(e.group()).or_insert((e.tune.target, 0)).1 += 1;
        }
        groups.into_iter().map(|(k, (t, n))| (k, t, n)).collect()
    }

    /// The parameter values of a group's sweep (of its first entry): the overrides that
    /// rebuild its space.
    pub fn group_values(&self, group: &GroupKey) -> Vec<(String, Vec<u32>)> {
        self.entries
            .iter()
            .find(|e| &e.group() == group)
            .map(|e| e.tune.values.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    }

    /// The entries of one group, by their parameters.
    pub fn group_entries(&self, group: &GroupKey) -> HashMap<BTreeMap<String, u32>, &CacheEntry> {
        self.entries.iter().filter(|e| &e.group() == group).map(|e| (e.tune.params.clone(), e)).collect()
    }

    /// The entry of `group` with the least `objective` and its value; exact ties go to the
    /// least parameters (the first in the space's product order, as Kernel Tuner breaks
    /// them). `None` when no entry has the objective's figure.
    pub fn best(&self, group: &GroupKey, objective: super::Objective) -> Option<(f64, &CacheEntry)> {
        self.entries
            .iter()
            .filter(|e| &e.group() == group)
            .filter_map(|e| objective.value(&e.record).ok().map(|v| (v, e)))
            .min_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.tune.params.cmp(&b.1.tune.params)))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::backend::Variant;
    use crate::backend::{DeviceInfo, Limits};
    use crate::report::Provenance;

    pub(crate) fn limits() -> Limits {
        Limits {
            max_threads_per_block: 1024,
            max_grid_x: 65_535,
            launch_shared_default: 49_152,
            launch_shared_max: 232_448,
            static_shared_max: 49_152,
            shared_per_multiprocessor: None,
            multiprocessors: None,
            max_buffer_bytes: u64::MAX,
            memory_bytes: None,
            max_cluster: 8,
        }
    }

    /// An entry of a fake device for `params` with median `time` (None: failed).
    pub(crate) fn entry(params: &[(&str, u32)], time: Option<f64>) -> CacheEntry {
        let device = DeviceInfo {
            backend: BackendKind::Cpu,
            name: "test device".into(),
            driver: "1".into(),
            api: "none".into(),
            is_cpu: true,
            limits: limits(),
        };
        let prov = Provenance { rustc: "r".into(), commit: "c".into(), command: "x".into(), image: "i".into() };
        let mut record = Record::new("reduce", "launch-sized", "reduce_sum_f32", &device, &prov);
        record.problem = serde_json::json!({"n": 4096, "op": "sum", "dtype": "f32"});
        match time {
            Some(t) => {
                record.verified = true;
                record.times_ms = vec![t, t * 1.01];
                record.median_ms = Some(t);
            }
            None => record.error = Some("kernel fault".into()),
        }
        CacheEntry {
            record,
            tune: TuneFields {
                image_hash: "00ff".into(),
                params: params.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                target: Target {
                    backend: BackendKind::Cpu,
                    variant: Variant::LaunchSized,
                    limits: limits(),
                    is_cpu: true,
                },
                values: params.iter().map(|(k, v)| (k.to_string(), vec![*v])).collect(),
                footprint: Footprint { threads: 32, grid: 1, launch_bytes: 128, static_bytes: 0 },
                invalidity: if time.is_some() { "correct" } else { "runtime" }.into(),
                build_ms: 0.0,
                verify_ms: 0.5,
                wall_ms: 3.0,
                bench_ms: Some(1.5),
                strategy: "exhaustive".into(),
                check: "test reference".into(),
                worker: None,
            },
        }
    }

    #[test]
    fn entries_round_trip_and_read_as_records() {
        let dir = std::env::temp_dir().join(format!("dynsmem-tune-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("c.jsonl");
        let a = entry(&[("block", 32), ("ipt", 4)], Some(1.5));
        let b = entry(&[("block", 64), ("ipt", 4)], None);
        {
            let mut c = TuneCache::open(&path).unwrap();
            c.append(a.clone()).unwrap();
            c.append(b.clone()).unwrap();
        }
        // A writer killed mid-line, then a reopen: both entries survive, the fragment is torn.
        let line = serde_json::to_string(&a).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, &line.as_bytes()[..line.len() / 3]))
            .unwrap();
        let mut c = TuneCache::open(&path).unwrap();
        assert_eq!(c.entries(), &[a.clone(), b.clone()]);
        assert_eq!(c.torn.len(), 1);
        assert_eq!(c.get(&a.key()), Some(&a));
        assert_eq!(c.get(&b.key()).and_then(|e| e.time_ms()), None, "a failed entry has no objective");
        // The same key again is a duplicate on reading; the first entry wins.
        let mut a2 = a.clone();
        a2.record.median_ms = Some(9.0);
        c.append(a2).unwrap();
        let again = TuneCache::read(&path).unwrap();
        assert_eq!(again.len(), 2);
        assert_eq!(again.duplicates, 1);
        assert_eq!(again.get(&a.key()).unwrap().record.median_ms, Some(1.5));
        // Every complete line reads as a plain record too.
        let records = crate::report::read_jsonl(&path).unwrap();
        assert_eq!(records.records.len(), 3);
        assert_eq!(records.records[0], a.record);
        assert_eq!(again.groups().len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn keys_differ_by_every_component() {
        let a = entry(&[("block", 32)], Some(1.0));
        let mut changed = Vec::new();
        for f in 0..7 {
            let mut e = a.clone();
            match f {
                0 => e.record.device = "other".into(),
                1 => e.record.driver = "2".into(),
                2 => e.tune.image_hash = "beef".into(),
                3 => e.record.family = "scan".into(),
                4 => e.record.problem = serde_json::json!({"n": 8192, "op": "sum", "dtype": "f32"}),
                5 => e.tune.check = "another reference".into(),
                _ => e.tune.params.insert("block".into(), 64).map(|_| ()).unwrap_or(()),
            }
            changed.push(e.key());
        }
        for k in &changed {
            assert_ne!(k, &a.key());
        }
        // Key order inside the problem does not matter.
        let mut b = a.clone();
        b.record.problem = serde_json::json!({"dtype": "f32", "op": "sum", "n": 4096});
        assert_eq!(b.key(), a.key());
    }
}
