//! TUI benchmarks:
//! - frame time with a 10,000-cell transcript while a bash cell streams
//!   100,000 lines (`crates/frontends/tui/examples/frame_bench.rs`, release), next to
//!   the same frames over an empty transcript, with the memory it holds;
//! - the idle RSS of the real `tern` TUI in a pseudo-terminal, next to
//!   `less` idling in the same kind of terminal;
//! - keypress-to-frame latency: a key written to the terminal until tern's
//!   redraw showing it arrives, next to the terminal's own echo (`cat`).

use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::Value;

use crate::bench::{Row, ms};
use crate::measure;

/// A program running in a pseudo-terminal, its output arriving on a channel.
pub(crate) struct Pty {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    out: mpsc::Receiver<Vec<u8>>,
    seen: Vec<u8>,
}

impl Pty {
    pub(crate) fn spawn(cmd: portable_pty::CommandBuilder) -> anyhow::Result<Self> {
        let pair = portable_pty::native_pty_system()
            .openpty(portable_pty::PtySize { rows: 40, cols: 120, pixel_width: 0, pixel_height: 0 })
            .map_err(|e| anyhow::anyhow!("openpty: {e}"))?;
        let child = pair.slave.spawn_command(cmd).map_err(|e| anyhow::anyhow!("spawn: {e}"))?;
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().map_err(|e| anyhow::anyhow!("{e}"))?;
        let writer = pair.master.take_writer().map_err(|e| anyhow::anyhow!("{e}"))?;
        let (tx, out) = mpsc::channel();
        std::thread::spawn(move || {
            let _master = pair.master;
            let mut buf = [0u8; 16384];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Ok(Self { child, writer, out, seen: Vec::new() })
    }

    /// Read until `needle` shows up in what arrives after this call; the time it took.
    pub(crate) fn wait_for(&mut self, needle: &[u8], timeout: Duration) -> anyhow::Result<Duration> {
        let start = Instant::now();
        let from = self.seen.len();
        loop {
            // Only text drawn counts: a key's letter also ends escape sequences (`m`, `h`, `l`, ...).
            if printed(&self.seen[from..]).windows(needle.len()).any(|w| w == needle) {
                return Ok(start.elapsed());
            }
            let left = timeout.checked_sub(start.elapsed()).context("timed out waiting for the terminal")?;
            let chunk = self.out.recv_timeout(left).context("timed out waiting for the terminal")?;
            self.seen.extend_from_slice(&chunk);
        }
    }

    fn drain(&mut self) {
        while let Ok(chunk) = self.out.recv_timeout(Duration::from_millis(200)) {
            self.seen.extend_from_slice(&chunk);
        }
    }

    fn rss_kb(&self) -> u64 {
        let Some(pid) = self.child.process_id() else { return 0 };
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// Median time from writing each key to its echo in the output.
    fn key_latency(&mut self, keys: &[u8]) -> anyhow::Result<Duration> {
        let mut times = Vec::new();
        for &k in keys {
            let start = Instant::now();
            self.writer.write_all(&[k])?;
            self.writer.flush()?;
            self.wait_for(&[k], Duration::from_secs(5))?;
            times.push(start.elapsed());
            std::thread::sleep(Duration::from_millis(30));
            self.drain_quick();
        }
        Ok(measure::median(times))
    }

    fn drain_quick(&mut self) {
        while let Ok(chunk) = self.out.try_recv() {
            self.seen.extend_from_slice(&chunk);
        }
    }

    /// Type `bytes` as a person would.
    pub(crate) fn type_bytes(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.writer.write_all(bytes)?;
        Ok(self.writer.flush()?)
    }

    pub(crate) fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The bytes a terminal would draw: escape sequences (CSI, OSC, two-byte
/// ESC sequences) left out.
fn printed(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != 0x1b {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match bytes.get(i + 1) {
            // CSI: parameters and intermediates, then one final byte in 0x40..=0x7e.
            Some(b'[') => {
                i += 2;
                while i < bytes.len() && !(0x40..=0x7e).contains(&bytes[i]) {
                    i += 1;
                }
                i += 1;
            }
            // OSC: up to BEL or ESC \.
            Some(b']') => {
                i += 2;
                while i < bytes.len() && bytes[i] != 0x07 && !(bytes[i] == 0x1b && bytes.get(i + 1) == Some(&b'\\')) {
                    i += 1;
                }
                i += if bytes.get(i) == Some(&0x07) { 1 } else { 2 };
            }
            _ => i += 2,
        }
    }
    out
}

fn kb(v: u64) -> String {
    format!("{:.1} MB", v as f64 / 1024.0)
}

pub fn rows(tern: &Path) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    // Frame time, in process.
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(crate::root())
        .args(["build", "--quiet", "--release", "-p", "tern-tui", "--example", "frame_bench"])
        .status()?;
    anyhow::ensure!(status.success(), "building frame_bench failed");
    let out = Command::new(crate::root().join("target/release/examples/frame_bench")).output()?;
    let v: Value = serde_json::from_slice(&out.stdout).context("frame_bench printed no JSON")?;
    let f = |k: &str, p: &str| v[k][p].as_f64().unwrap_or(f64::NAN);
    rows.push(Row {
        what: format!(
            "TUI frame, {} cells + bash streaming 100k lines, {}×{} (median / p99 / max)",
            v["cells"], v["area"][0], v["area"][1]
        ),
        ours: format!("{:.3} / {:.3} / {:.3} ms", f("frame_ms", "median"), f("frame_ms", "p99"), f("frame_ms", "max")),
        baseline: format!(
            "empty transcript {:.3} / {:.3} ms",
            f("empty_frame_ms", "median"),
            f("empty_frame_ms", "p99")
        ),
        target: "≤ 8 ms".into(),
    });
    rows.push(Row {
        what: "TUI inline frame, the same stream: live part drawn and written (median / p99 / max; bytes written)"
            .into(),
        ours: format!(
            "{:.3} / {:.3} / {:.3} ms; {} B median, {} B max",
            f("inline_frame_ms", "median"),
            f("inline_frame_ms", "p99"),
            f("inline_frame_ms", "max"),
            v["inline_bytes"]["median"],
            v["inline_bytes"]["max"]
        ),
        baseline: format!("full-screen frame {:.3} ms median", f("frame_ms", "median")),
        target: "≤ 8 ms".into(),
    });
    let r = |k: &str| v["rss_kb"][k].as_u64().unwrap_or(0);
    rows.push(Row {
        what: "TUI memory while streaming 100k lines (frame_bench RSS)".into(),
        ours: format!("{} after streaming", kb(r("after_stream"))),
        baseline: format!("{} before streaming ({} cells)", kb(r("before_stream")), v["cells"]),
        target: "bounded by the tail kept".into(),
    });

    // The real TUI in a pseudo-terminal.
    let home = std::env::temp_dir().join(format!("tern-bench-tui-{}", std::process::id()));
    std::fs::create_dir_all(&home)?;
    let mut cmd = portable_pty::CommandBuilder::new(tern);
    cmd.args(["--provider", "anthropic", "--base-url", "http://127.0.0.1:9", "--model", "mock"]);
    cmd.env("TERN_HOME", &home);
    cmd.env("ANTHROPIC_API_KEY", "bench");
    cmd.env("TERM", "xterm-256color");
    cmd.cwd(crate::root());
    let mut tui = Pty::spawn(cmd)?;
    tui.wait_for(b"Ask tern", Duration::from_secs(10))?;
    std::thread::sleep(Duration::from_millis(500));
    tui.drain();
    let tui_rss = tui.rss_kb();
    let keys = b"abcdefghijklmnopqrst";
    let tui_latency = tui.key_latency(keys)?;
    tui.kill();

    let mut less = portable_pty::CommandBuilder::new("less");
    less.arg(crate::root().join("README.md"));
    less.env("TERM", "xterm-256color");
    let mut less = Pty::spawn(less)?;
    less.wait_for(b"tern", Duration::from_secs(5))?;
    std::thread::sleep(Duration::from_millis(500));
    let less_rss = less.rss_kb();
    less.kill();

    let mut cat = portable_pty::CommandBuilder::new("cat");
    cat.env("TERM", "xterm-256color");
    let mut cat = Pty::spawn(cat)?;
    std::thread::sleep(Duration::from_millis(200));
    let cat_latency = cat.key_latency(keys)?;
    cat.kill();
    let _ = std::fs::remove_dir_all(&home);

    rows.push(Row {
        what: "TUI idle RSS (120×40 pseudo-terminal)".into(),
        ours: kb(tui_rss),
        baseline: format!("`less README.md` {}", kb(less_rss)),
        target: "≤ 30 MB".into(),
    });
    rows.push(Row {
        what: "keypress → frame showing it (median of 20)".into(),
        ours: ms(tui_latency),
        baseline: format!("terminal echo through `cat` {}", ms(cat_latency)),
        target: "reported".into(),
    });
    Ok(rows)
}

/// `cargo xtask bench tui`: only these rows.
pub fn print() -> anyhow::Result<()> {
    eprintln!("bench: building release binaries…");
    let dir = crate::cargo_build(true, &["tern-cli"])?;
    crate::bench::print_rows(&rows(&dir.join("tern"))?);
    Ok(())
}
