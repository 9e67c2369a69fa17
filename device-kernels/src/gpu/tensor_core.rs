//! Tensor-core instructions for the half-precision GEMM (`crate::hgemm`): sm_90a's
//! warpgroup MMA (`wgmma.mma_async`) with its shared-memory descriptors, fences and register
//! reallocation (`setmaxnreg`), and sm_80's warp MMA (`mma.sync`) with `ldmatrix`.
//!
//! Each is one `asm!` block, `#[inline(always)]`, so that every fence / MMA / commit / wait
//! sequence of a kernel lands in one function where ptxas sees it whole (ptxas serialises a
//! `wgmma` whose accumulators it cannot follow). The accumulators are `[f32; N]` arrays that
//! every `wgmma` block, fence and wait names as in-out operands: the instructions complete
//! asynchronously, so LLVM must not move a read of an accumulator above the wait that makes
//! it valid. Indices into them must be constants after inlining (they live in registers).
//!
//! Elsewhere (another architecture, or the host build the CPU backend runs) every
//! instruction here traps: the host refuses these kernels before launching.

use super::SharedPtr;

/// Threads of a warpgroup, the unit a `wgmma` runs on (four warps).
pub const WARPGROUP: u32 = 128;

/// Makes a `{ p0, p1, ... }` register list for `asm!` from operand indices.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
macro_rules! reg_list {
    ($first:literal $($i:literal)*) => {
        concat!("{{{", stringify!($first), "}" $(, ", {", stringify!($i), "}")* , "}}")
    };
}

/// `wgmma.mma_async` `$shape` with f32 accumulators `$d[$i]` for each index, A and B from
/// shared-memory descriptors, element type `$ty`; `$scale` 0 overwrites `$d`, 1 adds.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
macro_rules! wgmma_asm {
    ($shape:literal, $ty:literal, $d:ident, $da:expr, $db:expr, $scale:expr, [$($i:literal)*]) => {
        core::arch::asm!(
            concat!(
                "{{ .reg .pred p; setp.ne.b32 p, {sc}, 0; wgmma.mma_async.sync.aligned.", $shape, ".f32.", $ty, ".", $ty, " ",
                reg_list!($($i)*),
                ", {da}, {db}, p, 1, 1, 0, 0; }}"
            ),
            $(inout(reg32) $d[$i],)*
            da = in(reg64) $da,
            db = in(reg64) $db,
            sc = in(reg32) $scale,
            options(nostack)
        )
    };
}

/// `wgmma.mma_async` `$shape` with A from four registers of 16-bit pairs `$a` (the
/// warpgroup's 64 x 16 fragment) and B N-major (`imm-trans-b` 1) from a descriptor.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
macro_rules! wgmma_rs_asm {
    ($shape:literal, $ty:literal, $d:ident, $a:expr, $db:expr, $scale:expr, [$($i:literal)*]) => {
        core::arch::asm!(
            concat!(
                "{{ .reg .pred p; setp.ne.b32 p, {sc}, 0; wgmma.mma_async.sync.aligned.", $shape, ".f32.", $ty, ".", $ty, " ",
                reg_list!($($i)*),
                ", {{{a0}, {a1}, {a2}, {a3}}}, {db}, p, 1, 1, 1; }}"
            ),
            $(inout(reg32) $d[$i],)*
            a0 = in(reg32) $a[0],
            a1 = in(reg32) $a[1],
            a2 = in(reg32) $a[2],
            a3 = in(reg32) $a[3],
            db = in(reg64) $db,
            sc = in(reg32) $scale,
            options(nostack)
        )
    };
}

/// `wgmma.mma_async` `$shape` with A and B both MN-major in shared memory (`imm-trans-a` 1,
/// `imm-trans-b` 1): each operand's rows run along K, its contiguous elements along M (A) or
/// N (B).
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
macro_rules! wgmma_mn_asm {
    ($shape:literal, $ty:literal, $d:ident, $da:expr, $db:expr, $scale:expr, [$($i:literal)*]) => {
        core::arch::asm!(
            concat!(
                "{{ .reg .pred p; setp.ne.b32 p, {sc}, 0; wgmma.mma_async.sync.aligned.", $shape, ".f32.", $ty, ".", $ty, " ",
                reg_list!($($i)*),
                ", {da}, {db}, p, 1, 1, 1, 1; }}"
            ),
            $(inout(reg32) $d[$i],)*
            da = in(reg64) $da,
            db = in(reg64) $db,
            sc = in(reg32) $scale,
            options(nostack)
        )
    };
}

