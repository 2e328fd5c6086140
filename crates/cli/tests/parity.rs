//! One scripted session through the three front ends — the TUI in a
//! pseudo-terminal, `-p` stream-json with stdin control requests, and ACP —
//! gives the model the same requests and the person the same facts: a
//! `/NAME` command expanded, a mode switched to accept-edits, an edit's
//! diff, the session's cost. Every rule behind them lives in the core once;
//! this is what keeps a front end from drifting.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::screen::{quit, start};
use common::{Harness, Wire};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Three turns of 1000 tokens in and 100 out, at $1 per million each way.
const SCRIPT: &str = r#"{"turns": [
    {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}], "usage": {"input_tokens": 1000, "output_tokens": 100}},
    {"tool_calls": [{"name": "edit", "arguments": {"path": "notes.txt", "old_string": "alpha", "new_string": "beta"}}], "usage": {"input_tokens": 1000, "output_tokens": 100}},
    {"text": "Reviewed.", "usage": {"input_tokens": 1000, "output_tokens": 100}}
]}"#;

/// What the session costs: 3000 in and 300 out at $1 per million.
const COST: f64 = 0.0033;

async fn harness() -> Harness {
    let mut h = Harness::new(Wire::Anthropic, SCRIPT).await;
    h.mode = None;
    common::write(&h.path(".tern/commands/review.md"), "---\ndescription: Review\n---\nREVIEW-THIS: $ARGUMENTS\n");
    std::fs::write(h.path("notes.txt"), "alpha\n").unwrap();
    let config = h.home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(
        "\n[models.mock]\ncontext_window = 100000\nmax_output = 1000\ninput_per_mtok = 1.0\noutput_per_mtok = 1.0\n",
    );
    std::fs::write(config, text).unwrap();
    h
}

/// The conversation the model was sent, without what differs by chance
/// (call ids, cache marks): role, then each block's kind and content.
fn conversation(h: &Harness) -> Vec<Vec<Value>> {
    h.bodies()
        .iter()
        .map(|body| {
            body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|m| {
                    let role = m["role"].clone();
                    m["content"].as_array().cloned().unwrap_or_default().into_iter().map(move |b| {
                        match b["type"].as_str() {
                            Some("text") => json!([role, "text", b["text"]]),
                            Some("tool_use") => json!([role, "tool_use", b["name"], b["input"]]),
                            Some("tool_result") => json!([role, "tool_result", b["content"], b["is_error"]]),
                            other => json!([role, other]),
                        }
                    })
                })
                .collect()
        })
        .collect()
}

/// The TUI: `/mode accept-edits`, then the command; the screen's facts.
async fn through_the_tui() -> (Harness, String) {
    let h = harness().await;
    let mut s = start(&h);
    s.wait_for("Ask tern");
    s.type_text("/mode accept-edits\r");
    s.wait_for("permission mode: accept-edits");
    s.type_text("/review the notes\r");
    s.wait_for("Reviewed.");
    s.type_text("/cost\r");
    s.wait_for("tokens in");
    let screen = s.text();
    quit(&mut s);
    (h, screen)
}

/// stream-json: a `set_permission_mode` request, then the command as a user line.
async fn through_stream_json() -> (Harness, Vec<Value>) {
    let h = harness().await;
    let mut cmd = h.command(&["--input-format", "stream-json", "--output-format", "stream-json"]);
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in [
        json!({"type": "control_request", "request_id": "m1", "request": {"subtype": "set_permission_mode", "mode": "acceptEdits"}}),
        json!({"type": "user", "session_id": "", "parent_tool_use_id": null, "message": {"role": "user", "content": "/review the notes"}}),
    ] {
        stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output()).await.unwrap().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (h, lines)
}

