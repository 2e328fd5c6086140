//! Shared fixtures for tests that run the real `tern` binary against
//! `tern-mock-llm` over HTTP on 127.0.0.1, with TERN_HOME in a temp dir.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;
use tern_mock_llm::{MockServer, Script};

pub mod screen;

/// Which wire format the binary speaks to the mock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    OpenAi,
}

pub const BOTH: [Wire; 2] = [Wire::Anthropic, Wire::OpenAi];

/// A 1×1 PNG, base64.
pub const PIXEL: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

pub struct Harness {
    pub workspace: tempfile::TempDir,
    pub home: tempfile::TempDir,
    /// `HOME` ([`Harness::user_home`]).
    pub fake_home: tempfile::TempDir,
    pub server: MockServer,
    pub wire: Wire,
    /// `--permission-mode` passed to every run: `bypass` for tests about
    /// tools, `None` for tests about permissions (the default mode).
    pub mode: Option<&'static str>,
}

impl Harness {
    pub async fn new(wire: Wire, script: &str) -> Self {
        let script = Script::from_json(script).unwrap();
        let server = MockServer::start(script, None).await.unwrap();
        let home = tempfile::tempdir().unwrap();
        // Fast retries in tests; the policy itself is unit-tested.
        std::fs::write(home.path().join("config.toml"), "[retry]\nbase_delay_ms = 1\nmax_delay_ms = 20\n").unwrap();
        let fake_home = tempfile::tempdir().unwrap();
        Self { workspace: tempfile::tempdir().unwrap(), home, fake_home, server, wire, mode: Some("bypass") }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.workspace.path().join(rel)
    }

    /// TERN_HOME, and a fake HOME too: nothing of the machine's own
    /// `~/.claude` or `~/.gitconfig` leaks into a test. A `python3` on PATH
    /// may be a pyenv shim, which finds its versions under the real HOME:
    /// PYENV_ROOT says where.
    pub fn homes(&self) -> Vec<(&'static str, PathBuf)> {
        let mut env = vec![
            ("TERN_HOME", self.home.path().to_path_buf()),
            ("HOME", self.user_home()),
            (MARKER_VAR, PathBuf::from(run_marker())),
        ];
        if std::env::var_os("PYENV_ROOT").is_none()
            && let Some(pyenv) =
                std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")).filter(|p| p.is_dir())
        {
            env.push(("PYENV_ROOT", pyenv));
        }
        env
    }

    /// Run `program args…` (an Agent SDK script that drives `tern`) against
    /// the mock, with a clean environment, bounded; the JSON it printed last.
    pub async fn run_sdk_program(&self, program: &Path, args: &[&std::ffi::OsStr]) -> Value {
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args).env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default());
        for (k, v) in self.homes() {
            cmd.env(k, v);
        }
        cmd.env("ANTHROPIC_API_KEY", "test-key").env("ANTHROPIC_BASE_URL", self.server.url()).kill_on_drop(true);
        let out =
            tokio::time::timeout(std::time::Duration::from_secs(120), cmd.output()).await.expect("in time").unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        serde_json::from_str(stdout.lines().last().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
    }

    /// The `HOME` every run gets (`~/.claude` is under it): a temp folder of
    /// its own (TERN_HOME is not under it), never the machine's.
    pub fn user_home(&self) -> PathBuf {
        self.fake_home.path().to_path_buf()
    }

    /// A `tern` command aimed at the mock, with a clean environment.
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tern"));
        for var in ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"] {
            cmd.env_remove(var);
        }
        cmd.current_dir(self.workspace.path());
        for (k, v) in self.homes() {
            cmd.env(k, v);
        }
        match self.wire {
            Wire::Anthropic => {
                cmd.env("ANTHROPIC_API_KEY", "test-key")
                    .args(["--provider", "anthropic", "--base-url"])
                    .arg(self.server.url());
            }
            Wire::OpenAi => {
                cmd.env("OPENAI_API_KEY", "test-key")
                    .args(["--provider", "openai", "--base-url"])
                    .arg(self.server.openai_url());
            }
        }
        if let Some(mode) = self.mode {
            cmd.args(["--permission-mode", mode]);
        }
        cmd.args(["--model", "mock"]).args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.kill_on_drop(true);
        cmd
    }

    pub async fn run(&self, args: &[&str]) -> Output {
        let out = self.command(args).output().await.unwrap();
        Output {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Wait (bounded, 30 s) until the mock has received `n` requests.
    pub async fn wait_for_requests(&self, n: usize) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while self.server.requests().len() < n {
            assert!(std::time::Instant::now() < deadline, "the mock did not get {n} requests in 30 s");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Bodies of the requests the mock received, in order.
    pub fn bodies(&self) -> Vec<Value> {
        self.server.requests().into_iter().map(|r| r.body).collect()
    }

    /// The text of every tool result in a request body, in either wire format.
    pub fn tool_results(&self, body: &Value) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        for m in body["messages"].as_array().into_iter().flatten() {
            match self.wire {
                Wire::Anthropic => {
                    for b in m["content"].as_array().into_iter().flatten() {
                        if b["type"] == "tool_result" {
                            let text: String = b["content"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(|c| c["text"].as_str())
                                .collect();
                            out.push((text, b["is_error"].as_bool().unwrap_or(false)));
                        }
                    }
                }
                Wire::OpenAi => {
                    if m["role"] == "tool" {
                        let text = m["content"].as_str().unwrap_or_default().to_string();
                        let is_error = text.starts_with("Error");
                        out.push((text, is_error));
                    }
                }
            }
        }
        out
    }
}

#[derive(Debug)]
pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// stdout parsed as JSON lines; panics (test failure) on a bad line.
    pub fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
            .collect()
    }

    pub fn events_of_type(&self, ty: &str) -> Vec<Value> {
        self.json_lines().into_iter().filter(|v| v["type"] == ty).collect()
    }
}

