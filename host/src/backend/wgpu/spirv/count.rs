//! The walk over a SPIR-V module's instructions that fills a [`SpirvProfile`]: loads and
//! stores by storage class and width, per-thread arrays and their dynamic indices, loops,
//! bounds-check clamps.

use super::*;

/// What the counts need to know of the module: every definition by id, the constants,
/// and the id of the GLSL.std.450 instruction set.
pub(super) struct Counter<'m> {
    module: &'m Module,
    defs: HashMap<Word, &'m Instruction>,
    constants: HashSet<Word>,
    glsl: Option<Word>,
}

impl<'m> Counter<'m> {
    pub(super) fn new(module: &'m Module) -> Counter<'m> {
        let mut defs = HashMap::new();
        for inst in module.all_inst_iter() {
            if let Some(r) = inst.result_id {
                defs.insert(r, inst);
            }
        }
        let constants = module
            .types_global_values
            .iter()
            .filter(|i| {
                matches!(
                    i.class.opcode,
                    Op::Constant
                        | Op::ConstantTrue
                        | Op::ConstantFalse
                        | Op::ConstantNull
                        | Op::ConstantComposite
                        | Op::SpecConstant
                        | Op::SpecConstantTrue
                        | Op::SpecConstantFalse
                        | Op::SpecConstantComposite
                        | Op::SpecConstantOp
                )
            })
            .filter_map(|i| i.result_id)
            .collect();
        let glsl = module
            .ext_inst_imports
            .iter()
            .find(|i| matches!(i.operands.first(), Some(Operand::LiteralString(s)) if s == "GLSL.std.450"))
            .and_then(|i| i.result_id);
        Counter { module, defs, constants, glsl }
    }

    /// The storage class and pointee type of pointer `ptr` (through its type's
    /// `OpTypePointer`).
    fn pointer(&self, ptr: Word) -> Option<(StorageClass, Word)> {
        let ty = self.defs.get(&ptr)?.result_type?;
        let ty = self.defs.get(&ty)?;
        match (ty.class.opcode, ty.operands.as_slice()) {
            (Op::TypePointer, [Operand::StorageClass(sc), Operand::IdRef(pointee)]) => Some((*sc, *pointee)),
            _ => None,
        }
    }

    /// Bits of a scalar or vector type; `None` for anything else.
    fn bits(&self, ty: Word) -> Option<u32> {
        let t = self.defs.get(&ty)?;
        match (t.class.opcode, t.operands.as_slice()) {
            (Op::TypeInt | Op::TypeFloat, [Operand::LiteralBit32(w), ..]) => Some(*w),
            (Op::TypeBool, _) => Some(32),
            (Op::TypeVector, [Operand::IdRef(c), Operand::LiteralBit32(n)]) => Some(self.bits(*c)? * n),
            _ => None,
        }
    }

    fn is_array(&self, ty: Word) -> bool {
        self.defs.get(&ty).is_some_and(|t| matches!(t.class.opcode, Op::TypeArray | Op::TypeRuntimeArray))
    }

    /// The functions `entry` reaches, the entry point first.
    fn reachable(&self, entry: &str) -> Result<Vec<&'m rspirv::dr::Function>, String> {
        let root = self
            .module
            .entry_points
            .iter()
            .find(|i| matches!(i.operands.get(2), Some(Operand::LiteralString(s)) if s == entry))
            .and_then(|i| id(i.operands.get(1)))
            .ok_or_else(|| format!("no entry point {entry:?} in the SPIR-V"))?;
        let by_id: HashMap<Word, &rspirv::dr::Function> =
            self.module.functions.iter().filter_map(|f| Some((f.def_id()?, f))).collect();
        let mut seen = vec![root];
        let mut out = Vec::new();
        while let Some(f) = seen.get(out.len()).and_then(|f| by_id.get(f)) {
            out.push(*f);
            for inst in f.all_inst_iter() {
                if inst.class.opcode == Op::FunctionCall
                    && let Some(callee) = id(inst.operands.first())
                    && !seen.contains(&callee)
                {
                    seen.push(callee);
                }
            }
        }
        Ok(out)
    }

