//! Shared helpers for tern-mcp's integration tests.
#![allow(dead_code)]

use std::{path::PathBuf, sync::Arc, time::Duration};

use serde_json::Value;
use tern_agent_loop::{ToolContext, ToolError, ToolOutput};
use tern_mcp::{McpManager, McpTool, ServerConfig, ServerStatus};
use tern_protocol::ToolResultContent;
use tokio_util::sync::CancellationToken;

/// `tern-test-mcp` as a stdio server called `name`.
pub fn test_server(name: &str, args: &[&str]) -> ServerConfig {
    let path = tern_mcp::testing::test_server_path();
    ServerConfig::stdio(name, path.to_string_lossy(), args.iter().copied())
}

/// A reference server installed by npm under `support/mcp-servers`.
pub fn reference_server(bin: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../support/mcp-servers/node_modules/.bin").join(bin);
    assert!(path.exists(), "{} is missing: run `npm ci --prefix support/mcp-servers`", path.display());
    path
}

/// The tool called `name`.
pub fn find<'a>(tools: &'a [McpTool], name: &str) -> &'a McpTool {
    tools.iter().find(|t| t.tool.name() == name).unwrap_or_else(|| {
        let names: Vec<&str> = tools.iter().map(|t| t.tool.name()).collect();
        panic!("no tool `{name}` among {names:?}")
    })
}

/// Run the tool called `name` with `input`.
pub async fn call(manager: &McpManager, name: &str, input: Value) -> Result<ToolOutput, ToolError> {
    call_with(manager, name, input, CancellationToken::new()).await
}

/// Run the tool called `name` with `input` and a cancel token.
pub async fn call_with(
    manager: &McpManager,
    name: &str,
    input: Value,
    cancel: CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let tools = manager.tools();
    let tool = find(&tools, name).tool.clone();
    let ctx = ToolContext { call_id: "call_1".into(), tool_name: name.into(), confinement: None, judged: None };
    tool.implementation.execute(ctx, input, cancel, Arc::new(|_| {})).await
}

/// All text blocks of a result, joined by newlines.
pub fn text(out: &ToolOutput) -> String {
    out.content
        .iter()
        .filter_map(|c| match c {
            ToolResultContent::Text { text } => Some(text.as_str()),
            ToolResultContent::Image { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The status of server `name`.
pub fn status(manager: &McpManager, name: &str) -> ServerStatus {
    manager.statuses().into_iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no server `{name}`"))
}

/// Wait (bounded) until `f` holds, checking every few milliseconds.
pub async fn eventually(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Processes whose command line contains `needle`.
pub fn processes_with(needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let state = stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next().map(str::to_string))?;
            if state == "Z" || state == "X" || pid == std::process::id() {
                return None;
            }
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            String::from_utf8_lossy(&cmdline).contains(needle).then_some(pid)
        })
        .collect()
}
