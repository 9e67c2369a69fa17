//! The cuda-static variant: every family's CUDA C source (`host/src/families/<family>/
//! <family>.cu`, static `__shared__` arrays sized by `-D` defines, compiled through NVRTC).
//!
//! Without a GPU: each source is read by a small C preprocessor (the subset the sources
//! use) to check that the defines the host passes are exactly the ones the source requires
//! (its `#ifndef X` / `#error` guards), and that the static bytes the host reports for a
//! config (the Rust kernel's layout) are the bytes the source's `__shared__` declarations
//! come to under those defines. Also what each family runs for a config past the 48 KB
//! static limit, and the typed errors.
//!
//! On a CUDA machine: every source compiles for the device, the driver reports the static
//! bytes the host predicted, a config past the limit is refused before compiling, and a
//! broken source gives NVRTC's log naming the file and line. The conformance cases of the
//! cuda-static kernels (awkward sizes, checked against the CPU reference) run in the suites
//! that run every variant: `suite`, `histogram`, `sgemm`, `cuda_reduce` and `nonfinite`.
//! Without CUDA each GPU test prints `SKIPPED: no CUDA device` and passes.

mod common;

use std::collections::{BTreeSet, HashMap};

use common::{cuda_or_skip, note};
use dynsmem::host::Error;
use dynsmem::host::backend::Variant;
use dynsmem::host::backend::cpu::CpuBackend;
use dynsmem::host::contract::CudaSource;
use dynsmem::host::device::Dtype;
use dynsmem::host::device::conv1d::Conv1dConfig;
use dynsmem::host::device::histogram::HistogramConfig;
use dynsmem::host::device::nbody::NbodyConfig;
use dynsmem::host::device::reduce::{ReduceConfig, ReduceOp};
use dynsmem::host::device::rmsnorm::RmsnormConfig;
use dynsmem::host::device::scan::ScanConfig;
use dynsmem::host::device::sgemm::SgemmConfig;
use dynsmem::host::device::softmax::SoftmaxConfig;
use dynsmem::host::device::stencil2d::Stencil2dConfig;
use dynsmem::host::device::transpose::TransposeConfig;
use dynsmem::host::families as k;

// ---------------------------------------------------------------------------------------
// A preprocessor for the subset the sources use: object-like #define, #if/#ifdef/#ifndef/
// #elif/#else/#endif with integer expressions, #error; and `__shared__` declarations.
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(i64),
    Id(String),
    Op(String),
}

fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    let c: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch.is_ascii_digit() {
            let start = i;
            while i < c.len() && c[i].is_ascii_digit() {
                i += 1;
            }
            let v: i64 = c[start..i].iter().collect::<String>().parse().map_err(|e| format!("{e}"))?;
            // Integer suffixes (u, ull, ...).
            while i < c.len() && matches!(c[i], 'u' | 'U' | 'l' | 'L') {
                i += 1;
            }
            out.push(Tok::Num(v));
        } else if ch.is_ascii_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Tok::Id(c[start..i].iter().collect()));
        } else {
            let two: String = c[i..(i + 2).min(c.len())].iter().collect();
            if ["<<", ">>", "<=", ">=", "==", "!=", "&&", "||"].contains(&two.as_str()) {
                out.push(Tok::Op(two));
                i += 2;
            } else if "+-*/%<>!()".contains(ch) {
                out.push(Tok::Op(ch.to_string()));
                i += 1;
            } else {
                return Err(format!("unexpected `{ch}` in `{s}`"));
            }
        }
    }
    Ok(out)
}

struct Eval<'a> {
    macros: &'a HashMap<String, String>,
    toks: Vec<Tok>,
    pos: usize,
    depth: u32,
}

fn eval(expr: &str, macros: &HashMap<String, String>, depth: u32) -> Result<i64, String> {
    if depth > 32 {
        return Err(format!("macro expansion too deep at `{expr}`"));
    }
    let mut e = Eval { macros, toks: tokenize(expr)?, pos: 0, depth };
    let v = e.binary(1)?;
    if e.pos != e.toks.len() {
        return Err(format!("trailing tokens in `{expr}`"));
    }
    Ok(v)
}

