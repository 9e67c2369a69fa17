//! What the Vulkan path compiles a WGSL pipeline to: the SPIR-V that wgpu's Vulkan backend
//! hands the driver, translated again here with the same naga options, and a profile of it
//! ([`SpirvProfile`]): loads and stores by storage class and width, function-scope arrays
//! and their dynamic indexing, loops, bounds-check clamps, size.
//!
//! The driver compiles this SPIR-V further (NVIDIA's to SASS), so the profile is not the
//! machine code; it is what every driver starts from, and where a WGSL kernel's intent
//! (a 16-byte load, a tile in workgroup memory, registers) can already be lost.
//!
//! # Options mirrored from wgpu-hal 30.0.1 (`src/vulkan/`)
//!
//! - `adapter.rs`, `PhysicalDeviceCapabilities`' `open` (the `naga_options` block,
//!   `spv::Options { .. }`): `lang_version`, `flags`, `capabilities`,
//!   `bounds_check_policies`, `force_loop_bounding: true`,
//!   `ray_query_initialization_tracking: true`, `trace_ray_argument_validation: true`,
//!   `emit_int_div_checks: true`, `mesh_shader_primitive_indices_clamp: true`,
//!   `fake_missing_bindings: false`.
//! - `device.rs`, `create_shader_module`: wgpu-hal always sets
//!   `Workarounds::SEPARATE_ENTRY_POINTS` (adapter.rs, "TODO: only enable for particular
//!   devices"), so a WGSL module is kept as naga IR and compiled per pipeline.
//! - `device.rs`, `compile_stage`: per pipeline, with runtime checks off
//!   (`create_shader_module_trusted(.., ShaderRuntimeChecks::unchecked())`, our
//!   `DYNSMEM_WGSL_RUNTIME_CHECKS=off`) every bounds-check policy becomes `Unchecked` and
//!   `force_loop_bounding`, `emit_int_div_checks`, the ray-query and mesh checks go off;
//!   the pipeline's `zero_initialize_workgroup_memory: false` (ours) makes it
//!   `ZeroInitializeWorkgroupMemoryMode::None`; then
//!   `naga::back::pipeline_constants::process_overrides(module, info, Some((stage, entry)),
//!   constants)` and `naga::back::spv::write_vec(.., Some(&PipelineOptions { entry_point,
//!   shader_stage }))`, which this module calls the same way.
//!
//! # Choices that depend on the device, as assumed here (an NVIDIA discrete GPU)
//!
//! - `robust_buffer_access2` (VK_EXT_robustness2) present: the `buffer` policy is
//!   `Unchecked` (the driver bounds storage and uniform accesses), so only arrays outside
//!   buffers (workgroup, function, private) are clamped, with `index: Restrict`. lavapipe
//!   has robustness2 as well.
//! - `robust_image_access` present (`image_load: Unchecked`; the kernels use no images).
//! - Vulkan 1.3 or later: SPIR-V 1.6, and `VK_KHR_zero_initialize_workgroup_memory`
//!   (which would only matter with zero-initialisation on).
//! - Capabilities: the always-available list, cube arrays and sample-rate shading (the
//!   downlevel flags of a desktop GPU), integer dot product and `Int8`, and those of the
//!   `SUBGROUP` and `SHADER_F16` features (the device requests both where the adapter has
//!   them; a module uses them only in the wgsl-subgroup and f16 twins). A capability the
//!   kernel needed and the list lacked fails here as it fails in wgpu.
//! - Not Qualcomm (`LABEL_VARYINGS` on), `FORCE_POINT_SIZE` on: neither touches a compute
//!   shader.
//! - A release build of wgpu: `InstanceFlags::DEBUG` off, so no debug names, source text
//!   or line numbers. A debug build adds them; they change the word count, not the loads,
//!   stores or control flow.
//! - `task_dispatch_limits: None`: wgpu fills it from the device limits, and naga reads it
//!   only for task shaders.
//!
//! The binding map (`device.rs`, `create_pipeline_layout` and `create_bind_group_layout`)
//! is the pipeline layout's: wgpu derives the layout from the shader (ours passes
//! `layout: None`) and numbers each group's Vulkan bindings densely in binding order;
//! [`binding_map`] does the same.
//!
//! The WGSL is validated with naga's subgroup and f16 capabilities, as wgpu validates it
//! for a device with those two features.

