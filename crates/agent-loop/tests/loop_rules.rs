//! Every rule of the agent loop, one test each: batch scheduling, result
//! order, the default mode, unknown tools, schema validation, hooks, the
//! event stream, malformed and cut replies, the turn limit, cancellation and
//! provider errors.
//!
//! Tools are fakes implementing [`Tool`]; wherever a model is needed, the
//! real [`HttpProvider`] talks over HTTP to a [`MockServer`] on 127.0.0.1.
//! Synchronisation uses barriers, oneshot channels and yields, never sleeps.

// The helpers outside `#[test]` functions panic on purpose, like the tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tern_agent_loop::{
    AgentLoop, BeforeToolCall, EventSink, Hooks, LoopConfig, NoHooks, RunOutcome, RuntimeTool, Tool, ToolCallResult,
    ToolContext, ToolError, ToolOutput, UpdateSink, execute_batch,
};
use tern_llm::{Api, HttpProvider, Provider, ProviderConfig, RetryPolicy};
use tern_mock_llm::{MockServer, Script};
use tern_protocol::{
    AgentEvent, AgentStopReason, ContentBlock, ExecutionMode, Message, Role, ToolCall, ToolDefinition,
    ToolResultContent, ToolSource,
};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

const PARALLEL: ExecutionMode = ExecutionMode::Parallel;
const SEQUENTIAL: ExecutionMode = ExecutionMode::Sequential;
/// Upper bound for anything that could hang if a rule were broken.
const LIMIT: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------
// Fake tools
// ---------------------------------------------------------------------------

/// What a fake tool saw: how often it ran and with which arguments.
#[derive(Default)]
struct Probe {
    calls: AtomicUsize,
    inputs: Mutex<Vec<Value>>,
}

impl Probe {
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn inputs(&self) -> Vec<Value> {
        self.inputs.lock().unwrap().clone()
    }

    fn record(&self, input: &Value) {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inputs.lock().unwrap().push(input.clone());
    }
}

type Run =
    dyn Fn(Value, CancellationToken, UpdateSink) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync;

/// A tool whose behaviour is a closure; it records every execution.
struct FakeTool {
    probe: Arc<Probe>,
    run: Box<Run>,
}

impl FakeTool {
    fn new(
        run: impl Fn(Value, CancellationToken, UpdateSink) -> BoxFuture<'static, Result<ToolOutput, ToolError>>
        + Send
        + Sync
        + 'static,
    ) -> (Self, Arc<Probe>) {
        let probe = Arc::new(Probe::default());
        (Self { probe: probe.clone(), run: Box::new(run) }, probe)
    }

    /// Answers `echo <input>`.
    fn echo() -> (Self, Arc<Probe>) {
        Self::new(|input, _, _| Box::pin(async move { Ok(ToolOutput::text(format!("echo {input}"))) }))
    }
}

impl Tool for FakeTool {
    fn execute<'a>(
        &'a self,
        _ctx: ToolContext,
        input: Value,
        cancel: CancellationToken,
        updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        self.probe.record(&input);
        (self.run)(input, cancel, updates)
    }
}

/// A tool that accepts `"5"` where its schema wants the integer 5.
struct CoercingTool {
    probe: Arc<Probe>,
}

impl Tool for CoercingTool {
    fn prepare_arguments(&self, mut input: Value) -> Value {
        if let Some(n) = input["count"].as_str().and_then(|s| s.parse::<i64>().ok()) {
            input["count"] = json!(n);
        }
        input
    }

    fn execute<'a>(
        &'a self,
        _ctx: ToolContext,
        input: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        self.probe.record(&input);
        Box::pin(async move { Ok(ToolOutput::text(format!("counted {}", input["count"]))) })
    }
}

/// A tool that logs `start <tag>` / `end <tag>` (tag from its input) and
/// yields to the scheduler `yields` times in between.
fn recorder(log: &Arc<Mutex<Vec<String>>>, yields: usize) -> FakeTool {
    let log = log.clone();
    FakeTool::new(move |input, _, _| {
        let log = log.clone();
        Box::pin(async move {
            let tag = input["tag"].as_str().unwrap_or("?").to_string();
            log.lock().unwrap().push(format!("start {tag}"));
            for _ in 0..yields {
                tokio::task::yield_now().await;
            }
            log.lock().unwrap().push(format!("end {tag}"));
            Ok(ToolOutput::text(tag))
        })
    })
    .0
}

fn object_schema() -> Value {
    json!({"type": "object"})
}

fn count_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"count": {"type": "integer"}},
        "required": ["count"]
    })
}

fn runtime_tool(name: &str, mode: ExecutionMode, schema: Value, tool: impl Tool + 'static) -> RuntimeTool {
    RuntimeTool::new(
        ToolDefinition {
            name: name.into(),
            description: format!("The {name} test tool."),
            input_schema: schema,
            snippet: None,
            execution_mode: mode,
        },
        Arc::new(tool),
        ToolSource::Builtin,
    )
}

fn call(id: &str, name: &str, input: Value) -> ToolCall {
    ToolCall { id: id.into(), name: name.into(), input }
}

fn ok_text(text: &str) -> ToolCallResult {
    ToolCallResult { content: vec![ToolResultContent::text(text)], is_error: false, details: None }
}

