//! Running one batch of tool calls: lookup, argument preparation and
//! conforming, schema validation, hooks, execution and events, in the batch order rule.

use std::sync::Arc;
use std::time::Instant;

use tern_protocol::{AgentEvent, ExecutionMode, ToolCall, ToolResultContent};
use tokio_util::sync::CancellationToken;

use crate::{BeforeToolCall, EventSink, Hooks, RuntimeTool, ToolContext};

/// The outcome of one call, as it goes back to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallResult {
    /// Result blocks.
    pub content: Vec<ToolResultContent>,
    /// Whether it failed.
    pub is_error: bool,
    /// What the tool reports to front ends besides its result.
    pub details: Option<Box<tern_protocol::ToolDetails>>,
}

impl ToolCallResult {
    /// An error result with one text block.
    pub fn error(message: impl Into<String>) -> Self {
        Self { content: vec![ToolResultContent::text(message)], is_error: true, details: None }
    }
}

/// Run a batch. If every call's tool is `Parallel` they run concurrently;
/// otherwise one after another in call order. Results come back in call
/// order either way. Calls to unknown tools only produce an error, so they
/// do not force sequential execution.
pub async fn execute_batch(
    tools: &[RuntimeTool],
    calls: &[ToolCall],
    hooks: &dyn Hooks,
    events: &EventSink,
    cancel: &CancellationToken,
) -> Vec<ToolCallResult> {
    let all_parallel = calls
        .iter()
        .all(|c| tools.iter().find(|t| t.name() == c.name).is_none_or(|t| t.mode() == ExecutionMode::Parallel));
    if all_parallel {
        futures::future::join_all(calls.iter().map(|c| run_call(tools, c, hooks, events, cancel))).await
    } else {
        let mut out = Vec::with_capacity(calls.len());
        for c in calls {
            out.push(run_call(tools, c, hooks, events, cancel).await);
        }
        out
    }
}

async fn run_call(
    tools: &[RuntimeTool],
    call: &ToolCall,
    hooks: &dyn Hooks,
    events: &EventSink,
    cancel: &CancellationToken,
) -> ToolCallResult {
    let started = Instant::now();
    events(AgentEvent::ToolCallStart { id: call.id.clone(), name: call.name.clone(), input: call.input.clone() });
    let (result, final_call, ran_at) = prepare_and_execute(tools, call, hooks, events, cancel).await;
    // The tool's own time: waiting for a permission answer does not count.
    let started = ran_at.unwrap_or(started);
    let result = hooks.after_tool_call(&final_call, result).await;
    events(AgentEvent::ToolExecutionEnd {
        id: call.id.clone(),
        name: call.name.clone(),
        content: result.content.clone(),
        is_error: result.is_error,
        details: result.details.clone(),
        duration_ms: started.elapsed().as_millis() as u64,
    });
    result
}

async fn prepare_and_execute(
    tools: &[RuntimeTool],
    call: &ToolCall,
    hooks: &dyn Hooks,
    events: &EventSink,
    cancel: &CancellationToken,
) -> (ToolCallResult, ToolCall, Option<Instant>) {
    let Some(tool) = tools.iter().find(|t| t.name() == call.name) else {
        let names: Vec<&str> = tools.iter().map(RuntimeTool::name).collect();
        let msg = format!(
            "Unknown tool `{}`. Nothing was run. Available tools: {}.",
            call.name,
            if names.is_empty() { "(none)".to_string() } else { names.join(", ") }
        );
        return (ToolCallResult::error(msg), call.clone(), None);
    };
    if cancel.is_cancelled() {
        return (ToolCallResult::error("Interrupted before this tool call ran."), call.clone(), None);
    }
    let mut call = call.clone();
    let (input, notes) = tool.understand(call.input);
    call.input = input;
    let (mut result, call, ran_at) = judge_and_execute(tool, call, hooks, events, cancel).await;
    // What was understood goes with the result, success or not.
    if let Some(note) = crate::understood_note(&notes) {
        result.content.push(ToolResultContent::text(note));
    }
    (result, call, ran_at)
}

async fn judge_and_execute(
    tool: &RuntimeTool,
    mut call: ToolCall,
    hooks: &dyn Hooks,
    events: &EventSink,
    cancel: &CancellationToken,
) -> (ToolCallResult, ToolCall, Option<Instant>) {
    if let Err(problems) = tool.validate(&call.input) {
        return (invalid_arguments(tool, &problems), call, None);
    }
    if let Err(e) = tool.implementation.precheck(&call.input) {
        let result =
            ToolCallResult { content: vec![ToolResultContent::text(e.message)], is_error: true, details: e.details };
        return (result, call, None);
    }
    let (confinement, judged) = match hooks.before_tool_call(&call).await {
        BeforeToolCall::Block { reason } => return (ToolCallResult::error(reason), call, None),
        BeforeToolCall::Continue { input, confinement, judged } => {
            if let Some(new_input) = input {
                call.input = new_input;
                if let Err(problems) = tool.validate(&call.input) {
                    return (invalid_arguments(tool, &problems), call, None);
                }
            }
            (confinement, judged)
        }
    };
    if cancel.is_cancelled() {
        return (ToolCallResult::error("Interrupted before this tool call ran."), call, None);
    }
    let ran_at = Instant::now();
    let ctx = ToolContext { call_id: call.id.clone(), tool_name: call.name.clone(), confinement, judged };
    let id = call.id.clone();
    let sink = events.clone();
    let updates: crate::UpdateSink =
        Arc::new(move |text| sink(AgentEvent::ToolExecutionUpdate { id: id.clone(), text }));
    let result = match tool.implementation.execute(ctx, call.input.clone(), cancel.child_token(), updates).await {
        Ok(out) => ToolCallResult { content: out.content, is_error: false, details: out.details },
        Err(e) => {
            ToolCallResult { content: vec![ToolResultContent::text(e.message)], is_error: true, details: e.details }
        }
    };
    (result, call, Some(ran_at))
}

fn invalid_arguments(tool: &RuntimeTool, problems: &crate::InvalidInput) -> ToolCallResult {
    let schema = serde_json::to_string(&tool.definition.input_schema).unwrap_or_default();
    ToolCallResult::error(format!(
        "Invalid arguments for tool `{}`; nothing was run:\n{problems}\nCall it again with arguments matching its schema: {schema}",
        tool.name()
    ))
}
