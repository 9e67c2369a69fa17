//! Published Hopper microbenchmark figures, and the table that sets a probe run beside
//! them (`dynsmem probe` prints it after its own). Each published figure names its GPU and
//! source; where ours differs, the probe's notes (`docs/probes.md`) say why.

use serde_json::Value;

use super::{ProbeKind, ProbeRecord};
use crate::backend::BackendKind;
use crate::report::{Table, TableStyle};

/// One published figure.
pub struct Published {
    pub quantity: &'static str,
    pub value: &'static str,
    pub gpu: &'static str,
    pub source: &'static str,
}

const LUO24: &str =
    "Luo et al., Benchmarking and Dissecting the Nvidia Hopper GPU Architecture (IPDPS 2024, arXiv 2402.13499)";
const LUO25: &str = "Luo et al., Dissecting the NVIDIA Hopper Architecture through Microbenchmarking and Multiple Level Analysis (arXiv 2501.12084v2)";
const GPU_BENCHES: &str = "te42kyfo/gpu-benches, gpu-latency/h100_pcie.txt";

/// The figures, in the order of the comparison table.
pub const FIGURES: &[Published] = &[
    Published { quantity: "shared-memory latency (cycles)", value: "29.0", gpu: "H800 PCIe", source: LUO24 },
    Published {
        quantity: "L1 hit latency (cycles)",
        value: "40.7 (Table IV); 32-33 (2025 Table 3)",
        gpu: "H800 PCIe",
        source: LUO24,
    },
    Published { quantity: "L1 hit latency (cycles)", value: "34.1", gpu: "H100 PCIe", source: GPU_BENCHES },
    Published {
        quantity: "L2 hit latency (cycles)",
        value: "near 258.0, far 414.1 (Table 4)",
        gpu: "H800 PCIe",
        source: LUO25,
    },
    Published {
        quantity: "L2 hit latency (cycles)",
        value: "near 265.5, far ~475",
        gpu: "H100 PCIe",
        source: GPU_BENCHES,
    },
    Published { quantity: "DRAM latency (cycles)", value: "656 (Table 3)", gpu: "H800 PCIe (HBM2e)", source: LUO25 },
    Published { quantity: "DRAM latency (cycles)", value: "650-658", gpu: "H100 PCIe (HBM2e)", source: GPU_BENCHES },
    Published {
        quantity: "DSMEM latency, cluster 2 (cycles)",
        value: "181 (184-213 for clusters 2-16)",
        gpu: "H800 PCIe",
        source: LUO25,
    },
    Published {
        quantity: "DSMEM throughput, cluster 2 / 4",
        value: "3.28 / 2.78 TB/s (114 SMs)",
        gpu: "H800 PCIe",
        source: LUO25,
    },
    Published {
        quantity: "shared-memory throughput (B/clk/SM)",
        value: "127.4 (Table 5); 32 banks x 4 B = 128",
        gpu: "H800 PCIe; CUDA guide",
        source: LUO25,
    },
    Published {
        quantity: "DRAM bandwidth",
        value: "3.35 TB/s (peak)",
        gpu: "H100 SXM5 (HBM3)",
        source: "NVIDIA H100 product page",
    },
];

fn point_u64(r: &ProbeRecord, key: &str) -> Option<u64> {
    r.point.get(key).and_then(Value::as_u64)
}
fn point_str<'a>(r: &'a ProbeRecord, key: &str) -> Option<&'a str> {
    r.point.get(key).and_then(Value::as_str)
}

/// The verified launch-sized CUDA records of `kind` passing `keep` (the published figures
/// are NVIDIA GPUs').
fn ours<'a>(
    records: &'a [ProbeRecord],
    kind: ProbeKind,
    keep: impl Fn(&ProbeRecord) -> bool + 'a,
) -> impl Iterator<Item = &'a ProbeRecord> + 'a {
    records.iter().filter(move |r| {
        r.probe == kind
            && r.record.verified
            && r.record.backend == BackendKind::Cuda
            && r.record.variant == "launch-sized"
            && keep(r)
    })
}

