//! Background commands through the real binary: a small HTTP server started
//! with `run_in_background`, queried by a later call, its output read with
//! `task_output`, stopped with `task_stop`; and nothing left running after
//! tern exits, even for a task nobody stopped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Harness, Wire, processes_matching, wait_gone, write};
use serde_json::{Value, json};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test]
async fn a_background_server_is_queried_read_and_stopped_and_nothing_outlives_tern() {
    let port = free_port();
    let server = format!("python3 -u -m http.server {port} --bind 127.0.0.1");
    // Waits for the server within the command itself (bounded), then fetches a file.
    let query = format!(
        "for i in $(seq 100); do curl -sf http://127.0.0.1:{port}/marker.txt && exit 0; sleep 0.1; done; exit 1"
    );
    let leftover = "sleep 4095.75";
    let script = json!({"turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": server, "run_in_background": true}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": query}}]},
        {"tool_calls": [{"name": "task_output", "arguments": {"id": "bg-1", "filter": "GET /marker"}}]},
        {"tool_calls": [{"name": "task_stop", "arguments": {"id": "bg-1"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": leftover, "run_in_background": true}}]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    write(&h.path("marker.txt"), "SERVED-FROM-BACKGROUND\n");
    let out = h.run(&["-p", "serve it", "--output-format", "json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h.bodies();
    let result_of = |i: usize| h.tool_results(&bodies[i]).last().cloned().unwrap();
    let (started, failed) = result_of(1);
    assert!(!failed && started.contains("Started in the background as bg-1"), "{started}");
    let (fetched, failed) = result_of(2);
    assert!(!failed && fetched.contains("SERVED-FROM-BACKGROUND"), "{fetched}");
    let (log, failed) = result_of(3);
    assert!(!failed && log.contains("GET /marker.txt") && log.contains("bg-1 running"), "{log}");
    assert!(!log.contains("Serving HTTP"), "the filter keeps only matching lines: {log}");
    let (stopped, _) = result_of(4);
    assert!(stopped.contains("bg-1 stopped"), "{stopped}");
    // The result lists the tasks; the unstopped one is stopped as tern exits.
    let result: Value = serde_json::from_str(&out.stdout).unwrap();
    let tasks = result["background_tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2, "{result}");
    assert_eq!(tasks[0]["status"], "stopped");
    assert_eq!(tasks[1]["status"], "running");
    assert_eq!(wait_gone(&format!("http.server {port}")).await, Vec::<u32>::new());
    assert_eq!(wait_gone(leftover).await, Vec::<u32>::new(), "a task nobody stopped ends with tern");
    assert!(processes_matching(leftover).is_empty());
}

#[tokio::test]
async fn unknown_tasks_and_bad_filters_say_what_exists() {
    let script = json!({"turns": [
        {"tool_calls": [{"name": "task_output", "arguments": {"id": "bg-9"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo one; echo two", "run_in_background": true}}]},
        {"tool_calls": [{"name": "task_output", "arguments": {"id": "bg-1", "filter": "("}}]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let out = h.run(&["-p", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h.bodies();
    let (missing, failed) = h.tool_results(&bodies[1]).last().cloned().unwrap();
    assert!(failed && missing.contains("no background task `bg-9`; tasks: none"), "{missing}");
    let (bad, failed) = h.tool_results(&bodies[3]).last().cloned().unwrap();
    assert!(failed && bad.contains("not a valid regex"), "{bad}");
}