use std::collections::{HashMap, HashSet};
use std::fmt;

use naga::back::spv;
use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{GlslStd450Op, Op, StorageClass, Word};
use serde::{Deserialize, Serialize};

mod count;
use count::Counter;

/// Loads or stores of one storage class, by the width of the value moved.
///
/// A scalar `f32`/`u32` is 32 bits, a `vec2` of them 64, a `vec4` 128. The width is what
/// one instruction moves: a kernel that meant 16-byte accesses should show its storage
/// traffic at 128 bits, and where it shows 32 the vector was split (or never was one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Widths {
    pub b32: u32,
    pub b64: u32,
    pub b128: u32,
    /// Anything else: another scalar or vector size, or a whole array or struct at once.
    pub other: u32,
}

impl Widths {
    fn add(&mut self, bits: Option<u32>) {
        match bits {
            Some(32) => self.b32 += 1,
            Some(64) => self.b64 += 1,
            Some(128) => self.b128 += 1,
            _ => self.other += 1,
        }
    }

    pub fn total(&self) -> u32 {
        self.b32 + self.b64 + self.b128 + self.other
    }

    /// `128b x4, 32b x2`, widest first; empty when there are none.
    fn describe(&self) -> String {
        [(self.b128, "128b"), (self.b64, "64b"), (self.b32, "32b"), (self.other, "other")]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, w)| format!("{w} x{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The memory operations of one storage class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Access {
    /// `OpLoad`s, by the width of the loaded value.
    pub loads: Widths,
    /// `OpStore`s, by the width of the stored value.
    pub stores: Widths,
    /// Atomic instructions (`OpAtomic*`, loads and stores included; WGSL's are 32-bit).
    pub atomics: u32,
}

impl Access {
    fn is_empty(&self) -> bool {
        self.loads.total() == 0 && self.stores.total() == 0 && self.atomics == 0
    }

    /// `ld 128b x4 | st 32b x1 | atomic x2`, the empty parts left out.
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.loads.total() > 0 {
            parts.push(format!("ld {}", self.loads.describe()));
        }
        if self.stores.total() > 0 {
            parts.push(format!("st {}", self.stores.describe()));
        }
        if self.atomics > 0 {
            parts.push(format!("atomic x{}", self.atomics));
        }
        parts.join(" | ")
    }
}

/// The SPIR-V of one pipeline's entry point, counted. Every count is over the functions
/// the entry point reaches (itself and what it calls, naga's helpers included), each
/// instruction once however often it runs: a load inside a loop counts once, and so does
/// a load in a helper function called from four places (naga does not inline WGSL
/// functions; the driver may).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpirvProfile {
    /// `StorageBuffer`: the kernel's `var<storage>` buffers, device memory.
    pub storage: Access,
    /// `Uniform`: the launch's scalar arguments (one uniform block).
    pub uniform: Access,
    /// `Workgroup`: the `var<workgroup>` arrays, shared memory.
    pub workgroup: Access,
    /// `Function` and `Private`: per-thread variables. A driver keeps them in registers
    /// when it can; what it cannot (see `function_arrays`) goes to local memory, which is
    /// device memory behind the cache.
    pub function: Access,
    /// `Input`: the built-ins (invocation ids). Not shown by `Display`.
    pub input: Access,
    /// Any other storage class.
    pub other: Access,
    /// `OpVariable`s of array type in `Function` or `Private` storage: per-thread arrays,
    /// the kernel's own (`var a: array<f32, 4>`) or naga's (a `let` array indexed by a
    /// value it must spill to a variable first).
    pub function_arrays: u32,
    /// `OpAccessChain`s into those arrays with an index that is not a constant. An array
    /// indexed only by constants can live in registers; one indexed at run time needs
    /// addressable memory, and a driver may put it in local memory.
    pub function_array_dynamic_indices: u32,
    /// `OpLoopMerge`s: the structured loops.
    pub loops: u32,
    /// `GLSL.std.450 UMin` calls: naga's clamp of each index into a fixed-size array under
    /// the `Restrict` policy (runtime checks on), plus the kernel's own `min` of `u32`s.
    /// The difference between a profile with runtime checks on and one with them off is
    /// the clamps.
    pub umin: u32,
    /// Instructions of the functions the entry point reaches.
    pub instructions: u32,
    /// 32-bit words of the whole SPIR-V module (header, types, constants included).
    pub words: u32,
    /// Bytes of the module: `4 * words`.
    pub bytes: u32,
}

