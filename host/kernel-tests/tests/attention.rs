//! Attention forward and backward on the CPU executor (device-kernels/src/attention.rs,
//! attention_backward.rs): the SIMT entries (the CPU runs no wgmma: `unreachable.txt`), f16
//! and bf16, D 64 and 128, causal and not, several heads, at sequence lengths that leave
//! partial query and key tiles, tiles `(bq, bk)` of every order (a query tile wider than the
//! sequence, a key tile of one key, `bq` above and below `bk`), against the f64 references of
//! `dynsmem_reference::attention` with their per-entry bounds (one left-out key or pair
//! fails them: the host family's unit tests count it). The backward's `O` and `lse` are the
//! reference forward's, rounded as the forward stores them. And the traps a launch that
//! breaks the kernels' rules meets.

#![feature(f16)]

use dynsmem_kernel_tests::*;
use dynsmem_kernels::attention::{self, AttentionConfig};
use dynsmem_kernels::attention_backward::{self, AttentionBwdConfig, DELTA_THREADS};
use dynsmem_kernels::gpu::host::{Fault, FaultKind};
use dynsmem_reference::attention::{Form, Grad, Shape, Tensors, backward_row, delta, forward_row};

/// The 16-bit input types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Half {
    F16,
    Bf16,
}

impl Half {
    /// `x` rounded to the type (to nearest, ties to even), as bits.
    fn bits(self, x: f32) -> u16 {
        match self {
            Half::F16 => (x as f16).to_bits(),
            Half::Bf16 => {
                let b = x.to_bits();
                ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) as u16
            }
        }
    }
    /// The value of `bits`, exactly (f16 decoded from its fields here, not by the kernels'
    /// conversion).
    fn value(self, bits: u16) -> f32 {
        match self {
            Half::Bf16 => f32::from_bits((bits as u32) << 16),
            Half::F16 => {
                let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
                let (e, m) = (((bits >> 10) & 0x1F) as i32, (bits & 0x3FF) as f32);
                match e {
                    0 => sign * m * 2f32.powi(-24),
                    31 => {
                        if m == 0.0 {
                            sign * f32::INFINITY
                        } else {
                            f32::NAN
                        }
                    }
                    _ => sign * (1024.0 + m) * 2f32.powi(e - 25),
                }
            }
        }
    }
    fn unit_roundoff(self) -> f64 {
        match self {
            Half::F16 => 2f64.powi(-11),
            Half::Bf16 => 2f64.powi(-8),
        }
    }
    fn name(self) -> &'static str {
        match self {
            Half::F16 => "f16",
            Half::Bf16 => "bf16",
        }
    }
    /// A NaN of the type: what `O` holds before a launch, so that a row no thread writes fails.
    fn nan(self) -> u16 {
        match self {
            Half::F16 => 0x7E00,
            Half::Bf16 => 0x7FC0,
        }
    }
}

/// `n` values uniform in `[-scale, scale)` rounded to `h`: `(bits, values)`.
fn halves(h: Half, n: usize, seed: u64, scale: f32) -> (Vec<u16>, Vec<f32>) {
    let bits: Vec<u16> = floats(n, seed, scale).iter().map(|&x| h.bits(x)).collect();
    let values = bits.iter().map(|&b| h.value(b)).collect();
    (bits, values)
}

/// `(heads, seq, d, dtype, causal, bq, bk)`.
type Case = (u32, u32, u32, Half, bool, u32, u32);

/// The forward's draws: every SIMT entry causal and not; each names the path it is there for.
const FORWARD: &[Case] = &[
    (2, 37, 64, Half::F16, false, 16, 16), // a partial last query tile (threads past seq) and key tile
    (2, 37, 64, Half::F16, true, 5, 7),    // causal: key tiles past a row's last key, key tiles cut at a row
    (3, 9, 128, Half::F16, false, 32, 64), // a query tile and a key tile wider than the sequence
    (2, 21, 128, Half::F16, true, 4, 16),  // causal, bq below bk: the last query tile sees every key
    (1, 1, 64, Half::Bf16, false, 1, 1),   // one row, one key: one thread a block
    (2, 23, 64, Half::Bf16, true, 16, 5),  // causal, bq above bk: several key tiles a query tile
    (1, 20, 128, Half::Bf16, true, 8, 3),  // causal, D 128, key tiles of 3 (20 = 6 x 3 + 2)
    (2, 19, 128, Half::Bf16, false, 7, 6), // ragged both ways, D 128
    (2, 131, 128, Half::F16, true, 32, 24), // causal, five query tiles of six key tiles, both partial
];

