//! Sharded sweeps: N processes (on the GPUs of a host, or as the tasks of a Slurm job
//! array) share one sweep, each writing its own cache, and [`merge`] joins their caches.
//!
//! What a shard runs depends on the strategy:
//! - `exhaustive` and `random` **partition** the space. The filtered space's positions are
//!   dealt in one fixed pseudo-random order ([`dealt_order`], the same in every process),
//!   and shard `I/N` takes the `I-1`th, `I-1+N`th, ... of that order. Dealing by position
//!   instead would give a shard every config with one value of the last parameter
//!   (neighbouring positions differ in it), and with it a share of the work far from 1/N.
//!   The N shards cover the space exactly once; each runs its part in the space's order.
//!   `random` samples without replacement inside its part.
//! - `anneal` and `hill-climb` walk neighbourhoods, which a partition would cut. Each
//!   shard walks the **whole** space as an independent restart, seeded `seed + I - 1`.
//!   Two shards can measure the same config; the merge keeps the first line of each.
//!
//! An evaluation budget is split (shard `I` gets `budget / N`, the first `budget % N`
//! shards one more), so the N shards together spend what one process would. A seconds
//! budget is not split: the shards run at the same time, each for that long.
//!
//! Shard `1/1` is the unsharded sweep: the same configs, seed and budget.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::cache::{GroupKey, TuneCache};
use super::space::SearchSpace;
use super::strategies::{Budget, Strategy};
use crate::error::{Error, Result};

/// One shard of a sweep: `index` of `count`, counted from 1 as on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// The positions `0..len` in the order a partitioned sweep deals them to its shards: a
/// Fisher-Yates shuffle with a fixed seed, so every process of a sweep computes the same.
pub fn dealt_order(len: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    super::strategies::shuffle(&mut order, &mut crate::rng::SplitMix64::new(0x5348_4152_4453));
    order
}

impl Shard {
    /// The whole sweep, as one shard.
    pub const WHOLE: Shard = Shard { index: 1, count: 1 };

    /// Shard `index` of `count`; `None` unless `1 <= index <= count`.
    pub fn new(index: u32, count: u32) -> Option<Shard> {
        (index >= 1 && index <= count).then_some(Shard { index, count })
    }

    /// Every shard of `count`, in order.
    pub fn all(count: u32) -> impl Iterator<Item = Shard> {
        (1..=count).map(move |index| Shard { index, count })
    }

    /// Whether `strategy` partitions the space between shards (else each shard walks all of it).
    pub fn partitions(strategy: Strategy) -> bool {
        matches!(strategy, Strategy::Exhaustive | Strategy::Random)
    }

    /// The configs this shard evaluates with `strategy` (see the module docs).
    pub fn space(&self, space: &SearchSpace, strategy: Strategy) -> SearchSpace {
        if !Shard::partitions(strategy) || self.count == 1 {
            return space.subset(|_| true);
        }
        let (n, i) = (self.count as usize, self.index as usize - 1);
        let mut mine = vec![false; space.len()];
        for (k, &position) in dealt_order(space.len()).iter().enumerate() {
            mine[position] = k % n == i;
        }
        space.subset(|k| mine[k])
    }

    /// This shard's part of `budget`.
    pub fn budget(&self, budget: Budget) -> Budget {
        let (n, i) = (self.count as usize, self.index as usize - 1);
        Budget { evaluations: budget.evaluations.map(|e| e / n + usize::from(i < e % n)), seconds: budget.seconds }
    }

    /// This shard's strategy seed.
    pub fn seed(&self, seed: u64) -> u64 {
        seed.wrapping_add(u64::from(self.index) - 1)
    }

    /// The cache file this shard writes beside `cache`: `dir/name.jsonl` ->
    /// `dir/name.shard-I-of-N.jsonl`. The whole sweep writes `cache` itself.
    pub fn cache_path(&self, cache: &Path) -> PathBuf {
        if *self == Shard::WHOLE {
            return cache.into();
        }
        let stem = cache.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "tune-cache".into());
        let ext = cache.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
        cache.with_file_name(format!("{stem}.shard-{}-of-{}{ext}", self.index, self.count))
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    /// `I/N`, with `1 <= I <= N`.
    fn from_str(s: &str) -> std::result::Result<Shard, String> {
        let bad = || format!("{s:?}: expected I/N with 1 <= I <= N, e.g. 2/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let i: u32 = i.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        Shard::new(i, n).ok_or_else(bad)
    }
}

/// Who measured a cache entry, when a sharded sweep did: the shard, the host, and the
/// device the worker was pinned to (the `CUDA_VISIBLE_DEVICES`-style value it was given).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worker {
    pub shard: String,
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The GPU's own identity (its UUID on CUDA), where the backend gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
}