/// `$insn` (a `wgmma` fence or wait, which name no register) with the accumulators as
/// in-out operands (in a PTX comment), so that LLVM orders their accesses around it.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
macro_rules! wgmma_sync_asm {
    ($insn:literal, $d:ident, [$($i:literal)*]) => {
        core::arch::asm!(
            concat!($insn, " //", $(" {", stringify!($i), "}",)*),
            $(inout(reg32) $d[$i],)*
            options(nostack)
        )
    };
}

/// Calls `$m!(args.., [0 1 .. 15])`, `[0 .. 31]`, `[0 .. 63]`, .. `[0 .. 127]`: the accumulator
/// indices of an m64n64, m64n128, m64n192 or m64n256 tile (one f32 per thread per 64 entries).
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
macro_rules! with_indices {
    (16, $m:ident!($($args:tt)*)) => {
        $m!($($args)* [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15])
    };
    (32, $m:ident!($($args:tt)*)) => {
        $m!($($args)* [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31])
    };
    (64, $m:ident!($($args:tt)*)) => {
        $m!($($args)* [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
            32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63])
    };
    (80, $m:ident!($($args:tt)*)) => {
        $m!($($args)* [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
            32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
            64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79])
    };
    (96, $m:ident!($($args:tt)*)) => {
        $m!($($args)* [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
            32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
            64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95])
    };
    (112, $m:ident!($($args:tt)*)) => {
        $m!($($args)* [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
            32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
            64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95
            96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111])
    };
    (128, $m:ident!($($args:tt)*)) => {
        $m!($($args)* [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
            32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
            64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95
            96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127])
    };
}

impl<T: Copy> SharedPtr<T> {
    /// The `wgmma` shared-memory matrix descriptor of a K-major operand tile starting here,
    /// laid out as a TMA copy with the 128-byte swizzle leaves it: rows of 128 bytes (64
    /// 16-bit elements), groups of 8 rows 1024 bytes apart. The tile's 8-row groups must
    /// start 1024-byte aligned (the swizzle is a function of the address); this pointer may
    /// be a multiple of 32 bytes into a row (the k-steps of 16 elements).
    #[inline(always)]
    pub fn wgmma_desc_sw128(self) -> u64 {
        let addr = self.shared_addr() as u64;
        // start address >> 4 (bits 0-13); leading-dimension offset 16 B >> 4 (unused for
        // swizzled K-major); stride 1024 B >> 4 (bits 32-45); swizzle mode 1 = 128 B (62-63).
        ((addr & 0x3_FFFF) >> 4) | (1 << 16) | ((1024u64 >> 4) << 32) | (1 << 62)
    }

    /// The descriptor of an N-major (MN-major) B tile starting here, as a TMA copy with the
    /// 128-byte swizzle leaves a row-major `k x n` tile cut into panels of 64 columns: each
    /// k-row of a panel is 128 bytes (64 16-bit elements of n), groups of 8 k-rows 1024 bytes
    /// apart, and the next 64 columns `panel_bytes` further on. Used with `imm-trans-b` 1
    /// ([`wgmma_rs`]). A k-step of 16 starts 2048 bytes further on.
    #[inline(always)]
    pub fn wgmma_desc_sw128_n_major(self, panel_bytes: u32) -> u64 {
        let addr = self.shared_addr() as u64;
        // start >> 4; leading-dimension offset (the next 64 n) >> 4 (bits 16-29); stride (the
        // next 8 k-rows) 1024 B >> 4 (bits 32-45); swizzle 128 B.
        ((addr & 0x3_FFFF) >> 4) | (((panel_bytes as u64 >> 4) & 0x3FFF) << 16) | ((1024u64 >> 4) << 32) | (1 << 62)
    }
}

