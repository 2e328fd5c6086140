//! Claude Code's headless interface, as scripts and SDKs written for it use
//! it: `--output-format stream-json|json` shapes (checked against a fixture
//! of the field paths consumers read), `--include-partial-messages`,
//! `--input-format stream-json` with control requests and `can_use_tool`
//! questions, and the flags they pass.

use crate::common;

use common::PIXEL;

use std::process::Stdio;

use common::{Harness, Wire, write};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const ONE_TOOL: &str = r#"{"turns":[
    {"tool_calls":[{"name":"read","arguments":{"path":"notes.txt"}}],"usage":{"input_tokens":50,"output_tokens":5}},
    {"text":"The notes say hello.","usage":{"input_tokens":80,"output_tokens":6}}]}"#;

/// The value at a pointer where `[]` means "the first element".
fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = v;
    for part in path.split('/').skip(1) {
        cur = if part == "[]" { cur.as_array()?.first()? } else { cur.get(part)? };
    }
    Some(cur)
}

#[tokio::test]
async fn stream_json_has_the_shapes_claude_consumers_read() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let h = Harness::new(wire, ONE_TOOL).await;
        std::fs::write(h.path("notes.txt"), "hello\n").unwrap();
        let out = h.run(&["-p", "what do the notes say?", "--output-format", "stream-json"]).await;
        assert_eq!(out.code, Some(0), "{wire:?}: {}", out.stderr);
        let lines = out.json_lines();
        // Every line: `type` first, the one session id.
        let session = lines[0]["session_id"].as_str().unwrap().to_string();
        for l in &lines {
            assert_eq!(l.as_object().unwrap().keys().next().map(String::as_str), Some("type"), "{l}");
            assert_eq!(l["session_id"], session.as_str(), "{l}");
        }
        let kinds: Vec<String> = lines
            .iter()
            .map(|l| {
                let sub = l["subtype"].as_str().map(|s| format!("/{s}")).unwrap_or_default();
                format!("{}{sub}", l["type"].as_str().unwrap())
            })
            .collect();
        assert_eq!(kinds, ["system/init", "assistant", "user", "assistant", "result/success"], "{wire:?}");
        let fixture: Value =
            serde_json::from_str(include_str!("../fixtures/claude_stream_paths.json")).expect("fixture parses");
        let named = [
            ("system/init", &lines[0]),
            ("assistant/tool_use", &lines[1]),
            ("user/tool_result", &lines[2]),
            ("assistant/text", &lines[3]),
            ("result", &lines[4]),
        ];
        for (name, line) in named {
            for path in fixture[name].as_array().unwrap() {
                let path = path.as_str().unwrap();
                assert!(at(line, path).is_some(), "{wire:?}: {name} has no {path}: {line}");
            }
        }
        // The values the consumers act on.
        let tool_use = at(&lines[1], "/message/content/[]").unwrap();
        assert_eq!(tool_use["type"], "tool_use");
        // Claude Code's tool names and keys, as its consumers check them (tern's `path` too).
        assert_eq!(tool_use["name"], "Read");
        assert_eq!(tool_use["input"]["file_path"], "notes.txt");
        assert_eq!(tool_use["input"]["path"], "notes.txt");
        assert_eq!(lines[1]["message"]["stop_reason"], "tool_use");
        assert_eq!(lines[1]["parent_tool_use_id"], Value::Null);
        let result_block = &lines[2]["message"]["content"][0];
        assert_eq!(result_block["tool_use_id"], tool_use["id"]);
        assert!(result_block["content"].as_str().unwrap().contains("hello"), "{result_block}");
        assert_eq!(result_block["is_error"], false);
        // `tool_use_result` in Claude Code's shape for Read (tern's details beside it).
        let read = &lines[2]["tool_use_result"];
        assert_eq!(read["type"], "text", "{read}");
        assert_eq!(read["file"]["filePath"], "notes.txt");
        assert!(read["file"]["content"].as_str().unwrap().contains("hello"), "{read}");
        assert_eq!(read["kind"], "read");
        assert_eq!(lines[3]["message"]["content"][0]["text"], "The notes say hello.");
        assert_eq!(lines[3]["message"]["stop_reason"], "end_turn");
        let r = &lines[4];
        assert_eq!(r["is_error"], false);
        assert_eq!(r["num_turns"], 2);
        assert_eq!(r["result"], "The notes say hello.");
        assert_eq!(r["terminal_reason"], "completed");
        assert_eq!(r["usage"]["input_tokens"], 130);
        assert_eq!(r["usage"]["output_tokens"], 11);
        assert!(r["duration_api_ms"].as_u64().unwrap() <= r["duration_ms"].as_u64().unwrap(), "{r}");
        assert!(r.get("errors").is_none(), "no errors on success: {r}");
        assert_eq!(lines[0]["permissionMode"], "bypassPermissions");
        assert_eq!(
            lines[0]["apiKeySource"],
            if wire == Wire::Anthropic { "ANTHROPIC_API_KEY" } else { "OPENAI_API_KEY" }
        );
        assert!(lines[0]["tools"].as_array().unwrap().iter().any(|t| t == "Read"), "Claude Code's names");
        assert!(lines[0]["agents"].as_array().unwrap().iter().any(|t| t == "explore"));
        // `json`: the same result object alone.
        let h = Harness::new(wire, ONE_TOOL).await;
        std::fs::write(h.path("notes.txt"), "hello\n").unwrap();
        let out = h.run(&["-p", "what do the notes say?", "--output-format", "json"]).await;
        let lines = out.json_lines();
        assert_eq!(lines.len(), 1, "{}", out.stdout);
        for path in fixture["result"].as_array().unwrap() {
            assert!(at(&lines[0], path.as_str().unwrap()).is_some(), "json result has no {path}");
        }
        // `json --verbose`: every message of the prompt, as one array (Claude Code's shape).
        let out = h.run(&["-p", "what do the notes say?", "--output-format", "json", "--verbose"]).await;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        let all: Vec<Value> = serde_json::from_str(out.stdout.trim()).expect("one JSON array");
        let kinds: Vec<&str> = all.iter().map(|l| l["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["system", "assistant", "user", "assistant", "result"], "{wire:?}");
    }
}

#[tokio::test]
async fn partial_messages_stream_deltas_only_when_asked() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"thinking":"hmm","text":"Hello there."}]}"#).await;
    let out = h.run(&["-p", "hi", "--output-format", "stream-json"]).await;
    assert!(out.events_of_type("stream_event").is_empty(), "no deltas without the flag");
    let out = h.run(&["-p", "hi", "--output-format", "stream-json", "--include-partial-messages"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let events: Vec<Value> = out.events_of_type("stream_event").into_iter().map(|l| l["event"].clone()).collect();
    assert_eq!(events.first().unwrap()["type"], "message_start");
    assert_eq!(events.last().unwrap()["type"], "message_stop");
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "content_block_delta" && e["delta"]["type"] == "text_delta")
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "Hello there.");
    assert!(events.iter().any(|e| e["delta"]["type"] == "thinking_delta"), "{events:?}");
    // The whole message still comes, after its deltas.
    let lines = out.json_lines();
    let last_delta = lines.iter().rposition(|l| l["type"] == "stream_event").unwrap();
    let assistant = lines.iter().position(|l| l["type"] == "assistant").unwrap();
    assert!(assistant > last_delta);
    // Without stream-json output the flag is a usage error.
    let out = h.run(&["-p", "hi", "--include-partial-messages"]).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
}