impl Eval<'_> {
    fn prec(op: &str) -> Option<u32> {
        Some(match op {
            "||" => 1,
            "&&" => 2,
            "==" | "!=" => 3,
            "<" | ">" | "<=" | ">=" => 4,
            "<<" | ">>" => 5,
            "+" | "-" => 6,
            "*" | "/" | "%" => 7,
            _ => return None,
        })
    }

    fn binary(&mut self, min: u32) -> Result<i64, String> {
        let mut lhs = self.unary()?;
        while let Some(Tok::Op(op)) = self.toks.get(self.pos).cloned() {
            let Some(p) = Self::prec(&op).filter(|&p| p >= min) else { break };
            self.pos += 1;
            let rhs = self.binary(p + 1)?;
            lhs = match op.as_str() {
                "||" => (lhs != 0 || rhs != 0) as i64,
                "&&" => (lhs != 0 && rhs != 0) as i64,
                "==" => (lhs == rhs) as i64,
                "!=" => (lhs != rhs) as i64,
                "<" => (lhs < rhs) as i64,
                ">" => (lhs > rhs) as i64,
                "<=" => (lhs <= rhs) as i64,
                ">=" => (lhs >= rhs) as i64,
                "<<" => lhs << rhs,
                ">>" => lhs >> rhs,
                "+" => lhs + rhs,
                "-" => lhs - rhs,
                "*" => lhs * rhs,
                "/" => lhs.checked_div(rhs).ok_or("division by zero")?,
                _ => lhs.checked_rem(rhs).ok_or("division by zero")?,
            };
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<i64, String> {
        let t = self.toks.get(self.pos).cloned().ok_or("expression ends early")?;
        self.pos += 1;
        match t {
            Tok::Num(v) => Ok(v),
            Tok::Id(name) => match self.macros.get(&name) {
                Some(body) => eval(body, self.macros, self.depth + 1),
                None => Err(format!("`{name}` is not defined")),
            },
            Tok::Op(op) if op == "(" => {
                let v = self.binary(1)?;
                match self.toks.get(self.pos) {
                    Some(Tok::Op(c)) if c == ")" => {
                        self.pos += 1;
                        Ok(v)
                    }
                    _ => Err("missing )".into()),
                }
            }
            Tok::Op(op) if op == "!" => Ok((self.unary()? == 0) as i64),
            Tok::Op(op) if op == "-" => Ok(-self.unary()?),
            Tok::Op(op) => Err(format!("unexpected `{op}`")),
        }
    }
}

/// Size and alignment of a shared array's element type. `VEC4` is the sources' typedef of
/// `Elem<ELEM>::V`, float4 or uint4: 16 bytes either way.
fn type_size(t: &str, macros: &HashMap<String, String>) -> Result<(u32, u32), String> {
    Ok(match t {
        "float" | "u32" | "int" | "unsigned" | "unsigned int" => (4, 4),
        "u64" | "unsigned long long" | "double" => (8, 8),
        "u16" | "unsigned short" => (2, 2),
        "float2" | "uint2" => (8, 8),
        "float4" | "uint4" | "int4" | "VEC4" => (16, 16),
        other => match macros.get(other) {
            Some(body) => type_size(body.trim(), macros)?,
            None => return Err(format!("unknown shared element type `{other}`")),
        },
    })
}

/// What a source declares under a source's defines.
#[derive(Debug)]
struct Declared {
    /// Defines the source demands (`#ifndef X` then `#error`).
    required: BTreeSet<String>,
    /// `__shared__` arrays: (name, bytes, alignment), in declaration order.
    arrays: Vec<(String, u64, u32)>,
    /// Their total, each aligned to its type (or `__align__`), in declaration order.
    bytes: u64,
}

fn declared(src: &CudaSource) -> Result<Declared, String> {
    let mut macros: HashMap<String, String> = src.defines.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    // (active, a branch was taken, the parent is active, the #ifndef name if any)
    let mut stack: Vec<(bool, bool, bool, Option<String>)> = Vec::new();
    let active = |stack: &Vec<(bool, bool, bool, Option<String>)>| stack.last().is_none_or(|s| s.0);
    let mut required = BTreeSet::new();
    let mut arrays = Vec::new();
    let mut bytes = 0u64;
    for (no, raw) in src.source.lines().enumerate() {
        let line = raw.split("//").next().unwrap_or("").trim();
        let at = |e: String| format!("{}:{}: {e}", src.file, no + 1);
        if let Some(d) = line.strip_prefix('#') {
            let d = d.trim();
            let (word, rest) = d.split_once(char::is_whitespace).unwrap_or((d, ""));
            let rest = rest.trim();
            let parent = active(&stack);
            match word {
                "ifndef" | "ifdef" => {
                    let defined = macros.contains_key(rest);
                    let cond = parent && (defined == (word == "ifdef"));
                    stack.push((cond, cond, parent, (word == "ifndef").then(|| rest.to_string())));
                }
                "if" => {
                    let cond = parent && eval(rest, &macros, 0).map_err(at)? != 0;
                    stack.push((cond, cond, parent, None));
                }
                "elif" => {
                    let top = stack.last_mut().ok_or_else(|| at("#elif without #if".into()))?;
                    let cond = top.2 && !top.1 && eval(rest, &macros, 0).map_err(at)? != 0;
                    top.0 = cond;
                    top.1 |= cond;
                }
                "else" => {
                    let top = stack.last_mut().ok_or_else(|| at("#else without #if".into()))?;
                    top.0 = top.2 && !top.1;
                    top.1 = true;
                }
                "endif" => {
                    stack.pop().ok_or_else(|| at("#endif without #if".into()))?;
                }
                "error" => {
                    if let Some(name) = stack.last().and_then(|s| s.3.clone()) {
                        required.insert(name);
                    }
                    if parent {
                        return Err(at(format!("#error reached: {rest}")));
                    }
                }
                "define" if parent => {
                    let (name, body) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                    // Function-like macros (`NAME(`) are not sizes.
                    if !name.contains('(') {
                        macros.insert(name.to_string(), body.trim().to_string());
                    }
                }
                _ => {}
            }
            continue;
        }
        if !active(&stack) || !line.contains("__shared__") {
            continue;
        }
        // `__shared__ [__align__(N)] TYPE NAME[DIM]...;`
        let mut decl = line.split("__shared__").nth(1).unwrap_or("").trim();
        let mut align = 1u32;
        if let Some(r) = decl.strip_prefix("__align__(") {
            let (n, r) = r.split_once(')').ok_or_else(|| at("bad __align__".into()))?;
            align = eval(n, &macros, 0).map_err(at)? as u32;
            decl = r.trim();
        }
        let open = decl.find('[').ok_or_else(|| at(format!("a shared scalar or unsized array: `{line}`")))?;
        let words: Vec<&str> = decl[..open].split_whitespace().collect();
        let (name, ty) = words.split_last().ok_or_else(|| at("no name".into()))?;
        let (size, natural) = type_size(&ty.join(" "), &macros).map_err(at)?;
        let mut count = 1u64;
        for dim in decl[open..].split('[').skip(1) {
            let expr = dim.split(']').next().unwrap_or("");
            count *= eval(expr, &macros, 0).map_err(at)? as u64;
        }
        let align = align.max(natural) as u64;
        bytes = bytes.next_multiple_of(align) + count * size as u64;
        arrays.push((name.to_string(), count * size as u64, align as u32));
    }
    if !stack.is_empty() {
        return Err(format!("{}: unterminated #if", src.file));
    }
    Ok(Declared { required, arrays, bytes })
}

#[test]
fn the_preprocessor_reads_what_the_sources_need() {
    let m: HashMap<String, String> =
        [("A", "3"), ("B", "(A * 4 + 1)"), ("F", "1ull << 4")].map(|(k, v)| (k.into(), v.into())).into();
    assert_eq!(eval("B * 2 - A % 2", &m, 0), Ok(25));
    assert_eq!(eval("(A + 7) / 8 * 8", &m, 0), Ok(8));
    assert_eq!(eval("A == 3 && !(B < 13)", &m, 0), Ok(1));
    assert_eq!(eval("F", &m, 0), Ok(16));
    assert!(eval("C + 1", &m, 0).is_err(), "an undefined name is an error, not 0");
    let src = CudaSource {
        name: "t".into(),
        source: "#ifndef N\n#error \"N\"\n#endif\n#define TWICE (2 * N)\n#if N > 4\n__shared__ float big[TWICE];\n\
                 #else\n__shared__ u64 small[N];\n#endif\n__shared__ __align__(16) u16 h[3][N]; // 2-D\n",
        file: "t.cu",
        entry: "t",
        defines: vec![("N", "5".into())],
        static_bytes: 0,
    };
    let d = declared(&src).unwrap();
    assert_eq!(d.required, BTreeSet::from(["N".to_string()]));
    // 40 B of floats, then 30 B of u16 aligned to 16.
    assert_eq!(d.bytes, 48 + 30);
    let without = CudaSource { defines: vec![], ..src };
    assert!(declared(&without).unwrap_err().contains("#error reached"));
}

// ---------------------------------------------------------------------------------------
// Every family's sources for a spread of configs.
// ---------------------------------------------------------------------------------------

fn sources() -> Vec<CudaSource> {
    let mut out = Vec::new();
    for op in ReduceOp::ALL {
        for dtype in Dtype::ALL {
            for (block, items_per_thread, staged) in
                [(64, 5, false), (64, 5, true), (33, 12, true), (1024, 1, false), (256, 44, true), (256, 200, true)]
            {
                out.push(k::reduce::cuda_source(op, dtype, &ReduceConfig { block, items_per_thread, staged }));
            }
        }
    }
    for (bins, copies, block) in [(1, 8, 64), (256, 8, 512), (4096, 2, 512), (12_288, 1, 1024), (49_152, 1, 1024)] {
        let p = k::histogram::HistogramProblem { n: 1, bins, out_of_range_pct: 0 };
        out.push(k::histogram::cuda_source(
            &p,
            &HistogramConfig { block, grid: 1, copies, cluster: 1, held: 0, bits: 32, merge: false },
        ));
    }
    for dtype in Dtype::ALL {
        for (block, items_per_thread) in [(512, 48), (512, 20), (9, 12), (32, 4), (96, 8), (1024, 4)] {
            out.push(k::scan::cuda_source(dtype, &ScanConfig { block, items_per_thread }));
        }
    }
    for taps in [3, 5, 33, 129] {
        for outputs_per_thread in [4, 8] {
            for block in [128, 40] {
                let p = k::conv1d::Conv1dProblem { n: 1, taps };
                out.push(k::conv1d::cuda_source(&p, &Conv1dConfig { block, outputs_per_thread }));
            }
        }
    }
    for radius in [1, 2] {
        for (block, tile_w, tile_h) in [(128, 128, 32), (8, 16, 6), (256, 64, 64)] {
            let p = k::stencil2d::Stencil2dProblem { width: 1, height: 1, radius, blur: k::stencil2d::Blur::Box };
            out.push(k::stencil2d::cuda_source(&p, &Stencil2dConfig { block, tile_w, tile_h }));
        }
    }
    for (block, tile, pad) in [(256, 64, 1), (256, 64, 0), (64, 16, 0), (32, 8, 3), (1024, 128, 1)] {
        out.push(k::transpose::cuda_source(&TransposeConfig { block, tile, pad }));
    }
    for cols in [1, 37, 4099, 12_032, 32_768] {
        for block in [256, 33] {
            let p = k::softmax::SoftmaxProblem { rows: 1, cols };
            out.push(k::softmax::cuda_source(&p, &SoftmaxConfig::blocks(block)));
            let p = k::rmsnorm::RmsnormProblem { rows: 1, cols, eps: 1e-5 };
            out.push(k::rmsnorm::cuda_source(&p, &RmsnormConfig::blocks(block)));
        }
    }
    for (block, tile) in [(256, 256), (32, 7), (64, 200)] {
        out.push(k::nbody::cuda_source(&NbodyConfig { block, tile }));
    }
    for f16_inputs in [false, true] {
        for (bm, bn, bk, stages) in
            [(128, 128, 32, 2), (128, 128, 16, 2), (128, 128, 16, 3), (64, 64, 16, 2), (128, 64, 8, 4), (16, 16, 8, 1)]
        {
            let p = k::sgemm::SgemmProblem { m: 1, n: 1, k: 1, f16_inputs };
            out.push(k::sgemm::cuda_source(&p, &SgemmConfig::new(bm, bn, bk, stages)));
        }
    }
    out
}

#[test]
fn every_source_takes_exactly_the_host_defines_and_declares_the_host_static_bytes() {
    let all = sources();
    let mut files = BTreeSet::new();
    for src in &all {
        let d = declared(src).unwrap_or_else(|e| panic!("{}: {e}", src.name));
        let given: BTreeSet<String> = src.defines.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(d.required, given, "{}: the defines the source requires, and those the host gives", src.name);
        assert!(!d.arrays.is_empty(), "{}: no __shared__ array found", src.name);
        assert_eq!(
            d.bytes, src.static_bytes as u64,
            "{}: the source declares {:?} = {} B under {:?}; the host reports {} B",
            src.name, d.arrays, d.bytes, src.defines, src.static_bytes
        );
        assert!(!src.source.contains("{{"), "{}: the sources have no template slots, only defines", src.file);
        assert!(src.source.contains(&format!("extern \"C\" __global__ void {}(", src.entry)), "{}", src.name);
        files.insert(src.file);
    }
    assert_eq!(files.len(), 10, "one source per family: {files:?}");
    note(&format!("cuda-static sources: {} configs of {} files read without a GPU", all.len(), files.len()));
}

#[test]
fn configs_past_the_static_limit_run_the_best_that_fits_with_a_note() {
    // The CPU backend reports the H100's limits (49152 B of static shared memory), and
    // fit_config needs no device.
    let cpu = CpuBackend::new();
    let s = Variant::CudaStatic;
    let limits = dynsmem::host::backend::Backend::info(&cpu).limits;
    let (c, note) = k::scan::fit_config(&limits, s, ScanConfig { block: 512, items_per_thread: 48 });
    assert_eq!(c, ScanConfig { block: 512, items_per_thread: 20 });
    assert!(note.as_deref().is_some_and(|n| n.contains("100752 B") && n.contains("43408 B")), "{note:?}");
    let (c, note) = k::scan::fit_config(&limits, Variant::LaunchSized, ScanConfig { block: 512, items_per_thread: 48 });
    assert_eq!((c.items_per_thread, note), (48, None), "only cuda-static is refitted");

    let sum = k::reduce::ReduceProblem { n: 1, op: ReduceOp::Sum, dtype: Dtype::F32 };
    let staged = ReduceConfig { block: 256, items_per_thread: 200, staged: true };
    let (c, note) = k::reduce::fit_config(&dynsmem::host::backend::Backend::info(&cpu).limits, s, sum.dtype, staged);
    assert_eq!(c, ReduceConfig { items_per_thread: 44, ..staged }, "the most items that fit, a multiple of 4");
    assert!(note.is_some());

    let p = k::sgemm::SgemmProblem { m: 4096, n: 4096, k: 4096, f16_inputs: false };
    let (c, _) = k::sgemm::fit_config(&cpu, s, &p, SgemmConfig::new(128, 128, 32, 2));
    assert_eq!(c, SgemmConfig::new(128, 128, 16, 2));

    // Nothing fits: the config is kept, and building it is refused (below, on CUDA).
    let p = k::histogram::HistogramProblem { n: 1, bins: 49_152, out_of_range_pct: 0 };
    let cfg = HistogramConfig { block: 1024, grid: 1, copies: 1, cluster: 1, held: 0, bits: 32, merge: false };
    assert_eq!(k::histogram::fit_config(&dynsmem::host::backend::Backend::info(&cpu).limits, s, &p, cfg), (cfg, None));
    let p = k::softmax::SoftmaxProblem { rows: 1, cols: 32_768 };
    assert_eq!(
        dynsmem::host::family::rows::fit_config(
            &dynsmem::host::backend::Backend::info(&cpu).limits,
            s,
            p.cols,
            SoftmaxConfig::blocks(256)
        ),
        (SoftmaxConfig::blocks(256), None)
    );
    // Fewer copies of the bins where one copy fits.
    let p = k::histogram::HistogramProblem { n: 1, bins: 4096, out_of_range_pct: 0 };
    let (c, _) = k::histogram::fit_config(
        &dynsmem::host::backend::Backend::info(&cpu).limits,
        s,
        &p,
        HistogramConfig { block: 512, grid: 1, copies: 8, cluster: 1, held: 0, bits: 32, merge: false },
    );
    assert_eq!(c.copies, 3);
    // The defaults of the rest fit as they are.
    let t = TransposeConfig { block: 256, tile: 64, pad: 1 };
    let limit = dynsmem::host::backend::Backend::info(&cpu).limits.static_shared_max;
    assert!(t.shared_bytes().unwrap() <= limit, "transpose's default keeps its tile in cuda-static");
}

#[test]
fn the_cpu_and_wgsl_backends_have_no_cuda_static_variant() {
    use dynsmem::host::contract::FamilyBackend;
    let cpu = CpuBackend::new();
    assert!(!cpu.variants().contains(&Variant::CudaStatic));
    let p = k::nbody::NbodyProblem::new(10);
    match k::nbody::prepare(&cpu, p, NbodyConfig { block: 32, tile: 8 }, Variant::CudaStatic, 1) {
        Err(Error::Unsupported { .. }) => {}
        Err(e) => panic!("expected Unsupported, got {e}"),
        Ok(_) => panic!("the CPU backend accepted cuda-static"),
    }
    assert_eq!(Variant::CudaStatic.name(), "cuda-static");
    assert_eq!(serde_json::to_string(&Variant::CudaStatic).unwrap(), "\"cuda-static\"");
}

// ---------------------------------------------------------------------------------------
// On a CUDA device.
// ---------------------------------------------------------------------------------------

#[test]
fn every_source_compiles_and_the_driver_reports_the_predicted_static_bytes() {
    let Some(cuda) = cuda_or_skip("nvrtc_static::every_source_compiles") else { return };
    use dynsmem::host::backend::Backend;
    let limit = cuda.info().limits.static_shared_max;
    if !dynsmem::host::backend::cuda::nvrtc::library_present() {
        // A CUDA machine without libnvrtc: the variant is a typed error, nothing more.
        let src = &sources()[0];
        match cuda.nvrtc_kernel(src) {
            Err(e @ Error::NvrtcUnavailable { .. }) => note(&format!("SKIPPED: no libnvrtc ({e})")),
            Err(e) => panic!("expected NvrtcUnavailable, got {e}"),
            Ok(_) => panic!("compiled without libnvrtc"),
        }
        return;
    }
    let (mut compiled, mut refused) = (0, 0);
    for src in sources() {
        match cuda.nvrtc_kernel(&src) {
            Ok(kernel) => {
                assert!(src.static_bytes <= limit, "{}: {} B compiled past the limit", src.name, src.static_bytes);
                cuda.context().bind_to_thread().unwrap();
                let reported = kernel.static_shared_bytes().unwrap();
                assert_eq!(reported, src.static_bytes, "{}: the driver's SHARED_SIZE_BYTES", src.name);
                compiled += 1;
            }
            Err(Error::SharedMemoryLimit { kind: "static", requested, limit: l, .. }) => {
                assert!(requested > l && l == limit as u64, "{}: {requested} > {l}", src.name);
                assert_eq!(requested, src.static_bytes as u64);
                refused += 1;
            }
            Err(e) => panic!("{e}"),
        }
    }
    // Past 48 KB: reduce 256 x 200 staged (6 op/dtype pairs), histogram 49152 bins, scan
    // 512 x 48 (2 dtypes), transpose 128 x 129, softmax and rmsnorm 32768 (2 blocks each),
    // sgemm f32 128x128x32x2 and 128x128x16x3.
    assert_eq!(refused, 6 + 1 + 2 + 1 + 2 + 2 + 2, "configs refused for their static bytes");
    note(&format!("cuda-static: {compiled} configs compiled through NVRTC, {refused} refused past {limit} B"));
}

#[test]
fn a_broken_source_gives_nvrtcs_log_with_the_file_and_line() {
    let Some(cuda) = cuda_or_skip("nvrtc_static::a_broken_source") else { return };
    if !dynsmem::host::backend::cuda::nvrtc::library_present() {
        note("SKIPPED: no libnvrtc (nvrtc_static::a_broken_source)");
        return;
    }
    let src = CudaSource {
        name: "broken[cuda-static]".into(),
        source: "extern \"C\" __global__ void broken(float* out) {\n    out[0] = not_declared_here;\n}\n",
        file: "broken.cu",
        entry: "broken",
        defines: vec![("BLOCK", "32".into())],
        static_bytes: 0,
    };
    match cuda.nvrtc_kernel(&src) {
        Err(e @ Error::NvrtcCompile { .. }) => {
            let text = e.to_string();
            assert!(text.starts_with("broken[cuda-static]: NVRTC compile failed"), "{text}");
            assert!(text.contains("broken.cu(2)") && text.contains("not_declared_here"), "{text}");
            assert!(text.contains("-DBLOCK=32") && text.contains("--gpu-architecture=sm_"), "{text}");
        }
        Err(e) => panic!("expected NvrtcCompile, got {e}"),
        Ok(_) => panic!("a broken source compiled"),
    }
}