/// `D = A B (+ D)` for a 64 x `N` tile of a warpgroup, one k-step of 16 (`wgmma.mma_async`
/// m64nNk16, f32 accumulators, A and B K-major in shared memory by descriptor). `ACC` is
/// `N / 2` (32, 64, 80, 96, 112 or 128: `N` = 64, 128, 160, 192, 224 or 256); `BF16` picks bf16
/// inputs over f16. Thread `t` of the warpgroup holds, for each 8-column chunk `j` of `N`, rows `16 (t / 32) + (t % 32)
/// / 4` (entries `4j`, `4j + 1`) and that row + 8 (`4j + 2`, `4j + 3`), columns `8j + 2 (t %
/// 4)` and the next. Asynchronous: see [`wgmma_commit`] and [`wgmma_wait`].
///
/// # Safety
/// Every thread of the warpgroup calls it with the same descriptors, after a
/// [`wgmma_fence`]; the tiles stay unchanged until the wait.
#[inline(always)]
pub unsafe fn wgmma<const BF16: bool, const ACC: usize>(d: &mut [f32; ACC], a: u64, b: u64, accumulate: bool) {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
    unsafe {
        let sc = accumulate as u32;
        if ACC == 128 {
            let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 128]);
            if BF16 {
                with_indices!(128, wgmma_asm!("m64n256k16", "bf16", d, a, b, sc,))
            } else {
                with_indices!(128, wgmma_asm!("m64n256k16", "f16", d, a, b, sc,))
            }
        } else if ACC == 112 {
            let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 112]);
            if BF16 {
                with_indices!(112, wgmma_asm!("m64n224k16", "bf16", d, a, b, sc,))
            } else {
                with_indices!(112, wgmma_asm!("m64n224k16", "f16", d, a, b, sc,))
            }
        } else if ACC == 96 {
            let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 96]);
            if BF16 {
                with_indices!(96, wgmma_asm!("m64n192k16", "bf16", d, a, b, sc,))
            } else {
                with_indices!(96, wgmma_asm!("m64n192k16", "f16", d, a, b, sc,))
            }
        } else if ACC == 80 {
            let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 80]);
            if BF16 {
                with_indices!(80, wgmma_asm!("m64n160k16", "bf16", d, a, b, sc,))
            } else {
                with_indices!(80, wgmma_asm!("m64n160k16", "f16", d, a, b, sc,))
            }
        } else if ACC == 64 {
            let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 64]);
            if BF16 {
                with_indices!(64, wgmma_asm!("m64n128k16", "bf16", d, a, b, sc,))
            } else {
                with_indices!(64, wgmma_asm!("m64n128k16", "f16", d, a, b, sc,))
            }
        } else if ACC == 32 {
            let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 32]);
            if BF16 {
                with_indices!(32, wgmma_asm!("m64n64k16", "bf16", d, a, b, sc,))
            } else {
                with_indices!(32, wgmma_asm!("m64n64k16", "f16", d, a, b, sc,))
            }
        } else {
            super::trap()
        }
    }
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
    {
        let _ = (d, a, b, accumulate);
        super::trap()
    }
}

/// `D += A B` for a 64 x `N` tile of a warpgroup, one k-step of 16, A from registers: `a`
/// holds this thread's 64 x 16 fragment as 16-bit pairs, in the accumulator's layout (see
/// [`wgmma`]: word `i` is the pair entries `2i`, `2i + 1` of an m64n16 accumulator), so a
/// softmax's f32 tile converts to the next product's A without moving between threads. B is
/// N-major in shared memory ([`SharedPtr::wgmma_desc_sw128_n_major`]). `ACC` = `N / 2` (32 or
/// 64); `BF16` picks bf16. Asynchronous, as [`wgmma`].
///
/// # Safety
/// As for [`wgmma`]; `a` stays unchanged until the wait.
#[inline(always)]
pub unsafe fn wgmma_rs<const BF16: bool, const ACC: usize>(d: &mut [f32; ACC], a: [u32; 4], b: u64, accumulate: bool) {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
    unsafe {
        let sc = accumulate as u32;
        if ACC == 64 {
            let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 64]);
            if BF16 {
                with_indices!(64, wgmma_rs_asm!("m64n128k16", "bf16", d, a, b, sc,))
            } else {
                with_indices!(64, wgmma_rs_asm!("m64n128k16", "f16", d, a, b, sc,))
            }
        } else if ACC == 32 {
            let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 32]);
            if BF16 {
                with_indices!(32, wgmma_rs_asm!("m64n64k16", "bf16", d, a, b, sc,))
            } else {
                with_indices!(32, wgmma_rs_asm!("m64n64k16", "f16", d, a, b, sc,))
            }
        } else {
            super::trap()
        }
    }
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
    {
        let _ = (d, a, b, accumulate);
        super::trap()
    }
}