/// A stream cut after some text and retried: the retried attempt streams a
/// new message (`message_start` again), so a reader that joins each
/// message's deltas shows the answer once, not the broken attempt's text
/// followed by the whole answer.
#[tokio::test]
async fn partial_messages_start_again_after_a_retry_that_discards() {
    let answer = "A long answer that goes on for a while, lorem ipsum dolor sit amet.";
    let script = json!({"turns": [{"faults": [{"cut_after_events": 6}], "text": answer}]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let out = h.run(&["-p", "hi", "--output-format", "stream-json", "--include-partial-messages"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let lines = out.json_lines();
    let retry = lines.iter().position(|l| l["subtype"] == "api_retry").expect("an api_retry line");
    // Each message's text, as a reader keyed by message_start joins it.
    let mut messages: Vec<String> = Vec::new();
    for l in lines.iter().filter(|l| l["type"] == "stream_event") {
        let e = &l["event"];
        if e["type"] == "message_start" {
            messages.push(String::new());
        } else if e["delta"]["type"] == "text_delta" {
            messages.last_mut().expect("a delta after message_start").push_str(e["delta"]["text"].as_str().unwrap());
        }
    }
    assert_eq!(messages.len(), 2, "the broken attempt, then the retried one: {messages:?}");
    assert!(!messages[0].is_empty() && answer.starts_with(&messages[0]), "{messages:?}");
    assert_eq!(messages[1], answer);
    let restart = lines.iter().rposition(|l| l["event"]["type"] == "message_start").unwrap();
    assert!(restart > retry, "the new message starts after the retry line");
    assert_eq!(out.events_of_type("result")[0]["result"], answer);
}

#[tokio::test]
async fn cost_is_never_negative_zero_after_a_connection_failure() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"x"}]}"#).await;
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_tern"))
        .env("TERN_HOME", h.home.path())
        .env("ANTHROPIC_API_KEY", "test-key")
        .current_dir(h.workspace.path())
        .args(["--provider", "anthropic", "--model", "mock", "--base-url", &format!("http://127.0.0.1:{port}")])
        .args(["-p", "hi", "--output-format", "json"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("-0.0"), "{stdout}");
    let r: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(r["total_cost_usd"], json!(0.0));
    assert_eq!(r["subtype"], "error_during_execution");
    assert!(!r["errors"][0].as_str().unwrap().is_empty(), "{r}");
}

/// A `tern` reading stream-json from a pipe, its stdout read line by line.
struct Streaming {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    seen: Vec<Value>,
}

impl Streaming {
    fn start(h: &Harness, extra: &[&str]) -> Self {
        let mut args = vec!["--input-format", "stream-json", "--output-format", "stream-json"];
        args.extend_from_slice(extra);
        let mut cmd = h.command(&args);
        cmd.stdin(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self { child, stdin, lines, seen: Vec::new() }
    }

    async fn send(&mut self, v: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(format!("{v}\n").as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn user(&mut self, text: &str) {
        self.send(json!({"type": "user", "session_id": "", "message": {"role": "user", "content": text}, "parent_tool_use_id": null})).await;
    }

    /// Lines up to and including the first for which `stop` holds.
    async fn until(&mut self, stop: impl Fn(&Value) -> bool) -> Value {
        let read = async {
            while let Some(line) = self.lines.next_line().await.unwrap() {
                let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON: {line}: {e}"));
                self.seen.push(v.clone());
                if stop(&v) {
                    return v;
                }
            }
            panic!("stdout ended; seen {:?}", self.seen);
        };
        tokio::time::timeout(std::time::Duration::from_secs(30), read).await.expect("a line in time")
    }

    async fn finish(mut self) -> (i32, Vec<Value>) {
        self.stdin.take();
        while let Some(line) = self.lines.next_line().await.unwrap() {
            self.seen.push(serde_json::from_str(&line).unwrap());
        }
        let status =
            tokio::time::timeout(std::time::Duration::from_secs(30), self.child.wait()).await.unwrap().unwrap();
        (status.code().unwrap_or(-1), self.seen)
    }
}

#[tokio::test]
async fn stream_input_runs_each_message_in_one_session() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"first answer"},{"text":"second answer"}]}"#).await;
    let mut s = Streaming::start(&h, &[]);
    s.send(json!({"type": "control_request", "request_id": "req_1_abc", "request": {"subtype": "initialize", "hooks": null}}))
        .await;
    let init = s.until(|v| v["type"] == "control_response").await;
    assert_eq!(init["response"]["subtype"], "success");
    assert_eq!(init["response"]["request_id"], "req_1_abc");
    // The SDKs' `AgentInfo` and `AccountInfo` shapes.
    let answer = &init["response"]["response"];
    let explore = answer["agents"].as_array().unwrap().iter().find(|a| a["name"] == "explore").cloned();
    assert!(explore.is_some_and(|a| a["description"].as_str().is_some_and(|d| !d.is_empty())), "{answer}");
    assert_eq!(answer["account"]["apiKeySource"], "ANTHROPIC_API_KEY", "{answer}");
    s.user("one").await;
    let first = s.until(|v| v["type"] == "result").await;
    assert_eq!(first["result"], "first answer");
    s.user("two").await;
    let (code, seen) = s.finish().await;
    assert_eq!(code, 0);
    let results: Vec<&Value> = seen.iter().filter(|v| v["type"] == "result").collect();
    assert_eq!(results.len(), 2, "{seen:?}");
    assert_eq!(results[1]["result"], "second answer");
    assert_eq!(results[0]["session_id"], results[1]["session_id"]);
    // The second request carried the first exchange.
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2);
    let second = bodies[1].to_string();
    assert!(second.contains("first answer") && second.contains("one"), "{second}");
    // Only JSON lines on stdout (each parsed above), the init line once.
    assert_eq!(seen.iter().filter(|v| v["subtype"] == "init").count(), 1);
}

