//! `tern acp` as editors drive it: first with the `agent-client-protocol`
//! crate's own example client (`yolo_one_shot_client`, built by `cargo
//! xtask ci` into target/acp-client; skipped with the reason where it could
//! not be built), then with a client written here on the same crate:
//! permissions answered both ways, cancel, history, diffs, plans, modes,
//! `fs/*` through the editor, `session/load`, and nothing but JSON-RPC on
//! stdout.

use crate::common;

use common::PIXEL;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Agent, ByteStreams, Client};
use common::{Harness, Wire};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::compat::{Compat, TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

fn yolo() -> Option<PathBuf> {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/acp-client/target/debug/examples/yolo_one_shot_client");
    if bin.exists() {
        Some(bin)
    } else {
        eprintln!(
            "skipped: the ACP crate's example client is not built at {} (`cargo xtask acp-client` builds it)",
            bin.display()
        );
        None
    }
}

/// The `tern acp` command line the example client starts.
fn agent_command(h: &Harness) -> String {
    format!("{} acp --provider anthropic --base-url {} --model mock", env!("CARGO_BIN_EXE_tern"), h.server.url())
}

#[tokio::test]
async fn the_crates_example_client_runs_a_prompt_with_an_approved_command() {
    let Some(client) = yolo() else { return };
    let mut h = Harness::new(
        Wire::Anthropic,
        r#"{"turns":[
            {"when_request_contains":"made-by-yolo","text":"All done."},
            {"when_request_contains":"make the file","text":"Making it.","tool_calls":[{"name":"bash","arguments":{"command":"touch made-by-yolo"}}]}]}"#,
    )
    .await;
    h.mode = None;
    let out = tokio::process::Command::new(client)
        .args(["--command", &agent_command(&h), "make the file"])
        .current_dir(h.workspace.path())
        .env("TERN_HOME", h.home.path())
        .env("ANTHROPIC_API_KEY", "test-key")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out).await.expect("in time").unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // The command was asked about (allow once), approved and run.
    assert!(stderr.contains("Auto-approving permission request"), "{stderr}");
    assert!(stderr.contains("AllowOnce"), "{stderr}");
    assert!(h.path("made-by-yolo").exists());
    assert!(stderr.contains("Stop reason: EndTurn"), "{stderr}");
    assert!(stdout.contains("ToolCall(ToolCall { tool_call_id: ToolCallId(\"toolu_"), "{stdout}");
    assert!(stdout.contains("kind: Execute"), "{stdout}");
    assert!(stdout.contains("status: Some(Completed)"), "{stdout}");
    assert!(stdout.contains("text: \"All done.\""), "{stdout}");
}

/// The client's end of `tern acp`'s stdio.
type Transport = ByteStreams<Compat<tokio::process::ChildStdin>, Compat<tokio::io::DuplexStream>>;

/// What the client saw, and how it answers.
#[derive(Default)]
struct Seen {
    updates: Vec<acp::SessionUpdate>,
    asked: Vec<acp::RequestPermissionRequest>,
    reads: Vec<PathBuf>,
    writes: Vec<(PathBuf, String)>,
}

struct Session {
    h: Harness,
    child: tokio::process::Child,
    /// Every line tern wrote on stdout.
    raw: Arc<Mutex<Vec<String>>>,
    seen: Arc<Mutex<Seen>>,
}

/// How the test client answers permission questions.
#[derive(Clone, Copy, PartialEq)]
enum Answer {
    Allow,
    Reject,
}

impl Session {
    fn start(h: Harness, extra: &[&str]) -> (Self, Transport) {
        let mut args = vec!["acp"];
        args.extend_from_slice(extra);
        let mut cmd = h.command(&args);
        cmd.stdin(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        // Tee stdout: every line is kept (to check it is JSON-RPC) and passed to the client.
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (client_end, mut tee) = tokio::io::duplex(1 << 20);
        let kept = raw.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                kept.lock().unwrap().push(line.clone());
                if tee.write_all(format!("{line}\n").as_bytes()).await.is_err() {
                    break;
                }
            }
        });
        let transport = ByteStreams::new(stdin.compat_write(), client_end.compat());
        (Self { h, child, raw, seen: Arc::default() }, transport)
    }

    fn updates(&self) -> Vec<acp::SessionUpdate> {
        self.seen.lock().unwrap().updates.clone()
    }

    /// After the client is done: tern exits 0 on stdin EOF; every stdout line was JSON-RPC 2.0.
    async fn finish(mut self) -> Harness {
        let status = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await.expect("exits").unwrap();
        assert_eq!(status.code(), Some(0));
        for line in self.raw.lock().unwrap().iter() {
            let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON on stdout: {line}: {e}"));
            assert_eq!(v["jsonrpc"], "2.0", "{line}");
        }
        self.h
    }
}