/// What one input of a [`merge`] held.
#[derive(Debug, Clone, PartialEq)]
pub struct MergedInput {
    pub path: PathBuf,
    pub entries: usize,
    /// Unfinished lines of a killed writer, skipped.
    pub torn: usize,
    /// Entries `out` did not have, appended.
    pub appended: usize,
}

/// What [`merge`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeReport {
    pub inputs: Vec<MergedInput>,
    /// Entries whose key `out` (or an earlier input) already had: kept as they were.
    pub already: usize,
    /// The sweeps (groups) the inputs hold, sorted.
    pub groups: Vec<GroupKey>,
}

impl MergeReport {
    pub fn appended(&self) -> usize {
        self.inputs.iter().map(|i| i.appended).sum()
    }
}

/// Joins the caches `inputs` into `out`: appends to `out` every entry whose key (device,
/// driver, image, family, variant, problem, config) it does not hold yet, in input order,
/// through the cache's own synced appends. `out` is never rewritten: a merge killed
/// part-way leaves a valid cache, and running it again finishes it. Merging twice appends
/// nothing the second time. A missing input is an error, before anything is written.
pub fn merge(out: &Path, inputs: &[PathBuf]) -> Result<MergeReport> {
    let read: Vec<TuneCache> = inputs.iter().map(|p| TuneCache::read(p)).collect::<Result<_>>()?;
    let same = |p: &Path| match (std::fs::canonicalize(p), std::fs::canonicalize(out)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if let Some(p) = inputs.iter().find(|p| same(p)) {
        return Err(Error::Io {
            path: p.clone(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "an input of the merge is its output"),
        });
    }
    let mut cache = TuneCache::open(out)?;
    let mut report = MergeReport { inputs: Vec::new(), already: 0, groups: Vec::new() };
    for (path, input) in inputs.iter().zip(&read) {
        let mut appended = 0;
        for e in input.entries() {
            if cache.get(&e.key()).is_some() {
                report.already += 1;
            } else {
                cache.append(e.clone())?;
                appended += 1;
            }
        }
        report.inputs.push(MergedInput { path: path.clone(), entries: input.len(), torn: input.torn.len(), appended });
        report.groups.extend(input.groups().into_iter().map(|(g, _, _)| g));
    }
    report.groups.sort();
    report.groups.dedup();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::cache::tests::entry;

    #[test]
    fn shards_parse_and_refuse_what_is_not_a_shard() {
        assert_eq!("2/3".parse::<Shard>(), Ok(Shard { index: 2, count: 3 }));
        for bad in ["0/3", "4/3", "3", "a/b", "1/0", "-1/2", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad:?} parsed");
        }
        assert_eq!(Shard { index: 2, count: 3 }.to_string(), "2/3");
    }

    #[test]
    fn shard_caches_sit_beside_the_cache() {
        let s = Shard { index: 2, count: 3 };
        assert_eq!(s.cache_path(Path::new("r/t.jsonl")), PathBuf::from("r/t.shard-2-of-3.jsonl"));
        assert_eq!(s.cache_path(Path::new("t")), PathBuf::from("t.shard-2-of-3"));
        assert_eq!(Shard::WHOLE.cache_path(Path::new("r/t.jsonl")), PathBuf::from("r/t.jsonl"));
    }

    #[test]
    fn budgets_split_to_the_whole_and_seeds_differ() {
        for total in [0usize, 1, 7, 30] {
            for n in 1..6u32 {
                let parts: Vec<usize> =
                    Shard::all(n).map(|s| s.budget(Budget::evaluations(total)).evaluations.unwrap()).collect();
                assert_eq!(parts.iter().sum::<usize>(), total, "{total} over {n}");
                assert!(parts.iter().max().unwrap() - parts.iter().min().unwrap() <= 1);
            }
        }
        assert_eq!(Shard::WHOLE.seed(7), 7);
        let seeds: std::collections::HashSet<u64> = Shard::all(4).map(|s| s.seed(7)).collect();
        assert_eq!(seeds.len(), 4);
        assert_eq!(Shard { index: 2, count: 2 }.budget(Budget::seconds(3.0)).seconds, Some(3.0));
    }

    #[test]
    fn partitioning_shards_cover_the_space_exactly_once() {
        use crate::tune::strategies::tests::bowl_space;
        let space = bowl_space();
        for n in [1u32, 2, 3, 7] {
            let mut seen: Vec<Vec<u32>> = Vec::new();
            for s in Shard::all(n) {
                let part = s.space(&space, Strategy::Exhaustive);
                assert_eq!(part.filtered, space.filtered);
                assert_eq!(s.space(&space, Strategy::Random).points, part.points);
                assert!(part.points.len().abs_diff(space.len() / n as usize) <= 1);
                for (k, p) in part.points.iter().enumerate() {
                    assert_eq!(part.index_of(p), Some(k));
                    assert_eq!(part.footprints[k], space.footprints[space.index_of(p).unwrap()]);
                }
                seen.extend(part.points);
            }
            seen.sort();
            let mut all = space.points.clone();
            all.sort();
            assert_eq!(seen, all, "{n} shards");
        }
        // Each of two shards gets about half of each value of the last parameter. In the rows
        // x >= 8 nothing is filtered, so dealing by position would give one shard every even y.
        let space = space.subset(|k| space.points[k][0] >= 8);
        let last = space.params.len() - 1;
        let even = |part: &SearchSpace| part.points.iter().filter(|p| p[last] % 2 == 0).count() as f64;
        let (a, b) = (Shard { index: 1, count: 2 }, Shard { index: 2, count: 2 });
        let (ea, eb) = (even(&a.space(&space, Strategy::Exhaustive)), even(&b.space(&space, Strategy::Exhaustive)));
        assert!((ea / (ea + eb) - 0.5).abs() < 0.1, "{ea} and {eb} configs with an even last value");
        // Neighbourhood strategies walk the whole space in every shard.
        let s = Shard { index: 2, count: 3 };
        assert_eq!(s.space(&space, Strategy::Anneal).points, space.points);
        assert_eq!(s.space(&space, Strategy::HillClimb).points, space.points);
    }

    #[test]
    fn merge_appends_what_is_new_once_and_refuses_missing_inputs() {
        let dir = std::env::temp_dir().join(format!("dynsmem-merge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b, out) = (dir.join("a.jsonl"), dir.join("b.jsonl"), dir.join("out.jsonl"));
        let e1 = entry(&[("block", 32)], Some(1.0));
        let e2 = entry(&[("block", 64)], Some(2.0));
        let e3 = entry(&[("block", 128)], None);
        {
            let mut c = TuneCache::open(&a).unwrap();
            c.append(e1.clone()).unwrap();
            c.append(e2.clone()).unwrap();
            let mut c = TuneCache::open(&b).unwrap();
            c.append(e3.clone()).unwrap();
            // The same config measured again by another shard: the first line wins.
            let mut again = e1.clone();
            again.record.median_ms = Some(5.0);
            c.append(again).unwrap();
        }
        let missing = dir.join("none.jsonl");
        assert!(merge(&out, &[a.clone(), missing]).is_err());
        assert!(!out.exists(), "nothing written before every input was read");
        assert!(merge(&a, &[a.clone(), b.clone()]).is_err(), "an input is not its own output");
        let r = merge(&out, &[a.clone(), b.clone()]).unwrap();
        assert_eq!((r.appended(), r.already, r.groups.len()), (3, 1, 1));
        let merged = TuneCache::read(&out).unwrap();
        assert_eq!(merged.entries(), &[e1.clone(), e2, e3]);
        assert_eq!(merged.get(&e1.key()).unwrap().record.median_ms, Some(1.0));
        let r = merge(&out, &[a, b]).unwrap();
        assert_eq!((r.appended(), r.already), (0, 4), "a second merge appends nothing");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
