//! A bash call running in the foreground moved to the background (Ctrl+B):
//! its call returns at once with the task's id, the same process goes on as
//! a `bg-N` task whose output `task_output` reads, tern's exit ends its
//! group, and only a running call can be moved.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tern_agent_loop::{Tool, ToolContext, UpdateSink};
use tern_protocol::{TaskStatus, TaskSummary, ToolDetails, ToolResultContent};
use tern_tools::ToolEnv;
use tern_tools::bash::BashTool;
use tokio_util::sync::CancellationToken;

use crate::processes::{assert_no_process_left, processes_with_arg};

const HANG_GUARD: Duration = Duration::from_secs(10);

fn ctx() -> ToolContext {
    ToolContext { call_id: "call_1".into(), tool_name: "bash".into(), confinement: None, judged: None }
}

/// Output the call streamed so far, and a sink that adds to it.
fn seen() -> (Arc<Mutex<String>>, UpdateSink) {
    let seen = Arc::new(Mutex::new(String::new()));
    let sink = seen.clone();
    (seen, Arc::new(move |s| sink.lock().unwrap().push_str(&s)))
}

async fn until(what: &str, cond: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + HANG_GUARD;
    while !cond() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn text(content: &[ToolResultContent]) -> String {
    content
        .iter()
        .filter_map(|c| if let ToolResultContent::Text { text } = c { Some(text.as_str()) } else { None })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_call_goes_on_as_a_background_task_and_its_call_returns() {
    let ws = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let env = Arc::new(ToolEnv::new(ws.path(), out.path()));
    let heard: Arc<Mutex<Vec<TaskSummary>>> = Arc::default();
    let h = heard.clone();
    env.background.set_listener(Arc::new(move |t| h.lock().unwrap().push(t)));
    let tool = BashTool::new(env.clone());
    let (seen, sink) = seen();
    let command = "echo before; while [ ! -e go ]; do sleep 0.02; done; echo after";
    let call = tool.execute(ctx(), json!({"command": command}), CancellationToken::new(), sink);
    let mover = async {
        until("the command printed", || seen.lock().unwrap().contains("before")).await;
        env.background.move_foreground().await
    };
    let (result, moved) = tokio::time::timeout(HANG_GUARD, async { tokio::join!(call, mover) }).await.unwrap();
    assert_eq!(moved, vec![Ok("bg-1".to_string())]);
    let result = result.unwrap();
    let said = text(&result.content);
    assert!(said.starts_with("before\n"), "the output so far goes with the result: {said}");
    assert!(said.contains("moved this command to the background") && said.contains("task_output {\"id\": \"bg-1\"}"));
    assert!(matches!(result.details.as_deref(), Some(ToolDetails::Background(b)) if b.background_task == "bg-1"));
    // The same process goes on: what it prints from now on is the task's.
    std::fs::write(ws.path().join("go"), "").unwrap();
    env.background.wait("bg-1", HANG_GUARD, &CancellationToken::new()).await.unwrap();
    let (later, summary) = env.background.output("bg-1", None).unwrap();
    assert_eq!(later, "after\n");
    assert_eq!(summary.status, TaskStatus::Exited { exit_code: Some(0) });
    assert_eq!(summary.command, command);
    until("its end is heard", || heard.lock().unwrap().len() == 2).await;
    let heard: Vec<TaskStatus> = heard.lock().unwrap().iter().map(|t| t.status).collect();
    assert_eq!(heard, vec![TaskStatus::Running, TaskStatus::Exited { exit_code: Some(0) }]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_command_is_ended_with_its_group_when_tern_exits() {
    let ws = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let env = Arc::new(ToolEnv::new(ws.path(), out.path()));
    let tool = BashTool::new(env.clone());
    let (a, b) = (format!("4001.{}", std::process::id()), format!("4003.{}", std::process::id()));
    let (seen, sink) = seen();
    let command = format!("sleep {a} & echo started; sleep {b}");
    let call = tool.execute(ctx(), json!({"command": command}), CancellationToken::new(), sink);
    let mover = async {
        until("the command started", || seen.lock().unwrap().contains("started")).await;
        env.background.move_foreground().await
    };
    let (result, moved) = tokio::time::timeout(HANG_GUARD, async { tokio::join!(call, mover) }).await.unwrap();
    assert!(result.is_ok() && moved == vec![Ok("bg-1".to_string())], "{moved:?}");
    // The call returned and both processes of its group still run.
    assert_eq!((processes_with_arg(&a).len(), processes_with_arg(&b).len()), (1, 1));
    // Nothing is left to move now.
    assert!(env.background.move_foreground().await.is_empty());
    env.background.stop_all();
    assert_no_process_left(&[&a, &b]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_room_for_another_task_the_call_stays_in_the_foreground() {
    let ws = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let env = Arc::new(ToolEnv::new(ws.path(), out.path()));
    let held: Vec<_> = (0..tern_tools::background::MAX_RUNNING)
        .map(|i| env.background.start_detached(out.path(), &format!("holder {i}")).unwrap())
        .collect();
    let tool = BashTool::new(env.clone());
    let (seen, sink) = seen();
    let command = "echo before; while [ ! -e go ]; do sleep 0.02; done; echo after";
    let call = tool.execute(ctx(), json!({"command": command}), CancellationToken::new(), sink);
    let mover = async {
        until("the command printed", || seen.lock().unwrap().contains("before")).await;
        let moved = env.background.move_foreground().await;
        std::fs::write(ws.path().join("go"), "").unwrap();
        moved
    };
    let (result, moved) = tokio::time::timeout(HANG_GUARD, async { tokio::join!(call, mover) }).await.unwrap();
    assert!(matches!(moved.as_slice(), [Err(why)] if why.contains("already running")), "{moved:?}");
    let result = result.unwrap();
    assert_eq!(text(&result.content), "before\nafter\n[Exit code: 0]");
    drop(held);
}
