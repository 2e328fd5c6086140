//! The broken-pipe and blocked-stdout cases of `cargo xtask faults`: the
//! reader of stdout, or of stderr, going away mid-run, and a SIGTERM while
//! stdout is full and unread. Each must end with its exit code
//! (docs/headless.md), in time, with the session file readable and nothing
//! left running.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::reliability::Mock;

/// How long a case may take to end once its pipe broke or its signal came.
const END_WITHIN: Duration = Duration::from_secs(15);

/// How a case disturbs the run.
#[derive(Clone, Copy, Debug)]
enum Disturbance {
    /// The reader of stdout goes away once the tool runs.
    StdoutClosed,
    /// The reader of stderr goes away once the tool runs (`--verbose`).
    StderrClosed,
    /// Stdout is never read (the answer is larger than a pipe holds); then SIGTERM.
    StdoutBlockedThenSigterm,
}

/// Run the three cases; the failures, each said.
pub(crate) fn pipe_cases(bin: &Path) -> anyhow::Result<Vec<String>> {
    let mut failures = Vec::new();
    for (n, case) in [Disturbance::StdoutClosed, Disturbance::StderrClosed, Disturbance::StdoutBlockedThenSigterm]
        .into_iter()
        .enumerate()
    {
        if let Err(why) = one(bin, case, n)? {
            failures.push(format!("{case:?}: {why}"));
        }
    }
    Ok(failures)
}

fn one(bin: &Path, case: Disturbance, n: usize) -> anyhow::Result<Result<(), String>> {
    let marker = format!("{}.{n}", 5000 + std::process::id() % 1000);
    let marker = format!("{marker}{:04}", fastrand::u16(..) % 10000);
    let turns = match case {
        Disturbance::StdoutBlockedThenSigterm => json!([{"text": "x".repeat(512 * 1024)}]),
        _ => json!([
            {"tool_calls": [{"name": "bash", "arguments": {"command": format!("touch started; sleep {marker}")}}]},
            {"text": "unreachable"}
        ]),
    };
    let mock = Mock::start(&json!({ "turns": turns }))?;
    let home = tempfile::tempdir()?;
    std::fs::write(home.path().join("config.toml"), "[retry]\nbase_delay_ms = 1\n")?;
    let work = tempfile::tempdir()?;
    let (reader, writer) = std::io::pipe()?;
    let mut cmd = Command::new(bin);
    for var in ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"] {
        cmd.env_remove(var);
    }
    cmd.env("ANTHROPIC_API_KEY", "faults")
        .env("TERN_HOME", home.path())
        .env("HOME", home.path())
        .current_dir(work.path())
        .args(["-p", "go", "--verbose", "--model", "mock", "--permission-mode", "bypass", "--provider", "anthropic"])
        .arg("--base-url")
        .arg(mock.server.url())
        .stdin(Stdio::null())
        // What it starts inherits this: the check for leftovers reads environments, not command lines.
        .env(MARKER_VAR, &marker);
    match case {
        Disturbance::StdoutClosed => cmd.stdout(writer).stderr(Stdio::null()),
        Disturbance::StderrClosed => cmd.stdout(Stdio::null()).stderr(writer),
        Disturbance::StdoutBlockedThenSigterm => {
            cmd.args(["--output-format", "stream-json"]).stdout(writer).stderr(Stdio::null())
        }
    };
    let mut child = cmd.spawn()?;
    drop(cmd);
    let pid = child.id() as libc::pid_t;
    let deadline = Instant::now() + Duration::from_secs(20);
    let ready = || match case {
        Disturbance::StdoutBlockedThenSigterm => !mock.server.requests().is_empty(),
        _ => work.path().join("started").exists(),
    };
    while !ready() {
        if Instant::now() > deadline {
            let _ = child.kill();
            return Ok(Err("the run never reached the point under test".into()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let expected = match case {
        Disturbance::StdoutBlockedThenSigterm => {
            // SAFETY: SIGTERM to our own child.
            unsafe { libc::kill(pid, libc::SIGTERM) };
            143
        }
        _ => {
            drop(reader);
            141
        }
    };
    let since = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait()? {
            break status.code();
        }
        if since.elapsed() > END_WITHIN {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(Err(format!("still running {} s after", END_WITHIN.as_secs())));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if code != Some(expected) {
        return Ok(Err(format!("exit {code:?}, expected {expected} (101 is a panic)")));
    }
    if let Err(e) = crate::faults::sessions_readable(home.path()) {
        return Ok(Err(format!("session file: {e:#}")));
    }
    if !all_gone(&format!("{MARKER_VAR}={marker}")) {
        return Ok(Err("a process it started still runs".into()));
    }
    Ok(Ok(()))
}

/// The variable that marks the processes of one case.
const MARKER_VAR: &str = "TERN_FAULTS_CASE";

/// Whether every process with `var` (`NAME=value`) in its environment is
/// gone (bounded wait: they may be dying).
fn all_gone(var: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let any = std::fs::read_dir("/proc").into_iter().flatten().flatten().any(|e| {
            std::fs::read(e.path().join("environ")).is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == var.as_bytes()))
        });
        if !any {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