/// The backward's draws: every dK/dV and dQ entry causal and not.
const BACKWARD: &[Case] = &[
    (2, 37, 64, Half::F16, false, 16, 16), // partial last query and key tiles, both kernels
    (2, 37, 64, Half::F16, true, 5, 7),    // causal: dK/dV from its first key, dQ's tiles past a row
    (1, 65, 128, Half::F16, false, 32, 16), // bq above bk: dK/dV stages a tile in several strides
    (2, 17, 128, Half::F16, true, 4, 5),   // causal, D 128, bq below bk
    (3, 1, 64, Half::Bf16, false, 1, 1),   // one row a head, one thread a block
    (3, 50, 64, Half::Bf16, true, 16, 64), // 150 rows: the pre-pass over two blocks; a key tile wider than seq
    (2, 20, 128, Half::Bf16, true, 8, 3),  // causal, D 128, bq above bk
    (1, 19, 128, Half::Bf16, false, 6, 9), // ragged both ways, D 128
    (2, 131, 64, Half::F16, true, 24, 32), // causal, many tiles each way, both partial
];

/// The entry of `kernel` (`attention_simt`, `attention_bwd_simt_dq`, ...) for `h` and `d`.
fn name(kernel: &str, h: Half, d: u32) -> String {
    format!("{kernel}_{}_d{d}", h.name())
}

/// The inputs of a draw: `Q`, `K` in `[-2, 2)`, `V` in `[-1, 1)` (the host family's ranges:
/// scores of standard deviation about 1.3), as bits and values.
fn qkv(h: Half, len: usize, seed: u64) -> [(Vec<u16>, Vec<f32>); 3] {
    [halves(h, len, seed, 2.0), halves(h, len, seed + 1, 2.0), halves(h, len, seed + 2, 1.0)]
}

#[test]
fn forward_matches_the_reference_on_every_path() {
    let cpu = cpu();
    for (c, &(heads, seq, d, h, causal, bq, bk)) in FORWARD.iter().enumerate() {
        let what = format!("{} seq {seq} heads {heads} causal {causal} bq {bq} bk {bk}", name("attention_simt", h, d));
        let len = (heads * seq * d) as usize;
        let [(qb, q), (kb, k), (vb, v)] = qkv(h, len, 100 * c as u64);
        let cfg = AttentionConfig::simt(bq, bk);
        let (qm, km, vm) = (mem(&qb), mem(&kb), mem(&vb));
        let om = mem(&vec![h.nan(); len]);
        let lm = mem(&vec![f32::NAN; (heads * seq) as usize]);
        let dims = LaunchDims {
            grid: cfg.grid(seq, heads) as u32,
            block: cfg.threads(),
            shared_bytes: cfg.shared_bytes(d).expect("layout"),
            cluster: 1,
        };
        let args = [
            Arg::Mem(&qm),
            Arg::Mem(&km),
            Arg::Mem(&vm),
            Arg::Mem(&om),
            Arg::Mem(&lm),
            Arg::U32(seq),
            Arg::U32(heads),
            Arg::U32(causal as u32),
            Arg::U32(bq),
            Arg::U32(bk),
            Arg::U32(cfg.stages),
            Arg::U32(0),
        ];
        launch(&cpu, entry(attention::KERNELS, &name("attention_simt", h, d)), dims, &args);
        let o: Vec<f32> = om.to_vec::<u16>().iter().map(|&b| h.value(b)).collect();
        let lse: Vec<f32> = lm.to_vec();
        let shape = Shape { seq: seq as usize, d: d as usize, causal };
        let (mut want_o, mut err_o, mut want_lse, mut err_lse) = (vec![], vec![], vec![], vec![]);
        for head in 0..heads as usize {
            for row in 0..seq as usize {
                let r = forward_row(shape, h.unit_roundoff(), [&q, &k, &v], head, row, None);
                want_o.extend(r.out);
                err_o.extend(r.out_err);
                want_lse.push(r.lse);
                err_lse.push(r.lse_err);
            }
        }
        // Each entry within its own bound (the reference's: scores' f32 dot products, the
        // exponentials, the sums over the keys, P and O rounded to 16 bits).
        let per_entry = Tol { abs: 0.0, rel: 1.0 };
        assert_close(&format!("O of {what}"), &o, &want_o, Some(&err_o), per_entry);
        assert_close(&format!("lse of {what}"), &lse, &want_lse, Some(&err_lse), per_entry);
    }
}

