//! An MCP server's tool as a [`RuntimeTool`] the agent loop can run.

use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use rmcp::model::Tool as McpToolDef;
use serde_json::{Map, Value};
use tern_agent_loop::{RuntimeTool, Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::{ExecutionMode, ToolDefinition, ToolSource};
use tokio_util::sync::CancellationToken;

use crate::server::Server;

/// One MCP tool, ready for the loop, with where it came from.
#[derive(Debug, Clone)]
pub struct McpTool {
    /// Definition (`mcp__<server>__<tool>`), implementation and source.
    pub tool: RuntimeTool,
    /// Configured server name.
    pub server: String,
    /// The tool's name on the server.
    pub original_name: String,
    /// `annotations.readOnlyHint == Some(true)`.
    pub read_only: bool,
}

/// Executes `tools/call` on the server. Holds the server weakly, so tools
/// kept after the manager is gone do not keep server processes alive.
struct McpToolCall {
    server: Weak<Server>,
    server_name: String,
    original_name: String,
}

impl Tool for McpToolCall {
    fn execute<'a>(
        &'a self,
        _ctx: ToolContext,
        input: Value,
        cancel: CancellationToken,
        updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Some(server) = self.server.upgrade() else {
                return Err(ToolError::new(format!(
                    "MCP server `{}` is no longer running (tern closed its MCP servers); `{}` is unavailable.",
                    self.server_name, self.original_name
                )));
            };
            let arguments = match input {
                Value::Object(map) => Some(map),
                Value::Null => None,
                other => {
                    return Err(ToolError::new(format!(
                        "`{}` takes a JSON object of arguments, not {}; pass an object matching its schema.",
                        self.original_name,
                        kind(&other)
                    )));
                }
            };
            server.call(&self.original_name, arguments, &cancel, Some(updates)).await
        })
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Build the loop's view of `def` from `server` under the final `name`.
pub(crate) fn build(server: &Arc<Server>, def: &McpToolDef, name: String) -> McpTool {
    let server_name = server.config.name.clone();
    let read_only = def.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
    let definition = ToolDefinition {
        name,
        description: description(def),
        input_schema: object_schema(&def.input_schema),
        snippet: None,
        execution_mode: if read_only { ExecutionMode::Parallel } else { ExecutionMode::Sequential },
    };
    let implementation = Arc::new(McpToolCall {
        server: Arc::downgrade(server),
        server_name: server_name.clone(),
        original_name: def.name.to_string(),
    });
    McpTool {
        tool: RuntimeTool::new(definition, implementation, ToolSource::ConfiguredMcp { server: server_name.clone() }),
        server: server_name,
        original_name: def.name.to_string(),
        read_only,
    }
}

/// The server's description, else its title, else the tool's name.
fn description(def: &McpToolDef) -> String {
    let non_empty = |s: &str| !s.trim().is_empty();
    def.description
        .as_deref()
        .filter(|d| non_empty(d))
        .map(str::to_string)
        .or_else(|| def.title.clone().filter(|t| non_empty(t)))
        .or_else(|| def.annotations.as_ref().and_then(|a| a.title.clone()).filter(|t| non_empty(t)))
        .unwrap_or_else(|| def.name.to_string())
}

/// The input schema as an object schema: `"type": "object"` added when missing.
fn object_schema(schema: &Map<String, Value>) -> Value {
    let mut schema = schema.clone();
    schema.entry("type").or_insert_with(|| Value::String("object".into()));
    Value::Object(schema)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn def(value: Value) -> McpToolDef {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn description_falls_back_to_title_then_name() {
        assert_eq!(description(&def(json!({"name": "a", "description": "Does A", "inputSchema": {}}))), "Does A");
        assert_eq!(description(&def(json!({"name": "a", "title": "Title A", "inputSchema": {}}))), "Title A");
        assert_eq!(
            description(&def(
                json!({"name": "a", "description": " ", "annotations": {"title": "Ann"}, "inputSchema": {}})
            )),
            "Ann"
        );
        assert_eq!(description(&def(json!({"name": "a", "inputSchema": {}}))), "a");
    }

    #[test]
    fn schema_gets_an_object_type() {
        let d = def(json!({"name": "a", "inputSchema": {"properties": {"x": {"type": "string"}}}}));
        assert_eq!(object_schema(&d.input_schema), json!({"type": "object", "properties": {"x": {"type": "string"}}}));
        let d = def(json!({"name": "a", "inputSchema": {"type": "object"}}));
        assert_eq!(object_schema(&d.input_schema), json!({"type": "object"}));
    }
}
