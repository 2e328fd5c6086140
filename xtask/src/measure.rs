//! Running a command once and measuring its wall time and peak RSS.

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// Most stdout bytes kept per run.
const MAX_KEPT: usize = 16 << 20;

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// One measured run.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Wall time from spawn to exit.
    pub wall: Duration,
    /// Peak resident set size in KiB (from wait4).
    pub max_rss_kb: u64,
    /// Captured stdout.
    pub stdout: String,
}

/// Spawn `cmd` (stdout captured, stderr discarded), wait with wait4 and
/// return wall time and peak RSS. A non-zero exit is an error.
pub fn run(cmd: &mut Command) -> anyhow::Result<Sample> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
    let start = Instant::now();
    let mut child = cmd.spawn().with_context(|| format!("spawning {cmd:?}"))?;
    // Line by line, dropping streamed tool output (`tool_execution_update`
    // events can carry gigabytes) so that this process stays small: a child's
    // peak RSS counts what it shared with us before exec. Bytes, then lossy:
    // a command may print file contents that are not UTF-8.
    let mut raw = Vec::new();
    if let Some(out) = child.stdout.take() {
        let mut reader = std::io::BufReader::new(out);
        let mut line = Vec::new();
        while reader.read_until(b'\n', &mut line)? > 0 {
            if !contains(&line, b"\"type\":\"tool_execution_update\"") && raw.len() < MAX_KEPT {
                raw.extend_from_slice(&line);
            }
            line.clear();
        }
    }
    let stdout = String::from_utf8_lossy(&raw).into_owned();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: wait4 on our own child with a zeroed rusage out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    if r != pid {
        bail!("wait4 failed for {cmd:?}");
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        bail!("{cmd:?} failed (status {status}); stdout: {stdout}");
    }
    Ok(Sample { wall, max_rss_kb: usage.ru_maxrss as u64, stdout })
}

/// Median and minimum of a set of durations, and the largest RSS.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    /// Median wall time.
    pub median: Duration,
    /// Largest peak RSS over the runs, in KiB.
    pub max_rss_kb: u64,
}

/// Summarise samples.
pub fn stats(samples: &[Sample]) -> Stats {
    let mut walls: Vec<Duration> = samples.iter().map(|s| s.wall).collect();
    walls.sort();
    Stats {
        median: walls.get(walls.len() / 2).copied().unwrap_or_default(),
        max_rss_kb: samples.iter().map(|s| s.max_rss_kb).max().unwrap_or(0),
    }
}

/// Median of plain durations.
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}
