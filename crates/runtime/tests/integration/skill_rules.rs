//! A skill's or a command's `allowed-tools` hold while the prompt that
//! loaded it runs, and not after — also when a hook blocks the prompt: the
//! next prompt of the same session is asked again.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use tern_runtime::{Overrides, PermissionAnswer, PermissionPrompt, PermissionRequest, Runtime};

/// Says yes, and counts the questions.
struct Counting(AtomicUsize);

impl PermissionPrompt for Counting {
    fn ask(&self, _request: PermissionRequest) -> BoxFuture<'_, PermissionAnswer> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { PermissionAnswer::Allow })
    }
}

#[tokio::test]
async fn skill_rules_last_for_their_prompt_only() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let skill = work.path().join(".tern/skills/toucher/SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    std::fs::write(
        &skill,
        "---\ndescription: Touch files\nallowed-tools: bash(touch:*)\n---\nTouch what you are told.",
    )
    .unwrap();
    // A command whose prompt a hook blocks.
    let command = work.path().join(".tern/commands/mk.md");
    std::fs::create_dir_all(command.parent().unwrap()).unwrap();
    std::fs::write(&command, "---\ndescription: Make dirs\nallowed-tools: bash(mkdir:*)\n---\nBLOCKME $ARGUMENTS")
        .unwrap();
    std::fs::write(
        work.path().join(".tern/config.toml"),
        "[[hooks.user_prompt_submit]]\ncommand = \"grep -q BLOCKME && exit 2 || exit 0\"\n",
    )
    .unwrap();
    let script = r#"{"turns": [
        {"tool_calls": [{"name": "skill", "arguments": {"name": "toucher"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "touch a.txt"}}]},
        {"text": "first done"},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "touch b.txt"}}]},
        {"text": "second done"}
    ]}"#;
    let server =
        tern_mock_llm::MockServer::start(tern_mock_llm::Script::from_json(script).unwrap(), None).await.unwrap();
    let mut rt = Runtime::new(Overrides {
        provider: Some("anthropic".into()),
        base_url: Some(server.url()),
        model: Some("mock".into()),
        cwd: Some(work.path().to_path_buf()),
        tern_home: Some(home.path().to_path_buf()),
        trust: true,
        ..Default::default()
    })
    .await
    .unwrap();
    let prompt = Arc::new(Counting(AtomicUsize::new(0)));
    rt.set_permission_prompt(prompt.clone());
    let events: tern_agent_loop::EventSink = Arc::new(|_| {});
    let report = rt.prompt("use the skill", &events).await.unwrap();
    assert_eq!(report.outcome.final_text, "first done");
    assert_eq!(prompt.0.load(Ordering::SeqCst), 0, "the skill allowed the touch");
    assert!(work.path().join("a.txt").exists());
    assert!(!rt.permissions_report().contains("skill toucher"), "gone when the prompt ended");
    let report = rt.prompt("again", &events).await.unwrap();
    assert_eq!(report.outcome.final_text, "second done");
    assert_eq!(prompt.0.load(Ordering::SeqCst), 1, "the next prompt is asked again");
    let report = rt.prompt("/mk x", &events).await.expect("the command is found");
    assert!(report.outcome.error.is_some(), "the hook blocked it");
    let rules = rt.permissions_report();
    assert!(!rules.contains("mkdir"), "a blocked prompt leaves no rule behind: {rules}");
}
