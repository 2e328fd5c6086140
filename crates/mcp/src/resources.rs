//! A server's resources as two tools of that server, beside its own:
//! `list_resources` (`resources/list`) and `read_resource` (`resources/read`),
//! offered when its session says it has resources, and disclosed, deferred
//! and allowed exactly as its other tools are (they are named
//! `mcp__<server>__list_resources`, `mcp__<server>__read_resource`).

use std::fmt::Write as _;
use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use rmcp::model::{Resource, ResourceContents};
use serde_json::{Value, json};
use tern_agent_loop::{RuntimeTool, Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::{ExecutionMode, ImageSource, ToolDefinition, ToolResultContent, ToolSource};
use tokio_util::sync::CancellationToken;

use crate::server::Server;
use crate::tool::McpTool;

/// The names the two tools have on the server's side.
pub(crate) const LIST: &str = "list_resources";
/// See [`LIST`].
pub(crate) const READ: &str = "read_resource";

/// The most text one read returns (the output budget applies after it too).
const MAX_TEXT: usize = 256 * 1024;

#[derive(Clone, Copy)]
enum Which {
    List,
    Read,
}

struct ResourceCall {
    server: Weak<Server>,
    server_name: String,
    which: Which,
}

/// The tool `original` (`list_resources` or `read_resource`) of `server`, named `name`.
pub(crate) fn build(server: &Arc<Server>, original: &str, name: String) -> McpTool {
    let server_name = server.config.name.clone();
    let (which, description, schema) = if original == LIST {
        (
            Which::List,
            format!(
                "List the resources MCP server `{server_name}` offers (files, records, documents): their URIs, names and types."
            ),
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        )
    } else {
        (
            Which::Read,
            format!("Read one resource of MCP server `{server_name}` by its URI (from list_resources)."),
            json!({"type": "object", "properties": {"uri": {"type": "string", "description": "The resource's URI."}},
                   "required": ["uri"], "additionalProperties": false}),
        )
    };
    let definition = ToolDefinition {
        name,
        description,
        input_schema: schema,
        snippet: None,
        execution_mode: ExecutionMode::Parallel,
    };
    let implementation =
        Arc::new(ResourceCall { server: Arc::downgrade(server), server_name: server_name.clone(), which });
    McpTool {
        tool: RuntimeTool::new(definition, implementation, ToolSource::ConfiguredMcp { server: server_name.clone() }),
        server: server_name,
        original_name: original.to_string(),
        // Reading a resource changes nothing.
        read_only: true,
    }
}

impl Tool for ResourceCall {
    fn execute<'a>(
        &'a self,
        _ctx: ToolContext,
        input: Value,
        cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Some(server) = self.server.upgrade() else {
                return Err(ToolError::new(format!("MCP server `{}` is no longer running.", self.server_name)));
            };
            match self.which {
                Which::List => Ok(ToolOutput::text(listing(&server.list_resources(&cancel).await?))),
                Which::Read => {
                    let uri = input.get("uri").and_then(Value::as_str).unwrap_or_default();
                    Ok(ToolOutput { content: contents(&server.read_resource(uri, &cancel).await?), details: None })
                }
            }
        })
    }
}

/// One line per resource: its URI, then its name, type and description.
fn listing(resources: &[Resource]) -> String {
    if resources.is_empty() {
        return "The server lists no resources.".into();
    }
    let mut out = String::new();
    for r in resources {
        let _ = write!(out, "{}  {}", r.uri, r.name);
        if let Some(mime) = &r.mime_type {
            let _ = write!(out, " ({mime})");
        }
        if let Some(d) = r.description.as_deref().filter(|d| !d.trim().is_empty()) {
            let _ = write!(out, ": {}", d.trim());
        }
        out.push('\n');
    }
    if resources.len() >= crate::server::MAX_RESOURCES {
        let _ = writeln!(out, "(the first {} only)", crate::server::MAX_RESOURCES);
    }
    out
}

/// A read's contents: text as text (bounded), images as images, other
/// binary data named.
fn contents(contents: &[ResourceContents]) -> Vec<ToolResultContent> {
    let mut out = Vec::new();
    for c in contents {
        match c {
            ResourceContents::TextResourceContents { text, uri, .. } => {
                let shown = tern_protocol::text::prefix_within(text, MAX_TEXT);
                let more = if shown.len() < text.len() {
                    format!("\n[cut at {} KiB of {} KiB]", MAX_TEXT / 1024, text.len() / 1024)
                } else {
                    String::new()
                };
                let head = if contents.len() > 1 { format!("{uri}:\n") } else { String::new() };
                out.push(ToolResultContent::text(format!("{head}{shown}{more}")));
            }
            ResourceContents::BlobResourceContents { blob, mime_type, uri, .. } => match mime_type.as_deref() {
                Some(mime) if mime.starts_with("image/") => out.push(ToolResultContent::Image {
                    source: ImageSource { media_type: mime.to_string(), data: blob.clone() },
                }),
                mime => out.push(ToolResultContent::text(format!(
                    "{uri}: binary data ({}, {} bytes in base64) that tern does not show",
                    mime.unwrap_or("unknown type"),
                    blob.len()
                ))),
            },
            _ => out.push(ToolResultContent::text("a kind of resource content tern does not know")),
        }
    }
    if out.is_empty() {
        out.push(ToolResultContent::text("The resource is empty."));
    }
    out
}
