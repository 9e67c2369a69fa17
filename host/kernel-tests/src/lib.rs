//! What the kernel tests share: the executor set up as they run it, inputs, and checks that
//! state the error they admit.
//!
//! Each file of `tests/` takes one family of `device-kernels/src` and launches its entries
//! on the CPU executor (`dynsmem-cpu`) at draws chosen to take every path of the kernel, not
//! only every value of its config: grids smaller than the problem (the grid-stride and
//! row-step loops past one grid), rows and sides that are not multiples of the vector or
//! tile, unaligned starts, clusters, every entry of a family. The expected results come
//! from `dynsmem-reference`, which shares no code with the kernels.
//!
//! Nothing here depends on the host: grids are given, not derived from its core count, so
//! a 2-core and a 64-core machine run the same launches (the fast schedule's workers only
//! spread workgroups over the cores; each workgroup's run is the same).

use dynsmem_cpu::rng::SplitMix64;
pub use dynsmem_cpu::{Arg, Cpu, CpuMem, KernelEntry, LaunchDims, LaunchError, Schedule};

/// The executor the tests run on: `DYNSMEM_CPU_SCHEDULE` (fast by default) and
/// `DYNSMEM_CPU_SEED`, as the host's CPU backend.
pub fn cpu() -> Cpu {
    Cpu::new(Schedule::from_env())
}

/// The entry `name` of `table`.
///
/// # Panics
/// When the table has no such entry.
pub fn entry(table: &'static [KernelEntry], name: &str) -> &'static KernelEntry {
    table.iter().find(|e| e.name == name).unwrap_or_else(|| panic!("no kernel {name} in its table"))
}

/// A buffer holding `data`.
pub fn mem<T: bytemuck::Pod>(data: &[T]) -> CpuMem {
    CpuMem::from_slice(data).expect("host allocation")
}

/// `n` zeroed `T`s.
pub fn zeros<T: bytemuck::Pod>(n: usize) -> CpuMem {
    CpuMem::zeroed(n * size_of::<T>()).expect("host allocation")
}

/// `n` floats uniform in `[-scale, scale)` from `seed`.
pub fn floats(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    (0..n).map(|_| (2.0 * rng.next_f32() - 1.0) * scale).collect()
}

/// `n` u32 below `bound` from `seed`.
pub fn below(n: usize, seed: u64, bound: u32) -> Vec<u32> {
    let mut rng = SplitMix64::new(seed);
    (0..n).map(|_| rng.below(bound as u64) as u32).collect()
}

/// Launches `entry`, panicking with the executor's report (kernel, workgroup, thread, fault)
/// when it faults.
pub fn launch(cpu: &Cpu, entry: &'static KernelEntry, dims: LaunchDims, args: &[Arg<'_>]) {
    if let Err(e) = cpu.launch(entry, dims, args) {
        panic!("{} at {dims:?}: {e}", entry.name);
    }
}

/// The error a comparison admits at output `i`: `abs + rel * scale[i]` (without scales,
/// `rel` times the expected value's magnitude).
#[derive(Debug, Clone, Copy)]
pub struct Tol {
    pub abs: f64,
    pub rel: f64,
}

impl Tol {
    /// Exactly equal (after rounding to f32).
    pub const EXACT: Tol = Tol { abs: 0.0, rel: 0.0 };
}

/// Compares `got` with `want` element by element within `tol` (scaled by `scale[i]`, or
/// `|want[i]|` without scales); NaN matches only NaN. Panics naming `what`, the first
/// element out of tolerance, both values, the bound, and how many more are out.
#[track_caller]
pub fn assert_close(what: &str, got: &[f32], want: &[f64], scale: Option<&[f64]>, tol: Tol) {
    assert_eq!(got.len(), want.len(), "{what}: {} results, {} expected", got.len(), want.len());
    let bad: Vec<usize> = (0..got.len())
        .filter(|&i| {
            let (g, w) = (got[i] as f64, want[i]);
            if w.is_nan() || g.is_nan() {
                return !(w.is_nan() && g.is_nan());
            }
            if tol.abs == 0.0 && tol.rel == 0.0 {
                return got[i] != w as f32;
            }
            let s = scale.map_or(w.abs(), |s| s[i]);
            (g - w).abs() > tol.abs + tol.rel * s
        })
        .collect();
    if let Some(&i) = bad.first() {
        let s = scale.map_or(want[i].abs(), |s| s[i]);
        panic!(
            "{what}: element {i} is {} where {} was expected (admitted {:e} + {:e} x {s:e}); {} of {} out of tolerance",
            got[i],
            want[i],
            tol.abs,
            tol.rel,
            bad.len(),
            got.len()
        );
    }
}

/// `got == want`, naming `what` and the first difference.
#[track_caller]
pub fn assert_same<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: {} results, {} expected", got.len(), want.len());
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        let wrong = (0..got.len()).filter(|&i| got[i] != want[i]).count();
        panic!("{what}: element {i} is {:?} where {:?} was expected; {wrong} of {} differ", got[i], want[i], got.len());
    }
}