/// Drive `tern acp` with a client on the crate: `fs` advertises the editor's
/// file system (reads answer `buffer`, writes are recorded, not written).
async fn drive<R>(
    s: &Session,
    transport: Transport,
    answer: Answer,
    buffer: Option<&'static str>,
    main: impl AsyncFnOnce(ConnectionTo<Agent>, acp::SessionId) -> Result<R, agent_client_protocol::Error>,
) -> R {
    let (on_update, on_ask, on_read, on_write) = (s.seen.clone(), s.seen.clone(), s.seen.clone(), s.seen.clone());
    let (raw, handled) = (s.raw.clone(), s.seen.clone());
    let cwd = s.h.workspace.path().to_path_buf();
    let started_in = s.h.mode.unwrap_or("default");
    let run = Client
        .v1()
        .on_receive_notification(
            async move |n: acp::SessionNotification, _cx| {
                on_update.lock().unwrap().updates.push(n.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: acp::RequestPermissionRequest, responder, _cx| {
                let kind = if answer == Answer::Allow {
                    acp::PermissionOptionKind::AllowOnce
                } else {
                    acp::PermissionOptionKind::RejectOnce
                };
                let id = req.options.iter().find(|o| o.kind == kind).map(|o| o.option_id.clone()).unwrap();
                on_ask.lock().unwrap().asked.push(req);
                responder.respond(acp::RequestPermissionResponse::new(acp::RequestPermissionOutcome::Selected(
                    acp::SelectedPermissionOutcome::new(id),
                )))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: acp::ReadTextFileRequest, responder, _cx| {
                on_read.lock().unwrap().reads.push(req.path.clone());
                responder.respond(acp::ReadTextFileResponse::new(buffer.unwrap_or_default()))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: acp::WriteTextFileRequest, responder, _cx| {
                on_write.lock().unwrap().writes.push((req.path.clone(), req.content.clone()));
                responder.respond(acp::WriteTextFileResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let fs =
                acp::FileSystemCapabilities::new().read_text_file(buffer.is_some()).write_text_file(buffer.is_some());
            let init = cx
                .send_request(
                    acp::InitializeRequest::new(ProtocolVersion::V1)
                        .client_capabilities(acp::ClientCapabilities::new().fs(fs)),
                )
                .block_task()
                .await?;
            assert!(init.agent_capabilities.load_session);
            let session = cx.send_request(acp::NewSessionRequest::new(cwd)).block_task().await?;
            let modes = session.modes.clone().unwrap();
            // The modes the session may enter: bypass only when it started in it.
            assert_eq!(modes.current_mode_id.0.as_ref(), started_in);
            let ids: Vec<String> = modes.available_modes.iter().map(|m| m.id.0.to_string()).collect();
            let mut expected = vec!["default", "accept-edits", "plan", "dont-ask"];
            if started_in == "bypass" {
                expected.push(started_in);
            }
            assert_eq!(ids, expected);
            // The same choice as a config option (editors that read `configOptions` show that
            // one instead), then the model.
            let options = session.config_options.clone().unwrap();
            let names: Vec<&str> = options.iter().map(|o| &*o.id.0).collect();
            assert_eq!(names, ["mode", "model"]);
            assert_eq!(select(&options[0]), (started_in.to_string(), ids));
            let out = main(cx, session.session_id).await?;
            // The client's handlers may still be working through updates that arrived before
            // the last answer: wait (bounded) until each one written so far was handled.
            let written = raw.lock().unwrap().iter().filter(|l| l.contains(r#""method":"session/update""#)).count();
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while handled.lock().unwrap().updates.len() < written && std::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Ok(out)
        });
    tokio::time::timeout(Duration::from_secs(60), run).await.expect("in time").unwrap()
}

/// A select option's current value and the ids of its values.
fn select(option: &acp::SessionConfigOption) -> (String, Vec<String>) {
    let acp::SessionConfigKind::Select(s) = &option.kind else { panic!("not a select: {option:?}") };
    let acp::SessionConfigSelectOptions::Ungrouped(values) = &s.options else { panic!("grouped: {option:?}") };
    (s.current_value.0.to_string(), values.iter().map(|v| v.value.0.to_string()).collect())
}

/// The option `id` of a session's `configOptions`.
fn option<'a>(options: &'a [acp::SessionConfigOption], id: &str) -> &'a acp::SessionConfigOption {
    options.iter().find(|o| *o.id.0 == *id).unwrap_or_else(|| panic!("no option `{id}` in {options:?}"))
}

/// A client that keeps every update and is asked nothing: `main` gets the
/// connection and tern's answer to `initialize`.
async fn connect<R>(
    s: &Session,
    transport: Transport,
    main: impl AsyncFnOnce(ConnectionTo<Agent>, acp::InitializeResponse) -> Result<R, agent_client_protocol::Error>,
) -> R {
    let seen = s.seen.clone();
    let run = Client
        .v1()
        .on_receive_notification(
            async move |n: acp::SessionNotification, _cx| {
                seen.lock().unwrap().updates.push(n.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let init = cx.send_request(acp::InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            main(cx, init).await
        });
    tokio::time::timeout(Duration::from_secs(60), run).await.expect("in time").unwrap()
}

/// The updates tern wrote so far, once the client has handled them all (bounded wait).
async fn updates_so_far(s: &Session) -> Vec<acp::SessionUpdate> {
    let written = s.raw.lock().unwrap().iter().filter(|l| l.contains(r#""method":"session/update""#)).count();
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.seen.lock().unwrap().updates.len() < written && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    s.updates()
}

async fn prompt(cx: &ConnectionTo<Agent>, id: &acp::SessionId, text: &str) -> acp::StopReason {
    let req = acp::PromptRequest::new(id.clone(), vec![acp::ContentBlock::Text(acp::TextContent::new(text))]);
    cx.send_request(req).block_task().await.unwrap().stop_reason
}

fn harness_mode(h: &mut Harness, mode: Option<&'static str>) {
    h.mode = mode;
}

#[tokio::test]
async fn a_rejected_command_does_not_run_and_history_carries_over() {
    let mut h = Harness::new(
        Wire::Anthropic,
        r#"{"turns":[
            {"when_request_contains":"second prompt","text":"Second answer."},
            {"when_request_contains":"made-by-reject","text":"It was refused."},
            {"when_request_contains":"first prompt","tool_calls":[{"name":"bash","arguments":{"command":"touch made-by-reject"}}]}]}"#,
    )
    .await;
    harness_mode(&mut h, None);
    let (s, transport) = Session::start(h, &[]);
    let stops = drive(&s, transport, Answer::Reject, None, async |cx, id| {
        Ok(vec![prompt(&cx, &id, "first prompt").await, prompt(&cx, &id, "second prompt").await])
    })
    .await;
    assert_eq!(stops, [acp::StopReason::EndTurn, acp::StopReason::EndTurn]);
    let seen = s.seen.lock().unwrap().asked.len();
    assert_eq!(seen, 1, "the command was asked about");
    let updates = s.updates();
    let failed = updates.iter().any(
        |u| matches!(u, acp::SessionUpdate::ToolCallUpdate(t) if t.fields.status == Some(acp::ToolCallStatus::Failed)),
    );
    assert!(failed, "{updates:?}");
    let h = s.finish().await;
    assert!(!h.path("made-by-reject").exists());
    // The second prompt's request carried the first exchange.
    let last = h.bodies().last().unwrap().to_string();
    assert!(last.contains("first prompt") && last.contains("It was refused."), "{last}");
}

#[tokio::test]
async fn cancel_stops_a_running_command_within_a_second() {
    let h = Harness::new(
        Wire::Anthropic,
        r#"{"turns":[{"tool_calls":[{"name":"bash","arguments":{"command":"sleep 41.75"}}]},{"text":"never"}]}"#,
    )
    .await;
    let (s, transport) = Session::start(h, &[]);
    let took = drive(&s, transport, Answer::Allow, None, async |cx, id| {
        let req = acp::PromptRequest::new(id.clone(), vec![acp::ContentBlock::Text(acp::TextContent::new("sleep"))]);
        let running = cx.send_request(req);
        assert!(!common::wait_present("sleep 41.75").await.is_empty(), "the command runs");
        let started = Instant::now();
        cx.send_notification(acp::CancelNotification::new(id.clone()))?;
        let stop = running.block_task().await?.stop_reason;
        assert_eq!(stop, acp::StopReason::Cancelled);
        Ok(started.elapsed())
    })
    .await;
    assert!(took < Duration::from_secs(1), "cancelled in {took:?}");
    assert_eq!(common::wait_gone("sleep 41.75").await, Vec::<u32>::new());
    s.finish().await;
}

#[tokio::test]
async fn edits_come_with_diffs_and_todos_as_plans() {
    let h = Harness::new(
        Wire::Anthropic,
        r#"{"turns":[
            {"tool_calls":[{"name":"read","arguments":{"path":"sub/../greet.txt"}}]},
            {"tool_calls":[{"name":"todo_write","arguments":{"todos":[
                {"content":"Change the greeting","status":"in_progress","activeForm":"Changing the greeting"},
                {"content":"Check it","status":"pending","activeForm":"Checking it"}]}}]},
            {"tool_calls":[{"name":"edit","arguments":{"path":"greet.txt","old_string":"hello","new_string":"goodbye"}}]},
            {"text":"Changed."}]}"#,
    )
    .await;
    std::fs::write(h.path("greet.txt"), "hello world\n").unwrap();
    std::fs::create_dir(h.path("sub")).unwrap();
    let (s, transport) = Session::start(h, &[]);
    let stop = drive(&s, transport, Answer::Allow, None, async |cx, id| Ok(prompt(&cx, &id, "change it").await)).await;
    assert_eq!(stop, acp::StopReason::EndTurn);
    let updates = s.updates();
    let plan = updates
        .iter()
        .find_map(|u| match u {
            acp::SessionUpdate::Plan(p) => Some(p.clone()),
            _ => None,
        })
        .expect("a plan update");
    assert_eq!(plan.entries.len(), 2);
    assert_eq!(plan.entries[0].content, "Change the greeting");
    assert_eq!(plan.entries[0].status, acp::PlanEntryStatus::InProgress);
    let kinds: Vec<acp::ToolKind> = updates
        .iter()
        .filter_map(|u| match u {
            acp::SessionUpdate::ToolCall(t) => Some(t.kind),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, [acp::ToolKind::Read, acp::ToolKind::Think, acp::ToolKind::Edit]);
    let read_call = updates
        .iter()
        .find_map(|u| match u {
            acp::SessionUpdate::ToolCall(t) if t.kind == acp::ToolKind::Read => Some(t.clone()),
            _ => None,
        })
        .unwrap();
    let greet = std::fs::canonicalize(s.h.path("greet.txt")).unwrap();
    // The location is the file the call works on, resolved by the one rule (not the name joined).
    assert_eq!(read_call.locations[0].path, greet);
    let diff = updates
        .iter()
        .filter_map(|u| match u {
            acp::SessionUpdate::ToolCallUpdate(t) => t.fields.content.clone(),
            _ => None,
        })
        .flatten()
        .find_map(|c| match c {
            acp::ToolCallContent::Diff(d) => Some(d),
            _ => None,
        })
        .expect("a diff");
    assert_eq!(diff.path, greet);
    assert_eq!(diff.old_text.as_deref(), Some("hello world\n"));
    assert_eq!(diff.new_text, "goodbye world\n");
    let h = s.finish().await;
    assert_eq!(std::fs::read_to_string(h.path("greet.txt")).unwrap(), "goodbye world\n");
}

#[tokio::test]
async fn plan_mode_refuses_changes_and_is_announced() {
    let mut h = Harness::new(
        Wire::Anthropic,
        r#"{"turns":[{"tool_calls":[{"name":"bash","arguments":{"command":"touch made-in-plan"}}]},{"text":"ok"}]}"#,
    )
    .await;
    harness_mode(&mut h, None);
    let (s, transport) = Session::start(h, &[]);
    drive(&s, transport, Answer::Allow, None, async |cx, id| {
        cx.send_request(acp::SetSessionModeRequest::new(id.clone(), "plan")).block_task().await?;
        let bad = cx.send_request(acp::SetSessionModeRequest::new(id.clone(), "sideways")).block_task().await;
        assert!(bad.is_err());
        prompt(&cx, &id, "make a file").await;
        Ok(())
    })
    .await;
    let updates = s.updates();
    assert!(
        updates
            .iter()
            .any(|u| matches!(u, acp::SessionUpdate::CurrentModeUpdate(m) if m.current_mode_id.0.as_ref() == "plan")),
        "{updates:?}"
    );
    assert!(s.seen.lock().unwrap().asked.is_empty(), "plan mode refuses without asking");
    let h = s.finish().await;
    assert!(!h.path("made-in-plan").exists());
}

#[tokio::test]
async fn files_go_through_the_editor_when_it_offers_them() {
    let h = Harness::new(
        Wire::Anthropic,
        r#"{"turns":[
            {"tool_calls":[{"name":"read","arguments":{"path":"notes.txt"}}]},
            {"tool_calls":[{"name":"edit","arguments":{"path":"notes.txt","old_string":"unsaved","new_string":"edited"}}]},
            {"text":"done"}]}"#,
    )
    .await;
    std::fs::write(h.path("notes.txt"), "on disk\n").unwrap();
    let (s, transport) = Session::start(h, &[]);
    drive(&s, transport, Answer::Allow, Some("unsaved buffer text\n"), async |cx, id| {
        prompt(&cx, &id, "look").await;
        Ok(())
    })
    .await;
    let notes = std::fs::canonicalize(s.h.path("notes.txt")).unwrap();
    {
        let seen = s.seen.lock().unwrap();
        assert!(seen.reads.iter().all(|p| *p == notes) && !seen.reads.is_empty(), "{:?}", seen.reads);
        assert_eq!(seen.writes, [(notes.clone(), "edited buffer text\n".to_string())]);
    }
    let h = s.finish().await;
    // The model saw the editor's text; the disk was left to the editor.
    let body = h.bodies()[1].to_string();
    assert!(body.contains("unsaved buffer text"), "{body}");
    assert_eq!(std::fs::read_to_string(h.path("notes.txt")).unwrap(), "on disk\n");
}

/// A stream cut after some text and retried: the retried answer's chunks
/// carry a new message id, so the editor shows it as a message of its own,
/// not glued after the broken attempt's text.
#[tokio::test]
async fn a_retried_answer_is_a_new_message() {
    let answer = "A long answer that goes on for a while, lorem ipsum dolor sit amet.";
    let script = serde_json::json!({"turns": [{"faults": [{"cut_after_events": 6}], "text": answer}]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let (s, transport) = Session::start(h, &[]);
    drive(&s, transport, Answer::Allow, None, async |cx, id| Ok(prompt(&cx, &id, "hi").await)).await;
    // Each message's text, joined by message id in the order they began.
    let mut messages: Vec<(Option<acp::MessageId>, String)> = Vec::new();
    for u in updates_so_far(&s).await {
        if let acp::SessionUpdate::AgentMessageChunk(c) = u
            && let acp::ContentBlock::Text(t) = &c.content
        {
            match messages.last_mut() {
                Some((id, text)) if *id == c.message_id => text.push_str(&t.text),
                _ => messages.push((c.message_id.clone(), t.text.clone())),
            }
        }
    }
    assert_eq!(messages.len(), 2, "the broken attempt, then the retried answer: {messages:?}");
    assert!(messages.iter().all(|(id, _)| id.is_some()), "{messages:?}");
    assert!(answer.starts_with(&messages[0].1) && messages[0].1.len() < answer.len(), "{messages:?}");
    assert_eq!(messages[1].1, answer);
    s.finish().await;
}

#[tokio::test]
async fn a_session_is_loaded_with_its_history() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"First answer."},{"text":"Again."}]}"#).await;
    let (s, transport) = Session::start(h, &[]);
    let id = drive(&s, transport, Answer::Allow, None, async |cx, id| {
        prompt(&cx, &id, "remember this").await;
        Ok(id)
    })
    .await;
    let h = s.finish().await;
    // A new connection loads it: the conversation is replayed, then it goes on.
    let (s, transport) = Session::start(h, &[]);
    let cwd = s.h.workspace.path().to_path_buf();
    let seen = s.seen.clone();
    let run = Client
        .v1()
        .on_receive_notification(
            async move |n: acp::SessionNotification, _cx| {
                seen.lock().unwrap().updates.push(n.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            cx.send_request(acp::InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            cx.send_request(acp::LoadSessionRequest::new(id.clone(), cwd)).block_task().await?;
            Ok(prompt(&cx, &id, "and now?").await)
        });
    let stop = tokio::time::timeout(Duration::from_secs(60), run).await.unwrap().unwrap();
    assert_eq!(stop, acp::StopReason::EndTurn);
    let texts: Vec<String> = s
        .updates()
        .iter()
        .filter_map(|u| match u {
            acp::SessionUpdate::UserMessageChunk(c) | acp::SessionUpdate::AgentMessageChunk(c) => match &c.content {
                acp::ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert!(texts.iter().any(|t| t.contains("remember this")), "{texts:?}");
    assert!(texts.iter().any(|t| t == "First answer."), "{texts:?}");
    let h = s.finish().await;
    let last = h.bodies().last().unwrap().to_string();
    assert!(last.contains("remember this") && last.contains("and now?"), "{last}");
}

#[tokio::test]
async fn a_command_keeps_its_image_and_modes_follow_the_sessions_rule() {
    let mut h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"Reviewed."}]}"#).await;
    harness_mode(&mut h, None);
    common::write(&h.path(".tern/commands/review.md"), "---\ndescription: Review\n---\nREVIEW-THIS: $ARGUMENTS\n");
    std::fs::write(h.home.path().join("config.toml"), "[models.mock]\nimage_input = true\n").unwrap();
    let (s, transport) = Session::start(h, &[]);
    drive(&s, transport, Answer::Allow, None, async |cx, id| {
        // Bypass is not the editor's to choose when the session did not start in it.
        let bypass = cx.send_request(acp::SetSessionModeRequest::new(id.clone(), "bypass")).block_task().await;
        let err = bypass.expect_err("bypass refused");
        assert!(format!("{err:?}").contains("allow-dangerously-skip-permissions"), "{err:?}");
        cx.send_request(acp::SetSessionModeRequest::new(id.clone(), "accept-edits")).block_task().await?;
        let blocks = vec![
            acp::ContentBlock::Text(acp::TextContent::new("/review the logo")),
            acp::ContentBlock::Image(acp::ImageContent::new(PIXEL, "image/png")),
        ];
        let stop = cx.send_request(acp::PromptRequest::new(id.clone(), blocks)).block_task().await?.stop_reason;
        assert_eq!(stop, acp::StopReason::EndTurn);
        Ok(())
    })
    .await;
    let modes: Vec<String> = s
        .updates()
        .iter()
        .filter_map(|u| match u {
            acp::SessionUpdate::CurrentModeUpdate(m) => Some(m.current_mode_id.0.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(modes, ["accept-edits"], "one update, for the change the session made");
    let h = s.finish().await;
    let body = h.bodies()[0].to_string();
    assert!(body.contains("REVIEW-THIS: the logo"), "the command expanded: {body}");
    assert!(body.contains(PIXEL), "the image went with the command: {body}");
}

#[tokio::test]
async fn diffs_show_what_the_tool_changed_not_the_file_read_again() {
    let h = Harness::new(
        Wire::Anthropic,
        r#"{"turns":[
            {"tool_calls":[{"name":"read","arguments":{"path":"big.txt"}}]},
            {"tool_calls":[{"name":"edit","arguments":{"path":"big.txt","old_string":"line 500\n","new_string":"LINE FIVE HUNDRED\n"}}]},
            {"tool_calls":[{"name":"write","arguments":{"path":"new.txt","content":"fresh\n"}}]},
            {"text":"Changed."}]}"#,
    )
    .await;
    let big: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(h.path("big.txt"), &big).unwrap();
    let (s, transport) = Session::start(h, &[]);
    let stop = drive(&s, transport, Answer::Allow, None, async |cx, id| Ok(prompt(&cx, &id, "change it").await)).await;
    assert_eq!(stop, acp::StopReason::EndTurn);
    let diffs: Vec<acp::Diff> = s
        .updates()
        .iter()
        .filter_map(|u| match u {
            acp::SessionUpdate::ToolCallUpdate(t) => t.fields.content.clone(),
            _ => None,
        })
        .flatten()
        .filter_map(|c| match c {
            acp::ToolCallContent::Diff(d) => Some(d),
            _ => None,
        })
        .collect();
    assert_eq!(diffs.len(), 2, "{diffs:?}");
    // The edit's hunk: the changed line with its context, not the whole file.
    let old = diffs[0].old_text.as_deref().unwrap();
    assert!(old.contains("line 500\n") && old.contains("line 497\n"), "{old}");
    assert!(!old.contains("line 1\n") && !old.contains("line 900"), "the hunk, not the file: {old}");
    assert!(diffs[0].new_text.contains("LINE FIVE HUNDRED"));
    // A new file: no old text, the text the call wrote.
    assert_eq!(diffs[1].old_text, None);
    assert_eq!(diffs[1].new_text, "fresh\n");
    assert!(diffs[1].path.ends_with("new.txt"));
    s.finish().await;
}

#[tokio::test]
async fn a_failed_mcp_server_is_said_on_stderr_as_the_other_front_ends_say_it() {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[]}"#).await;
    let servers = r#"{"mcpServers":{"gone":{"command":"/nonexistent/tern-no-such-server"}}}"#;
    let mut cmd = h.command(&["acp", "--mcp-config", servers]);
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let cwd = h.workspace.path().display().to_string();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let requests = [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}),
    ];
    let mut last = String::new();
    for (id, request) in requests.into_iter().enumerate() {
        stdin.write_all(format!("{request}\n").as_bytes()).await.unwrap();
        let answered = async {
            while let Some(line) = out.next_line().await.unwrap() {
                if serde_json::from_str::<Value>(&line).is_ok_and(|v| v["id"] == id + 1) {
                    return line;
                }
            }
            panic!("no answer to request {}", id + 1);
        };
        last = tokio::time::timeout(Duration::from_secs(30), answered).await.expect("in time");
    }
    assert!(last.contains("sessionId"), "{last}");
    drop(stdin);
    let rest = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output()).await.unwrap().unwrap();
    let stderr = String::from_utf8_lossy(&rest.stderr);
    assert!(stderr.contains("MCP server `gone` failed"), "{stderr}");
}

#[tokio::test]
async fn a_huge_change_sends_a_bounded_diff() {
    // Every 8th of 2,400 long lines changed: 300 hunks of 7 lines, about 2 MB of text before and
    // after; the editor gets the first 1 MB of them. (Few, long lines: the diff stays well inside
    // its time limit on a loaded machine, past which the change would be one hunk too big to send.)
    let line = |i: usize, changed: bool| {
        format!("line {i:05} {} {}\n", if changed { "CHANGED" } else { "kept" }, ".".repeat(500))
    };
    let old: String = (0..2_400).map(|i| line(i, false)).collect();
    let new: String = (0..2_400).map(|i| line(i, i % 8 == 4)).collect();
    let script = serde_json::json!({"turns": [
        {"tool_calls": [{"name": "read", "arguments": {"path": "big.txt", "limit": 1}}]},
        {"tool_calls": [{"name": "write", "arguments": {"path": "big.txt", "content": new}}]},
        {"text": "Rewritten."}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    std::fs::write(h.path("big.txt"), &old).unwrap();
    let (s, transport) = Session::start(h, &[]);
    let stop = drive(&s, transport, Answer::Allow, None, async |cx, id| Ok(prompt(&cx, &id, "rewrite it").await)).await;
    assert_eq!(stop, acp::StopReason::EndTurn);
    let sent: usize = s
        .updates()
        .iter()
        .filter_map(|u| match u {
            acp::SessionUpdate::ToolCallUpdate(t) => t.fields.content.clone(),
            _ => None,
        })
        .flatten()
        .filter_map(|c| match c {
            acp::ToolCallContent::Diff(d) => Some(d.new_text.len() + d.old_text.map_or(0, |o| o.len())),
            _ => None,
        })
        .sum();
    assert!(sent > 0 && sent <= 1024 * 1024, "{sent} bytes of diff");
    // Nothing else in the update carries the change whole: the line stays near the diff's bound.
    let longest = s.raw.lock().unwrap().iter().filter(|l| l.contains("tool_call_update")).map(String::len).max();
    assert!(longest.unwrap() < 1300 * 1024, "{longest:?} bytes in one update");
    let h = s.finish().await;
    assert_eq!(std::fs::read_to_string(h.path("big.txt")).unwrap(), new);
}

#[tokio::test]
async fn saved_sessions_are_listed_newest_first_and_resumed_without_a_replay() {
    let h = Harness::new(
        Wire::Anthropic,
        r#"{"turns":[
            {"when_request_contains":"and now?","text":"Going on."},
            {"when_request_contains":"the second task","text":"Second answer."},
            {"when_request_contains":"the first task","text":"First answer."}]}"#,
    )
    .await;
    let (s, transport) = Session::start(h, &[]);
    let cwd = std::fs::canonicalize(s.h.workspace.path()).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let (first, listed) = drive(&s, transport, Answer::Allow, None, async |cx, first| {
        prompt(&cx, &first, "the first task").await;
        let second = cx.send_request(acp::NewSessionRequest::new(cwd.clone())).block_task().await?.session_id;
        prompt(&cx, &second, "the second task").await;
        let there = cx.send_request(acp::NewSessionRequest::new(elsewhere.path())).block_task().await?.session_id;
        let list = async |cwd: Option<&std::path::Path>| {
            let req = acp::ListSessionsRequest::new().cwd(cwd.map(std::path::Path::to_path_buf));
            cx.send_request(req).block_task().await.map(|l| l.sessions)
        };
        let here = list(Some(&cwd)).await?;
        let ids = |l: &[acp::SessionInfo]| l.iter().map(|i| i.session_id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&list(Some(elsewhere.path())).await?), std::slice::from_ref(&there));
        // Without a cwd: every folder's.
        assert_eq!(ids(&list(None).await?), [there, second.clone(), first.clone()]);
        // tern answers in one page: a cursor it never gave is refused.
        let paged = cx.send_request(acp::ListSessionsRequest::new().cursor("2".to_string())).block_task().await;
        assert!(format!("{:?}", paged.unwrap_err()).contains("gives no cursor"));
        assert_eq!(ids(&here), [second, first.clone()], "newest first");
        Ok((first, here))
    })
    .await;
    for (info, title) in listed.iter().zip(["the second task", "the first task"]) {
        assert_eq!(info.cwd, cwd);
        assert_eq!(info.title.as_deref(), Some(title));
        let at = info.updated_at.as_deref().unwrap();
        assert!(at.len() == 20 && at.as_bytes()[10] == b'T' && at.ends_with('Z'), "RFC 3339 in UTC: {at}");
    }
    let h = s.finish().await;
    // Another connection resumes the first: nothing is replayed, and the conversation goes on.
    let (s, transport) = Session::start(h, &[]);
    let stop = connect(&s, transport, async |cx, init| {
        let sessions = init.agent_capabilities.session_capabilities;
        assert!(sessions.list.is_some() && sessions.resume.is_some() && sessions.close.is_some(), "{sessions:?}");
        let resumed = cx.send_request(acp::ResumeSessionRequest::new(first.clone(), cwd.clone())).block_task().await?;
        assert_eq!(resumed.modes.unwrap().current_mode_id.0.as_ref(), "bypass");
        let options = resumed.config_options.unwrap();
        assert_eq!(select(option(&options, "model")).0, "mock");
        let replayed: Vec<acp::SessionUpdate> = updates_so_far(&s)
            .await
            .into_iter()
            .filter(|u| !matches!(u, acp::SessionUpdate::AvailableCommandsUpdate(_)))
            .collect();
        assert_eq!(replayed, [], "session/resume replays nothing");
        Ok(prompt(&cx, &first, "and now?").await)
    })
    .await;
    assert_eq!(stop, acp::StopReason::EndTurn);
    let h = s.finish().await;
    let last = h.bodies().last().unwrap().to_string();
    assert!(last.contains("the first task") && last.contains("First answer.") && last.contains("and now?"), "{last}");
    assert!(!last.contains("the second task"), "{last}");
}

#[tokio::test]
async fn close_stops_the_running_prompt_and_lets_the_session_go() {
    let h = Harness::new(
        Wire::Anthropic,
        r#"{"turns":[
            {"when_request_contains":"still there?","text":"Yes, still here."},
            {"tool_calls":[{"name":"bash","arguments":{"command":"sleep 42.25"}}]},
            {"text":"never"}]}"#,
    )
    .await;
    let (s, transport) = Session::start(h, &[]);
    drive(&s, transport, Answer::Allow, None, async |cx, id| {
        let req = acp::PromptRequest::new(id.clone(), vec![acp::ContentBlock::Text(acp::TextContent::new("sleep"))]);
        let running = cx.send_request(req);
        assert!(!common::wait_present("sleep 42.25").await.is_empty(), "the command runs");
        cx.send_request(acp::CloseSessionRequest::new(id.clone())).block_task().await?;
        // The prompt answered before the close did; its command was killed.
        assert_eq!(running.block_task().await?.stop_reason, acp::StopReason::Cancelled);
        assert_eq!(common::wait_gone("sleep 42.25").await, Vec::<u32>::new());
        // The session is no longer open here...
        let gone = cx.send_request(acp::PromptRequest::new(id.clone(), vec![])).block_task().await;
        assert!(format!("{:?}", gone.unwrap_err()).contains("is open"));
        let again = cx.send_request(acp::CloseSessionRequest::new(id.clone())).block_task().await;
        assert!(format!("{:?}", again.unwrap_err()).contains("is open"));
        // ...and its file is free while `tern acp` runs on: the terminal goes on with it.
        let out = s.h.run(&["-p", "--resume", &*id.0, "still there?"]).await;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        assert!(out.stdout.contains("Yes, still here."), "{}", out.stdout);
        Ok(())
    })
    .await;
    let h = s.finish().await;
    let last = h.bodies().last().unwrap().to_string();
    assert!(last.contains("sleep 42.25") && last.contains("still there?"), "{last}");
}

