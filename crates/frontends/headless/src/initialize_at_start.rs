//! What of an `initialize` request must hold before the session starts.
//!
//! The Claude Agent SDK for TypeScript sends part of its options in
//! `initialize` instead of as flags: its in-process MCP servers
//! (`sdkMcpServers`, where the Python SDK passes `"type": "sdk"` servers in
//! `--mcp-config`) and its system prompt (`systemPrompt`,
//! `appendSystemPrompt`, where the Python SDK passes `--system-prompt`).
//! With `--await-initialize` it sends its other MCP servers here too
//! (`mcpServers`, the `.mcp.json` shape).
//! These shape the session as it starts (the servers' tools are in the first
//! request), so when `initialize` is the first stdin line, tern reads it
//! before it starts the session and turns these fields into the
//! [`Overrides`] the flags would have set. The request itself is then
//! handled as usual (hooks, agents, the answer); only the fields taken here
//! are not named as "not applied".

use std::path::PathBuf;

use serde_json::{Value, json};
use tern_runtime::Overrides;

/// The SDK's marker between the cacheable and the per-session blocks of a
/// system prompt given as a list; not text for the model.
const DYNAMIC_BOUNDARY: &str = "__SYSTEM_PROMPT_DYNAMIC_BOUNDARY__";

/// The `initialize` whose fields were taken before the session started.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct StartInit {
    /// Its `request_id`, or None when the first line was no `initialize`.
    request_id: Option<Value>,
    /// The fields taken (Claude Code's names).
    pub(crate) applied: Vec<&'static str>,
}

impl StartInit {
    /// Whether the `initialize` with this id is the one whose fields were taken.
    pub(crate) fn is(&self, request_id: &Value) -> bool {
        self.request_id.as_ref() == Some(request_id)
    }
}

/// Read the first stdin `line`; when it is an `initialize` request, set in
/// `overrides` what of it must hold from the start. A flag given on the
/// command line wins over the same option in `initialize` (which is then
/// named as not applied, as any other field tern does not take).
pub(crate) fn take(line: &str, overrides: &mut Overrides) -> StartInit {
    // Only a line that can be one is parsed here (a user line may be 64 MiB).
    if !line.contains("initialize") {
        return StartInit::default();
    }
    let Ok(v) = serde_json::from_str::<Value>(line) else { return StartInit::default() };
    let request = &v["request"];
    if v["type"] != "control_request" || request["subtype"] != "initialize" {
        return StartInit::default();
    }
    let mut applied = Vec::new();
    if let Some(names) = request["sdkMcpServers"].as_array() {
        let servers: serde_json::Map<String, Value> =
            names.iter().filter_map(Value::as_str).map(|name| (name.to_string(), json!({"type": "sdk"}))).collect();
        if !servers.is_empty() {
            // `--mcp-config` takes the JSON itself as well as a file.
            overrides.mcp_config.push(PathBuf::from(json!({"mcpServers": servers}).to_string()));
        }
        applied.push("sdkMcpServers");
        // A cache of the servers' handshake that a CLI may ignore: tern
        // does the handshake itself, through `mcp_message`.
        applied.push("sdkMcpServerManifests");
    }
    // The SDK's other MCP servers (stdio, HTTP), sent here instead of `--mcp-config` (`--await-initialize`).
    if let Some(servers) = request["mcpServers"].as_object().filter(|s| !s.is_empty()) {
        overrides.mcp_config.push(PathBuf::from(json!({"mcpServers": servers}).to_string()));
        applied.push("mcpServers");
    }
    if overrides.system_prompt.is_none()
        && let Some(prompt) = system_prompt(&request["systemPrompt"])
    {
        overrides.system_prompt = Some(prompt);
        applied.push("systemPrompt");
    }
    if overrides.append_system_prompt.is_none()
        && let Some(append) = request["appendSystemPrompt"].as_str()
    {
        overrides.append_system_prompt = Some(append.to_string());
        applied.push("appendSystemPrompt");
    }
    StartInit { request_id: Some(v["request_id"].clone()), applied }
}

