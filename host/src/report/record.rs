//! The record format every measurement is written in: JSON lines, one object per
//! measured config, each carrying what is needed to reproduce and compare it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::backend::{BackendKind, DeviceInfo};
use crate::error::{Error, Result};

/// Where a binary and a run come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// `rustc -V` of the nightly that built the kernels.
    pub rustc: String,
    /// Git commit of the source (`-dirty` when the tree had changes).
    pub commit: String,
    /// The command line that produced the record.
    pub command: String,
    /// The device image, e.g. `nvptx64 sm_90 ptx80`.
    pub image: String,
}

/// One measured (or failed) config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub family: String,
    pub backend: BackendKind,
    /// `launch-sized`, `wgsl-literal`, `wgsl-override`, or `anchor`.
    pub variant: String,
    pub kernel: String,
    pub device: String,
    pub driver: String,
    pub api: String,
    pub rustc: String,
    pub commit: String,
    pub command: String,
    pub image: String,
    /// Seconds since the Unix epoch when the record was made.
    pub unix_time: u64,
    pub problem: serde_json::Value,
    pub config: serde_json::Value,
    /// Launch-sized workgroup bytes per block.
    pub shared_bytes: u32,
    /// Static workgroup bytes per block.
    pub static_shared_bytes: u32,
    /// `cuda-events`, `timestamp-query` or `host-wallclock`.
    pub timer: String,
    /// Untimed warm-up runs made before timing.
    pub warmup: u32,
    /// Raw device times of every kept run, in milliseconds.
    pub times_ms: Vec<f64>,
    pub median_ms: Option<f64>,
    pub min_ms: Option<f64>,
    pub max_ms: Option<f64>,
    /// The median's 95% bootstrap interval, in milliseconds ([`crate::measure::median_ci95`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_ci95_ms: Option<[f64; 2]>,
    /// Clocks, power, temperature, throttle reasons and energy per run, as the device's
    /// management library read them during the measurement ([`crate::observe`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<crate::observe::Observation>,
    /// Where the config came from: the command line, the tuning database (which entry),
    /// or the family's default (see [`crate::family::Resolved::origin`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_origin: Option<String>,
    /// Bytes the algorithm must read and write once (bandwidth-bound families).
    pub bytes: Option<u64>,
    /// GB/s (1e9 bytes per second) from `bytes` and `median_ms`.
    pub gbps: Option<f64>,
    /// TFLOP/s for compute-bound families.
    pub tflops: Option<f64>,
    /// What the figure is compared with, measured in the same run.
    pub anchor: Option<String>,
    pub anchor_gbps: Option<f64>,
    pub anchor_tflops: Option<f64>,
    /// Figure over anchor figure; for a row with `paired_ratio`, the median of its
    /// interleaved rounds (equal to `paired_ratio`) instead, so it need not equal the
    /// figure over `anchor_tflops` (the anchor timed alone).
    pub ratio: Option<f64>,
    /// Where the kernel and its vendor anchor were timed interleaved in one process
    /// ([`crate::backend::time_paired`]): the median over rounds of anchor ms over our ms
    /// (above 1: ours is faster). Absent elsewhere and in records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_ratio: Option<f64>,
    /// The interleaved rounds behind `paired_ratio`, in order: `[ours, anchor]` device
    /// milliseconds of `paired_batch` back-to-back launches each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_rounds_ms: Option<Vec<[f64; 2]>>,
    /// Launches per batch of each interleaved round, the same for both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_batch: Option<u32>,
    /// The result matched the CPU reference.
    pub verified: bool,
    /// Why the config could not be built, launched or verified.
    pub error: Option<String>,
    /// The kernel ran and its result was wrong (it differs from the reference, or the
    /// kernel faulted), as opposed to a config refused before launch: `run` and `bench`
    /// exit nonzero on such a record. Absent (false) in records written before it existed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wrong_result: bool,
    /// What a reader must know to compare the figure, e.g. that a cuda-static row ran a
    /// smaller config than the one asked, because the asked one's static arrays are over
    /// the 48 KB static limit. Absent in records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The shape suite's label of the problem (`dynsmem shapes`; see
    /// [`crate::family::shapes`]), on the record and on its anchor. Absent elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
}