impl fmt::Display for SpirvProfile {
    /// `storage ld 128b x4, 32b x2 | st 32b x1; workgroup ld 128b x6 | st 128b x4;
    /// function arrays 2 (dyn idx 5); loops 3; umin 7; 812 instrs, 1234 words`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        for (name, a) in [
            ("storage", &self.storage),
            ("uniform", &self.uniform),
            ("workgroup", &self.workgroup),
            ("function", &self.function),
            ("other", &self.other),
        ] {
            if !a.is_empty() {
                parts.push(format!("{name} {}", a.describe()));
            }
        }
        parts.push(format!(
            "function arrays {} (dyn idx {})",
            self.function_arrays, self.function_array_dynamic_indices
        ));
        parts.push(format!("loops {}", self.loops));
        parts.push(format!("umin {}", self.umin));
        parts.push(format!("{} instrs, {} words", self.instructions, self.words));
        f.write_str(&parts.join("; "))
    }
}

/// The options wgpu-hal 30's Vulkan backend gives naga for one compute pipeline, with
/// `runtime_checks` as the shader module was created (see the module doc for what is
/// mirrored and what is assumed of the device).
pub fn wgpu_spv_options(runtime_checks: bool) -> spv::Options<'static> {
    use naga::proc::{BoundsCheckPolicies, BoundsCheckPolicy};
    use spv::Capability as C;
    let capabilities = [
        C::Shader,
        C::Matrix,
        C::Sampled1D,
        C::Image1D,
        C::ImageQuery,
        C::DerivativeControl,
        C::StorageImageExtendedFormats,
        C::SampledCubeArray,
        C::SampleRateShading,
        C::DotProductInputAllKHR,
        C::DotProductInput4x8BitKHR,
        C::DotProductInput4x8BitPackedKHR,
        C::DotProductKHR,
        C::Int8,
        // The device's SUBGROUP and SHADER_F16 features, where the adapter has them: naga
        // emits only the capabilities a module uses, so a module without subgroups or f16
        // compiles the same with or without these.
        C::GroupNonUniform,
        C::GroupNonUniformVote,
        C::GroupNonUniformArithmetic,
        C::GroupNonUniformBallot,
        C::GroupNonUniformShuffle,
        C::GroupNonUniformShuffleRelative,
        C::GroupNonUniformQuad,
        C::Float16,
    ];
    let mut flags = spv::WriterFlags::empty();
    flags.set(spv::WriterFlags::LABEL_VARYINGS, true);
    flags.set(spv::WriterFlags::FORCE_POINT_SIZE, true);
    let checked = if runtime_checks { BoundsCheckPolicy::Restrict } else { BoundsCheckPolicy::Unchecked };
    spv::Options {
        lang_version: (1, 6),
        flags,
        capabilities: Some(capabilities.into_iter().collect()),
        bounds_check_policies: BoundsCheckPolicies {
            index: checked,
            // robust_buffer_access2 and robust_image_access: the driver checks these.
            buffer: BoundsCheckPolicy::Unchecked,
            image_load: BoundsCheckPolicy::Unchecked,
            binding_array: BoundsCheckPolicy::Unchecked,
        },
        // The pipeline's `zero_initialize_workgroup_memory: false`.
        zero_initialize_workgroup_memory: spv::ZeroInitializeWorkgroupMemoryMode::None,
        force_loop_bounding: runtime_checks,
        ray_query_initialization_tracking: runtime_checks,
        trace_ray_argument_validation: true,
        use_storage_input_output_16: false,
        fake_missing_bindings: false,
        // Set per module by [`compile`] ([`binding_map`]).
        binding_map: Default::default(),
        debug_info: None,
        task_dispatch_limits: None,
        mesh_shader_primitive_indices_clamp: runtime_checks,
        emit_int_div_checks: runtime_checks,
    }
}

