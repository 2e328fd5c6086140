//! `cargo xtask faults [STRIDE]`: the provider and MCP fault matrix against
//! the real binary (docs/reliability.md). Every fault runs on each wire
//! (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses): error
//! statuses with and without `retry-after`, a slow first byte, headers
//! without a body, a stream cut at every event position of a reply with
//! text and two tool calls, malformed SSE at every position, an in-stream
//! error, endless pings and endless text, arguments that are not JSON, a
//! 512 KB argument and a 4 MB one (over the response cap); then the MCP
//! faults (a server that crashes mid-call, hangs, speaks no JSON-RPC, floods
//! stderr). For each: no panic, every session file readable, the run
//! finishes with a clear message in bounded time and memory, and one that
//! can recover does. STRIDE > 1 tries every STRIDE-th event position only
//! (CI).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::reliability::Mock;

/// The most one run may take: the slowest case waits out two 1 s timeouts.
const RUN_LIMIT: Duration = Duration::from_secs(60);
/// The most memory one run may hold (the large-argument cases included).
const RSS_LIMIT_KB: u64 = 600 * 1024;
/// The most an endless stream may add to a run's peak memory.
const ENDLESS_GROWTH_KB: u64 = 64 * 1024;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Wire {
    Anthropic,
    Chat,
    Responses,
}

impl Wire {
    const ALL: [Wire; 3] = [Wire::Anthropic, Wire::Chat, Wire::Responses];

    fn provider(self) -> &'static str {
        match self {
            Wire::Anthropic => "anthropic",
            Wire::Chat => "openai",
            Wire::Responses => "openai-responses",
        }
    }
}

/// What a run must end with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Expect {
    /// Exit 0 with the scripted final answer.
    Recovers,
    /// The server stalls: the run ends at the limit (not tried again),
    /// failing clearly and naming the setting to raise.
    StallsOut,
    /// Exit 1 with `tern: error:` on stderr and an error result.
    FailsClearly,
}

/// One finished run.
struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    wall: Duration,
    max_rss_kb: u64,
    /// Requests the mock served.
    served: usize,
}

/// Run `cmd` with a deadline (killed past it), capturing both streams and the peak RSS.
fn run(cmd: &mut Command) -> anyhow::Result<Outcome> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().with_context(|| format!("spawning {cmd:?}"))?;
    let pid = child.id() as libc::pid_t;
    let (mut out, mut err) = (child.stdout.take().context("stdout")?, child.stderr.take().context("stderr")?);
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    // A watchdog: past the limit the run is killed (and counted as hung).
    // It also samples the child's own peak RSS (VmHWM): wait4's figure
    // would count this process's memory, which the child shares until exec.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watch = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut peak = 0u64;
            while started.elapsed() < RUN_LIMIT {
                if done.load(std::sync::atomic::Ordering::Relaxed) {
                    return peak;
                }
                peak = peak.max(hwm_kb(pid));
                std::thread::sleep(Duration::from_millis(10));
            }
            // SAFETY: SIGKILL to our own child, not yet reaped (`done` is unset).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            peak
        })
    };
    // Wait without reaping, so the last VmHWM can still be read.
    // SAFETY: waitid on our own child; the siginfo out-parameter is zeroed.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT) };
    let last = hwm_kb(pid);
    let mut status = 0;
    // SAFETY: reap the child waited for above.
    let reaped = unsafe { libc::waitpid(pid, &mut status, 0) };
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let wall = started.elapsed();
    let peak = watch.join().unwrap_or(0).max(last);
    std::mem::forget(child);
    if r != 0 || reaped != pid {
        bail!("waiting for {cmd:?} failed");
    }
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let stdout = reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    Ok(Outcome { code, stdout, stderr, wall, max_rss_kb: peak, served: 0 })
}

/// The peak resident set of a live (or exited, unreaped) process, in KiB.
fn hwm_kb(pid: libc::pid_t) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A TERN_HOME with short timeouts and backoff, and `extra` config.
/// (`extra` may bring its own `[retry]`, then used instead.)
fn home(extra: &str) -> anyhow::Result<tempfile::TempDir> {
    let home = tempfile::tempdir()?;
    let retry = if extra.contains("[retry]") {
        ""
    } else {
        "[retry]\nmax_attempts = 4\nbase_delay_ms = 1\nmax_delay_ms = 20\nfirst_byte_timeout_secs = 1\nidle_timeout_secs = 1\n"
    };
    std::fs::write(home.path().join("config.toml"), format!("{retry}{extra}"))?;
    Ok(home)
}