/// `systemPrompt` as the SDK sends it (a list of blocks, or one string):
/// the blocks joined by blank lines, without the cache marker.
fn system_prompt(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let blocks: Option<Vec<&str>> = blocks.iter().map(Value::as_str).collect();
            Some(blocks?.into_iter().filter(|b| *b != DYNAMIC_BOUNDARY).collect::<Vec<_>>().join("\n\n"))
        }
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn initialize(request: Value) -> String {
        json!({"type": "control_request", "request_id": "r1", "request": request}).to_string()
    }

    #[test]
    fn the_typescript_sdks_start_fields_become_overrides() {
        let mut o = Overrides::default();
        let line = initialize(json!({
            "subtype": "initialize",
            "sdkMcpServers": ["calc", "notes"],
            "sdkMcpServerManifests": {"calc": {"initializeResult": {}}},
            "systemPrompt": ["You are a release bot.", DYNAMIC_BOUNDARY, "Today is Monday."],
            "appendSystemPrompt": "Be brief.",
            "hooks": {"PreToolUse": []},
        }));
        let start = take(&line, &mut o);
        assert_eq!(start.applied, ["sdkMcpServers", "sdkMcpServerManifests", "systemPrompt", "appendSystemPrompt"]);
        assert!(start.is(&json!("r1")) && !start.is(&json!("r2")));
        let config: Value = serde_json::from_str(o.mcp_config[0].to_str().unwrap()).unwrap();
        assert_eq!(
            config,
            json!({"mcpServers": {
                "calc": {"type": "sdk"},
                "notes": {"type": "sdk"},
            }})
        );
        assert_eq!(o.system_prompt.as_deref(), Some("You are a release bot.\n\nToday is Monday."));
        assert_eq!(o.append_system_prompt.as_deref(), Some("Be brief."));
        // What the SDK sends by default: an empty prompt, tern's instructions left out.
        let mut o = Overrides::default();
        take(&initialize(json!({"subtype": "initialize", "systemPrompt": [""]})), &mut o);
        assert_eq!(o.system_prompt.as_deref(), Some(""));
        assert!(o.mcp_config.is_empty());
        // `--await-initialize`: the other servers come here, in `.mcp.json`'s shape.
        let mut o = Overrides::default();
        let servers = json!({"fs": {"command": "fs-server", "args": ["/w"]}});
        let start = take(&initialize(json!({"subtype": "initialize", "mcpServers": servers})), &mut o);
        assert_eq!(start.applied, ["mcpServers"]);
        let config: Value = serde_json::from_str(o.mcp_config[0].to_str().unwrap()).unwrap();
        assert_eq!(config, json!({"mcpServers": servers}));
    }

    #[test]
    fn flags_win_and_other_lines_change_nothing() {
        let mut o = Overrides { system_prompt: Some("from the flag".into()), ..Overrides::default() };
        let start = take(&initialize(json!({"subtype": "initialize", "systemPrompt": ["sent"]})), &mut o);
        assert!(start.applied.is_empty());
        assert_eq!(o.system_prompt.as_deref(), Some("from the flag"));
        for line in [
            r#"{"type":"user","message":{"role":"user","content":"hi"}}"#.to_string(),
            initialize(json!({"subtype": "interrupt"})),
            "not json".to_string(),
        ] {
            let mut o = Overrides::default();
            assert_eq!(take(&line, &mut o), StartInit::default(), "{line}");
            assert!(o.mcp_config.is_empty() && o.system_prompt.is_none());
        }
        // A list with something else than text is not a prompt tern can read: left to be named.
        let mut o = Overrides::default();
        take(&initialize(json!({"subtype": "initialize", "systemPrompt": [1]})), &mut o);
        assert!(o.system_prompt.is_none());
    }
}
