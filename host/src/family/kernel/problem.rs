//! A [`super::KernelFamily`]'s problem: its named sizes and options ([`Size`]), each a
//! `--name` option of `run` and `tune`, and their values ([`Problem`]), which records,
//! caches and the tuning database carry as one JSON object (`{"rows": 65536, "cols": 4096}`).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::family::Sizes;

/// One named value of a [`super::KernelFamily`]'s problem and its default.
#[derive(Debug, Clone, Copy)]
pub struct Size {
    pub name: &'static str,
    pub default: SizeDefault,
    /// One line for `--help`.
    pub help: &'static str,
    /// The option's long name where it is not the name in kebab case ([`Size::long`]).
    pub long: Option<&'static str>,
}

/// How a [`Size`] is typed and what it is where the command line leaves it out.
#[derive(Debug, Clone, Copy)]
pub enum SizeDefault {
    /// An integer, `gpu` on a GPU and `cpu` on a CPU device (the CPU backend, lavapipe),
    /// where every kernel thread is an OS thread: small enough for a check.
    ByDevice { gpu: u64, cpu: u64 },
    /// An integer, a function of the device's default sizes ([`Sizes`]: the rows of the
    /// row-wise families, the side of the 2-D ones).
    OfSizes(fn(&Sizes) -> u64),
    /// An integer, the same everywhere (a replay matches it as if given).
    Fixed(u64),
    /// A float (RMSNorm's epsilon), the same everywhere.
    F32(f32),
    /// One of the named values (an element type), the default first.
    Choice(&'static [&'static str]),
    /// On where given (`--causal`).
    Flag,
    /// Off or on, named on the command line by `[off, on]` (`--mask none|causal`); off by
    /// default, `false` / `true` in the problem.
    Switch([&'static str; 2]),
}

impl Size {
    /// An integer size: `gpu` on a GPU, `cpu` on a CPU device.
    pub const fn new(name: &'static str, gpu: u64, cpu: u64, help: &'static str) -> Size {
        Size { name, default: SizeDefault::ByDevice { gpu, cpu }, help, long: None }
    }
    /// An integer size whose default is a function of the device's default sizes.
    pub const fn of(name: &'static str, f: fn(&Sizes) -> u64, help: &'static str) -> Size {
        Size { name, default: SizeDefault::OfSizes(f), help, long: None }
    }
    /// An integer size with one default everywhere.
    pub const fn fixed(name: &'static str, value: u64, help: &'static str) -> Size {
        Size { name, default: SizeDefault::Fixed(value), help, long: None }
    }
    /// A float option.
    pub const fn f32(name: &'static str, value: f32, help: &'static str) -> Size {
        Size { name, default: SizeDefault::F32(value), help, long: None }
    }
    /// One of `values` (the first is the default).
    pub const fn choice(name: &'static str, values: &'static [&'static str], help: &'static str) -> Size {
        Size { name, default: SizeDefault::Choice(values), help, long: None }
    }
    /// A flag, off unless given.
    pub const fn flag(name: &'static str, help: &'static str) -> Size {
        Size { name, default: SizeDefault::Flag, help, long: None }
    }
    /// Off or on as `--name OFF|ON` (off by default), `false` / `true` in the problem.
    pub const fn switch(name: &'static str, names: [&'static str; 2], help: &'static str) -> Size {
        Size { name, default: SizeDefault::Switch(names), help, long: None }
    }

    /// This size with `--long` as its option, where the kebab-case name is not wanted (the
    /// problem, records and caches still name it `name`).
    pub const fn long(self, long: &'static str) -> Size {
        Size { long: Some(long), ..self }
    }

    /// The value where the command line leaves it out, on a device of `sizes`.
    pub(super) fn default_value(&self, sizes: &Sizes) -> Value {
        match self.default {
            SizeDefault::ByDevice { gpu, cpu } => Value::from(if sizes.is_gpu() { gpu } else { cpu }),
            SizeDefault::OfSizes(f) => Value::from(f(sizes)),
            SizeDefault::Fixed(v) => Value::from(v),
            SizeDefault::F32(v) => Value::from(v),
            SizeDefault::Choice(values) => Value::from(values[0]),
            SizeDefault::Flag | SizeDefault::Switch(_) => Value::from(false),
        }
    }

    /// Whether its default is the option's own, not the device's: a replay matches it as if
    /// given.
    pub(super) fn is_fixed(&self) -> bool {
        !matches!(self.default, SizeDefault::ByDevice { .. } | SizeDefault::OfSizes(_))
    }

    /// `value` if it has this size's type; else why not.
    pub(super) fn accepts(&self, value: &Value) -> std::result::Result<(), String> {
        let ok = match self.default {
            SizeDefault::ByDevice { .. } | SizeDefault::OfSizes(_) | SizeDefault::Fixed(_) => value.is_u64(),
            SizeDefault::F32(_) => value.is_number(),
            SizeDefault::Choice(values) => value.as_str().is_some_and(|s| values.contains(&s)),
            SizeDefault::Flag | SizeDefault::Switch(_) => value.is_boolean(),
        };
        if ok { Ok(()) } else { Err(format!("`{}` = {value}: {}", self.name, self.kind())) }
    }

    fn kind(&self) -> String {
        match self.default {
            SizeDefault::ByDevice { .. } | SizeDefault::OfSizes(_) | SizeDefault::Fixed(_) => {
                "a whole number of at least 0".into()
            }
            SizeDefault::F32(_) => "a number".into(),
            SizeDefault::Choice(values) => format!("one of {values:?}"),
            SizeDefault::Flag | SizeDefault::Switch(_) => "true or false".into(),
        }
    }

    /// The `--name` option of `run` and `tune`.
    pub(super) fn arg(&self) -> clap::Arg {
        let arg = clap::Arg::new(self.name).long(self.long.unwrap_or_else(|| super::kebab(self.name)));
        match self.default {
            SizeDefault::ByDevice { gpu, cpu } => arg
                .value_parser(clap::value_parser!(u64))
                .help(format!("{} (default: {gpu} on a GPU, {cpu} on a CPU device)", self.help)),
            SizeDefault::OfSizes(_) => arg.value_parser(clap::value_parser!(u64)).help(self.help),
            SizeDefault::Fixed(v) => {
                arg.value_parser(clap::value_parser!(u64)).help(format!("{} [default: {v}]", self.help))
            }
            SizeDefault::F32(v) => {
                arg.value_parser(clap::value_parser!(f32)).help(format!("{} [default: {v}]", self.help))
            }
            SizeDefault::Choice(values) => arg
                .value_parser(clap::builder::PossibleValuesParser::new(values))
                .help(format!("{} [default: {}]", self.help, values[0])),
            SizeDefault::Flag => arg.action(clap::ArgAction::SetTrue).help(self.help),
            SizeDefault::Switch(names) => arg
                .value_parser(clap::builder::PossibleValuesParser::new(names))
                .help(format!("{} [default: {}]", self.help, names[0])),
        }
    }

    /// The value the command line gives, where it gives one.
    pub(super) fn given(&self, m: &clap::ArgMatches) -> Option<Value> {
        let from_command_line = m.value_source(self.name) == Some(clap::parser::ValueSource::CommandLine);
        match self.default {
            SizeDefault::ByDevice { .. } | SizeDefault::OfSizes(_) | SizeDefault::Fixed(_) => {
                m.try_get_one::<u64>(self.name).ok().flatten().map(|v| Value::from(*v))
            }
            SizeDefault::F32(_) => m.try_get_one::<f32>(self.name).ok().flatten().map(|v| Value::from(*v)),
            SizeDefault::Choice(_) => {
                m.try_get_one::<String>(self.name).ok().flatten().map(|v| Value::from(v.as_str()))
            }
            SizeDefault::Flag => from_command_line.then_some(Value::from(true)),
            SizeDefault::Switch(names) => {
                m.try_get_one::<String>(self.name).ok().flatten().map(|v| Value::from(v == names[1]))
            }
        }
    }
}

/// A problem of a [`super::KernelFamily`]: its values by name. `p["n"]` is an integer size
/// (it panics naming the size where the family declares no integer of that name);
/// [`Problem::u32`], [`Problem::f32`], [`Problem::choice`] and [`Problem::flag`] read the
/// others.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Problem {
    sizes: BTreeMap<String, u64>,
    values: BTreeMap<String, Value>,
}