impl Record {
    /// A record with provenance and device filled in and no measurement yet.
    pub fn new(family: &str, variant: &str, kernel: &str, device: &DeviceInfo, prov: &Provenance) -> Record {
        Record {
            family: family.into(),
            backend: device.backend,
            variant: variant.into(),
            kernel: kernel.into(),
            device: device.name.clone(),
            driver: device.driver.clone(),
            api: device.api.clone(),
            rustc: prov.rustc.clone(),
            commit: prov.commit.clone(),
            command: prov.command.clone(),
            image: prov.image.clone(),
            unix_time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            problem: serde_json::Value::Null,
            config: serde_json::Value::Null,
            shared_bytes: 0,
            static_shared_bytes: 0,
            timer: String::new(),
            warmup: 0,
            times_ms: Vec::new(),
            median_ms: None,
            median_ci95_ms: None,
            observed: None,
            config_origin: None,
            min_ms: None,
            max_ms: None,
            bytes: None,
            gbps: None,
            tflops: None,
            wrong_result: false,
            anchor: None,
            anchor_gbps: None,
            anchor_tflops: None,
            ratio: None,
            paired_ratio: None,
            paired_rounds_ms: None,
            paired_batch: None,
            verified: false,
            error: None,
            note: None,
            shape: None,
        }
    }
}

/// Appends records as JSON lines so that a process killed at any point leaves every
/// earlier record readable: the file is opened `O_APPEND`, each record is one `write_all`
/// of one whole line followed by `sync_data`, and a line a killed writer left unfinished
/// is closed off (with a newline) before the next record, so it cannot swallow it.
///
/// One writer per file at a time is assumed for that repair; several processes appending
/// whole lines is otherwise safe (each line is one `O_APPEND` write).
pub struct JsonlWriter {
    file: File,
    path: PathBuf,
}

impl JsonlWriter {
    /// Opens (creating it and its directory if needed) `path` for appending. A file that
    /// does not end in a newline ends in the fragment of a record whose writer was killed
    /// mid-line: a newline is appended and synced first, so the fragment stays a line of
    /// its own, which [`read_jsonl`] reports as torn.
    pub fn append(path: &Path) -> Result<JsonlWriter> {
        let io = |source| Error::Io { path: path.into(), source };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| Error::Io { path: dir.into(), source })?;
        }
        let existed = path.exists();
        let mut file = OpenOptions::new().read(true).append(true).create(true).open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len > 0 {
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(len - 1)).map_err(io)?;
            file.read_exact(&mut last).map_err(io)?;
            if last[0] != b'\n' {
                file.write_all(b"\n").map_err(io)?;
                file.sync_data().map_err(io)?;
            }
        }
        if !existed {
            // The new directory entry is durable too, not only the data written to it.
            if let Some(dir) = path.parent().map(|d| if d.as_os_str().is_empty() { Path::new(".") } else { d }) {
                File::open(dir).and_then(|d| d.sync_all()).map_err(|source| Error::Io { path: dir.into(), source })?;
            }
        }
        Ok(JsonlWriter { file, path: path.into() })
    }

    /// Appends `record` as one line: serialized whole first, written with one
    /// `write_all` (a single `O_APPEND` write unless the kernel splits it), then synced.
    /// Any serializable line (a [`Record`], or a tuner cache entry that embeds one).
    pub fn write<T: Serialize + ?Sized>(&mut self, record: &T) -> Result<()> {
        let io = |source| Error::Io { path: self.path.clone(), source };
        let mut line =
            serde_json::to_string(record).map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        line.push('\n');
        self.file.write_all(line.as_bytes()).map_err(io)?;
        self.file.sync_data().map_err(io)
    }
}

/// A line of a record file that holds part of a record: what a writer killed mid-line
/// leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornLine {
    /// 1-based line number.
    pub line: usize,
    /// Bytes of the fragment.
    pub bytes: usize,
}

/// What a record file holds: its complete records, and the torn lines skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonlContents {
    pub records: Vec<Record>,
    pub torn: Vec<TornLine>,
}

/// Reads every complete record of a JSON-lines file. A torn line is skipped and reported
/// in [`JsonlContents::torn`]: the last line when it has no newline and does not parse,
/// or any line that ends before its JSON object does (a fragment that [`JsonlWriter`]
/// closed off). Any other line that does not parse as a record is an error naming it.
pub fn read_jsonl(path: &Path) -> Result<JsonlContents> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io { path: path.into(), source })?;
    parse_jsonl(&bytes, path)
}

/// [`read_jsonl`] of bytes already read (`path` names them in errors): separate so the
/// parsing can be tested and fuzzed without files.
pub fn parse_jsonl(bytes: &[u8], path: &Path) -> Result<JsonlContents> {
    let (records, torn) = parse_jsonl_as(bytes, path)?;
    Ok(JsonlContents { records, torn })
}