/// What the backward kernels produce for a draw.
struct Gradients {
    delta: Vec<f32>,
    dq: Vec<f32>,
    dk: Vec<f32>,
    dv: Vec<f32>,
}

/// Runs the pre-pass, the dK/dV kernel and the dQ kernel on `tensors` (`Q`, `K`, `V`, `dO`,
/// `O` as bits) and `lse`.
fn backward(cpu: &Cpu, (heads, seq, d, h, causal, bq, bk): Case, tensors: [&[u16]; 5], lse: &[f32]) -> Gradients {
    let cfg = AttentionBwdConfig::new(bq, bk);
    let len = tensors[0].len();
    let [q, k, v, d_o, o] = tensors.map(mem);
    let (lm, deltam) = (mem(lse), mem(&vec![f32::NAN; lse.len()]));
    let nan = || mem(&vec![f32::NAN; len]);
    let (dq, dk, dv) = (nan(), nan(), nan());
    let rows = heads * seq;
    let delta_dims = LaunchDims {
        grid: AttentionBwdConfig::delta_grid(rows as u64) as u32,
        block: DELTA_THREADS,
        shared_bytes: 0,
        cluster: 1,
    };
    let delta_entry = format!("attention_bwd_delta_{}", h.name());
    let args = [Arg::Mem(&o), Arg::Mem(&d_o), Arg::Mem(&deltam), Arg::U32(rows), Arg::U32(d)];
    launch(cpu, entry(attention_backward::KERNELS, &delta_entry), delta_dims, &args);
    let tail = [Arg::U32(seq), Arg::U32(heads), Arg::U32(causal as u32), Arg::U32(bq), Arg::U32(bk)];
    let head = [Arg::Mem(&q), Arg::Mem(&k), Arg::Mem(&v), Arg::Mem(&d_o), Arg::Mem(&lm), Arg::Mem(&deltam)];
    let dims = LaunchDims {
        grid: cfg.dkdv_grid(seq, heads) as u32,
        block: bk,
        shared_bytes: cfg.dkdv_bytes(d).expect("layout"),
        cluster: 1,
    };
    let args: Vec<Arg<'_>> =
        head.iter().copied().chain([Arg::Mem(&dk), Arg::Mem(&dv)]).chain(tail.iter().copied()).collect();
    launch(cpu, entry(attention_backward::KERNELS, &name("attention_bwd_simt_dkdv", h, d)), dims, &args);
    let dims = LaunchDims {
        grid: cfg.dq_grid(seq, heads) as u32,
        block: bq,
        shared_bytes: cfg.dq_bytes(d).expect("layout"),
        cluster: 1,
    };
    let args: Vec<Arg<'_>> = head.iter().copied().chain([Arg::Mem(&dq)]).chain(tail.iter().copied()).collect();
    launch(cpu, entry(attention_backward::KERNELS, &name("attention_bwd_simt_dq", h, d)), dims, &args);
    Gradients { delta: deltam.to_vec(), dq: dq.to_vec(), dk: dk.to_vec(), dv: dv.to_vec() }
}