#[tokio::test]
async fn messages_sent_at_once_then_stdin_closed_all_run() {
    // What the Python SDK's query() does: the prompt, then stdin closes at once.
    let h = Harness::new(Wire::OpenAi, r#"{"turns":[{"text":"a"},{"text":"b"}]}"#).await;
    let mut s = Streaming::start(&h, &[]);
    s.user("one").await;
    s.user("two").await;
    let (code, seen) = s.finish().await;
    assert_eq!(code, 0);
    let results: Vec<&str> =
        seen.iter().filter(|v| v["type"] == "result").map(|v| v["result"].as_str().unwrap()).collect();
    assert_eq!(results, ["a", "b"]);
}

#[tokio::test]
async fn can_use_tool_questions_go_to_the_caller() {
    let script = r#"{"turns":[
        {"tool_calls":[{"name":"bash","arguments":{"command":"touch made-by-yes"}}]},
        {"tool_calls":[{"name":"bash","arguments":{"command":"touch made-by-no"}}]},
        {"text":"done"}]}"#;
    let mut h = Harness::new(Wire::Anthropic, script).await;
    h.mode = None;
    let mut s = Streaming::start(&h, &["--permission-prompt-tool", "stdio"]);
    s.user("make files").await;
    let ask = s.until(|v| v["type"] == "control_request").await;
    assert_eq!(ask["request"]["subtype"], "can_use_tool");
    assert_eq!(ask["request"]["tool_name"], "Bash", "Claude Code's name, as a canUseTool checks it");
    assert_eq!(ask["request"]["input"]["command"], "touch made-by-yes");
    assert!(ask["request"]["tool_use_id"].is_string());
    let id = ask["request_id"].clone();
    let input = ask["request"]["input"].clone();
    s.send(json!({"type": "control_response", "response": {"subtype": "success", "request_id": id,
        "response": {"behavior": "allow", "updatedInput": input}}}))
        .await;
    let ask = s.until(|v| v["type"] == "control_request").await;
    assert_eq!(ask["request"]["input"]["command"], "touch made-by-no");
    s.send(json!({"type": "control_response", "response": {"subtype": "success", "request_id": ask["request_id"],
        "response": {"behavior": "deny", "message": "not that one"}}}))
        .await;
    let result = s.until(|v| v["type"] == "result").await;
    assert_eq!(result["result"], "done");
    let (code, seen) = s.finish().await;
    assert_eq!(code, 0);
    assert!(h.path("made-by-yes").exists());
    assert!(!h.path("made-by-no").exists());
    let refused = seen
        .iter()
        .filter(|v| v["type"] == "user")
        .map(|v| &v["message"]["content"][0])
        .find(|b| b["is_error"] == true)
        .expect("the refused call's result");
    assert!(refused["content"].as_str().unwrap().contains("not that one"), "{refused}");
}

#[tokio::test]
async fn a_file_call_is_asked_in_claude_codes_keys_and_its_echo_runs_it() {
    // A canUseTool written for Claude Code reads `Write` and `file_path`, and answers
    // with the input it was given; a changed path is still refused.
    let script = r#"{"turns":[
        {"tool_calls":[{"name":"write","arguments":{"path":"echoed.txt","content":"ok\n"}}]},
        {"tool_calls":[{"name":"write","arguments":{"path":"asked.txt","content":"no\n"}}]},
        {"text":"done"}]}"#;
    let mut h = Harness::new(Wire::Anthropic, script).await;
    h.mode = None;
    let mut s = Streaming::start(&h, &["--permission-prompt-tool", "stdio"]);
    s.user("write files").await;
    let ask = s.until(|v| v["type"] == "control_request").await;
    assert_eq!(ask["request"]["tool_name"], "Write");
    assert_eq!(ask["request"]["input"]["file_path"], "echoed.txt");
    let input = ask["request"]["input"].clone();
    s.send(json!({"type": "control_response", "response": {"subtype": "success", "request_id": ask["request_id"],
        "response": {"behavior": "allow", "updatedInput": input}}}))
        .await;
    let ask = s.until(|v| v["type"] == "control_request").await;
    let mut moved = ask["request"]["input"].clone();
    moved["file_path"] = json!("elsewhere.txt");
    s.send(json!({"type": "control_response", "response": {"subtype": "success", "request_id": ask["request_id"],
        "response": {"behavior": "allow", "updatedInput": moved}}}))
        .await;
    let result = s.until(|v| v["type"] == "result").await;
    assert_eq!(result["result"], "done");
    let (code, _) = s.finish().await;
    assert_eq!(code, 0);
    assert_eq!(std::fs::read_to_string(h.path("echoed.txt")).unwrap(), "ok\n", "the echo is the same call");
    assert!(!h.path("asked.txt").exists() && !h.path("elsewhere.txt").exists(), "a changed path is refused");
}

#[tokio::test]
async fn control_requests_interrupt_and_switch_modes() {
    let script = r#"{"turns":[
        {"tool_calls":[{"name":"bash","arguments":{"command":"sleep 37.25"}}]},
        {"text":"after"}]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    let mut s = Streaming::start(&h, &[]);
    s.send(json!({"type": "control_request", "request_id": "m1", "request": {"subtype": "set_permission_mode", "mode": "acceptEdits"}})).await;
    let r = s.until(|v| v["type"] == "control_response").await;
    assert_eq!(r["response"]["subtype"], "success", "{r}");
    s.send(json!({"type": "control_request", "request_id": "m2", "request": {"subtype": "set_permission_mode", "mode": "sideways"}})).await;
    let r = s.until(|v| v["type"] == "control_response").await;
    assert_eq!(r["response"]["subtype"], "error");
    assert!(r["response"]["error"].as_str().unwrap().contains("unknown permission mode"), "{r}");
    s.user("sleep").await;
    s.until(|v| v["type"] == "assistant").await;
    // The command runs; interrupt it.
    assert!(!common::wait_present("sleep 37.25").await.is_empty());
    let started = std::time::Instant::now();
    s.send(json!({"type": "control_request", "request_id": "i1", "request": {"subtype": "interrupt"}})).await;
    let result = s.until(|v| v["type"] == "result").await;
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(result["terminal_reason"], "aborted");
    assert_eq!(common::wait_gone("sleep 37.25").await, Vec::<u32>::new());
    // The session goes on with the next message.
    s.user("again").await;
    let result = s.until(|v| v["type"] == "result").await;
    assert_eq!(result["result"], "after");
    let (code, _) = s.finish().await;
    assert_eq!(code, 0);
}

#[tokio::test]
async fn stream_input_flag_mistakes_are_usage_errors() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"x"}]}"#).await;
    for args in [
        vec!["--input-format", "stream-json"],
        vec!["-p", "hi", "--permission-prompt-tool", "stdio"],
        vec!["-p", "hi", "--permission-prompt-tool", "mcp__x__y"],
    ] {
        let out = h.run(&args).await;
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("--"), "{}", out.stderr);
    }
}

