//! Ctrl+B in the real TUI: the model's running bash call goes to the
//! background, the model hears so at once (the mock's next request holds the
//! task's id), the status line counts the task, and quitting ends its
//! process group.

use crate::common;

use common::screen::{quit, start_with};
use common::{Harness, Wire};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_b_sends_the_running_command_to_the_background_until_tern_exits() {
    // `sleep 4021.5` is in the command's group (the sandbox may give it a pid namespace of its own,
    // so the test finds it by its arguments, not by a pid the command reports).
    // The line it prints is not in the command's text, which the cell's header shows at once.
    let command = "sleep 4021.5 & echo started-$((4000 + 21)); wait";
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
            {"text": "REPLY-AFTER-MOVE"}
        ]})
        .to_string(),
    )
    .await;
    let mut s = start_with(&h, &["--permission-mode", "bypass"]);
    s.wait_for("Ask tern");
    s.type_text("start the server\r");
    s.wait_for("started-4021");
    s.send(b"\x02");
    s.wait_for("REPLY-AFTER-MOVE");
    s.wait_for("in the background as bg-1");
    s.wait_idle();
    let text = s.text();
    let status = text.trim_end().lines().last().unwrap_or_default().to_string();
    assert!(status.contains("· 1 bg"), "{text}");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2, "the call returned and the model was asked again");
    let results = h.tool_results(&bodies[1]);
    assert!(
        matches!(results.as_slice(), [(r, false)] if r.contains("started-4021") && r.contains("moved this command to the background") && r.contains("task_output {\"id\": \"bg-1\"}")),
        "{results:?}"
    );
    assert!(!common::processes_matching("sleep 4021.5").is_empty(), "it goes on after its call returned");
    quit(&mut s);
    assert_eq!(common::wait_gone("sleep 4021.5").await, Vec::<u32>::new(), "the moved command outlived tern");
}

/// `/tasks` shows a background subagent's progress: its state, turns and
/// tokens, what it does now, and the appends it has not read yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_shows_a_background_subagents_progress_and_waiting_appends() {
    let h = Harness::new(
        Wire::Anthropic,
        &json!({"turns": [
            {"when_request_contains": "You are a subagent (worker)", "tool_calls": [{"name": "bash", "arguments":
                {"command": "touch started; while [ ! -e go ]; do sleep 0.05; done"}}]},
            {"tool_calls": [{"name": "task", "arguments": {"description": "count files", "prompt": "Count the files",
                "subagent_type": "worker", "run_in_background": true}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "while [ ! -e started ]; do sleep 0.05; done"}}]},
            {"tool_calls": [{"name": "task_append", "arguments": {"id": "bg-1", "prompt": "ALSO-COUNT the tests"}}]},
            {"text": "PARENT-IDLE"}
        ]})
        .to_string(),
    )
    .await;
    let mut s = start_with(&h, &["--permission-mode", "bypass"]);
    s.wait_for("Ask tern");
    s.type_text("count in the background\r");
    s.wait_for("PARENT-IDLE");
    s.wait_idle();
    s.type_text("/tasks\r");
    s.wait_for("subagent worker · running · 1 turns");
    s.wait_for("appends waiting to be read: 1");
    let text = s.text();
    assert!(text.contains("bg-1  running"), "{text}");
    assert!(text.contains("last activity: bash touch started;"), "{text}");
    assert!(text.contains("- ALSO-COUNT the tests"), "{text}");
    std::fs::write(h.path("go"), "").unwrap();
    quit(&mut s);
}
