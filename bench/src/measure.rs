//! Measuring one command in a fresh process: wall time, peak RSS, and the disk it
//! used under a directory while it ran (sampled), for the scale benchmark.
//!
//! Peak RSS is the process's maximum resident set size as `wait4` reports it, read
//! through GNU time (`/usr/bin/time -f %M`) when installed; otherwise the process's
//! `VmHWM` (/proc/PID/status) sampled every [`SAMPLE`] until it exits (a peak in
//! the last sample interval can be missed). Disk: the bytes of every file under the
//! watched directory before, at the highest sample (every [`SAMPLE`]) and after.

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;

use trawl::store::disk::tree_bytes;

/// How often disk (and, without GNU time, memory) is sampled.
pub const SAMPLE: Duration = Duration::from_millis(50);

/// GNU time, which reports the peak RSS of the command it runs.
const GNU_TIME: &str = "/usr/bin/time";

/// What one run took.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Wall time, seconds.
    pub secs: f64,
    /// Peak resident set size, MiB.
    pub peak_rss_mib: f64,
    /// Bytes under the watched directory before the run.
    pub disk_before: u64,
    /// The highest sample of those bytes during the run.
    pub disk_peak: u64,
    /// Bytes after the run.
    pub disk_after: u64,
    /// The command's standard output.
    pub stdout: String,
    /// The command's standard error.
    pub stderr: String,
}

impl Measured {
    /// Disk used above what was there before, at the highest sample: what the run
    /// needed free (its new data, plus its temporary files while they existed).
    pub fn disk_peak_extra(&self) -> u64 {
        self.disk_peak.saturating_sub(self.disk_before)
    }

    /// The last line of standard error (a stage's summary line).
    pub fn summary(&self) -> &str {
        self.stderr.lines().last().unwrap_or("")
    }
}

/// Runs `program args` in a fresh process, watching the bytes under `watch`, with
/// its output captured into files under `scratch`. An error when it fails (its
/// standard error is part of the message).
pub fn measure(
    program: &Path,
    args: &[OsString],
    watch: &Path,
    scratch: &Path,
) -> anyhow::Result<Measured> {
    std::fs::create_dir_all(scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let out_path = scratch.join("stdout");
    let err_path = scratch.join("stderr");
    let rss_path = scratch.join("rss");
    let gnu_time = Path::new(GNU_TIME).is_file();
    let mut cmd = if gnu_time {
        let mut c = Command::new(GNU_TIME);
        c.arg("-f").arg("%M").arg("-o").arg(&rss_path).arg(program);
        c
    } else {
        Command::new(program)
    };
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(File::create(&out_path).context("stdout file")?)
        .stderr(File::create(&err_path).context("stderr file")?);

    let disk_before = tree_bytes(watch);
    let peak_disk = Arc::new(AtomicU64::new(disk_before));
    let peak_hwm_kb = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("running {}", program.display()))?;
    let sampler = {
        let (peak_disk, peak_hwm_kb, done) = (peak_disk.clone(), peak_hwm_kb.clone(), done.clone());
        let watch: PathBuf = watch.to_path_buf();
        let pid = child.id();
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak_disk.fetch_max(tree_bytes(&watch), Ordering::Relaxed);
                if !gnu_time && let Some(kb) = vm_hwm_kb(&pid.to_string()) {
                    peak_hwm_kb.fetch_max(kb, Ordering::Relaxed);
                }
                std::thread::sleep(SAMPLE);
            }
        })
    };
    let status = child.wait().context("waiting for the command")?;
    let secs = started.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let disk_after = tree_bytes(watch);
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    anyhow::ensure!(
        status.success(),
        "{} {:?} failed ({status}):\n{stderr}",
        program.display(),
        args
    );
    let rss_kb = if gnu_time {
        std::fs::read_to_string(&rss_path)
            .ok()
            .and_then(|s| s.lines().last().and_then(|l| l.trim().parse::<u64>().ok()))
            .unwrap_or(0)
    } else {
        peak_hwm_kb.load(Ordering::Relaxed)
    };
    Ok(Measured {
        secs,
        peak_rss_mib: rss_kb as f64 / 1024.0,
        disk_before,
        disk_peak: peak_disk.load(Ordering::Relaxed).max(disk_after),
        disk_after,
        stdout,
        stderr,
    })
}

/// `VmHWM` (peak resident set size) in kB of the process `proc` names under /proc:
/// a pid, or `self`; `None` where /proc does not tell.
pub fn vm_hwm_kb(proc: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{proc}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// `bytes` in MB (10^6), one decimal.
pub fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}