/// [`parse_jsonl`] for lines of any type `T` (the tuner's cache entries): the same rules
/// for torn lines, and the same error for any other line that does not parse as a `T`.
pub fn parse_jsonl_as<T: serde::de::DeserializeOwned>(bytes: &[u8], path: &Path) -> Result<(Vec<T>, Vec<TornLine>)> {
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    // After a final newline `split` yields an empty piece: not a line.
    let unterminated = bytes.last().is_some_and(|&b| b != b'\n');
    if !unterminated {
        lines.pop();
    }
    let mut out = (Vec::new(), Vec::new());
    for (i, line) in lines.iter().enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice(line) {
            Ok(r) => out.0.push(r),
            Err(e) if e.is_eof() || (unterminated && i + 1 == lines.len()) => {
                out.1.push(TornLine { line: i + 1, bytes: line.len() })
            }
            Err(e) => {
                return Err(Error::Io {
                    path: path.into(),
                    source: std::io::Error::new(std::io::ErrorKind::InvalidData, format!("line {}: {e}", i + 1)),
                });
            }
        }
    }
    Ok(out)
}

/// Filling a record from a measurement: what the bench, the tuner and a user's sweep share.
impl Record {
    /// Whether the record was measured on a CPU: the CPU backend, or a CPU Vulkan adapter
    /// such as lavapipe (its `api` names the adapter type, `(Cpu)`). Its figure is a CPU
    /// timing, and a ratio to the copy of the same bytes says nothing of a GPU.
    pub fn on_cpu(&self) -> bool {
        self.backend == crate::backend::BackendKind::Cpu || self.api.contains("(Cpu)")
    }
}

impl Record {
    /// Fills a verified record's measurement: its timing, GB/s where it moves `bytes`, TFLOP/s
    /// where it does `flops`, and the ratio to `anchor` (by GB/s, or by TFLOP/s when the anchor
    /// has those).
    pub fn set_measured(
        &mut self,
        t: crate::measure::Timing,
        warmups: u32,
        bytes: u64,
        flops: f64,
        anchor: Option<&Record>,
    ) {
        self.verified = true;
        self.warmup = warmups;
        if bytes > 0 {
            self.bytes = Some(bytes);
            self.gbps = Some(crate::measure::gbps(bytes, t.median_ms));
            if let Some(a) = anchor {
                self.set_anchor(a);
                self.ratio = self.gbps.zip(a.gbps).map(|(g, a)| g / a);
            }
        }
        if flops > 0.0 {
            self.tflops = Some(flops / (t.median_ms * 1e-3) / 1e12);
            if let Some(a) = anchor.filter(|a| a.tflops.is_some()) {
                self.set_anchor(a);
                self.ratio = self.tflops.zip(a.tflops).map(|(t, a)| t / a);
            }
        }
        self.set_timing(t);
    }

    /// Puts a verified row's interleaved timing against its vendor anchor on it: the rounds,
    /// and their median as its `ratio` (the row's own timing and figures stay). A row that
    /// failed keeps no ratio.
    pub fn set_paired(&mut self, p: &crate::measure::Paired) {
        if !self.verified || self.error.is_some() {
            return;
        }
        self.ratio = Some(p.ratio);
        self.paired_ratio = Some(p.ratio);
        self.paired_rounds_ms = Some(p.rounds_ms.clone());
        self.paired_batch = Some(p.batch);
    }

