//! The session's life, in process against the mock over real HTTP: a
//! change rewound, the session forked, compacted, and resumed in a new
//! runtime with its conversation and usage.

use std::sync::Arc;

use tern_protocol::Command;
use tern_runtime::apply::Outcome;
use tern_runtime::{Overrides, Runtime};

#[tokio::test]
async fn rewind_fork_compact_and_resume_through_commands() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), "one\n").unwrap();
    let usage = r#""usage": {"input_tokens": 100, "output_tokens": 10}"#;
    let marker = tern_runtime::compaction::SUMMARY_REQUEST_MARKER;
    // Large enough that `/compact` has something worth a summary (see MIN_MANUAL_COMPACT_TOKENS).
    let made = "made\n".repeat(2_000);
    let script = format!(
        r#"{{"turns": [
        {{"tool_calls": [{{"name": "write", "arguments": {{"path": "b.txt", "content": {made:?}}}}}], {usage}}},
        {{"text": "wrote it", {usage}}},
        {{"text": "just talk", {usage}}},
        {{"when_request_contains": "{marker}", "text": "SUMMARY: a file was written, then we talked.", {usage}}},
        {{"when_request_contains": "zebra-after-resume", "text": "after the resume", {usage}}}
    ]}}"#
    );
    let server =
        tern_mock_llm::MockServer::start(tern_mock_llm::Script::from_json(&script).unwrap(), None).await.unwrap();
    let overrides =
        Overrides { permission_mode: Some("bypass".into()), ..crate::mock_overrides(&server, &work, &home) };
    let rt = Runtime::new(overrides.clone()).await.unwrap();
    let events: tern_agent_loop::EventSink = Arc::new(|_| {});
    assert_eq!(rt.prompt("write b", &events).await.unwrap().outcome.final_text, "wrote it");
    assert_eq!(rt.prompt("talk", &events).await.unwrap().outcome.final_text, "just talk");
    assert_eq!(std::fs::read_to_string(work.path().join("b.txt")).unwrap(), made);
    let id = rt.session().id().to_string();

    // Back to before the first prompt: the file it made is gone, the conversation empty.
    let rewound = rt.apply(Command::Rewind { prompt: 1, code: true, conversation: false, force: false }, &events);
    let Outcome::Rewound { number, prompt, .. } = rewound.await.unwrap() else { panic!("a rewind") };
    assert_eq!((number, prompt.as_str()), (1, "write b"));
    assert!(!work.path().join("b.txt").exists(), "the write was undone");

    // A fork is a new session with the same conversation; the original file stays as it was.
    let original = std::fs::read(rt.session().path()).unwrap();
    let Outcome::Forked(fork) = rt.apply(Command::Fork, &events).await.unwrap() else { panic!("a fork") };
    assert_ne!(fork, id);
    assert_eq!(rt.session().id(), fork);

    // Compaction asks the model for a summary and goes on from it.
    let before = server.requests().len();
    let Outcome::Compacted(c) = rt.apply(Command::Compact { focus: None }, &events).await.unwrap() else {
        panic!("a compaction")
    };
    assert_eq!(server.requests().len(), before + 1, "one summary request");
    assert!(c.kept > 0, "the latest messages are kept verbatim: {c:?}");
    let fork_file = std::fs::read_to_string(rt.session().path()).unwrap();
    assert!(
        fork_file.contains("SUMMARY: a file was written"),
        "the fork records the summary it goes on from: {fork_file}"
    );

    // A new runtime resumes the original session: its conversation and usage come back.
    drop(rt);
    let rt = Runtime::new(Overrides { resume: Some(tern_runtime::Resume::Id(id.clone())), ..overrides }).await.unwrap();
    let resumed = rt.resumed().expect("a resumed session");
    assert_eq!(resumed.message_count, 4 + 2, "two prompts: the call, its result, the answers");
    // Front ends replay the runtime's own history (held once), not a copy handed out with the resume.
    let replayed = rt.with_conversation(|messages| messages.to_vec()).await;
    assert_eq!(replayed.len(), resumed.message_count);
    assert_eq!(replayed, rt.conversation().await);
    // The tool calls' figures go to the one replay that shows them, and are not held after it.
    assert!(resumed.tool_runs.is_empty(), "held by the runtime until taken");
    assert_eq!(rt.take_resumed_tool_runs().len(), 1, "the write's figures");
    assert!(rt.take_resumed_tool_runs().is_empty(), "taken once");
    assert_eq!(resumed.usage.0.input_tokens, 300, "three responses of 100 tokens in");
    assert_eq!(rt.prompt("zebra-after-resume", &events).await.unwrap().outcome.final_text, "after the resume");
    let last = server.requests().pop().unwrap().body;
    let texts = last.to_string();
    assert!(texts.contains("write b") && texts.contains("just talk") && !texts.contains("SUMMARY"), "{texts}");
    // The fork and the compaction left the original file as it was (the resume appends to it).
    let now = std::fs::read(rt.session().path()).unwrap();
    assert!(now.starts_with(&original), "the original session was rewritten");
}