/// `D = A B (+ D)` for a 64 x 64 tile of a warpgroup, one k-step of 16, A and B both
/// MN-major in shared memory ([`SharedPtr::wgmma_desc_sw128_n_major`] for each: A's 16 k-rows
/// of 64 M elements, B's of `N` elements, 128-byte swizzled rows). For a product whose A is
/// stored transposed, as a tile of `A^T` rows (attention backward's `dQ = dS K` from the
/// `dS^T` the math warpgroups hold). `ACC` = 32 (m64n64k16) or 16 (m64n32k16); `BF16`
/// picks bf16.
/// Asynchronous, as [`wgmma`].
///
/// # Safety
/// As for [`wgmma`].
#[inline(always)]
pub unsafe fn wgmma_mn<const BF16: bool, const ACC: usize>(d: &mut [f32; ACC], a: u64, b: u64, accumulate: bool) {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
    unsafe {
        let sc = accumulate as u32;
        if ACC == 32 {
            let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 32]);
            if BF16 {
                with_indices!(32, wgmma_mn_asm!("m64n64k16", "bf16", d, a, b, sc,))
            } else {
                with_indices!(32, wgmma_mn_asm!("m64n64k16", "f16", d, a, b, sc,))
            }
        } else if ACC == 16 {
            let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 16]);
            if BF16 {
                with_indices!(16, wgmma_mn_asm!("m64n32k16", "bf16", d, a, b, sc,))
            } else {
                with_indices!(16, wgmma_mn_asm!("m64n32k16", "f16", d, a, b, sc,))
            }
        } else {
            super::trap()
        }
    }
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
    {
        let _ = (d, a, b, accumulate);
        super::trap()
    }
}

/// `fence.proxy.async.shared::cta`: this thread's shared-memory writes (plain stores) become
/// visible to the async proxy, which `wgmma` operand reads and tensor-map copies use. Before
/// the barrier after which another warpgroup's `wgmma` reads what this one stored.
#[inline(always)]
pub fn fence_proxy_async_shared() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    // SAFETY: a fence; no operands.
    unsafe {
        core::arch::asm!("fence.proxy.async.shared::cta;", options(nostack))
    };
}

/// `wgmma.fence`: orders this thread's earlier accesses to `d` (and to the operand tiles)
/// before the `wgmma`s that follow.
#[inline(always)]
pub fn wgmma_fence<const ACC: usize>(d: &mut [f32; ACC]) {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
    unsafe {
        if ACC == 128 {
            let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 128]);
            with_indices!(128, wgmma_sync_asm!("wgmma.fence.sync.aligned;", d,))
        } else if ACC == 112 {
            let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 112]);
            with_indices!(112, wgmma_sync_asm!("wgmma.fence.sync.aligned;", d,))
        } else if ACC == 96 {
            let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 96]);
            with_indices!(96, wgmma_sync_asm!("wgmma.fence.sync.aligned;", d,))
        } else if ACC == 80 {
            let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 80]);
            with_indices!(80, wgmma_sync_asm!("wgmma.fence.sync.aligned;", d,))
        } else if ACC == 64 {
            let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 64]);
            with_indices!(64, wgmma_sync_asm!("wgmma.fence.sync.aligned;", d,))
        } else if ACC == 32 {
            let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 32]);
            with_indices!(32, wgmma_sync_asm!("wgmma.fence.sync.aligned;", d,))
        } else if ACC == 16 {
            let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 16]);
            with_indices!(16, wgmma_sync_asm!("wgmma.fence.sync.aligned;", d,))
        } else {
            super::trap()
        }
    }
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
    {
        let _ = d;
        super::trap()
    }
}

/// `wgmma.commit_group`: closes the group of `wgmma`s issued since the last commit.
#[inline(always)]
pub fn wgmma_commit() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
    unsafe {
        core::arch::asm!("wgmma.commit_group.sync.aligned;", options(nostack))
    };
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
    super::trap()
}

/// `wgmma.wait_group PENDING` (0, 1 or 2): waits until at most `PENDING` committed groups are
/// in flight; the accumulators of the finished ones are then valid in `d`.
#[inline(always)]
pub fn wgmma_wait<const PENDING: u32, const ACC: usize>(d: &mut [f32; ACC]) {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
    unsafe {
        match (ACC, PENDING) {
            (128, 0) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 128]);
                with_indices!(128, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 0;", d,))
            }
            (128, 1) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 128]);
                with_indices!(128, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 1;", d,))
            }
            (128, 2) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 128]);
                with_indices!(128, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 2;", d,))
            }
            (112, 0) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 112]);
                with_indices!(112, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 0;", d,))
            }
            (112, 1) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 112]);
                with_indices!(112, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 1;", d,))
            }
            (112, 2) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 112]);
                with_indices!(112, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 2;", d,))
            }
            (80, 0) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 80]);
                with_indices!(80, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 0;", d,))
            }
            (80, 1) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 80]);
                with_indices!(80, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 1;", d,))
            }
            (80, 2) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 80]);
                with_indices!(80, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 2;", d,))
            }
            (96, 0) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 96]);
                with_indices!(96, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 0;", d,))
            }
            (96, 1) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 96]);
                with_indices!(96, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 1;", d,))
            }
            (96, 2) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 96]);
                with_indices!(96, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 2;", d,))
            }
            (64, 0) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 64]);
                with_indices!(64, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 0;", d,))
            }
            (64, 1) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 64]);
                with_indices!(64, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 1;", d,))
            }
            (64, 2) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 64]);
                with_indices!(64, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 2;", d,))
            }
            (32, 0) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 32]);
                with_indices!(32, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 0;", d,))
            }
            (16, 0) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 16]);
                with_indices!(16, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 0;", d,))
            }
            (32, 1) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 32]);
                with_indices!(32, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 1;", d,))
            }
            (32, 2) => {
                let d = &mut *(d as *mut [f32; ACC] as *mut [f32; 32]);
                with_indices!(32, wgmma_sync_asm!("wgmma.wait_group.sync.aligned 2;", d,))
            }
            _ => super::trap(),
        }
    }
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
    {
        let _ = d;
        super::trap()
    }
}