#[test]
fn backward_matches_the_reference_on_every_path() {
    let cpu = cpu();
    for (c, &case) in BACKWARD.iter().enumerate() {
        let (heads, seq, d, h, causal, bq, bk) = case;
        let what = format!("{} {} seq {seq} heads {heads} causal {causal} bq {bq} bk {bk}", h.name(), d);
        let len = (heads * seq * d) as usize;
        let [(qb, q), (kb, k), (vb, v)] = qkv(h, len, 1000 + 100 * c as u64);
        let (gb, g) = halves(h, len, 1000 + 100 * c as u64 + 3, 1.0);
        // The forward's O (rounded to the input type, as the forward stores it) and lse (f32),
        // from the reference: the backward's bounds take them as given.
        let shape = Shape { seq: seq as usize, d: d as usize, causal };
        let (mut ob, mut lse) = (Vec::with_capacity(len), Vec::new());
        for head in 0..heads as usize {
            for row in 0..seq as usize {
                let r = forward_row(shape, h.unit_roundoff(), [&q, &k, &v], head, row, None);
                ob.extend(r.out.iter().map(|&x| h.bits(x as f32)));
                lse.push(r.lse as f32);
            }
        }
        let o: Vec<f32> = ob.iter().map(|&b| h.value(b)).collect();
        let got = backward(&cpu, case, [&qb, &kb, &vb, &gb, &ob], &lse);

        // The pre-pass: a chain of `d` fused multiply-adds of exact products (16-bit x 16-bit
        // fits f32's significand): `d` roundings, each at most eps relative to the sum of
        // the products' magnitudes.
        let rows = (heads * seq) as usize;
        let (want, scale): (Vec<f64>, Vec<f64>) = delta(&o, &g, rows, d as usize).into_iter().unzip();
        let rel = d as f64 * f32::EPSILON as f64;
        assert_close(&format!("Delta of {what}"), &got.delta, &want, Some(&scale), Tol { abs: 0.0, rel });

        let t = Tensors::new(shape, [&q, &k, &v, &g], &o, &lse);
        let (mut dq, mut dq_err, mut dk, mut dk_err, mut dv, mut dv_err) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        for head in 0..heads as usize {
            for r in 0..seq as usize {
                let a = backward_row(&t, Grad::Dq, head, r, None, Form::F32);
                dq.extend(a.a);
                dq_err.extend(a.a_err);
                let b = backward_row(&t, Grad::Dkdv, head, r, None, Form::F32);
                dk.extend(b.a);
                dk_err.extend(b.a_err);
                dv.extend(b.b);
                dv_err.extend(b.b_err);
            }
        }
        // Each entry within its own bound (the reference's: the weights' and dS's errors,
        // the f32 accumulation over the pairs, the final scale).
        let per_entry = Tol { abs: 0.0, rel: 1.0 };
        assert_close(&format!("dQ of {what}"), &got.dq, &dq, Some(&dq_err), per_entry);
        assert_close(&format!("dK of {what}"), &got.dk, &dk, Some(&dk_err), per_entry);
        assert_close(&format!("dV of {what}"), &got.dv, &dv, Some(&dv_err), per_entry);
    }
}

/// The fault of a launch expected to fail.
fn fault(cpu: &Cpu, entry: &'static KernelEntry, dims: LaunchDims, args: &[Arg<'_>]) -> String {
    match cpu.launch(entry, dims, args) {
        Err(LaunchError::Fault { fault, .. }) => format!("{:?}", fault.kind),
        other => panic!("{} at {dims:?}: expected a fault, got {other:?}", entry.name),
    }
}

