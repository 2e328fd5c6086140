//! The first request's size per front end (issue 30): `tern -p hi`
//! (headless), the TUI (`hi` typed and sent) and ACP (`session/prompt`
//! "hi"), each next to the same front end with every built-in inline
//! (`[tool_disclosure] defer_builtins = false`, the catalog before rarely
//! used built-ins waited), measured in the same run; plus `--tools minimal`.
//! Bytes are the request body the mock model received, as JSON.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;

use crate::bench::Row;
use crate::bench_tui::Pty;

/// How a front end is driven to its first request.
#[derive(Clone, Copy)]
enum FrontEnd {
    Headless,
    Tui,
    Acp,
}

struct Bench {
    server: tern_mock_llm::MockServer,
    home: std::path::PathBuf,
    work: std::path::PathBuf,
    _rt: tokio::runtime::Runtime,
}

impl Bench {
    fn new() -> anyhow::Result<Self> {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
        let script = tern_mock_llm::Script::from_json(r#"{"turns":[{"text":"ok"}]}"#).map_err(anyhow::Error::msg)?;
        let server = rt.block_on(tern_mock_llm::MockServer::start(script, None))?;
        let id = std::process::id();
        let home = std::env::temp_dir().join(format!("tern-bench-first-home-{id}"));
        let work = std::env::temp_dir().join(format!("tern-bench-first-work-{id}"));
        std::fs::create_dir_all(&home)?;
        std::fs::create_dir_all(&work)?;
        Ok(Self { server, home, work, _rt: rt })
    }

    /// The body bytes of the first request `front_end` sends with this config.
    fn first_request(&self, tern: &Path, front_end: FrontEnd, config: &str, extra: &[&str]) -> anyhow::Result<usize> {
        std::fs::write(self.home.join("config.toml"), config)?;
        let before = self.server.requests().len();
        let common = ["--model", "mock", "--provider", "anthropic", "--base-url"];
        match front_end {
            FrontEnd::Headless => {
                crate::measure::run(
                    Command::new(tern)
                        .args(["-p", "hi"])
                        .args(common)
                        .arg(self.server.url())
                        .args(extra)
                        .env("ANTHROPIC_API_KEY", "bench")
                        .env("TERN_HOME", &self.home)
                        .current_dir(&self.work),
                )?;
            }
            FrontEnd::Tui => {
                let mut cmd = portable_pty::CommandBuilder::new(tern);
                cmd.args(common);
                cmd.arg(self.server.url());
                cmd.args(extra);
                cmd.env("TERN_HOME", &self.home);
                cmd.env("ANTHROPIC_API_KEY", "bench");
                cmd.env("TERM", "xterm-256color");
                cmd.cwd(&self.work);
                let mut tui = Pty::spawn(cmd)?;
                tui.wait_for(b"Ask tern", Duration::from_secs(20))?;
                tui.type_bytes(b"hi\r")?;
                self.wait_for_request(before)?;
                tui.kill();
            }
            FrontEnd::Acp => {
                let mut child = Command::new(tern)
                    .arg("acp")
                    .args(common)
                    .arg(self.server.url())
                    .args(extra)
                    .env("ANTHROPIC_API_KEY", "bench")
                    .env("TERN_HOME", &self.home)
                    .current_dir(&self.work)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()?;
                let mut stdin = child.stdin.take().context("no stdin")?;
                let mut lines = BufReader::new(child.stdout.take().context("no stdout")?).lines();
                let mut ask = |id: u64, method: &str, params: serde_json::Value| -> anyhow::Result<serde_json::Value> {
                    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
                    loop {
                        let line = lines.next().context("tern acp closed")??;
                        let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
                        if v["id"] == id {
                            return Ok(v);
                        }
                    }
                };
                ask(1, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}))?;
                let session = ask(2, "session/new", json!({"cwd": self.work, "mcpServers": []}))?;
                let id = session["result"]["sessionId"].clone();
                ask(3, "session/prompt", json!({"sessionId": id, "prompt": [{"type": "text", "text": "hi"}]}))?;
                drop(stdin);
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        let req = self.server.requests().into_iter().nth(before).context("no request arrived")?;
        Ok(req.body.to_string().len())
    }

    fn wait_for_request(&self, before: usize) -> anyhow::Result<()> {
        let start = Instant::now();
        while self.server.requests().len() <= before {
            anyhow::ensure!(start.elapsed() < Duration::from_secs(20), "the TUI sent no request");
            // Polling the mock's log, not synchronising the program under test.
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

pub fn rows(tern: &Path) -> anyhow::Result<Vec<Row>> {
    let bench = Bench::new()?;
    let inline = "[tool_disclosure]\ndefer_builtins = false\n";
    let mut rows = Vec::new();
    for (name, front_end) in [("headless `-p hi`", FrontEnd::Headless), ("TUI", FrontEnd::Tui), ("ACP", FrontEnd::Acp)]
    {
        let ours = bench.first_request(tern, front_end, "", &[])?;
        let all = bench.first_request(tern, front_end, inline, &[])?;
        rows.push(Row {
            what: format!("first request, {name}, defaults"),
            ours: format!("{ours} B"),
            baseline: format!("every built-in inline: {all} B"),
            target: "≤ 8192 B".into(),
        });
    }
    let minimal = bench.first_request(tern, FrontEnd::Headless, "", &["--tools", "minimal"])?;
    let defaults = bench.first_request(tern, FrontEnd::Headless, "", &[])?;
    rows.push(Row {
        what: "first request, headless `-p hi --tools minimal`".into(),
        ours: format!("{minimal} B"),
        baseline: format!("defaults: {defaults} B"),
        target: "reported".into(),
    });
    let _ = std::fs::remove_dir_all(&bench.home);
    let _ = std::fs::remove_dir_all(&bench.work);
    Ok(rows)
}

/// `cargo xtask bench first-request`: only these rows (sizes do not depend
/// on the build profile, so a debug build is enough).
pub fn print() -> anyhow::Result<()> {
    eprintln!("bench: building…");
    let dir = crate::cargo_build(false, &["tern-cli"])?;
    crate::bench::print_rows(&rows(&dir.join("tern"))?);
    Ok(())
}
