//! Occupancy (waves per SIMD) of an AMDGPU kernel from its code-object resources, a
//! block size and its launch-sized LDS, computed as LLVM's AMDGPU backend computes it
//! (`AMDGPUBaseInfo.cpp`: `getNumWavesPerEUWithNumVGPRs`, `getOccupancyWithNumSGPRs`;
//! `AMDGPUSubtarget.cpp`: `getMaxWorkGroupsPerCU`, `getOccupancyWithWorkGroupSizes`),
//! with the per-target limits of its processor definitions (`GCNProcessors.td`).
//!
//! Not counted: scratch (LLVM does not either), and any cap the runtime adds. LDS is
//! rounded up to its 512-byte allocation granule (LLVM leaves that out; the hardware
//! allocates in granules).

use super::code_object::KernelResources;

/// What limits waves on one AMDGPU target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Isa {
    pub arch: &'static str,
    /// Default wavefront size (HIP's: 64 on CDNA, 32 on RDNA).
    pub wave: u32,
    /// SIMDs (execution units) sharing one CU's (RDNA: one WGP's) LDS and workgroup slots.
    pub simds: u32,
    pub max_waves_per_simd: u32,
    /// VGPRs per SIMD lane, and the granule a wave's VGPRs are allocated in. On gfx90a and
    /// gfx942 AGPRs share the file and `.vgpr_count` already counts them.
    pub vgprs: u32,
    pub vgpr_granule: u32,
    /// Whether SGPRs limit waves (gfx9; gfx10+ allocates 128 to every wave).
    pub sgpr_limited: bool,
    /// LDS shared by the workgroups of one CU (RDNA in WGP mode: of one WGP).
    pub lds: u32,
    /// Most LDS one workgroup may have.
    pub lds_per_workgroup: u32,
    /// Workgroups with more than one wave need a barrier each: at most this many per CU.
    pub barriers: u32,
}

/// CDNA2 (MI200). CDNA3's gfx942 has the same limits (LLVM's `isGFX90A` covers both).
const GFX90A: Isa = Isa {
    arch: "gfx90a",
    wave: 64,
    simds: 4,
    max_waves_per_simd: 8,
    vgprs: 512,
    vgpr_granule: 8,
    sgpr_limited: true,
    lds: 65536,
    lds_per_workgroup: 65536,
    barriers: 16,
};

/// The targets the build embeds code objects for.
pub const ISAS: [Isa; 3] = [
    GFX90A,
    Isa { arch: "gfx942", ..GFX90A },
    // RDNA3 in WGP mode (LLVM's default, no `cumode`): 4 SIMDs and 128 KiB of LDS per WGP;
    // wave32, with 1.5x the VGPRs of RDNA2.
    Isa {
        arch: "gfx1100",
        wave: 32,
        simds: 4,
        max_waves_per_simd: 16,
        vgprs: 1536,
        vgpr_granule: 24,
        sgpr_limited: false,
        lds: 131072,
        lds_per_workgroup: 65536,
        barriers: 32,
    },
];

/// The limits of `arch`, if it is one of [`ISAS`].
pub fn isa(arch: &str) -> Option<&'static Isa> {
    ISAS.iter().find(|i| i.arch == arch)
}

/// The waves per SIMD a kernel can have resident, and what limits them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Occupancy {
    pub waves_per_simd: u32,
    pub by_vgprs: u32,
    pub by_sgprs: u32,
    /// From the workgroups that fit a CU: its LDS and its barriers.
    pub by_workgroups: u32,
    pub limiter: &'static str,
}

fn align(x: u32, granule: u32) -> u32 {
    x.div_ceil(granule) * granule
}