/// `/compact` on a session too small for a summary to help says so and
/// sends nothing; the conversation is left as it was.
#[tokio::test]
async fn compact_on_a_tiny_session_makes_no_request() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let server = tern_mock_llm::MockServer::start(
        tern_mock_llm::Script::from_json(r#"{"turns": [{"text": "hello"}, {"text": "again"}]}"#).unwrap(),
        None,
    )
    .await
    .unwrap();
    let rt = Runtime::new(crate::mock_overrides(&server, &work, &home)).await.unwrap();
    let events: tern_agent_loop::EventSink = Arc::new(|_| {});
    rt.prompt("hi", &events).await.unwrap();
    rt.prompt("hi again", &events).await.unwrap();
    let before = server.requests().len();
    let outcome = rt.apply(Command::Compact { focus: None }, &events).await.unwrap();
    let Outcome::NothingToCompact(why) = outcome else { panic!("nothing to compact, got {outcome:?}") };
    assert!(why.starts_with("nothing to compact"), "{why}");
    assert_eq!(server.requests().len(), before, "no summary request");
    assert_eq!(rt.conversation().await.len(), 4, "the conversation is unchanged");
}

/// `/rewind` to a prompt whose checkpoint is gone says so and changes
/// nothing; forced, it puts back what was kept.
#[tokio::test]
async fn a_rewind_whose_checkpoint_is_missing_says_so_and_changes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), "one\n").unwrap();
    let script = r#"{"turns": [
        {"tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]},
        {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "two\n"}}]},
        {"text": "changed it"}
    ]}"#;
    let server =
        tern_mock_llm::MockServer::start(tern_mock_llm::Script::from_json(script).unwrap(), None).await.unwrap();
    let overrides =
        Overrides { permission_mode: Some("bypass".into()), ..crate::mock_overrides(&server, &work, &home) };
    let rt = Runtime::new(overrides).await.unwrap();
    let events: tern_agent_loop::EventSink = Arc::new(|_| {});
    let report = rt.prompt("change a", &events).await.unwrap();
    assert!(report.unsaved.is_empty(), "{:?}", report.unsaved);
    assert_eq!(std::fs::read_to_string(work.path().join("a.txt")).unwrap(), "two\n");
    // The kept copy goes missing (removed by hand, or never saved on a full disk).
    let kept = rt.session().dir().join("checkpoints/0.snap");
    std::fs::remove_file(&kept).unwrap();
    let e = rt
        .apply(Command::Rewind { prompt: 1, code: true, conversation: true, force: false }, &events)
        .await
        .expect_err("refused")
        .to_string();
    assert!(e.contains("checkpoint of prompt 1 is missing for a.txt") && e.contains("0.snap is gone"), "{e}");
    assert!(e.contains("nothing was changed") && e.contains("/rewind 1 code force"), "{e}");
    assert_eq!(std::fs::read_to_string(work.path().join("a.txt")).unwrap(), "two\n");
    assert_eq!(rt.conversation().await.len(), 6, "the conversation did not go back either");
    // Forced: what cannot be put back is named in the result.
    let forced = rt.apply(Command::Rewind { prompt: 1, code: true, conversation: false, force: true }, &events);
    let Outcome::Rewound { restored, .. } = forced.await.unwrap() else { panic!("a rewind") };
    let restored = restored.expect("files");
    assert!(restored.failed.iter().any(|(_, why)| why.contains("cannot be read")), "{restored:?}");
}
