//! Prompts continue one conversation until it is cleared.

use std::sync::Arc;

use futures::FutureExt as _;
use tern_runtime::Runtime;

#[tokio::test]
async fn each_prompt_continues_the_conversation_until_cleared() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let script = r#"{"turns": [{"text": "first answer"}, {"text": "second answer"}]}"#;
    let server =
        tern_mock_llm::MockServer::start(tern_mock_llm::Script::from_json(script).unwrap(), None).await.unwrap();
    let rt = Runtime::new(crate::mock_overrides(&server, &work, &home)).await.unwrap();
    let events: tern_agent_loop::EventSink = Arc::new(|_| {});
    let one = rt.prompt("hello", &events).await.unwrap();
    assert_eq!(one.outcome.final_text, "first answer");
    let two = rt.prompt("and then?", &events).await.unwrap();
    assert_eq!(two.outcome.final_text, "second answer");
    let messages = |i: usize| server.requests()[i].body["messages"].as_array().unwrap().len();
    assert_eq!(messages(0), 1);
    assert_eq!(messages(1), 3, "user, assistant, user");
    rt.apply(tern_protocol::Command::Clear, &events).await.unwrap();
    let three = rt.prompt("fresh start", &events).await.unwrap();
    assert_eq!(three.outcome.final_text, "first answer", "the mock answers by turn count: a new conversation");
    assert_eq!(messages(2), 1);

    // /model: the next request goes to another model; the catalog follows its context window.
    let set = |name: &str| {
        let command = tern_protocol::Command::SetModel { model: Some(name.to_string()) };
        match rt.apply(command, &events).now_or_never().expect("a model switch needs no waiting") {
            Ok(tern_runtime::apply::Outcome::Model { warning, .. }) => Ok(warning),
            Ok(other) => panic!("{other:?}"),
            Err(e) => Err(e),
        }
    };
    let warning = set("claude-haiku-4-5").unwrap();
    assert!(warning.is_none(), "a model from the table: {warning:?}");
    assert_eq!(rt.model(), "claude-haiku-4-5");
    let _ = rt.prompt("on the small model", &events).await.unwrap();
    assert_eq!(server.requests()[3].body["model"], "claude-haiku-4-5");
    let unknown = set("my-local-thing").unwrap();
    assert!(unknown.unwrap().contains("not in the model table"));
    assert_eq!(rt.catalog().facts().model.name, "my-local-thing");
    assert!(set("  ").is_err());
}