    /// What follows a printed `ratio` to say how it was taken: ` (interleaved)` for a row
    /// with `paired_ratio`, nothing for a ratio of two separate timings.
    pub fn ratio_mark(&self) -> &'static str {
        if self.paired_ratio.is_some() { " (interleaved)" } else { "" }
    }

    /// A record's error, and whether it says the kernel was wrong.
    pub fn set_error(&mut self, e: &crate::Error) {
        self.error = Some(e.to_string());
        self.wrong_result = e.is_wrong_result();
    }

    /// The median, spread and raw times of a measured record.
    pub fn set_timing(&mut self, t: crate::measure::Timing) {
        self.median_ms = Some(t.median_ms);
        self.min_ms = Some(t.min_ms);
        self.max_ms = Some(t.max_ms);
        self.median_ci95_ms = t.median_ci95_ms;
        self.observed = t.observation;
        self.times_ms = t.times_ms;
    }

    /// Names the anchor a record is compared with and carries its figure.
    pub fn set_anchor(&mut self, anchor: &Record) {
        self.anchor = Some(format!("{} {}", anchor.backend, anchor.kernel));
        self.anchor_gbps = anchor.gbps;
        self.anchor_tflops = anchor.tflops;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Limits;

    fn device() -> DeviceInfo {
        DeviceInfo {
            backend: BackendKind::Wgsl,
            name: "test".into(),
            driver: "1".into(),
            api: "none".into(),
            is_cpu: true,
            limits: Limits {
                max_threads_per_block: 1,
                max_grid_x: 1,
                launch_shared_default: 0,
                launch_shared_max: 0,
                static_shared_max: 0,
                shared_per_multiprocessor: None,
                multiprocessors: None,
                max_buffer_bytes: 0,
                memory_bytes: None,
                max_cluster: 1,
            },
        }
    }

    fn record() -> Record {
        let prov = Provenance { rustc: "r".into(), commit: "c".into(), command: "x".into(), image: "i".into() };
        let mut a = Record::new("reduce", "launch-sized", "k", &device(), &prov);
        a.times_ms = vec![1.0, 2.0];
        a.gbps = Some(3.5);
        a
    }

    fn temp_file(name: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("dynsmem-record-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        (dir.join("r.jsonl"), dir)
    }

    #[test]
    fn records_round_trip_and_torn_last_line_is_skipped() {
        let (path, dir) = temp_file("last");
        let a = record();
        let mut w = JsonlWriter::append(&path).unwrap();
        w.write(&a).unwrap();
        w.write(&a).unwrap();
        drop(w);
        // A writer killed mid-line.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"family\":\"red").unwrap();
        let back = read_jsonl(&path).unwrap();
        assert_eq!(back.records, vec![a.clone(), a]);
        assert_eq!(back.torn, vec![TornLine { line: 3, bytes: 14 }]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn appending_after_a_torn_line_closes_it_off() {
        let (path, dir) = temp_file("reopen");
        let a = record();
        JsonlWriter::append(&path).unwrap().write(&a).unwrap();
        // Killed mid-line, inside a multi-byte character.
        let line = serde_json::to_string(&a).unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&line.as_bytes()[..line.len() / 2]).unwrap();
        f.write_all(&"\u{e9}".as_bytes()[..1]).unwrap();
        drop(f);
        let mut w = JsonlWriter::append(&path).unwrap();
        w.write(&a).unwrap();
        w.write(&a).unwrap();
        let back = read_jsonl(&path).unwrap();
        assert_eq!(back.records, vec![a.clone(), a.clone(), a], "no record is lost to the fragment");
        assert_eq!(back.torn, vec![TornLine { line: 2, bytes: line.len() / 2 + 1 }]);
        assert!(std::fs::read(&path).unwrap().ends_with(b"\n"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_corrupt_complete_line_is_an_error_naming_it() {
        let (path, dir) = temp_file("corrupt");
        let a = record();
        JsonlWriter::append(&path).unwrap().write(&a).unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"family\": 12}\n").unwrap();
        drop(f);
        JsonlWriter::append(&path).unwrap().write(&a).unwrap();
        let e = read_jsonl(&path).unwrap_err().to_string();
        assert!(e.contains("line 2"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn paired_fields_round_trip_and_old_records_still_parse() {
        let (path, dir) = temp_file("paired");
        let plain = record();
        let mut paired = record();
        paired.verified = true;
        paired.ratio = Some(0.9);
        let rounds = vec![[1.0, 1.1], [2.0, 2.4], [1.0, 1.3]];
        paired.set_paired(&crate::measure::Paired::new(rounds.clone(), 16, 4).unwrap());
        assert_eq!((paired.ratio, paired.paired_ratio), (Some(1.2), Some(1.2)), "the median round is the ratio");
        assert_eq!((paired.paired_rounds_ms.as_ref(), paired.paired_batch), (Some(&rounds), Some(16)));
        assert_eq!((paired.ratio_mark(), plain.ratio_mark()), (" (interleaved)", ""));
        let line = serde_json::to_string(&plain).unwrap();
        assert!(!line.contains("paired"), "no paired fields written where there are none: {line}");
        // A record as written before the fields existed: the same line without them.
        let mut w = JsonlWriter::append(&path).unwrap();
        w.write(&paired).unwrap();
        w.write(&plain).unwrap();
        drop(w);
        let back = read_jsonl(&path).unwrap();
        assert_eq!(back.records, vec![paired, plain]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failed_row_takes_no_paired_ratio() {
        let mut failed = record();
        failed.error = Some("wrong".into());
        failed.set_paired(&crate::measure::Paired::new(vec![[1.0, 2.0]], 1, 1).unwrap());
        assert_eq!((failed.ratio, failed.paired_ratio), (None, None));
    }
}
