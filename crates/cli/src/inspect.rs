//! Inspection subcommands: `tern tools` and `tern mcp list`. They load the
//! same config and start the same MCP servers a run would, send nothing to
//! the model, and open no session log.

use std::io::Write;

use serde_json::json;
use tern_runtime::Runtime;

use crate::exit;

fn with_runtime(mut overrides: tern_runtime::Overrides, f: impl AsyncFnOnce(&Runtime) -> u8) -> u8 {
    overrides.ephemeral = true;
    crate::with_runtime(overrides, f)
}

fn print(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// `tern tools [--explain] [--json]`: the catalog as the next request would
/// carry it.
pub fn tools(overrides: tern_runtime::Overrides, explain: bool, as_json: bool) -> u8 {
    with_runtime(overrides, async |runtime| {
        let assembly = runtime.assemble_catalog();
        if as_json {
            let mut report = serde_json::to_value(assembly.report()).unwrap_or_default();
            report["model"] = json!(runtime.model());
            print(&format!("{report:#}\n"));
        } else {
            print(&format!("model: {}\n", runtime.model()));
            print(&assembly.render_text(explain));
            for s in runtime.mcp_servers().iter().filter(|s| s.state != "connected") {
                print(&format!(
                    "MCP server `{}` is {}{}\n",
                    s.name,
                    s.state,
                    s.detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default()
                ));
            }
        }
        exit::SUCCESS
    })
}

/// `tern mcp list [--json]`: every configured server with its state and
/// tool count.
pub fn mcp_list(overrides: tern_runtime::Overrides, as_json: bool) -> u8 {
    with_runtime(overrides, async |runtime| {
        let servers = runtime.mcp_servers();
        if as_json {
            print(&format!("{:#}\n", json!(servers)));
            return exit::SUCCESS;
        }
        if servers.is_empty() {
            print("No MCP servers configured. Add [mcp_servers.NAME] to config, a .mcp.json, or --mcp-config FILE.\n");
            return exit::SUCCESS;
        }
        let width = servers.iter().map(|s| s.name.len()).max().unwrap_or(4).max(4);
        let mut text = format!("{:width$}  {:11}  {:>5}  {}\n", "NAME", "STATE", "TOOLS", "TRANSPORT / DETAIL");
        for s in &servers {
            let detail = match &s.detail {
                Some(d) => d.clone(),
                None => s.transport.clone(),
            };
            text.push_str(&format!("{:width$}  {:11}  {:>5}  {}\n", s.name, s.state, s.tool_count, detail));
        }
        print(&text);
        if servers.iter().any(|s| s.state == "failed") { exit::FAILED } else { exit::SUCCESS }
    })
}
