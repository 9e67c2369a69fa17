//! HGEMM's cost model: a predicted time for each config of a problem, used to pick the
//! heuristic default and to rank the configs tuning on first use measures
//! ([`crate::tune::autotune`]). It orders tile shapes and schedules; its constants are round
//! figures of the H100 (SXM), not predictions of milliseconds.
//!
//! For a wgmma config on `sms` multiprocessors (persistent blocks, one per SM):
//! - **tiles** `ceil(m / rows) * ceil(n / bn)` of `rows x bn` (`rows` = `bm`, or 64 in
//!   ping-pong), dealt out in cluster items: the busiest SM runs `ceil(items / clusters)`
//!   items' tiles (edge tiles count whole: their padding is multiplied too);
//! - **a tile's MMAs** take the tensor cores' time for `rows x bn x k` (`k` rounded up to
//!   the k-tile) and the time L2 takes to bring its operands (A's `rows` and B's `bn /
//!   cluster` rows per k-tile) at the SM's share of L2 bandwidth, combined as a 3-norm: the
//!   longer of the two, and more as the other nears it (L2 slows before it saturates);
//! - **a tile's stores** (`rows x bn` of `C`) at the SM's share of the L2 write rate.
//!   Cooperative blocks store after each tile, so every tile pays both; in ping-pong one
//!   warpgroup stores while the other multiplies, so a tile costs the longer of the two,
//!   plus the last store (but see the measured factors below). Staged stores (`tma_store`)
//!   keep the math warpgroups only for [`STAGED_STORE`] of a store with two staging buffers,
//!   [`STAGED_STORE_DEEP`] with more (a chunk's store has more chunks' time to read its
//!   buffer); the rest drains under the next tile's MMAs, all but the last tile's;
//! - **stream-K** (cooperative): whole waves but the last data-parallel, then the rest of
//!   the items split evenly (`sk_items / clusters` each, not rounded up to a wave), each
//!   stream-K item's work [`STREAMK_TILE`] times a data-parallel one's (measured), plus the
//!   fix-up: each block writes up to two f32 pieces and the last reads them back.
//!
//! Measured factors: 64-row tiles' MMAs (ping-pong, or one math warpgroup) run slower than two
//! warpgroups on one tile, and two k-tile groups in flight slightly slower than one. Within a
//! tile shape, a deeper ring and the tile order of 8 rows rank first (small factors: neither is
//! modelled, both are what sweeps chose), and a ring of three stages or fewer pays
//! [`SHALLOW_RING`] (measured when staging buffers took the fourth stage's room).
//!
//! The mma kernel (sm_80) is modelled as the cooperative wgmma tile at a quarter of the
//! tensor rate (its measured share), so it ranks below every wgmma config that fits.

use dynsmem_kernels::hgemm::{CLUSTER, HgemmConfig, MAX_STAGES, MmaKind, ROWS_PER_UNIT, WGMMA_BK, WGMMA_BN};
use dynsmem_kernels::streamk::StreamK;

use super::{HgemmProblem, OutType};
use crate::backend::Limits;

