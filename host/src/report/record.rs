//! The record format every measurement is written in: JSON lines, one object per
//! measured config, each carrying what is needed to reproduce and compare it.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
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
    /// Figure over anchor figure.
    pub ratio: Option<f64>,
    /// The result matched the CPU reference.
    pub verified: bool,
    /// Why the config could not be built, launched or verified.
    pub error: Option<String>,
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
            min_ms: None,
            max_ms: None,
            bytes: None,
            gbps: None,
            tflops: None,
            anchor: None,
            anchor_gbps: None,
            anchor_tflops: None,
            ratio: None,
            verified: false,
            error: None,
        }
    }
}

/// Appends records as JSON lines: each record is one `write` of one whole line followed
/// by an fsync, so a process killed at any point leaves every earlier line readable.
pub struct JsonlWriter {
    file: File,
    path: PathBuf,
}

impl JsonlWriter {
    pub fn append(path: &Path) -> Result<JsonlWriter> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| Error::Io { path: dir.into(), source })?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| Error::Io { path: path.into(), source })?;
        Ok(JsonlWriter { file, path: path.into() })
    }

    pub fn write(&mut self, record: &Record) -> Result<()> {
        let mut line = serde_json::to_string(record).expect("records serialize");
        line.push('\n');
        let io = |source| Error::Io { path: self.path.clone(), source };
        self.file.write_all(line.as_bytes()).map_err(io)?;
        self.file.sync_data().map_err(|source| Error::Io { path: self.path.clone(), source })
    }
}

/// Reads every complete record of a JSON-lines file; a torn last line (a writer killed
/// mid-write) is skipped, any other bad line is an error.
pub fn read_jsonl(path: &Path) -> Result<Vec<Record>> {
    let file = File::open(path).map_err(|source| Error::Io { path: path.into(), source })?;
    let lines: Vec<String> = BufReader::new(file)
        .lines()
        .collect::<std::io::Result<_>>()
        .map_err(|source| Error::Io { path: path.into(), source })?;
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(r) => out.push(r),
            Err(_) if i + 1 == lines.len() => {}
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
            },
        }
    }

    #[test]
    fn records_round_trip_and_torn_last_line_is_skipped() {
        let dir = std::env::temp_dir().join(format!("dynsmem-record-{}", std::process::id()));
        let path = dir.join("r.jsonl");
        let _ = std::fs::remove_file(&path);
        let prov = Provenance { rustc: "r".into(), commit: "c".into(), command: "x".into(), image: "i".into() };
        let mut a = Record::new("reduce", "launch-sized", "k", &device(), &prov);
        a.times_ms = vec![1.0, 2.0];
        a.gbps = Some(3.5);
        let mut w = JsonlWriter::append(&path).unwrap();
        w.write(&a).unwrap();
        w.write(&a).unwrap();
        drop(w);
        // A writer killed mid-line.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"family\":\"red").unwrap();
        let back = read_jsonl(&path).unwrap();
        assert_eq!(back, vec![a.clone(), a]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
