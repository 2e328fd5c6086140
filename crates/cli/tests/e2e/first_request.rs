//! The first request is small and loses nothing: rarely used built-ins wait
//! behind `tool_search` (named in the system prompt), load in the same run
//! when the model asks or when the first prompt clearly needs one, stay
//! loaded on resume, and the prefix is byte-identical across turns and runs.

use crate::common;

use common::{Harness, Wire, tool_names, without_cache_markers};
use serde_json::{Value, json};

/// What `tern -p hi` may send at most (headless, defaults, Anthropic).
const FIRST_REQUEST_BUDGET: usize = 8 * 1024;

const INLINE: [&str; 9] = ["read", "write", "edit", "bash", "grep", "glob", "ls", "todo_write", "tool_search"];

fn bytes(body: &Value) -> usize {
    body.to_string().len()
}

/// What prompt caching keys on: the tools and the system prompt, without cache markers.
fn prefix(body: &Value) -> (String, String) {
    (without_cache_markers(&body["tools"]).to_string(), without_cache_markers(&body["system"]).to_string())
}

fn system(body: &Value) -> String {
    body["system"][0]["text"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_headless_first_request_fits_in_8_kb_and_names_every_waiting_builtin() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    let out = h.run(&["-p", "hi"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let body = &h.bodies()[0];
    assert!(bytes(body) <= FIRST_REQUEST_BUDGET, "first request is {} bytes: {body}", bytes(body));
    assert_eq!(tool_names(body), INLINE);
    let system = system(body);
    assert!(system.contains("# More tools\nTools may be added during the conversation.\n"), "{system}");
    for waiting in ["task", "task_output", "task_stop", "task_append", "enter_plan_mode", "web_fetch", "skill"] {
        // Named on a line of its own or of its group (`- task_output, task_stop, task_append: …`).
        let named = system.lines().any(|l| {
            l.strip_prefix("- ")
                .and_then(|l| l.split_once(": "))
                .is_some_and(|(names, _)| names.split(", ").any(|n| n == waiting))
        });
        assert!(named, "{waiting} is not named: {system}");
    }
}

#[tokio::test]
async fn a_waiting_builtin_is_loaded_by_tool_search_and_called_in_the_same_run() {
    let port = crate::web_fetch::serve().await;
    let script = json!({"turns": [
        {"tool_calls": [{"name": "tool_search", "arguments": {"query": "select:web_fetch"}}]},
        {"tool_calls": [{"name": "web_fetch", "arguments": {"url": format!("http://127.0.0.1:{port}/page"), "prompt": "title"}}]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let out = h.run(&["-p", "what does the docs page say?"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3);
    assert!(!tool_names(&bodies[0]).contains(&"web_fetch".to_string()));
    let (found, _) = h.tool_results(&bodies[1]).last().cloned().unwrap();
    assert!(found.contains("### web_fetch"), "{found}");
    // Loaded: appended after the unchanged prefix, and the system prompt did not move.
    let names = tool_names(&bodies[1]);
    assert_eq!(names[..INLINE.len()], INLINE);
    assert_eq!(names[INLINE.len()..], ["web_fetch"]);
    assert_eq!(system(&bodies[1]), system(&bodies[0]));
    let (page, is_error) = h.tool_results(&bodies[2]).last().cloned().unwrap();
    assert!(!is_error && page.contains("# Docs"), "{page}");
}

#[tokio::test]
async fn two_turns_and_two_runs_send_byte_identical_tools_and_system_prompts() {
    // The mock serves each conversation from the start of its script: each run takes two turns.
    let script = json!({"turns": [
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.txt"}}]},
        {"text": "one"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    common::write(&h.path("a.txt"), "a");
    assert_eq!(h.run(&["-p", "list the text files"]).await.code, Some(0));
    assert_eq!(h.run(&["-p", "hi"]).await.code, Some(0));
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 4);
    assert_eq!(prefix(&bodies[1]), prefix(&bodies[0]), "second turn");
    assert_eq!(prefix(&bodies[2]), prefix(&bodies[0]), "second run");
    assert_eq!(prefix(&bodies[3]), prefix(&bodies[0]), "second run, second turn");
}

#[tokio::test]
async fn a_url_in_the_first_prompt_loads_web_fetch_up_front_and_a_resume_keeps_it() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"},{"text":"again"},{"text":"plain"}]}"#).await;
    assert_eq!(h.run(&["-p", "summarise https://example.com/notes"]).await.code, Some(0));
    assert_eq!(h.run(&["--continue", "-p", "and now?"]).await.code, Some(0));
    let bodies = h.bodies();
    let names = tool_names(&bodies[0]);
    assert_eq!(names[..INLINE.len()], INLINE);
    assert_eq!(names[INLINE.len()..], ["web_fetch"]);
    assert_eq!(tool_names(&bodies[1]), names, "the resumed session keeps what it loaded");
    // A prompt without one loads nothing, and the system prompt is the same either way.
    let h2 = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    assert_eq!(h2.run(&["-p", "summarise the notes"]).await.code, Some(0));
    let plain = &h2.bodies()[0];
    assert_eq!(tool_names(plain), INLINE);
    let strip = |s: String| s.replace(h.workspace.path().to_str().unwrap(), "WS");
    let strip2 = |s: String| s.replace(h2.workspace.path().to_str().unwrap(), "WS");
    assert_eq!(strip(system(&bodies[0])), strip2(system(plain)));
}

#[tokio::test]
async fn config_keeps_every_builtin_inline_and_minimal_tools_are_minimal() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"},{"text":"ok"},{"text":"ok"}]}"#).await;
    let config = h.home.path().join("config.toml");
    let before = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{before}\n[tool_disclosure]\ndefer_builtins = false\n")).unwrap();
    assert_eq!(h.run(&["-p", "hi"]).await.code, Some(0));
    std::fs::write(&config, before).unwrap();
    assert_eq!(h.run(&["-p", "hi", "--tools", "minimal"]).await.code, Some(0));
    assert_eq!(h.run(&["-p", "hi", "--tools", "read,WebFetch"]).await.code, Some(0));
    let bodies = h.bodies();
    let inline = tool_names(&bodies[0]);
    for name in ["task", "task_output", "task_stop", "task_append", "enter_plan_mode", "web_fetch", "skill"] {
        assert!(inline.contains(&name.to_string()), "{name} missing from {inline:?}");
    }
    assert!(!inline.contains(&"tool_search".to_string()));
    assert!(!system(&bodies[0]).contains("# More tools"));
    assert_eq!(tool_names(&bodies[1]), ["read", "write", "edit", "bash"]);
    assert!(bytes(&bodies[1]) < bytes(&bodies[0]) / 2, "{} vs {}", bytes(&bodies[1]), bytes(&bodies[0]));
    // A built-in named on purpose is inline, never behind tool_search.
    assert_eq!(tool_names(&bodies[2]), ["read", "web_fetch"]);
}

#[tokio::test]
async fn a_resumed_session_keeps_what_tool_search_loaded() {
    let script = json!({"turns": [
        {"tool_calls": [{"name": "tool_search", "arguments": {"query": "select:task_output"}}]},
        {"text": "loaded"},
        {"text": "again"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    assert_eq!(h.run(&["-p", "hi"]).await.code, Some(0));
    assert_eq!(h.run(&["--continue", "-p", "and now?"]).await.code, Some(0));
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3);
    let loaded = tool_names(&bodies[1]);
    assert_eq!(loaded[INLINE.len()..], ["task_output"]);
    assert_eq!(tool_names(&bodies[2]), loaded, "the resumed session sends the tool list it had");
}

#[tokio::test]
async fn an_mcp_server_adds_the_line_that_tools_may_come_and_the_prefix_stays_byte_identical() {
    let script = json!({"turns": [
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.txt"}}]},
        {"text": "one"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let config = h.home.path().join("config.toml");
    let before = std::fs::read_to_string(&config).unwrap();
    // Every built-in inline: only the server can bring the line.
    let server = crate::mcp::test_server().display().to_string();
    std::fs::write(
        &config,
        format!("{before}\n[tool_disclosure]\ndefer_builtins = false\n[mcp_servers.calc]\ncommand = {server:?}\n"),
    )
    .unwrap();
    assert_eq!(h.run(&["-p", "list the text files"]).await.code, Some(0));
    assert_eq!(h.run(&["-p", "list the text files"]).await.code, Some(0));
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 4);
    assert!(tool_names(&bodies[0]).iter().any(|n| n.starts_with("mcp__calc__")), "{:?}", tool_names(&bodies[0]));
    let text = system(&bodies[0]);
    assert!(text.contains("\n# More tools\nTools may be added during the conversation.\n\n# Environment"), "{text}");
    for (i, b) in bodies.iter().enumerate().skip(1) {
        assert_eq!(prefix(b), prefix(&bodies[0]), "request {i}");
    }
}