/// Launches that break a kernel's rules (a block other than the config's threads, a config
/// that does not fit, a head dimension no entry has) trap before they touch memory.
#[test]
fn launches_that_break_the_rules_trap() {
    let cpu = cpu();
    let (seq, d) = (8u32, 64u32);
    let len = (seq * d) as usize;
    let (x, y) = (mem(&vec![0u16; len]), mem(&vec![0f32; len]));
    let lse = mem(&vec![0f32; seq as usize]);
    let fwd = |bq: u32, bk: u32, block: u32| {
        let cfg = AttentionConfig::simt(bq.min(256), bk.min(256));
        let dims = LaunchDims { grid: 1, block, shared_bytes: cfg.shared_bytes(d).unwrap(), cluster: 1 };
        let args = [
            Arg::Mem(&x),
            Arg::Mem(&x),
            Arg::Mem(&x),
            Arg::Mem(&x),
            Arg::Mem(&lse),
            Arg::U32(seq),
            Arg::U32(1),
            Arg::U32(0),
            Arg::U32(bq),
            Arg::U32(bk),
            Arg::U32(1),
            Arg::U32(0),
        ];
        fault(&cpu, entry(attention::KERNELS, "attention_simt_f16_d64"), dims, &args)
    };
    for (bq, bk, block, why) in [(8, 8, 16, "a block of 16 for bq 8"), (300, 8, 8, "bq past 256"), (8, 0, 8, "bk 0")] {
        assert!(fwd(bq, bk, block).starts_with("Trap"), "forward, {why}: {}", fwd(bq, bk, block));
    }
    let bwd = |kernel: &str, bq: u32, bk: u32, block: u32| {
        let cfg = AttentionBwdConfig::new(bq.min(256), bk.min(256));
        let shared = if kernel.contains("dq") { cfg.dq_bytes(d) } else { cfg.dkdv_bytes(d) }.unwrap();
        let dims = LaunchDims { grid: 1, block, shared_bytes: shared, cluster: 1 };
        let mut args =
            vec![Arg::Mem(&x), Arg::Mem(&x), Arg::Mem(&x), Arg::Mem(&x), Arg::Mem(&lse), Arg::Mem(&lse), Arg::Mem(&y)];
        if !kernel.contains("dq") {
            args.push(Arg::Mem(&y));
        }
        args.extend([Arg::U32(seq), Arg::U32(1), Arg::U32(0), Arg::U32(bq), Arg::U32(bk)]);
        fault(&cpu, entry(attention_backward::KERNELS, kernel), dims, &args)
    };
    for (kernel, bq, bk, block, why) in [
        ("attention_bwd_simt_dkdv_f16_d64", 8, 4, 8, "a block of bq, not bk"),
        ("attention_bwd_simt_dkdv_f16_d64", 8, 300, 256, "bk past 256"),
        ("attention_bwd_simt_dq_f16_d64", 8, 4, 4, "a block of bk, not bq"),
        ("attention_bwd_simt_dq_f16_d64", 0, 4, 4, "bq 0"),
    ] {
        let f = bwd(kernel, bq, bk, block);
        assert!(f.starts_with("Trap"), "{kernel}, {why}: {f}");
    }
    let delta = |d: u32, block: u32| {
        let dims = LaunchDims { grid: 1, block, shared_bytes: 0, cluster: 1 };
        let args = [Arg::Mem(&x), Arg::Mem(&x), Arg::Mem(&lse), Arg::U32(seq), Arg::U32(d)];
        fault(&cpu, entry(attention_backward::KERNELS, "attention_bwd_delta_f16"), dims, &args)
    };
    for (d, block, why) in [(96, DELTA_THREADS, "D 96"), (64, 64, "a block of 64")] {
        assert!(delta(d, block).starts_with("Trap"), "pre-pass, {why}: {}", delta(d, block));
    }
}

/// The wgmma entries (which the CPU cannot run past their first `wgmma`) still check their
/// launch first: a block other than the config's threads, a config that does not fit, a
/// compiled-in entry launched with another tile, each trap in `attention.rs` before any
/// tensor-core instruction.
#[test]
fn wgmma_launches_that_break_the_rules_trap_before_a_tensor_core_instruction() {
    let cpu = cpu();
    let (x, lse) = (mem(&vec![0u16; 64 * 128]), mem(&vec![0f32; 64]));
    for (kernel, bq, stages, pingpong, block, why) in [
        ("attention_wgmma_f16_d64", 64, 2, 0, 384, "a block of 384 for one math warpgroup"),
        ("attention_wgmma_bf16_d128", 96, 2, 0, 256, "bq 96"),
        ("attention_wgmma_f16_d128", 64, 2, 1, 256, "ping-pong with one math warpgroup"),
        ("attention_wgmma_bf16_d64", 128, 9, 1, 384, "9 stages"),
        ("attention_wgmma_f16_d128_fixed", 64, 2, 1, 384, "the compiled-in entry with bq 64"),
        ("attention_wgmma_f16_d128_fixed", 128, 3, 1, 384, "the compiled-in entry with 3 stages"),
        ("attention_wgmma_f16_d128_fixed", 128, 2, 0, 384, "the compiled-in entry without ping-pong"),
    ] {
        let dims = LaunchDims { grid: 1, block, shared_bytes: 1 << 16, cluster: 1 };
        let args = [
            Arg::Mem(&x),
            Arg::Mem(&x),
            Arg::Mem(&x),
            Arg::Mem(&x),
            Arg::Mem(&lse),
            Arg::U32(64),
            Arg::U32(1),
            Arg::U32(0),
            Arg::U32(bq),
            Arg::U32(attention::WGMMA_BK),
            Arg::U32(stages),
            Arg::U32(pingpong),
        ];
        let f = trap_site(&cpu, entry(attention::KERNELS, kernel), dims, &args);
        assert!(f.ends_with("attention.rs"), "{kernel}, {why}: {f}");
    }
}

