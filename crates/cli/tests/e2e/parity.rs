//! One scripted session through the three front ends — the TUI in a
//! pseudo-terminal, `-p` stream-json with stdin control requests, and ACP —
//! gives the model the same requests and the person the same facts: a
//! `/NAME` command expanded (with an image where the front end takes one),
//! a mode switched to accept-edits, an edit's diff, the session's cost; then
//! the session resumed in a new process and continued. Every rule behind
//! them lives in the core once; this is what keeps a front end from
//! drifting. (The TUI takes no image in a prompt yet: its first request is
//! compared without the image.)

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::screen::{quit, start, start_with};
use common::{Harness, PIXEL, Wire};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Three turns of 1000 tokens in and 100 out, at $1 per million each way.
const SCRIPT: &str = r#"{"turns": [
    {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}], "usage": {"input_tokens": 1000, "output_tokens": 100}},
    {"tool_calls": [{"name": "edit", "arguments": {"path": "notes.txt", "old_string": "alpha", "new_string": "beta"}}], "usage": {"input_tokens": 1000, "output_tokens": 100}},
    {"text": "Reviewed.", "usage": {"input_tokens": 1000, "output_tokens": 100}},
    {"text": "Again.", "usage": {"input_tokens": 1000, "output_tokens": 100}}
]}"#;

/// What the session costs before it is resumed: 3000 in and 300 out at $1 per million.
const COST: f64 = 0.0033;
/// And after one more turn in the resumed session.
const RESUMED_COST: f64 = 0.0044;

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
                            Some("image") => json!([role, "image", b["source"]["media_type"], b["source"]["data"]]),
                            other => json!([role, other]),
                        }
                    })
                })
                .collect()
        })
        .collect()
}

/// The TUI: `/mode accept-edits`, then the command; the screen's facts.
async fn through_the_tui() -> (Harness, String, String) {
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
    // A new process goes on with the session.
    let mut s = start_with(&h, &["-c"]);
    s.wait_for("Reviewed.");
    s.type_text("again\r");
    s.wait_for("Again.");
    s.wait_idle();
    s.type_text("/cost\r");
    s.wait_for(&format!("estimated ${RESUMED_COST:.4}"));
    let resumed = s.text();
    quit(&mut s);
    (h, screen, resumed)
}

/// `tern` reading stream-json `input` on stdin (with `args`); every line it wrote.
async fn stream_json(h: &Harness, args: &[&str], input: &[Value]) -> Vec<Value> {
    let mut all = vec!["--input-format", "stream-json", "--output-format", "stream-json"];
    all.extend_from_slice(args);
    let mut cmd = h.command(&all);
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in input {
        stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output()).await.unwrap().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn user_line(content: Value) -> Value {
    json!({"type": "user", "session_id": "", "parent_tool_use_id": null, "message": {"role": "user", "content": content}})
}

/// stream-json: a `set_permission_mode` request, then the command with an
/// image as a user line; then `-c` and one more prompt.
async fn through_stream_json() -> (Harness, Vec<Value>, Vec<Value>) {
    let h = harness().await;
    let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}});
    let lines = stream_json(
        &h,
        &[],
        &[
            json!({"type": "control_request", "request_id": "m1", "request": {"subtype": "set_permission_mode", "mode": "acceptEdits"}}),
            user_line(json!([{"type": "text", "text": "/review the notes"}, image])),
        ],
    )
    .await;
    let resumed = stream_json(&h, &["-c"], &[user_line(json!("again"))]).await;
    (h, lines, resumed)
}

