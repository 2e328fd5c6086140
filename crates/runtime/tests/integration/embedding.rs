//! The embedding example (`cargo run -p tern-runtime --example embed`), run
//! as a test: a custom tool called by the mock model, an extension's slash
//! command and its check, headless, events read by the program.

#[path = "../../examples/embed.rs"]
#[allow(dead_code)]
mod example;

#[tokio::test]
async fn a_custom_tool_and_an_extension_run_against_the_mock() {
    let home = tempfile::tempdir().unwrap();
    let script = r#"{"turns": [
        {"tool_calls": [
            {"name": "word_count", "arguments": {"text": "the quick brown fox"}},
            {"name": "bash", "arguments": {"command": "echo hi"}}
        ]},
        {"text": "There are 4 words."}
    ]}"#;
    let server =
        tern_mock_llm::MockServer::start(tern_mock_llm::Script::from_json(script).unwrap(), None).await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let answer = example::run(&server.url(), work.path(), home.path(), "/count the quick brown fox").await.unwrap();
    assert_eq!(answer, "There are 4 words.");
    let requests = server.requests();
    let first = requests[0].body.to_string();
    assert!(first.contains("\"word_count\""), "the SDK tool is offered");
    assert!(first.contains("Count the words in: the quick brown fox"), "the extension's command was expanded");
    let results = requests.last().unwrap().body["messages"].to_string();
    assert!(results.contains("4 words"), "the custom tool ran: {results}");
    assert!(results.contains("Blocked by extension no-shell"), "the extension blocked bash: {results}");
}
