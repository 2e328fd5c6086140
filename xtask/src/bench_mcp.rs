//! Catalog and MCP benchmarks through the release binary:
//! - the first request's size with 0, 50 and 200 configured MCP tools, both
//!   deferred behind `tool_search` and inline, next to the size with none;
//! - time from start to the first model request with 5 stdio servers, next
//!   to the slowest server's own start (spawn → `tools/list` answered by a
//!   minimal client) and tern's own time with no server.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::bench::{Row, ms};
use crate::measure;

const RUNS: usize = 7;
const SERVER_DELAY_MS: u64 = 150;

fn mock(rt: &tokio::runtime::Runtime) -> anyhow::Result<tern_mock_llm::MockServer> {
    let script = tern_mock_llm::Script::from_json(r#"{"turns":[{"text":"ok"}]}"#).map_err(anyhow::Error::msg)?;
    rt.block_on(tern_mock_llm::MockServer::start(script, None))
}

fn server_toml(server_bin: &Path, name: &str, args: &[String], extra: &str) -> String {
    format!(
        "\n[mcp_servers.{name}]\ncommand = {:?}\nargs = {}\n{extra}\n",
        server_bin.display().to_string(),
        serde_json::to_string(args).unwrap_or_default()
    )
}

/// One `tern -p` run; returns (spawn → first request received, first request body bytes).
fn one_run(
    tern: &Path,
    server: &tern_mock_llm::MockServer,
    home: &Path,
    work: &Path,
    config: &str,
) -> anyhow::Result<(Duration, usize)> {
    std::fs::write(home.join("config.toml"), config)?;
    let before = server.requests().len();
    let start = Instant::now();
    measure::run(
        Command::new(tern)
            .args(["-p", "hi", "--model", "mock", "--provider", "anthropic", "--base-url"])
            .arg(server.url())
            .env("ANTHROPIC_API_KEY", "bench")
            .env("TERN_HOME", home)
            .current_dir(work),
    )?;
    let req = server.requests().into_iter().nth(before).ok_or_else(|| anyhow::anyhow!("no request arrived"))?;
    Ok((req.received.duration_since(start), req.body.to_string().len()))
}

/// Spawn one test server, initialize it and list its tools; the time it took.
fn server_own_start(server_bin: &Path) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let mut child = Command::new(server_bin)
        .args(["--tools", "20", "--start-delay-ms", &SERVER_DELAY_MS.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or_else(|| anyhow::anyhow!("no stdin"))?;
    let stdout = child.stdout.take().ok_or_else(|| anyhow::anyhow!("no stdout"))?;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
    writeln!(stdin, "{init}")?;
    let mut lines = BufReader::new(stdout).lines();
    loop {
        let line = lines.next().ok_or_else(|| anyhow::anyhow!("server closed"))??;
        if line.contains("\"id\":1") {
            break;
        }
    }
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))?;
    loop {
        let line = lines.next().ok_or_else(|| anyhow::anyhow!("server closed"))??;
        if line.contains("\"id\":2") {
            break;
        }
    }
    let took = start.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    Ok(took)
}

pub fn rows(tern: &Path, server_bin: &Path) -> anyhow::Result<Vec<Row>> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let server = mock(&rt)?;
    let home = std::env::temp_dir().join(format!("tern-bench-mcp-home-{}", std::process::id()));
    let work = std::env::temp_dir().join(format!("tern-bench-mcp-work-{}", std::process::id()));
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(&work)?;
    let mut rows = Vec::new();

    // First-request bytes. The test server adds 6 control tools to its N generated ones.
    let (_, none) = one_run(tern, &server, &home, &work, "")?;
    for generated in [44usize, 194] {
        let args = vec!["--tools".to_string(), generated.to_string()];
        let deferred = format!("[tool_disclosure]\nthreshold_pct = 0.0\n{}", server_toml(server_bin, "big", &args, ""));
        let inline = server_toml(server_bin, "big", &args, "always_load = true");
        let (_, d) = one_run(tern, &server, &home, &work, &deferred)?;
        let (_, i) = one_run(tern, &server, &home, &work, &inline)?;
        rows.push(Row {
            what: format!("first request with {} MCP tools, deferred", generated + 6),
            ours: format!("{d} B (+{} B)", d as i64 - none as i64),
            baseline: format!("no MCP: {none} B · same tools inline: {i} B (+{} B)", i as i64 - none as i64),
            target: "≤ +2 KB at 200".into(),
        });
    }

    // Start to first request with 5 servers, each taking SERVER_DELAY_MS to start.
    let mut own = Vec::new();
    for _ in 0..RUNS {
        own.push(server_own_start(server_bin)?);
    }
    let slowest = own.iter().copied().max().unwrap_or_default();
    let mut five = Vec::new();
    let mut zero = Vec::new();
    let config: String = (0..5)
        .map(|i| {
            let args = vec!["--tools".into(), "20".into(), "--start-delay-ms".into(), SERVER_DELAY_MS.to_string()];
            server_toml(server_bin, &format!("s{i}"), &args, "")
        })
        .collect();
    for _ in 0..RUNS {
        five.push(one_run(tern, &server, &home, &work, &config)?.0);
        zero.push(one_run(tern, &server, &home, &work, "")?.0);
    }
    let (five, zero) = (measure::median(five), measure::median(zero));
    rows.push(Row {
        what: format!("start → first model request, 5 stdio MCP servers ({SERVER_DELAY_MS} ms start each)"),
        ours: ms(five),
        baseline: format!(
            "slowest of {RUNS} solo server starts {} · tern with no server {} · budget {}",
            ms(slowest),
            ms(zero),
            ms(slowest + Duration::from_millis(20))
        ),
        target: "≤ slowest server + 20 ms".into(),
    });
    let _ = std::fs::remove_dir_all(&home);
    let _ = std::fs::remove_dir_all(&work);
    Ok(rows)
}
