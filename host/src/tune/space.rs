//! The search space of one family on one target: every combination of its parameters'
//! candidate values, split before anything is launched into the configs that can run and
//! those filtered out (each with its reason).

use std::collections::{BTreeMap, HashMap};

use super::{Footprint, Target, Tunable};
use crate::backend::{LaunchDims, Variant};
use crate::error::{Error, Result};
use crate::rng::SplitMix64;

pub use crate::tune::Param;

/// One config: a value per parameter, in the order of [`SearchSpace::params`].
pub type Point = Vec<u32>;

/// Most combinations [`SearchSpace::build`] enumerates: a bound on a mistyped value list.
pub const MAX_COMBINATIONS: usize = 1_000_000;

/// A config filtered out before launch, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filtered {
    pub point: Point,
    pub reason: String,
}

/// The configs of one family on one target.
#[derive(Debug, Clone)]
pub struct SearchSpace {
    pub family: &'static str,
    pub target: Target,
    pub params: Vec<Param>,
    /// The configs that passed every check, in enumeration order (the last parameter
    /// varies fastest).
    pub points: Vec<Point>,
    /// What each config of [`SearchSpace::points`] asks for.
    pub footprints: Vec<Footprint>,
    /// The configs filtered out, with their reasons, in enumeration order.
    pub filtered: Vec<Filtered>,
    /// Position of each value of each point in its parameter's value list.
    positions: Vec<Vec<usize>>,
    index: HashMap<Point, usize>,
}

impl SearchSpace {
    /// Enumerates the family's parameters on `target` (a parameter named in `overrides`
    /// takes the given values instead of its defaults) and checks each combination: the
    /// family's own constraints ([`Tunable::check`]), then the target's limits on threads
    /// per block and grid size, and on workgroup bytes (launch-sized bytes against the
    /// opt-in limit for the Rust kernels; static bytes against
    /// `max_compute_workgroup_storage_size` on WGSL).
    pub fn build<T: Tunable + ?Sized>(
        tunable: &T,
        target: &Target,
        overrides: &[(String, Vec<u32>)],
    ) -> Result<SearchSpace> {
        let invalid = |reason: String| Error::InvalidConfig { kernel: format!("tune {}", tunable.family()), reason };
        let mut params = tunable.params(target);
        for (name, values) in overrides {
            let Some(p) = params.iter_mut().find(|p| p.is_named(name)) else {
                let names: Vec<&str> = params.iter().map(|p| p.name).collect();
                return Err(invalid(format!("no parameter {name:?} (the parameters are {names:?})")));
            };
            if values.is_empty() {
                return Err(invalid(format!("no values given for {name}")));
            }
            let mut v = values.clone();
            v.sort_unstable();
            v.dedup();
            p.values = v;
        }
        if let Some(p) = params.iter().find(|p| p.values.is_empty()) {
            return Err(invalid(format!("parameter {} has no candidate values", p.name)));
        }
        let total = params.iter().try_fold(1usize, |acc, p| acc.checked_mul(p.values.len()));
        if total.is_none_or(|t| t > MAX_COMBINATIONS) {
            return Err(invalid(format!("more than {MAX_COMBINATIONS} combinations: give fewer values")));
        }
        let mut space = SearchSpace {
            family: tunable.family(),
            target: *target,
            params,
            points: Vec::new(),
            footprints: Vec::new(),
            filtered: Vec::new(),
            positions: Vec::new(),
            index: HashMap::new(),
        };
        let dims: Vec<usize> = space.params.iter().map(|p| p.values.len()).collect();
        let mut pos = vec![0usize; dims.len()];
        loop {
            let point: Point = pos.iter().zip(&space.params).map(|(&i, p)| p.values[i]).collect();
            match tunable.check(&point, target).and_then(|f| check_limits(&f, target).map(|()| f)) {
                Ok(f) => {
                    space.index.insert(point.clone(), space.points.len());
                    space.points.push(point);
                    space.footprints.push(f);
                    space.positions.push(pos.clone());
                }
                Err(reason) => space.filtered.push(Filtered { point, reason }),
            }
            // Odometer increment, last parameter fastest.
            let mut d = dims.len();
            loop {
                if d == 0 {
                    return Ok(space);
                }
                d -= 1;
                pos[d] += 1;
                if pos[d] < dims[d] {
                    break;
                }
                pos[d] = 0;
            }
        }
    }

    /// Configs that can run.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Position of `point` in [`SearchSpace::points`], if it is there.
    pub fn index_of(&self, point: &[u32]) -> Option<usize> {
        self.index.get(point).copied()
    }

    /// `name=value` pairs of config `i`, e.g. `block=256 ipt=32 staged=0`.
    pub fn describe(&self, i: usize) -> String {
        describe_point(&self.params, &self.points[i])
    }

    /// Config `i` as a map from parameter name to value (cache entries, T4).
    pub fn params_map(&self, i: usize) -> BTreeMap<String, u32> {
        params_map(&self.params, &self.points[i])
    }

