//! The values a [`super::Kernel`] description is made of: parameter values at a point
//! ([`Params`]), how inputs are filled ([`Fill`]) and held ([`Data`]), scalar arguments
//! ([`Scalar`]), the launch-sized bytes a parameter function returns ([`SharedBytes`]), and
//! a tunable parameter with its candidate values ([`Param`]).

use std::collections::BTreeMap;

use dynsmem_kernels::layout::LayoutError;

/// The values of a kernel's parameters at one point of its space: `p["block"]`.
#[derive(Clone, PartialEq, Eq)]
pub struct Params(pub BTreeMap<&'static str, u32>);

/// `{block=256,tile=64}`: as notes and refusals name a point.
impl std::fmt::Debug for Params {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let values: Vec<String> = self.0.iter().map(|(n, v)| format!("{n}={v}")).collect();
        write!(f, "{{{}}}", values.join(","))
    }
}

impl std::ops::Index<&str> for Params {
    type Output = u32;
    /// Panics naming the parameter when the kernel declares none of that name: a typo in
    /// a closure of the contract, found on its first call.
    fn index(&self, name: &str) -> &u32 {
        self.0.get(name).unwrap_or_else(|| panic!("no parameter `{name}` (the kernel has {:?})", self.0.keys()))
    }
}

/// How an input buffer is filled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fill {
    /// f32 uniform in [-1, 1) from this seed.
    Random(u64),
    /// Every element this f32 value.
    Value(f32),
}

/// A buffer's contents on the host.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    F32(Vec<f32>),
    U32(Vec<u32>),
}

impl From<Vec<f32>> for Data {
    fn from(v: Vec<f32>) -> Data {
        Data::F32(v)
    }
}
impl From<Vec<u32>> for Data {
    fn from(v: Vec<u32>) -> Data {
        Data::U32(v)
    }
}

impl Data {
    pub fn len(&self) -> usize {
        match self {
            Data::F32(v) => v.len(),
            Data::U32(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The values widened to f64, as checks compare them.
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            Data::F32(v) => v.iter().map(|&x| x as f64).collect(),
            Data::U32(v) => v.iter().map(|&x| x as f64).collect(),
        }
    }
}

/// A scalar argument: a fixed value, or a parameter's value at the launched point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    U32(u32),
    U64(u64),
    F32(f32),
    Param(&'static str),
}

impl From<u32> for Scalar {
    fn from(v: u32) -> Scalar {
        Scalar::U32(v)
    }
}
impl From<u64> for Scalar {
    fn from(v: u64) -> Scalar {
        Scalar::U64(v)
    }
}
impl From<f32> for Scalar {
    fn from(v: f32) -> Scalar {
        Scalar::F32(v)
    }
}

/// Launch-sized bytes as a parameter function returns them: a byte count, or a layout's
/// result (the same `layout` code the kernel carves with).
pub trait SharedBytes {
    fn into_bytes(self) -> std::result::Result<u32, String>;
}
impl SharedBytes for u32 {
    fn into_bytes(self) -> std::result::Result<u32, String> {
        Ok(self)
    }
}
impl SharedBytes for u64 {
    fn into_bytes(self) -> std::result::Result<u32, String> {
        u32::try_from(self).map_err(|_| format!("{self} launch-sized bytes: past u32"))
    }
}
impl SharedBytes for std::result::Result<u32, LayoutError> {
    fn into_bytes(self) -> std::result::Result<u32, String> {
        self.map_err(|e| format!("shared-memory layout: {e}"))
    }
}

/// One tunable parameter and its candidate values, in the order neighbourhood-based
/// strategies walk them (so they should be sorted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// Name in cache entries, tables, plots and T4 `configuration` objects.
    pub name: &'static str,
    pub values: Vec<u32>,
    /// The value a config recorded before this parameter existed had (a tuning-database
    /// entry without it still answers, with this value); `None`: such entries do not fit.
    pub absent: Option<u32>,
    /// How a value reads in configs and on the command line.
    pub kind: ValueKind,
    /// The name entries recorded before the parameter was renamed know it by
    /// ([`Param::formerly`]).
    pub formerly: Option<&'static str>,
}

/// How a parameter's value (a `u32` in every point) reads in configs, records and on the
/// command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ValueKind {
    /// A number.
    #[default]
    Number,
    /// `false` (0) or `true` (1).
    Flag,
    /// One of the names, by index.
    Choice(&'static [&'static str]),
}

impl ValueKind {
    /// `v` as configs carry it.
    pub fn to_json(self, v: u32) -> serde_json::Value {
        match self {
            ValueKind::Number => v.into(),
            ValueKind::Flag => (v != 0).into(),
            ValueKind::Choice(names) => names.get(v as usize).map_or_else(|| v.into(), |n| (*n).into()),
        }
    }
    /// The value a config's `v` stands for, or `None` where it is not of this kind.
    pub fn from_json(self, v: &serde_json::Value) -> Option<u32> {
        match self {
            ValueKind::Number => v.as_u64().and_then(|n| u32::try_from(n).ok()),
            ValueKind::Flag => v.as_bool().map(u32::from),
            ValueKind::Choice(names) => v.as_str().and_then(|s| names.iter().position(|n| *n == s)).map(|i| i as u32),
        }
    }
}

impl Param {
    pub fn new(name: &'static str, values: &[u32]) -> Param {
        Param { name, values: values.to_vec(), absent: None, kind: ValueKind::Number, formerly: None }
    }

    /// A parameter that is on or off: values `false` and `true` in configs.
    pub fn flag(name: &'static str, values: &[bool]) -> Param {
        let values: Vec<u32> = values.iter().map(|&b| u32::from(b)).collect();
        Param { name, values, absent: None, kind: ValueKind::Flag, formerly: None }
    }

    /// A parameter that picks one of `names` (candidates by index into them).
    pub fn choice(name: &'static str, names: &'static [&'static str], values: &[u32]) -> Param {
        Param { name, values: values.to_vec(), absent: None, kind: ValueKind::Choice(names), formerly: None }
    }

    /// This parameter, with `value` standing for it in entries recorded before it existed.
    pub fn absent_as(self, value: u32) -> Param {
        Param { absent: Some(value), ..self }
    }

    /// This parameter, known as `name` in entries (tuning caches, the tuning database)
    /// recorded before it was renamed: they still answer.
    pub fn formerly(self, name: &'static str) -> Param {
        Param { formerly: Some(name), ..self }
    }

    /// Whether an entry's `name` is this parameter (its name, or the one it had).
    pub fn is_named(&self, name: &str) -> bool {
        self.name == name || self.formerly == Some(name)
    }
}