/// The SPIR-V words wgpu's Vulkan backend makes of `entry` in `source` with its
/// `override`s set to `constants`, or why naga could not make them.
pub fn compile(source: &str, entry: &str, constants: &[(&str, f64)], runtime_checks: bool) -> Result<Vec<u32>, String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    let caps = naga::valid::Capabilities::SUBGROUP | naga::valid::Capabilities::SHADER_FLOAT16;
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(&module)
        .map_err(|e| e.emit_to_string(source))?;
    let constants: naga::back::PipelineConstants = constants.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let stage = naga::ShaderStage::Compute;
    let (module, info) =
        naga::back::pipeline_constants::process_overrides(&module, &info, Some((stage, entry)), &constants)
            .map_err(|e| e.to_string())?;
    let pipeline = spv::PipelineOptions { shader_stage: stage, entry_point: entry.to_string() };
    let options = spv::Options { binding_map: binding_map(&module), ..wgpu_spv_options(runtime_checks) };
    spv::write_vec(&module, &info, &options, Some(&pipeline)).map_err(|e| e.to_string())
}

/// The binding map wgpu's Vulkan pipeline layout gives naga for a layout derived from
/// `module`: each `@group(g) @binding(b)` to descriptor set `g` and the Vulkan binding of
/// its rank among the group's bindings (the same number where they run 0, 1, ..).
pub fn binding_map(module: &naga::Module) -> spv::BindingMap {
    let mut bindings: Vec<naga::ResourceBinding> =
        module.global_variables.iter().filter_map(|(_, v)| v.binding).collect();
    bindings.sort_by_key(|b| (b.group, b.binding));
    bindings.dedup();
    let mut map = spv::BindingMap::default();
    let mut rank = 0;
    for (i, b) in bindings.iter().enumerate() {
        rank = if i > 0 && bindings[i - 1].group == b.group { rank + 1 } else { 0 };
        map.insert(*b, spv::BindingInfo { descriptor_set: b.group, binding: rank, binding_array_size: None });
    }
    map
}

/// [`compile`], then [`profile_words`].
pub fn profile(
    source: &str,
    entry: &str,
    constants: &[(&str, f64)],
    runtime_checks: bool,
) -> Result<SpirvProfile, String> {
    profile_words(&compile(source, entry, constants, runtime_checks)?, entry)
}

fn id(op: Option<&Operand>) -> Option<Word> {
    op.and_then(Operand::id_ref_any)
}