/// Every line of every session file parses as JSON.
pub(crate) fn sessions_readable(home: &Path) -> anyhow::Result<usize> {
    let mut files = 0;
    let dir = home.join("sessions");
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                files += 1;
                let text = std::fs::read_to_string(&p).with_context(|| p.display().to_string())?;
                for (i, line) in text.lines().enumerate() {
                    serde_json::from_str::<Value>(line)
                        .with_context(|| format!("{} line {} is not JSON", p.display(), i + 1))?;
                }
            }
        }
    }
    Ok(files)
}

/// The reply every provider case is built on: text, then two tool calls.
fn tool_turn() -> Value {
    json!({"text": "Let me look at the file first.", "tool_calls": [
        {"name": "bash", "arguments": {"command": "echo faults-loop"}},
        {"name": "read", "arguments": {"path": "notes.txt"}}
    ]})
}

struct Loop {
    bin: PathBuf,
    mcp_server: PathBuf,
    cases: usize,
    worst_wall: Duration,
    worst_rss_kb: u64,
    failures: Vec<String>,
}

impl Loop {
    /// Run one case: `turns` served by the mock on `wire`, checked against `expect`.
    fn case(
        &mut self,
        name: &str,
        wire: Wire,
        turns: Value,
        extra_config: &str,
        expect: Expect,
    ) -> anyhow::Result<Outcome> {
        let mock = Mock::start(&json!({ "turns": turns }))?;
        let home = home(extra_config)?;
        let work = tempfile::tempdir()?;
        std::fs::write(work.path().join("notes.txt"), "a note\n")?;
        let mut cmd = Command::new(&self.bin);
        for var in ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"] {
            cmd.env_remove(var);
        }
        cmd.env("ANTHROPIC_API_KEY", "faults")
            .env("OPENAI_API_KEY", "faults")
            .env("TERN_HOME", home.path())
            .env("HOME", home.path())
            .current_dir(work.path())
            .args(["-p", "go", "--output-format", "json", "--model", "mock", "--permission-mode", "bypass"])
            .args(["--provider", wire.provider(), "--base-url"])
            .arg(if wire == Wire::Anthropic { mock.server.url() } else { mock.server.openai_url() });
        let mut out = run(&mut cmd)?;
        out.served = mock.server.requests().len();
        self.cases += 1;
        self.worst_wall = self.worst_wall.max(out.wall);
        self.worst_rss_kb = self.worst_rss_kb.max(out.max_rss_kb);
        let mut problems = Vec::new();
        if out.stderr.contains("panicked") {
            problems.push("panicked".to_string());
        }
        if out.wall >= RUN_LIMIT {
            problems.push(format!("hung: killed after {} s", RUN_LIMIT.as_secs()));
        }
        if out.max_rss_kb > RSS_LIMIT_KB {
            problems.push(format!("peak RSS {} MB", out.max_rss_kb / 1024));
        }
        if let Err(e) = sessions_readable(home.path()) {
            problems.push(format!("session file: {e:#}"));
        }
        let result: Value = serde_json::from_str(out.stdout.trim()).unwrap_or(Value::Null);
        match expect {
            Expect::Recovers => {
                if out.code != Some(0) || result["result"] != "done" {
                    problems.push(format!("did not recover: exit {:?}, result {}", out.code, result["result"]));
                }
            }
            Expect::StallsOut => {
                let said = out.stderr.lines().any(|l| l.starts_with("tern: error:") && l.contains("_timeout_secs"));
                if out.code != Some(1) || result["is_error"] != true || !said {
                    problems.push(format!("no clear stall: exit {:?}, is_error {}", out.code, result["is_error"]));
                }
                // The limits are 1 s: one attempt, not four.
                if out.wall >= std::time::Duration::from_secs(10) {
                    problems.push(format!("took {:?} against a 1 s limit", out.wall));
                }
            }
            Expect::FailsClearly => {
                let said = out.stderr.lines().any(|l| l.starts_with("tern: error:"));
                if out.code != Some(1) || result["is_error"] != true || !said {
                    problems.push(format!("no clear failure: exit {:?}, is_error {}", out.code, result["is_error"]));
                }
            }
        }
        if !problems.is_empty() {
            let tail: String = out.stderr.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
            self.failures.push(format!("{name} on {wire:?}: {} (stderr: {tail})", problems.join("; ")));
        }
        Ok(out)
    }
}