#[tokio::test]
async fn claude_flags_work() {
    // --system-prompt replaces tern's own instructions; the environment follows.
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    let out = h.run(&["-p", "hi", "--system-prompt", "You are a pirate."]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let system = h.bodies()[0]["system"].to_string();
    assert!(system.contains("You are a pirate."), "{system}");
    assert!(system.contains("Working directory"), "{system}");
    assert!(!system.contains("You are tern"), "{system}");

    // --session-id names the new session; a second use is refused.
    let out =
        h.run(&["-p", "hi", "--session-id", "0b9d7e1c-1111-4222-8333-444455556666", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.json_lines()[0]["session_id"], "0b9d7e1c-1111-4222-8333-444455556666");
    let out = h.run(&["-p", "hi", "--session-id", "0b9d7e1c-1111-4222-8333-444455556666"]).await;
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("--resume"), "{}", out.stderr);
    let out = h.run(&["-p", "hi", "--session-id", "../escape"]).await;
    assert_eq!(out.code, Some(2));
}

#[tokio::test]
async fn dont_ask_refuses_and_skip_permissions_bypasses() {
    let script =
        r#"{"turns":[{"tool_calls":[{"name":"bash","arguments":{"command":"touch created"}}]},{"text":"done"}]}"#;
    let mut h = Harness::new(Wire::Anthropic, script).await;
    h.mode = None;
    let out = h.run(&["-p", "go", "--permission-mode", "dontAsk", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!h.path("created").exists());
    let r = &out.json_lines()[0];
    assert_eq!(r["permission_denials"][0]["tool_name"], "Bash");
    assert!(r["permission_denials"][0]["reason"].as_str().unwrap().contains("dont-ask"), "{r}");

    let h2 = Harness::new(Wire::Anthropic, script).await;
    let mut h2 = h2;
    h2.mode = None;
    let out = h2.run(&["-p", "go", "--dangerously-skip-permissions"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(h2.path("created").exists());
}

#[tokio::test]
async fn add_dir_reads_without_asking_and_inline_mcp_config_is_read() {
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("shared.txt"), "from the other folder\n").unwrap();
    let path = other.path().join("shared.txt").display().to_string();
    let script = json!({"turns": [
        {"tool_calls": [{"name": "read", "arguments": {"path": path}}]},
        {"text": "done"}]})
    .to_string();
    let mut h = Harness::new(Wire::Anthropic, &script).await;
    h.mode = None;
    let out = h.run(&["-p", "read it"]).await;
    assert_eq!(out.code, Some(0));
    let results = h.tool_results(&h.bodies()[1]);
    assert!(results[0].1, "outside the workspace, refused headless: {results:?}");
    let h = {
        let mut h = Harness::new(Wire::Anthropic, &script).await;
        h.mode = None;
        h
    };
    let dir = other.path().display().to_string();
    let out = h.run(&["-p", "read it", "--add-dir", &dir]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let results = h.tool_results(&h.bodies()[1]);
    assert!(!results[0].1 && results[0].0.contains("from the other folder"), "{results:?}");
    let out = h.run(&["-p", "x", "--add-dir", "/no/such/dir"]).await;
    assert_eq!(out.code, Some(2));

    // --mcp-config as inline JSON (as SDKs pass it): a broken file is named; a server tern cannot
    // speak fails alone, named with its origin.
    let out = h.run(&["mcp", "list", "--mcp-config", r#"{"mcpServers": 3}"#]).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("--mcp-config"), "{}", out.stderr);
    let out = h
        .run(&["mcp", "list", "--mcp-config", r#"{"mcpServers":{"x":{"type":"sse","url":"http://127.0.0.1:1"}}}"#])
        .await;
    assert_eq!(out.code, Some(1), "a failed server, listed: {}", out.stderr);
    assert!(out.stdout.contains("--mcp-config") && out.stdout.contains("legacy SSE"), "{}", out.stdout);
    // An SDK's in-process server, where no SDK drives tern: it fails alone, saying why.
    let out = h.run(&["mcp", "list", "--mcp-config", r#"{"mcpServers":{"calc":{"type":"sdk","name":"calc"}}}"#]).await;
    assert_eq!(out.code, Some(1), "a failed server, listed: {}", out.stderr);
    assert!(out.stdout.contains("Agent SDK server") && out.stdout.contains("stream-json"), "{}", out.stdout);
}

#[tokio::test]
async fn review_fixes_for_scripts_and_sdks() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    // An empty --system-prompt (the SDK's default) keeps tern's own instructions.
    let out = h.run(&["-p", "hi", "--system-prompt", ""]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(h.bodies()[0]["system"].to_string().contains("You are tern"));
    // Session ids follow the one rule of --resume (no `_`), so each can be resumed.
    let out = h.run(&["-p", "hi", "--session-id", "my_session"]).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    let out = h.run(&["-p", "hi", "--session-id", "my-session-1", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let out = h.run(&["-p", "again", "-r", "my-session-1", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.json_lines()[0]["session_id"], "my-session-1");
    // The home folder cannot be added (its secrets would open to the file tools).
    let home = h.home.path().display().to_string();
    let mut cmd = h.command(&["-p", "hi", "--add-dir", &home]);
    cmd.env("HOME", h.home.path());
    let out = cmd.output().await.unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    // An SDK's in-process server in --mcp-config does not stop a run that no SDK drives.
    let sdk = r#"{"mcpServers":{"inproc":{"type":"sdk","name":"inproc"}}}"#;
    let out = h.run(&["-p", "hi", "--mcp-config", sdk]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}

#[tokio::test]
async fn stream_input_answers_every_message_and_keeps_the_first_failure() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"fine"}]}"#).await;
    let mut s = Streaming::start(&h, &[]);
    // A user message tern cannot take still gets its result (an SDK waits for one).
    s.send(json!({"type": "user", "message": {"role": "user", "content": [{"type": "document", "source": {}}]}})).await;
    let first = s.until(|v| v["type"] == "result").await;
    assert_eq!(first["is_error"], true);
    assert!(first["errors"][0].as_str().unwrap().contains("document"), "{first}");
    s.user("then this").await;
    let second = s.until(|v| v["type"] == "result").await;
    assert_eq!(second["result"], "fine");
    let (code, _) = s.finish().await;
    assert_eq!(code, 1, "one message failed");
}

#[tokio::test]
async fn a_signal_while_waiting_for_input_exits() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"fine"}]}"#).await;
    let mut s = Streaming::start(&h, &[]);
    s.user("one").await;
    s.until(|v| v["type"] == "result").await;
    // Nothing runs; stdin stays open.
    let pid = s.child.id().unwrap() as i32;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let status = tokio::time::timeout(std::time::Duration::from_secs(5), s.child.wait()).await.expect("exits").unwrap();
    assert_eq!(status.code(), Some(143), "128 + SIGTERM");

    // Before the first line too, while tern waits for it to start the session.
    let mut s = Streaming::start(&h, &[]);
    let pid = s.child.id().unwrap() as i32;
    // Once tern catches SIGTERM (the caught-signals mask in /proc), it is waiting.
    let catches_term = || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let mask = status.lines().find_map(|l| l.strip_prefix("SigCgt:")).unwrap_or("0").trim().to_string();
        u64::from_str_radix(&mask, 16).unwrap_or(0) & (1 << (libc::SIGTERM - 1)) != 0
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while !catches_term() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("tern catches SIGTERM");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let status = tokio::time::timeout(std::time::Duration::from_secs(5), s.child.wait()).await.expect("exits").unwrap();
    assert_eq!(status.code(), Some(143), "128 + SIGTERM");
}

#[tokio::test]
async fn flag_mistakes_are_named() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"}]}"#).await;
    let out = h.run(&["-p", "hi", "--max-turns", "0"]).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("at least 1"), "{}", out.stderr);
    // A rule naming no tool is said to do nothing; a Claude Code name is read as tern's.
    let out = h.run(&["-p", "hi", "--allowed-tools", "nosuchtool Read tool_search"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("`nosuchtool`: no tool is named"), "{}", out.stderr);
    assert!(!out.stderr.contains("`Read`") && !out.stderr.contains("`tool_search`"), "{}", out.stderr);
}

#[tokio::test]
async fn stream_input_expands_commands_with_their_images_as_p_does() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"Reviewed."},{"text":"Again."}]}"#).await;
    common::write(&h.path(".tern/commands/review.md"), "---\ndescription: Review\n---\nREVIEW-THIS: $ARGUMENTS\n");
    std::fs::write(h.home.path().join("config.toml"), "[models.mock]\nimage_input = true\n").unwrap();
    let mut s = Streaming::start(&h, &[]);
    s.send(
        json!({"type": "user", "session_id": "", "parent_tool_use_id": null, "message": {"role": "user", "content": [
            {"type": "text", "text": "/review the logo"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}}
        ]}}),
    )
    .await;
    let result = s.until(|v| v["type"] == "result").await;
    assert_eq!(result["result"], "Reviewed.");
    s.user("/review twice").await;
    let (code, _) = s.finish().await;
    assert_eq!(code, 0);
    let bodies = h.bodies();
    assert!(bodies[1].to_string().contains("REVIEW-THIS: twice"), "every message expands");
    let first = bodies[0].to_string();
    assert!(first.contains("REVIEW-THIS: the logo"), "expanded as -p expands it: {first}");
    assert!(first.contains(PIXEL), "the image went with the command");
}

