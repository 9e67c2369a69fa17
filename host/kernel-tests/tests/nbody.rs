//! One n-body step (device-kernels/src/nbody.rs): bodies that are not a multiple of the block
//! (threads past the last body, which still stage tiles) nor of the tile (a last tile
//! partly past the bodies), tiles smaller than the block (threads that stage nothing) and
//! larger (threads that stage several bodies), a tile of one body, blocks that are not a
//! power of two and of one thread, softenings from far below the bodies' distances to above
//! them, and bodies at the same place (only the softening keeps their pull finite). Each
//! thread owns one body: the kernel has no grid-stride loop, so every launch has the grid
//! the config gives.

use dynsmem_kernel_tests::*;
use dynsmem_kernels::gpu::host::FaultKind;
use dynsmem_kernels::nbody::{self, NbodyConfig};

/// `(n, block, tile, softening, dt)`.
type Case = (u32, u32, u32, f32, f32);

/// The draws: each names the path it is there for.
const CASES: &[Case] = &[
    (1, 32, 64, 0.01, 0.1),    // one body: only its own (zero) pull, 31 threads past it
    (5, 8, 4, 0.1, 0.05),      // a tile smaller than the block (threads 4.. stage nothing); a last tile of 1
    (64, 32, 64, 0.01, 0.1),   // exactly one tile, two staged bodies a thread, two whole blocks
    (100, 32, 64, 0.05, 0.1),  // a last tile of 36 and a last block of 4 bodies
    (97, 24, 7, 0.2, 0.1),     // a block that is not a power of two, 14 tiles of 7 (the last 6)
    (130, 16, 128, 1.0, 0.2),  // a tile of 8 bodies a thread, a last tile of 2; softening past the distances
    (33, 33, 1, 0.03, 0.1),    // a tile of one body: 33 tiles, one block exactly
    (200, 64, 200, 0.01, 0.1), // n equals the tile, the block does not divide it
    (7, 1, 3, 0.1, 0.3),       // a block of one thread: it stages every body, 7 blocks
];

/// Positions in [-1, 1]^3 with masses in [0.5, 1.5] / n, velocities in [-0.1, 0.1]^3 (the
/// host's draw); `pos[1]` at `pos[0]`'s place when there are two (a pull only the softening
/// keeps finite).
fn bodies(n: usize, seed: u64) -> (Vec<[f32; 4]>, Vec<[f32; 4]>) {
    let p = floats(4 * n, seed, 1.0);
    let v = floats(3 * n, seed + 1, 0.1);
    let mut pos: Vec<[f32; 4]> =
        (0..n).map(|i| [p[4 * i], p[4 * i + 1], p[4 * i + 2], (1.0 + 0.5 * p[4 * i + 3]) / n as f32]).collect();
    if n >= 2 {
        let (x, y, z) = (pos[0][0], pos[0][1], pos[0][2]);
        pos[1][..3].copy_from_slice(&[x, y, z]);
    }
    let vel = (0..n).map(|i| [v[3 * i], v[3 * i + 1], v[3 * i + 2], 0.0]).collect();
    (pos, vel)
}

/// One step: the new positions and velocities, four floats a body (NaN where not written).
fn step(cpu: &Cpu, pos: &[[f32; 4]], vel: &[[f32; 4]], cfg: NbodyConfig, softening: f32, dt: f32) -> Vec<f32> {
    let n = pos.len() as u32;
    let flat = |v: &[[f32; 4]]| v.iter().flatten().copied().collect::<Vec<f32>>();
    let (pm, vm) = (mem(&flat(pos)), mem(&flat(vel)));
    let nan = vec![f32::NAN; 4 * pos.len()];
    let (new_p, new_v) = (mem(&nan), mem(&nan));
    let args = [
        Arg::Mem(&pm),
        Arg::Mem(&vm),
        Arg::Mem(&new_p),
        Arg::Mem(&new_v),
        Arg::U32(n),
        Arg::F32(dt),
        // As the host passes it: the square in f32.
        Arg::F32(softening * softening),
        Arg::U32(cfg.tile),
    ];
    let dims = LaunchDims {
        grid: cfg.grid(n),
        block: cfg.block,
        shared_bytes: cfg.shared_bytes().expect("layout"),
        cluster: 1,
    };
    launch(cpu, entry(nbody::KERNELS, "nbody_step_f32"), dims, &args);
    let (p, v) = (new_p.to_vec::<f32>(), new_v.to_vec::<f32>());
    (0..pos.len()).flat_map(|i| p[4 * i..4 * i + 4].iter().chain(&v[4 * i..4 * i + 4]).copied()).collect()
}

#[test]
fn every_body_matches_the_reference_on_every_path() {
    let cpu = cpu();
    for (k, &(n, block, tile, softening, dt)) in CASES.iter().enumerate() {
        let cfg = NbodyConfig { block, tile };
        let (pos, vel) = bodies(n as usize, 10 + 2 * k as u64);
        let got = step(&cpu, &pos, &vel, cfg, softening, dt);
        let (mut want, mut scale) = (Vec::new(), Vec::new());
        for i in 0..n as usize {
            let (e, s) = dynsmem_reference::nbody::step_body(&pos, &vel, i, dt, softening);
            want.extend(e);
            scale.extend(s);
        }
        // Per interaction, a difference, a softened square (fma), 1 / sqrt and the cube: about
        // 32 roundings of its term; then a sum of n terms in f32 and the two Euler updates:
        // each rounds by at most eps of the sum of magnitudes the scale holds. The mass and
        // the fourth velocity component are copied: exact (their scale is 0).
        let tol = Tol { abs: 0.0, rel: (n as f64 + 32.0) * f32::EPSILON as f64 };
        assert_close(&format!("nbody n {n} {cfg:?} softening {softening} dt {dt}"), &got, &want, Some(&scale), tol);
    }
}

/// The entry traps on a tile its contract refuses, before touching memory.
#[test]
fn refused_tiles_trap() {
    let cpu = cpu();
    let (pos, vel) = bodies(4, 1);
    let flat = |v: &[[f32; 4]]| v.iter().flatten().copied().collect::<Vec<f32>>();
    let (pm, vm, new_p, new_v) = (mem(&flat(&pos)), mem(&flat(&vel)), zeros::<f32>(16), zeros::<f32>(16));
    for (tile, why) in [(0, "a tile of no bodies"), (u32::MAX, "a tile past the layout's u32 bytes")] {
        let args = [
            Arg::Mem(&pm),
            Arg::Mem(&vm),
            Arg::Mem(&new_p),
            Arg::Mem(&new_v),
            Arg::U32(4),
            Arg::F32(0.1),
            Arg::F32(0.01),
            Arg::U32(tile),
        ];
        let dims = LaunchDims { grid: 1, block: 4, shared_bytes: 1024, cluster: 1 };
        match cpu.launch(entry(nbody::KERNELS, "nbody_step_f32"), dims, &args) {
            Err(LaunchError::Fault { fault, .. }) if matches!(fault.kind, FaultKind::Trap { .. }) => {}
            other => panic!("nbody with {why}: expected a trap, got {:?}", other.map_err(|e| e.to_string())),
        }
        assert!(new_p.to_vec::<f32>().iter().chain(&new_v.to_vec::<f32>()).all(|&x| x == 0.0), "{why}: wrote");
    }
}