/// `tern acp` answering `requests` in turn (ids from 1; `{session}` in a
/// request's text is the id `session/new` or the first request gave);
/// every notification it sent, and the session's id.
async fn acp(h: &Harness, requests: Vec<Value>) -> (Vec<Value>, Value) {
    let mut cmd = h.command(&["acp"]);
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let mut session = Value::Null;
    for (i, request) in requests.into_iter().enumerate() {
        let id = i + 1;
        let mut request: Value =
            serde_json::from_str(&request.to_string().replace("\"{session}\"", &session.to_string())).unwrap();
        if let Some(given) = request["params"].get("sessionId").filter(|_| session.is_null()) {
            session = given.clone();
        }
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
        if let Some(id) = answer["result"].get("sessionId") {
            session = id.clone();
        }
    }
    drop(stdin);
    tokio::time::timeout(Duration::from_secs(30), child.wait()).await.unwrap().unwrap();
    (seen, session)
}

/// ACP: `session/set_mode`, then the command with an image as a prompt;
/// then `session/load` in a new process and one more prompt.
async fn through_acp() -> (Harness, Vec<Value>, Vec<Value>) {
    let h = harness().await;
    let cwd = h.workspace.path().display().to_string();
    let initialize = json!({"method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}});
    let (updates, id) = acp(
        &h,
        vec![
            initialize.clone(),
            json!({"method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}),
            json!({"method": "session/set_mode", "params": {"sessionId": "{session}", "modeId": "accept-edits"}}),
            json!({"method": "session/prompt", "params": {"sessionId": "{session}", "prompt": [
                {"type": "text", "text": "/review the notes"},
                {"type": "image", "mimeType": "image/png", "data": PIXEL}
            ]}}),
        ],
    )
    .await;
    let (resumed, _) = acp(
        &h,
        vec![
            initialize,
            json!({"method": "session/load", "params": {"sessionId": id, "cwd": cwd, "mcpServers": []}}),
            json!({"method": "session/prompt", "params": {"sessionId": "{session}", "prompt": [{"type": "text", "text": "again"}]}}),
        ],
    )
    .await;
    (h, updates, resumed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_session_through_every_front_end_sends_and_shows_the_same() {
    let (tui, screen, tui_resumed) = through_the_tui().await;
    let (stream, lines, stream_resumed) = through_stream_json().await;
    let (acp, updates, acp_resumed) = through_acp().await;

    // The model was sent the same conversation: the command expanded with its image, the read,
    // the edit; then, resumed in a new process, all of it and the new prompt.
    let sent = conversation(&stream);
    assert_eq!(sent.len(), 4, "four requests: {sent:?}");
    assert_eq!(sent[0][0], json!(["user", "text", "REVIEW-THIS: the notes"]), "{sent:?}");
    assert_eq!(sent[0][1], json!(["user", "image", "image/png", PIXEL]), "the command kept its image: {sent:?}");
    assert_eq!(sent[3].last(), Some(&json!(["user", "text", "again"])), "{sent:?}");
    assert_eq!(conversation(&acp), sent, "ACP sent another conversation than stream-json");
    let without_images = |c: Vec<Vec<Value>>| -> Vec<Vec<Value>> {
        c.into_iter().map(|r| r.into_iter().filter(|b| b[1] != "image").collect()).collect()
    };
    assert_eq!(
        without_images(conversation(&tui)),
        without_images(sent),
        "the TUI sent another conversation than stream-json"
    );
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

    // Resumed, each counts the whole session: what it cost before and the new turn.
    assert!(tui_resumed.contains(&format!("estimated ${RESUMED_COST:.4}")), "{tui_resumed}");
    let result = stream_resumed.iter().find(|l| l["type"] == "result").expect("a result");
    assert!((result["session_cost_usd"].as_f64().unwrap() - RESUMED_COST).abs() < 1e-9, "{result}");
    let cost = acp_resumed
        .iter()
        .filter(|u| u["params"]["update"]["sessionUpdate"] == "usage_update")
        .rev()
        .find_map(|u| u["params"]["update"]["cost"]["amount"].as_f64());
    assert!(cost.is_some_and(|c| (c - RESUMED_COST).abs() < 1e-9), "{acp_resumed:?}");
}