impl std::ops::Index<&str> for Problem {
    type Output = u64;
    /// Panics naming the size when the family declares no integer of that name: a typo in
    /// the family's `build`, found on its first call.
    fn index(&self, name: &str) -> &u64 {
        self.sizes.get(name).unwrap_or_else(|| panic!("no size `{name}` (the problem has {:?})", self.values.keys()))
    }
}

impl Problem {
    /// `p.u32("n")`: a size the kernel takes as a `u32`, or the refusal naming it and the
    /// limit.
    pub fn u32(&self, name: &str) -> Result<u32> {
        let v = self[name];
        u32::try_from(v).map_err(|_| Error::IndexOverflow {
            kernel: format!("size `{name}`"),
            what: name.into(),
            requested: v,
            limit: u32::MAX as u64,
            index: "u32 (a kernel argument)",
        })
    }
    /// A float option's value (panics naming it where the family declares none).
    pub fn f32(&self, name: &str) -> f32 {
        self.value(name).as_f64().unwrap_or_else(|| panic!("`{name}` is not a number")) as f32
    }
    /// A choice's value.
    pub fn choice(&self, name: &str) -> &str {
        self.value(name).as_str().unwrap_or_else(|| panic!("`{name}` is not a choice"))
    }
    /// A flag's value.
    pub fn flag(&self, name: &str) -> bool {
        self.value(name).as_bool().unwrap_or_else(|| panic!("`{name}` is not a flag"))
    }
    fn value(&self, name: &str) -> &Value {
        self.values.get(name).unwrap_or_else(|| panic!("no option `{name}` (the problem has {:?})", self.values.keys()))
    }

