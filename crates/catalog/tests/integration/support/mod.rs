//! Stand-in tools and facts for the catalog's integration tests.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tern_agent_loop::{RuntimeTool, Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_catalog::{Assembly, ModelFacts, TurnFacts};
use tern_protocol::{ExecutionMode, ToolDefinition, ToolResultContent, ToolSource};
use tokio_util::sync::CancellationToken;

/// Echoes its name and input; counts its calls.
#[derive(Default)]
pub struct Echo {
    pub calls: AtomicUsize,
}

impl Tool for Echo {
    fn execute<'a>(
        &'a self,
        ctx: ToolContext,
        input: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move { Ok(ToolOutput::text(format!("{} got {input}", ctx.tool_name))) })
    }
}

pub fn definition(name: &str, description: &str, schema: Value) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: description.into(),
        input_schema: schema,
        snippet: None,
        execution_mode: ExecutionMode::Sequential,
    }
}

pub fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

pub fn tool_with(name: &str, description: &str, schema: Value, source: ToolSource) -> RuntimeTool {
    RuntimeTool::new(definition(name, description, schema), Arc::new(Echo::default()), source)
}

pub fn builtin(name: &str) -> RuntimeTool {
    tool_with(name, &format!("The {name} tool."), empty_schema(), ToolSource::Builtin)
}

/// The usual built-ins, in their fixed order.
pub fn builtins() -> Vec<RuntimeTool> {
    ["read", "write", "edit", "bash", "grep", "glob", "todo_write", "task", "ask_user"].map(builtin).to_vec()
}

/// A configured MCP server's tool, named `mcp__server__tool`.
pub fn mcp(server: &str, tool: &str) -> RuntimeTool {
    tool_with(
        &format!("mcp__{server}__{tool}"),
        &format!("{tool} on {server}"),
        empty_schema(),
        ToolSource::ConfiguredMcp { server: server.into() },
    )
}

/// A tool of an MCP server shipped with tern.
pub fn builtin_mcp(server: &str, tool: &str) -> RuntimeTool {
    tool_with(
        &format!("mcp__{server}__{tool}"),
        &format!("{tool} on {server}"),
        empty_schema(),
        ToolSource::BuiltinMcp { server: server.into() },
    )
}

/// `count` read-only tools of one configured server, each about `bytes` long in JSON.
pub fn server(name: &str, count: usize) -> Vec<(RuntimeTool, bool)> {
    (0..count).map(|i| (mcp(name, &format!("t{i}")), true)).collect()
}

/// Facts for the main agent with every built-in inline, so tests of layers
/// 1-8 and of MCP disclosure see the built-ins they registered (deferred
/// built-ins have their own tests, with [`deferring_facts`]).
pub fn facts() -> TurnFacts {
    let mut facts = deferring_facts();
    facts.config.disclosure.defer_builtins = false;
    facts
}

/// Facts with the default configuration: rarely used built-ins wait.
pub fn deferring_facts() -> TurnFacts {
    TurnFacts::new(ModelFacts::new("test-model", 200_000))
}

pub fn names(assembly: &Assembly) -> Vec<String> {
    assembly.tools.iter().map(|t| t.name().to_string()).collect()
}

pub fn text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .map(|c| match c {
            ToolResultContent::Text { text } => text.clone(),
            other => format!("{other:?}"),
        })
        .collect()
}

/// Run a tool the way the loop does: understand, validate, execute; what
/// was understood goes with the result.
pub async fn call(tool: &RuntimeTool, input: Value) -> Result<ToolOutput, ToolError> {
    let (input, notes) = tool.understand(input);
    let note = tern_agent_loop::understood_note(&notes);
    tool.validate(&input).map_err(|e| ToolError::new(e.to_string()))?;
    let ctx = ToolContext { call_id: "call-1".into(), tool_name: tool.name().into(), confinement: None, judged: None };
    let updates: UpdateSink = Arc::new(|_| {});
    let mut result = tool.implementation.execute(ctx, input, CancellationToken::new(), updates).await;
    if let Some(note) = note {
        match &mut result {
            Ok(out) => out.content.push(ToolResultContent::text(note)),
            Err(e) => e.message = format!("{}\n{note}", e.message),
        }
    }
    result
}
