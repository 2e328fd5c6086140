//! "Allow always": the answer becomes a session rule at once, is saved to the
//! user config for this project, and the next identical call — in this session and the
//! next — runs without a question.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use tern_runtime::{Overrides, PermissionAnswer, PermissionPrompt, PermissionRequest, RuleScope, Runtime};

/// Answers "yes, and don't ask again" with the suggested rule at `scope`, and counts.
struct AllowAlways {
    asked: AtomicUsize,
    scope: RuleScope,
}

impl PermissionPrompt for AllowAlways {
    fn ask(&self, request: PermissionRequest) -> BoxFuture<'_, PermissionAnswer> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let rule = request.decision.suggestion.clone().expect("a suggestion");
        let scope = self.scope;
        Box::pin(async move { PermissionAnswer::AllowAlways { rule, scope } })
    }
}

#[tokio::test]
async fn an_allow_always_answer_sticks_and_is_saved() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let touch = r#"{"name": "bash", "arguments": {"command": "touch made.txt"}}"#;
    let script =
        format!(r#"{{"turns": [{{"tool_calls": [{touch}]}}, {{"tool_calls": [{touch}]}}, {{"text": "done"}}]}}"#);
    let server =
        tern_mock_llm::MockServer::start(tern_mock_llm::Script::from_json(&script).unwrap(), None).await.unwrap();
    let overrides_in = |dir: &std::path::Path| Overrides {
        provider: Some("anthropic".into()),
        base_url: Some(server.url()),
        model: Some("mock".into()),
        cwd: Some(dir.to_path_buf()),
        tern_home: Some(home.path().to_path_buf()),
        ..Default::default()
    };
    let overrides = || overrides_in(work.path());
    let prompt = Arc::new(AllowAlways { asked: AtomicUsize::new(0), scope: RuleScope::Project });
    let events: tern_agent_loop::EventSink = Arc::new(|_| {});

    let mut rt = Runtime::new(overrides()).await.unwrap();
    rt.set_permission_prompt(prompt.clone());
    let report = rt.prompt("touch it twice", &events).await.unwrap();
    assert_eq!(report.outcome.final_text, "done");
    assert!(report.permission_denials.is_empty(), "{:?}", report.permission_denials);
    assert_eq!(prompt.asked.load(Ordering::SeqCst), 1, "the second identical call matched the session rule");
    assert!(work.path().join("made.txt").exists());
    // Saved in the user config for this project, never in the repository's
    // own files (which could pre-seed allow rules).
    assert!(!work.path().join(".tern/config.toml").exists());
    let saved = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(saved.contains("bash(touch:*)") && saved.contains("[projects."), "{saved}");
    assert!(report.notices.iter().any(|n| n.contains("saved `bash(touch:*)`")), "{:?}", report.notices);

    // A new session in the same project reads the saved rule: no question
    // (the mock replays the same conversation: two touches).
    let mut rt = Runtime::new(overrides()).await.unwrap();
    rt.set_permission_prompt(prompt.clone());
    let report = rt.prompt("touch it again", &events).await.unwrap();
    assert_eq!(report.outcome.final_text, "done");
    assert!(report.permission_denials.is_empty());
    assert_eq!(prompt.asked.load(Ordering::SeqCst), 1, "the saved rule matched in the next session");

    // "Only for this session", in another folder: asked once in the session,
    // saved nowhere, so asked again in the next one.
    let other = tempfile::tempdir().unwrap();
    let session_only = Arc::new(AllowAlways { asked: AtomicUsize::new(0), scope: RuleScope::Session });
    for (round, asked) in [(1, 1), (2, 2)] {
        let mut rt = Runtime::new(overrides_in(other.path())).await.unwrap();
        rt.set_permission_prompt(session_only.clone());
        let report = rt.prompt("touch it", &events).await.unwrap();
        assert_eq!(report.outcome.final_text, "done");
        assert_eq!(session_only.asked.load(Ordering::SeqCst), asked, "round {round}");
        assert!(report.notices.iter().any(|n| n.contains("for this session (saved nowhere)")), "{:?}", report.notices);
    }
    assert_eq!(std::fs::read_to_string(home.path().join("config.toml")).unwrap(), saved, "nothing saved");

    // "In every project": saved under [permissions], so a third folder is not asked.
    let everywhere = Arc::new(AllowAlways { asked: AtomicUsize::new(0), scope: RuleScope::User });
    let mut rt = Runtime::new(overrides_in(other.path())).await.unwrap();
    rt.set_permission_prompt(everywhere.clone());
    rt.prompt("touch it", &events).await.unwrap();
    assert_eq!(everywhere.asked.load(Ordering::SeqCst), 1);
    let saved = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    let global: toml::Value = toml::from_str(&saved).unwrap();
    assert_eq!(global["permissions"]["allow"][0].as_str(), Some("bash(touch:*)"), "{saved}");
    let third = tempfile::tempdir().unwrap();
    let mut rt = Runtime::new(overrides_in(third.path())).await.unwrap();
    rt.set_permission_prompt(everywhere.clone());
    let report = rt.prompt("touch it", &events).await.unwrap();
    assert!(report.permission_denials.is_empty());
    assert_eq!(everywhere.asked.load(Ordering::SeqCst), 1, "the global rule held in another folder");

    // /permissions: moved to this project only, then removed: asked again.
    let command = tern_protocol::Command::MoveRule { rule: "bash(touch:*)".into(), to: RuleScope::Project };
    rt.apply(command, &events).await.unwrap();
    let saved = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    let moved: toml::Value = toml::from_str(&saved).unwrap();
    assert!(moved["permissions"]["allow"].as_array().unwrap().is_empty(), "{saved}");
    let key = third.path().display().to_string();
    assert_eq!(moved["projects"][key.as_str()]["allow"][0].as_str(), Some("bash(touch:*)"), "{saved}");
    let command = tern_protocol::Command::RemoveRule { rule: "bash(touch:*)".into() };
    let Ok(tern_runtime::apply::Outcome::RuleRemoved { places, .. }) = rt.apply(command, &events).await else {
        panic!("the rule is removed");
    };
    assert_eq!(places.len(), 1, "{places:?}");
    assert!(!rt.permissions_report().contains("bash(touch:*)"), "gone from this session too");
    let mut rt = Runtime::new(overrides_in(third.path())).await.unwrap();
    rt.set_permission_prompt(everywhere.clone());
    rt.prompt("touch it", &events).await.unwrap();
    assert_eq!(everywhere.asked.load(Ordering::SeqCst), 2, "asked again once removed");
}