pub fn faults(bin: &Path, stride: usize) -> anyhow::Result<()> {
    let mcp_server = crate::cargo_build(false, &["tern-test-mcp"])?.join("tern-test-mcp");
    let mut l = Loop {
        bin: bin.to_path_buf(),
        mcp_server,
        cases: 0,
        worst_wall: Duration::ZERO,
        worst_rss_kb: 0,
        failures: Vec::new(),
    };
    let done = json!({"text": "done"});
    let once = |fault: Value| {
        let mut t = tool_turn();
        t["faults"] = json!([fault]);
        json!([t, {"text": "done"}])
    };
    let mut positions = 0;
    let mut baseline_rss = 0;
    let mut growths = Vec::new();
    for wire in Wire::ALL {
        let plain = l.case("no fault", wire, json!([tool_turn(), done]), "", Expect::Recovers)?;
        baseline_rss = baseline_rss.max(plain.max_rss_kb);
        for status in [429, 500, 502, 503, 529] {
            l.case(&format!("{status} ×3 with retry-after"), wire,
                { let mut t = tool_turn(); t["faults"] = json!([{"status": status, "retry_after": "0"}, {"status": status, "retry_after": "0"}, {"status": status, "retry_after": "0"}]); json!([t, done]) },
                "", Expect::Recovers)?;
        }
        l.case(
            "429 ×3 without retry-after",
            wire,
            {
                let mut t = tool_turn();
                t["faults"] = json!([{"status": 429}, {"status": 429}, {"status": 429}]);
                json!([t, done])
            },
            "",
            Expect::Recovers,
        )?;
        l.case(
            "429 storm",
            wire,
            {
                let mut t = tool_turn();
                t["faults"] = json!([{"status": 429, "retry_after": "0", "repeat": true}]);
                json!([t, done])
            },
            "",
            Expect::FailsClearly,
        )?;
        l.case(
            "500 forever",
            wire,
            {
                let mut t = tool_turn();
                t["faults"] = json!([{"status": 500, "repeat": true}]);
                json!([t, done])
            },
            "",
            Expect::FailsClearly,
        )?;
        l.case("slow first byte", wire, once(json!({"delay_ms": 1500})), "", Expect::StallsOut)?;
        l.case("headers without a body", wire, once(json!({"stall_after_events": 0})), "", Expect::StallsOut)?;
        l.case("stall mid-stream", wire, once(json!({"stall_after_events": 3})), "", Expect::StallsOut)?;
        l.case("in-stream error", wire, once(json!({"stream_error_after_events": 2})), "", Expect::Recovers)?;
        l.case("endless pings", wire, once(json!({"pings_after_events": 2})), "", Expect::StallsOut)?;
        let endless =
            l.case("endless text", wire, once(json!({"endless_text_after_events": 2})), "", Expect::Recovers)?;
        let growth = endless.max_rss_kb.saturating_sub(plain.max_rss_kb);
        growths.push(format!("{wire:?} +{:.1} MB", growth as f64 / 1024.0));
        if growth > ENDLESS_GROWTH_KB {
            l.failures.push(format!("endless text on {wire:?}: peak RSS grew {} MB", growth / 1024));
        }
        // Cut and corrupt the stream at every event position, until the
        // position is past the end (the mock then served the turn whole).
        for fault in ["cut_after_events", "malformed_after_events"] {
            let mut k = 0;
            loop {
                let out = l.case(&format!("{fault} {k}"), wire, once(json!({ fault: k })), "", Expect::Recovers)?;
                positions += 1;
                // Two requests: the fault never fired, the stream was shorter than k.
                if out.served == 2 || k > 200 {
                    break;
                }
                k += stride;
            }
        }
        l.case(
            "arguments that are not JSON",
            wire,
            json!([{"tool_calls": [{"name": "bash", "raw_arguments": "{\"command\": \"echo hi"}]}, done]),
            "",
            Expect::Recovers,
        )?;
        // A response may hold 8 MB + 512 bytes per max_tokens token (12 MB
        // for the mock's 8192; like a provider's, its events carry 20
        // characters of argument in 150-250 bytes): a 512 KB argument (16
        // times what 8192 tokens can hold) is written; a 4 MB one (some 30 MB
        // of stream) is refused at the cap as the provider's
        // fault (no model writes 4 MB within max_tokens: 8192 tokens are
        // some 32 KB), with memory bounded by the cap, not the argument.
        let write = |kb: usize| {
            let content = "x".repeat(kb * 1024);
            json!([{"tool_calls": [{"name": "write", "arguments": {"path": "big.txt", "content": content}}]}, done])
        };
        l.case("a 512 KB argument", wire, write(512), "", Expect::Recovers)?;
        let two_attempts = "[retry]\nmax_attempts = 2\nbase_delay_ms = 1\n";
        l.case("a 4 MB argument", wire, write(4 * 1024), two_attempts, Expect::FailsClearly)?;
    }
    // MCP faults, on one wire: the transport is the same for all three.
    let server = |name: &str, command: &Path, args: &[&str], extra: &str| {
        format!(
            "[mcp_servers.{name}]\ncommand = {}\nargs = {}\n{extra}\n",
            json!(command.display().to_string()),
            json!(args)
        )
    };
    let mcp = l.mcp_server.clone();
    let call = |tool: &str| json!([{"tool_calls": [{"name": tool, "arguments": {}}]}, {"text": "done"}]);
    l.case(
        "MCP server crashes mid-call",
        Wire::Anthropic,
        call("mcp__t__crash"),
        &server("t", &mcp, &["--tools", "2"], ""),
        Expect::Recovers,
    )?;
    l.case(
        "MCP tool hangs",
        Wire::Anthropic,
        call("mcp__t__hang"),
        &server("t", &mcp, &["--tools", "2"], "tool_timeout_sec = 1"),
        Expect::Recovers,
    )?;
    let sh = Path::new("/bin/sh");
    l.case(
        "MCP server speaks no JSON-RPC",
        Wire::Anthropic,
        call("mcp__t__echo"),
        &server("t", sh, &["-c", "read line; echo '{not json'; echo 'garbage'; sleep 30"], "startup_timeout_sec = 2"),
        Expect::Recovers,
    )?;
    let flood = format!("yes faults-loop-flood >&2 & exec {} --tools 2", mcp.display());
    l.case(
        "MCP server floods stderr",
        Wire::Anthropic,
        json!([{"tool_calls": [{"name": "mcp__t__echo", "arguments": {"text": "still here"}}]}, {"text": "done"}]),
        &server("t", sh, &["-c", &flood], ""),
        Expect::Recovers,
    )?;
    let left = crate::reliability::survivors("faults-loop-flood");
    if !left.is_empty() {
        l.failures.push(format!("the flooding server's children still run: {left:?}"));
    }
    println!(
        "faults: {} runs on 3 wires ({positions} cut or corrupted at {}) and 4 MCP faults: {} failed; slowest run {} \
         ms, largest peak RSS {:.1} MB (a plain run {:.1} MB)",
        l.cases,
        if stride == 1 { "every event position".to_string() } else { format!("every {stride}th event position") },
        l.failures.len(),
        l.worst_wall.as_millis(),
        l.worst_rss_kb as f64 / 1024.0,
        baseline_rss as f64 / 1024.0
    );
    println!("  endless text stream, peak RSS over the same run without it: {}", growths.join(", "));
    let pipes = crate::faults_pipes::pipe_cases(&l.bin)?;
    println!(
        "  broken pipes: stdout closed mid-run, stderr closed mid-run, stdout blocked then SIGTERM: {} failed",
        pipes.len()
    );
    l.failures.extend(pipes);
    let disk = session_cases(&l.bin)?;
    l.failures.extend(disk);
    for f in &l.failures {
        println!("  FAILED {f}");
    }
    if !l.failures.is_empty() {
        bail!("{} fault cases failed", l.failures.len());
    }
    Ok(())
}

/// The session cases (docs/reliability.md), their line printed; the failures.
fn session_cases(bin: &Path) -> anyhow::Result<Vec<String>> {
    let disk = crate::durability::disk_faults(bin)?;
    match &disk.skipped {
        Some(why) => println!(
            "faults: {} session cases (damaged newest sessions): {} failed; full-disk cases skipped: {why}",
            disk.cases,
            disk.failures.len()
        ),
        None => println!(
            "faults: {} session cases (-p on a full disk, ENOSPC mid-run then space back, a checkpoint on a full \
             disk, 5 kinds of damaged newest session): {} failed",
            disk.cases,
            disk.failures.len()
        ),
    }
    Ok(disk.failures)
}

/// `cargo xtask faults sessions`: the session cases alone.
pub fn session_faults(bin: &Path) -> anyhow::Result<()> {
    let failures = session_cases(bin)?;
    for f in &failures {
        println!("  FAILED {f}");
    }
    if !failures.is_empty() {
        bail!("{} session fault cases failed", failures.len());
    }
    Ok(())
}