/// The single text block of a result.
fn result_text(r: &ToolCallResult) -> &str {
    match r.content.as_slice() {
        [ToolResultContent::Text { text }] => text,
        other => panic!("expected one text block, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Hooks, events, provider
// ---------------------------------------------------------------------------

/// Hooks that do what their fields say; unset fields do nothing.
#[derive(Default)]
struct TestHooks {
    block: Option<String>,
    rewrite_input: Option<Value>,
    rewrite_result: Option<ToolCallResult>,
    inject_text: Option<String>,
    /// Results `after_tool_call` was given.
    seen_results: Mutex<Vec<ToolCallResult>>,
    /// Each request `on_request` was given: its messages and the names of its tools.
    sent: Mutex<Vec<(Vec<Message>, Vec<String>)>>,
}

impl Hooks for TestHooks {
    fn before_tool_call<'a>(&'a self, _call: &'a ToolCall) -> BoxFuture<'a, BeforeToolCall> {
        Box::pin(async move {
            match (&self.block, &self.rewrite_input) {
                (Some(reason), _) => BeforeToolCall::Block { reason: reason.clone() },
                (None, input) => BeforeToolCall::Continue { input: input.clone(), confinement: None, judged: None },
            }
        })
    }

    fn after_tool_call<'a>(&'a self, _call: &'a ToolCall, result: ToolCallResult) -> BoxFuture<'a, ToolCallResult> {
        Box::pin(async move {
            self.seen_results.lock().unwrap().push(result.clone());
            self.rewrite_result.clone().unwrap_or(result)
        })
    }

    fn transform_context<'a>(&'a self, messages: &'a mut Vec<Message>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let (Some(text), Some(last)) = (&self.inject_text, messages.last_mut()) {
                last.content.push(ContentBlock::Text { text: text.clone() });
            }
        })
    }

    fn on_request(&self, request: &Arc<tern_llm::ModelRequest>, tools: &[RuntimeTool]) {
        let names = tools.iter().map(|t| t.name().to_string()).collect();
        assert_eq!(
            request.tools.iter().map(|t| &t.name).collect::<Vec<_>>(),
            tools.iter().map(|t| &t.definition.name).collect::<Vec<_>>()
        );
        self.sent.lock().unwrap().push((request.messages.clone(), names));
    }
}

/// An event sink that keeps everything.
fn collector() -> (EventSink, Arc<Mutex<Vec<AgentEvent>>>) {
    let store = Arc::new(Mutex::new(Vec::new()));
    let sink_store = store.clone();
    let sink: EventSink = Arc::new(move |e| sink_store.lock().unwrap().push(e));
    (sink, store)
}

fn ignore_events() -> EventSink {
    Arc::new(|_| {})
}

/// The serialised `type` tag of an event (`turn_start`, `text_delta`, ...).
fn event_type(e: &AgentEvent) -> String {
    serde_json::to_value(e).unwrap()["type"].as_str().unwrap().to_string()
}

async fn mock(script: Value) -> MockServer {
    MockServer::start(Script::from_json(&script.to_string()).unwrap(), None).await.unwrap()
}

fn provider(server: &MockServer) -> Arc<dyn Provider> {
    Arc::new(HttpProvider::new(ProviderConfig::new(Api::Anthropic, server.url(), "test-key")).unwrap())
}

fn agent(server: &MockServer, tools: Vec<RuntimeTool>, hooks: Arc<dyn Hooks>) -> AgentLoop {
    AgentLoop::new(provider(server), tools, hooks, LoopConfig::new("mock", "system"))
}

/// Run `agent` on a one-message conversation; returns the outcome, the final
/// history and every event.
async fn run(agent: &AgentLoop, cancel: &CancellationToken) -> (RunOutcome, Vec<Message>, Vec<AgentEvent>) {
    let mut history = vec![Message::user_text("hi")];
    let (sink, events) = collector();
    let outcome = tokio::time::timeout(LIMIT, agent.run(&mut history, &sink, cancel)).await.expect("run hung");
    let events = events.lock().unwrap().clone();
    (outcome, history, events)
}

/// A request body value with the prompt-caching markers removed, so tests
/// assert on content only.
fn without_cache_control(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), without_cache_control(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_cache_control).collect()),
        other => other.clone(),
    }
}

// ---------------------------------------------------------------------------
// 1-3. Batch scheduling and result order
// ---------------------------------------------------------------------------

#[tokio::test]
async fn batch_of_parallel_tools_runs_concurrently() {
    // Each tool waits at a barrier for the other: a sequential run would
    // never get past the first call.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let meeting = |name: &str| {
        let barrier = barrier.clone();
        let (tool, _) = FakeTool::new(move |_, _, _| {
            let barrier = barrier.clone();
            Box::pin(async move {
                barrier.wait().await;
                Ok(ToolOutput::text("met"))
            })
        });
        runtime_tool(name, PARALLEL, object_schema(), tool)
    };
    let tools = vec![meeting("left"), meeting("right")];
    let calls = vec![call("c1", "left", json!({})), call("c2", "right", json!({}))];

    let results = tokio::time::timeout(
        LIMIT,
        execute_batch(&tools, &calls, &NoHooks, &ignore_events(), &CancellationToken::new()),
    )
    .await
    .expect("two Parallel tools did not run concurrently");

    assert_eq!(results, vec![ok_text("met"), ok_text("met")]);
}

