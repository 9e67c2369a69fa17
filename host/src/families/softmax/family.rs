//! Softmax's description: its problem's sizes, its bench and edge cases, and the row
//! skeleton's kernel with softmax's own launch.

use serde_json::json;

use super::{KERNEL, SoftmaxProblem};
use crate::family::kernel::{Case, KernelFamily, Size};
use crate::family::rows;

pub static SOFTMAX: KernelFamily = KernelFamily {
    name: "softmax",
    about: "Row-wise softmax, one row per block held in workgroup memory.",
    sizes: &[
        Size::of("rows", |s| s.rows as u64, "Rows (default: 65536 on a GPU)"),
        Size::fixed("cols", 4096, "Row length: up to 57344 floats in one block on an H100, 458752 in clusters of 8"),
    ],
    build: |p| {
        let problem = SoftmaxProblem { rows: p.u32("rows")?, cols: p.u32("cols")? };
        Ok(rows::kernel(
            &KERNEL,
            (problem.rows, problem.cols),
            super::default_for,
            move |b, c, v, seed| crate::erased_workload!(b, b => super::prepare(b, problem, c, v, seed)),
        ))
    },
    // Rows of 4096, and rows of 32768 floats (128 KB: past any static limit).
    cases: Some(|s| {
        let problems = [json!({"rows": s.rows, "cols": 4096}), json!({"rows": (s.rows / 8).max(1), "cols": 32_768})];
        problems.into_iter().map(Case::default_config).collect()
    }),
    edge: rows::edge_cases,
    anchor_bytes: Some(rows::anchor_bytes),
    shapes: include_str!("shapes.txt"),
    ..KernelFamily::EMPTY
};
