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
/// tools) is about 2,600 tokens, and bash keeps the last 2,000 lines (~10 KB,
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
        small_window(&h, 7500, 500, 2);
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
    small_window(&h, 5500, 500, 1);
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
    small_window(&h, 5500, 500, 1);
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
    small_window(&h, 5500, 500, 1);
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
