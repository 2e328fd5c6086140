//! Ctrl+B as the session core has it (`Command::MoveToBackground`): a bash
//! call waiting for its approval cannot be moved; once allowed and running
//! it can, its call returns to the model with the task's id, the process
//! goes on as `bg-1`, and the session's end stops it with its group.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tern_protocol::{AgentEvent, Command, TaskStatus};
use tern_runtime::apply::{CommandError, Outcome};
use tern_runtime::{Overrides, PermissionAnswer, PermissionPrompt, PermissionRequest, Runtime};
use tokio::sync::{mpsc, oneshot};

/// Hands each question to the test, which answers when it likes.
struct Held(mpsc::UnboundedSender<oneshot::Sender<PermissionAnswer>>);

impl PermissionPrompt for Held {
    fn ask(&self, _request: PermissionRequest) -> BoxFuture<'_, PermissionAnswer> {
        let (reply, answer) = oneshot::channel();
        let _ = self.0.send(reply);
        Box::pin(async move { answer.await.unwrap_or(PermissionAnswer::Unanswered) })
    }
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

async fn until(what: &str, cond: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_an_allowed_running_call_moves_and_the_session_end_stops_it() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let command = "echo $$ > group.pid; echo started; sleep 300";
    let script = serde_json::json!({"turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
        {"text": "done"}
    ]});
    let server = tern_mock_llm::MockServer::start(tern_mock_llm::Script::from_json(&script.to_string()).unwrap(), None)
        .await
        .unwrap();
    let overrides = Overrides {
        provider: Some("anthropic".into()),
        base_url: Some(server.url()),
        model: Some("mock".into()),
        cwd: Some(work.path().to_path_buf()),
        tern_home: Some(home.path().to_path_buf()),
        ..Default::default()
    };
    let (asks_tx, mut asks) = mpsc::unbounded_channel();
    let mut rt = Runtime::new(overrides).await.unwrap();
    rt.set_permission_prompt(Arc::new(Held(asks_tx)));
    let seen: Arc<Mutex<Vec<AgentEvent>>> = Arc::default();
    let events: tern_agent_loop::EventSink = {
        let seen = seen.clone();
        Arc::new(move |e| seen.lock().unwrap().push(e))
    };
    let heard: Arc<Mutex<Vec<AgentEvent>>> = Arc::default();
    let h = heard.clone();
    rt.watch_background(Arc::new(move |e| h.lock().unwrap().push(e)));
    let quiet: tern_agent_loop::EventSink = Arc::new(|_| {});

    let driver = async {
        let reply = asks.recv().await.unwrap();
        // Waiting for its answer: not running, so nothing to move.
        let early = rt.apply(Command::MoveToBackground, &quiet).await;
        assert!(matches!(early, Err(CommandError::NothingToMove)), "{early:?}");
        assert!(!work.path().join("group.pid").exists(), "it never ran");
        reply.send(PermissionAnswer::Allow).unwrap();
        until("the command runs", || {
            seen.lock()
                .unwrap()
                .iter()
                .any(|e| matches!(e, AgentEvent::ToolExecutionUpdate { text, .. } if text.contains("started")))
        })
        .await;
        rt.apply(Command::MoveToBackground, &quiet).await
    };
    let (report, moved) =
        tokio::time::timeout(Duration::from_secs(30), async { tokio::join!(rt.prompt("run it", &events), driver) })
            .await
            .unwrap();
    let Ok(Outcome::MovedToBackground { moved, refused }) = moved else { panic!("{moved:?}") };
    assert_eq!((moved, refused), (vec!["bg-1".to_string()], Vec::<String>::new()));
    assert_eq!(report.unwrap().outcome.final_text, "done");
    // The model was told at once, with the id and how to read it.
    let bodies: Vec<String> = server.requests().into_iter().map(|r| r.body.to_string()).collect();
    assert_eq!(bodies.len(), 2);
    assert!(bodies[1].contains("moved this command to the background") && bodies[1].contains("bg-1"), "{}", bodies[1]);
    // The same process group goes on after the call returned.
    let pgid: i32 = std::fs::read_to_string(work.path().join("group.pid")).unwrap().trim().parse().unwrap();
    assert!(pid_alive(pgid), "the moved command still runs");
    let tasks = rt.background_tasks();
    assert_eq!((tasks[0].id.as_str(), tasks[0].status), ("bg-1", TaskStatus::Running));
    assert!(matches!(heard.lock().unwrap().as_slice(), [AgentEvent::BackgroundTask { task }] if task.id == "bg-1"));
    // The session's end leaves nothing of it.
    rt.shutdown().await;
    until("the group is gone", || !tern_runtime::process::group_alive(pgid as u32)).await;
    until("the end was heard", || heard.lock().unwrap().len() == 2).await;
}