/// `setmaxnreg.dec 40`: a warpgroup that only issues copies gives registers back to the
/// pool, so that [`registers_for_math`] can take them. Every thread of the warpgroup calls it.
#[inline(always)]
pub fn registers_for_copies() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
    unsafe {
        core::arch::asm!("setmaxnreg.dec.sync.aligned.u32 40;", options(nostack))
    };
}

/// `setmaxnreg.inc 232`: a math warpgroup takes 232 registers per thread (128 accumulators
/// and the operands' addresses). With one copy warpgroup at 40, two math warpgroups fit the
/// 64K-register file: `128 * (40 + 2 * 232) = 64512`. Every thread of the warpgroup calls it.
#[inline(always)]
pub fn registers_for_math() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
    unsafe {
        core::arch::asm!("setmaxnreg.inc.sync.aligned.u32 232;", options(nostack))
    };
}

/// `setmaxnreg.dec 24`: [`registers_for_copies`] for a kernel whose math warpgroups take
/// [`registers_for_math_240`]. Every thread of the warpgroup calls it.
#[inline(always)]
pub fn registers_for_copies_24() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
    unsafe {
        core::arch::asm!("setmaxnreg.dec.sync.aligned.u32 24;", options(nostack))
    };
}

/// `setmaxnreg.inc 240`: two math warpgroups at 240 beside a copy warpgroup at 24 fill the
/// register file (`128 * (24 + 2 * 240) = 64512`); for accumulators that do not fit 232
/// (attention backward's `dK` and `dV` at D 128 beside its score tiles).
#[inline(always)]
pub fn registers_for_math_240() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
    unsafe {
        core::arch::asm!("setmaxnreg.inc.sync.aligned.u32 240;", options(nostack))
    };
}

impl SharedPtr<f32> {
    /// `cp.reduce.async.bulk .add.f32`: adds `bytes` (a multiple of 16) of f32 from here
    /// (16-byte aligned) into device memory at `dst` (16-byte aligned), element by element,
    /// in L2, asynchronously; the copy joins this thread's open bulk group ([`bulk_commit`]).
    /// The order of additions from different blocks is not fixed. sm_90; traps elsewhere.
    ///
    /// # Safety
    /// `dst` holds `bytes`; the shared bytes stay unchanged until [`bulk_wait_read`] says the
    /// group has read them, and were written before a [`fence_proxy_async_shared`].
    #[inline(always)]
    pub unsafe fn bulk_reduce_add_to(self, dst: *mut f32, bytes: u32) {
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
        unsafe {
            core::arch::asm!(
                "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [{dst}], [{src}], {n};",
                dst = in(reg64) dst,
                src = in(reg32) self.addr,
                n = in(reg32) bytes,
                options(nostack)
            );
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90")))]
        {
            let _ = (dst, bytes);
            super::trap()
        }
    }
}

/// `cp.async.bulk.commit_group`: closes this thread's group of bulk copies issued since the
/// last commit.
#[inline(always)]
pub fn bulk_commit() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    unsafe {
        core::arch::asm!("cp.async.bulk.commit_group;", options(nostack))
    };
}

/// `cp.async.bulk.wait_group.read 0`: waits until every bulk group this thread committed has
/// read its shared-memory source (the source may then be overwritten).
#[inline(always)]
pub fn bulk_wait_read() {
    bulk_wait_read_pending(0)
}

