//! Embedding tern: a program of your own that runs tern's agent loop with a
//! tool of its own, headless, and reads its events.
//!
//! ```sh
//! cargo run -p tern-runtime --example embed            # against tern's mock model (offline)
//! ```
//!
//! It starts the mock model with a script in which the model calls the
//! custom `word_count` tool, then answers with the count; the program
//! prints each event and the final answer.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tern_agent_loop::{EventSink, RuntimeTool, Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::{AgentEvent, ExecutionMode, ToolDefinition, ToolSource};
use tern_runtime::extension::{Extension, ExtensionCommand};
use tern_runtime::{Overrides, RuntimeBuilder};
use tokio_util::sync::CancellationToken;

/// A tool of the embedding program: counts the words of a text.
struct WordCount;

impl Tool for WordCount {
    fn execute<'a>(
        &'a self,
        _ctx: ToolContext,
        input: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let text = input.get("text").and_then(Value::as_str).unwrap_or_default();
            Ok(ToolOutput::text(format!("{} words", text.split_whitespace().count())))
        })
    }
}

fn word_count() -> RuntimeTool {
    let definition = ToolDefinition {
        name: "word_count".into(),
        description: "Count the words of a text.".into(),
        input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        snippet: Some("word_count: count the words of a text".into()),
        execution_mode: ExecutionMode::Parallel,
    };
    RuntimeTool::new(definition, Arc::new(WordCount), ToolSource::Sdk)
}

/// An extension: a slash command, and a check that refuses `bash` calls.
struct NoShell;

impl Extension for NoShell {
    fn id(&self) -> &str {
        "no-shell"
    }

    fn commands(&self) -> Vec<ExtensionCommand> {
        vec![ExtensionCommand {
            name: "count".into(),
            description: "Count the words of the argument".into(),
            template: "Count the words in: $ARGUMENTS".into(),
        }]
    }

    fn before_tool_call(&self, call: &tern_protocol::ToolCall) -> Option<String> {
        (call.name == "bash").then(|| "this program does not let the model run commands".to_string())
    }
}

/// Run `prompt` against the Anthropic-compatible server at `base_url` in
/// `workspace`, with tern's config and data under `home`, printing events;
/// the final answer.
pub async fn run(
    base_url: &str,
    workspace: &std::path::Path,
    home: &std::path::Path,
    prompt: &str,
) -> Result<String, String> {
    let overrides = Overrides {
        provider: Some("anthropic".into()),
        base_url: Some(base_url.to_string()),
        model: Some("mock".into()),
        cwd: Some(workspace.to_path_buf()),
        // Your program's own config and data folder (None: TERN_HOME, else the platform's).
        tern_home: Some(home.to_path_buf()),
        // Tools of your own are asked about like any tool unless a rule allows them.
        allowed_tools: vec!["word_count".into()],
        no_session: true,
        ..Default::default()
    };
    let runtime = RuntimeBuilder::new(overrides)
        .map_err(|e| e.to_string())?
        .tool(word_count())
        .extension(Arc::new(NoShell))
        .build()
        .await
        .map_err(|e| e.to_string())?;
    let events: EventSink = Arc::new(|e: AgentEvent| match &e {
        AgentEvent::ToolCallStart { name, input, .. } => println!("→ {name} {input}"),
        AgentEvent::ToolExecutionEnd { name, content, is_error, .. } => {
            println!("{} {name}: {content:?}", if *is_error { "✗" } else { "✓" })
        }
        _ => {}
    });
    // `/count …` is the extension's command: expanded like a custom command.
    let report = runtime.prompt(prompt, &events).await.map_err(|e| e.to_string())?;
    runtime.shutdown().await;
    Ok(report.outcome.final_text)
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let script = tern_mock_llm::Script::from_json(
        r#"{"turns": [
            {"tool_calls": [{"name": "word_count", "arguments": {"text": "the quick brown fox"}}]},
            {"text": "There are 4 words."}
        ]}"#,
    )
    .map_err(|e| e.to_string())?;
    let server = tern_mock_llm::MockServer::start(script, None).await.map_err(|e| e.to_string())?;
    let workspace = tempfile::tempdir().map_err(|e| e.to_string())?;
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let answer = run(&server.url(), workspace.path(), home.path(), "/count the quick brown fox").await?;
    println!("answer: {answer}");
    Ok(())
}