/// Our figure for each published quantity, as text ("-" where the run did not measure it).
fn measured(records: &[ProbeRecord], quantity: &str) -> String {
    let cycles = |it: &mut dyn Iterator<Item = &ProbeRecord>| -> Option<String> {
        let c: Vec<f64> = it.filter_map(|r| r.cycles).collect();
        let (lo, hi) = c.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        match c.len() {
            0 => None,
            1 => Some(format!("{lo:.1}")),
            _ => Some(format!("{lo:.1}-{hi:.1}")),
        }
    };
    let latency = |hint: &'static str, lo: u64, hi: u64| {
        move |r: &ProbeRecord| {
            point_str(r, "hint") == Some(hint) && point_u64(r, "bytes").is_some_and(|b| b >= lo && b <= hi)
        }
    };
    // A chase stands for an L1 hit latency only where it went round its ring often enough
    // that its first, missing lap does not count (a short chase measures misses).
    let warm = |r: &ProbeRecord| {
        let lines = point_u64(r, "bytes").unwrap_or(0).div_ceil(super::global::LINE_BYTES as u64).max(1);
        point_u64(r, "steps").is_some_and(|s| s >= super::global::WARM_LAPS * lines)
    };
    let out = match quantity {
        "shared-memory latency (cycles)" => cycles(&mut ours(records, ProbeKind::SharedLatency, |_| true)),
        "L1 hit latency (cycles)" => {
            let l1 = latency("default", 0, 64 << 10);
            cycles(&mut ours(records, ProbeKind::GlobalLatency, move |r| l1(r) && warm(r)))
                .map(|c| format!("{c} (default loads, 8-64 KB)"))
        }
        "L2 hit latency (cycles)" => {
            cycles(&mut ours(records, ProbeKind::GlobalLatency, latency("cg", 1 << 20, 16 << 20)))
                .map(|c| format!("{c} (.cg loads, 1-16 MB: near and far lines mixed)"))
        }
        "DRAM latency (cycles)" => {
            cycles(&mut ours(records, ProbeKind::GlobalLatency, latency("cg", 256 << 20, u64::MAX)))
                .map(|c| format!("{c} (.cg loads, 256-512 MB)"))
        }
        "DSMEM latency, cluster 2 (cycles)" => {
            cycles(&mut ours(records, ProbeKind::DsmemLatency, |r| point_u64(r, "cluster") == Some(2)))
        }
        "DSMEM throughput, cluster 2 / 4" => {
            let at = |c: u64| {
                ours(records, ProbeKind::DsmemBandwidth, move |r| point_u64(r, "cluster") == Some(c))
                    .filter_map(|r| r.record.gbps)
                    .next()
                    .map(|g| format!("{:.2}", g / 1e3))
            };
            at(2).zip(at(4)).map(|(a, b)| format!("{a} / {b} TB/s"))
        }
        "shared-memory throughput (B/clk/SM)" => ours(records, ProbeKind::SharedWidth, |r| {
            point_u64(r, "width") == Some(16) && point_u64(r, "block") == Some(1024)
        })
        .filter_map(|r| r.cycles.map(|c| format!("{:.1} (16-byte loads, 1024 threads)", 512.0 / c)))
        .next(),
        "DRAM bandwidth" => ours(records, ProbeKind::GlobalBandwidth, |_| true)
            .filter_map(|r| r.record.gbps)
            .reduce(f64::max)
            .map(|g| format!("{:.2} TB/s read (best width and hint)", g / 1e3)),
        _ => None,
    };
    out.unwrap_or_else(|| "-".into())
}

/// The comparison of a run's records with [`FIGURES`].
pub fn comparison(records: &[ProbeRecord], style: TableStyle) -> String {
    let mut t = Table::new(&["quantity", "measured here", "published", "GPU", "source"]);
    for f in FIGURES {
        t.push(vec![f.quantity.into(), measured(records, f.quantity), f.value.into(), f.gpu.into(), f.source.into()]);
    }
    t.render(style)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Backend;
    use crate::report::{Provenance, Record};

    fn chase(bytes: u64, steps: u64, cycles: f64) -> ProbeRecord {
        let prov = Provenance { rustc: "r".into(), commit: "c".into(), command: "x".into(), image: "i".into() };
        let mut info = crate::backend::cpu::CpuBackend::new().info().clone();
        info.backend = BackendKind::Cuda;
        let mut record = Record::new("probe", "launch-sized", "probe_global_chase", &info, &prov);
        record.verified = true;
        let point = serde_json::json!({ "bytes": bytes, "hint": "default", "steps": steps });
        ProbeRecord { cycles: Some(cycles), ..ProbeRecord::new(ProbeKind::GlobalLatency, point, record) }
    }

    /// A chase of fewer than WARM_LAPS laps (the old quick run: 256 steps over 64 KB, half a
    /// lap) measures misses and is not set beside the published L1 hit latency; one of 8
    /// laps or more is.
    #[test]
    fn only_warm_chases_stand_for_the_l1_hit_latency() {
        let l1 = "L1 hit latency (cycles)";
        assert_eq!(measured(&[chase(64 << 10, 256, 282.8)], l1), "-");
        // 16 KB is 128 lines: 1023 steps are just under 8 laps.
        assert_eq!(measured(&[chase(16 << 10, 1023, 161.8)], l1), "-");
        assert_eq!(measured(&[chase(16 << 10, 1024, 40.5)], l1), "40.5 (default loads, 8-64 KB)");
        let both = [chase(16 << 10, 4096, 40.5), chase(64 << 10, 256, 282.8)];
        assert_eq!(measured(&both, l1), "40.5 (default loads, 8-64 KB)", "the cold chase is left out");
    }
}