#[tokio::test]
async fn batch_with_a_sequential_tool_runs_strictly_in_call_order() {
    let log = Arc::new(Mutex::new(Vec::new()));
    // Every tool yields several times mid-call, so any concurrency would
    // interleave the log. One Sequential tool in the middle makes the whole
    // batch sequential, the Parallel calls around it included.
    let tools = vec![
        runtime_tool("par", PARALLEL, object_schema(), recorder(&log, 5)),
        runtime_tool("seq", SEQUENTIAL, object_schema(), recorder(&log, 5)),
    ];
    let calls = vec![
        call("c1", "par", json!({"tag": "a"})),
        call("c2", "seq", json!({"tag": "b"})),
        call("c3", "par", json!({"tag": "c"})),
        call("c4", "seq", json!({"tag": "d"})),
    ];

    let results = tokio::time::timeout(
        LIMIT,
        execute_batch(&tools, &calls, &NoHooks, &ignore_events(), &CancellationToken::new()),
    )
    .await
    .unwrap();

    assert_eq!(
        log.lock().unwrap().clone(),
        vec!["start a", "end a", "start b", "end b", "start c", "end c", "start d", "end d"]
    );
    assert_eq!(results, vec![ok_text("a"), ok_text("b"), ok_text("c"), ok_text("d")]);
}

#[tokio::test]
async fn parallel_results_come_back_in_call_order_even_when_later_calls_finish_first() {
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let (release_tx, release_rx) = oneshot::channel::<()>();
    let release_tx = Arc::new(Mutex::new(Some(release_tx)));
    let release_rx = Arc::new(Mutex::new(Some(release_rx)));

    // `first` cannot finish before `second` has finished and released it.
    let first = {
        let (log, rx) = (log.clone(), release_rx.clone());
        FakeTool::new(move |_, _, _| {
            let (log, rx) = (log.clone(), rx.lock().unwrap().take());
            Box::pin(async move {
                rx.expect("first ran twice").await.map_err(|e| ToolError::new(e.to_string()))?;
                log.lock().unwrap().push("end first".into());
                Ok(ToolOutput::text("first result"))
            })
        })
        .0
    };
    let second = {
        let (log, tx) = (log.clone(), release_tx.clone());
        FakeTool::new(move |_, _, _| {
            let (log, tx) = (log.clone(), tx.lock().unwrap().take());
            Box::pin(async move {
                log.lock().unwrap().push("end second".into());
                let _ = tx.expect("second ran twice").send(());
                Ok(ToolOutput::text("second result"))
            })
        })
        .0
    };
    let tools = vec![
        runtime_tool("first", PARALLEL, object_schema(), first),
        runtime_tool("second", PARALLEL, object_schema(), second),
    ];
    let calls = vec![call("c1", "first", json!({})), call("c2", "second", json!({}))];

    let results = tokio::time::timeout(
        LIMIT,
        execute_batch(&tools, &calls, &NoHooks, &ignore_events(), &CancellationToken::new()),
    )
    .await
    .unwrap();

    assert_eq!(log.lock().unwrap().clone(), vec!["end second", "end first"]);
    assert_eq!(results, vec![ok_text("first result"), ok_text("second result")]);
}

// ---------------------------------------------------------------------------
// 4. Default mode
// ---------------------------------------------------------------------------

#[tokio::test]
async fn tool_without_a_declared_mode_is_sequential() {
    let definition: ToolDefinition = serde_json::from_value(json!({
        "name": "legacy",
        "description": "Declares no execution mode.",
        "input_schema": {"type": "object"}
    }))
    .unwrap();
    assert_eq!(definition.execution_mode, ExecutionMode::Sequential);

    let log = Arc::new(Mutex::new(Vec::new()));
    let legacy = RuntimeTool::new(definition, Arc::new(recorder(&log, 5)), ToolSource::Builtin);
    assert_eq!(legacy.mode(), ExecutionMode::Sequential);
    let tools = vec![legacy, runtime_tool("par", PARALLEL, object_schema(), recorder(&log, 5))];
    let calls = vec![call("c1", "legacy", json!({"tag": "a"})), call("c2", "par", json!({"tag": "b"}))];

    tokio::time::timeout(LIMIT, execute_batch(&tools, &calls, &NoHooks, &ignore_events(), &CancellationToken::new()))
        .await
        .unwrap();

    assert_eq!(log.lock().unwrap().clone(), vec!["start a", "end a", "start b", "end b"]);
}

// ---------------------------------------------------------------------------
// 5. Unknown tools
// ---------------------------------------------------------------------------

