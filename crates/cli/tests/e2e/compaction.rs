//! Compaction through the real binary against the mock, with a small
//! configured context window: the summary request is sent (old tool results
//! archived first), the next request is smaller and keeps the todo list and
//! the last turn, a resume starts from the summary, and "prompt too long"
//! compacts and tries again.

use crate::common;

use common::{BOTH, Harness, Wire};
use serde_json::{Value, json};

const MARKER: &str = "[tern: compaction request]";

/// A small window for the mock model; the base request (system prompt and
/// tools, rarely used built-ins waiting behind tool_search) is about 1,900
/// tokens, and bash keeps the last 2,000 lines (~10 KB,
/// ~2,700 tokens) of an output.
fn small_window(h: &Harness, window: u64, reserve: u64, keep: usize) {
    let config = format!(
        "[retry]\nbase_delay_ms = 1\nmax_delay_ms = 20\n\n[models.mock]\ncontext_window = {window}\nmax_output = 1000\n\n\
         [compaction]\nreserve_tokens = {reserve}\nkeep_turns = {keep}\n"
    );
    std::fs::write(h.home.path().join("config.toml"), config).unwrap();
}

fn has(body: &Value, needle: &str) -> bool {
    body.to_string().contains(needle)
}

#[tokio::test]
async fn near_the_window_the_conversation_is_summarised_and_resumes_from_the_summary() {
    for wire in BOTH {
        let script = json!({"turns": [
            {"when_request_contains": MARKER, "text": "SUMMARY-TEXT: counted with seq; all went fine."},
            {"when_request_contains": "fourth prompt", "text": "four done"},
            {"when_request_contains": "third prompt", "text": "three done"},
            {"tool_calls": [
                {"name": "todo_write", "arguments": {"todos": [{"content": "count the numbers", "active_form": "Counting the numbers", "status": "in_progress"}]}},
                {"name": "bash", "arguments": {"command": "seq 1 2000"}}
            ]},
            {"text": "one done"},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "seq 5001 6000"}}]},
            {"text": "two done"}
        ]})
        .to_string();
        let h = Harness::new(wire, &script).await;
        small_window(&h, 5700, 500, 2);
        for (args, answer) in [
            (vec!["-p", "first prompt"], "one done"),
            (vec!["-c", "-p", "second prompt"], "two done"),
            (vec!["-c", "-p", "third prompt", "--output-format", "tern-events"], ""),
        ] {
            let out = h.run(&args).await;
            assert_eq!(out.code, Some(0), "{wire:?} {args:?}: {}", out.stderr);
            assert!(out.stdout.contains(answer), "{wire:?}: {}", out.stdout);
        }
        let bodies = h.bodies();
        let summary_at = bodies.iter().position(|b| has(b, MARKER)).expect("a summary request was sent");
        let ask = &bodies[summary_at];
        // Old tool results were archived before the summary was asked for.
        assert!(!has(ask, "\\n1000\\n1001\\n"), "{wire:?}: the big result went as a receipt");
        assert!(has(ask, "saved at"), "{wire:?}");
        let before = &bodies[summary_at - 1];
        let after = &bodies[summary_at + 1];
        assert!(after.to_string().len() < before.to_string().len(), "{wire:?}: the request after is smaller");
        assert!(has(after, "SUMMARY-TEXT"), "{wire:?}");
        assert!(has(after, "count the numbers"), "{wire:?}: the todo list is kept");
        assert!(has(after, "5999"), "{wire:?}: the last turn stays verbatim");
        assert!(!has(after, "first prompt"), "{wire:?}: the first turn is summarised");
        // The stream shows the compaction.
        let out = h.run(&["-c", "-p", "fourth prompt"]).await;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        let last = h.bodies().pop().unwrap();
        assert!(has(&last, "SUMMARY-TEXT") && !has(&last, "first prompt"), "{wire:?}: resumed from the summary");
        assert!(has(&last, "three done"), "{wire:?}");
    }
}