#[tokio::test]
async fn the_editor_picks_the_model_and_the_mode_as_config_options() {
    let mut h = Harness::new(Wire::Anthropic, r#"{"turns":[{"text":"Answered."}]}"#).await;
    harness_mode(&mut h, None);
    let (s, transport) = Session::start(h, &[]);
    let cwd = s.h.workspace.path().to_path_buf();
    connect(&s, transport, async |cx, _init| {
        let session = cx.send_request(acp::NewSessionRequest::new(cwd)).block_task().await?;
        let id = session.session_id;
        let options = session.config_options.unwrap();
        let mode = option(&options, "mode");
        assert_eq!(mode.category, Some(acp::SessionConfigOptionCategory::Mode));
        assert_eq!(
            select(mode),
            ("default".into(), ["default", "accept-edits", "plan", "dont-ask"].map(String::from).to_vec())
        );
        // The provider's models, with the one in use (not in the provider's list) first.
        let model = option(&options, "model");
        assert_eq!(model.category, Some(acp::SessionConfigOptionCategory::Model));
        let (current, values) = select(model);
        assert_eq!(current, "mock");
        assert_eq!(values[0], "mock");
        assert!(
            values.contains(&"claude-sonnet-4-5".to_string()) && !values.contains(&"gpt-5".to_string()),
            "{values:?}"
        );
        let acp::SessionConfigKind::Select(choices) = &model.kind else { unreachable!() };
        let acp::SessionConfigSelectOptions::Ungrouped(choices) = &choices.options else { unreachable!() };
        let sonnet = choices.iter().find(|c| &*c.value.0 == "claude-sonnet-4-5").unwrap();
        assert_eq!(sonnet.description.as_deref(), Some("200k context · $3.00 in / $15.00 out per Mtok"));

        let set = |config: &str, value: &str| {
            cx.send_request(acp::SetSessionConfigOptionRequest::new(id.clone(), config.to_string(), value)).block_task()
        };
        let now = set("model", "claude-sonnet-4-5").await?.config_options;
        assert_eq!(select(option(&now, "model")).0, "claude-sonnet-4-5");
        let now = set("mode", "plan").await?.config_options;
        assert_eq!(select(option(&now, "mode")).0, "plan");
        assert_eq!(select(option(&now, "model")).0, "claude-sonnet-4-5");
        // The session's rules decide, and say why.
        let other = format!("{:?}", set("model", "gpt-5").await.unwrap_err());
        assert!(other.contains("is a model of openai"), "{other}");
        let bypass = format!("{:?}", set("mode", "bypass").await.unwrap_err());
        assert!(bypass.contains("allow-dangerously-skip-permissions"), "{bypass}");
        let unknown = format!("{:?}", set("thought_level", "high").await.unwrap_err());
        assert!(unknown.contains("tern has no config option `thought_level`"), "{unknown}");
        let boolean = acp::SetSessionConfigOptionRequest::new(id.clone(), "model", true);
        let boolean = format!("{:?}", cx.send_request(boolean).block_task().await.unwrap_err());
        assert!(boolean.contains("`model` is a select"), "{boolean}");
        // A change through session/set_mode moves the config option too.
        cx.send_request(acp::SetSessionModeRequest::new(id.clone(), "accept-edits")).block_task().await?;
        assert_eq!(prompt(&cx, &id, "hello").await, acp::StopReason::EndTurn);
        Ok(())
    })
    .await;
    let updates = updates_so_far(&s).await;
    let announced: Vec<(String, String)> = updates
        .iter()
        .filter_map(|u| match u {
            acp::SessionUpdate::ConfigOptionUpdate(c) => {
                Some((select(option(&c.config_options, "mode")).0, select(option(&c.config_options, "model")).0))
            }
            _ => None,
        })
        .collect();
    let announced: Vec<(&str, &str)> = announced.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_eq!(
        announced,
        [("default", "claude-sonnet-4-5"), ("plan", "claude-sonnet-4-5"), ("accept-edits", "claude-sonnet-4-5")]
    );
    let h = s.finish().await;
    assert_eq!(h.bodies()[0]["model"], "claude-sonnet-4-5", "the prompt went to the chosen model");
}