    /// Config `i` as an entry recorded before the parameters at their `absent` value existed
    /// and before the renamed ones were renamed keys it (those left out, these under their
    /// former names), where it has such parameters: a cache read with
    /// [`SearchSpace::params_map`] first, then with this, answers from such entries too.
    pub fn params_map_before(&self, i: usize) -> Option<BTreeMap<String, u32>> {
        let at_absent = |(p, v): (&Param, &u32)| p.absent == Some(*v);
        let pairs = || self.params.iter().zip(&self.points[i]);
        if !pairs().any(|pv| at_absent(pv) || pv.0.formerly.is_some()) {
            return None;
        }
        let kept = pairs().filter(|pv| !at_absent(*pv));
        Some(kept.map(|(p, &v)| (p.formerly.unwrap_or(p.name).to_string(), v)).collect())
    }

    /// The configs that differ from config `i` in exactly one parameter, by one step along
    /// that parameter's value list ("adjacent"); when `hamming`, by any value of one
    /// parameter. Filtered combinations are not in the space, so a config near the edge
    /// of the constraints has fewer neighbours.
    pub fn neighbours(&self, i: usize, hamming: bool) -> Vec<usize> {
        let me = &self.positions[i];
        let mut out = Vec::new();
        for (d, p) in self.params.iter().enumerate() {
            for (v, &value) in p.values.iter().enumerate() {
                let step = v.abs_diff(me[d]);
                if step == 0 || (!hamming && step > 1) {
                    continue;
                }
                let mut point = self.points[i].clone();
                point[d] = value;
                if let Some(j) = self.index_of(&point) {
                    out.push(j);
                }
            }
        }
        out
    }

    /// A random step from config `i`, as Kernel Tuner's simulated annealing takes one:
    /// each parameter, with probability `jump`, moves to any other of its values; then one
    /// parameter moves to an adjacent value. Several parameters can change in one step, so
    /// a walk can leave a config whose one-parameter neighbours are all slower. A step
    /// that lands on a filtered combination (or back on `i`) is drawn again, up to
    /// `tries` times; `None` when none lands in the space.
    pub fn random_step(&self, i: usize, jump: f64, rng: &mut SplitMix64, tries: usize) -> Option<usize> {
        let unit = |rng: &mut SplitMix64| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        for _ in 0..tries {
            let mut pos = self.positions[i].clone();
            for (d, p) in self.params.iter().enumerate() {
                if p.values.len() > 1 && unit(rng) < jump {
                    let other = rng.below(p.values.len() as u64 - 1) as usize;
                    pos[d] = if other >= pos[d] { other + 1 } else { other };
                }
            }
            let movable: Vec<usize> = (0..self.params.len()).filter(|&d| self.params[d].values.len() > 1).collect();
            if let Some(&d) = movable.get(rng.below(movable.len().max(1) as u64) as usize) {
                let last = self.params[d].values.len() - 1;
                pos[d] = match (pos[d], rng.next_u64() & 1) {
                    (0, _) => 1,
                    (p, _) if p == last => last - 1,
                    (p, 0) => p - 1,
                    (p, _) => p + 1,
                };
            }
            let point: Point = pos.iter().zip(&self.params).map(|(&k, p)| p.values[k]).collect();
            if let Some(j) = self.index_of(&point).filter(|&j| j != i) {
                return Some(j);
            }
        }
        None
    }

    /// The configs `keep` selects (by their position in [`SearchSpace::points`]), in their
    /// order, as a space of their own: the same parameters, target and filtered list, so a
    /// config keeps its parameter values and its neighbours among the kept configs.
    pub fn subset(&self, keep: impl Fn(usize) -> bool) -> SearchSpace {
        let mut out = SearchSpace {
            family: self.family,
            target: self.target,
            params: self.params.clone(),
            points: Vec::new(),
            footprints: Vec::new(),
            filtered: self.filtered.clone(),
            positions: Vec::new(),
            index: HashMap::new(),
        };
        for i in (0..self.len()).filter(|&i| keep(i)) {
            out.index.insert(self.points[i].clone(), out.points.len());
            out.points.push(self.points[i].clone());
            out.footprints.push(self.footprints[i]);
            out.positions.push(self.positions[i].clone());
        }
        out
    }

    /// The position of config `i`'s value of parameter `d` in that parameter's list.
    pub fn position(&self, i: usize, d: usize) -> usize {
        self.positions[i][d]
    }
}

/// `name=value` pairs of a point.
pub fn describe_point(params: &[Param], point: &[u32]) -> String {
    params.iter().zip(point).map(|(p, v)| format!("{}={v}", p.name)).collect::<Vec<_>>().join(" ")
}

/// A point as a map from parameter name to value.
pub fn params_map(params: &[Param], point: &[u32]) -> BTreeMap<String, u32> {
    params.iter().zip(point).map(|(p, &v)| (p.name.to_string(), v)).collect()
}

/// The target's limits on one footprint: threads per block, blocks per grid, and the
/// workgroup bytes of the variant the target builds.
fn check_limits(f: &Footprint, t: &Target) -> std::result::Result<(), String> {
    let launch_sized = t.variant == Variant::LaunchSized;
    let shared_bytes = if launch_sized { f.launch_bytes } else { 0 };
    let static_bytes = if launch_sized { 0 } else { f.static_bytes };
    let dims = LaunchDims::new(f.grid, f.threads, shared_bytes);
    crate::backend::check_limits("config", t.backend, &t.limits, dims, static_bytes).map_err(|e| e.to_string())
}