    pub(super) fn count(&self, entry: &str) -> Result<SpirvProfile, String> {
        let mut p = SpirvProfile::default();
        let functions = self.reachable(entry)?;
        // Pointers into per-thread arrays: the variables, then every access chain from them.
        let mut arrays: HashSet<Word> = HashSet::new();
        let mut referenced: HashSet<Word> = HashSet::new();
        for inst in functions.iter().flat_map(|f| f.all_inst_iter()) {
            referenced.extend(inst.operands.iter().filter_map(Operand::id_ref_any));
        }
        for g in &self.module.types_global_values {
            if g.class.opcode == Op::Variable
                && let Some(r) = g.result_id
                && referenced.contains(&r)
                && let Some((StorageClass::Private, pointee)) = self.pointer(r)
                && self.is_array(pointee)
            {
                arrays.insert(r);
                p.function_arrays += 1;
            }
        }
        for inst in functions.iter().flat_map(|f| f.all_inst_iter()) {
            p.instructions += 1;
            let op = inst.class.opcode;
            match op {
                Op::Variable => {
                    if let Some(r) = inst.result_id
                        && let Some((StorageClass::Function, pointee)) = self.pointer(r)
                        && self.is_array(pointee)
                    {
                        arrays.insert(r);
                        p.function_arrays += 1;
                    }
                }
                Op::AccessChain | Op::InBoundsAccessChain | Op::PtrAccessChain | Op::InBoundsPtrAccessChain => {
                    if let (Some(r), Some(base)) = (inst.result_id, id(inst.operands.first()))
                        && arrays.contains(&base)
                    {
                        arrays.insert(r);
                        let dynamic = inst.operands[1..]
                            .iter()
                            .filter_map(Operand::id_ref_any)
                            .any(|i| !self.constants.contains(&i));
                        p.function_array_dynamic_indices += u32::from(dynamic);
                    }
                }
                Op::Load | Op::Store => {
                    let Some((sc, pointee)) = id(inst.operands.first()).and_then(|ptr| self.pointer(ptr)) else {
                        continue;
                    };
                    let a = self.class(&mut p, sc);
                    if op == Op::Load {
                        a.loads.add(inst.result_type.and_then(|t| self.bits(t)));
                    } else {
                        a.stores.add(self.bits(pointee));
                    }
                }
                Op::AtomicLoad
                | Op::AtomicStore
                | Op::AtomicExchange
                | Op::AtomicCompareExchange
                | Op::AtomicCompareExchangeWeak
                | Op::AtomicIIncrement
                | Op::AtomicIDecrement
                | Op::AtomicIAdd
                | Op::AtomicISub
                | Op::AtomicSMin
                | Op::AtomicUMin
                | Op::AtomicSMax
                | Op::AtomicUMax
                | Op::AtomicAnd
                | Op::AtomicOr
                | Op::AtomicXor
                | Op::AtomicFlagTestAndSet
                | Op::AtomicFlagClear
                | Op::AtomicFAddEXT
                | Op::AtomicFMinEXT
                | Op::AtomicFMaxEXT => {
                    if let Some((sc, _)) = id(inst.operands.first()).and_then(|ptr| self.pointer(ptr)) {
                        self.class(&mut p, sc).atomics += 1;
                    }
                }
                Op::LoopMerge => p.loops += 1,
                Op::ExtInst => {
                    if let (Some(set), Some(Operand::LiteralExtInstInteger(n))) =
                        (id(inst.operands.first()), inst.operands.get(1))
                        && Some(set) == self.glsl
                        && *n == GlslStd450Op::UMin as u32
                    {
                        p.umin += 1;
                    }
                }
                _ => {}
            }
        }
        Ok(p)
    }

    fn class<'p>(&self, p: &'p mut SpirvProfile, sc: StorageClass) -> &'p mut Access {
        match sc {
            StorageClass::StorageBuffer | StorageClass::PhysicalStorageBuffer => &mut p.storage,
            StorageClass::Uniform => &mut p.uniform,
            StorageClass::Workgroup => &mut p.workgroup,
            StorageClass::Function | StorageClass::Private => &mut p.function,
            StorageClass::Input => &mut p.input,
            _ => &mut p.other,
        }
    }
}
