//! The Claude Agent SDK for Python (`claude-agent-sdk` on PyPI) drives the
//! real `tern` as its CLI (`cli_path`) against the mock: a one-tool
//! conversation through `query()` with its bash call asked through the
//! SDK's `can_use_tool` callback, then two turns of a `ClaudeSDKClient`
//! session. `cargo xtask ci` installs the pinned SDK into
//! support/python-sdk/.venv; where it could not, the test is skipped with
//! the reason.

use crate::common;

use std::path::PathBuf;

use common::{Harness, Wire};
use serde_json::Value;

fn sdk_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../support/python-sdk")
}

/// The SDK's Python, or None (said) where `cargo xtask ci` could not install it.
fn sdk_python() -> Option<PathBuf> {
    let python = sdk_dir().join(".venv/bin/python");
    if !python.exists() {
        eprintln!(
            "skipped: the Claude Agent SDK is not installed in {} (`cargo xtask ci` installs it from PyPI)",
            python.display()
        );
        return None;
    }
    Some(python)
}

/// Run `script` with the SDK against `h`'s mock; what it printed last, parsed.
async fn run_script(python: &std::path::Path, script: &str, h: &Harness) -> Value {
    let script = sdk_dir().join(script);
    let tern = PathBuf::from(env!("CARGO_BIN_EXE_tern"));
    h.run_sdk_program(python, &[script.as_os_str(), tern.as_os_str(), h.workspace.path().as_os_str()]).await
}

#[tokio::test]
async fn sdk_hooks_agents_and_mcp_servers_reach_tern() {
    let Some(python) = sdk_python() else { return };
    let script = r#"{"turns":[
        {"when_request_contains":"no rm from the sdk hook","text":"the hook stopped it"},
        {"when_request_contains":"hooked-prompt","tool_calls":[{"name":"bash","arguments":{"command":"rm -rf important"}}]},
        {"when_request_contains":"looks fine to me","text":"reviewed"},
        {"when_request_contains":"You review the code, carefully.","text":"looks fine to me"},
        {"when_request_contains":"delegate-it","tool_calls":[{"name":"task","arguments":{"description":"review","prompt":"review-this","subagent_type":"reviewer"}}]},
        {"when_request_contains":"sum is 5","text":"five"},
        {"when_request_contains":"use-the-calculator","tool_calls":[{"name":"mcp__calc__add","arguments":{"a":2,"b":3}}]}
    ]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    std::fs::create_dir_all(h.path("important")).unwrap();
    let seen = run_script(&python, "sdk_surface.py", &h).await;
    // The SDK's PreToolUse callback was asked, in Claude Code's words, and its deny held
    // even in bypass mode.
    let asked = &seen["hook_inputs"][0];
    assert_eq!(asked["event"], "PreToolUse", "{seen}");
    assert_eq!(asked["tool"], "Bash");
    assert_eq!(asked["command"], "rm -rf important");
    assert_eq!(asked["mode"], "bypassPermissions");
    assert!(asked["tool_use_id"].is_string(), "{seen}");
    assert!(h.path("important").exists(), "the denied rm ran");
    assert_eq!(seen["results"][0]["result"], "the hook stopped it", "{seen}");
    // The agent defined in the options: the model is told of it, and a `task` naming it runs
    // with its instructions.
    let bodies: Vec<String> = h.bodies().iter().map(|b| b.to_string()).collect();
    let parent = bodies.iter().find(|b| b.contains("delegate-it")).unwrap();
    assert!(parent.contains("reviewer: Reviews code for bugs"), "{parent}");
    assert!(bodies.iter().any(|b| b.contains("You review the code, carefully.") && b.contains("review-this")));
    assert_eq!(seen["results"][1]["result"], "reviewed", "{seen}");
    // The SDK's in-process MCP server: its tool was offered, called through the SDK, and answered.
    let calculator = bodies.iter().find(|b| b.contains("use-the-calculator")).unwrap();
    assert!(calculator.contains("mcp__calc__add"), "{calculator}");
    assert_eq!(seen["tool_calls"][0], serde_json::json!({"a": 2, "b": 3}), "{seen}");
    assert_eq!(seen["results"][2]["result"], "five", "{seen}");
}

#[tokio::test]
async fn the_python_agent_sdk_runs_tern() {
    let Some(python) = sdk_python() else { return };
    let script = r#"{"turns":[
        {"when_request_contains":"second question","text":"second answer"},
        {"when_request_contains":"first question","text":"first answer"},
        {"when_request_contains":"made-by-sdk","text":"created it"},
        {"when_request_contains":"create the file","tool_calls":[{"name":"bash","arguments":{"command":"touch made-by-sdk"}}]}
    ]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    let seen = run_script(&python, "one_tool.py", &h).await;
    // The bash call was put to the SDK's callback, allowed, and ran.
    // Under Claude Code's name, as a `can_use_tool` written for it checks.
    assert_eq!(seen["asked"][0]["tool"], "Bash", "{seen}");
    assert_eq!(seen["asked"][0]["input"]["command"], "touch made-by-sdk");
    assert!(h.path("made-by-sdk").exists());
    // The SDK parsed every message of the conversation into its own types.
    let query = seen["query"].as_array().unwrap();
    assert_eq!(query[1]["assistant"][0]["tool_use"], "Bash", "{seen}");
    assert_eq!(query[1]["model"], "mock");
    assert_eq!(query[2]["user"][0]["tool_result"], query[1]["assistant"][0]["id"]);
    assert_eq!(query[2]["user"][0]["is_error"], false);
    assert_eq!(query[3]["assistant"][0]["text"], "created it");
    let results = seen["results"].as_array().unwrap();
    assert_eq!(results.len(), 3, "{seen}");
    assert_eq!(results[0]["result"], "created it");
    assert_eq!(results[0]["num_turns"], 2);
    // Two turns of one client session: one session id, history kept.
    assert_eq!(results[1]["result"], "first answer");
    assert_eq!(results[2]["result"], "second answer");
    assert_eq!(results[1]["session_id"], results[2]["session_id"]);
    assert_ne!(results[0]["session_id"], results[1]["session_id"]);
    let last = h.bodies().last().unwrap().to_string();
    assert!(last.contains("first answer"), "the second turn carries the first");
}