#[tokio::test]
async fn bypass_is_entered_mid_session_only_when_allowed_at_start() {
    let script = r#"{"turns":[{"text":"ok"}]}"#;
    let mut h = Harness::new(Wire::Anthropic, script).await;
    h.mode = None;
    let set = |id: &str, mode: &str| json!({"type": "control_request", "request_id": id, "request": {"subtype": "set_permission_mode", "mode": mode}});
    // Claude Code refuses this without the dangerous flag; so does tern.
    let mut s = Streaming::start(&h, &[]);
    s.send(set("b1", "bypassPermissions")).await;
    let r = s.until(|v| v["type"] == "control_response").await;
    assert_eq!(r["response"]["subtype"], "error", "{r}");
    assert!(r["response"]["error"].as_str().unwrap().contains("--allow-dangerously-skip-permissions"), "{r}");
    // Another mode is entered, and the change is said as Claude's status line says it.
    s.send(set("p1", "plan")).await;
    s.until(|v| v["type"] == "control_response").await;
    let (code, seen) = s.finish().await;
    assert_eq!(code, 0);
    let status = seen.iter().find(|v| v["subtype"] == "status").expect("a status line");
    assert_eq!(status["permissionMode"], "plan", "{status}");
    assert!(!seen.iter().any(|v| v["permissionMode"] == "bypassPermissions"), "{seen:?}");
    // With the flag given at start, it may be entered later.
    let mut s = Streaming::start(&h, &["--allow-dangerously-skip-permissions"]);
    s.send(set("b2", "bypassPermissions")).await;
    let r = s.until(|v| v["type"] == "control_response").await;
    assert_eq!(r["response"]["subtype"], "success", "{r}");
    assert_eq!(r["response"]["response"]["mode"], "bypassPermissions");
    let (code, _) = s.finish().await;
    assert_eq!(code, 0);
}