/// The variable every process a test starts carries ([`run_marker`]), and
/// so does everything they start in turn.
pub const MARKER_VAR: &str = "TERN_E2E_RUN";

/// This test process's own value of [`MARKER_VAR`]: random, so the
/// processes of other tests and other people on the machine never match
/// (nextest runs each test in a process of its own).
pub fn run_marker() -> &'static str {
    static MARKER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MARKER.get_or_init(|| format!("{}-{:016x}", std::process::id(), fastrand::u64(..)))
}

/// Whether process `pid` carries this test process's marker in its
/// environment (`/proc/PID/environ`: root reads any process's, a user only
/// their own, which is all a test looks for).
pub fn is_ours(pid: u32) -> bool {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else { return false };
    let want = format!("{MARKER_VAR}={}", run_marker());
    environ.split(|b| *b == 0).any(|var| var == want.as_bytes())
}

/// Pids of the live processes this test started (by the marker in their
/// environment, never by another process's command line) whose own
/// command line contains `needle`.
pub fn processes_matching(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if !is_ours(pid) {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let cmd = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmd.contains(needle) {
            found.push(pid);
        }
    }
    found
}

/// Wait (bounded) until no process matches `needle`; returns the survivors.
pub async fn wait_gone(needle: &str) -> Vec<u32> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let left = processes_matching(needle);
        if left.is_empty() || std::time::Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Wait (bounded, 10 s) until a process matches `needle`; returns the matches.
pub async fn wait_present(needle: &str) -> Vec<u32> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let found = processes_matching(needle);
        if !found.is_empty() || std::time::Instant::now() > deadline {
            return found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The built-in tools a headless main agent outside plan mode gets, in their fixed order (`ask_user`
/// is for front ends with a person), then `tool_search`, behind which [`WAITING`] wait.
pub const BUILTINS: [&str; 9] = ["read", "write", "edit", "bash", "grep", "glob", "ls", "todo_write", "tool_search"];

/// The built-ins that wait behind `tool_search` by default, named in the system prompt (`skill`:
/// the bundled skill is always there).
pub const WAITING: [&str; 7] =
    ["task_output", "task_stop", "task_append", "task", "enter_plan_mode", "web_fetch", "skill"];

pub fn write(path: &Path, text: &str) {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).unwrap();
    }
    std::fs::write(path, text).unwrap();
}

/// The tool names of a request body, in either wire format.
pub fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().or(t["function"]["name"].as_str()).unwrap().to_string())
        .collect()
}

/// `v` without `cache_control` keys anywhere (the markers move to the latest turns by design).
pub fn without_cache_markers(v: &Value) -> Value {
    fn go(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("cache_control");
                m.values_mut().for_each(go);
            }
            Value::Array(a) => a.iter_mut().for_each(go),
            _ => {}
        }
    }
    let mut v = v.clone();
    go(&mut v);
    v
}