#[tokio::test]
async fn the_compaction_event_is_in_the_stream() {
    let script = json!({"turns": [
        {"when_request_contains": MARKER, "text": "SUMMARY-TEXT"},
        {"when_request_contains": "second prompt", "text": "two done"},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "seq 1 3000"}}]},
        {"text": "one done"}
    ]})
    .to_string();
    let h = Harness::new(Wire::Anthropic, &script).await;
    small_window(&h, 3700, 500, 1);
    let first = h.run(&["-p", "first prompt"]).await;
    assert_eq!(first.code, Some(0));
    // One turn that nears the window has nothing before it to summarise: it goes on without a word.
    assert!(!first.stderr.contains("compact"), "{}", first.stderr);
    let out = h.run(&["-c", "-p", "second prompt", "--output-format", "tern-events"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let c = out.events_of_type("compaction");
    assert_eq!(c.len(), 1, "{}", out.stdout);
    assert_eq!(c[0]["reason"], "auto");
    assert!(c[0]["tokens_after"].as_u64() < c[0]["tokens_before"].as_u64());
}

#[tokio::test]
async fn prompt_too_long_compacts_and_tries_again_once() {
    let script = json!({"turns": [
        {"when_request_contains": MARKER, "text": "SUMMARY-TEXT"},
        {"when_request_contains": "second prompt", "text": "two done",
         "faults": [{"status": 400, "message": "prompt is too long: 210000 tokens > 200000 maximum"}]},
        {"text": "one done"}
    ]})
    .to_string();
    let h = Harness::new(Wire::Anthropic, &script).await;
    // A large window: only the provider's refusal starts this compaction.
    small_window(&h, 200_000, 1000, 1);
    assert_eq!(h.run(&["-p", "first prompt"]).await.code, Some(0));
    let out = h.run(&["-c", "-p", "second prompt"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "two done");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 4, "first, refused, summary, retry");
    assert!(has(&bodies[2], MARKER));
    assert!(has(&bodies[3], "SUMMARY-TEXT") && !has(&bodies[3], "first prompt"));
}

#[tokio::test]
async fn a_failed_summary_leaves_the_conversation_whole() {
    let script = json!({"turns": [
        {"when_request_contains": MARKER, "faults": [{"status": 500, "message": "boom", "repeat": true}]},
        {"when_request_contains": "second prompt", "text": "two done"},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "seq 1 3000"}}]},
        {"text": "one done"}
    ]})
    .to_string();
    let h = Harness::new(Wire::OpenAi, &script).await;
    small_window(&h, 3700, 500, 1);
    assert_eq!(h.run(&["-p", "first prompt"]).await.code, Some(0));
    let out = h.run(&["-c", "-p", "second prompt"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("compaction failed, the conversation is unchanged"), "{}", out.stderr);
    let last = h.bodies().pop().unwrap();
    assert!(has(&last, "first prompt") && has(&last, "2999"), "nothing was lost: {last}");
}

