//! The Claude Agent SDK for TypeScript (`@anthropic-ai/claude-agent-sdk` on
//! npm) drives the real `tern` as its CLI (`pathToClaudeCodeExecutable`)
//! against the mock, through support/ts-sdk/contract.mjs: a one-tool
//! `query()` with its bash call asked through `canUseTool`, a three-turn
//! session with control requests between the turns and an `interrupt()`, a
//! PreToolUse hook callback, an agent from the `agents` option, an
//! in-process MCP server (`createSdkMcpServer`) and a stdio one
//! (`mcpServers`, as a flag). `cargo xtask ci` installs
//! the pinned SDK into support/ts-sdk/node_modules; where node or the
//! package is missing, the test is skipped with the reason.

use crate::common;

use std::path::PathBuf;

use common::{Harness, Wire};
use serde_json::{Value, json};

fn sdk_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../support/ts-sdk")
}

/// Whether node and the SDK are there; when not, says why the test is skipped.
fn sdk_installed() -> bool {
    let package = sdk_dir().join("node_modules/@anthropic-ai/claude-agent-sdk/package.json");
    if !package.exists() {
        eprintln!(
            "skipped: the Claude Agent SDK for TypeScript is not installed in {} (`cargo xtask ci` installs it with `npm ci`)",
            sdk_dir().join("node_modules").display()
        );
        return false;
    }
    let node = std::process::Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: `node` is not on PATH (the Claude Agent SDK for TypeScript runs on Node.js 18+)");
        return false;
    }
    true
}

/// Run `contract.mjs SCENARIO` with the SDK against `h`'s mock; what it printed last, parsed.
async fn run_script(scenario: &str, h: &Harness) -> Value {
    let script = sdk_dir().join("contract.mjs");
    let server = crate::mcp::test_server();
    let tern = PathBuf::from(env!("CARGO_BIN_EXE_tern"));
    let args =
        [script.as_os_str(), scenario.as_ref(), tern.as_os_str(), h.workspace.path().as_os_str(), server.as_os_str()];
    h.run_sdk_program(std::path::Path::new("node"), &args).await
}

#[tokio::test]
async fn the_typescript_agent_sdk_runs_tern() {
    if !sdk_installed() {
        return;
    }
    let script = r#"{"turns":[
        {"when_request_contains":"touch after-sleep","text":"the sleep was not stopped"},
        {"when_request_contains":"third question","tool_calls":[{"name":"bash","arguments":{"command":"sleep 30 && touch after-sleep"}}]},
        {"when_request_contains":"second question","text":"second answer"},
        {"when_request_contains":"first question","text":"first answer"},
        {"when_request_contains":"made-by-sdk","text":"created it"},
        {"when_request_contains":"create the file","tool_calls":[{"name":"bash","arguments":{"command":"touch made-by-sdk"}}]}
    ]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    let seen = run_script("conversation", &h).await;
    // The bash call was put to `canUseTool`, under Claude Code's name, allowed, and ran.
    assert_eq!(seen["asked"][0]["tool"], "Bash", "{seen}");
    assert_eq!(seen["asked"][0]["input"]["command"], "touch made-by-sdk");
    assert!(h.path("made-by-sdk").exists());
    // The SDK passed every message of the conversation on.
    let query = seen["query"].as_array().unwrap();
    assert_eq!(query[0], json!({"system": "init"}), "{seen}");
    assert_eq!(query[1]["assistant"][0]["tool_use"], "Bash", "{seen}");
    assert_eq!(query[1]["model"], "mock");
    assert_eq!(seen["asked"][0]["tool_use_id"], query[1]["assistant"][0]["id"]);
    assert_eq!(query[2]["user"][0]["tool_result"], query[1]["assistant"][0]["id"]);
    assert_eq!(query[2]["user"][0]["is_error"], false);
    assert_eq!(query[3]["assistant"][0]["text"], "created it");
    let results = seen["results"].as_array().unwrap();
    assert_eq!(results.len(), 4, "{seen}");
    assert_eq!(results[0]["result"], "created it");
    assert_eq!(results[0]["num_turns"], 2);
    // Three turns of one session: one session id, history kept.
    assert_eq!(results[1]["result"], "first answer");
    assert_eq!(results[2]["result"], "second answer");
    assert_eq!(results[1]["session_id"], results[2]["session_id"]);
    assert_eq!(results[2]["session_id"], results[3]["session_id"]);
    assert_ne!(results[0]["session_id"], results[1]["session_id"]);
    let bodies = h.bodies();
    let last = bodies.last().unwrap();
    assert!(last.to_string().contains("first answer") && last.to_string().contains("second answer"));
    // The control requests between the first two turns, as the SDK's methods return them.
    let control = &seen["control"];
    assert!(control["init_models"].as_array().is_some_and(|m| !m.is_empty() && m.iter().all(Value::is_string)));
    // The in-process server given in the options is up before the first prompt.
    assert_eq!(control["mcp_status"], json!([{"name": "calc", "status": "connected"}]), "{seen}");
    assert_eq!(control["context"]["model"], "mock", "{seen}");
    assert_eq!(control["context"]["hasCategories"], true, "{seen}");
    // setPermissionMode: answered, tern printed the change, and the SDK passed it on.
    assert_eq!(control["set_permission_mode"], json!({"mode": "acceptEdits"}), "{seen}");
    assert!(
        seen["session"].as_array().unwrap().contains(&json!({"system": "status", "permissionMode": "acceptEdits"}))
    );
    // setModel: the later turns went to the new model.
    assert_eq!(last["model"], "mock-two", "{seen}");
    // interrupt(), sent once the third turn's command was allowed: the command was killed before
    // it touched anything, the turn ended as aborted, and the model was not asked again.
    assert_eq!(seen["asked"][1]["input"]["command"], "sleep 30 && touch after-sleep", "{seen}");
    assert_eq!(results[3]["subtype"], "error_during_execution", "{seen}");
    assert_eq!(results[3]["terminal_reason"], "aborted", "{seen}");
    assert_eq!(results[3]["num_turns"], 1, "{seen}");
    assert!(!h.path("after-sleep").exists());
    assert!(!bodies.iter().any(|b| b.to_string().contains("touch after-sleep")), "asked again after the interrupt");
}

