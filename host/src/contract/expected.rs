//! What a [`Kernel`]'s outputs are checked against: the expected outputs (its f64 reference,
//! or the same Rust kernel on the CPU backend at the reference config), the identity of that
//! check as tuning caches key it, and the check of one output.

use std::rc::Rc;

use super::builder::{ArgSpec, CPU_RUN_RTOL, Check, Expected, describe};
use super::launch::OutputCheck;
use super::{Data, Kernel, Workload};
use crate::backend::cpu::CpuBackend;
use crate::backend::{Backend, Variant};
use crate::element::Element;
use crate::error::Result;
use crate::verify::{Tolerance, check_slice};

impl Kernel {
    /// The expected outputs (computed on first use) and where they came from.
    pub fn expected(&self) -> Result<(Expected, String)> {
        let made = self.expected.get_or_init(|| self.compute_expected().map_err(|e| e.to_string()));
        made.clone().map_err(|reason| self.invalid(format!("no reference: {reason}")))
    }

    /// What this kernel's outputs are checked against, as tuning caches key it: where the
    /// expected outputs come from, a hash of them and of the inputs, and the tolerance. A
    /// change to the reference, the inputs or the tolerance makes another key.
    pub fn check_identity(&self) -> Result<String> {
        let (expected, from) = self.expected()?;
        let mut h = WordHash::new();
        for out in expected.iter() {
            h.words(out.iter().map(|v| v.to_bits()));
        }
        let outputs = h.finish();
        let mut h = WordHash::new();
        for a in &self.args {
            match a {
                ArgSpec::Input(_, d) => match &**d {
                    Data::F32(v) => h.words(v.iter().map(|x| u64::from(x.to_bits()))),
                    Data::U32(v) => h.words(v.iter().map(|&x| u64::from(x))),
                },
                ArgSpec::Scalar(name, s) => h.bytes(format!("{name}={s:?}").as_bytes()),
                ArgSpec::Output(..) => {}
            }
        }
        let tolerance = self.tolerance();
        Ok(format!(
            "{from}, expected outputs {outputs:016x}, inputs {:016x}, tolerance rtol {:e} atol {:e}",
            h.finish(),
            tolerance.rtol,
            tolerance.atol
        ))
    }

    /// The tolerance of float outputs.
    pub(super) fn tolerance(&self) -> Tolerance {
        match &self.check {
            Check::Reference(_, t) => *t,
            Check::CpuRun => Tolerance { rtol: CPU_RUN_RTOL, atol: 0.0 },
        }
    }

    fn compute_expected(&self) -> Result<(Expected, String)> {
        self.validate()?;
        let inputs: Vec<&Data> =
            self.args.iter().filter_map(|a| if let ArgSpec::Input(_, d) = a { Some(&**d) } else { None }).collect();
        if let Check::Reference(f, _) = &self.check {
            return Ok((Rc::new(f(&inputs)), "the kernel's f64 reference".into()));
        }
        let cpu = CpuBackend::with_kernels(&[self.table]).with_schedule(crate::backend::cpu::CpuSchedule::Fast);
        let limits = cpu.info().limits;
        let point = match &self.reference_point {
            Some(given) => self.point_of(given)?,
            None => self.points().find(|pt| {
                self.footprint(pt).is_ok_and(|f| {
                    f.threads <= limits.max_threads_per_block && f.launch_bytes <= limits.launch_shared_max
                })
            }),
        }
        .ok_or_else(|| self.invalid("no point of the space meets the restrictions and the CPU backend's limits"))?;
        let work = self.prepare_at(&cpu, Variant::LaunchSized, &point, None)?;
        work.run()?;
        let outputs = work.read_outputs()?;
        for (name, out) in &outputs {
            let poisoned = match out {
                Data::F32(v) => v.iter().position(|x| x.is_nan()).map(|i| {
                    let note = crate::verify::poison_note(v[i]).unwrap_or("a NaN the kernel computed");
                    (i, format!("is NaN: {note}"))
                }),
                Data::U32(v) => v
                    .iter()
                    .position(|&x| x == u32::poison())
                    .map(|i| (i, "is still the output's poison: no thread wrote it".to_string())),
            };
            if let Some((i, what)) = poisoned {
                return Err(
                    self.invalid(format!("the CPU run at {}: {name}[{i}] {what}", describe(&self.params_at(&point))))
                );
            }
        }
        let why = format!("the same kernel on the CPU backend at {}", describe(&self.params_at(&point)));
        Ok((Rc::new(outputs.iter().map(|(_, d)| d.to_f64()).collect()), why))
    }
}

/// The check of output `name` against `want`: f32 within `tolerance` at
/// `max(|expected|, rms(expected))`, u32 exactly.
/// A mismatch names `against`, the check's source, and says what a poison value it got means.
pub(super) fn output_check(name: &'static str, want: Vec<f64>, tolerance: Tolerance, against: String) -> OutputCheck {
    Box::new(move |kernel, got| {
        let rms = (want.iter().map(|v| v * v).sum::<f64>() / want.len().max(1) as f64).sqrt();
        let what = format!("{kernel} output {name}");
        let scale = |i: usize| want[i].abs().max(rms);
        let checked = match got {
            Data::F32(g) => check_slice(&what, &want, g, scale, tolerance).map_err(|mut m| {
                if let Some(note) = crate::verify::poison_note(g[m.index]) {
                    m.actual = format!("{} ({note})", m.actual);
                }
                m
            }),
            Data::U32(g) => check_slice(&what, &want, g, scale, Tolerance::EXACT),
        };
        checked.map_err(|m| m.against(against.clone()))?;
        Ok(())
    })
}

/// FNV-1a over 64-bit words (then bytes where given): hashes reference data and inputs
/// for cache keys eight times faster than FNV-1a byte by byte. Not cryptographic:
/// it tells apart checks a user changed, not data made to collide.
struct WordHash(u64);

impl Default for WordHash {
    fn default() -> Self {
        WordHash::new()
    }
}

impl WordHash {
    fn new() -> WordHash {
        WordHash(0xcbf2_9ce4_8422_2325)
    }
    fn words(&mut self, words: impl IntoIterator<Item = u64>) {
        for w in words {
            self.0 = (self.0 ^ w).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn bytes(&mut self, bytes: &[u8]) {
        self.words(bytes.iter().map(|&b| u64::from(b)));
    }
    fn finish(&self) -> u64 {
        self.0
    }
}