#[tokio::test]
async fn a_run_that_fills_the_window_between_turns_is_compacted_and_goes_on() {
    let script = json!({"turns": [
        {"when_request_contains": MARKER, "text": "SUMMARY-TEXT"},
        {"text": "one done"},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "seq 1 3000"}}]},
        {"text": "two done"}
    ]})
    .to_string();
    let h = Harness::new(Wire::Anthropic, &script).await;
    small_window(&h, 3700, 500, 1);
    assert_eq!(h.run(&["-p", "first prompt"]).await.code, Some(0));
    let out = h.run(&["-c", "-p", "second prompt", "--output-format", "tern-events"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let c = out.events_of_type("compaction");
    assert_eq!(c.len(), 1, "{}", out.stdout);
    let result = out.events_of_type("result").pop().unwrap();
    assert_eq!(result["result"], "two done", "{result}");
    let last = h.bodies().pop().unwrap();
    assert!(has(&last, "SUMMARY-TEXT") && !has(&last, "first prompt") && has(&last, "2999"), "{last}");
}

/// With the tools described in the prompt (a server that refuses `tools`,
/// as llama.cpp's does without Jinja), the summary request goes the same way.
#[tokio::test]
async fn in_prompt_form_the_summary_request_carries_no_tools_either() {
    let call = "<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"seq 1 3000\"}}</tool_call>";
    let script = json!({"refuse_tools": true, "turns": [
        {"when_request_contains": MARKER, "text": "SUMMARY-TEXT"},
        {"text": "one done"},
        {"text": call},
        {"text": "two done"}
    ]})
    .to_string();
    let h = Harness::new(Wire::OpenAi, &script).await;
    small_window(&h, 3700, 500, 1);
    let first = h.run(&["-p", "first prompt", "--tool-call-format", "prompt"]).await;
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let out =
        h.run(&["-c", "-p", "second prompt", "--output-format", "tern-events", "--tool-call-format", "prompt"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.events_of_type("compaction").len(), 1, "{}", out.stdout);
    let bodies = h.bodies();
    let summary = bodies.iter().find(|b| has(b, MARKER)).expect("a summary request was sent");
    assert!(summary.get("tools").is_none(), "{summary}");
    let last = bodies.last().unwrap();
    assert!(last.get("tools").is_none(), "{last}");
    assert!(has(last, "SUMMARY-TEXT") && has(last, "2999"), "{last}");
    // The kept turn's call and result went as text.
    assert!(has(last, "<tool_call>") && has(last, "<tool_response name=\\\"bash\\\">"), "{last}");
}

/// A session file of `turns` turns (a prompt and a reply of `reply_bytes`)
/// that ran in the harness's workspace, written as tern writes one.
fn long_session(h: &Harness, id: &str, turns: usize, reply_bytes: usize) {
    let cwd = std::fs::canonicalize(h.workspace.path()).unwrap();
    let header = json!({"type": "session", "version": 1, "id": id, "cwd": cwd, "provider": "anthropic",
        "model": "mock", "tern_version": "0", "started_at": "2026-12-01T00:00:00Z"});
    let mut lines = vec![header.to_string()];
    let mut parent: Option<String> = None;
    for i in 0..turns {
        for (role, text) in
            [("user", format!("old prompt {i}")), ("assistant", format!("old reply {i} {}", "x".repeat(reply_bytes)))]
        {
            let entry_id = format!("e{}", lines.len());
            lines.push(
                json!({"id": entry_id, "parent": parent, "type": "message",
                    "message": {"role": role, "content": [{"type": "text", "text": text}]}})
                .to_string(),
            );
            parent = Some(entry_id);
        }
    }
    let dir = h.home.path().join("sessions");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{id}.jsonl")), lines.join("\n") + "\n").unwrap();
}

#[tokio::test]
async fn a_resumed_history_larger_than_the_window_is_compacted_in_parts_before_the_next_prompt() {
    // The provider refuses any request over about 30,000 tokens, as a real one refuses one over its window.
    let script = json!({"max_request_bytes": 120_000, "turns": [
        {"when_request_contains": MARKER, "text": "SUMMARY-SO-FAR"},
        {"when_request_contains": "the next prompt", "text": "answered after the compaction"}
    ]})
    .to_string();
    let h = Harness::new(Wire::Anthropic, &script).await;
    small_window(&h, 30_000, 2_000, 2);
    // About 150,000 tokens: five windows.
    long_session(&h, "20261201-000000-long01", 150, 4_000);
    let out = h.run(&["-c", "-p", "the next prompt", "--output-format", "stream-json", "--verbose"]).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stderr, out.stdout);
    assert!(out.stdout.contains("answered after the compaction"), "{}", out.stdout);
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(said.contains("more than mock's window of 30000"), "the person is told: {said}");
    let bodies = h.bodies();
    let asks: Vec<&Value> = bodies.iter().filter(|b| has(b, MARKER)).collect();
    assert!(asks.len() >= 5, "summarised in parts: {} requests", asks.len());
    // Every request fitted the provider's limit, and each part after the first carried the summary so far.
    assert!(bodies.iter().all(|b| b.to_string().len() < 120_000), "no request over the window");
    assert!(asks[1..].iter().all(|b| has(b, "SUMMARY-SO-FAR")), "each part builds on the summary so far");
    let last = bodies.last().unwrap();
    assert!(has(last, "SUMMARY-SO-FAR") && has(last, "the next prompt"), "{last}");
    assert!(!has(last, "old prompt 3 "), "the old turns are summarised");
    // The next resume starts from the summary: no compaction, no notice.
    let again = h.run(&["-c", "-p", "the next prompt again"]).await;
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    assert!(!again.stderr.contains("more than mock's window"), "{}", again.stderr);
}