/// Dense f16 tensor-core rate of the whole GPU, flop/s, as sustained under its power limit.
const TENSOR_FLOPS: f64 = 850e12;
/// L2-to-SM read bandwidth of the whole GPU, bytes/s.
const L2_READ_BYTES_PER_S: f64 = 15e12;
/// Rate at which the SMs' stores of `C` drain into L2 when every SM stores at once, bytes/s.
const STORE_BYTES_PER_S: f64 = 5e12;
/// Share of the tensor rate the sm_80 mma kernel reaches.
const MMA_SHARE: f64 = 0.25;
/// Slowdown of a cluster's blocks waiting on each other's slot releases.
const CLUSTER_WAIT: f64 = 1.02;
/// Slowdown of 64-row tiles' MMAs (ping-pong, or one math warpgroup): one warpgroup
/// multiplying at a time was measured about this much slower than two on one tile
/// (`log/2026-11-27-h100-hgemm-pingpong/`).
const ONE_WARPGROUP: f64 = 1.12;
/// Slowdown of two k-tile groups in flight (measured no faster, a few percent slower).
const DEPTH2: f64 = 1.03;
/// Cost of a stream-K item's work against a data-parallel one's, a round figure inside the
/// range measured on the H100 (NOTES.md): the clusters' segments start at different k, so the
/// operands the clusters read at once no longer overlap in L2 (at large `k` the stream-K share
/// runs from DRAM), and the f32 pieces' writes and reads come on top.
const STREAMK_TILE: f64 = 1.6;
/// Share of a tile's store the math warpgroups still wait for when it is staged through
/// shared memory and stored by the copy engine (`tma_store`) through two buffers per
/// warpgroup: the shared-memory writes, and the wait for each chunk's store to read the
/// buffer the next chunk takes. Predicted, then measured on the H200 (NOTES.md): 0.93 -> 0.97
/// of cuBLAS at 4096^3 for the same tile.
const STAGED_STORE: f64 = 0.25;
/// The same with three or more buffers: a third buffer at the same stages measured 1.2% faster
/// at 2560^3 (128 x 224), about this share.
const STAGED_STORE_DEEP: f64 = 0.15;
/// Slowdown of a ring of three stages or fewer against four or more, beyond `1 + 0.1 /
/// stages`: trading the fourth stage for staging buffers measured 2% slower at 4096^3 and 4%
/// at 2560^3 (NOTES.md).
const SHALLOW_RING: f64 = 1.02;

/// Predicted seconds of `cfg` on `problem` with `limits`' multiprocessors (for ranking).
pub fn predicted_seconds(problem: &HgemmProblem, cfg: &HgemmConfig, limits: &Limits) -> f64 {
    let sms = limits.multiprocessors.unwrap_or(132).max(1) as f64;
    let rows = cfg.tile_rows();
    let cluster = cfg.cluster.max(1);
    let items = cfg.items(problem.m, problem.n) as u64;
    let clusters = (sms as u64 / cluster as u64).max(1);
    let streamk = cfg.streamk && cfg.kind == MmaKind::Wgmma && !cfg.pingpong;
    // Stream-K: the items the kernel's schedule deals whole, before the split ones.
    let dp_items = StreamK::new(items as u32, problem.k.div_ceil(WGMMA_BK), clusters as u32).dp_tiles as u64;
    let tiles_per_sm = if streamk {
        (dp_items / clusters) as f64 + STREAMK_TILE * (items - dp_items) as f64 / clusters as f64
    } else {
        items.div_ceil(clusters) as f64
    };
    let split = streamk && !items.is_multiple_of(clusters);
    let k = problem.k.div_ceil(WGMMA_BK) as f64 * WGMMA_BK as f64;
    let (rows, bn) = (rows as f64, cfg.bn as f64);
    let tensor = 2.0 * rows * bn * k / (TENSOR_FLOPS / sms);
    let operands = (rows + bn / cluster as f64) * k * 2.0 / (L2_READ_BYTES_PER_S / sms);
    let mut mma = (tensor.powi(3) + operands.powi(3)).cbrt();
    if cluster > 1 {
        mma *= CLUSTER_WAIT;
    }
    if cfg.kind == MmaKind::Wgmma && cfg.tile_rows() == ROWS_PER_UNIT {
        mma *= ONE_WARPGROUP;
    }
    if cfg.depth == 2 {
        mma *= DEPTH2;
    }
    let out_bytes = if problem.out == OutType::F32 { 4.0 } else { 2.0 };
    let store = rows * bn * out_bytes / (STORE_BYTES_PER_S / sms);
    let waited = match (cfg.tma_store, cfg.stage_buffers) {
        (false, _) => store,
        (true, 0..=2) => STAGED_STORE * store,
        (true, _) => STAGED_STORE_DEEP * store,
    };
    let mut seconds = match (cfg.kind, cfg.pingpong) {
        (MmaKind::Wgmma, true) => tiles_per_sm * mma.max(store) + store,
        (MmaKind::Wgmma, false) => tiles_per_sm * (mma + waited) + (store - waited),
        (MmaKind::Mma, _) => tiles_per_sm * (tensor / MMA_SHARE + store),
    };
    if streamk {
        // f32 pieces whatever `C`'s type.
        let piece = rows * bn * 4.0 / (STORE_BYTES_PER_S / sms);
        seconds += if split { 2.0 * piece } else { 0.0 };
    }
    let ring = (1.0 + 0.1 / cfg.stages.max(1) as f64) * if cfg.stages <= 3 { SHALLOW_RING } else { 1.0 };
    let order = 1.0 + 0.005 * ((cfg.group_m.max(1) as f64).log2() - 3.0).abs();
    seconds * ring * order
}

