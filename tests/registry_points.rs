//! Every registry family's two gates agree at random points: the tuner's check (with the
//! target's limits) and `prepare` on the CPU backend accept and refuse the same configs, and
//! neither panics (`family::probe_point`; the `registry` fuzz target of host/fuzz drives the
//! same function with libFuzzer). Points mix the family's candidate values with arbitrary
//! ones, seeded, so a failure replays. A family added to the registry is in it with no
//! change here.

use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::families::FAMILIES;
use dynsmem::host::family::{PointVerdict, probe_point};
use dynsmem::host::rng::SplitMix64;

/// Points per family: enough to reach both verdicts in every family (hgemm's eight
/// parameters must all land on fitting values at once), small enough for CI.
const POINTS: usize = 200;

#[test]
fn the_tuner_and_prepare_agree_on_random_points_of_every_family() {
    let cpu = CpuBackend::new();
    let mut rng = SplitMix64::new(0x5EED);
    for family in FAMILIES {
        let (mut accepted, mut refused, mut resources, mut unsupported) = (0, 0, 0, 0);
        for i in 0..POINTS {
            // Small raw values (odd: taken as given) and candidate indices (even).
            let values: Vec<u32> = (0..8)
                .map(|_| {
                    let r = rng.next_u64();
                    let raw = [r % 3, r % 64, r % 5000, r % (1 << 20)][(r >> 40) as usize % 4] as u32;
                    if r >> 63 == 1 { raw << 1 | 1 } else { raw << 1 }
                })
                .collect();
            match probe_point(*family, &cpu, &values, i as u64) {
                Ok(PointVerdict::Accepted) => accepted += 1,
                Ok(PointVerdict::Refused(_)) => refused += 1,
                Ok(PointVerdict::OutOfResources(_)) => resources += 1,
                Ok(PointVerdict::Unsupported(_)) => unsupported += 1,
                Err(e) => panic!("{} point {i} ({values:?}): {e}", family.name()),
            }
        }
        println!(
            "{}: {accepted} accepted, {refused} refused, {resources} out of resources, {unsupported} not run by the CPU backend",
            family.name()
        );
        assert!(accepted + unsupported > 0, "{}: no random point was accepted", family.name());
        assert!(refused > 0, "{}: no random point was refused: the points do not reach the rules", family.name());
    }
}