/// The backward's wgmma entries check their launch the same way before any tensor-core
/// instruction: a key tile that is not 64 or 128, a ring outside 2 to 4 slots, a block other
/// than the copy warpgroup plus one math warpgroup per 64 keys, each trap in
/// `attention_backward/wgmma.rs`.
#[test]
fn backward_wgmma_launches_that_break_the_rules_trap_before_a_tensor_core_instruction() {
    let cpu = cpu();
    let (x, f) = (mem(&vec![0u16; 64 * 128]), mem(&vec![0f32; 64 * 128]));
    for (kernel, bk, stages, block, why) in [
        ("attention_bwd_wgmma_f16_d64", 96, 2, 256, "bk 96"),
        ("attention_bwd_wgmma_bf16_d64", 192, 2, 512, "bk 192 (three math warpgroups)"),
        ("attention_bwd_wgmma_f16_d128", 128, 1, 384, "one slot"),
        ("attention_bwd_wgmma_bf16_d128", 64, 5, 256, "5 slots"),
        ("attention_bwd_wgmma_f16_d128", 128, 2, 256, "a block of 256 for two math warpgroups"),
        ("attention_bwd_wgmma_bf16_d64", 64, 3, 384, "a block of 384 for one math warpgroup"),
    ] {
        let dims = LaunchDims { grid: 1, block, shared_bytes: 1 << 16, cluster: 1 };
        let args = [
            Arg::Mem(&x),
            Arg::Mem(&x),
            Arg::Mem(&x),
            Arg::Mem(&x),
            Arg::Mem(&f),
            Arg::Mem(&f),
            Arg::Mem(&f),
            Arg::Mem(&f),
            Arg::Mem(&f),
            Arg::U32(64),
            Arg::U32(1),
            Arg::U32(0),
            Arg::U32(bk),
            Arg::U32(stages),
        ];
        let at = trap_site(&cpu, entry(attention_backward::KERNELS, kernel), dims, &args);
        assert!(at.ends_with("wgmma.rs"), "{kernel}, {why}: {at}");
    }
}

/// The file of the `gpu::trap` a launch expected to trap stops at.
fn trap_site(cpu: &Cpu, entry: &'static KernelEntry, dims: LaunchDims, args: &[Arg<'_>]) -> String {
    match cpu.launch(entry, dims, args) {
        Err(LaunchError::Fault { fault: Fault { kind: FaultKind::Trap { at }, .. }, .. }) => at.file().to_string(),
        other => panic!("{} at {dims:?}: expected a trap, got {other:?}", entry.name),
    }
}

