//! `mcp_invoke {tool, arguments, server?}`: call a deferred MCP tool without
//! waiting for it to join the tool list. The arguments are understood as
//! that tool would understand them before the permission hooks and rules see
//! them, checked against its schema, and run as judged; its result comes
//! back unchanged.
//!
//! Permission hooks see the call as `mcp_invoke`; a policy that rules on MCP
//! tools must look at `tool` inside it.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tern_agent_loop::{Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::{ExecutionMode, ToolDefinition};
use tokio_util::sync::CancellationToken;

use crate::disclosure_tools::{DisclosureState, Lookup};

/// The tool's definition.
pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "mcp_invoke".into(),
        description: "Call a deferred MCP tool by name (mcp__server__tool) with `arguments` matching its \
             input schema (see tool_search)."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "tool": {"type": "string"},
                "arguments": {"type": "object"},
                "server": {"type": "string", "description": "only if the tool name is ambiguous"}
            },
            "required": ["tool"],
            "additionalProperties": false
        }),
        snippet: Some("mcp_invoke: call a deferred MCP tool by name with its arguments".into()),
        execution_mode: ExecutionMode::Sequential,
    }
}

/// The invoke tool; it shares the deferred set with `tool_search`.
pub(crate) struct McpInvoke {
    state: Arc<DisclosureState>,
}

impl McpInvoke {
    pub fn new(state: Arc<DisclosureState>) -> Self {
        Self { state }
    }
}

impl Tool for McpInvoke {
    fn prepare_arguments(&self, mut input: Value) -> Value {
        if let Some(obj) = input.as_object_mut() {
            for (from, to) in [("name", "tool"), ("tool_name", "tool"), ("input", "arguments"), ("args", "arguments")] {
                if !obj.contains_key(to)
                    && let Some(v) = obj.remove(from)
                {
                    obj.insert(to.into(), v);
                }
            }
            // Models often send the arguments object as a JSON string.
            if let Some(Value::String(s)) = obj.get("arguments")
                && let Ok(parsed @ Value::Object(_)) = serde_json::from_str::<Value>(s)
            {
                obj.insert("arguments".into(), parsed);
            }
            // The full name of the tool that will run, so that permission
            // rules and hooks judge that tool, not the name as typed.
            if let Some(name) = obj.get("tool").and_then(Value::as_str).map(str::to_string) {
                let server = obj.get("server").and_then(Value::as_str).map(str::to_string);
                let snapshot = self.state.snapshot();
                if let Lookup::Found(i) = snapshot.lookup(name.trim(), server.as_deref()) {
                    obj.insert("tool".into(), Value::String(snapshot.tools[i].name().to_string()));
                }
            }
        }
        input
    }

    /// The invoked tool's arguments understood as that tool would understand
    /// them (numbers sent as strings, its own near-misses), here — before the
    /// permission hooks and rules judge them — so what runs is what was judged.
    fn accept_near_misses(&self, input: &mut Value) -> Vec<String> {
        let Some(obj) = input.as_object_mut() else { return Vec::new() };
        let Some(name) = obj.get("tool").and_then(Value::as_str).map(str::trim) else { return Vec::new() };
        let server = obj.get("server").and_then(Value::as_str);
        let snapshot = self.state.snapshot();
        let Lookup::Found(i) = snapshot.lookup(name, server) else { return Vec::new() };
        if !obj.get("arguments").is_some_and(Value::is_object) {
            return Vec::new();
        }
        let arguments = obj.remove("arguments").unwrap_or_default();
        let (arguments, notes) = snapshot.tools[i].understand(arguments);
        obj.insert("arguments".into(), arguments);
        notes
    }

    fn execute<'a>(
        &'a self,
        ctx: ToolContext,
        input: Value,
        cancel: CancellationToken,
        updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let name = input.get("tool").and_then(Value::as_str).map(str::trim).unwrap_or_default();
            if name.is_empty() {
                return Err(ToolError::new("mcp_invoke needs `tool`: the name of a deferred tool from tool_search."));
            }
            let server = input.get("server").and_then(Value::as_str);
            let arguments = match input.get("arguments") {
                None | Some(Value::Null) => json!({}),
                Some(v @ Value::Object(_)) => v.clone(),
                Some(other) => {
                    return Err(ToolError::new(format!(
                        "mcp_invoke: `arguments` must be an object of the tool's parameters, not {other}."
                    )));
                }
            };
            let snapshot = self.state.snapshot();
            let target = match snapshot.lookup(name, server) {
                Lookup::Found(i) => snapshot.tools[i].clone(),
                Lookup::Ambiguous(all) => {
                    return Err(ToolError::new(format!(
                        "mcp_invoke: `{name}` matches several tools: {}. Use the full name.",
                        all.join(", ")
                    )));
                }
                Lookup::Missing => {
                    let close = snapshot.close_names(name, 5);
                    let hint = if close.is_empty() {
                        format!("Deferred tools come from: {}.", snapshot.servers_line())
                    } else {
                        format!("Close names: {}.", close.join(", "))
                    };
                    return Err(ToolError::new(format!(
                        "mcp_invoke: no deferred tool is named `{name}`. {hint} Find the right one with tool_search; \
                         tools already in your tool list are called directly, not through mcp_invoke."
                    )));
                }
            };
            // Already understood (`accept_near_misses`) and judged as they are: run them unchanged.
            if let Err(problems) = target.validate(&arguments) {
                let schema = serde_json::to_string(&target.definition.input_schema).unwrap_or_default();
                return Err(ToolError::new(format!(
                    "mcp_invoke: the arguments for `{}` do not match its input schema:\n{problems}\n\
                     Input schema: {schema}\nFix the arguments and call again.",
                    target.name()
                )));
            }
            let ctx = ToolContext {
                call_id: ctx.call_id,
                tool_name: target.name().to_string(),
                confinement: ctx.confinement,
                judged: ctx.judged,
            };
            target.implementation.execute(ctx, arguments, cancel, updates).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_common_slips() {
        let invoke = McpInvoke::new(Arc::new(DisclosureState::new()));
        assert_eq!(
            invoke.prepare_arguments(json!({"name": "x", "arguments": "{\"a\": 1}"})),
            json!({"tool": "x", "arguments": {"a": 1}})
        );
        assert_eq!(
            invoke.prepare_arguments(json!({"tool": "x", "input": {"a": 1}})),
            json!({"tool": "x", "arguments": {"a": 1}})
        );
        assert_eq!(
            invoke.prepare_arguments(json!({"tool": "x", "arguments": "oops"})),
            json!({"tool": "x", "arguments": "oops"})
        );
    }
}
