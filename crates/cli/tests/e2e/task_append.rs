//! `task_append` through the real binary: more work for a background
//! subagent reaches its next request and its answer; a finished one refuses
//! it naming its state; `task_output` reports the subagent's progress; the
//! append shows in stream-json as a user line of the child.

use crate::common;

use common::{Harness, Wire};
use serde_json::{Value, json};

/// The child's second request carries the appended text as a text block of
/// its own (the parent's requests carry it only as `prompt`).
const DELIVERED: &str = r#""text":"ALSO-COUNT the tests""#;

fn parent_bodies(h: &Harness) -> Vec<Value> {
    h.bodies().into_iter().filter(|b| !b.to_string().contains("You are a subagent")).collect()
}

fn last_result(h: &Harness, body: &Value) -> (String, bool) {
    h.tool_results(body).last().cloned().unwrap()
}

/// The child blocks in a command until the parent lets it go, so the append
/// comes while it is mid-turn; the parent waits for that command to start.
#[tokio::test]
async fn an_append_to_a_child_mid_turn_reaches_its_next_request_and_its_answer() {
    let script = json!({"turns": [
        {"when_request_contains": DELIVERED, "text": "counted the files and, as asked after, the tests"},
        {"when_request_contains": "You are a subagent (worker)", "tool_calls": [{"name": "bash", "arguments":
            {"command": "touch started; while [ ! -e go ]; do sleep 0.05; done; echo released"}}]},
        {"tool_calls": [{"name": "task", "arguments": {"description": "count", "prompt": "Count the files",
            "subagent_type": "worker", "run_in_background": true}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "while [ ! -e started ]; do sleep 0.05; done"}}]},
        {"tool_calls": [{"name": "task_append", "arguments": {"id": "bg-1", "prompt": "ALSO-COUNT the tests"}}]},
        {"tool_calls": [{"name": "task_output", "arguments": {"id": "bg-1"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "touch go"}}]},
        {"tool_calls": [{"name": "task_output", "arguments": {"id": "bg-1", "wait": true}}]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let out = h.run(&["-p", "go", "--output-format", "stream-json", "--verbose"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let parent = parent_bodies(&h);

    let (queued, failed) = last_result(&h, &parent[3]);
    assert!(!failed && queued.starts_with("Queued for bg-1 (1 waiting)"), "{queued}");
    // Mid-turn: running, in its command, the append waiting.
    let (running, _) = last_result(&h, &parent[4]);
    assert!(running.contains("[bg-1 running"), "{running}");
    assert!(running.contains("subagent worker · running · 1 turns"), "{running}");
    assert!(running.contains("last activity: bash touch started; while"), "{running}");
    assert!(running.contains("appends waiting to be read: 1\n  - ALSO-COUNT the tests"), "{running}");

    // The child's next request carries it, after its command's result.
    let child: Vec<Value> =
        h.bodies().into_iter().filter(|b| b.to_string().contains("You are a subagent (worker)")).collect();
    assert_eq!(child.len(), 2, "two child requests");
    let messages = child[1]["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(last.to_string().contains("ALSO-COUNT the tests"), "{last}");
    assert!(messages[messages.len() - 2].to_string().contains("released"), "the command's result comes first");

    // Its answer reflects it, and the report is whole.
    let (answer, failed) = last_result(&h, &parent[6]);
    assert!(!failed && answer.contains("as asked after, the tests"), "{answer}");
    assert!(answer.contains("[bg-1 exited with code 0"), "{answer}");
    assert!(answer.contains("subagent worker · finished · 2 turns ·"), "{answer}");
    assert!(answer.contains(" tokens in, ") && answer.contains("appends read: 1"), "{answer}");
    assert!(!answer.contains("waiting to be read"), "{answer}");

    // stream-json: the append as a user line of the child; task_output's details whole.
    let lines: Vec<Value> = out.stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let appended = lines
        .iter()
        .find(|l| l["type"] == "user" && l["message"]["content"][0]["text"] == "ALSO-COUNT the tests")
        .expect("the append as a user line");
    assert!(appended["parent_tool_use_id"].as_str().is_some_and(|p| !p.is_empty()), "{appended}");
    let report = lines
        .iter()
        .filter_map(|l| l["tool_use_result"]["subagent"].as_object())
        .find(|s| s["state"] == "finished")
        .expect("task_output's details");
    assert_eq!(report["subagent_type"], "worker");
    assert_eq!(report["turns"], 2);
    assert_eq!(report["delivered"], 1);
    assert!(report["usage"]["input_tokens"].as_u64().unwrap() > 0, "{report:?}");
    assert!(report["last_activity"]["what"].as_str().is_some(), "{report:?}");
}

#[tokio::test]
async fn an_append_to_a_finished_child_is_refused_naming_its_state() {
    let script = json!({"turns": [
        {"when_request_contains": "You are a subagent (explore)", "text": "quick answer"},
        {"tool_calls": [{"name": "task", "arguments": {"description": "look", "prompt": "Look", "run_in_background": true}}]},
        {"tool_calls": [{"name": "task_output", "arguments": {"id": "bg-1", "wait": true}}]},
        {"tool_calls": [{"name": "task_append", "arguments": {"id": "bg-1", "prompt": "and more"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "true", "run_in_background": true}}]},
        {"tool_calls": [{"name": "task_append", "arguments": {"id": "bg-2", "prompt": "more"}}]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let out = h.run(&["-p", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let parent = parent_bodies(&h);
    let (answer, _) = last_result(&h, &parent[2]);
    assert!(answer.contains("quick answer") && answer.contains("subagent explore · finished · 1 turns"), "{answer}");
    let (refused, failed) = last_result(&h, &parent[3]);
    assert!(failed, "{refused}");
    assert!(refused.contains("task bg-1 has finished (it answered): it takes no more instructions"), "{refused}");
    assert!(refused.contains("start a new `task`"), "{refused}");
    // A background command is no subagent.
    let (refused, failed) = last_result(&h, &parent[5]);
    assert!(failed && refused.contains("bg-2 is a background command, not a subagent"), "{refused}");
}
