//! RMSNorm's description: its problem's sizes, its bench and edge cases, and the row
//! skeleton's kernel with RMSNorm's own launch.

use serde_json::json;

use super::{KERNEL, RmsnormProblem};
use crate::family::kernel::{Case, KernelFamily, Size};
use crate::family::rows;

/// A GPU-sized square case runs where the sizes are a GPU's.
const GPU_ROWS: u32 = 65_536;

pub static RMSNORM: KernelFamily = KernelFamily {
    name: "rmsnorm",
    about: "Row-wise RMSNorm forward, one row per block held in workgroup memory.",
    sizes: &[
        Size::of("rows", |s| s.rows as u64, "Rows (default: 65536 on a GPU)"),
        Size::fixed("cols", 4096, "Row length: up to 57344 floats in one block on an H100, 458752 in clusters of 8"),
        Size::f32("eps", 1e-5, "Added to the mean square before the square root"),
    ],
    build: |p| {
        let problem = RmsnormProblem { rows: p.u32("rows")?, cols: p.u32("cols")?, eps: p.f32("eps") };
        Ok(rows::kernel(
            &KERNEL,
            (problem.rows, problem.cols),
            super::default_for,
            move |b, c, v, seed| crate::erased_workload!(b, b => super::prepare(b, problem, c, v, seed)),
        ))
    },
    // Rows of 4096, rows of 32768 floats (128 KB: past any static limit), and on a GPU
    // 8192 x 8192.
    cases: Some(|s| {
        let mut shapes = vec![(s.rows, 4096), ((s.rows / 8).max(1), 32_768)];
        if s.rows >= GPU_ROWS {
            shapes.push((8192, 8192));
        }
        shapes.into_iter().map(|(rows, cols)| Case::default_config(json!({"rows": rows, "cols": cols}))).collect()
    }),
    edge: rows::edge_cases,
    anchor_bytes: Some(rows::anchor_bytes),
    shapes: include_str!("shapes.txt"),
    ..KernelFamily::EMPTY
};
