//! JSON as the library reads it: every family's config and problem, timing options and
//! records (serde), and whole record files (`parse_jsonl`), from arbitrary bytes. No
//! panic; what parses goes through the same checks as the `layout` target, and a parsed
//! record serializes and parses again.
#![no_main]

use std::path::Path;

use dynsmem_fuzz::Family;
use dynsmem_host::families as k;
use dynsmem_kernels as d;
use libfuzzer_sys::fuzz_target;
use serde::de::DeserializeOwned;

fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    serde_json::from_slice(bytes).ok()
}

fuzz_target!(|bytes: &[u8]| {
    if let Some(c) = parse::<d::reduce::ReduceConfig>(bytes) {
        let n = parse::<k::reduce::ReduceProblem>(bytes).map_or(1 << 20, |p| p.n);
        dynsmem_fuzz::family(Family::Reduce { block: c.block, ipt: c.items_per_thread, staged: c.staged, n });
        dynsmem_fuzz::reduce_plan(c.block, c.items_per_thread, c.staged, n);
    }
    if let Some(p) = parse::<k::reduce::ReduceProblem>(bytes) {
        dynsmem_fuzz::reduce_plan(256, 8, false, p.n);
    }
    if let Some(c) = parse::<d::histogram::HistogramConfig>(bytes) {
        let bins = parse::<k::histogram::HistogramProblem>(bytes).map_or(256, |p| p.bins);
        dynsmem_fuzz::family(Family::Histogram {
            block: c.block,
            grid: c.grid,
            copies: c.copies,
            cluster: c.cluster,
            held: c.held,
            bits: c.bits,
            merge: c.merge,
            bins,
        });
    }
    if let Some(c) = parse::<d::transpose::TransposeConfig>(bytes) {
        let (rows, cols) = parse::<k::transpose::TransposeProblem>(bytes).map_or((64, 64), |p| (p.rows, p.cols));
        dynsmem_fuzz::family(Family::Transpose { block: c.block, tile: c.tile, pad: c.pad, rows, cols });
    }
    if let Some(c) = parse::<d::softmax::SoftmaxConfig>(bytes) {
        let (rows, cols) = parse::<k::softmax::SoftmaxProblem>(bytes).map_or((4, 4096), |p| (p.rows, p.cols));
        dynsmem_fuzz::family(Family::Softmax { block: c.block, cluster: c.cluster, rows, cols });
    }
    if let Some(c) = parse::<d::nbody::NbodyConfig>(bytes) {
        let n = parse::<k::nbody::NbodyProblem>(bytes).map_or(1024, |p| p.n);
        dynsmem_fuzz::family(Family::Nbody { block: c.block, tile: c.tile, n });
    }
    if let Some(c) = parse::<d::scan::ScanConfig>(bytes) {
        let n = parse::<k::scan::ScanProblem>(bytes).map_or(1 << 20, |p| p.n);
        dynsmem_fuzz::family(Family::Scan { block: c.block, ipt: c.items_per_thread, n });
    }
    if let Some(c) = parse::<d::conv1d::Conv1dConfig>(bytes) {
        let (taps, n) = parse::<k::conv1d::Conv1dProblem>(bytes).map_or((33, 1 << 20), |p| (p.taps, p.n));
        dynsmem_fuzz::family(Family::Conv1d { block: c.block, outputs_per_thread: c.outputs_per_thread, taps, n });
    }
    if let Some(c) = parse::<d::stencil2d::Stencil2dConfig>(bytes) {
        let p = parse::<k::stencil2d::Stencil2dProblem>(bytes);
        let (radius, width, height) = p.map_or((1, 512, 512), |p| (p.radius, p.width, p.height));
        dynsmem_fuzz::family(Family::Stencil2d {
            block: c.block,
            tile_w: c.tile_w,
            tile_h: c.tile_h,
            radius,
            width,
            height,
        });
    }
    if let Some(t) = parse::<dynsmem_host::measure::TimingOptions>(bytes) {
        let _ = t.validate();
    }
    if let Some(r) = parse::<dynsmem_host::report::Record>(bytes) {
        let text = serde_json::to_string(&r).expect("a parsed record serializes");
        let again: dynsmem_host::report::Record = serde_json::from_str(&text).expect("and parses again");
        assert_eq!(again.kernel, r.kernel);
    }
    // Whole files: every line a record, torn (reported) or an error naming it.
    let lines = bytes.split(|&b| b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace)).count();
    if let Ok(c) = dynsmem_host::report::parse_jsonl(bytes, Path::new("fuzz.jsonl")) {
        assert!(
            c.records.len() + c.torn.len() <= lines,
            "{} records, {} torn, {lines} lines",
            c.records.len(),
            c.torn.len()
        );
    }
});