/// The configs the kernels accept are the fields' rules, for each kind and head dimension,
/// and each names an entry of its kind, type and head dimension.
#[test]
fn configs_fit_by_the_rules_and_name_their_entries() {
    use attention::{AttentionKind, FIXED};
    for kind in [AttentionKind::Wgmma, AttentionKind::Simt] {
        for bq in [0, 1, 33, 64, 96, 128, 192, 256, 257] {
            for bk in [0, 1, 7, 128, 256, 257] {
                for stages in 0..=attention::MAX_STAGES + 1 {
                    for pingpong in [false, true] {
                        for d in [32, 64, 96, 128] {
                            let cfg = AttentionConfig { kind, bq, bk, stages, pingpong };
                            let want = [64, 128].contains(&d)
                                && match kind {
                                    AttentionKind::Wgmma => {
                                        (bq == 64 || bq == 128)
                                            && bk == 128
                                            && (2..=8).contains(&stages)
                                            && (!pingpong || bq == 128)
                                    }
                                    AttentionKind::Simt => {
                                        (1..=256).contains(&bq) && (1..=256).contains(&bk) && stages == 1 && !pingpong
                                    }
                                };
                            assert_eq!(cfg.fits(d), want, "{cfg:?} D {d}");
                            for bf16 in [false, true] {
                                // Named by kind, type and D alone (the host refuses what
                                // does not fit before it asks).
                                let name = attention::entry_name(&cfg, d, bf16, false);
                                if d != 64 && d != 128 {
                                    assert_eq!(name, None, "{cfg:?} D {d}");
                                    continue;
                                }
                                let ty = if bf16 { "bf16" } else { "f16" };
                                let k = if kind == AttentionKind::Wgmma { "wgmma" } else { "simt" };
                                assert_eq!(name, Some(format!("attention_{k}_{ty}_d{d}").as_str()), "{cfg:?}");
                                assert_eq!(entry(attention::KERNELS, name.unwrap()).params.len(), 12);
                                let fixed = attention::entry_name(&cfg, d, bf16, true);
                                let is_fixed = cfg == FIXED && d == 128 && !bf16;
                                assert_eq!(fixed.is_some(), is_fixed, "{cfg:?} D {d} bf16 {bf16}: {fixed:?}");
                            }
                        }
                    }
                }
            }
        }
    }
    assert_eq!(attention::entry_name(&FIXED, 128, false, true), Some("attention_wgmma_f16_d128_fixed"));
    assert!(entry(attention::KERNELS, "attention_wgmma_f16_d128_fixed").params.len() == 12);
    for bq in [0, 1, 17, 256, 257] {
        for bk in [0, 1, 17, 256, 257] {
            for d in [32, 64, 96, 128] {
                let want = [64, 128].contains(&d) && (1..=256).contains(&bq) && (1..=256).contains(&bk);
                assert_eq!(AttentionBwdConfig::new(bq, bk).fits(d), want, "backward bq {bq} bk {bk} D {d}");
            }
        }
    }
    // The wgmma kind: 64 queries per tile, 64 or 128 keys (a math warpgroup per 64), 2 to 4
    // slots; its threads are the copy warpgroup's and the math warpgroups'.
    use attention_backward::wgmma::{MAX_STAGES, MIN_STAGES, WGMMA_BQ};
    for bq in [0, 32, WGMMA_BQ, 128] {
        for bk in [0, 32, 64, 96, 128, 192, 256] {
            for stages in 0..=MAX_STAGES + 1 {
                for d in [32, 64, 96, 128] {
                    let cfg = AttentionBwdConfig { bq, ..AttentionBwdConfig::wgmma(bk, stages) };
                    let want = [64, 128].contains(&d)
                        && bq == 64
                        && (bk == 64 || bk == 128)
                        && (MIN_STAGES..=MAX_STAGES).contains(&stages);
                    assert_eq!(cfg.fits(d), want, "backward wgmma bq {bq} bk {bk} {stages} slots D {d}");
                }
            }
        }
    }
    assert_eq!(AttentionBwdConfig::wgmma(128, 2).threads(), 384);
    assert_eq!(AttentionBwdConfig::wgmma(64, 2).threads(), 256);
    for d in [32, 64, 96, 128] {
        for bf16 in [false, true] {
            let name = attention_backward::wgmma_entry_name(d, bf16);
            assert_eq!(name.is_some(), d == 64 || d == 128, "backward wgmma D {d}");
            if let Some(n) = name {
                let ty = if bf16 { "bf16" } else { "f16" };
                assert_eq!(n, format!("attention_bwd_wgmma_{ty}_d{d}"));
                assert_eq!(entry(attention_backward::KERNELS, n).params.len(), 14, "{n}");
            }
        }
    }
    for d in [32, 64, 96, 128] {
        for bf16 in [false, true] {
            let names = attention_backward::entry_names(d, bf16);
            assert_eq!(names.is_some(), d == 64 || d == 128, "backward D {d}");
            let ty = if bf16 { "bf16" } else { "f16" };
            if let Some([delta, dkdv, dq]) = names {
                assert_eq!(delta, format!("attention_bwd_delta_{ty}"));
                assert_eq!(dkdv, format!("attention_bwd_simt_dkdv_{ty}_d{d}"));
                assert_eq!(dq, format!("attention_bwd_simt_dq_{ty}_d{d}"));
                for (n, params) in [(delta, 5), (dkdv, 13), (dq, 12)] {
                    assert_eq!(entry(attention_backward::KERNELS, n).params.len(), params, "{n}");
                }
            }
        }
    }
}
