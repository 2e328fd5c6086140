//! `--json-schema`: the run's final answer as JSON that matches a schema
//! (Claude Code's structured output). The model gets one more tool,
//! `structured_output`, whose input schema is the caller's: the loop checks
//! every call against it (a call that does not match is answered with what
//! is wrong, and the model tries again), and the first valid call ends the
//! run with that value. A run that ends without one is reminded twice, then
//! fails as `error_max_structured_output_retries`.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::Value;
use tern_agent_loop::{RuntimeTool, Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::sync::LockExt as _;
use tern_protocol::{ExecutionMode, ToolDefinition, ToolSource};
use tokio_util::sync::CancellationToken;

use crate::interactive::Interaction;

/// The tool's name.
pub(crate) const NAME: &str = "structured_output";

/// How often a run that ended without the tool is reminded.
pub(crate) const REMINDERS: usize = 2;

/// What the system prompt says when the tool is offered.
pub(crate) const INSTRUCTION: &str = "# Final answer\nThis run must end with structured output: when you are done, \
     call `structured_output` once with your final answer as its input (it must match the tool's schema). That \
     call ends your work.";

/// Why a `--json-schema` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// Not JSON.
    #[error("--json-schema is not JSON: {0}")]
    NotJson(String),
    /// Not an object schema.
    #[error("--json-schema must describe an object (`\"type\": \"object\"`): the answer is a tool call's input")]
    NotAnObject,
    /// Not a valid JSON Schema.
    #[error("--json-schema is not a valid JSON Schema: {0}")]
    Invalid(String),
}

/// Read and check a schema as `--json-schema` gives it.
pub fn parse_schema(text: &str) -> Result<Value, SchemaError> {
    let schema: Value = serde_json::from_str(text).map_err(|e| SchemaError::NotJson(e.to_string()))?;
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(SchemaError::NotAnObject);
    }
    jsonschema::validator_for(&schema).map_err(|e| SchemaError::Invalid(e.to_string()))?;
    Ok(schema)
}

/// The answer a run gave, shared by the tool and the runtime.
#[derive(Default)]
pub(crate) struct Answer {
    value: Mutex<Option<Value>>,
}

impl Answer {
    /// The value given in this run, taken.
    pub(crate) fn take(&self) -> Option<Value> {
        self.value.lock_or_recover().take()
    }

    /// Whether one was given.
    pub(crate) fn given(&self) -> bool {
        self.value.lock_or_recover().is_some()
    }
}

struct StructuredOutputTool {
    answer: Arc<Answer>,
    interaction: Arc<Interaction>,
}

/// The `structured_output` tool for `schema`.
pub(crate) fn runtime_tool(schema: Value, answer: Arc<Answer>, interaction: Arc<Interaction>) -> RuntimeTool {
    let definition = ToolDefinition {
        name: NAME.into(),
        description: "Give your final answer as structured output matching this schema. Call it once, when you \
                      are done: it ends your work."
            .into(),
        input_schema: schema,
        execution_mode: ExecutionMode::Sequential,
        snippet: Some("structured_output: give the final answer (ends the run)".into()),
    };
    RuntimeTool::new(definition, Arc::new(StructuredOutputTool { answer, interaction }), ToolSource::Builtin)
}

impl Tool for StructuredOutputTool {
    fn execute<'a>(
        &'a self,
        _ctx: ToolContext,
        input: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            // The loop checked `input` against the schema before this runs.
            let text = serde_json::to_string(&input).unwrap_or_default();
            *self.answer.value.lock_or_recover() = Some(input);
            self.interaction.finish(text);
            Ok(ToolOutput::text("Recorded: that is the final answer."))
        })
    }
}
