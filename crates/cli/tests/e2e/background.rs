//! Background commands through the real binary: a small HTTP server started
//! with `run_in_background`, queried by a later call, its output read with
//! `task_output`, stopped with `task_stop`; and nothing left running after
//! tern exits, even for a task nobody stopped.

use crate::common;

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

#[tokio::test]
async fn a_second_interrupt_still_stops_background_commands() {
    use tokio::io::AsyncBufReadExt;
    let background = "sleep 4097.25";
    // Says when TERM comes and keeps running: the first interrupt waits for it; the second exits at once.
    let foreground = "trap 'touch got-term-4097' TERM; echo started; while true; do sleep 0.2 & wait; done";
    let script = json!({"turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": background, "run_in_background": true}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": foreground}}]},
        {"text": "unreachable"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let mut child = h.command(&["-p", "go", "--output-format", "tern-events"]).spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    while let Some(line) = lines.next_line().await.unwrap() {
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["type"] == "tool_execution_update" && v["text"].as_str().unwrap_or("").contains("started") {
            break;
        }
    }
    assert!(!processes_matching(background).is_empty(), "the background command runs");
    let pid = child.id().unwrap() as i32;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGINT) };
    // The first interrupt reached the command (its trap leaves a file and it goes on); now the second.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !h.path("got-term-4097").exists() {
        assert!(std::time::Instant::now() < deadline, "the command never got TERM");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    unsafe { libc::kill(pid, libc::SIGINT) };
    let status = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(wait_gone(background).await, Vec::<u32>::new(), "stopped on the way out");
    // The foreground command may outlive a second interrupt (issue 17, D7): clean up after the test.
    for pid in processes_matching("got-term-4097") {
        // SAFETY: killing a leftover of this test.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
}

/// What a short background command printed right before it exited is all
/// there for task_output, to the last line, and so is what its own child
/// printed just after (the pipe is drained, within a bound, as for bash).
#[tokio::test]
async fn the_last_output_of_an_ended_task_is_kept() {
    let script = json!({"turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "(while kill -0 $$ 2>/dev/null; do :; done; echo late) & seq 1 20000", "run_in_background": true}}]},
        {"tool_calls": [{"name": "task_output", "arguments": {"id": "bg-1", "wait": true, "filter": "^(1|20000|late)$"}}]},
        {"text": "done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let out = h.run(&["-p", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let (read, failed) = h.tool_results(&h.bodies()[2]).last().cloned().unwrap();
    assert!(!failed && read.contains("1\n20000\nlate\n") && read.contains("exited with code 0"), "{read}");
}