/// Occupancy of kernel `k` on `isa` with blocks of `block` work-items and `launch_lds`
/// bytes of launch-sized LDS; `Err` says why such a block cannot run at all.
pub fn occupancy(k: &KernelResources, isa: &Isa, block: u32, launch_lds: u32) -> Result<Occupancy, String> {
    if block == 0 || block > k.max_workgroup_size {
        return Err(format!(
            "a block of {block} work-items; {} was compiled for 1 to {}",
            k.name, k.max_workgroup_size
        ));
    }
    let lds = k.static_lds_bytes as u64 + launch_lds as u64;
    if lds > isa.lds_per_workgroup as u64 {
        return Err(format!(
            "{lds} B of LDS, over the {} B a workgroup may have on {}",
            isa.lds_per_workgroup, isa.arch
        ));
    }
    let max = isa.max_waves_per_simd;
    let by_vgprs =
        if k.vgprs < isa.vgpr_granule { max } else { (isa.vgprs / align(k.vgprs, isa.vgpr_granule)).clamp(1, max) };
    let by_sgprs = match (isa.sgpr_limited, k.sgprs) {
        (false, _) => max,
        (true, 0..=80) => max.min(10),
        (true, 81..=88) => max.min(9),
        (true, 89..=100) => max.min(8),
        (true, _) => max.min(7),
    };
    let waves_per_group = block.div_ceil(k.wavefront_size.max(1));
    let slots = max * isa.simds;
    let groups_by_waves = if waves_per_group == 1 { slots } else { (slots / waves_per_group).min(isa.barriers) };
    let lds = align(lds as u32, 512);
    let groups_by_lds = isa.lds.checked_div(lds).unwrap_or(u32::MAX);
    let groups = groups_by_waves.min(groups_by_lds);
    let by_workgroups = (groups * waves_per_group).div_ceil(isa.simds).clamp(1, max);
    let waves_per_simd = by_vgprs.min(by_sgprs).min(by_workgroups);
    let limiter = if waves_per_simd == max && by_vgprs == max && by_sgprs == max && by_workgroups == max {
        "none"
    } else if waves_per_simd == by_vgprs {
        "VGPRs"
    } else if waves_per_simd == by_sgprs {
        "SGPRs"
    } else if groups_by_lds < groups_by_waves {
        "LDS"
    } else {
        "workgroup slots"
    };
    Ok(Occupancy { waves_per_simd, by_vgprs, by_sgprs, by_workgroups, limiter })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(vgprs: u32, sgprs: u32, static_lds: u32, wave: u32) -> KernelResources {
        KernelResources {
            name: "k".into(),
            vgprs,
            agprs: 0,
            sgprs,
            vgpr_spills: 0,
            sgpr_spills: 0,
            scratch_bytes: 0,
            static_lds_bytes: static_lds,
            max_workgroup_size: 1024,
            wavefront_size: wave,
        }
    }

    #[test]
    fn matches_llvms_occupancy_tests() {
        let (gfx90a, gfx1100) = (isa("gfx90a").unwrap(), isa("gfx1100").unwrap());
        // VGPRs (LLVM's occupancy-levels.ll, agpr-register-count.ll): 512 / alignTo(n, 8) on
        // gfx90a, capped at 8; 1536 / alignTo(n, 24) on gfx1100 wave32, capped at 16.
        for (v, waves) in [(128, 4), (256, 2), (512, 1), (56, 8), (4, 8)] {
            assert_eq!(occupancy(&kernel(v, 16, 0, 64), gfx90a, 64, 0).unwrap().by_vgprs, waves, "gfx90a {v}");
        }
        for (v, waves) in [(64, 16), (128, 10), (256, 5)] {
            assert_eq!(occupancy(&kernel(v, 16, 0, 32), gfx1100, 32, 0).unwrap().by_vgprs, waves, "gfx1100 {v}");
        }
        // SGPRs limit only gfx9: 101 of them allow 7 waves.
        let o = occupancy(&kernel(32, 101, 0, 64), gfx90a, 64, 0).unwrap();
        assert_eq!((o.waves_per_simd, o.limiter), (7, "SGPRs"));
        assert_eq!(occupancy(&kernel(32, 101, 0, 32), gfx1100, 32, 0).unwrap().by_sgprs, 16);
        // LDS (LLVM's test): gfx1100 wave32, 8252 B (8704 after the granule), blocks of 64:
        // 131072 / 8704 = 15 workgroups x 2 waves over 4 SIMDs -> 8.
        let o = occupancy(&kernel(32, 16, 8252, 32), gfx1100, 64, 0).unwrap();
        assert_eq!((o.waves_per_simd, o.limiter), (8, "LDS"));
        // Launch-sized LDS counts the same as static: 32 KiB per block on gfx90a leaves two
        // workgroups of 4 waves per CU: 2 waves per SIMD.
        let o = occupancy(&kernel(32, 16, 0, 64), gfx90a, 256, 32768).unwrap();
        assert_eq!((o.waves_per_simd, o.limiter), (2, "LDS"));
        // Barriers: blocks of 2 waves, no LDS: 16 workgroups x 2 waves over 4 SIMDs -> 8.
        assert_eq!(occupancy(&kernel(32, 16, 0, 64), gfx90a, 128, 0).unwrap().waves_per_simd, 8);
        // What cannot run at all.
        assert!(occupancy(&kernel(32, 16, 0, 64), gfx90a, 0, 0).is_err());
        assert!(occupancy(&kernel(32, 16, 0, 64), gfx90a, 256, 65537).is_err());
        let mut small = kernel(32, 16, 0, 64);
        small.max_workgroup_size = 256;
        assert!(occupancy(&small, gfx90a, 512, 0).unwrap_err().contains("compiled for 1 to 256"));
    }
}
