//! Turning a `tools/call` result into what the model gets.
//!
//! Text and images pass through; everything else becomes one short line
//! saying what it was, so the model knows it exists without tern inlining
//! binary data.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;
use tern_agent_loop::{ToolError, ToolOutput};
use tern_protocol::{ImageSource, ToolResultContent};

/// Convert a server's answer. `isError: true` becomes `Err` carrying the
/// server's text.
pub fn convert_result(server: &str, tool: &str, result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut content: Vec<ToolResultContent> = result.content.into_iter().map(convert_block).collect();
    if content.is_empty()
        && let Some(structured) = &result.structured_content
    {
        content.push(ToolResultContent::text(structured.to_string()));
    }
    let details = tern_protocol::ToolDetails::Mcp(tern_protocol::McpDetails {
        server: server.to_string(),
        tool: tool.to_string(),
        structured_content: result.structured_content,
    });

    if result.is_error == Some(true) {
        let text = ToolResultContent::joined_text(&content);
        let message = if text.trim().is_empty() {
            format!("MCP server `{server}` reported an error from `{tool}` without a message.")
        } else {
            text
        };
        return Err(ToolError { message, details: Some(Box::new(details)) });
    }
    Ok(ToolOutput { content, details: Some(Box::new(details)) })
}

pub(crate) fn convert_block(block: ContentBlock) -> ToolResultContent {
    match block {
        ContentBlock::Text(t) => ToolResultContent::text(t.text),
        ContentBlock::Image(i) => {
            ToolResultContent::Image { source: ImageSource { media_type: i.mime_type, data: i.data } }
        }
        ContentBlock::Audio(a) => ToolResultContent::text(format!(
            "[audio: {}, {} (not shown)]",
            a.mime_type,
            size_text(base64_decoded_len(&a.data))
        )),
        ContentBlock::Resource(r) => match r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                ToolResultContent::text(format!("{uri}\n{text}"))
            }
            ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => ToolResultContent::text(format!(
                "[embedded resource {uri}: {}, {} (binary, not shown)]",
                mime_type.as_deref().unwrap_or("unknown type"),
                size_text(base64_decoded_len(&blob))
            )),
            other => {
                ToolResultContent::text(format!("[embedded resource: {}]", compact_json(serde_json::to_value(&other))))
            }
        },
        ContentBlock::ResourceLink(link) => {
            let mut line = format!("[resource link {}: {}", link.uri, link.name);
            if let Some(mime) = &link.mime_type {
                line.push_str(&format!(", {mime}"));
            }
            if let Some(size) = link.size {
                line.push_str(&format!(", {}", size_text(size)));
            }
            if let Some(description) = &link.description {
                line.push_str(&format!(" — {description}"));
            }
            line.push(']');
            ToolResultContent::text(line)
        }
        other => {
            ToolResultContent::text(format!("[unsupported content: {}]", compact_json(serde_json::to_value(&other))))
        }
    }
}

fn size_text(bytes: u64) -> String {
    if bytes == 1 { "1 byte".to_string() } else { format!("{bytes} bytes") }
}

/// Bytes that standard, padded base64 text decodes to, without decoding.
fn base64_decoded_len(data: &str) -> u64 {
    let chars = data.bytes().filter(|b| !b.is_ascii_whitespace()).count() as u64;
    let padding = data.bytes().rev().filter(|b| !b.is_ascii_whitespace()).take_while(|&b| b == b'=').count() as u64;
    (chars / 4 * 3 + (chars % 4).saturating_sub(1)).saturating_sub(padding)
}

fn compact_json(value: serde_json::Result<Value>) -> String {
    let text = value.map(|v| v.to_string()).unwrap_or_default();
    if text.len() > 200 { format!("{}…", tern_protocol::text::prefix_within(&text, 200)) } else { text }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_and_image_pass_through() {
        let r = result(json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
        ]}));
        let out = convert_result("s", "t", r).unwrap();
        assert_eq!(
            out.content,
            vec![
                ToolResultContent::text("hello"),
                ToolResultContent::Image {
                    source: ImageSource { media_type: "image/png".into(), data: "iVBORw0KGgo=".into() }
                }
            ]
        );
        assert_eq!(serde_json::to_value(out.details).unwrap(), json!({"kind": "mcp", "server": "s", "tool": "t"}));
    }

    #[test]
    fn resources_audio_and_links_become_short_lines() {
        let r = result(json!({"content": [
            {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "body"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "mimeType": "application/gzip", "blob": "AAAA"}},
            {"type": "resource_link", "uri": "file:///c.md", "name": "c.md", "mimeType": "text/markdown", "size": 1200},
            {"type": "audio", "data": "AAECAw==", "mimeType": "audio/wav"}
        ]}));
        let out = convert_result("s", "t", r).unwrap();
        assert_eq!(
            out.content,
            vec![
                ToolResultContent::text("file:///a.txt\nbody"),
                ToolResultContent::text(
                    "[embedded resource file:///b.bin: application/gzip, 3 bytes (binary, not shown)]"
                ),
                ToolResultContent::text("[resource link file:///c.md: c.md, text/markdown, 1200 bytes]"),
                ToolResultContent::text("[audio: audio/wav, 4 bytes (not shown)]"),
            ]
        );
    }

    #[test]
    fn is_error_becomes_a_tool_error_with_the_servers_text() {
        let r = result(json!({"content": [{"type": "text", "text": "no such file"}], "isError": true}));
        let err = convert_result("fs", "read", r).unwrap_err();
        assert_eq!(err.message, "no such file");
        let r = result(json!({"content": [], "isError": true}));
        let err = convert_result("fs", "read", r).unwrap_err();
        assert_eq!(err.message, "MCP server `fs` reported an error from `read` without a message.");
    }

    #[test]
    fn structured_content_alone_is_shown_as_json() {
        let r = result(json!({"content": [], "structuredContent": {"temp": 21}}));
        let out = convert_result("s", "t", r).unwrap();
        assert_eq!(out.content, vec![ToolResultContent::text(r#"{"temp":21}"#)]);
        assert_eq!(
            serde_json::to_value(out.details).unwrap(),
            json!({"kind": "mcp", "server": "s", "tool": "t", "structured_content": {"temp": 21}})
        );
    }

    #[test]
    fn base64_lengths() {
        assert_eq!(base64_decoded_len(""), 0);
        assert_eq!(base64_decoded_len("AA=="), 1);
        assert_eq!(base64_decoded_len("AAA="), 2);
        assert_eq!(base64_decoded_len("AAAA"), 3);
        assert_eq!(base64_decoded_len("AAECAw=="), 4);
        assert_eq!(base64_decoded_len("AAEC\nAw=="), 4);
    }
}
