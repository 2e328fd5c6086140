//! Prompts continue one conversation until it is cleared. One test in this
//! file: it sets TERN_HOME for the process.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use tern_runtime::{Overrides, Runtime};

#[tokio::test]
async fn each_prompt_continues_the_conversation_until_cleared() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // SAFETY: the only test in this binary; set before any thread reads it.
    unsafe { std::env::set_var("TERN_HOME", home.path()) };
    let script = r#"{"turns": [{"text": "first answer"}, {"text": "second answer"}]}"#;
    let server =
        tern_mock_llm::MockServer::start(tern_mock_llm::Script::from_json(script).unwrap(), None).await.unwrap();
    let rt = Runtime::new(Overrides {
        provider: Some("anthropic".into()),
        base_url: Some(server.url()),
        model: Some("mock".into()),
        cwd: Some(work.path().to_path_buf()),
        ..Default::default()
    })
    .await
    .unwrap();
    let events: tern_agent_loop::EventSink = Arc::new(|_| {});
    let one = rt.run_prompt("hello", &events, &Default::default()).await;
    assert_eq!(one.outcome.final_text, "first answer");
    let two = rt.run_prompt("and then?", &events, &Default::default()).await;
    assert_eq!(two.outcome.final_text, "second answer");
    let messages = |i: usize| server.requests()[i].body["messages"].as_array().unwrap().len();
    assert_eq!(messages(0), 1);
    assert_eq!(messages(1), 3, "user, assistant, user");
    rt.clear_history().await;
    let three = rt.run_prompt("fresh start", &events, &Default::default()).await;
    assert_eq!(three.outcome.final_text, "first answer", "the mock answers by turn count: a new conversation");
    assert_eq!(messages(2), 1);
}
