//! The `task` tool: hands a self-contained piece of work to a subagent.
//!
//! Running the child (its catalog, policy cap, model, events, usage, the
//! background task it may become) is the session's work, reached through
//! [`Delegate`]; the tool holds the definition, checks the arguments and
//! words the outcome for the model.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tern_agent_loop::{RuntimeTool, Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::{AgentStopReason, ExecutionMode, TaskDetails, ToolDefinition, ToolDetails, ToolSource};
use tokio_util::sync::CancellationToken;

/// A `task` call's arguments, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRequest {
    /// The provider's call id (a child's cache key and event parent).
    pub call_id: String,
    /// A few words on the task.
    pub description: String,
    /// The whole task (not empty).
    pub prompt: String,
    /// `explore`, `worker`, `verifier`, `fork`, an agent's name, or empty (explore).
    pub subagent_type: String,
    /// Return at once with a background task id.
    pub run_in_background: bool,
}

/// What became of a task handed over.
#[derive(Debug, Clone, PartialEq)]
pub enum Delegated {
    /// Started in the background as task `id`.
    Started {
        /// The background task's id.
        id: String,
        /// The subagent's type or agent name.
        agent: String,
    },
    /// The subagent ran to its end.
    Finished {
        /// Its final message, trimmed.
        answer: String,
        /// An error it stopped on.
        error: Option<String>,
        /// What it did: type, turns, usage, cost, time, why it stopped.
        details: TaskDetails,
    },
}

/// Who runs subagents: the session.
pub trait Delegate: Send + Sync {
    /// Run `request` as a subagent; stopping when `cancel` fires (a
    /// background one outlives it). Why it could not start, worded for the
    /// model.
    fn delegate(&self, request: TaskRequest, cancel: CancellationToken) -> BoxFuture<'_, Result<Delegated, ToolError>>;
}

/// The tool over `delegate`.
pub fn runtime_tool(delegate: Arc<dyn Delegate>) -> RuntimeTool {
    RuntimeTool::new(definition(), Arc::new(TaskTool(delegate)), ToolSource::Builtin)
}

fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "task".into(),
        description: "Hand self-contained work to a subagent: a fresh agent with its own context that works \
                      alone and returns one final answer. `subagent_type`: `explore` (read-only search of a large \
                      codebase; the default), `worker` (a bounded change), `verifier` (checks work by running \
                      tests), a custom agent's name, or `fork` (a copy of you that goes on from this conversation \
                      with your tools; it cannot start subagents). Several task calls in one reply run at once. \
                      Other than a fork, the subagent sees nothing of this conversation: put all it needs (goal, \
                      paths, constraints, what to report) in `prompt`."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A few words, shown to the person."},
                "prompt": {"type": "string"},
                "subagent_type": {"type": "string"},
                "run_in_background": {"type": "boolean", "description": "Return a task id at once; read the answer later with task_output."}
            },
            "required": ["description", "prompt"],
            "additionalProperties": false
        }),
        execution_mode: ExecutionMode::Parallel,
        snippet: Some("task: hand a self-contained task to a subagent (explore, worker, verifier)".into()),
    }
}

struct TaskTool(Arc<dyn Delegate>);

/// The request in a call's `input`.
fn request_of(call_id: String, input: &Value) -> Result<TaskRequest, ToolError> {
    let text = |key: &str| input.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    let prompt = text("prompt");
    if prompt.trim().is_empty() {
        return Err(ToolError::new("`prompt` is empty: give the subagent the whole task"));
    }
    Ok(TaskRequest {
        call_id,
        description: text("description"),
        prompt,
        subagent_type: text("subagent_type"),
        run_in_background: input.get("run_in_background").and_then(Value::as_bool) == Some(true),
    })
}

/// The outcome as the model reads it.
fn worded(outcome: Delegated) -> Result<ToolOutput, ToolError> {
    let (answer, error, details) = match outcome {
        Delegated::Started { id, agent } => {
            return Ok(ToolOutput::text(format!(
                "Started the subagent ({agent}) in the background as {id}. Its answer comes with task_output \
                 {{\"id\": \"{id}\"}} once it finishes (`exited with code 0`); task_append gives it more work, task_stop \
                 ends it."
            ))
            .with_details(ToolDetails::Background(tern_protocol::BackgroundDetails {
                background_task: id,
                subagent_type: Some(agent),
                ..Default::default()
            })));
        }
        Delegated::Finished { answer, error, details } => (answer, error, details),
    };
    let stop = details.stop_reason;
    let details = Some(Box::new(ToolDetails::Task(details)));
    match stop {
        AgentStopReason::Completed if !answer.is_empty() => Ok(ToolOutput { details, ..ToolOutput::text(answer) }),
        AgentStopReason::Completed => {
            Err(ToolError { message: "the subagent finished without an answer".into(), details })
        }
        AgentStopReason::Aborted => Err(ToolError { message: "the subagent was cancelled".into(), details }),
        other => Err(ToolError {
            message: format!(
                "the subagent stopped ({}){}{}",
                serde_json::to_value(other).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
                error.map(|e| format!(": {e}")).unwrap_or_default(),
                if answer.is_empty() { String::new() } else { format!(". Its last words:\n{answer}") }
            ),
            details,
        }),
    }
}

impl Tool for TaskTool {
    fn execute<'a>(
        &'a self,
        ctx: ToolContext,
        input: Value,
        cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let request = request_of(ctx.call_id, &input)?;
            worded(self.0.delegate(request, cancel).await?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(answer: &str, stop_reason: AgentStopReason, error: Option<&str>) -> Delegated {
        Delegated::Finished {
            answer: answer.into(),
            error: error.map(str::to_string),
            details: TaskDetails {
                subagent_type: "explore".into(),
                turns: 2,
                usage: Default::default(),
                cost_usd: 0.0,
                duration_ms: 5,
                stop_reason,
            },
        }
    }

    #[test]
    fn arguments_are_checked_and_every_ending_is_worded_with_its_details() {
        let e = request_of("c".into(), &json!({"description": "d", "prompt": "  "})).unwrap_err();
        assert!(e.message.contains("`prompt` is empty"), "{}", e.message);
        let r = request_of("c".into(), &json!({"prompt": "p", "run_in_background": true})).unwrap();
        assert!(r.run_in_background && r.subagent_type.is_empty());
        let ok = worded(finished("found it", AgentStopReason::Completed, None)).unwrap();
        assert!(matches!(ok.details.as_deref(), Some(ToolDetails::Task(t)) if t.turns == 2));
        let e = worded(finished("", AgentStopReason::Completed, None)).unwrap_err();
        assert_eq!(e.message, "the subagent finished without an answer");
        assert!(e.details.is_some());
        let e = worded(finished("half", AgentStopReason::MaxTurns, Some("too long"))).unwrap_err();
        assert!(e.message.contains(": too long. Its last words:\nhalf"), "{}", e.message);
        let started = worded(Delegated::Started { id: "t1".into(), agent: "worker".into() }).unwrap();
        assert!(matches!(started.details.as_deref(), Some(ToolDetails::Background(b)) if b.background_task == "t1"));
    }
}
