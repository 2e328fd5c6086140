//! The tool contract: a definition the model sees, an implementation that
//! executes, and where the tool came from.

use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use serde_json::Value;
use tern_protocol::{Confinement, ExecutionMode, JudgedPath, ToolDefinition, ToolResultContent, ToolSource};
use tokio_util::sync::CancellationToken;

/// Receives partial output of a running tool (e.g. bash lines).
pub type UpdateSink = Arc<dyn Fn(String) + Send + Sync>;

/// Facts about the call being executed.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The provider's call id.
    pub call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// How confined its subprocesses run, as the policy decided for this
    /// call (`None`: the tool's own default).
    pub confinement: Option<Confinement>,
    /// The path the policy judged for this call (file tools): the tool
    /// works on exactly it, never resolving the name from the model again.
    /// `None`: no policy judged one (the tool resolves the name itself, once).
    pub judged: Option<JudgedPath>,
}

/// A successful result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    /// What the model gets.
    pub content: Vec<ToolResultContent>,
    /// What the tool reports to front ends besides its result (exit code, diff, ...).
    pub details: Option<Box<tern_protocol::ToolDetails>>,
}

impl ToolOutput {
    /// A text result without details.
    pub fn text(text: impl Into<String>) -> Self {
        Self { content: vec![ToolResultContent::text(text)], details: None }
    }

    /// The same result with structured details for front ends.
    pub fn with_details(mut self, details: tern_protocol::ToolDetails) -> Self {
        self.details = Some(Box::new(details));
        self
    }
}

/// A failure, worded as an instruction to the model: what failed, why, and
/// what to try next.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    /// The message for the model.
    pub message: String,
    /// What the tool reports to front ends besides the message (boxed: an
    /// error stays small on the happy path's stack).
    pub details: Option<Box<tern_protocol::ToolDetails>>,
}

impl ToolError {
    /// An error with only a message.
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), details: None }
    }

    /// The same error with details for front ends.
    pub fn with_details(mut self, details: tern_protocol::ToolDetails) -> Self {
        self.details = Some(Box::new(details));
        self
    }
}

/// Arguments that do not match a tool's input schema: every violation,
/// each with the JSON pointer of the field it is about. Shown one
/// violation a line (`- at `/path`: ...`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", violations.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub struct InvalidInput {
    /// The tool whose schema the arguments were checked against.
    pub tool: String,
    /// What is wrong, in the validator's order (never empty).
    pub violations: Vec<SchemaViolation>,
}

/// One way the arguments break a tool's input schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("- {}{message}", if pointer.is_empty() { String::new() } else { format!("at `{pointer}`: ") })]
pub struct SchemaViolation {
    /// The JSON pointer of the field (`/edits/0/old_text`); empty for the arguments as a whole.
    pub pointer: String,
    /// What the schema validator says.
    pub message: String,
}

/// The executing side of a tool.
pub trait Tool: Send + Sync {
    /// Normalise raw model input before validation (e.g. accept a string
    /// where a number is expected). Default: unchanged.
    fn prepare_arguments(&self, input: Value) -> Value {
        input
    }

    /// Near-misses only this tool can read (after the schema's own
    /// coercions, [`crate::conform_to_schema`]): rewrite `input` into the
    /// call the model meant when only one reading is possible, and say what
    /// was understood, one short phrase each (`` `offset: 0` as the first
    /// line ``). Anything ambiguous stays as it is, for validation or
    /// [`Tool::precheck`] to refuse. Default: none.
    fn accept_near_misses(&self, _input: &mut Value) -> Vec<String> {
        Vec::new()
    }

    /// Cheap checks that make the call certain to fail (e.g. editing a file
    /// that was never read), run before permission is asked so nobody is
    /// asked about a call that cannot work. Default: none.
    fn precheck(&self, _input: &Value) -> Result<(), ToolError> {
        Ok(())
    }

    /// A tool the provider runs on its own servers (web search) says what
    /// the request declares — or, as `Err`, why it cannot be offered now —
    /// read when each turn's tools are chosen and each request is built (so
    /// rule changes apply at once); the loop never executes it. Default:
    /// `None`, a tool tern runs.
    fn server_tool(&self) -> Option<Result<tern_protocol::ServerTool, String>> {
        None
    }

