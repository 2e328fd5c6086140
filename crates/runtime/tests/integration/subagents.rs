//! A subagent in process against the mock: the `task` tool runs a child
//! with its own system prompt and a read-only catalog, its events reach the
//! parent's stream wrapped with the call's id, its answer is the tool's
//! result, and its usage counts in the session's.

use std::sync::{Arc, Mutex};

use tern_protocol::{AgentEvent, ToolDetails};
use tern_runtime::Runtime;

#[tokio::test]
async fn a_task_runs_a_child_whose_answer_and_usage_come_back() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let usage = r#""usage": {"input_tokens": 100, "output_tokens": 10}"#;
    let task = r#"{"name": "task", "arguments": {"description": "look", "prompt": "find the answer", "subagent_type": "explore"}}"#;
    let script = format!(
        r#"{{"turns": [
        {{"when_request_contains": "You are a subagent (explore)", "text": "child: it is 42", {usage}}},
        {{"tool_calls": [{task}], {usage}}},
        {{"text": "the child says 42", {usage}}}
    ]}}"#
    );
    let server =
        tern_mock_llm::MockServer::start(tern_mock_llm::Script::from_json(&script).unwrap(), None).await.unwrap();
    let rt = Runtime::new(crate::mock_overrides(&server, &work, &home)).await.unwrap();
    let seen: Arc<Mutex<Vec<AgentEvent>>> = Arc::default();
    let kept = seen.clone();
    let events: tern_agent_loop::EventSink = Arc::new(move |e| kept.lock().unwrap().push(e));
    let report = rt.prompt("ask a child", &events).await.unwrap();
    assert_eq!(report.outcome.final_text, "the child says 42");

    let requests = server.requests();
    assert_eq!(requests.len(), 3, "parent, child, parent");
    let child = &requests[1].body;
    let tools: Vec<&str> = child["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(!tools.contains(&"task") && !tools.contains(&"write") && tools.contains(&"read"), "{tools:?}");
    assert!(requests[2].body.to_string().contains("child: it is 42"), "the answer is the tool's result");

    let seen = seen.lock().unwrap();
    let call = seen
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionEnd { id, details, .. } => match details.as_deref() {
                Some(ToolDetails::Task(t)) => Some((id.clone(), t.clone())),
                _ => None,
            },
            _ => None,
        })
        .expect("the task's details");
    assert_eq!((call.1.subagent_type.as_str(), call.1.turns), ("explore", 1));
    assert!(
        seen.iter()
            .any(|e| matches!(e, AgentEvent::Subagent { parent_tool_use_id, .. } if *parent_tool_use_id == call.0)),
        "the child's events reach the parent's stream under the call's id"
    );
    assert_eq!(rt.session_usage().0.input_tokens, 300, "the child's response counts in the session");
}