#[tokio::test]
async fn typescript_sdk_hooks_agents_and_mcp_servers_reach_tern() {
    if !sdk_installed() {
        return;
    }
    let script = r#"{"turns":[
        {"when_request_contains":"tool_0 ok: value=x","text":"the stdio server answered"},
        {"when_request_contains":"use-the-stdio-server","tool_calls":[{"name":"mcp__stdio__tool_0","arguments":{"value":"x"}}]},
        {"when_request_contains":"no rm from the sdk hook","text":"the hook stopped it"},
        {"when_request_contains":"hooked-prompt","tool_calls":[{"name":"bash","arguments":{"command":"rm -rf important"}}]},
        {"when_request_contains":"looks fine to me","text":"reviewed"},
        {"when_request_contains":"You review the code, carefully.","text":"looks fine to me"},
        {"when_request_contains":"delegate-it","tool_calls":[{"name":"task","arguments":{"description":"review","prompt":"review-this","subagent_type":"reviewer"}}]},
        {"when_request_contains":"Unknown tool","text":"the calculator was not there"},
        {"when_request_contains":"sum is 5","text":"five"},
        {"when_request_contains":"use-the-calculator","tool_calls":[{"name":"mcp__calc__add","arguments":{"a":2,"b":3}}]}
    ]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    std::fs::create_dir_all(h.path("important")).unwrap();
    let seen = run_script("surface", &h).await;
    // The PreToolUse callback was asked, in Claude Code's words, and its deny held in bypass mode.
    let asked = &seen["hook_inputs"][0];
    assert_eq!(asked["event"], "PreToolUse", "{seen}");
    assert_eq!(asked["tool"], "Bash");
    assert_eq!(asked["command"], "rm -rf important");
    assert_eq!(asked["mode"], "bypassPermissions");
    assert!(asked["tool_use_id"].is_string(), "{seen}");
    assert!(h.path("important").exists(), "the denied rm ran");
    assert_eq!(seen["results"][0]["result"], "the hook stopped it", "{seen}");
    assert_eq!(seen["results"][0]["permission_denials"][0]["tool_name"], "Bash", "{seen}");
    // The agent from the options: the model is told of it, and a `task` naming it runs with its
    // instructions.
    let bodies: Vec<String> = h.bodies().iter().map(|b| b.to_string()).collect();
    let parent = bodies.iter().find(|b| b.contains("delegate-it")).unwrap();
    assert!(parent.contains("reviewer: Reviews code for bugs"), "{parent}");
    assert!(bodies.iter().any(|b| b.contains("You review the code, carefully.") && b.contains("review-this")));
    assert_eq!(seen["results"][1]["result"], "reviewed", "{seen}");
    // The in-process MCP server: its tool was offered, called through the SDK, and answered.
    let calculator = bodies.iter().find(|b| b.contains("use-the-calculator")).unwrap();
    assert!(calculator.contains("mcp__calc__add"), "{calculator}");
    assert_eq!(seen["tool_calls"], json!([{"a": 2, "b": 3}]), "{seen}");
    assert_eq!(seen["results"][2]["result"], "five", "{seen}");
    // A stdio server from `mcpServers`, sent in `initialize` (the SDK's default, with
    // `--await-initialize`), then as `--mcp-config`: started each time, its tool called.
    assert_eq!(seen["results"][3]["result"], "the stdio server answered", "{seen}");
    assert_eq!(seen["results"][4]["result"], "the stdio server answered", "{seen}");
}