    /// Run the call. Stream partial output through `updates`; stop promptly
    /// when `cancel` fires.
    fn execute<'a>(
        &'a self,
        ctx: ToolContext,
        input: Value,
        cancel: CancellationToken,
        updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// What a request declares for `tools`: the definitions of those tern runs,
/// and the provider's own tools (those that cannot be offered now left out).
pub fn request_tools(tools: &[RuntimeTool]) -> (Vec<ToolDefinition>, Vec<tern_protocol::ServerTool>) {
    let mut server_tools = Vec::new();
    let mut definitions = Vec::with_capacity(tools.len());
    for t in tools {
        match t.implementation.server_tool() {
            Some(Ok(server)) => server_tools.push(server),
            Some(Err(_)) => {}
            None => definitions.push(t.definition.clone()),
        }
    }
    (definitions, server_tools)
}

/// Definition + implementation + source: a tool as the loop holds it.
#[derive(Clone)]
pub struct RuntimeTool {
    /// What the model sees.
    pub definition: ToolDefinition,
    /// What runs.
    pub implementation: Arc<dyn Tool>,
    /// Where it came from.
    pub source: ToolSource,
    validator: Arc<OnceLock<Result<jsonschema::Validator, String>>>,
}

impl std::fmt::Debug for RuntimeTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeTool").field("name", &self.definition.name).field("source", &self.source).finish()
    }
}

impl RuntimeTool {
    /// Bundle a tool.
    pub fn new(definition: ToolDefinition, implementation: Arc<dyn Tool>, source: ToolSource) -> Self {
        Self { definition, implementation, source, validator: Arc::new(OnceLock::new()) }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.definition.name
    }

    /// Its scheduling mode.
    pub fn mode(&self) -> ExecutionMode {
        self.definition.execution_mode
    }

    /// The arguments as the tool will take them: [`Tool::prepare_arguments`],
    /// then conformed to the input schema, then the tool's own near-misses;
    /// with what was understood on the way (see [`crate::understood_note`]).
    pub fn understand(&self, input: Value) -> (Value, Vec<String>) {
        let mut input = self.implementation.prepare_arguments(input);
        let mut notes = crate::conform_to_schema(&self.definition.input_schema, &mut input);
        notes.extend(self.implementation.accept_near_misses(&mut input));
        (input, notes)
    }

    /// Check arguments against the input schema (compiled once, on first use).
    /// The error lists every violation with its JSON pointer.
    pub fn validate(&self, input: &Value) -> Result<(), InvalidInput> {
        let validator = self
            .validator
            .get_or_init(|| jsonschema::validator_for(&self.definition.input_schema).map_err(|e| e.to_string()));
        let validator = match validator {
            Ok(v) => v,
            // A broken schema is the tool author's fault; do not block the call on it.
            Err(_) => return Ok(()),
        };
        let violations: Vec<SchemaViolation> = validator
            .iter_errors(input)
            .map(|e| SchemaViolation { pointer: e.instance_path().to_string(), message: e.to_string() })
            .collect();
        if violations.is_empty() { Ok(()) } else { Err(InvalidInput { tool: self.name().to_string(), violations }) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nothing;

    impl Tool for Nothing {
        fn execute<'a>(
            &'a self,
            _ctx: ToolContext,
            _input: Value,
            _cancel: CancellationToken,
            _updates: UpdateSink,
        ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            Box::pin(async { Ok(ToolOutput::text("")) })
        }
    }

    #[test]
    fn invalid_input_names_the_field() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"edits": {"type": "array", "items": {"type": "object", "properties": {"line": {"type": "integer"}}}}},
            "required": ["path"]
        });
        let definition = ToolDefinition {
            name: "edit".into(),
            description: "Edits.".into(),
            input_schema: schema,
            snippet: None,
            execution_mode: ExecutionMode::default(),
        };
        let tool = RuntimeTool::new(definition, Arc::new(Nothing), ToolSource::Builtin);
        assert_eq!(tool.validate(&serde_json::json!({"path": "a", "edits": [{"line": 3}]})), Ok(()));
        let err = tool.validate(&serde_json::json!({"edits": [{"line": "x"}]})).unwrap_err();
        assert_eq!(err.tool, "edit");
        let pointers: Vec<&str> = err.violations.iter().map(|v| v.pointer.as_str()).collect();
        assert_eq!(pointers.len(), 2, "{err}");
        assert!(pointers.contains(&"") && pointers.contains(&"/edits/0/line"), "{err}");
        assert!(err.to_string().contains("- at `/edits/0/line`: "), "{err}");
        assert!(err.to_string().lines().any(|l| l.starts_with("- ") && l.contains("path")), "{err}");
    }
}