#[tokio::test]
async fn unknown_tool_gets_an_error_naming_it_and_the_rest_of_the_batch_still_runs() {
    let (echo, echo_probe) = FakeTool::echo();
    let (other, _) = FakeTool::echo();
    let tools = vec![
        runtime_tool("echo", SEQUENTIAL, object_schema(), echo),
        runtime_tool("other", PARALLEL, object_schema(), other),
    ];
    let calls = vec![call("c1", "nope", json!({"x": 1})), call("c2", "echo", json!({"y": 2}))];

    let results = execute_batch(&tools, &calls, &NoHooks, &ignore_events(), &CancellationToken::new()).await;

    assert_eq!(results.len(), 2);
    let unknown = &results[0];
    assert!(unknown.is_error, "{unknown:?}");
    let text = result_text(unknown);
    assert!(text.contains("`nope`"), "does not name the tool: {text}");
    assert!(text.contains("echo, other"), "does not list the available tools: {text}");
    assert_eq!(results[1], ok_text(r#"echo {"y":2}"#));
    assert_eq!(echo_probe.inputs(), vec![json!({"y": 2})]);
}

// ---------------------------------------------------------------------------
// 6. Schema validation and prepare_arguments
// ---------------------------------------------------------------------------

#[tokio::test]
async fn arguments_failing_the_schema_are_refused_without_running_the_tool() {
    let (tool, probe) = FakeTool::echo();
    let tools = vec![runtime_tool("count", PARALLEL, count_schema(), tool)];
    let calls = vec![
        call("c1", "count", json!({"count": "many"})),
        call("c2", "count", json!({})),
        call("c3", "count", json!({"count": 3})),
    ];

    let results = execute_batch(&tools, &calls, &NoHooks, &ignore_events(), &CancellationToken::new()).await;

    let wrong_type = &results[0];
    assert!(wrong_type.is_error, "{wrong_type:?}");
    let text = result_text(wrong_type);
    assert!(text.contains("/count"), "no JSON pointer to the field: {text}");
    assert!(text.contains("schema"), "does not mention the schema: {text}");

    let missing = &results[1];
    assert!(missing.is_error, "{missing:?}");
    let text = result_text(missing);
    assert!(text.contains("\"count\"") && text.contains("required"), "does not name the missing field: {text}");
    assert!(text.contains("schema"), "does not mention the schema: {text}");

    assert_eq!(results[2], ok_text(r#"echo {"count":3}"#));
    // Only the valid call ran.
    assert_eq!(probe.calls(), 1);
    assert_eq!(probe.inputs(), vec![json!({"count": 3})]);
}

#[tokio::test]
async fn prepare_arguments_runs_before_validation() {
    let probe = Arc::new(Probe::default());
    let tools = vec![runtime_tool("count", SEQUENTIAL, count_schema(), CoercingTool { probe: probe.clone() })];
    let calls = vec![call("c1", "count", json!({"count": "5"}))];

    let results = execute_batch(&tools, &calls, &NoHooks, &ignore_events(), &CancellationToken::new()).await;

    assert_eq!(results, vec![ok_text("counted 5")]);
    assert_eq!(probe.inputs(), vec![json!({"count": 5})]);
}

// ---------------------------------------------------------------------------
// 7. Hooks
// ---------------------------------------------------------------------------

#[tokio::test]
async fn before_hook_block_returns_exactly_the_reason_and_does_not_execute() {
    let (tool, probe) = FakeTool::echo();
    let tools = vec![runtime_tool("echo", SEQUENTIAL, object_schema(), tool)];
    let hooks = TestHooks { block: Some("Blocked by policy: no echo today.".into()), ..Default::default() };

    let results =
        execute_batch(&tools, &[call("c1", "echo", json!({}))], &hooks, &ignore_events(), &CancellationToken::new())
            .await;

    assert_eq!(results, vec![ToolCallResult::error("Blocked by policy: no echo today.")]);
    assert_eq!(probe.calls(), 0);
}

#[tokio::test]
async fn before_hook_can_rewrite_the_input_the_tool_receives() {
    let (tool, probe) = FakeTool::echo();
    let tools = vec![runtime_tool("count", SEQUENTIAL, count_schema(), tool)];
    let hooks = TestHooks { rewrite_input: Some(json!({"count": 7})), ..Default::default() };

    let results = execute_batch(
        &tools,
        &[call("c1", "count", json!({"count": 1}))],
        &hooks,
        &ignore_events(),
        &CancellationToken::new(),
    )
    .await;

    assert_eq!(probe.inputs(), vec![json!({"count": 7})]);
    assert_eq!(results, vec![ok_text(r#"echo {"count":7}"#)]);
}

#[tokio::test]
async fn after_hook_can_rewrite_the_result() {
    let (tool, probe) = FakeTool::echo();
    let tools = vec![runtime_tool("echo", SEQUENTIAL, object_schema(), tool)];
    let rewritten = ToolCallResult {
        content: vec![ToolResultContent::text("[redacted by hook]")],
        is_error: false,
        details: Some(Box::new(tern_protocol::ToolDetails::Other(json!({"redacted": true})))),
    };
    let hooks = TestHooks { rewrite_result: Some(rewritten.clone()), ..Default::default() };
    let (sink, events) = collector();

    let results =
        execute_batch(&tools, &[call("c1", "echo", json!({"a": 1}))], &hooks, &sink, &CancellationToken::new()).await;

    assert_eq!(probe.calls(), 1);
    // The hook saw the tool's own result and replaced it, for the model and
    // in the end event alike.
    assert_eq!(hooks.seen_results.lock().unwrap().clone(), vec![ok_text(r#"echo {"a":1}"#)]);
    assert_eq!(results, vec![rewritten.clone()]);
    let end = events
        .lock()
        .unwrap()
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionEnd { content, is_error, details, .. } => {
                Some((content.clone(), *is_error, details.clone()))
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(end, (rewritten.content, rewritten.is_error, rewritten.details));
}

#[tokio::test]
async fn transform_context_changes_the_request_but_not_the_history() {
    let server = mock(json!({"turns": [{"text": "ok"}]})).await;
    let hooks = Arc::new(TestHooks { inject_text: Some("[injected context]".into()), ..Default::default() });
    let agent = agent(&server, vec![], hooks);

    let (outcome, history, _) = run(&agent, &CancellationToken::new()).await;

    assert_eq!(outcome.stop_reason, AgentStopReason::Completed);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        without_cache_control(&requests[0].body["messages"]),
        json!([{"role": "user", "content": [
            {"type": "text", "text": "hi"},
            {"type": "text", "text": "[injected context]"}
        ]}])
    );
    assert_eq!(history, vec![Message::user_text("hi"), Message::assistant_text("ok")]);
}

#[tokio::test]
async fn on_request_sees_each_request_as_sent_with_its_tools() {
    let server = mock(json!({"turns": [
        {"tool_calls": [{"name": "probe", "arguments": {}}]},
        {"text": "ok"}
    ]}))
    .await;
    let hooks = Arc::new(TestHooks { inject_text: Some("[injected]".into()), ..Default::default() });
    let tool = runtime_tool("probe", ExecutionMode::Parallel, object_schema(), recorder(&Default::default(), 0));
    let agent = agent(&server, vec![tool], hooks.clone());

    let (outcome, history, _) = run(&agent, &CancellationToken::new()).await;

    assert_eq!(outcome.stop_reason, AgentStopReason::Completed);
    let sent = hooks.sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 2, "one for each request");
    // What was sent (after transform_context), not the history.
    let mut first = Message::user_text("hi");
    first.content.push(ContentBlock::Text { text: "[injected]".into() });
    assert_eq!(sent[0], (vec![first], vec!["probe".to_string()]));
    assert_eq!(sent[1].0.len(), 3);
    assert_eq!(sent[1].0[1], history[1], "the reply with the call");
}

// ---------------------------------------------------------------------------
// 8. The event stream of a two-turn run
// ---------------------------------------------------------------------------

#[tokio::test]
async fn two_turn_run_emits_events_in_order_and_sends_the_tool_result_back() {
    let server = mock(json!({"turns": [
        {"text": "Let me run the probe.", "tool_calls": [{"name": "probe", "arguments": {"n": 1}}]},
        {"text": "All done."}
    ]}))
    .await;
    let (tool, probe) = FakeTool::new(|_, _, updates| {
        Box::pin(async move {
            updates("partial line".into());
            Ok(ToolOutput::text("probe output"))
        })
    });
    let agent = agent(&server, vec![runtime_tool("probe", SEQUENTIAL, object_schema(), tool)], Arc::new(NoHooks));

    let (outcome, _, events) = run(&agent, &CancellationToken::new()).await;

    // Runs of text deltas collapse to one entry.
    let mut types: Vec<String> = Vec::new();
    for e in &events {
        let t = event_type(e);
        let t = if t == "text_delta" { "text_delta...".to_string() } else { t };
        if t != "text_delta..." || types.last() != Some(&t) {
            types.push(t);
        }
    }
    assert_eq!(
        types,
        vec![
            "turn_start",
            "text_delta...",
            "tool_input_start",
            "tool_input_delta",
            "assistant_message",
            "tool_call_start",
            "tool_execution_update",
            "tool_execution_end",
            "turn_end",
            "turn_start",
            "text_delta...",
            "assistant_message",
            "turn_end",
            "agent_end",
        ]
    );
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "Let me run the probe.All done.");
    assert!(
        events.contains(&AgentEvent::ToolExecutionUpdate { id: "toolu_mock_0_0".into(), text: "partial line".into() })
    );
    assert_eq!(events.last(), Some(&AgentEvent::AgentEnd { stop_reason: AgentStopReason::Completed }));

    assert_eq!(probe.inputs(), vec![json!({"n": 1})]);
    assert_eq!(
        (outcome.stop_reason, outcome.turns, outcome.final_text.as_str()),
        (AgentStopReason::Completed, 2, "All done.")
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = &requests[1].body["messages"];
    assert_eq!(
        without_cache_control(&messages[2]),
        json!({"role": "user", "content": [{
            "type": "tool_result",
            "tool_use_id": "toolu_mock_0_0",
            "content": [{"type": "text", "text": "probe output"}],
            "is_error": false
        }]})
    );
}

// ---------------------------------------------------------------------------
// 9-10. Malformed and cut replies
// ---------------------------------------------------------------------------

#[tokio::test]
async fn malformed_tool_arguments_get_an_error_result_and_the_run_continues() {
    let server = mock(json!({"turns": [
        {"tool_calls": [{"name": "x", "raw_arguments": "{not json"}]},
        {"text": "Recovered."}
    ]}))
    .await;
    let (tool, probe) = FakeTool::echo();
    let agent = agent(&server, vec![runtime_tool("x", SEQUENTIAL, object_schema(), tool)], Arc::new(NoHooks));

    let (outcome, _, _) = run(&agent, &CancellationToken::new()).await;

    assert_eq!(outcome.stop_reason, AgentStopReason::Completed);
    assert_eq!(outcome.final_text, "Recovered.");
    assert_eq!(probe.calls(), 0);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = &requests[1].body["messages"];
    // The call stays in the assistant message (with what was received) so
    // the result has something to answer.
    assert_eq!(
        without_cache_control(&messages[1]),
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_mock_0_0", "name": "x", "input": {"invalid_arguments": "{not json"}}
        ]})
    );
    let result = &messages[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_mock_0_0");
    assert_eq!(result["is_error"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("not valid JSON"), "{text}");
}

#[tokio::test]
async fn cut_reply_runs_no_tools_and_tells_the_model() {
    let server = mock(json!({"turns": [
        {
            "text": "Writing the file.",
            "tool_calls": [{"name": "write", "arguments": {"path": "a.txt"}}],
            "stop_reason": "max_tokens"
        },
        {"text": "Continued."}
    ]}))
    .await;
    let (tool, probe) = FakeTool::echo();
    let agent = agent(&server, vec![runtime_tool("write", SEQUENTIAL, object_schema(), tool)], Arc::new(NoHooks));

    let (outcome, _, events) = run(&agent, &CancellationToken::new()).await;

    assert_eq!(probe.calls(), 0);
    let notices: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Notice { message } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(notices.len(), 1, "{events:#?}");
    assert!(notices[0].contains("cut off") && notices[0].contains("`write`"), "{}", notices[0]);
    assert!(!events.iter().any(|e| matches!(e, AgentEvent::ToolCallStart { .. })));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        without_cache_control(&requests[1].body["messages"]),
        json!([
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Writing the file."}]},
            {"role": "user", "content": [{"type": "text", "text": notices[0]}]}
        ])
    );
    assert_eq!(
        (outcome.stop_reason, outcome.turns, outcome.final_text.as_str()),
        (AgentStopReason::Completed, 2, "Continued.")
    );
}

// ---------------------------------------------------------------------------
// 11. Turn limit
// ---------------------------------------------------------------------------

#[tokio::test]
async fn max_turns_stops_the_run() {
    let server = mock(json!({"turns": [
        {"tool_calls": [{"name": "echo", "arguments": {"a": 1}}]},
        {"text": "never requested"}
    ]}))
    .await;
    let (tool, probe) = FakeTool::echo();
    let mut config = LoopConfig::new("mock", "system");
    config.max_turns = Some(1);
    let agent = AgentLoop::new(
        provider(&server),
        vec![runtime_tool("echo", SEQUENTIAL, object_schema(), tool)],
        Arc::new(NoHooks),
        config,
    );

    let (outcome, history, events) = run(&agent, &CancellationToken::new()).await;

    assert_eq!((outcome.stop_reason, outcome.turns), (AgentStopReason::MaxTurns, 1));
    assert_eq!(server.requests().len(), 1);
    // The first turn's tool ran and its result is in the history.
    assert_eq!(probe.calls(), 1);
    assert!(matches!(history.last().unwrap().content[0], ContentBlock::ToolResult { .. }), "{history:#?}");
    assert_eq!(events.last(), Some(&AgentEvent::AgentEnd { stop_reason: AgentStopReason::MaxTurns }));
}

// ---------------------------------------------------------------------------
// 12. Cancellation
// ---------------------------------------------------------------------------

#[tokio::test]
async fn cancellation_during_a_tool_aborts_and_leaves_a_resumable_history() {
    let server = mock(json!({"turns": [
        {"tool_calls": [{"name": "wait", "arguments": {}}]},
        {"text": "never requested"}
    ]}))
    .await;
    let (started_tx, started_rx) = oneshot::channel::<()>();
    let started_tx = Arc::new(Mutex::new(Some(started_tx)));
    let (tool, probe) = FakeTool::new(move |_, cancel, _| {
        let started = started_tx.lock().unwrap().take();
        Box::pin(async move {
            if let Some(tx) = started {
                let _ = tx.send(());
            }
            cancel.cancelled().await;
            Err(ToolError::new("Interrupted by the user."))
        })
    });
    let agent = agent(&server, vec![runtime_tool("wait", SEQUENTIAL, object_schema(), tool)], Arc::new(NoHooks));
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if started_rx.await.is_ok() {
                cancel.cancel();
            }
        })
    };

    let (outcome, history, events) = run(&agent, &cancel).await;
    canceller.await.unwrap();

    assert_eq!(probe.calls(), 1);
    assert_eq!((outcome.stop_reason, outcome.turns), (AgentStopReason::Aborted, 1));
    assert_eq!(events.last(), Some(&AgentEvent::AgentEnd { stop_reason: AgentStopReason::Aborted }));
    assert_eq!(server.requests().len(), 1);
    assert_eq!(
        history.last(),
        Some(&Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "toolu_mock_0_0".into(),
                content: vec![ToolResultContent::text("Interrupted by the user.")],
                is_error: true,
            }],
        })
    );
    // Every tool_use in the history has its result: the conversation can be resumed.
    assert_eq!(history.len(), 3);
    assert_eq!(history[1].tool_calls().len(), 1);
}

// ---------------------------------------------------------------------------
// 13. Provider errors
// ---------------------------------------------------------------------------

#[tokio::test]
async fn provider_error_ends_the_run_with_an_error() {
    let server = mock(json!({"turns": [{"faults": [{"status": 401, "repeat": true}], "text": "unreachable"}]})).await;
    let agent = agent(&server, vec![], Arc::new(NoHooks));

    let (outcome, _, events) = run(&agent, &CancellationToken::new()).await;

    assert_eq!(outcome.stop_reason, AgentStopReason::Error);
    let error = outcome.error.unwrap();
    assert!(error.contains("401"), "{error}");
    // 401 is not retried.
    assert_eq!(server.requests().len(), 1);
    assert!(!events.iter().any(|e| matches!(e, AgentEvent::Retry(_))));
    assert!(events.contains(&AgentEvent::Error { message: error.clone() }));
    assert_eq!(events.last(), Some(&AgentEvent::AgentEnd { stop_reason: AgentStopReason::Error }));
}

#[tokio::test]
async fn provider_server_error_is_retried_and_the_run_completes() {
    let server = mock(json!({"turns": [{"faults": [{"status": 500}], "text": "Recovered."}]})).await;
    let config = ProviderConfig {
        retry: RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(10),
        },
        ..ProviderConfig::new(Api::Anthropic, server.url(), "test-key")
    };
    let provider: Arc<dyn Provider> = Arc::new(HttpProvider::new(config).unwrap());
    let agent = AgentLoop::new(provider, vec![], Arc::new(NoHooks), LoopConfig::new("mock", "system"));

    let (outcome, _, events) = run(&agent, &CancellationToken::new()).await;

    let retries: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Retry(info) => Some(info.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(retries.len(), 1, "{events:#?}");
    assert_eq!((retries[0].attempt, retries[0].max_attempts), (2, 4));
    assert!(retries[0].error.contains("500"), "{}", retries[0].error);
    assert_eq!(
        (outcome.stop_reason, outcome.turns, outcome.final_text.as_str(), outcome.error),
        (AgentStopReason::Completed, 1, "Recovered.", None)
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn cancellation_mid_stream_keeps_the_text_already_shown() {
    let server = mock(json!({"chunk_delay_ms": 40, "turns": [
        {"text": "First part of a long answer that keeps going and going for a while longer still"}
    ]}))
    .await;
    let agent = agent(&server, vec![], Arc::new(NoHooks));
    let cancel = CancellationToken::new();
    let mut history = vec![Message::user_text("hi")];
    let canceller = cancel.clone();
    // Cancel as soon as the first text arrives.
    let sink: EventSink = Arc::new(move |e| {
        if matches!(e, AgentEvent::TextDelta { .. }) {
            canceller.cancel();
        }
    });
    let outcome = tokio::time::timeout(LIMIT, agent.run(&mut history, &sink, &cancel)).await.expect("run hung");
    assert_eq!(outcome.stop_reason, AgentStopReason::Aborted);
    assert_eq!(history.len(), 2, "{history:?}");
    assert_eq!(history[1].role, Role::Assistant);
    let text = history[1].text();
    assert!(text.starts_with("First") && text.ends_with("[interrupted by the user]"), "{text}");
}

// ---------------------------------------------------------------------------
// Calls written as text (models opted in with tool_call_format = "text")
// ---------------------------------------------------------------------------

const TEXT_CALL: &str = "```json\n{\"name\": \"probe\", \"arguments\": {\"n\": 1}}\n```";

/// A loop on the OpenAI Chat wire (as llama.cpp speaks it) whose model
/// writes calls as text when `format` is `Text`.
fn chat_agent(server: &MockServer, tools: Vec<RuntimeTool>, format: tern_llm::ToolCallFormat) -> AgentLoop {
    let provider =
        Arc::new(HttpProvider::new(ProviderConfig::new(Api::OpenAiChat, server.openai_url(), "test-key")).unwrap());
    let config = LoopConfig { tool_call_format: format, ..LoopConfig::new("mock", "system") };
    AgentLoop::new(provider, tools, Arc::new(NoHooks), config)
}

fn streamed_text(events: &[AgentEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn notices(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Notice { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_call_written_as_text_runs_when_opted_in_and_goes_back_as_a_native_call() {
    let server = mock(json!({"turns": [{"text": TEXT_CALL}, {"text": "The probe said 1."}]})).await;
    let (tool, probe) = FakeTool::echo();
    let tools = vec![runtime_tool("probe", SEQUENTIAL, object_schema(), tool)];
    let agent = chat_agent(&server, tools, tern_llm::ToolCallFormat::Text);

    let (outcome, history, events) = run(&agent, &CancellationToken::new()).await;

    assert_eq!(probe.inputs(), vec![json!({"n": 1})]);
    assert_eq!((outcome.stop_reason, outcome.final_text.as_str()), (AgentStopReason::Completed, "The probe said 1."));
    assert_eq!(notices(&events), Vec::<String>::new());
    // Held back while it might be a call: no front end shows the call as text.
    assert_eq!(streamed_text(&events), "The probe said 1.");
    // The reply became the call: no text left, a fresh id.
    let [ContentBlock::ToolUse { id, name, input }] = &history[1].content[..] else { panic!("{:?}", history[1]) };
    assert_eq!((name.as_str(), input), ("probe", &json!({"n": 1})));
    assert!(id.starts_with("call_"), "{id}");
    // The next request carries it as a native call and its result.
    let messages = &server.requests()[1].body["messages"];
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "probe", "arguments": "{\"n\":1}"}}
        ]})
    );
    assert_eq!(messages[3], json!({"role": "tool", "tool_call_id": id, "content": "echo {\"n\":1}"}));
}

#[tokio::test]
async fn a_call_written_as_text_stays_text_without_the_opt_in() {
    let server = mock(json!({"turns": [{"text": TEXT_CALL}]})).await;
    let (tool, probe) = FakeTool::echo();
    let agent = chat_agent(&server, vec![runtime_tool("probe", SEQUENTIAL, object_schema(), tool)], Default::default());

    let (outcome, _, events) = run(&agent, &CancellationToken::new()).await;

    assert_eq!((probe.calls(), outcome.final_text.as_str(), outcome.turns), (0, TEXT_CALL, 1));
    assert_eq!(streamed_text(&events), TEXT_CALL);
    assert_eq!(notices(&events), Vec::<String>::new());
}

#[tokio::test]
async fn text_is_not_read_for_calls_beside_native_calls_or_in_a_cut_reply() {
    // Native calls win: the text's call does not run as well.
    let server = mock(json!({"turns": [
        {"text": TEXT_CALL, "tool_calls": [{"name": "probe", "arguments": {"n": 2}}]},
        {"text": TEXT_CALL, "stop_reason": "max_tokens"},
        {"text": "done"}
    ]}))
    .await;
    let (tool, probe) = FakeTool::echo();
    let tools = vec![runtime_tool("probe", SEQUENTIAL, object_schema(), tool)];
    let agent = chat_agent(&server, tools, tern_llm::ToolCallFormat::Text);

    let (outcome, _, events) = run(&agent, &CancellationToken::new()).await;

    assert_eq!(probe.inputs(), vec![json!({"n": 2})], "only the native call ran");
    assert_eq!(outcome.final_text, "done");
    let said = notices(&events);
    assert!(said.len() == 1 && said[0].contains("cut off"), "{said:?}");
}

#[tokio::test]
async fn a_text_call_to_a_tool_not_offered_stays_the_answer_and_says_why() {
    let reply = "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}\n</tool_call>";
    let server = mock(json!({"turns": [{"text": reply}]})).await;
    let (tool, probe) = FakeTool::echo();
    let tools = vec![runtime_tool("probe", SEQUENTIAL, object_schema(), tool)];
    let agent = chat_agent(&server, tools, tern_llm::ToolCallFormat::Text);

    let (outcome, _, events) = run(&agent, &CancellationToken::new()).await;

    assert_eq!((probe.calls(), outcome.final_text.as_str()), (0, reply));
    assert_eq!(streamed_text(&events), reply, "held back, then shown when it was not a call");
    assert_eq!(
        notices(&events),
        vec![
            "the reply looks like a tool call written as text, but it was not run: `search` is not a tool offered \
             to the model (offered: probe)"
        ]
    );
}

// ---------------------------------------------------------------------------
// Instructions given while a run runs (a subagent's task_append)
// ---------------------------------------------------------------------------

/// An inbox that holds one text until it is read.
struct OneAppend(Mutex<Option<String>>, Mutex<Vec<bool>>);

impl tern_agent_loop::Inbox for OneAppend {
    fn take(&self, ending: bool) -> Option<String> {
        self.1.lock().unwrap().push(ending);
        self.0.lock().unwrap().take()
    }
}

#[tokio::test]
async fn a_run_that_would_end_with_input_waiting_reads_it_and_goes_on() {
    let server = mock(json!({"turns": [{"text": "first answer"}, {"text": "answer with the tests"}]})).await;
    let inbox = Arc::new(OneAppend(Mutex::new(None), Mutex::default()));
    let agent = agent(&server, vec![], Arc::new(NoHooks)).with_inbox(inbox.clone());
    let mut history = vec![Message::user_text("hi")];
    let (sink, events) = collector();
    // It arrives as the first answer comes: the run would end there.
    let give = inbox.clone();
    let sink_then_give: EventSink = Arc::new(move |e| {
        if matches!(e, AgentEvent::AssistantMessage { .. }) && give.1.lock().unwrap().len() == 1 {
            *give.0.lock().unwrap() = Some("also the tests".into());
        }
        sink(e)
    });
    let outcome = tokio::time::timeout(LIMIT, agent.run(&mut history, &sink_then_give, &CancellationToken::new()))
        .await
        .expect("run hung");
    assert_eq!((outcome.stop_reason, outcome.turns), (AgentStopReason::Completed, 2));
    assert_eq!(outcome.final_text, "answer with the tests");
    assert_eq!(*inbox.1.lock().unwrap(), [false, true, false, true], "read before each request and at each end");
    let second = &server.requests()[1].body;
    let last = second["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(
        without_cache_control(last),
        json!({"role": "user", "content": [{"type": "text", "text": "also the tests"}]})
    );
    let appended: Vec<AgentEvent> =
        events.lock().unwrap().iter().filter(|e| matches!(e, AgentEvent::InputAppended { .. })).cloned().collect();
    assert_eq!(appended, [AgentEvent::InputAppended { text: "also the tests".into() }]);
}