    /// Sets `name` (checked by the caller against its [`Size`]).
    pub(super) fn set(&mut self, name: &str, v: Value) {
        if let Some(n) = v.as_u64() {
            self.sizes.insert(name.to_string(), n);
        } else {
            self.sizes.remove(name);
        }
        self.values.insert(name.to_string(), v);
    }

    pub(super) fn has(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    /// As records, caches and the tuning database carry it.
    pub fn to_json(&self) -> Value {
        Value::Object(self.values.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_switch_reads_its_two_names_as_a_flag() {
        let s = Size::switch("causal", ["none", "causal"], "mask").long("mask");
        let cmd = clap::Command::new("t").no_binary_name(true).arg(s.arg());
        let on = cmd.clone().try_get_matches_from(["--mask", "causal"]).unwrap();
        let off = cmd.clone().try_get_matches_from(["--mask", "none"]).unwrap();
        assert_eq!((s.given(&on), s.given(&off)), (Some(json!(true)), Some(json!(false))));
        assert!(cmd.try_get_matches_from(["--mask", "yes"]).is_err());
        assert_eq!(s.default_value(&Sizes::gpu()), json!(false));
    }

    const SIZES: [Size; 5] = [
        Size::of("rows", |s| s.rows as u64, "rows"),
        Size::fixed("cols", 4096, "cols"),
        Size::f32("eps", 1e-5, "eps"),
        Size::choice("dtype", &["f32", "u32"], "dtype"),
        Size::flag("causal", "causal").long("is-causal"),
    ];

    fn matches(args: &[&str]) -> clap::ArgMatches {
        let cmd = SIZES.iter().fold(clap::Command::new("t").no_binary_name(true), |c, s| c.arg(s.arg()));
        cmd.try_get_matches_from(args).expect("parses")
    }

    #[test]
    fn defaults_follow_the_device_or_the_option() {
        let gpu = Sizes::gpu();
        let values: Vec<Value> = SIZES.iter().map(|s| s.default_value(&gpu)).collect();
        assert_eq!(values, [json!(65_536), json!(4096), json!(1e-5f32), json!("f32"), json!(false)]);
        assert_eq!(SIZES[0].default_value(&Sizes::cpu_backend()), json!(16));
        assert_eq!(SIZES.map(|s| s.is_fixed()), [false, true, true, true, true]);
    }

    #[test]
    fn the_command_line_gives_each_kind() {
        let m = matches(&["--rows", "7", "--eps", "0.5", "--dtype", "u32", "--is-causal"]);
        let given: Vec<Option<Value>> = SIZES.iter().map(|s| s.given(&m)).collect();
        assert_eq!(given, [Some(json!(7)), None, Some(json!(0.5f32)), Some(json!("u32")), Some(json!(true))]);
        let none = matches(&[]);
        assert!(SIZES.iter().all(|s| s.given(&none).is_none()), "nothing given, a flag off included");
    }

    #[test]
    fn values_of_the_wrong_kind_are_refused_naming_the_size() {
        assert!(SIZES[1].accepts(&json!(5)).is_ok());
        assert_eq!(SIZES[1].accepts(&json!(-1)).unwrap_err(), "`cols` = -1: a whole number of at least 0");
        assert!(SIZES[3].accepts(&json!("f16")).unwrap_err().contains("one of [\"f32\", \"u32\"]"));
        assert!(SIZES[4].accepts(&json!(1)).is_err());
        let mut p = Problem::default();
        p.set("rows", json!(3));
        p.set("eps", json!(0.25f32));
        p.set("dtype", json!("u32"));
        p.set("causal", json!(true));
        assert_eq!((p["rows"], p.f32("eps"), p.choice("dtype"), p.flag("causal")), (3, 0.25, "u32", true));
        assert_eq!(p.to_json(), json!({"rows": 3, "eps": 0.25, "dtype": "u32", "causal": true}));
        p.set("rows", json!(1u64 << 40));
        assert!(p.u32("rows").is_err(), "past u32 is refused naming the size");
    }
}