/// ACP: `session/set_mode`, then the command as a prompt; every notification.
async fn through_acp() -> (Harness, Vec<Value>) {
    let h = harness().await;
    let mut cmd = h.command(&["acp"]);
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let mut session = Value::Null;
    let cwd = h.workspace.path().display().to_string();
    for id in 1..=4 {
        let request = match id {
            1 => json!({"method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
            2 => json!({"method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}),
            3 => json!({"method": "session/set_mode", "params": {"sessionId": session, "modeId": "accept-edits"}}),
            _ => {
                json!({"method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "/review the notes"}]}})
            }
        };
        let mut request = request;
        request["jsonrpc"] = json!("2.0");
        request["id"] = json!(id);
        stdin.write_all(format!("{request}\n").as_bytes()).await.unwrap();
        let answer = async {
            while let Some(line) = out.next_line().await.unwrap() {
                let v: Value = serde_json::from_str(&line).unwrap();
                if v["id"] == id && v.get("method").is_none() {
                    return v;
                }
                seen.push(v);
            }
            panic!("no answer to request {id}");
        };
        let answer = tokio::time::timeout(Duration::from_secs(60), answer).await.expect("in time");
        assert!(answer.get("error").is_none(), "request {id}: {answer}");
        if id == 2 {
            session = answer["result"]["sessionId"].clone();
        }
    }
    drop(stdin);
    tokio::time::timeout(Duration::from_secs(30), child.wait()).await.unwrap().unwrap();
    (h, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_session_through_every_front_end_sends_and_shows_the_same() {
    let (tui, screen) = through_the_tui().await;
    let (stream, lines) = through_stream_json().await;
    let (acp, updates) = through_acp().await;

    // The model was sent the same conversation: the command expanded, the read, the edit.
    let sent = conversation(&tui);
    assert_eq!(sent.len(), 3, "three requests: {sent:?}");
    assert_eq!(sent[0][0], json!(["user", "text", "REVIEW-THIS: the notes"]), "{sent:?}");
    assert_eq!(conversation(&stream), sent, "stream-json sent another conversation than the TUI");
    assert_eq!(conversation(&acp), sent, "ACP sent another conversation than the TUI");
    for h in [&tui, &stream, &acp] {
        assert_eq!(std::fs::read_to_string(h.path("notes.txt")).unwrap(), "beta\n", "the edit ran without asking");
    }

    // The mode each shows.
    assert!(screen.contains("accept-edits"), "{screen}");
    let status = lines.iter().find(|l| l["subtype"] == "status").expect("a status line");
    assert_eq!(status["permissionMode"], "acceptEdits");
    let update = |kind: &str| -> Vec<&Value> {
        updates
            .iter()
            .filter(|u| u["params"]["update"]["sessionUpdate"] == kind)
            .map(|u| &u["params"]["update"])
            .collect()
    };
    assert_eq!(update("current_mode_update")[0]["currentModeId"], "accept-edits");

    // The edit's diff each shows: one line out, one in.
    assert!(screen.contains("+1 −1"), "{screen}");
    let edit = lines
        .iter()
        .find(|l| l["tool_use_result"]["kind"] == "edit")
        .map(|l| &l["tool_use_result"])
        .expect("the edit's details");
    assert_eq!((edit["added"].as_u64(), edit["removed"].as_u64()), (Some(1), Some(1)), "{edit}");
    let diff = update("tool_call_update")
        .into_iter()
        .flat_map(|u| u["content"].as_array().cloned().unwrap_or_default())
        .find(|c| c["type"] == "diff")
        .expect("ACP's diff");
    assert_eq!((diff["oldText"].as_str(), diff["newText"].as_str()), (Some("alpha\n"), Some("beta\n")), "{diff}");

    // What the session cost, the same in each.
    assert!(screen.contains(&format!("estimated ${COST:.4}")), "{screen}");
    let result = lines.iter().find(|l| l["type"] == "result").expect("a result");
    assert!((result["session_cost_usd"].as_f64().unwrap() - COST).abs() < 1e-9, "{result}");
    let cost = update("usage_update").into_iter().rev().find_map(|u| u["cost"]["amount"].as_f64());
    assert!(cost.is_some_and(|c| (c - COST).abs() < 1e-9), "{:?}", update("usage_update"));
}