/// Counts the SPIR-V `words` for its entry point named `entry`.
pub fn profile_words(words: &[u32], entry: &str) -> Result<SpirvProfile, String> {
    let module = rspirv::dr::load_words(words).map_err(|e| format!("reading the SPIR-V back: {e}"))?;
    let mut p = Counter::new(&module).count(entry)?;
    p.words = words.len() as u32;
    p.bytes = 4 * p.words;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One 16-byte storage load, one scalar storage store, a per-thread array indexed by a
    /// value known only at run time, the launch's scalar from the uniform block, and a
    /// workgroup array whose length is an `override`.
    const SHADER: &str = r#"
override TILE: u32;

struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

var<workgroup> tile: array<f32, TILE>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let v = src[gid.x];
    var lanes: array<f32, 4>;
    lanes[0] = v.x;
    lanes[1] = v.y;
    lanes[2] = v.z;
    lanes[3] = v.w;
    tile[lid] = lanes[gid.x % params.n];
    workgroupBarrier();
    dst[gid.x] = tile[(lid + 1u) % TILE];
}
"#;

    #[test]
    fn counts_of_a_known_shader() {
        let p = profile(SHADER, "main", &[("TILE", 64.0)], false).expect("compiles");
        let checked = profile(SHADER, "main", &[("TILE", 64.0)], true).expect("compiles");
        eprintln!("unchecked: {p}\nchecked:   {checked}");

        assert_eq!(p.storage.loads, Widths { b128: 1, ..Widths::default() }, "{p}");
        assert_eq!(p.storage.stores, Widths { b32: 1, ..Widths::default() }, "{p}");
        assert_eq!(p.storage.atomics, 0);
        assert_eq!(p.uniform.loads, Widths { b32: 1, ..Widths::default() }, "{p}");
        assert_eq!(p.uniform.stores.total(), 0);
        assert_eq!(p.workgroup.loads, Widths { b32: 1, ..Widths::default() }, "{p}");
        assert_eq!(p.workgroup.stores, Widths { b32: 1, ..Widths::default() }, "{p}");
        assert_eq!(p.function_arrays, 1, "{p}");
        assert!(p.function_array_dynamic_indices >= 1, "{p}");
        // The four constant-index stores into `lanes` are not dynamic.
        assert_eq!(p.function_array_dynamic_indices, 1, "{p}");
        assert_eq!(p.function.loads.b32, 1, "{p}");
        assert_eq!(p.function.stores.b32, 4, "{p}");
        assert_eq!(p.loops, 0);
        assert_eq!(p.bytes, 4 * p.words);
        assert!(p.instructions > 0 && p.words > p.instructions);

        // Runtime checks on: the same memory operations, plus clamps of the two indices
        // into `tile` and the one into `lanes` (the storage buffers are left to the
        // driver's robust access).
        assert_eq!(checked.storage, p.storage);
        assert_eq!(checked.workgroup, p.workgroup);
        assert_eq!(checked.function_arrays, 1);
        assert_eq!(checked.umin, p.umin + 3, "{p}\n{checked}");
    }

    #[test]
    fn override_constants_are_applied() {
        // Without its value the override has none, and the array no length.
        assert!(profile(SHADER, "main", &[], false).is_err());
        let a = compile(SHADER, "main", &[("TILE", 64.0)], false).unwrap();
        let b = compile(SHADER, "main", &[("TILE", 128.0)], false).unwrap();
        assert_ne!(a, b, "the array length is in the SPIR-V");
        assert!(profile(SHADER, "main", &[("NOT_AN_OVERRIDE", 1.0)], false).is_err());
    }

    #[test]
    fn loops_and_loop_bounding() {
        const LOOP: &str = r#"
@group(0) @binding(0) var<storage, read_write> buf: array<u32>;
@compute @workgroup_size(1)
fn main() {
    var s = 0u;
    for (var i = 0u; i < buf[0]; i++) {
        for (var j = 0u; j < i; j++) { s += j; }
    }
    buf[1] = s;
}
"#;
        let off = profile(LOOP, "main", &[], false).unwrap();
        let on = profile(LOOP, "main", &[], true).unwrap();
        assert_eq!((off.loops, on.loops), (2, 2));
        // wgpu's loop bounding: a vec2<u32> counter per loop, in a function variable.
        assert_eq!(off.function.loads.b64, 0, "{off}");
        assert!(on.function.loads.b64 >= 2, "{on}");
    }

    #[test]
    fn display_is_one_line() {
        let p = SpirvProfile {
            storage: Access {
                loads: Widths { b128: 4, b32: 2, ..Widths::default() },
                stores: Widths { b32: 1, ..Widths::default() },
                atomics: 0,
            },
            workgroup: Access {
                loads: Widths { b128: 6, ..Widths::default() },
                stores: Widths { b128: 4, ..Widths::default() },
                atomics: 2,
            },
            function_arrays: 2,
            function_array_dynamic_indices: 5,
            loops: 3,
            umin: 7,
            instructions: 812,
            words: 1234,
            bytes: 4936,
            ..SpirvProfile::default()
        };
        assert_eq!(
            p.to_string(),
            "storage ld 128b x4, 32b x2 | st 32b x1; workgroup ld 128b x6 | st 128b x4 | atomic x2; \
             function arrays 2 (dyn idx 5); loops 3; umin 7; 812 instrs, 1234 words"
        );
    }
}