/// `cp.async.bulk.wait_group.read N`: waits until at most `pending` (0 to 3; more waits as 3)
/// of the bulk groups this thread committed have not yet read their shared-memory sources:
/// the ones committed before those have.
#[inline(always)]
pub fn bulk_wait_read_pending(pending: u32) {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    unsafe {
        match pending {
            0 => core::arch::asm!("cp.async.bulk.wait_group.read 0;", options(nostack)),
            1 => core::arch::asm!("cp.async.bulk.wait_group.read 1;", options(nostack)),
            2 => core::arch::asm!("cp.async.bulk.wait_group.read 2;", options(nostack)),
            _ => core::arch::asm!("cp.async.bulk.wait_group.read 3;", options(nostack)),
        }
    };
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90")))]
    let _ = pending;
}

/// `cp.async.bulk.wait_group 0`: waits until every bulk group this thread committed is
/// complete (before the block exits and its shared memory goes).
#[inline(always)]
pub fn bulk_wait() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    unsafe {
        core::arch::asm!("cp.async.bulk.wait_group 0;", options(nostack))
    };
}

impl SharedPtr<u64> {
    /// Arrives on the barrier (`mbarrier.arrive`), one of the arrivals its phase counts.
    ///
    /// # Safety
    /// An initialised barrier.
    #[inline(always)]
    pub unsafe fn mbar_arrive(self) {
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
        unsafe {
            core::arch::asm!(
                "{{ .reg .b64 s; mbarrier.arrive.shared::cta.b64 s, [{b}]; }}",
                b = in(reg32) self.addr,
                options(nostack)
            );
        }
    }
}

impl<T: Copy> SharedPtr<T> {
    /// `ldmatrix.x4`: four 8 x 8 matrices of 16-bit elements from shared memory; lane `l`
    /// gives the address of row `l % 8` of matrix `l / 8` (16 bytes), and receives, of each
    /// matrix `i`, row `l / 4`, elements `2 (l % 4)` and the next, in word `i`. sm_80.
    ///
    /// # Safety
    /// Every lane of the warp calls it; each address is 16-byte aligned shared memory.
    #[inline(always)]
    pub unsafe fn ldmatrix_x4(self) -> [u32; 4] {
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
        unsafe {
            let r: [u32; 4];
            let (r0, r1, r2, r3): (u32, u32, u32, u32);
            core::arch::asm!(
                "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [{a}];",
                r0 = out(reg32) r0,
                r1 = out(reg32) r1,
                r2 = out(reg32) r2,
                r3 = out(reg32) r3,
                a = in(reg32) self.addr,
                options(nostack, readonly)
            );
            r = [r0, r1, r2, r3];
            r
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
        super::trap()
    }
}

/// `D += A B` for a 16 x 8 tile of a warp, one k-step of 16 (`mma.sync` m16n8k16, row-major
/// A, column-major B, f32 accumulators; `BF16` picks bf16 over f16). Lane `l`: `a` as
/// [`SharedPtr::ldmatrix_x4`] gives the 16 x 16 A tile (matrices: rows 0-7 / 8-15 by k 0-7,
/// then k 8-15), `b` the 16 x 8 B tile (k 0-7, k 8-15 of column `l / 4`); `d` holds row `l / 4`
/// (entries 0, 1) and row `l / 4 + 8` (2, 3), columns `2 (l % 4)` and the next. sm_80.
///
/// # Safety
/// Every lane of the warp calls it.
#[inline(always)]
pub unsafe fn mma_16x8x16<const BF16: bool>(d: &mut [f32; 4], a: [u32; 4], b: [u32; 2]) {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
    unsafe {
        macro_rules! mma {
            ($ty:literal) => {
                core::arch::asm!(
                    concat!(
                        "mma.sync.aligned.m16n8k16.row.col.f32.", $ty, ".", $ty,
                        ".f32 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};"
                    ),
                    d0 = inout(reg32) d[0],
                    d1 = inout(reg32) d[1],
                    d2 = inout(reg32) d[2],
                    d3 = inout(reg32) d[3],
                    a0 = in(reg32) a[0],
                    a1 = in(reg32) a[1],
                    a2 = in(reg32) a[2],
                    a3 = in(reg32) a[3],
                    b0 = in(reg32) b[0],
                    b1 = in(reg32) b[1],
                    options(pure, nomem, nostack)
                )
            };
        }
        if BF16 { mma!("bf16") } else { mma!("f16") }
    }
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
    {
        let _ = (d, a, b);
        super::trap()
    }
}

/// Two f32 rounded to the 16-bit type (`BF16`: bf16, else f16), `lo` in the low half: the
/// word a pair of adjacent output entries is stored as.
#[inline(always)]
pub fn pack_half2<const BF16: bool>(lo: f32, hi: f32) -> u32 {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
    {
        let r: u32;
        // SAFETY: pure arithmetic. The first source goes to the upper half.
        unsafe {
            if BF16 {
                core::arch::asm!("cvt.rn.bf16x2.f32 {r}, {h}, {l};", r = out(reg32) r, h = in(reg32) hi, l = in(reg32) lo, options(pure, nomem, nostack));
            } else {
                core::arch::asm!("cvt.rn.f16x2.f32 {r}, {h}, {l};", r = out(reg32) r, h = in(reg32) hi, l = in(reg32) lo, options(pure, nomem, nostack));
            }
        }
        r
    }
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
    {
        let half = |v: f32| -> u32 {
            if BF16 {
                // Round to nearest even on the upper 16 bits (NaN kept quiet).
                let b = v.to_bits();
                if v.is_nan() { (b >> 16) | 0x40 } else { (b + 0x7FFF + ((b >> 16) & 1)) >> 16 }
            } else {
                (v as f16).to_bits() as u32
            }
        };
        half(lo) | (half(hi) << 16)
    }
}

/// This block's rank in its cluster (`%cluster_ctarank`; 0 outside clusters). sm_90.
#[inline(always)]
pub fn cluster_rank() -> u32 {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    {
        let r: u32;
        // SAFETY: reads a special register.
        unsafe { core::arch::asm!("mov.u32 {}, %cluster_ctarank;", out(reg32) r, options(pure, nomem, nostack)) };
        r
    }
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90")))]
    0
}

/// Waits until every thread of every block of the cluster arrives (`barrier.cluster`,
/// release / acquire): after it, barriers another block initialised may be used, and
/// before a block exits, no other block still writes to its shared memory. Every thread
/// of the cluster calls it, not necessarily at the same instruction as the rest of its
/// warp (no `.aligned`: a producer warp reaches it from two places). sm_90.
#[inline(always)]
pub fn cluster_barrier() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    unsafe {
        core::arch::asm!("barrier.cluster.arrive.release; barrier.cluster.wait.acquire;", options(nostack))
    };
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90")))]
    super::trap()
}