#[tokio::test]
async fn claude_code_settings_apply_under_the_same_trust_rules_as_terns_own() {
    let mut h = Harness::new(
        Wire::Anthropic,
        r#"{"turns":[{"tool_calls":[{"name":"bash","arguments":{"command":"curl -s http://127.0.0.1:9/x"}}]},{"text":"ok"}]}"#,
    )
    .await;
    h.mode = None;
    // A project's deny rule narrows at once, trusted or not; its allow rules and hooks wait for trust.
    write(
        &h.path(".claude/settings.json"),
        r#"{"permissions": {"deny": ["Bash(curl:*)"], "allow": ["Bash(touch:*)"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo ran >> hook-ran.txt"}]}]},
            "env": {"A": "1"}}"#,
    );
    let out = h.run(&["-p", "fetch it", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let result: Value = serde_json::from_str(&out.stdout).unwrap();
    let denial = &result["permission_denials"][0];
    assert_eq!(denial["tool_name"], "Bash", "{result}");
    let check = h.run(&["permissions", "check", "bash(curl x)"]).await;
    assert!(check.stdout.contains(".claude/settings.json"), "the rule names its file: {}", check.stdout);
    assert!(out.stderr.contains("NOT applied: env"), "{}", out.stderr);
    assert!(
        out.stderr.contains("skipped 1 project hook(s)") && out.stderr.contains("ignored allow rule(s)"),
        "{}",
        out.stderr
    );
    assert!(!h.path("hook-ran.txt").exists(), "no project hook before trust");
    // Trusted: the hook runs (with Claude Code's event name and CLAUDE_PROJECT_DIR), the allow rule holds.
    write(
        &h.path(".claude/settings.local.json"),
        r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": "cat > \"$CLAUDE_PROJECT_DIR/hook-input.json\""}]}]}}"#,
    );
    let out = h.run(&["-p", "fetch it", "--trust"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(h.path("hook-ran.txt").exists(), "{}", out.stderr);
    let input: Value = serde_json::from_str(&std::fs::read_to_string(h.path("hook-input.json")).unwrap()).unwrap();
    assert_eq!((input["hook_event_name"].as_str(), input["tool_name"].as_str()), (Some("PreToolUse"), Some("Bash")));
    // The person's own ~/.claude/settings.json holds everywhere; --setting-sources chooses the files.
    write(&h.user_home().join(".claude/settings.json"), r#"{"permissions": {"deny": ["Read(./secret.txt)"]}}"#);
    write(&h.path("secret.txt"), "s");
    let out = h.run(&["permissions", "check", "read(secret.txt)"]).await;
    assert!(out.stdout.contains("deny") && out.stdout.contains(".claude/settings.json"), "{}", out.stdout);
    let out = h.run(&["permissions", "check", "read(secret.txt)", "--setting-sources", "project"]).await;
    assert!(!out.stdout.contains("deny"), "{}", out.stdout);
    // A rule tern cannot read is left out, loudly for a deny, and never stops the start.
    write(&h.user_home().join(".claude/settings.json"), r#"{"permissions": {"deny": ["Bash(unclosed"]}}"#);
    let out = h.run(&["-p", "hi", "--output-format", "json"]).await;
    assert!(out.stderr.contains("this deny rule does NOT hold"), "{}", out.stderr);
}

#[tokio::test]
async fn sdk_options_are_honoured_or_named_never_fatal() {
    // Options the Agent SDKs pass: each used to end the session with exit 2.
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"},{"text":"ok"},{"text":"ok"}]}"#).await;
    // --tools keeps only those built-ins (Claude Code's names work).
    let out = h.run(&["-p", "hi", "--tools", "Read,Grep"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let names = common::tool_names(&h.bodies()[0]);
    assert!(names.contains(&"read".to_string()) && names.contains(&"grep".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n == "bash" || n == "write" || n == "edit"), "{names:?}");
    // --max-thinking-tokens sets the thinking budget.
    let out = h.run(&["-p", "hi", "--max-thinking-tokens", "2048"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(h.bodies()[1]["thinking"]["budget_tokens"], 2048, "{}", h.bodies()[1]);
    // --settings applies as the person's own settings; what does not map is named.
    let settings = r#"{"permissions": {"deny": ["Bash(curl:*)"]}, "model": "opus"}"#;
    let out = h.run(&["permissions", "check", "bash(curl x)", "--settings", settings]).await;
    assert!(out.stdout.contains("deny") && out.stdout.contains("--settings"), "{}", out.stdout);
    assert!(
        out.stderr.contains("--settings (Claude Code's settings)") && out.stderr.contains("model"),
        "{}",
        out.stderr
    );
    // A settings file is read bounded (1 MiB), never whole whatever its size.
    write(&h.path("huge.json"), &format!("{{\"permissions\": {{\"allow\": [\"{}\"]}}}}", "x".repeat(1_100_000)));
    let out = h.run(&["permissions", "check", "bash(ls)", "--settings", "huge.json"]).await;
    assert!(out.stderr.contains("larger than") && out.stderr.contains("not applied"), "{}", out.stderr);
    let out = h.run(&["mcp", "list", "--setting-sources", "user,elsewhere"]).await;
    assert!(out.stderr.contains("`elsewhere` is not a source"), "{}", out.stderr);
    // Claude Code's `auto` mode runs as tern's default, and says so.
    let mut h = h;
    h.mode = None;
    let out = h.run(&["-p", "hi", "--permission-mode", "auto"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("permission mode `auto` runs as tern's default"), "{}", out.stderr);
}

#[tokio::test]
async fn sdk_limits_effort_betas_and_prompt_files_are_honoured() {
    let script = r#"{"turns":[{"text":"ok"},{"text":"ok"},{"text":"ok"},{"text":"ok"}]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    // --effort is a thinking budget; --max-thinking-tokens wins over it; --thinking disabled sends none.
    let out = h.run(&["-p", "hi", "--effort", "high", "--betas", "a-2025,b-2026"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(h.bodies()[0]["thinking"]["budget_tokens"], 16384, "{}", h.bodies()[0]);
    // --betas go out as Anthropic's header.
    assert_eq!(h.server.requests()[0].headers.get("anthropic-beta").map(String::as_str), Some("a-2025,b-2026"));
    let out = h.run(&["-p", "hi", "--effort", "low", "--max-thinking-tokens", "3000"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(h.bodies()[1]["thinking"]["budget_tokens"], 3000);
    // The system prompt from files, as --system-prompt and --append-system-prompt.
    common::write(&h.path("sys.txt"), "You are a careful tester.");
    common::write(&h.path("more.txt"), "Always say which file.");
    let out = h.run(&["-p", "hi", "--system-prompt-file", "sys.txt", "--append-system-prompt-file", "more.txt"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let system = h.bodies()[2]["system"].to_string();
    assert!(system.contains("You are a careful tester.") && system.contains("Always say which file."), "{system}");
    assert!(!system.contains("You are tern"), "{system}");
    // Flags with no meaning for tern start the session and are named; values that cannot work are usage errors.
    let out = h
        .run(&["-p", "hi", "--plugin-dir", "plugins", "--include-hook-events", "--thinking-display", "summarized"])
        .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    for flag in ["--plugin-dir plugins", "--include-hook-events", "--thinking-display summarized"] {
        assert!(out.stderr.contains(flag), "{flag}: {}", out.stderr);
    }
    for (args, says) in [
        (&["-p", "hi", "--effort", "extreme"][..], "not an effort level"),
        (&["-p", "hi", "--max-budget-usd", "0"][..], "not a positive amount"),
        (&["-p", "hi", "--thinking", "sometimes"][..], "not a mode"),
        (&["-p", "hi", "--resume-session-at", "u-1"][..], "resumes a whole session"),
        (&["-p", "hi", "--system-prompt-file", "missing.txt"][..], "cannot read"),
    ] {
        let out = h.run(args).await;
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
    }
}

#[tokio::test]
async fn max_budget_stops_a_prompt_with_claudes_subtype() {
    let script = r#"{"turns":[
        {"tool_calls":[{"name":"bash","arguments":{"command":"echo one"}}]},
        {"text":"done"}
    ]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    // Priced so that the first response costs far more than the limit.
    common::write(
        &h.home.path().join("config.toml"),
        "[models.mock]\ninput_per_mtok = 100000.0\noutput_per_mtok = 100000.0\n",
    );
    let out = h.run(&["-p", "go", "--output-format", "json", "--max-budget-usd", "0.5"]).await;
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let result: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(result["subtype"], "error_max_budget_usd", "{result}");
    assert_eq!(result["is_error"], true);
    assert!(result["errors"][0].as_str().is_some_and(|e| e.contains("--max-budget-usd")), "{result}");
    // The tool call ran; the request after it was never sent.
    assert_eq!(h.bodies().len(), 1);
    // Without the limit the same prompt finishes.
    let out = h.run(&["-p", "go", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}

/// A subagent's spending counts as it goes: it stops itself at the limit,
/// not after its last turn (the parent waits on it and checks only then).
#[tokio::test]
async fn max_budget_stops_a_subagent_as_it_spends() {
    // Every response costs $0.10 (1,000 input tokens at $100 per million).
    let script = r#"{"turns":[
        {"when_request_contains":"CHILD-WORK","tool_calls":[{"name":"bash","arguments":{"command":"echo child"}}],
         "usage":{"input_tokens":1000,"output_tokens":0}},
        {"tool_calls":[{"name":"task","arguments":{"description":"work","prompt":"CHILD-WORK: keep going","subagent_type":"worker"}}],
         "usage":{"input_tokens":1000,"output_tokens":0}},
        {"text":"done","usage":{"input_tokens":1000,"output_tokens":0}}
    ]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    common::write(
        &h.home.path().join("config.toml"),
        "[models.mock]\ninput_per_mtok = 100.0\noutput_per_mtok = 100.0\n",
    );
    let out =
        h.run(&["-p", "delegate this to a subagent", "--output-format", "json", "--max-budget-usd", "0.15"]).await;
    let result: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(result["subtype"], "error_max_budget_usd", "{result}");
    let child_requests = h.bodies().iter().filter(|b| b["system"].to_string().contains("# Subagent")).count();
    // The main run's own spending is counted as of its last look (before the `task` call's turn),
    // so the subagent stops once its own two responses pass the limit — not after 60 turns.
    assert_eq!(child_requests, 2, "the subagent stops at $0.20 of $0.15");
}

#[tokio::test]
async fn fallback_model_answers_when_the_model_stays_overloaded() {
    let script = r#"{"turns":[
        {"when_request_contains":"\"model\":\"backup-model\"","text":"from the backup"},
        {"text":"never","faults":[{"status":529,"message":"Overloaded","repeat":true}]}
    ]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    common::write(
        &h.home.path().join("config.toml"),
        "[retry]\nmax_attempts = 2\nbase_delay_ms = 1\nmax_delay_ms = 2\n",
    );
    let out = h.run(&["-p", "hi", "--fallback-model", "backup-model", "-v"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "from the backup\n");
    assert!(out.stderr.contains("going on with `backup-model`"), "{}", out.stderr);
    let models: Vec<String> = h.bodies().iter().map(|b| b["model"].as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(models.last().map(String::as_str), Some("backup-model"), "{models:?}");
    // Without it, the overload is the run's error.
    let out = h.run(&["-p", "hi"]).await;
    assert_eq!(out.code, Some(1), "{}", out.stderr);
}

#[tokio::test]
async fn json_schema_ends_a_prompt_with_a_checked_answer() {
    let schema = r#"{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"],"additionalProperties":false}"#;
    // The first answer does not match: the model is told what is wrong and answers again.
    let script = r#"{"turns":[
        {"tool_calls":[{"name":"structured_output","arguments":{"count":"three"}}]},
        {"tool_calls":[{"name":"structured_output","arguments":{"count":3}}]},
        {"text":"never asked"}
    ]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    let out = h.run(&["-p", "count them", "--output-format", "json", "--json-schema", schema]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let result: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(result["structured_output"], json!({"count": 3}), "{result}");
    assert_eq!(result["subtype"], "success");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2, "the valid answer ends the run");
    let tools = common::tool_names(&bodies[0]);
    assert!(tools.contains(&"structured_output".to_string()), "{tools:?}");
    assert!(bodies[0]["system"].to_string().contains("call `structured_output` once"));
    let results = h.tool_results(&bodies[1]);
    assert!(results[0].1, "the bad answer is an error: {results:?}");

    // A model that never gives it is reminded, then the prompt fails with Claude's subtype.
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"a"},{"text":"b"},{"text":"c"}]}"#).await;
    let out = h.run(&["-p", "count them", "--output-format", "json", "--json-schema", schema]).await;
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let result: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(result["subtype"], "error_max_structured_output_retries", "{result}");
    assert_eq!(h.bodies().len(), 3);
    assert!(h.bodies()[1].to_string().contains("call `structured_output` now"));
    // A schema that cannot be one is a usage error.
    for (bad, says) in [("{", "not JSON"), (r#"{"type":"array"}"#, "must describe an object")] {
        let out = h.run(&["-p", "x", "--json-schema", bad]).await;
        assert_eq!(out.code, Some(2), "{bad}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{bad}: {}", out.stderr);
    }
}

#[tokio::test]
async fn sdk_control_requests_for_mcp_context_and_tasks() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"ok"},{"text":"ok"}]}"#).await;
    let server = crate::mcp::test_server().display().to_string();
    let config = json!({"mcpServers": {"calc": {"command": server}}}).to_string();
    let mut s = Streaming::start(&h, &["--mcp-config", &config]);
    let mut ask = async |id: &str, request: Value| {
        s.send(json!({"type": "control_request", "request_id": id, "request": request})).await;
        s.until(|v| v["type"] == "control_response" && v["response"]["request_id"] == id).await["response"].clone()
    };
    let status = ask("s1", json!({"subtype": "mcp_status"})).await;
    assert_eq!(status["subtype"], "success", "{status}");
    let calc = &status["response"]["mcpServers"][0];
    assert_eq!((calc["name"].as_str(), calc["status"].as_str()), (Some("calc"), Some("connected")), "{status}");
    assert_eq!(calc["config"]["type"], "stdio");
    // Off: its tools leave the next request; on again: they are back.
    let off = ask("t1", json!({"subtype": "mcp_toggle", "serverName": "calc", "enabled": false})).await;
    assert_eq!(off["response"]["status"], "disabled", "{off}");
    let on = ask("r1", json!({"subtype": "mcp_reconnect", "serverName": "calc"})).await;
    assert_eq!(on["response"]["status"], "connected", "{on}");
    let unknown = ask("r2", json!({"subtype": "mcp_reconnect", "serverName": "nope"})).await;
    assert_eq!(unknown["subtype"], "error");
    assert!(unknown["error"].as_str().unwrap().contains("no MCP server `nope`"), "{unknown}");
    let context = ask("c1", json!({"subtype": "get_context_usage"})).await;
    let usage = &context["response"];
    assert!(usage["totalTokens"].as_u64().unwrap() > 0, "{usage}");
    assert!(usage["categories"].as_array().unwrap().iter().any(|c| c["name"] == "tool definitions"), "{usage}");
    assert_eq!(usage["model"], "mock");
    let task = ask("k1", json!({"subtype": "stop_task", "task_id": "bg-404"})).await;
    assert_eq!(task["subtype"], "error", "{task}");
    // The init line says which Claude Code protocol level tern speaks.
    s.user("hi").await;
    let init = s.until(|v| v["type"] == "system" && v["subtype"] == "init").await;
    assert_eq!(init["claude_code_version"], "2.1.0", "{init}");
    s.until(|v| v["type"] == "result").await;
    let (code, _) = s.finish().await;
    assert_eq!(code, 0);
}

/// What the TypeScript SDK sends in `initialize` rather than as flags (its
/// in-process MCP servers, its system prompt) holds from the first request
/// when `initialize` is the first line; the servers are reached through
/// `mcp_message`, answered here by hand as the SDK answers them.
#[tokio::test]
async fn an_initialize_sent_first_brings_sdk_servers_and_the_system_prompt() {
    let script = r#"{"turns":[
        {"when_request_contains":"sum is 5","text":"five"},
        {"when_request_contains":"add please","tool_calls":[{"name":"mcp__calc__add","arguments":{"a":2,"b":3}}]}
    ]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    let mut s = Streaming::start(&h, &[]);
    let init = json!({"subtype": "initialize", "sdkMcpServers": ["calc"], "systemPrompt": ["You are a release bot."]});
    s.send(json!({"type": "control_request", "request_id": "init_1", "request": init})).await;
    let mut calls = Vec::new();
    let mut answer_until = async |s: &mut Streaming, stop: &dyn Fn(&Value) -> bool| loop {
        let v = s.until(|v| v["type"] == "control_request" || stop(v)).await;
        if stop(&v) {
            return v;
        }
        assert_eq!(v["request"]["subtype"], "mcp_message", "{v}");
        assert_eq!(v["request"]["server_name"], "calc", "{v}");
        let message = &v["request"]["message"];
        let result = match message["method"].as_str().unwrap() {
            "initialize" => json!({"protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}}, "serverInfo": {"name": "calc", "version": "1.0.0"}}),
            "tools/list" => json!({"tools": [{"name": "add", "description": "Add two numbers",
                "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}]}),
            "tools/call" => {
                calls.push(message["params"]["arguments"].clone());
                json!({"content": [{"type": "text", "text": "sum is 5"}]})
            }
            _ => json!({}),
        };
        let id = message.get("id").cloned().unwrap_or(json!(0));
        let mcp_response = json!({"jsonrpc": "2.0", "id": id, "result": result});
        s.send(json!({"type": "control_response", "response": {"subtype": "success",
            "request_id": v["request_id"], "response": {"mcp_response": mcp_response}}}))
            .await;
    };
    let answered = answer_until(&mut s, &|v| v["type"] == "control_response").await;
    assert_eq!(answered["response"]["subtype"], "success", "{answered}");
    assert_eq!(answered["response"]["request_id"], "init_1");
    let status = json!({"type": "control_request", "request_id": "s1", "request": {"subtype": "mcp_status"}});
    s.send(status).await;
    let status = answer_until(&mut s, &|v| v["type"] == "control_response").await;
    assert_eq!(status["response"]["response"]["mcpServers"][0]["status"], "connected", "{status}");
    s.user("add please").await;
    let result = answer_until(&mut s, &|v| v["type"] == "result").await;
    assert_eq!(result["result"], "five", "{result}");
    assert_eq!(calls, [json!({"a": 2, "b": 3})]);
    let first = &h.bodies()[0];
    assert!(common::tool_names(first).contains(&"mcp__calc__add".to_string()), "{first}");
    let system = first["system"].to_string();
    assert!(system.contains("You are a release bot.") && !system.contains("You are tern"), "{system}");
    let (code, _) = s.finish().await;
    assert_eq!(code, 0);
}

#[tokio::test]
async fn partial_messages_stream_tool_calls_as_they_are_written() {
    for wire in common::BOTH {
        let script = r#"{"turns":[{"text":"Looking.","tool_calls":[{"name":"read","arguments":{"path":"notes.txt"}}]},{"text":"done"}]}"#;
        let h = Harness::new(wire, script).await;
        write(&h.path("notes.txt"), "hello\n");
        let out = h.run(&["-p", "hi", "--output-format", "stream-json", "--include-partial-messages"]).await;
        assert_eq!(out.code, Some(0), "{wire:?}: {}", out.stderr);
        let events: Vec<Value> = out.events_of_type("stream_event").into_iter().map(|l| l["event"].clone()).collect();
        let start = events
            .iter()
            .find(|e| e["type"] == "content_block_start" && e["content_block"]["type"] == "tool_use")
            .unwrap_or_else(|| panic!("{wire:?}: no tool_use block: {events:?}"));
        assert_eq!(start["content_block"]["name"], "Read");
        let index = start["index"].clone();
        let json: String = events
            .iter()
            .filter(|e| e["index"] == index && e["delta"]["type"] == "input_json_delta")
            .filter_map(|e| e["delta"]["partial_json"].as_str())
            .collect();
        let input: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{wire:?}: {json}: {e}"));
        assert_eq!(input["path"], "notes.txt");
        // The text block before it was closed first.
        let text_stop = events.iter().position(|e| e["type"] == "content_block_stop").unwrap();
        let tool_start = events.iter().position(|e| e == start).unwrap();
        assert!(text_stop < tool_start, "{events:?}");
    }
}

#[tokio::test]
async fn rewind_files_puts_back_the_files_of_a_replayed_prompt() {
    // Turns by the conversation's replies so far: each prompt writes, then answers.
    let script = r#"{"turns":[
        {"tool_calls":[{"name":"write","arguments":{"path":"a.txt","content":"first\n"}}]},
        {"text":"written"},
        {"tool_calls":[{"name":"write","arguments":{"path":"b.txt","content":"second\n"}}]},
        {"text":"written again"}
    ]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    let mut s = Streaming::start(&h, &["--replay-user-messages"]);
    s.user("first change").await;
    let replay = s.until(|v| v["type"] == "user" && v["message"]["content"][0]["text"] == "first change").await;
    let first = replay["uuid"].as_str().unwrap().to_string();
    s.until(|v| v["type"] == "result").await;
    s.user("second change").await;
    s.until(|v| v["type"] == "result").await;
    assert!(h.path("a.txt").exists() && h.path("b.txt").exists());
    // Back to before the first prompt: what both prompts wrote is gone.
    s.send(json!({"type": "control_request", "request_id": "r1", "request": {"subtype": "rewind_files", "user_message_id": first}})).await;
    let r = s.until(|v| v["type"] == "control_response").await;
    assert_eq!(r["response"]["subtype"], "success", "{r}");
    assert!(!h.path("a.txt").exists() && !h.path("b.txt").exists(), "{r}");
    s.send(json!({"type": "control_request", "request_id": "r2", "request": {"subtype": "rewind_files", "user_message_id": "nope"}})).await;
    let r = s.until(|v| v["type"] == "control_response" && v["response"]["request_id"] == "r2").await;
    assert_eq!(r["response"]["subtype"], "error", "{r}");
    let (code, _) = s.finish().await;
    assert_eq!(code, 0);
}

#[tokio::test]
async fn an_mcp_servers_form_goes_to_the_caller_in_stream_json() {
    let sdk = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../support/python-sdk");
    let python = sdk.join(".venv/bin/python");
    if !python.exists() {
        eprintln!(
            "skipped: the Python MCP SDK is not installed in {} (`cargo xtask ci` installs it)",
            python.display()
        );
        return;
    }
    let script = r#"{"turns":[
        {"when_request_contains":"booked for","text":"booked"},
        {"tool_calls":[{"name":"mcp__forms__book","arguments":{}}]}
    ]}"#;
    let h = Harness::new(Wire::Anthropic, script).await;
    let server = sdk.join("form_server.py").display().to_string();
    let config =
        json!({"mcpServers": {"forms": {"command": python.display().to_string(), "args": [server]}}}).to_string();
    let mut s = Streaming::start(&h, &["--mcp-config", &config]);
    s.user("book a table").await;
    // The form comes as an `elicitation` control request (the SDKs' onElicitation); the answer fills it.
    let asked = s.until(|v| v["type"] == "control_request").await;
    let request = &asked["request"];
    assert_eq!(request["subtype"], "elicitation", "{asked}");
    assert_eq!(
        (request["mcp_server_name"].as_str(), request["message"].as_str()),
        (Some("forms"), Some("Booking a table"))
    );
    assert_eq!(request["requested_schema"]["properties"]["guests"]["type"], "integer", "{asked}");
    let answer = json!({"action": "accept", "content": {"guests": 3}});
    s.send(json!({"type": "control_response", "response": {"subtype": "success", "request_id": asked["request_id"], "response": answer}})).await;
    let result = s.until(|v| v["type"] == "result").await;
    assert_eq!(result["result"], "booked", "{result}");
    let results = h.tool_results(&h.bodies()[1]);
    assert_eq!(results[0].0.trim(), "booked for 3", "{results:?}");
    let (code, _) = s.finish().await;
    assert_eq!(code, 0);
}
