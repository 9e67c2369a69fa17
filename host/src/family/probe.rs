//! [`probe_point`]: one arbitrary point of a family's search space through both of its
//! gates (the tuner's check and `prepare`), which must agree. The registry property test
//! and the `registry` fuzz target drive it.

use super::{DynFamily, Sizes, clap_error};
use crate::backend::cpu::CpuBackend;
use crate::backend::{AnyBackend, Variant};
use crate::contract::Target;
use crate::error::{Error, Result};
use crate::tune::Tunable;

/// What [`probe_point`] found for one point.
#[derive(Debug)]
pub enum PointVerdict {
    /// The tuner's check and `prepare` both accepted it.
    Accepted,
    /// Both refused it; the tuner's reason.
    Refused(String),
    /// `prepare` ran out of a resource (host or device memory) the tuner does not model.
    OutOfResources(String),
    /// The backend does not run the family's kernel at all (hgemm's tensor cores on the CPU).
    Unsupported(String),
}

/// One arbitrary point of `family`'s search space (any values, not only its candidates) for
/// its default problem at the CPU backend's sizes, through both of the family's gates: the
/// tuner's (its `check` and the target's limits, as `SearchSpace::build` applies them) and
/// `prepare` on `cpu` (validation, inputs, reference; nothing launched). The two must agree
/// (one validation per family): `Err` names the point and both answers where they do not.
/// Neither may panic. The registry property test and the `registry` fuzz target drive it.
pub fn probe_point(family: &dyn DynFamily, cpu: &CpuBackend, values: &[u32], seed: u64) -> Result<PointVerdict> {
    let cmd = family.run_args(clap::Command::new(family.name()).no_binary_name(true));
    let m = cmd.try_get_matches_from(std::iter::empty::<String>()).map_err(|e| clap_error(family.name(), e))?;
    let (problem, _) = family.problem(&m, &Sizes::cpu_backend())?;
    let Some(tunable) = family.tunable(&problem)? else { return Ok(PointVerdict::Refused("no search space".into())) };
    let tunable = crate::tune::ErasedTunable::new(tunable);
    let target = Target::of(cpu, Variant::LaunchSized);
    let params = Tunable::params(&tunable, &target);
    let point: Vec<u32> = params
        .iter()
        .zip(values.iter().chain(std::iter::repeat(&0)))
        .map(|(p, &v)| if v & 1 == 0 { p.values[(v as usize >> 1) % p.values.len()] } else { v >> 1 })
        .collect();
    let fixed: Vec<(String, Vec<u32>)> =
        params.iter().zip(&point).map(|(p, &v)| (p.name.to_string(), vec![v])).collect();
    let space = crate::tune::SearchSpace::build(&tunable, &target, &fixed)?;
    let config = Tunable::config(&tunable, &point);
    let prepared = family.prepare(AnyBackend::Cpu(cpu), &problem, &config, Variant::LaunchSized, seed);
    let described = || format!("{} {} at {config}", family.name(), problem);
    match (space.filtered.first(), prepared) {
        (None, Ok(_)) => Ok(PointVerdict::Accepted),
        (Some(f), Err(_)) => Ok(PointVerdict::Refused(f.reason.clone())),
        (None, Err(e @ (Error::OutOfMemory { .. } | Error::ProblemTooLarge { .. }))) => {
            Ok(PointVerdict::OutOfResources(e.to_string()))
        }
        (None, Err(e @ Error::Unsupported { .. })) => Ok(PointVerdict::Unsupported(e.to_string())),
        (None, Err(e)) => Err(Error::InvalidConfig {
            kernel: described(),
            reason: format!("the tuner accepts it, prepare refuses: {e}"),
        }),
        (Some(f), Ok(_)) => Err(Error::InvalidConfig {
            kernel: described(),
            reason: format!("prepare accepts it, the tuner refuses: {}", f.reason),
        }),
    }
}