impl SharedPtr<u64> {
    /// Arrives on the barrier at this offset in block `rank` of the cluster (`mapa` +
    /// `mbarrier.arrive.release.cluster`): how a block tells another that a slot both fill
    /// is free.
    ///
    /// # Safety
    /// An initialised barrier in that block, which has not exited.
    #[inline(always)]
    pub unsafe fn mbar_arrive_cluster(self, rank: u32) {
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
        unsafe {
            core::arch::asm!(
                "{{ .reg .b32 ra; mapa.shared::cluster.u32 ra, {b}, {r}; mbarrier.arrive.shared::cluster.b64 _, [ra]; }}",
                b = in(reg32) self.addr,
                r = in(reg32) rank,
                options(nostack)
            );
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90")))]
        {
            let _ = rank;
            super::trap()
        }
    }
}

impl<T: Copy> SharedPtr<T> {
    /// [`SharedPtr::copy_tile_2d`] into this offset of every block of the cluster in `mask`
    /// (bit `r`: rank `r`), each block's barrier at `bar`'s offset completing its bytes
    /// (`.multicast::cluster`): one copy from L2 feeds blocks that share a tile. sm_90.
    ///
    /// # Safety
    /// As for [`SharedPtr::copy_tile_2d`], in every block of `mask`.
    #[inline(always)]
    pub unsafe fn copy_tile_2d_multicast(self, map: *const u8, x: i32, y: i32, bar: SharedPtr<u64>, mask: u16) {
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
        unsafe {
            core::arch::asm!(
                "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [{dst}], [{map}, {{{x}, {y}}}], [{bar}], {mask};",
                dst = in(reg32) self.addr,
                map = in(reg64) map,
                x = in(reg32) x,
                y = in(reg32) y,
                bar = in(reg32) bar.addr,
                mask = in(reg16) mask,
                options(nostack)
            );
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90")))]
        {
            let _ = (map, x, y, bar, mask);
            super::trap()
        }
    }
}

impl<T: Copy> SharedPtr<T> {
    /// Starts storing the 2-D box at element coordinates `(x, y)` of the tensor `map`
    /// describes from this element and the ones after it, laid out as the map's box and
    /// swizzle say (`cp.async.bulk.tensor.2d.global.shared::cta.bulk_group`, the inverse of
    /// [`SharedPtr::copy_tile_2d`]): the copy engine writes whole lines, and the box's
    /// elements outside the tensor are not written. The store joins this thread's open bulk
    /// group ([`bulk_commit`]). sm_90; a trap elsewhere (the CPU backend never gets here:
    /// its callers are the wgmma kernels' epilogues).
    ///
    /// # Safety
    /// `map` is a valid tensor map of this element type whose rows fit the destination; this
    /// element is aligned to the swizzle's period; the box's shared bytes were written before
    /// a [`fence_proxy_async_shared`] and stay unchanged until [`bulk_wait_read`].
    #[inline(always)]
    pub unsafe fn store_tile_2d(self, map: *const u8, x: i32, y: i32) {
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
        unsafe {
            core::arch::asm!(
                "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [{map}, {{{x}, {y}}}], [{src}];",
                map = in(reg64) map,
                x = in(reg32) x,
                y = in(reg32) y,
                src = in(reg32) self.addr,
                options(nostack)
            );
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90")))]
        {
            let _ = (map, x, y);
            super::trap()
        }
    }
}

/// `v` combined with the values of the lanes whose index differs in bit 0 or 1 (the four
/// lanes of a quad, which hold one row of a wgmma or mma fragment) by `op`
/// (`shfl.sync.bfly`). Every lane of the warp calls it. sm_80 (a trap elsewhere).
#[inline(always)]
pub fn quad_reduce(v: f32, op: impl Fn(f32, f32) -> f32) -> f32 {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
    {
        // Written out, lane masks as immediates: a loop over the masks is left rolled, with
        // the masks in local memory and the shuffle in a loop ptxas must treat as divergent.
        macro_rules! bfly {
            ($v:expr, $mask:literal) => {{
                let other: f32;
                // SAFETY: a warp shuffle; every lane takes part (full mask).
                unsafe {
                    core::arch::asm!(
                        concat!("shfl.sync.bfly.b32 {o}, {v}, ", $mask, ", 0x1f, 0xffffffff;"),
                        o = out(reg32) other,
                        v = in(reg32) $v,
                        options(nostack, nomem)
                    )
                };
                other
            }};
        }
        let v = op(v, bfly!(v, 1));
        op(v, bfly!(v, 2))
    }
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
    {
        let _ = (v, op);
        super::trap()
    }
}

/// `bar.sync ID, threads`: waits at hardware barrier `ID` (1 to 15; 0 is [`super::barrier`]'s)
/// until `threads` threads (a multiple of 32, counting those that [`named_barrier_arrive`])
/// have reached it. Every thread of each warp taking part calls it. Elsewhere nothing: the
/// code that uses it (attention's warpgroup turns) runs on NVIDIA only.
#[inline(always)]
pub fn named_barrier_sync<const ID: u32>(threads: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a barrier over whole warps; the caller keeps the counts matched.
    unsafe {
        core::arch::asm!("bar.sync {id}, {n};", id = const ID, n = in(reg32) threads, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = threads;
}

/// `bar.arrive ID, threads`: counts this warp's threads at barrier `ID` without waiting
/// (the signalling half of [`named_barrier_sync`]).
#[inline(always)]
pub fn named_barrier_arrive<const ID: u32>(threads: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: as for `named_barrier_sync`.
    unsafe {
        core::arch::asm!("bar.arrive {id}, {n};", id = const ID, n = in(reg32) threads, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = threads;
}

/// `bar.warp.sync`: every lane of the warp waits for the others, and the memory accesses
/// each made before it are ordered before those any makes after it (a warp's counterpart of
/// [`super::barrier`]). Every lane calls it. Elsewhere nothing: the warp-level code that uses
/// it (the tensor-core GEMM's stream-K fix-up) runs on NVIDIA only.
#[inline(always)]
pub fn warp_sync() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a warp barrier over every lane (full mask).
    unsafe {
        core::arch::asm!("bar.warp.sync 0xffffffff;", options(nostack))
    };
}

/// `v` as lane 0 of the warp has it (`shfl.sync.idx`): a value the same in every lane that
/// ptxas can see is warp-uniform, so what is computed from it (the warpgroup index, the
/// `wgmma` descriptors) lives in uniform registers instead of being moved there before each
/// `wgmma`. Every lane of the warp calls it. The value itself elsewhere.
#[inline(always)]
pub fn warp_uniform(v: u32) -> u32 {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
    {
        let r: u32;
        // SAFETY: a warp shuffle; every lane takes part (full mask).
        unsafe {
            core::arch::asm!(
                "shfl.sync.idx.b32 {r}, {v}, 0, 0x1f, 0xffffffff;",
                r = out(reg32) r,
                v = in(reg32) v,
                options(nostack, nomem)
            )
        };
        r
    }
    #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
    v
}