/// Configs that differ only in their stages, tile order or groups in flight: the same kernel,
/// tile, cluster and schedule.
pub fn same_shape(a: &HgemmConfig, b: &HgemmConfig) -> bool {
    HgemmConfig { stages: a.stages, group_m: a.group_m, depth: a.depth, ..*b } == *a
}

/// [`ranked`], with the best config of each tile shape ([`same_shape`]) before any second of
/// a shape: what tuning on first use measures, so that its few candidates span the shapes.
pub fn ranked_by_shape(problem: &HgemmProblem, configs: &[HgemmConfig], limits: &Limits, limit: usize) -> Vec<usize> {
    let all = ranked(problem, configs, limits, configs.len());
    let mut firsts: Vec<usize> = Vec::new();
    let mut rest = Vec::new();
    for i in all {
        if firsts.iter().any(|&f| same_shape(&configs[f], &configs[i])) {
            rest.push(i);
        } else {
            firsts.push(i);
        }
    }
    firsts.into_iter().chain(rest).take(limit).collect()
}

/// The wgmma configs the heuristic default chooses among: every tile width, schedule
/// (cooperative 64 or 128 rows, either data-parallel or stream-K; ping-pong), cluster size and
/// epilogue (from registers, or staged through 2, 3 or 4 buffers), each with the most stages
/// whose ring fits `limits`'
/// opt-in shared memory; tile order `group_m` 8. Staged stores need `C`'s rows in 16-byte
/// multiples: the caller keeps the choices its problem allows.
pub fn wgmma_choices(limits: &Limits) -> Vec<HgemmConfig> {
    let mut out = Vec::new();
    for bn in WGMMA_BN {
        for (bm, pingpong, streamk) in
            [(128, false, false), (128, false, true), (64, false, false), (64, false, true), (128, true, false)]
        {
            let epilogues = [(false, 2), (true, 2), (true, 3), (true, 4)];
            for (cluster, (tma_store, buffers)) in [1, CLUSTER].into_iter().flat_map(|c| epilogues.map(|e| (c, e))) {
                let fitting = (2..=MAX_STAGES).rev().map(|stages| {
                    HgemmConfig::wgmma(bm, bn, stages)
                        .with_cluster(cluster)
                        .with_pingpong(pingpong)
                        .with_streamk(streamk)
                        .with_tma_store(tma_store)
                        .with_stage_buffers(buffers)
                });
                let fits = |c: &HgemmConfig| c.fits() && c.shared_bytes().is_ok_and(|b| b <= limits.launch_shared_max);
                if let Some(c) = fitting.into_iter().find(fits) {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// The config of `configs` with the least predicted time (the first of equals).
pub fn fastest(problem: &HgemmProblem, configs: &[HgemmConfig], limits: &Limits) -> Option<HgemmConfig> {
    ranked(problem, configs, limits, 1).first().map(|&i| configs[i])
}

/// The indices of `configs` by predicted time, fastest first, at most `limit`.
pub fn ranked(problem: &HgemmProblem, configs: &[HgemmConfig], limits: &Limits, limit: usize) -> Vec<usize> {
    let mut order: Vec<(f64, usize)> =
        configs.iter().enumerate().map(|(i, c)| (predicted_seconds(problem, c, limits), i)).collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    order.into_iter().take(limit).map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::hgemm::Half;

    fn limits() -> Limits {
        crate::tune::cache::tests::limits()
    }

    fn cube(side: u32) -> HgemmProblem {
        HgemmProblem { m: side, n: side, k: side, dtype: Half::F16, out: OutType::F32 }
    }

    #[test]
    fn pingpong_ranks_below_cooperative_where_it_measured_slower_but_halves_partial_waves() {
        let coop = HgemmConfig::wgmma(128, 256, 4).with_cluster(2);
        let pp = HgemmConfig::wgmma(128, 256, 5).with_cluster(2).with_pingpong(true);
        let l = limits();
        for side in [4096, 8192] {
            assert!(predicted_seconds(&cube(side), &coop, &l) < predicted_seconds(&cube(side), &pp, &l), "{side}");
        }
        // 3072^3: 288 tiles of 128 x 256 are 2.2 waves on 132 SMs (3 rounds); 64-row tiles,
        // 576, are 4.4 (5 rounds of half the work): there ping-pong's finer waves win.
        assert!(predicted_seconds(&cube(3072), &pp, &l) < predicted_seconds(&cube(3072), &coop, &l));
    }

    #[test]
    fn the_tile_width_follows_the_waves() {
        // 3072 = 16 x 192: 64 x 192 tiles make 768 = 5.8 waves; 64 x 256, 576 = 4.4.
        let l = limits();
        let pp = |bn| HgemmConfig::wgmma(128, bn, 4).with_pingpong(true).with_cluster(2);
        assert!(predicted_seconds(&cube(3072), &pp(192), &l) < predicted_seconds(&cube(3072), &pp(256), &l));
        // Deep, wide problems prefer the wider tile (less L2 traffic per multiply).
        let big = cube(8192);
        assert!(predicted_seconds(&big, &pp(256), &l) < predicted_seconds(&big, &pp(128), &l));
    }

    #[test]
    fn the_choices_fill_shared_memory_and_keep_to_the_kernels_rules() {
        let l = limits();
        let choices = wgmma_choices(&l);
        assert_eq!(
            choices.len(),
            4 * (5 * 5 * 2 - 5),
            "no clusters at bn 128; from registers and staged by 2-4 buffers"
        );
        for c in &choices {
            assert!(c.fits(), "{c:?}");
            let more = HgemmConfig { stages: c.stages + 1, ..*c };
            assert!(c.stages == MAX_STAGES || more.shared_bytes().unwrap() > l.launch_shared_max, "{c:?}");
        }
        // What tuning on first use measured fastest at 4096^3 and 3072^3 from registers, now
        // staged: at 4096^3 through two buffers (a third would take the fourth stage, measured
        // slower), at 3072^3 through three (the 192-wide ring keeps its four stages).
        let best = fastest(&cube(4096), &choices, &l).unwrap();
        assert_eq!(best, HgemmConfig::wgmma(128, 256, 4).with_cluster(2).with_tma_store(true), "{best:?}");
        let best = fastest(&cube(3072), &choices, &l).unwrap();
        assert_eq!(
            best,
            HgemmConfig::wgmma(128, 192, 4).with_cluster(2).with_tma_store(true).with_stage_buffers(3),
            "{best:?}"
        );
    }

    #[test]
    fn staged_stores_rank_first_where_cooperative_tiles_wait_for_their_stores() {
        // Measured on the H200 (NOTES.md): the same 128 x 256 tile in clusters of 2 ran 3-5%
        // faster staged at 2560^3, 4096^3 and 8192^3 (13% with 16-bit output at 4096^3).
        let l = limits();
        let regs = HgemmConfig::wgmma(128, 256, 4).with_cluster(2);
        let staged = regs.with_tma_store(true);
        for side in [2560, 4096, 8192] {
            let (r, s) = (predicted_seconds(&cube(side), &regs, &l), predicted_seconds(&cube(side), &staged, &l));
            assert!(s < r && s > 0.9 * r, "{side}: staged {s} against {r}");
        }
        // A third buffer at the same stages ranks first (measured 1.2% faster at 2560^3); four
        // buffers that cost the 256-wide tile its fourth stage rank below two (measured 2% and
        // 4% slower at 4096^3 and 2560^3).
        let three = HgemmConfig::wgmma(128, 224, 4).with_tma_store(true);
        let p = cube(2560);
        assert!(predicted_seconds(&p, &three.with_stage_buffers(3), &l) < predicted_seconds(&p, &three, &l));
        let four = HgemmConfig { stages: 3, ..staged.with_stage_buffers(4) };
        for side in [2560, 4096] {
            assert!(predicted_seconds(&cube(side), &staged, &l) < predicted_seconds(&cube(side), &four, &l), "{side}");
        }
        // Ping-pong already hides its stores under the other warpgroup's MMAs: no gain modelled.
        let pp = HgemmConfig::wgmma(128, 256, 4).with_pingpong(true);
        assert_eq!(
            predicted_seconds(&cube(4096), &pp, &l),
            predicted_seconds(&cube(4096), &pp.with_tma_store(true), &l)
        );
    }

    #[test]
    fn stream_k_ranks_below_data_parallel_where_it_measured_slower_and_first_past_a_wave() {
        let l = limits();
        let coop = HgemmConfig::wgmma(128, 256, 4).with_cluster(2);
        let sk = coop.with_streamk(true);
        // Measured slower (NOTES.md): 2560^3 (1.5 waves of cluster items), 4096^3 (3.9),
        // 5120 x 2048 x 8192 (2.4), 1536 x 1664 x 1024 (0.6).
        for p in [
            cube(2560),
            cube(4096),
            HgemmProblem { m: 5120, n: 2048, k: 8192, ..cube(1) },
            HgemmProblem { m: 1536, n: 1664, k: 1024, ..cube(1) },
        ] {
            assert!(predicted_seconds(&p, &coop, &l) < predicted_seconds(&p, &sk, &l), "{p:?}");
        }
        // One item past a whole wave (67 items on 66 clusters): data-parallel runs two rounds.
        let over = HgemmProblem { m: 256 * 67, n: 256, k: 4096, ..cube(1) };
        assert!(predicted_seconds(&over, &sk, &l) < predicted_seconds(&over, &coop, &l));
    }

    #[test]
    fn candidates_span_the_shapes_before_their_variants() {
        let l = limits();
        let mut configs = Vec::new();
        for bn in [128, 256] {
            for stages in 2..=4 {
                for group_m in [1, 8] {
                    configs.push(HgemmConfig { group_m, ..HgemmConfig::wgmma(128, bn, stages) });
                }
            }
        }
        configs.push(HgemmConfig::wgmma(128, 256, 4).with_depth(2));
        let r = ranked_by_shape(&cube(4096), &configs, &l, 3);
        assert!(!same_shape(&configs[r[0]], &configs[r[1]]), "{:?}", r.iter().map(|&i| configs[i]).collect::<Vec<_>>());
        // Within a shape: the deepest ring and group_m 8 first; a ring of 3 pays SHALLOW_RING,
        // more than another tile order costs.
        assert_eq!((configs[r[0]].stages, configs[r[0]].group_m), (4, 8));
        assert_eq!((configs[r[2]].stages, configs[r[2]].group_m), (4, 1));
    }

    #[test]
    fn ranking_puts_the_mma_kernel_last_and_respects_the_limit() {
        let configs = [HgemmConfig::mma(128, 4), HgemmConfig::wgmma(128, 256, 4), HgemmConfig::wgmma(64, 128, 4)];
        let r = ranked(&cube(4096), &configs, &limits(), 3);
        assert_eq!(r.last(), Some(&0));
        assert_eq!(ranked(&cube(4096), &configs, &limits(), 1).len(), 1);
    }
}
